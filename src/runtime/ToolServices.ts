/**
 * The hidden services together: the type of everything a handler may require
 * from the runtime, and two layers that provide them. `layerTest` is for tests
 * (memory stores, an in-memory event log, a fixed run context, a never-aborting
 * cancellation, a fixed tool call context, progress reports dropped, questions
 * put to the `Ask.Answerer` in context, if any, without events); `layer`
 * is an application's (stores in one SQLite file, events to a JSON-lines file
 * or the console, a run context with a generated id). Inside the executor,
 * `Cancellation`, `ToolCallContext`, `ToolProgress` and `Ask` are the call's own.
 *
 * The one runtime module that reaches into `src/stores`: `layer`'s default
 * stores are `Stores.layerSqlite` (the public module; no module imports this
 * one back).
 */
import { Console, Data, Effect, Layer } from "effect"
import type { RateLimiter } from "effect/persistence"
import { randomUUID } from "node:crypto"
import { mkdirSync } from "node:fs"
import { dirname, join, resolve } from "node:path"
import * as ToolEvent from "../contract/ToolEvent.ts"
import * as Stores from "../stores/Stores.ts"
import { Cancellation } from "./Cancellation.ts"
import { EventLog, EventSink } from "./EventSink.ts"
import { RunContext, type RunInfo } from "./RunContext.ts"
import { StoreRegistry } from "./StoreRegistry.ts"
import { ToolCallContext, type ToolCallInfo } from "./ToolCallContext.ts"
import { ToolProgress } from "./ToolProgress.ts"
import { Ask } from "../governance/Ask.ts"

/** Every hidden service the runtime can provide to a handler. */
export type Hidden = RunContext | StoreRegistry | EventSink | Cancellation | ToolCallContext | ToolProgress | Ask

/**
 * Every hidden service, in memory, plus `EventLog` to read the events back. `call` fixes the
 * `ToolCallContext` a handler called directly sees (the executor provides its own per call).
 */
export const layerTest = (
  info: Partial<RunInfo> = {},
  call: Partial<ToolCallInfo> = {}
): Layer.Layer<RunContext | StoreRegistry | EventSink | EventLog | Cancellation | ToolCallContext | ToolProgress | Ask> =>
  Layer.mergeAll(
    RunContext.layer({ threadId: "test-thread", runId: "test-run", turn: 0, ...info }),
    StoreRegistry.layerMemory,
    EventSink.layerMemory,
    Cancellation.layerNever,
    ToolCallContext.layer({ turn: info.turn ?? 0, ...call }),
    ToolProgress.layerDiscard,
    Ask.layerDirect
  )

// ---------------------------------------------------------------------------
// production
// ---------------------------------------------------------------------------

/** Options of {@link layer}. Relative paths are resolved against the working directory. */
export interface LayerOptions {
  /** Where the default files live, created when missing. Default `.tinyagents` in the working directory. */
  readonly directory?: string | undefined
  /**
   * The stores (`StoreRegistry`) and rate limits (`RateLimiter`): a SQLite file (`Stores.layerSqlite`;
   * `filename` defaults to `<directory>/stores.sqlite`, its directory is created when missing), or
   * `"memory"` (nothing survives the process).
   */
  readonly stores?: "memory" | Partial<Stores.SqliteOptions> | undefined
  /**
   * Where events go: a JSON-lines file (`EventSink.layerJsonl`; `jsonl` defaults to
   * `<directory>/events.jsonl`, appended to, never truncated; needs `@effect/platform-node`),
   * `"console"` (the same JSON lines on stderr, through Effect's `Console`), or `"none"`.
   */
  readonly events?: "console" | "none" | { readonly jsonl?: string | undefined; readonly sync?: boolean | undefined } | undefined
  /** The run's context. `runId` defaults to a fresh `run-<uuid>`, `threadId` to the run id, `turn` to 0. */
  readonly run?: Partial<RunInfo> | undefined
}

/** What {@link layer} provides: everything the executor, the agent loop and the `rateLimit` middleware read from context. */
export type Services = RunContext | StoreRegistry | RateLimiter.RateLimiter | EventSink

/** {@link layer} was given an option it cannot use, or could not create a file it names. */
export class ToolServicesError extends Data.TaggedError("ToolServicesError")<{
  /** The option at fault, e.g. `"run.turn"` or `"events.jsonl"`. */
  readonly option: string
  readonly detail: string
  readonly cause?: unknown
}> {
  override get message(): string {
    return `ToolServices.layer: ${this.option}: ${this.detail}`
  }
}

const describe = (u: unknown): string => u === undefined ? "undefined" : JSON.stringify(u) ?? String(u)

const nonEmpty = (option: string, u: unknown): Effect.Effect<string, ToolServicesError> =>
  typeof u === "string" && u.trim() !== ""
    ? Effect.succeed(u)
    : Effect.fail(new ToolServicesError({ option, detail: `expected a non-empty string, got ${describe(u)}` }))

const makeDirectory = (option: string, dir: string) =>
  Effect.try({
    try: () => void mkdirSync(dir, { recursive: true }),
    catch: (cause) =>
      new ToolServicesError({ option, detail: `cannot create the directory ${dir}: ${cause instanceof Error ? cause.message : String(cause)}`, cause })
  })

const runContext = (run: Partial<RunInfo>): Effect.Effect<RunInfo, ToolServicesError> =>
  Effect.gen(function*() {
    const runId = run.runId === undefined ? `run-${randomUUID()}` : yield* nonEmpty("run.runId", run.runId)
    const threadId = run.threadId === undefined ? runId : yield* nonEmpty("run.threadId", run.threadId)
    const turn = run.turn ?? 0
    if (!Number.isSafeInteger(turn) || turn < 0) {
      return yield* new ToolServicesError({ option: "run.turn", detail: `expected a whole number from 0, got ${describe(turn)}` })
    }
    return { ...run, threadId, runId, turn }
  })

const storesLayer = (directory: string, stores: LayerOptions["stores"]) =>
  Effect.gen(function*() {
    if (stores === "memory") return Stores.layerMemory
    if (stores !== undefined && (typeof stores !== "object" || stores === null)) {
      return yield* new ToolServicesError({ option: "stores", detail: `expected "memory" or { filename?, busyTimeout?, artifacts? }, got ${describe(stores)}` })
    }
    const filename = resolve(stores?.filename === undefined ? join(directory, "stores.sqlite") : yield* nonEmpty("stores.filename", stores.filename))
    const busyTimeout = stores?.busyTimeout
    if (busyTimeout !== undefined && !(Number.isFinite(busyTimeout) && busyTimeout >= 0)) {
      return yield* new ToolServicesError({ option: "stores.busyTimeout", detail: `expected milliseconds from 0, got ${describe(busyTimeout)}` })
    }
    yield* makeDirectory("stores.filename", dirname(filename))
    return yield* Effect.try({
      try: () => Stores.layerSqlite({ ...stores, filename }), // checks the artifacts policy when made
      catch: (cause) =>
        new ToolServicesError({ option: "stores.artifacts", detail: cause instanceof Error ? cause.message : String(cause), cause })
    })
  })

const eventsLayer = (directory: string, events: LayerOptions["events"]) =>
  Effect.gen(function*() {
    if (events === "none") return EventSink.layerDiscard
    if (events === "console") {
      return Layer.succeed(EventSink, { emit: (event) => Effect.flatMap(ToolEvent.encodeJson(event), Console.error) })
    }
    if (events !== undefined && (typeof events !== "object" || events === null)) {
      return yield* new ToolServicesError({ option: "events", detail: `expected "console", "none" or { jsonl?, sync? }, got ${describe(events)}` })
    }
    const path = resolve(events?.jsonl === undefined ? join(directory, "events.jsonl") : yield* nonEmpty("events.jsonl", events.jsonl))
    yield* makeDirectory("events.jsonl", dirname(path))
    const NodeFileSystem = yield* Effect.tryPromise({
      try: () => import("@effect/platform-node/NodeFileSystem"),
      catch: (cause) =>
        new ToolServicesError({
          option: "events",
          detail: `a JSON-lines event file needs @effect/platform-node (^4.1): npm install @effect/platform-node, or set events to "console"`,
          cause
        })
    })
    const jsonl = EventSink.layerJsonl(path, { sync: events?.sync === true }).pipe(Layer.provide(NodeFileSystem.layer))
    return Layer.effectContext(Effect.mapError(
      Layer.build(jsonl),
      (cause) => new ToolServicesError({ option: "events.jsonl", detail: `cannot open ${path}: ${cause.message}`, cause })
    ))
  })

/**
 * The hidden services of an application, with embedded defaults: stores, claims and rate limits in
 * one SQLite file (`.tinyagents/stores.sqlite`), events appended to a JSON-lines file
 * (`.tinyagents/events.jsonl`), and a run context with a generated run id. The executor provides
 * each call's own `Cancellation`, `ToolCallContext` and `ToolProgress`. Bad options, or a file that
 * cannot be created, fail the layer with a {@link ToolServicesError} naming the option.
 */
export const layer = (options: LayerOptions = {}): Layer.Layer<Services, ToolServicesError> =>
  Layer.unwrap(Effect.gen(function*() {
    const directory = resolve(options.directory === undefined ? ".tinyagents" : yield* nonEmpty("directory", options.directory))
    const run = yield* runContext(options.run ?? {})
    const stores = yield* storesLayer(directory, options.stores)
    const events = yield* eventsLayer(directory, options.events)
    return Layer.mergeAll(RunContext.layer(run), stores, events)
  }))
