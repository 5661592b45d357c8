/**
 * Runs tool calls through the lifecycle: resolve, check it was advertised,
 * decode, check limits, emit `tool.started`, middleware around the handler
 * (under its timeout, retry schedule and exclusivity; a keyed tool at most
 * once per idempotency key), encode the output (as the tool's `toModelOutput`
 * chooses), offload large output to an artifact, emit exactly one terminal
 * event. Handlers read their call from `ToolCallContext` and report progress
 * through `ToolProgress` (`tool.progress` events, bounded; see that module). Batches
 * run with a concurrency bound and return one result per call, in call order.
 * One executor per run: it owns the run's event sequence and call counters.
 *
 * Guarantees, with any sink and under interruption at any point: exactly one
 * terminal event per started call and none without a start; sequence numbers
 * gap-free and in the order the sink received them; when `run`/`runBatch`
 * returns (or is interrupted), no call of it is running or will start, and the
 * results are frozen. The stages live in `internal/executor/` (`Admission`,
 * `Invoke`, `Idempotency`, `Render`, `Reporter`, `Progress`, `CallState` and
 * `Call` for one call, `Batch` for many; `Tracing` gives each answered call an
 * `execute_tool` span when a tracer is installed; `Now` lets a call whose steps
 * all complete run as plain function calls, falling back to effects at the
 * first step that suspends: one code path either way).
 *
 * A durable run (`tinyagents/durable`) replays a run's calls from its journal through two seams
 * of its own: `countReplayed` (the run's limits count calls an earlier process admitted) and
 * `BatchOptions.durable` (a keyed call's claim across re-runs of its workflow activity).
 *
 * Redaction (a tool's `safety.redact`) is one step applied where each string is made: a
 * rejection in `ToolRegistry.resolve` (never quoting a value under a redacted key), a handler
 * failure in `Invoke` (before retries, middleware and receipts see it), any other failure and
 * the audit in `Call`, a result's text and value in `Render`, progress in `Progress`. Events,
 * results, the model's text and provider messages are all built from those redacted values.
 */
import { Clock, Context, Data, Duration, Effect, Fiber, Schedule } from "effect"
import * as Cancellation from "./Cancellation.ts"
import { EventSink } from "./EventSink.ts"
import * as Admission from "./internal/executor/Admission.ts"
import * as Batch from "./internal/executor/Batch.ts"
import * as Call from "./internal/executor/Call.ts"
import * as Idempotency from "./internal/executor/Idempotency.ts"
import * as Invoke from "./internal/executor/Invoke.ts"
import * as Now from "./internal/executor/Now.ts"
import * as Outcome from "./internal/executor/Outcome.ts"
import * as Render from "./internal/executor/Render.ts"
import * as Reporter from "./internal/executor/Reporter.ts"
import * as Tracing from "./internal/executor/Tracing.ts"
import type * as Middleware from "./Middleware.ts"
import { RunContext } from "./RunContext.ts"
import type { StoreRegistry } from "./StoreRegistry.ts"
import type { ToolCall } from "../contract/ToolCall.ts"
import type { Ask } from "../governance/Ask.ts"
import type { ToolCallContext } from "./ToolCallContext.ts"
import { limits as progressLimits, type ToolProgress } from "./ToolProgress.ts"
import * as ToolError from "../contract/ToolError.ts"
import type * as ToolEvent from "../contract/ToolEvent.ts"
import * as ToolRegistry from "../contract/ToolRegistry.ts"
import type * as ToolResult from "../contract/ToolResult.ts"

/** A call limit and what happens when it is reached. */
export interface Limit {
  readonly max: number
  /** `continue` (default): a repairable result telling the model to stop; `error`: fatal. */
  readonly mode?: "error" | "continue"
}

export interface Options<MR = never> {
  /** Execution middleware: one, or a list whose first element is outermost. */
  readonly middleware?: Middleware.Middleware<MR> | ReadonlyArray<Middleware.Middleware<MR>>
  /** Repairable errors become error results the model reads (default `true`); `false` makes them fatal. */
  readonly repair?: boolean
  /** Timeout (per attempt) for tools that declare none. Default 60 seconds. Paused while a question (`Ask`) is open. */
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
    /**
     * Characters kept from the start and the end of offloaded text. Defaults 4,000 and 1,000; at most
     * 60% and 20% of the threshold that applies (a tool's `artifactThreshold`, else `threshold`).
     */
    readonly head?: number
    readonly tail?: number
    /**
     * The `StoreRegistry` store that holds artifacts. Default `"artifacts"`. An artifact is the full
     * model-facing text as the tool produced it, before redaction; the model sees a redacted head and tail.
     */
    readonly store?: string
  }
  /** Default batch concurrency (an agent turn is one batch). Default {@link defaultConcurrency}. */
  readonly concurrency?: number
  /** Default batch failure policy. Default `settle`. */
  readonly failurePolicy?: FailurePolicy
  /**
   * Where results of keyed tools (`Tool.make({ idempotency })`) are kept, so that a key that succeeded
   * is not applied again: across executors sharing a `StoreRegistry`, and across processes sharing its store.
   * The store keeps each result as the handler produced it (content blocks and encoded value, not
   * redacted); a stored result is redacted per the tool's `safety.redact` each time it answers a call.
   */
  readonly idempotency?: {
    /** The `StoreRegistry` store. Default `"idempotency"`. */
    readonly store?: string
    /** How long a stored result answers repeats of its key. Default: for ever. */
    readonly ttl?: Duration.Input
    /**
     * How long a key's claim holds without renewal (it is renewed every third of it while the handler
     * runs); a call in another process takes over a dead holder's key after it. Default 30 seconds.
     */
    readonly lease?: Duration.Input
  }
  /** `tool.progress` events: at most one per `interval` per call (default 100 ms; see `ToolProgress`). */
  readonly progress?: {
    readonly interval?: Duration.Input
  }
  /**
   * Span content. Every call gets an `execute_tool` span when a tracer is installed; by default
   * it never carries argument or result values. These add them (redacted per the tool's `safety.redact`).
   */
  readonly tracing?: TracingOptions
}

/** `Options.tracing`: opt in to argument and result values on `execute_tool` spans. */
export type TracingOptions = Tracing.Options

/** Calls run at once in a batch (and in an agent turn) unless `concurrency` says otherwise. */
export const defaultConcurrency = 8

/**
 * `settle`: every call gets a result; fatal errors are raised after the batch.
 * `fail-fast`: the first fatal error stops the batch: calls not yet started never start (their
 * result is `ToolCancelled` with `started: false`, and they emit nothing); calls in flight are
 * interrupted and report `tool.failed` with reason `cancelled`. The batch returns after they have.
 */
export type FailurePolicy = "settle" | "fail-fast"

/** A batch had fatal errors. `results` still answers every call, in call order (a frozen snapshot). */
export class BatchFailed extends Data.TaggedError("BatchFailed")<{
  readonly results: ReadonlyArray<ToolResult.ToolResult>
  readonly errors: ReadonlyArray<ToolError.ToolError>
}> {
  override get message(): string {
    return `tool batch failed: ${this.errors.map((e) => e.message).join("; ")}`
  }
}

/**
 * What running calls needs from the environment. (The union sits in a one-element tuple so that a
 * type error shows the services themselves, `RunContext | EventSink | StoreRegistry`, rather than
 * `Requirements<never>` and then only the first of them.)
 */
export type Requirements<R> = [
  | Exclude<R, Cancellation.Cancellation | ToolCallContext | ToolProgress | Ask>
  | RunContext
  | EventSink
  | StoreRegistry
][0]

export interface BatchOptions {
  readonly advertised?: ToolRegistry.Advertised<unknown>
  readonly concurrency?: number
  readonly failurePolicy?: FailurePolicy
  /** Set by a durable run for the calls it runs inside one workflow activity (see {@link DurableClaim}). */
  readonly durable?: DurableClaim
}

/**
 * A durable run's calls run inside a workflow activity, which the engine runs again after a crash.
 * A keyed call (`Tool.make({ idempotency })`) then claims its key as `owner`, the activity's stable
 * key (the same in every re-run, so a re-run never waits out its own dead lease). `resumed` says this
 * is a re-run of an activity that started before: a keyed call that finds no stored result for its
 * key is then not run again (the first run may have applied it before it died): it fails with
 * `ToolError.OutcomeUnknown`. Calls without a key are not affected.
 */
export interface DurableClaim {
  readonly owner: string
  readonly resumed: boolean
}

export interface Executor<R> {
  readonly registry: ToolRegistry.ToolRegistry<unknown>
  /**
   * Runs one call. Fails only with a fatal error (or a repairable one when repair is off);
   * `ToolCancelled` when the run is cancelled before or while it runs.
   */
  readonly run: (
    call: ToolCall,
    options?: Pick<BatchOptions, "advertised" | "durable">
  ) => Effect.Effect<ToolResult.ToolResult, ToolError.ToolError, Requirements<R>>
  /**
   * Runs calls with a concurrency bound; results in call order, frozen. Stops early when the run is
   * cancelled (calls in flight are interrupted, the rest never start; each is answered `ToolCancelled`).
   */
  readonly runBatch: (
    calls: ReadonlyArray<ToolCall>,
    options?: BatchOptions
  ) => Effect.Effect<ReadonlyArray<ToolResult.ToolResult>, BatchFailed, Requirements<R>>
  /** Stamps (time, sequence, run) and emits an event in the run's stream: for the agent loop's own events. */
  readonly emit: (event: ToolEvent.Unstamped<ToolEvent.Event>) => Effect.Effect<void, never, RunContext | EventSink>
  /** The run's cancellation switch (also reachable from handlers through `Cancellation.cancelRun`). */
  readonly runCancel: Cancellation.RunCancel
  /**
   * Counts a call of `toolName` (its canonical name) against the run's `limits` without admitting or
   * running anything: a durable run replaying, from its journal, a call an earlier process admitted,
   * so that the limits hold across restarts.
   */
  readonly countReplayed: (toolName: string) => Effect.Effect<void>
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

/** Makes an executor for one run over `registry`. */
export const make = <R, MR = never>(
  registry: ToolRegistry.ToolRegistry<R>,
  options: Options<MR> = {}
): Effect.Effect<Executor<R | MR>> =>
  Effect.sync(() => {
    const runCancel = Cancellation.makeRunCancelUnsafe()
    const reporter = Reporter.make()
    const admit = Admission.make(options.limits)
    const runCall = Call.make({
      repair: options.repair ?? true,
      middleware: options.middleware === undefined
        ? []
        : Array.isArray(options.middleware)
        ? options.middleware
        : [options.middleware as Middleware.Middleware<MR>],
      admit,
      invoke: Invoke.make({
        defaultTimeout: Duration.fromInputUnsafe(options.defaultTimeout ?? "60 seconds"),
        reporter
      }),
      render: Render.make({
        threshold: options.artifacts?.threshold ?? 16_000,
        head: options.artifacts?.head ?? 4_000,
        tail: options.artifacts?.tail ?? 1_000,
        store: options.artifacts?.store ?? "artifacts"
      }),
      reporter,
      idempotency: Idempotency.make({
        store: options.idempotency?.store ?? "idempotency",
        ttl: options.idempotency?.ttl === undefined
          ? undefined
          : Duration.toMillis(Duration.fromInputUnsafe(options.idempotency.ttl)),
        lease: options.idempotency?.lease === undefined
          ? undefined
          : Duration.toMillis(Duration.fromInputUnsafe(options.idempotency.lease))
      }),
      runCancel,
      progress: {
        reporter,
        interval: options.progress?.interval === undefined
          ? progressLimits.intervalMillis
          : Duration.toMillis(Duration.fromInputUnsafe(options.progress.interval))
      }
    })
    const everything = ToolRegistry.all(registry)
    const tracing = Tracing.make(options.tracing)

    /**
     * Services every call needs, read once per `run`/`runBatch` instead of once per event, and whether
     * calls get spans; kept while the calling fiber's context is the same object (an agent's turns).
     */
    let setup: { readonly context: Context.Context<never>; readonly env: Reporter.Env; readonly traced: Tracing.Tracing | undefined } | undefined
    const setupOf = (fiber: Fiber.Fiber<unknown, unknown>) => {
      const context = fiber.context
      if (setup === undefined || setup.context !== context) {
        const services = context as Context.Context<RunContext | EventSink>
        setup = {
          context,
          env: { ctx: Context.get(services, RunContext), sink: Context.get(services, EventSink), clock: fiber.getRef(Clock.Clock) },
          traced: Tracing.enabled(fiber) ? tracing : undefined
        }
      }
      return setup
    }
    const environment = Effect.withFiber((fiber) => Effect.succeed(setupOf(fiber))) as Effect.Effect<
      { readonly env: Reporter.Env; readonly traced: Tracing.Tracing | undefined },
      never,
      RunContext | EventSink
    >

    /** A batch's settings, with what each of its calls is run with (one object per batch). */
    interface Settings extends Batch.Options {
      readonly advertised: ToolRegistry.Advertised<unknown>
      readonly env: Reporter.Env
      readonly traced: Tracing.Tracing | undefined
      readonly durable: DurableClaim | undefined
    }
    const callOf: Batch.RunCall<Settings> = (call, settings, restore, batch, fiber) =>
      runCall(call, settings.advertised, settings.env, restore, batch, settings.traced, settings.durable, fiber)

    /**
     * A batch, then `then` of its settled calls, in one uninterruptible region started on the calling
     * fiber: a batch whose calls all complete is answered by plain calls (`Batch.start`), with no
     * fiber, step or closure of its own beyond these.
     */
    const batch = <A, E>(
      calls: ReadonlyArray<ToolCall>,
      advertised: ToolRegistry.Advertised<unknown>,
      concurrency: number,
      failFast: boolean,
      durable: DurableClaim | undefined,
      then: (settled: Batch.Settled) => Effect.Effect<A, E>
    ): Effect.Effect<A, E, Requirements<R | MR>> =>
      Effect.uninterruptibleMask((restore) => {
        const fiber = Fiber.getCurrent()!
        const { env, traced } = setupOf(fiber)
        const settled = Batch.start(fiber, restore, calls, {
          concurrency,
          failFast,
          runCancel,
          advertised,
          env,
          traced,
          durable
        }, callOf)
        return Now.flatMap(settled, then)
      })

    /** A one-call batch's answer as `run` gives it. */
    const answerOf = (call: ToolCall) => ({ outcomes }: Batch.Settled): Effect.Effect<ToolResult.ToolResult, ToolError.ToolError> => {
      const outcome = outcomes[0]
      if (outcome === undefined) {
        return Effect.fail(new ToolError.ToolCancelled({ toolName: call.name, started: false }))
      }
      if (!(outcome instanceof Outcome.Ended)) return Effect.succeed(outcome)
      if (outcome.cancelled) return Effect.fail(outcome.result.error!)
      return outcome.error === undefined ? Effect.succeed(outcome.result) : Effect.fail(outcome.error)
    }

    const run: Executor<R | MR>["run"] = (call, runOptions) =>
      batch([call], runOptions?.advertised ?? everything, 1, false, runOptions?.durable, answerOf(call))

    const batchResults = ({ errors, results }: Batch.Settled): Effect.Effect<ReadonlyArray<ToolResult.ToolResult>, BatchFailed> =>
      errors.length > 0 ? Effect.fail(new BatchFailed({ results, errors })) : Effect.succeed(results)

    const runBatch: Executor<R | MR>["runBatch"] = (calls, batchOptions) =>
      batch(
        calls,
        batchOptions?.advertised ?? everything,
        Math.max(1, batchOptions?.concurrency ?? options.concurrency ?? defaultConcurrency),
        (batchOptions?.failurePolicy ?? options.failurePolicy ?? "settle") === "fail-fast",
        batchOptions?.durable,
        batchResults
      )

    const emit: Executor<R | MR>["emit"] = (event) => Effect.flatMap(environment, ({ env }) => reporter.emit(env, event))

    const countReplayed: Executor<R | MR>["countReplayed"] = (toolName) => Effect.sync(() => admit.count(toolName))

    return { registry, run, runBatch, emit, runCancel, countReplayed }
  })
