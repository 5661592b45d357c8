/**
 * What every framework adapter shares: running one provider-neutral call
 * through an `Executor` from Promise-land (the framework's `execute`), with the
 * executor's hidden services from a `ManagedRuntime`, a `Layer` or a `Context`,
 * the framework's `AbortSignal` as interruption, and the outcome sorted into
 * what the model reads (a result, or a repairable error) and what must stop
 * the run (a fatal error).
 */
import { Cause, Context, Effect, Exit, Layer, ManagedRuntime } from "effect"
import type { ToolCall } from "../../contract/ToolCall.ts"
import * as ToolError from "../../contract/ToolError.ts"
import * as ToolRegistry from "../../contract/ToolRegistry.ts"
import * as ToolResult from "../../contract/ToolResult.ts"
import type * as Executor from "../../runtime/Executor.ts"

/**
 * Where the executor's requirements (`RunContext`, `EventSink`, `StoreRegistry`, and
 * whatever its tools and middleware need) come from: a `ManagedRuntime` you own and
 * dispose, a `Context`, or a `Layer` (built once, on first use, into a runtime that
 * lives until `dispose` of the adapter is called).
 */
export type Services<R> =
  | ManagedRuntime.ManagedRuntime<R, unknown>
  | Context.Context<R>
  | Layer.Layer<R, unknown, never>

/** Options every adapter takes. */
export interface Options<R> {
  /** Runs the calls. One executor per run: it owns the run's event sequence and call counters. */
  readonly executor: Executor.Executor<R>
  /** Provides the executor's requirements. */
  readonly services: Services<Executor.Requirements<R>>
  /** The tools to offer (and accept calls for). Default: every tool of the executor's registry. */
  readonly advertised?: ToolRegistry.Advertised<unknown>
}

/**
 * A tool call that ended in an error: thrown from a framework's `execute`.
 * `disposition` says whether the model can act on it (`repair`, `retry` once
 * retries ran out) or the run should stop (`fatal`). `message` is the
 * model-facing text (redacted; a defect never shows its cause); `result` is the
 * executor's error result when there is one, `error` the tinyagents error.
 */
export class ToolCallError extends Error {
  override readonly name = "ToolCallError"
  readonly toolCallId: string
  readonly toolName: string
  readonly disposition: ToolError.Disposition
  readonly error: ToolError.ToolError | undefined
  readonly result: ToolResult.ToolResult | undefined
  constructor(options: {
    readonly message: string
    readonly toolCallId: string
    readonly toolName: string
    readonly disposition: ToolError.Disposition
    readonly error?: ToolError.ToolError | undefined
    readonly result?: ToolResult.ToolResult | undefined
    readonly cause?: unknown
  }) {
    super(options.message, options.cause === undefined ? undefined : { cause: options.cause })
    this.toolCallId = options.toolCallId
    this.toolName = options.toolName
    this.disposition = options.disposition
    this.error = options.error
    this.result = options.result
  }
  /** True when the run should stop rather than show the model the error. */
  get fatal(): boolean {
    return this.disposition === "fatal"
  }
}

/** True for errors thrown by an adapter's `execute`. */
export const isToolCallError = (u: unknown): u is ToolCallError => u instanceof ToolCallError

/** What a call came to. */
export type Outcome =
  | { readonly _tag: "ok"; readonly result: ToolResult.ToolResult }
  | { readonly _tag: "error"; readonly error: ToolCallError }

/** A runner over one executor and its services. */
export interface Runner {
  readonly advertised: ToolRegistry.Advertised<unknown>
  /** Runs one call; never rejects (a defect of the runtime itself becomes a fatal `ToolCallError`). */
  readonly run: (call: ToolCall, signal?: AbortSignal) => Promise<Outcome>
  /** Releases a runtime the adapter built from a `Layer` (no-op otherwise). */
  readonly dispose: () => Promise<void>
}

const isContext = (u: unknown): u is Context.Context<never> => Context.isContext(u)

/** Sorts an executor result or failure into an outcome. */
export const toOutcome = (call: ToolCall, exit: Exit.Exit<ToolResult.ToolResult, ToolError.ToolError>): Outcome => {
  if (Exit.isSuccess(exit)) {
    const result = exit.value
    if (!result.isError) return { _tag: "ok", result }
    return {
      _tag: "error",
      error: new ToolCallError({
        message: ToolResult.textOf(result),
        toolCallId: call.id,
        toolName: result.name,
        disposition: result.error?.disposition ?? "repair",
        error: result.error,
        result
      })
    }
  }
  const found = Cause.findError(exit.cause)
  if (found._tag === "Success") {
    const error = found.success
    return {
      _tag: "error",
      error: new ToolCallError({
        message: ToolError.isToolError(error) ? error.message : `tool ${call.name} failed`,
        toolCallId: call.id,
        toolName: ToolError.isToolError(error) && "toolName" in error ? String(error.toolName) : call.name,
        disposition: ToolError.isToolError(error) ? error.disposition : "fatal",
        error: ToolError.isToolError(error) ? error : undefined
      })
    }
  }
  const interrupted = Cause.hasInterruptsOnly(exit.cause)
  return {
    _tag: "error",
    error: new ToolCallError({
      message: interrupted ? `${call.name}: cancelled while running` : `internal error in tool ${call.name}`,
      toolCallId: call.id,
      toolName: call.name,
      disposition: "fatal",
      error: interrupted ? new ToolError.ToolCancelled({ toolName: call.name, started: true }) : undefined,
      cause: Cause.squash(exit.cause)
    })
  }
}

/** Makes a runner. */
export const make = <R>(options: Options<R>): Runner => {
  const advertised = options.advertised ?? ToolRegistry.all(options.executor.registry)
  const services = options.services as unknown
  let built: ManagedRuntime.ManagedRuntime<Executor.Requirements<R>, unknown> | undefined
  const runExit = <A, E>(
    effect: Effect.Effect<A, E, Executor.Requirements<R>>,
    signal: AbortSignal | undefined
  ): Promise<Exit.Exit<A, E | unknown>> => {
    const runOptions = signal === undefined ? undefined : { signal }
    if (ManagedRuntime.isManagedRuntime(services)) {
      return (services as ManagedRuntime.ManagedRuntime<Executor.Requirements<R>, unknown>).runPromiseExit(effect, runOptions)
    }
    if (isContext(services)) {
      return Effect.runPromiseExitWith(services as Context.Context<Executor.Requirements<R>>)(effect, runOptions)
    }
    built ??= ManagedRuntime.make(services as Layer.Layer<Executor.Requirements<R>, unknown, never>)
    return built.runPromiseExit(effect, runOptions)
  }
  return {
    advertised,
    run: (call, signal) =>
      runExit(options.executor.run(call, { advertised }), signal).then(
        (exit) => toOutcome(call, exit as Exit.Exit<ToolResult.ToolResult, ToolError.ToolError>),
        (defect: unknown) => toOutcome(call, Exit.die(defect))
      ),
    dispose: () => built === undefined ? Promise.resolve() : built.dispose()
  }
}
