/**
 * The middleware onion (`Middleware.compose`), composed once per executor rather than per call:
 * `make(middleware, inner)` answers `(invocation, c) => Effect`, where `c` is what the innermost
 * step needs of the call (the executor's started call; `Middleware.compose` passes the handler).
 * Per call and per layer with an `around`, only the `next` it is given is made (and, for a layer
 * that hands back what `next` answered, the one object that is that effect under its failure handler).
 *
 * Each layer turns its own defects (and any non-tool failure) into `MiddlewareFailed`; inner layers
 * have already done the same, and the handler's own defects arrive as `ToolDefect`, so a tool error
 * reaching a layer always passes through. A layer whose `around` hands back `next`'s effect
 * unchanged hands it on startable (`Now`), under its failure handler.
 */
import { Cause, Effect, Exit, type Fiber } from "effect"
import type { Invocation, Middleware } from "../../Middleware.ts"
import { isToolError, MiddlewareFailed, type ToolError } from "../../../contract/ToolError.ts"
import type { ToolResult } from "../../../contract/ToolResult.ts"
import * as Now from "./Now.ts"

/** The composed middleware: `c` is handed down to the innermost step with the invocation. */
export type Pipeline<C, R> = (invocation: Invocation, c: C) => Effect.Effect<ToolResult, ToolError, R>

const isResult = (u: Invocation | ToolResult): u is ToolResult => "toolCallId" in u

/** `middleware` (first element outermost) around `inner`. */
export const make = <C, R>(middleware: ReadonlyArray<Middleware<R>>, inner: Pipeline<C, R>): Pipeline<C, R> => {
  let next = inner
  for (let i = middleware.length - 1; i >= 0; i--) next = layer(middleware[i]!, next)
  return next
}

/**
 * One layer. Everything that does not depend on the invocation (which hooks the
 * middleware has, how they chain) is decided here, once per composition.
 */
const layer = <C, R>(m: Middleware<R>, inner: Pipeline<C, R>): Pipeline<C, R> => {
  // `next` runs inside this layer's fiber, so it sees this layer's services plus any the
  // middleware provides around it (e.g. a narrowed scope); its requirements are this layer's.
  const { after, around, before } = m
  // `next` is this function bound to the call's `c`: one object per call (a closure would be two,
  // the function and its scope)
  function next(this: C, invocation: Invocation): Effect.Effect<ToolResult, ToolError> {
    return inner(invocation, this) as Effect.Effect<ToolResult, ToolError>
  }
  const core: Pipeline<C, R> = around === undefined
    ? inner
    : (invocation, c) => around(invocation, next.bind(c))
  const run: Pipeline<C, R> = after === undefined
    ? core
    : (invocation, c) => Effect.flatMap(core(invocation, c), (result) => after(invocation, result))
  const body: Pipeline<C, R> = before === undefined
    ? run
    : (invocation, c) => Effect.flatMap(before(invocation), (out) => isResult(out) ? Effect.succeed(out) : run(out, c))
  return (invocation, c) => {
    const out = body(invocation, c)
    // A layer that handed back `next`'s effect unchanged (an `around` that only calls `next`) is that
    // effect under this layer's failure handler: startable now by the executor, like the core (`Now`).
    const inner = Now.takeStartable(out)
    if (inner === undefined) return Effect.catchCause(out, (cause) => recover(m, invocation, cause))
    return Now.startable(new Guarded(inner, m, invocation))
  }
}

/** A layer's failure handler around the startable it was handed back (one object, no closure per call). */
class Guarded<R> extends Now.Startable<ToolResult, ToolError, R> {
  readonly inner: Now.Startable<ToolResult, ToolError, R>
  readonly m: Middleware<R>
  readonly invocation: Invocation
  constructor(inner: Now.Startable<ToolResult, ToolError, R>, m: Middleware<R>, invocation: Invocation) {
    super()
    this.inner = inner
    this.m = m
    this.invocation = invocation
  }
  start(fiber: Fiber.Fiber<unknown, unknown>): Now.Answer<ToolResult, ToolError, R> {
    const out = this.inner.start(fiber)
    if (!Now.isEffect(out)) return out
    const { invocation, m } = this
    return Now.isExit(out)
      ? Exit.isSuccess(out) ? out : recover(m, invocation, out.cause)
      : Effect.catchCause(out, (cause) => recover(m, invocation, cause))
  }
}

/** A layer's failure: interruptions and tool errors pass through; anything else is its `MiddlewareFailed`. */
const recover = <R>(m: Middleware<R>, invocation: Invocation, cause: Cause.Cause<unknown>): Effect.Effect<never, ToolError> => {
  if (Cause.hasInterruptsOnly(cause)) return Effect.failCause(cause as Cause.Cause<never>)
  const failure = Cause.findErrorOption(cause)
  if (!Cause.hasDies(cause) && failure._tag === "Some" && isToolError(failure.value)) {
    return Effect.fail(failure.value)
  }
  return Effect.fail(new MiddlewareFailed({ toolName: invocation.spec.name, middleware: m.name, cause }))
}
