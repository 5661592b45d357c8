/**
 * Execution-time middleware: `before` (inspect or rewrite a decoded call, or
 * short-circuit with a result), `after` (inspect or rewrite the result) and
 * `around` (`(invocation, next) => Effect<ToolResult>`, calling `next` zero, one
 * or many times). A list composes with the first element outermost (the onion
 * model, stated once here). A middleware's own failure or defect becomes a fatal
 * `MiddlewareFailed` naming it; tool errors from `next` pass through untouched.
 * Calls the executor refuses before any middleware runs (unknown tool, not
 * advertised, malformed or invalid arguments, over a call limit) reach only the
 * optional `rejected` hook, so a layer can still record them (the audit log
 * writes their receipts).
 */
import { Cause, Effect, Exit } from "effect"
import type { Any as AnyTool, ToolSpec } from "../contract/Tool.ts"
import type { ToolCall } from "../contract/ToolCall.ts"
import { isToolError, MiddlewareFailed, type Rejection, type ToolError } from "../contract/ToolError.ts"
import type { ToolResult } from "../contract/ToolResult.ts"
import * as Now from "./internal/executor/Now.ts"

/** A decoded call on its way to the handler. */
export interface Invocation {
  readonly call: ToolCall
  readonly spec: ToolSpec
  readonly tool: AnyTool
  /** The decoded input the handler will receive (middleware may replace it). */
  readonly input: unknown
  /** The agent turn, from `RunContext`. */
  readonly turn: number
}

/** A call the executor refused before any middleware ran; its arguments are raw (untrusted, undecoded). */
export interface Refusal {
  readonly call: ToolCall
  /** The canonical name, or the name the model sent when no tool has it. */
  readonly toolName: string
  readonly error: Rejection
  /** The agent turn, from `RunContext`. */
  readonly turn: number
}

/** The rest of the chain, down to the handler. */
export type Next = (invocation: Invocation) => Effect.Effect<ToolResult, ToolError>

export interface Middleware<R = never> {
  /** Names the middleware in audit layers and in `MiddlewareFailed`. */
  readonly name: string
  /** Rewrite the invocation, or return a `ToolResult` to short-circuit (the handler never runs). */
  readonly before?: (invocation: Invocation) => Effect.Effect<Invocation | ToolResult, ToolError, R>
  readonly around?: (invocation: Invocation, next: Next) => Effect.Effect<ToolResult, ToolError, R>
  /** Rewrite the result of a call that reached `next` (or was short-circuited by an inner layer). */
  readonly after?: (invocation: Invocation, result: ToolResult) => Effect.Effect<ToolResult, ToolError, R>
  /** Observe a call refused before any middleware ran (it cannot change the refusal). */
  readonly rejected?: (refusal: Refusal) => Effect.Effect<void, never, R>
}

/** Requirements of a list of middleware. */
export type Services<M> = M extends Middleware<infer R> ? R : never

/** Defines a middleware (an identity helper that fixes the type). */
export const make = <R = never>(middleware: Middleware<R>): Middleware<R> => middleware

/**
 * Runs every `rejected` hook for `refusal`, first element first, and answers the
 * error to report: the refusal's own, or (when a hook failed or died, say a
 * receipt could not be written) a fatal `MiddlewareFailed` naming that hook,
 * after which no further hook runs.
 */
export const rejected = <R>(
  middleware: ReadonlyArray<Middleware<R>>,
  refusal: Refusal
): Effect.Effect<Rejection | MiddlewareFailed, never, R> => {
  const hooks = middleware.filter((m) => m.rejected !== undefined)
  if (hooks.length === 0) return Effect.succeed(refusal.error)
  const loop = (i: number): Effect.Effect<Rejection | MiddlewareFailed, never, R> =>
    i === hooks.length ? Effect.succeed(refusal.error) : Effect.matchCauseEffect(hooks[i]!.rejected!(refusal), {
      onSuccess: () => loop(i + 1),
      onFailure: (cause) =>
        Cause.hasInterruptsOnly(cause)
          ? Effect.failCause(cause)
          : Effect.succeed(new MiddlewareFailed({ toolName: refusal.toolName, middleware: hooks[i]!.name, cause }))
    })
  return loop(0)
}

const isResult = (u: Invocation | ToolResult): u is ToolResult => "toolCallId" in u

/**
 * Composes `middleware` around `handler`: the first element is outermost. Each
 * layer turns its own defects (and any non-tool failure) into `MiddlewareFailed`;
 * inner layers have already done the same, and the handler's own defects arrive
 * as `ToolDefect`, so a tool error reaching a layer always passes through.
 */
export const compose = <R>(
  middleware: ReadonlyArray<Middleware<R>>,
  handler: Next
): (invocation: Invocation) => Effect.Effect<ToolResult, ToolError, R> => {
  let next: (invocation: Invocation) => Effect.Effect<ToolResult, ToolError, R> = handler
  for (let i = middleware.length - 1; i >= 0; i--) next = layer(middleware[i]!, next)
  return next
}

/**
 * One layer. Everything that does not depend on the invocation (which hooks the
 * middleware has, how they chain) is decided here, once per composition; per
 * invocation only the failure handler, which names the tool, is allocated.
 */
const layer = <R>(
  m: Middleware<R>,
  inner: (invocation: Invocation) => Effect.Effect<ToolResult, ToolError, R>
): (invocation: Invocation) => Effect.Effect<ToolResult, ToolError, R> => {
  // `next` runs inside this layer's fiber, so it sees this layer's services plus any the
  // middleware provides around it (e.g. a narrowed scope); its requirements are this layer's.
  const next = inner as Next
  const { after, around, before } = m
  const core: (invocation: Invocation) => Effect.Effect<ToolResult, ToolError, R> = around === undefined
    ? inner
    : (invocation) => around(invocation, next)
  const run = after === undefined
    ? core
    : (invocation: Invocation) => Effect.flatMap(core(invocation), (result) => after(invocation, result))
  const body = before === undefined
    ? run
    : (invocation: Invocation) =>
      Effect.flatMap(before(invocation), (out) => isResult(out) ? Effect.succeed(out) : run(out))
  return (invocation) => {
    const recover = (cause: Cause.Cause<unknown>): Effect.Effect<never, ToolError> => {
      if (Cause.hasInterruptsOnly(cause)) return Effect.failCause(cause as Cause.Cause<never>)
      const failure = Cause.findErrorOption(cause)
      if (!Cause.hasDies(cause) && failure._tag === "Some" && isToolError(failure.value)) {
        return Effect.fail(failure.value)
      }
      return Effect.fail(new MiddlewareFailed({ toolName: invocation.spec.name, middleware: m.name, cause }))
    }
    const out = body(invocation)
    // A layer that handed back `next`'s effect unchanged (an `around` that only calls `next`) is that
    // effect under this layer's failure handler: startable now by the executor, like the core (`Now`).
    const inner = Now.take(out)
    if (inner === undefined) return Effect.catchCause(out, recover)
    return Now.deferred((fiber) => {
      const exit = inner(fiber)
      return Exit.isExit(exit) ? Exit.isSuccess(exit) ? exit : recover(exit.cause) : Effect.catchCause(exit, recover)
    })
  }
}
