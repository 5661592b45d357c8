/**
 * Runs tool calls through the lifecycle: resolve, check it was advertised,
 * decode, check limits, emit `tool.started`, middleware around the handler
 * (under its timeout, retry schedule and exclusivity), encode the output,
 * offload large output to an artifact, emit exactly one terminal event. Batches
 * run with a concurrency bound and return one result per call, in call order.
 * One executor per run: it owns the run's event sequence and call counters.
 */
import { Cause, Clock, Data, Deferred, Duration, Effect, Exit, Result, Schedule, Schema, Semaphore } from "effect"
import * as Cancellation from "./Cancellation.ts"
import { EventSink } from "./EventSink.ts"
import { redactText, redactValue } from "./internal/redact.ts"
import * as Middleware from "./Middleware.ts"
import { RunContext } from "./RunContext.ts"
import { StoreRegistry } from "./StoreRegistry.ts"
import type * as Tool from "./Tool.ts"
import type { ToolCall } from "./ToolCall.ts"
import * as ToolError from "./ToolError.ts"
import type * as ToolEvent from "./ToolEvent.ts"
import * as ToolInput from "./ToolInput.ts"
import * as ToolRegistry from "./ToolRegistry.ts"
import * as ToolResult from "./ToolResult.ts"

/** A call limit and what happens when it is reached. */
export interface Limit {
  readonly max: number
  /** `continue` (default): a repairable result telling the model to stop; `error`: fatal. */
  readonly mode?: "error" | "continue"
}

export interface Options<MR = never> {
  /** Execution middleware, first element outermost. */
  readonly middleware?: ReadonlyArray<Middleware.Middleware<MR>>
  /** Repairable errors become error results the model reads (default `true`); `false` makes them fatal. */
  readonly repair?: boolean
  /** Timeout for tools that declare none. Default 60 seconds. */
  readonly defaultTimeout?: Duration.Input
  readonly limits?: {
    /** Calls per run (this executor). */
    readonly run?: Limit
    /** Calls per tool, for every tool. */
    readonly tool?: Limit
    /** Calls per tool, by canonical name (overrides `tool`). */
    readonly perTool?: Readonly<Record<string, Limit>>
  }
  readonly artifacts?: {
    /** Model-facing text longer than this many characters is offloaded. Default 16,000. */
    readonly threshold?: number
    /** Characters kept from the start and the end of offloaded text. Defaults 4,000 and 1,000. */
    readonly head?: number
    readonly tail?: number
    /** The `StoreRegistry` store that holds artifacts. Default `"artifacts"`. */
    readonly store?: string
  }
  /** Default batch concurrency. Default 8. */
  readonly concurrency?: number
  /** Default batch failure policy. Default `settle`. */
  readonly failurePolicy?: FailurePolicy
}

/**
 * `settle`: every call gets a result; fatal errors are raised after the batch.
 * `fail-fast`: the first fatal error interrupts the rest (which still get their terminal events).
 */
export type FailurePolicy = "settle" | "fail-fast"

/** A batch had fatal errors. `results` still answers every call, in call order. */
export class BatchFailed extends Data.TaggedError("BatchFailed")<{
  readonly results: ReadonlyArray<ToolResult.ToolResult>
  readonly errors: ReadonlyArray<ToolError.ToolError>
}> {
  override get message(): string {
    return `tool batch failed: ${this.errors.map((e) => e.message).join("; ")}`
  }
}

/** What running calls needs from the environment. */
export type Requirements<R> = Exclude<R, Cancellation.Cancellation> | RunContext | EventSink | StoreRegistry

export interface BatchOptions {
  readonly advertised?: ToolRegistry.Advertised<unknown>
  readonly concurrency?: number
  readonly failurePolicy?: FailurePolicy
}

export interface Executor<R> {
  readonly registry: ToolRegistry.ToolRegistry<unknown>
  /** Runs one call. Fails only with a fatal error (or a repairable one when repair is off). */
  readonly run: (
    call: ToolCall,
    options?: { readonly advertised?: ToolRegistry.Advertised<unknown> }
  ) => Effect.Effect<ToolResult.ToolResult, ToolError.ToolError, Requirements<R>>
  /** Runs calls with a concurrency bound; results in call order. Stops early when the run is cancelled. */
  readonly runBatch: (
    calls: ReadonlyArray<ToolCall>,
    options?: BatchOptions
  ) => Effect.Effect<ReadonlyArray<ToolResult.ToolResult>, BatchFailed, Requirements<R>>
  /** Stamps (time, sequence, run) and emits an event: for the agent loop's own events. */
  readonly emit: (event: ToolEvent.Unstamped<ToolEvent.Event>) => Effect.Effect<void, never, RunContext | EventSink>
  /** The run's cancellation switch (also reachable from handlers through `Cancellation.cancelRun`). */
  readonly runCancel: Cancellation.RunCancel
}

/** Exponential backoff with jitter and a cap on attempts (including the first), for `Tool.make({ retry })`. */
export const backoff = (options: {
  readonly base?: Duration.Input
  readonly factor?: number
  readonly maxAttempts: number
  readonly jitter?: boolean
}): Schedule.Schedule<unknown> => {
  const exponential = Schedule.exponential(options.base ?? "100 millis", options.factor ?? 2)
  const jittered = options.jitter === false ? exponential : Schedule.jittered(exponential)
  return jittered.pipe(Schedule.upTo({ times: Math.max(0, options.maxAttempts - 1) }))
}

interface Env {
  readonly ctx: RunContext["Service"]
  readonly sink: EventSink["Service"]
  readonly clock: Clock.Clock
}

interface CallState {
  started: boolean
  done: boolean
  startedAt: number
  toolName: string
  attempt: number
}

const textOfValue = (value: unknown): string =>
  value === undefined ? "" : typeof value === "string" ? value : JSON.stringify(value)

/** Makes an executor for one run over `registry`. */
export const make = <R, MR = never>(
  registry: ToolRegistry.ToolRegistry<R>,
  options: Options<MR> = {}
): Effect.Effect<Executor<R | MR>> =>
  Effect.map(Cancellation.makeRunCancel, (runCancel) => {
    const repair = options.repair ?? true
    const defaultTimeout = Duration.fromInputUnsafe(options.defaultTimeout ?? "60 seconds")
    const threshold = options.artifacts?.threshold ?? 16_000
    const head = Math.min(options.artifacts?.head ?? 4_000, Math.floor(threshold * 0.6))
    const tail = Math.min(options.artifacts?.tail ?? 1_000, Math.floor(threshold * 0.2))
    const artifactStore = options.artifacts?.store ?? "artifacts"
    const middleware = options.middleware ?? []
    const everything = ToolRegistry.all(registry)
    const exclusive = Semaphore.makeUnsafe(1)
    const encoders = new WeakMap<Tool.Any, (value: unknown) => Result.Result<unknown, Schema.SchemaError>>()
    let sequence = 0
    let runCalls = 0
    const toolCalls = new Map<string, number>()

    /** Services every call needs, read once per `run`/`runBatch` instead of once per event. */
    const environment = Effect.map(
      Effect.all([RunContext, EventSink, Effect.clockWith(Effect.succeed)]),
      ([ctx, sink, clock]): Env => ({ ctx, sink, clock })
    )

    const emitWith = (env: Env, event: ToolEvent.Unstamped<ToolEvent.Event>): Effect.Effect<void> =>
      env.sink.emit({
        ...event,
        runId: env.ctx.runId,
        threadId: env.ctx.threadId,
        timestamp: env.clock.currentTimeMillisUnsafe(),
        sequence: sequence++
      } as ToolEvent.Event)

    const emit = (event: ToolEvent.Unstamped<ToolEvent.Event>): Effect.Effect<void, never, RunContext | EventSink> =>
      Effect.flatMap(environment, (env) => emitWith(env, event))

    const limitExceeded = (name: string): ToolError.ToolCallLimitExceeded | undefined => {
      const runLimit = options.limits?.run
      if (runLimit !== undefined && runCalls >= runLimit.max) {
        return new ToolError.ToolCallLimitExceeded({
          toolName: name,
          scope: "run",
          limit: runLimit.max,
          mode: runLimit.mode ?? "continue"
        })
      }
      const toolLimit = options.limits?.perTool?.[name] ?? options.limits?.tool
      const count = toolCalls.get(name) ?? 0
      if (toolLimit !== undefined && count >= toolLimit.max) {
        return new ToolError.ToolCallLimitExceeded({
          toolName: name,
          scope: "tool",
          limit: toolLimit.max,
          mode: toolLimit.mode ?? "continue"
        })
      }
      runCalls++
      toolCalls.set(name, count + 1)
      return undefined
    }

    /** Repairable (or exhausted retryable) errors become results when repair is on; the rest fail. */
    const settle = (call: ToolCall, name: string, error: ToolError.ToolError, elapsed: number) =>
      error.disposition !== "fatal" && repair
        ? Effect.succeed(ToolResult.fromError({ ...call, name }, error, elapsed))
        : Effect.fail(error)

    const encoderOf = (tool: Tool.Any) => {
      let encode = encoders.get(tool)
      if (encode === undefined) {
        // The JSON codec: exactly the form the exported output schema describes.
        encode = tool.output === undefined
          ? Result.succeed
          : Schema.encodeUnknownResult(Schema.toCodecJson(tool.output as Schema.Top) as unknown as Schema.Codec<unknown, unknown>)
        encoders.set(tool, encode)
      }
      return encode
    }

    /** The handler's failure as a tool error: declared failures render for the model; the rest are defects. */
    const toToolError = (tool: Tool.Any, name: string, cause: Cause.Cause<unknown>): ToolError.ToolError => {
      const failure = Cause.findErrorOption(cause)
      if (Cause.hasDies(cause) || failure._tag === "None") return new ToolError.ToolDefect({ toolName: name, cause })
      const error = failure.value
      if (ToolError.isToolError(error)) return error
      if (tool.failure !== undefined && Schema.is(tool.failure)(error)) {
        const encoded = Schema.encodeUnknownResult(tool.failure as Schema.Codec<unknown, unknown>)(error)
        const detail = Result.isSuccess(encoded) ? encoded.success : undefined
        const message = error instanceof Error && error.message !== "" ? error.message : textOfValue(detail)
        return new ToolError.ToolFailure({ message: `${name}: ${message}`, detail })
      }
      return new ToolError.ToolDefect({ toolName: name, cause })
    }

    /** Lifecycle step 6's core: the handler, with timeout, retries and exclusivity; then encode and format. */
    const handlerStep = (state: CallState, env: Env): Middleware.Next => (invocation) => {
      const { tool, spec, call } = invocation
      const name = spec.name
      const retrySafe = tool.safety.idempotent === true || tool.idempotency !== undefined
      const timeoutMillis = Duration.toMillis(tool.timeout ?? defaultTimeout)
      const toFailure = (cause: Cause.Cause<unknown>): Effect.Effect<never, ToolError.ToolError> =>
        Cause.hasInterruptsOnly(cause)
          ? Effect.failCause(cause as Cause.Cause<never>)
          : Effect.fail(toToolError(tool, name, cause))
      /** One attempt: the handler is invoked anew each time (retries included). */
      const invoke = (): Effect.Effect<unknown, ToolError.ToolError> => {
        let effect: Effect.Effect<unknown, unknown>
        try {
          effect = tool.handler(invocation.input) as Effect.Effect<unknown, unknown>
        } catch (defect) {
          return Effect.fail(new ToolError.ToolDefect({ toolName: name, cause: Cause.die(defect) }))
        }
        // Fast path: a handler that returned an already-completed Exit (`Effect.succeed(...)`)
        // can neither hang nor be cancelled, so it needs no timer and no abort signal.
        if (Exit.isExit(effect)) return Exit.isSuccess(effect) ? Effect.succeed(effect.value) : toFailure(effect.cause)
        return effect.pipe(
          Cancellation.provide(runCancel),
          Effect.timeoutOrElse({
            duration: timeoutMillis,
            orElse: () =>
              Effect.fail(new ToolError.ToolTimeout({ toolName: name, timeoutMillis, idempotent: retrySafe }))
          }),
          Effect.catchCause(toFailure)
        ) as Effect.Effect<unknown, ToolError.ToolError>
      }
      const once = Effect.suspend(invoke)
      const attempts = tool.retry === undefined || !retrySafe ? once : Effect.flatMap(
        Schedule.toStep(tool.retry),
        (step) => {
          const loop: Effect.Effect<unknown, ToolError.ToolError, RunContext | EventSink> = Effect.catch(once, (error) => {
            if (error.disposition !== "retry") return Effect.fail(error)
            return Effect.matchEffect(step(env.clock.currentTimeMillisUnsafe(), error), {
                onFailure: () => Effect.fail(error),
                onSuccess: ([, delay]) => {
                  state.attempt++
                  return emitWith(env, {
                    _tag: "tool.retrying",
                    toolCallId: call.id,
                    toolName: name,
                    attempt: state.attempt,
                    delay: Duration.toMillis(delay),
                    error
                  }).pipe(Effect.andThen(Effect.sleep(delay)), Effect.andThen(loop))
                }
              })
          })
          return loop
        }
      )
      const guarded = tool.options.exclusive === true ? exclusive.withPermits(1)(attempts) : attempts
      return Effect.flatMap(guarded, (output) => {
        const encoded = encoderOf(tool)(output)
        if (Result.isFailure(encoded)) {
          return Effect.fail(
            new ToolError.InvalidOutput({ toolName: name, issues: ToolInput.issuesOf(encoded.failure) })
          )
        }
        const value = encoded.success
        return Effect.succeed<ToolResult.ToolResult>({
          toolCallId: call.id,
          name,
          content: [ToolResult.text(textOfValue(value))],
          ...(value === undefined ? {} : { value }),
          artifacts: [],
          isError: false,
          elapsed: 0,
          ...(call.provider === undefined ? {} : { provider: call.provider })
        })
      }) as Effect.Effect<ToolResult.ToolResult, ToolError.ToolError>
    }

    /** Step 9: redaction of model-facing text and value; large text goes to the artifact store first. */
    const finalize = (
      result: ToolResult.ToolResult,
      spec: Tool.ToolSpec,
      call: ToolCall,
      env: Env
    ): Effect.Effect<ToolResult.ToolResult, ToolError.StoreFailed, StoreRegistry> => {
      if (result.isError) return Effect.succeed(result)
      const policy = spec.safety.redact
      const fullText = ToolResult.textOf(result)
      const limit = spec.options.artifactThreshold ?? threshold
      if (policy === undefined && fullText.length <= limit) return Effect.succeed(result)
      const fromValue = result.value !== undefined && fullText === textOfValue(result.value)
      const redacted = result.value === undefined ? undefined : redactValue(result.value, policy).value
      const modelText = fromValue ? textOfValue(redacted) : redactText(fullText, policy)
      const withValue: ToolResult.ToolResult = redacted === undefined ? result : { ...result, value: redacted }
      if (modelText.length <= limit) {
        return Effect.succeed(modelText === fullText ? withValue : { ...withValue, content: [ToolResult.text(modelText)] })
      }
      const keepHead = Math.min(head, Math.floor(limit * 0.6))
      const keepTail = Math.min(tail, Math.floor(limit * 0.2))
      return Effect.gen(function*() {
        const key = `${env.ctx.runId}/${call.id}`
        const store = yield* StoreRegistry.use((stores) => stores.store(artifactStore))
        yield* store.set(key, fullText).pipe(
          Effect.mapError((cause) => new ToolError.StoreFailed({ store: artifactStore, operation: "write", cause }))
        )
        const artifact: ToolResult.ArtifactRef = {
          store: artifactStore,
          key,
          bytes: Buffer.byteLength(fullText),
          mimeType: typeof result.value === "string" || result.value === undefined ? "text/plain" : "application/json"
        }
        const cut = modelText.length - keepHead - keepTail
        const bounded = `${modelText.slice(0, keepHead)}\n\n[... ${cut} characters omitted; the full output (${fullText.length} characters) is stored as artifact "${key}" ...]\n\n${
          keepTail > 0 ? modelText.slice(-keepTail) : ""
        }`
        return { ...withValue, content: [ToolResult.text(bounded)], artifacts: [...result.artifacts, artifact] }
      })
    }

    /** Steps 9 and 10 after the pipeline: artifact and audit events, then exactly one terminal event. */
    const complete = (
      call: ToolCall,
      spec: Tool.ToolSpec,
      state: CallState,
      env: Env,
      exit: Exit.Exit<ToolResult.ToolResult, ToolError.ToolError>
    ): Effect.Effect<ToolResult.ToolResult, ToolError.ToolError> => {
      const elapsed = env.clock.currentTimeMillisUnsafe() - state.startedAt
      const stamp = { toolCallId: call.id, toolName: spec.name, attempt: state.attempt }
      if (Exit.isSuccess(exit)) {
        const result = { ...exit.value, elapsed }
        const completed = Effect.suspend(() => {
          state.done = true
          return emitWith(env, {
            _tag: "tool.completed",
            ...stamp,
            elapsed,
            isError: result.isError,
            output: ToolResult.textOf(result),
            artifacts: result.artifacts
          })
        })
        const before = [
          ...result.artifacts.map((artifact) => emitWith(env, { _tag: "tool.artifact_stored", ...stamp, artifact })),
          ...(result.audit === undefined ? [] : [emitWith(env, { _tag: "tool.audit", ...stamp, audit: result.audit })])
        ]
        const all = before.length === 0 ? completed : Effect.andThen(Effect.all(before, { discard: true }), completed)
        return Effect.as(all, result)
      }
      if (Cause.hasInterruptsOnly(exit.cause)) return Effect.failCause(exit.cause)
      const failure = Cause.findErrorOption(exit.cause)
      const error = failure._tag === "Some" && ToolError.isToolError(failure.value)
        ? failure.value
        : new ToolError.ToolDefect({ toolName: spec.name, cause: exit.cause })
      state.done = true
      return Effect.andThen(
        emitWith(env, {
          _tag: "tool.failed",
          ...stamp,
          elapsed,
          reason: error._tag === "ToolTimeout" ? "timeout" : "error",
          error,
          disposition: error.disposition,
          cause: exit.cause
        }),
        settle(call, spec.name, error, elapsed)
      )
    }

    /** Reports a started call that was interrupted before its terminal event. */
    const cancelled = (call: ToolCall, state: CallState, env: Env): Effect.Effect<void> =>
      Effect.suspend(() => {
        if (!state.started || state.done) return Effect.void
        state.done = true
        const error = new ToolError.ToolCancelled({ toolName: state.toolName, started: true })
        return emitWith(env, {
          _tag: "tool.failed",
          toolCallId: call.id,
          toolName: state.toolName,
          attempt: state.attempt,
          elapsed: env.clock.currentTimeMillisUnsafe() - state.startedAt,
          reason: "cancelled",
          error,
          disposition: error.disposition
        })
      })

    /** One call through the whole lifecycle (hot path: plain `flatMap`s, no generator). */
    const runOne = (
      call: ToolCall,
      advertised: ToolRegistry.Advertised<unknown>,
      state: CallState,
      env: Env
    ): Effect.Effect<ToolResult.ToolResult, ToolError.ToolError, Requirements<R | MR>> =>
      Effect.suspend(() => {
        state.startedAt = env.clock.currentTimeMillisUnsafe()
        const resolved = ToolRegistry.resolve(advertised, call)
        const rejection = Result.isFailure(resolved)
          ? resolved.failure
          : limitExceeded(resolved.success.entry.spec.name)
        if (rejection !== undefined) {
          const name = Result.isSuccess(resolved) ? resolved.success.entry.spec.name : rejection.toolName
          state.done = true
          return Effect.andThen(
            emitWith(env, { _tag: "tool.rejected", toolCallId: call.id, toolName: name, attempt: 0, error: rejection }),
            settle(call, name, rejection, 0)
          )
        }
        const { entry, input } = (resolved as Result.Success<ToolRegistry.Resolved, never>).success
        const spec = entry.spec
        state.toolName = spec.name
        state.started = true
        state.attempt = 1
        const pipeline = Middleware.compose(middleware, handlerStep(state, env))
        return emitWith(env, {
          _tag: "tool.started",
          toolCallId: call.id,
          toolName: spec.name,
          attempt: 1,
          arguments: redactValue(input, spec.safety.redact).value
        }).pipe(
          Effect.andThen(Effect.exit(
            Effect.flatMap(
              pipeline({ call, spec, tool: entry.tool, input, turn: env.ctx.turn }),
              (result) => finalize(result, spec, call, env)
            )
          )),
          Effect.flatMap((exit) => complete(call, spec, state, env, exit)),
          Effect.onInterrupt(() => cancelled(call, state, env))
        )
      }) as Effect.Effect<ToolResult.ToolResult, ToolError.ToolError, Requirements<R | MR>>

    const newState = (call: ToolCall): CallState => ({
      started: false,
      done: false,
      startedAt: 0,
      toolName: call.name,
      attempt: 0
    })

    const run: Executor<R | MR>["run"] = (call, runOptions) =>
      Effect.flatMap(environment, (env) => runOne(call, runOptions?.advertised ?? everything, newState(call), env))

    const runBatch: Executor<R | MR>["runBatch"] = (calls, batchOptions) =>
      Effect.gen(function*() {
        const advertised = batchOptions?.advertised ?? everything
        const concurrency = Math.max(1, batchOptions?.concurrency ?? options.concurrency ?? 8)
        const failFast = (batchOptions?.failurePolicy ?? options.failurePolicy ?? "settle") === "fail-fast"
        const results: Array<ToolResult.ToolResult | undefined> = new Array(calls.length)
        const states = calls.map(newState)
        const errors: Array<ToolError.ToolError> = []
        const abort = yield* Deferred.make<void>()
        const env = yield* environment
        const one = (call: ToolCall, i: number) =>
          Effect.matchEffect(runOne(call, advertised, states[i]!, env), {
            onSuccess: (result) => Effect.sync(() => void (results[i] = result)),
            onFailure: (error) =>
              Effect.suspend(() => {
                results[i] = ToolResult.fromError({ ...call, name: states[i]!.toolName }, error)
                errors.push(error)
                return failFast ? Deferred.succeed(abort, undefined) : Effect.void
              })
          })
        const work = Effect.forEach(calls, one, { concurrency, discard: true })
        yield* Effect.raceFirst(work, Effect.race(Deferred.await(abort), runCancel.await))
        for (let i = 0; i < calls.length; i++) {
          if (results[i] === undefined) {
            const state = states[i]!
            results[i] = ToolResult.fromError(
              { ...calls[i]!, name: state.toolName },
              new ToolError.ToolCancelled({ toolName: state.toolName, started: state.started })
            )
          }
        }
        const settled = results as Array<ToolResult.ToolResult>
        if (errors.length > 0) return yield* new BatchFailed({ results: settled, errors })
        return settled
      })

    return { registry, run, runBatch, emit, runCancel }
  })
