/**
 * One call's lifecycle, top to bottom: admit (resolve, decode, limits), report
 * `tool.started`, invoke the middleware pipeline around the handler, render the
 * result, report exactly one terminal event. Everything but the invocation runs
 * uninterruptibly (the caller passes the `restore` of its mask), so a call that
 * was started always reports its end, and an interruption can only land inside
 * the invocation, where it becomes `tool.failed` with reason `cancelled`.
 */
import { Cause, Effect } from "effect"
import * as Middleware from "../../Middleware.ts"
import type * as Tool from "../../Tool.ts"
import type { ToolCall } from "../../ToolCall.ts"
import * as ToolError from "../../ToolError.ts"
import type * as ToolRegistry from "../../ToolRegistry.ts"
import * as ToolResult from "../../ToolResult.ts"
import { redactValue } from "../redact.ts"
import type * as Admission from "./Admission.ts"
import type * as Invoke from "./Invoke.ts"
import type * as Render from "./Render.ts"
import type { Env, Reporter } from "./Reporter.ts"

/** How a call ended, for the batch. */
export interface Outcome {
  readonly result: ToolResult.ToolResult
  /** Present when the call must be raised: a fatal error, or a repairable one when repair is off. */
  readonly error?: ToolError.ToolError
  /** Started, then interrupted (fail-fast, run cancellation, or the caller). */
  readonly cancelled: boolean
}

/** The `restore` of an `Effect.uninterruptibleMask`. */
export type Restore = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>

export interface Config {
  readonly repair: boolean
  readonly middleware: ReadonlyArray<Middleware.Middleware<unknown>>
  readonly admit: ReturnType<typeof Admission.make>
  readonly invoke: ReturnType<typeof Invoke.make>
  readonly render: ReturnType<typeof Render.make>
  readonly reporter: Reporter
}

export const make = (config: Config) => {
  const { admit, invoke, render, reporter } = config

  /** Repairable (or exhausted retryable) errors become results when repair is on; the rest are raised. */
  const settle = (call: ToolCall, name: string, error: ToolError.ToolError, elapsed: number): Outcome => {
    const result = ToolResult.fromError({ ...call, name }, error, elapsed)
    return error.disposition !== "fatal" && config.repair ? { result, cancelled: false } : { result, error, cancelled: false }
  }

  /** Step 10 for a call that produced a result: artifact and audit events, then `tool.completed`. */
  const completed = (
    call: ToolCall,
    spec: Tool.ToolSpec,
    attempts: Invoke.Attempts,
    startedAt: number,
    env: Env,
    value: ToolResult.ToolResult
  ): Effect.Effect<Outcome> => {
    const elapsed = env.clock.currentTimeMillisUnsafe() - startedAt
    const stamp = { toolCallId: call.id, toolName: spec.name, attempt: attempts.count }
    const result = { ...value, elapsed }
    const terminal = Effect.as(
      reporter.emitMasked(env, {
        _tag: "tool.completed",
        ...stamp,
        elapsed,
        isError: result.isError,
        output: ToolResult.textOf(result),
        artifacts: result.artifacts
      }),
      { result, cancelled: false }
    )
    if (result.artifacts.length === 0 && result.audit === undefined) return terminal
    const audit = result.audit
    return Effect.forEach(
      result.artifacts,
      (artifact) => reporter.emitMasked(env, { _tag: "tool.artifact_stored", ...stamp, artifact }),
      { discard: true }
    ).pipe(
      Effect.andThen(audit === undefined ? Effect.void : reporter.emitMasked(env, { _tag: "tool.audit", ...stamp, audit })),
      Effect.andThen(terminal)
    )
  }

  /** Step 10 for a call that failed or was interrupted: `tool.failed` (reason `cancelled` for an interruption). */
  const failed = (
    call: ToolCall,
    spec: Tool.ToolSpec,
    attempts: Invoke.Attempts,
    startedAt: number,
    env: Env,
    cause: Cause.Cause<ToolError.ToolError>
  ): Effect.Effect<Outcome> => {
    const elapsed = env.clock.currentTimeMillisUnsafe() - startedAt
    const stamp = { toolCallId: call.id, toolName: spec.name, attempt: attempts.count }
    if (Cause.hasInterruptsOnly(cause)) {
      const error = new ToolError.ToolCancelled({ toolName: spec.name, started: true })
      return Effect.as(
        reporter.emitMasked(env, {
          _tag: "tool.failed",
          ...stamp,
          elapsed,
          reason: "cancelled",
          error,
          disposition: error.disposition
        }),
        { result: ToolResult.fromError({ ...call, name: spec.name }, error, elapsed), cancelled: true }
      )
    }
    const failure = Cause.findErrorOption(cause)
    const error = failure._tag === "Some" && ToolError.isToolError(failure.value)
      ? failure.value
      : new ToolError.ToolDefect({ toolName: spec.name, cause })
    return Effect.as(
      reporter.emitMasked(env, {
        _tag: "tool.failed",
        ...stamp,
        elapsed,
        reason: error._tag === "ToolTimeout" ? "timeout" : "error",
        error,
        disposition: error.disposition,
        cause
      }),
      settle(call, spec.name, error, elapsed)
    )
  }

  /**
   * Runs one call. Call it inside `Effect.uninterruptibleMask` when the call's
   * turn comes (it decides at once whether the call starts), with the mask's
   * `restore`. `undefined` means the call never started: `stopped()` was true.
   */
  return (
    call: ToolCall,
    advertised: ToolRegistry.Advertised<unknown>,
    env: Env,
    restore: Restore,
    stopped: () => boolean
  ): Effect.Effect<Outcome | undefined> => {
    if (stopped()) return Effect.succeed(undefined)
    // 1-5: resolve, check advertised, decode, limits.
    const admission = admit(advertised, call)
    if (admission._tag === "Rejected") {
      const { toolName, error } = admission
      return Effect.as(
        reporter.emitMasked(env, { _tag: "tool.rejected", toolCallId: call.id, toolName, attempt: 0, error }),
        settle(call, toolName, error, 0)
      )
    }
    const { entry, input } = admission.resolved
    const spec = entry.spec
    const startedAt = env.clock.currentTimeMillisUnsafe()
    const attempts: Invoke.Attempts = { count: 1 }
    // 7-9: middleware around the handler (timeout, retries, exclusivity), encode, then redact or offload.
    const pipeline = Middleware.compose(config.middleware, (invocation) =>
      Effect.flatMap(
        invoke(invocation, env, attempts),
        (output) => render.encode(invocation.tool, invocation.spec, invocation.call, output)
      ))
    const invocation = Effect.suspend(() =>
      Effect.flatMap(
        pipeline({ call, spec, tool: entry.tool, input, turn: env.ctx.turn }),
        (result) => render.finalize(result, spec, call, env.ctx.runId)
      )
    )
    // 6, then 10: started, the interruptible invocation, exactly one terminal event.
    return Effect.andThen(
      reporter.emitMasked(env, {
        _tag: "tool.started",
        toolCallId: call.id,
        toolName: spec.name,
        attempt: 1,
        arguments: redactValue(input, spec.safety.redact).value
      }),
      Effect.matchCauseEffect(restore(invocation), {
        onSuccess: (result) => completed(call, spec, attempts, startedAt, env, result),
        onFailure: (cause) => failed(call, spec, attempts, startedAt, env, cause)
      })
    ) as Effect.Effect<Outcome | undefined>
  }
}
