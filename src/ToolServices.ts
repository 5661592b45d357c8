/**
 * The four hidden services together: the type of everything a handler may
 * require from the runtime, and one layer that provides all four for tests
 * (memory stores, an in-memory event log, a fixed run context, a never-aborting
 * cancellation).
 */
import { Layer } from "effect"
import { Cancellation } from "./Cancellation.ts"
import { EventLog, EventSink } from "./EventSink.ts"
import { RunContext, type RunInfo } from "./RunContext.ts"
import { StoreRegistry } from "./StoreRegistry.ts"

/** Every hidden service the runtime can provide to a handler. */
export type Hidden = RunContext | StoreRegistry | EventSink | Cancellation

/** All four services, in memory, plus `EventLog` to read the events back. */
export const layerTest = (
  info: Partial<RunInfo> = {}
): Layer.Layer<RunContext | StoreRegistry | EventSink | EventLog | Cancellation> =>
  Layer.mergeAll(
    RunContext.layer({ threadId: "test-thread", runId: "test-run", turn: 0, ...info }),
    StoreRegistry.layerMemory,
    EventSink.layerMemory,
    Cancellation.layerNever
  )
