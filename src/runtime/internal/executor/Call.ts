/**
 * One call's lifecycle, the five steps of docs/execution.md top to bottom: (1)
 * admit (resolve, decode, limits), (2) report `tool.started` (with a keyed
 * call's idempotency key, computed first), (3) invoke the middleware pipeline
 * around the handler (which may report `tool.progress`), (4) render the result,
 * close the progress channel (what is pending goes out, nothing after), (5)
 * report exactly one terminal event. Everything but the invocation runs
 * uninterruptibly (the caller passes a `restore` that makes the invocation
 * interruptible), so a call that
 * was started always reports its end, and an interruption can only land inside
 * the invocation, where it becomes `tool.failed` with reason `cancelled`.
 */
import { Cause, Effect, Exit, type Fiber } from "effect"
import type * as Cancellation from "../../Cancellation.ts"
import type { DurableClaim } from "../../Executor.ts"
import * as Middleware from "../../Middleware.ts"
import type * as Tool from "../../../contract/Tool.ts"
import type { ToolCall } from "../../../contract/ToolCall.ts"
import * as ToolError from "../../../contract/ToolError.ts"
import type * as ToolEvent from "../../../contract/ToolEvent.ts"
import type * as ToolRegistry from "../../../contract/ToolRegistry.ts"
import * as ToolResult from "../../../contract/ToolResult.ts"
import { redactCause, redactError } from "../../../internal/redact/errors.ts"
import { redactAudit, redactValue } from "../../../internal/redact/policy.ts"
import * as Admission from "./Admission.ts"
import * as Asking from "./Asking.ts"
import * as CallState from "./CallState.ts"
import * as Idempotency from "./Idempotency.ts"
import * as Now from "./Now.ts"
import * as OutcomeModule from "./Outcome.ts"
import * as Pipeline from "./Pipeline.ts"
import type * as Invoke from "./Invoke.ts"
import * as Progress from "./Progress.ts"
import type * as Render from "./Render.ts"
import type { Env, Reporter } from "./Reporter.ts"
import type { Stopping } from "./Batch.ts"
import * as Tracing from "./Tracing.ts"

/** How a call ended, for the batch (its result, or an `Outcome.Ended`). */
export type Outcome = OutcomeModule.Outcome

/** The `restore` of an `Effect.uninterruptibleMask`. */
export type Restore = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>

export interface Config {
  readonly repair: boolean
  readonly middleware: ReadonlyArray<Middleware.Middleware<unknown>>
  readonly admit: ReturnType<typeof Admission.make>
  readonly invoke: ReturnType<typeof Invoke.make>
  readonly render: ReturnType<typeof Render.make>
  readonly reporter: Reporter
  readonly idempotency: ReturnType<typeof Idempotency.make>
  readonly runCancel: Cancellation.RunCancel
  readonly progress: Progress.Config
}

/**
 * A call that started: what its steps, its events and its end are reported with. One object per
 * call, and the steps are functions of it (not closures made per call). It is the call's state too
 * (the handler's `ToolCallContext` and `Cancellation`: one object, not two), and the invocation the
 * core gets when no middleware sits in between (it has every field of one).
 */
class Started extends CallState.CallState implements Middleware.Invocation {
  readonly call: ToolCall
  readonly spec: Tool.ToolSpec
  readonly tool: Tool.Any
  /** The decoded arguments (a message echoing a value held under a redacted key loses it). */
  readonly input: unknown
  readonly startedAt: number
  readonly env: Env
  /** The key function's defect: the call fails with it instead of running. */
  readonly keyDefect: ToolError.ToolDefect | undefined
  readonly durable: DurableClaim | undefined
  readonly restore: Restore
  /** The call's batch: whether it stopped. */
  readonly batch: Stopping
  constructor(
    call: ToolCall,
    entry: ToolRegistry.Entry<unknown>,
    input: unknown,
    startedAt: number,
    env: Env,
    key: string | undefined,
    shown: string | undefined,
    keyDefect: ToolError.ToolDefect | undefined,
    durable: DurableClaim | undefined,
    restore: Restore,
    batch: Stopping,
    cancelRun: (reason: string) => Effect.Effect<void>
  ) {
    super(call.id, entry.spec.name, key, shown, env.ctx.turn, cancelRun)
    this.call = call
    this.spec = entry.spec
    this.tool = entry.tool
    this.input = input
    this.startedAt = startedAt
    this.env = env
    this.keyDefect = keyDefect
    this.durable = durable
    this.restore = restore
    this.batch = batch
  }
  /** The call's state: this very object. */
  get state(): CallState.CallState {
    return this
  }
}

/** The executor's core step (`make`'s `startCore`). */
type StartCore = (
  started: Started,
  invocation: Middleware.Invocation,
  fiber: Fiber.Fiber<unknown, unknown>
) => Now.Answer<ToolResult.ToolResult, ToolError.ToolError>

/** The core as the effect the pipeline hands on: `startCore` of the call and the invocation it got (one object, no closure). */
class Core extends Now.Startable<ToolResult.ToolResult, ToolError.ToolError, unknown> {
  readonly startCore: StartCore
  readonly started: Started
  readonly invocation: Middleware.Invocation
  constructor(startCore: StartCore, started: Started, invocation: Middleware.Invocation) {
    super()
    this.startCore = startCore
    this.started = started
    this.invocation = invocation
  }
  start(fiber: Fiber.Fiber<unknown, unknown>): Now.Answer<ToolResult.ToolResult, ToolError.ToolError> {
    return this.startCore(this.started, this.invocation, fiber)
  }
}

/** The fields every event of a started call carries (with the idempotency key of a keyed call, redacted). */
const stampOf = ({ call, spec, state }: Started) =>
  state.shownKey === undefined
    ? { toolCallId: call.id, toolName: spec.name, attempt: state.count }
    : { toolCallId: call.id, toolName: spec.name, attempt: state.count, idempotencyKey: state.shownKey }

/** Milliseconds since the call started, by the run's clock. */
const elapsedOf = ({ env, startedAt }: Started): number => env.clock.currentTimeMillisUnsafe() - startedAt

export const make = (config: Config) => {
  const { admit, invoke, render, reporter } = config

  /** Repairable (or exhausted retryable) errors become results when repair is on; the rest are raised. */
  const settle = (call: ToolCall, name: string, error: ToolError.ToolError, elapsed: number): Outcome => {
    const result = ToolResult.fromError({ ...call, name }, error, elapsed)
    return error.disposition !== "fatal" && config.repair ? result : new OutcomeModule.Ended(result, error, false)
  }

  /** Emits `events` from `from` on, each started now (`Reporter.emitNow`), then answers `outcome`; the rest runs as effects from the first that suspends. */
  const emitAll = (
    env: Env,
    events: ReadonlyArray<ToolEvent.Unstamped<ToolEvent.Event>>,
    from: number,
    outcome: Outcome
  ): Now.Answer<Outcome> => {
    for (let i = from; i < events.length; i++) {
      const emitted = reporter.emitNow(env, events[i]!)
      if (!Now.done(emitted)) {
        return Effect.andThen(emitted, Effect.suspend(() => Now.effectOf(emitAll(env, events, i + 1, outcome))))
      }
    }
    return outcome
  }

  /** One event made for this emission (`Reporter.emitFreshNow`: stamped in place), started now, then `outcome`. */
  const emitThen = (env: Env, event: ToolEvent.Event, outcome: Outcome): Now.Answer<Outcome> => {
    const emitted = reporter.emitFreshNow(env, event)
    return Now.done(emitted) ? outcome : Effect.as(emitted, outcome)
  }

  /**
   * Step 5 for a call that produced a result: artifact and audit events, then `tool.completed`.
   * `owned`: nobody else holds `value` (`Render.takeMade`): its elapsed time is written in place.
   */
  const completed = (started: Started, value: ToolResult.ToolResult, owned = false): Now.Answer<Outcome> => {
    const { env, input, spec } = started
    const elapsed = elapsedOf(started)
    const result = value.audit !== undefined
      ? { ...value, elapsed, audit: redactAudit(value.audit, spec.safety.redact, input) }
      : owned
      ? ((value as { elapsed: number }).elapsed = elapsed, value)
      : { ...value, elapsed }
    const { call, state } = started
    // the stamp's fields written out (not spread from `stamp`): this is every call's terminal event,
    // made whole, with the run's fields and the stamp's placeholders (`Reporter.emitFreshNow`)
    const terminal: ToolEvent.Event = state.shownKey === undefined
      ? {
        _tag: "tool.completed",
        toolCallId: call.id,
        toolName: spec.name,
        attempt: state.count,
        elapsed,
        isError: result.isError,
        output: ToolResult.textOf(result),
        artifacts: result.artifacts,
        runId: env.ctx.runId,
        threadId: env.ctx.threadId,
        timestamp: 0,
        sequence: 0
      }
      : {
        _tag: "tool.completed",
        toolCallId: call.id,
        toolName: spec.name,
        attempt: state.count,
        idempotencyKey: state.shownKey,
        elapsed,
        isError: result.isError,
        output: ToolResult.textOf(result),
        artifacts: result.artifacts,
        runId: env.ctx.runId,
        threadId: env.ctx.threadId,
        timestamp: 0,
        sequence: 0
      }
    const outcome: Outcome = result
    if (result.artifacts.length === 0 && result.audit === undefined) return emitThen(env, terminal, outcome)
    const audit = result.audit
    const stamp = stampOf(started)
    const events: Array<ToolEvent.Unstamped<ToolEvent.Event>> = result.artifacts.map((artifact) => ({
      _tag: "tool.artifact_stored" as const,
      ...stamp,
      artifact
    }))
    if (audit !== undefined) events.push({ _tag: "tool.audit", ...stamp, audit })
    events.push(terminal)
    return emitAll(env, events, 0, outcome)
  }

  /** Step 5 for a call that failed or was interrupted: `tool.failed` (reason `cancelled` for an interruption). */
  const failed = (started: Started, cause: Cause.Cause<ToolError.ToolError>): Now.Answer<Outcome> => {
    const { call, env, input, spec, state } = started
    const elapsed = elapsedOf(started)
    const stamp = stampOf(started)
    if (Cause.hasInterruptsOnly(cause)) {
      const error = new ToolError.ToolCancelled({ toolName: spec.name, started: true })
      return emitThen(env, {
        _tag: "tool.failed",
        ...stamp,
        elapsed,
        reason: "cancelled",
        error,
        disposition: error.disposition,
        runId: env.ctx.runId,
        threadId: env.ctx.threadId,
        timestamp: 0,
        sequence: 0
      }, new OutcomeModule.Ended(ToolResult.fromError({ ...call, name: spec.name }, error, elapsed), undefined, true))
    }
    const failure = Cause.findErrorOption(cause)
    const found = failure._tag === "Some" && ToolError.isToolError(failure.value)
      ? failure.value
      : new ToolError.ToolDefect({ toolName: spec.name, cause })
    // The last redaction step before the error leaves: errors made outside the handler (middleware,
    // stores) are redacted here; the handler's are already (`Invoke`), and redacting again keeps them.
    const policy = spec.safety.redact
    const error = redactError(found, policy, input)
    return emitThen(env, {
      _tag: "tool.failed",
      ...stamp,
      elapsed,
      reason: error._tag === "ToolTimeout" ? "timeout" : "error",
      error,
      disposition: error.disposition,
      ...(error._tag === "OutcomeUnknown" ? { outcome: "unknown" as const } : {}),
      // the handler's own cause when the error was made from it (an undeclared failure, say)
      cause: state.causeOf(found) ?? redactCause(cause, policy, input),
      runId: env.ctx.runId,
      threadId: env.ctx.threadId,
      timestamp: 0,
      sequence: 0
    }, settle(call, spec.name, error, elapsed))
  }

  /**
   * Step 4's end: the result redacted, large text offloaded. An artifact's key is `<run>/<call id>`,
   * with the turn after the first (providers that number their call ids per turn, as Gemini does,
   * reuse them: a later turn's output must not replace an earlier one's).
   */
  const finalize = (started: Started, result: ToolResult.ToolResult) => {
    const { call, env, input, spec } = started
    return render.finalize(result, spec, call, env.ctx.turn === 0 ? env.ctx.runId : `${env.ctx.runId}/${env.ctx.turn}`, input)
  }

  /** `output`, then {@link finalize} (at once when `output` is a completed `Exit`). */
  const thenFinalize = (
    started: Started,
    output: Effect.Effect<ToolResult.ToolResult, ToolError.ToolError, unknown>
  ): Effect.Effect<ToolResult.ToolResult, ToolError.ToolError, unknown> => {
    return Now.flatMap(output, (result) => finalize(started, result))
  }

  /**
   * The core of step 3 and 4, started now on `fiber`: the handler (`Invoke`), then the encoding, by
   * plain calls while each completes. `invocation` is what the innermost middleware passed on (or
   * the call itself, without middleware).
   */
  const startCore = (
    started: Started,
    invocation: Middleware.Invocation,
    fiber: Fiber.Fiber<unknown, unknown>
  ): Now.Answer<ToolResult.ToolResult, ToolError.ToolError> => {
    const { state } = started
    const output = invoke(invocation, started.env, state, fiber, state.inContext)
    const { call, spec, tool } = invocation
    // the handler's value itself, or its completed `Exit`, or the rest of the attempt (`Now.Answer`)
    if (!Now.isEffect(output)) return render.encode(tool, spec, call, output)
    const rest = output as Effect.Effect<unknown, ToolError.ToolError>
    const exit = Now.exitOf(rest)
    if (exit === undefined) return Effect.flatMap(rest, (value) => Now.effectOf(render.encode(tool, spec, call, value)))
    return Exit.isSuccess(exit) ? render.encode(tool, spec, call, exit.value) : exit as Exit.Exit<never, ToolError.ToolError>
  }

  /**
   * The middleware pipeline around the core (timeout, retries, exclusivity; a keyed call at most
   * once), composed once: each call hands itself down to the core. The core starts now when whoever
   * runs it runs it at once (`Now`).
   */
  const pipeline = Pipeline.make<Started, unknown>(
    config.middleware as ReadonlyArray<Middleware.Middleware<unknown>>,
    (invocation, started) => {
      const core = Now.startable(new Core(startCore, started, invocation))
      const { call, env, idempotencyKey: key, shownKey: shown, spec, state } = started
      if (key === undefined) return core
      return config.idempotency(spec.name, key, call, () => env.clock.currentTimeMillisUnsafe(), core, {
        policy: spec.safety.redact,
        input: invocation.input,
        shownKey: shown ?? key
      }, started.durable, state) as ReturnType<Middleware.Next>
    }
  )

  /** What middleware see: the call's invocation, as a plain object of its own. */
  const invocationOf = ({ call, input, spec, tool, turn }: Started): Middleware.Invocation => ({ call, spec, tool, input, turn })

  /** The invocation as an effect (the handler gets the call's context from `Invoke`; middleware see it too). */
  const asEffect = (
    started: Started,
    out: Effect.Effect<ToolResult.ToolResult, ToolError.ToolError, unknown>
  ): Effect.Effect<ToolResult.ToolResult, ToolError.ToolError, unknown> => {
    const body = Effect.flatMap(out, (result) => finalize(started, result))
    const state = started.state
    return config.middleware.length === 0 ? body : (state.inContext = true, CallState.provide(body, state))
  }

  /**
   * Steps 3 to 5, started now on `fiber` (the one running the call). The pipeline is built; when it
   * hands back the core (no middleware, or only ones whose `around` calls `next`) and the call reports
   * no progress, it starts here, and a call whose every step completes is answered with its outcome
   * itself (`Now.Answer`): the same steps, as plain calls. (With no middleware and no key there is no pipeline: the
   * core starts at once.) Otherwise (a middleware with an effect of its own, a
   * handler that suspends, a store, a busy sink) the rest runs as effects from that step on, the
   * invocation interruptibly (`restore`) as always. A call whose batch stopped while it ran
   * synchronously also ends through `restore`, so an interruption sent meanwhile lands as it would
   * have in the effect: the call is cancelled.
   */
  const invokeNow = (started: Started, fiber: Fiber.Fiber<unknown, unknown>): Now.Answer<Outcome> => {
    const { batch, state } = started
    const progress = state.progress
    let invocation: Effect.Effect<ToolResult.ToolResult, ToolError.ToolError, unknown>
    /** Set when the handler was started here and is still running: the attempt's end is then its to report. */
    let running = false
    if (started.keyDefect !== undefined) invocation = Effect.fail(started.keyDefect)
    else if (progress !== undefined || batch.stopped) {
      // A batch already stopping starts nothing outside `restore`: its interruption lands first.
      invocation = asEffect(started, Effect.suspend(() => pipeline(invocationOf(started), started)))
    } else {
      try {
        let output: Now.Answer<ToolResult.ToolResult, ToolError.ToolError, unknown> | undefined
        if (config.middleware.length === 0 && started.idempotencyKey === undefined && Now.mode.eager) {
          output = startCore(started, started, fiber)
        } else {
          const out = pipeline(invocationOf(started), started)
          const start = Now.takeStartable(out)
          if (start === undefined) invocation = asEffect(started, out)
          else output = start.start(fiber)
        }
        if (output !== undefined) {
          // the core's result itself, or its completed `Exit`, or the rest of it (`Now.Answer`)
          let value: ToolResult.ToolResult | undefined
          if (!Now.isEffect(output)) value = output
          else {
            const exit = Now.exitOf(output)
            running = exit === undefined
            if (exit !== undefined && Exit.isSuccess(exit)) value = exit.value
          }
          // a result that offloads nothing is final at once: the terminal report follows (no Exit between)
          const result = value === undefined ? undefined : render.finalizeNow(value, started.spec, started.input)
          // encode's result, by plain calls from the core (a pass-through middleware runs no code on
          // it; a keyed call's store may keep it): this call's alone
          if (result !== undefined && !batch.stopped) {
            return completed(started, result, started.idempotencyKey === undefined && render.takeMade(result))
          }
          invocation = thenFinalize(started, Now.effectOf(output))
        }
      } catch (defect) {
        invocation = Effect.die(defect)
      }
    }
    // A reporting call's channel closes before anything else of its end is reported (uninterruptibly).
    if (progress !== undefined) invocation = Effect.onExit(invocation!, () => Effect.uninterruptible(progress.close))
    const exit = Now.exitOf(invocation!)
    if (exit !== undefined && !batch.stopped) {
      return Exit.isSuccess(exit) ? completed(started, exit.value) : failed(started, exit.cause)
    }
    const restored = started.restore(invocation!) as Effect.Effect<ToolResult.ToolResult, ToolError.ToolError>
    // A handler started above, outside `restore`: an interruption that lands as `restore` begins
    // (before the attempt waits for it) stops it here, so that it never outlives its call.
    return Effect.matchCauseEffect(running ? Effect.onInterrupt(restored, () => state.stopAttempt) : restored, {
      onSuccess: (result) => Now.effectOf(completed(started, result)),
      onFailure: (cause) => Now.effectOf(failed(started, cause))
    })
  }

  /** 2, then 5: `tool.started` (the key computed before), the interruptible invocation, exactly one terminal event. */
  const lifecycle = (started: Started, fiber: Fiber.Fiber<unknown, unknown>): Now.Answer<Outcome | undefined> => {
    const { call, env, input, shownKey: shown, spec, state } = started
    const policy = spec.safety.redact
    const args = policy === undefined ? input : redactValue(input, policy).value
    const emitted = reporter.emitFreshNow(
      env,
      shown === undefined
        ? {
          _tag: "tool.started",
          toolCallId: call.id,
          toolName: spec.name,
          attempt: state.count,
          arguments: args,
          runId: env.ctx.runId,
          threadId: env.ctx.threadId,
          timestamp: 0,
          sequence: 0
        }
        : {
          _tag: "tool.started",
          toolCallId: call.id,
          toolName: spec.name,
          attempt: state.count,
          idempotencyKey: shown,
          arguments: args,
          runId: env.ctx.runId,
          threadId: env.ctx.threadId,
          timestamp: 0,
          sequence: 0
        }
    )
    return Now.done(emitted)
      ? invokeNow(started, fiber)
      : Effect.andThen(emitted, Effect.withFiber((fiber) => Now.effectOf(invokeNow(started, fiber))))
  }

  /**
   * Runs one call. Call it uninterruptibly when the call's turn comes (it decides
   * at once whether the call starts), on `fiber`, the fiber running it, with a
   * `restore` that makes an effect interruptible (`Effect.interruptible`); it
   * answers the outcome itself (`Now.Answer`: no `Exit` made for it) when every step completed
   * without suspending.
   * `undefined` means the call never started: `batch.stopped` was true. With
   * `tracing` (a tracer is installed) the call gets an `execute_tool` span;
   * `durable` is a durable run's claim for a keyed call (`Executor.DurableClaim`).
   */
  return (
    call: ToolCall,
    advertised: ToolRegistry.Advertised<unknown>,
    env: Env,
    restore: Restore,
    batch: Stopping,
    tracing: Tracing.Tracing | undefined,
    durable: DurableClaim | undefined,
    fiber: Fiber.Fiber<unknown, unknown>
  ): Now.Answer<Outcome | undefined> => {
    if (batch.stopped) return Effect.succeed(undefined)
    // 1, admit: resolve, check advertised, decode, limits.
    const admission = admit(advertised, call)
    if (admission instanceof Admission.Rejected) {
      const { toolName, error } = admission
      // Middleware never see a refused call; their `rejected` hooks record it (the audit log's receipt).
      // A hook that fails turns the refusal into its fatal `MiddlewareFailed`.
      const hooks = Middleware.rejected(config.middleware, { call, toolName, error, turn: env.ctx.turn })
      const answered = Effect.flatMap(hooks as Effect.Effect<ToolError.ToolError>, (reported) =>
        Effect.as(
          reporter.emitMasked(env, { _tag: "tool.rejected", toolCallId: call.id, toolName, attempt: 0, error: reported }),
          settle(call, toolName, reported, 0)
        ))
      return tracing === undefined ? answered : Tracing.rejected(env.clock, call, toolName, error, answered)
    }
    const { entry, input } = admission
    const spec = entry.spec
    const startedAt = env.clock.currentTimeMillisUnsafe()
    const { key, defect: keyDefect } = Idempotency.keyOf(entry.tool, spec.name, input)
    const shown = key === undefined ? undefined : Idempotency.shownKey(key, spec.safety.redact, input)
    const started = new Started(call, entry, input, startedAt, env, key, shown, keyDefect, durable, restore, batch, config.runCancel.cancel)
    const state = started.state
    if (Progress.reports(entry.tool)) state.progress = new Progress.Channel(config.progress, env, state, spec, input)
    if (Asking.asks(entry.tool)) state.ask = Asking.forCall(reporter, env, state, spec, input)
    return tracing === undefined
      ? lifecycle(started, fiber)
      : Tracing.executed(tracing, env.clock, call, spec, input, state, Effect.withFiber((fiber) => Now.effectOf(lifecycle(started, fiber))))
  }
}
