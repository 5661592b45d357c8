/**
 * One started call's state: its attempt counter, its idempotency key (and the
 * key as events and receipts show it, redacted), and the
 * object the handler reads as both `ToolCallContext` and `Cancellation` (one
 * allocation per call; the `AbortController` only when a handler reads the
 * signal), plus its progress channel for tools that list `ToolProgress`, and
 * the handler's own cause behind the error `Invoke` made from its failure.
 * `provide` puts them in the call's context in one step.
 */
import { type Cause, Context, Effect } from "effect"
import { Cancellation, type CancellationShape } from "../../Cancellation.ts"
import { ToolCallContext, type ToolCallInfo } from "../../ToolCallContext.ts"
import { ToolProgress } from "../../ToolProgress.ts"
import { Ask, type AskShape } from "../../../governance/Ask.ts"
import type { ToolError } from "../../../contract/ToolError.ts"
import type { Deadline } from "./Deadline.ts"
import type { Channel } from "./Progress.ts"

/**
 * What few calls need: a signal a handler read, a pausable timeout, the stop of an attempt that
 * suspended, an error made from a handler failure. Made on first use, so that a plain call's state
 * carries one empty field for all of them.
 */
class Rare {
  controller: AbortController | undefined = undefined
  stopAttempt: Effect.Effect<void> = Effect.void
  deadline: Deadline | undefined = undefined
  origin: { readonly error: ToolError; readonly cause: Cause.Cause<unknown> } | undefined = undefined
}

export class CallState implements ToolCallInfo, CancellationShape {
  /** The current attempt (1 for the first); `Invoke` counts retries here. */
  count = 1
  /** True when the whole invocation already runs with this state in its context (there is middleware). */
  inContext = false
  /** The signal, the stop of a suspended attempt, the pausable timeout and the made error, when a call needs any of them. */
  rare: Rare | undefined = undefined
  private rareOf(): Rare {
    return this.rare ??= new Rare()
  }
  get controller(): AbortController | undefined {
    return this.rare?.controller
  }
  set controller(controller: AbortController | undefined) {
    if (controller !== undefined || this.rare !== undefined) this.rareOf().controller = controller
  }
  /** The call's progress reports: only for tools that list `ToolProgress`. */
  progress: Channel | undefined = undefined
  /** The call's questions: only for tools that list `Ask`. */
  ask: AskShape | undefined = undefined
  /**
   * Stops the attempt's handler fiber while it runs (aborts the signal, interrupts the fiber, waits
   * for it); `Effect.void` when none runs. Set by `Invoke` for an attempt that suspended.
   */
  get stopAttempt(): Effect.Effect<void> {
    return this.rare === undefined ? Effect.void : this.rare.stopAttempt
  }
  set stopAttempt(stop: Effect.Effect<void>) {
    this.rareOf().stopAttempt = stop
  }
  /** The current attempt's pausable timeout: only for tools that list `Ask` (set by `Invoke`). */
  get deadline(): Deadline | undefined {
    return this.rare?.deadline
  }
  set deadline(deadline: Deadline | undefined) {
    if (deadline !== undefined || this.rare !== undefined) this.rareOf().deadline = deadline
  }
  /**
   * The last tool error `Invoke` made from a handler failure (an undeclared error, say), with the
   * handler's own cause (redacted): the `tool.failed` event carries that cause when the call ends
   * with this very error.
   */
  get origin(): { readonly error: ToolError; readonly cause: Cause.Cause<unknown> } | undefined {
    return this.rare?.origin
  }
  set origin(origin: { readonly error: ToolError; readonly cause: Cause.Cause<unknown> } | undefined) {
    if (origin !== undefined || this.rare !== undefined) this.rareOf().origin = origin
  }
  readonly toolCallId: string
  readonly toolName: string
  /** The key itself: what the handler reads (to pass downstream) and what the store is claimed by. */
  readonly idempotencyKey: string | undefined
  /** The key as it leaves the call (events): redacted like the arguments (`Idempotency.shownKey`). */
  readonly shownKey: string | undefined
  readonly turn: number
  readonly cancelRun: (reason: string) => Effect.Effect<void>
  constructor(
    toolCallId: string,
    toolName: string,
    idempotencyKey: string | undefined,
    shownKey: string | undefined,
    turn: number,
    cancelRun: (reason: string) => Effect.Effect<void>
  ) {
    this.toolCallId = toolCallId
    this.toolName = toolName
    this.idempotencyKey = idempotencyKey
    this.shownKey = shownKey
    this.turn = turn
    this.cancelRun = cancelRun
  }
  get attempt(): number {
    return this.count
  }
  /** The current attempt's signal, created on first use. */
  get signal(): AbortSignal {
    this.controller ??= new AbortController()
    return this.controller.signal
  }
  get abortSignal(): AbortSignal {
    return this.signal
  }
  /** Aborts the current attempt's signal; the next attempt gets a fresh one. */
  abort(): void {
    const controller = this.controller
    this.controller = undefined
    controller?.abort(new Error("tool call cancelled"))
  }
  /** The handler's own cause behind `error`, when `Invoke` made `error` from this call's handler failure. */
  causeOf(error: ToolError): Cause.Cause<unknown> | undefined {
    return this.origin?.error === error ? this.origin.cause : undefined
  }
}

/** `context` with `state` as its `ToolCallContext` and `Cancellation` (and its `ToolProgress` and `Ask`, when it has them). */
export const contextOf = <R>(context: Context.Context<R>, state: CallState): Context.Context<R> => {
  const call = Context.add(Context.add(context, Cancellation, state), ToolCallContext, state)
  const reporting = state.progress === undefined ? call : Context.add(call, ToolProgress, state.progress)
  return (state.ask === undefined ? reporting : Context.add(reporting, Ask, state.ask)) as Context.Context<R>
}

/** Runs `effect` with `state` as its `ToolCallContext` and `Cancellation` (and its `ToolProgress` and `Ask`, when it has them). */
export const provide = <A, E, R>(
  effect: Effect.Effect<A, E, R>,
  state: CallState
): Effect.Effect<A, E, Exclude<R, ToolCallContext | Cancellation | ToolProgress | Ask>> =>
  Effect.updateContext(
    effect,
    (context: Context.Context<Exclude<R, ToolCallContext | Cancellation | ToolProgress | Ask>>) =>
      contextOf(context, state) as Context.Context<R>
  )
