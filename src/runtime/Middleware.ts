/**
 * Execution-time middleware: `before` (inspect or rewrite a decoded call, or
 * short-circuit with a result), `after` (inspect or rewrite the result) and
 * `around` (`(invocation, next) => Effect<ToolResult>`, calling `next` zero, one
 * or many times). A list composes with the first element outermost (the onion
 * model, stated once in `compose`). A middleware's own failure or defect becomes a fatal
 * `MiddlewareFailed` naming it; tool errors from `next` pass through untouched.
 * Calls the executor refuses before any middleware runs (unknown tool, not
 * advertised, malformed or invalid arguments, over a call limit) reach only the
 * optional `rejected` hook, so a layer can still record them (the audit log
 * writes their receipts).
 */
import { Cause, Effect } from "effect"
import type { Any as AnyTool, ToolSpec } from "../contract/Tool.ts"
import type { ToolCall } from "../contract/ToolCall.ts"
import { MiddlewareFailed, type Rejection, type ToolError } from "../contract/ToolError.ts"
import type { ToolResult } from "../contract/ToolResult.ts"
import * as Pipeline from "./internal/executor/Pipeline.ts"

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

/**
 * Composes `middleware` around `handler`: the first element is outermost. Each
 * layer turns its own defects (and any non-tool failure) into `MiddlewareFailed`;
 * a tool error reaching a layer passes through. (The onion itself is
 * `internal/executor/Pipeline.ts`, which the executor composes once per executor.)
 */
export const compose = <R>(
  middleware: ReadonlyArray<Middleware<R>>,
  handler: Next
): (invocation: Invocation) => Effect.Effect<ToolResult, ToolError, R> => {
  const pipeline = Pipeline.make<Next, R>(middleware, (invocation, next) => next(invocation))
  return (invocation) => pipeline(invocation, handler)
}
