/**
 * The hidden services together: the type of everything a handler may require
 * from the runtime, and one layer that provides them all for tests (memory
 * stores, an in-memory event log, a fixed run context, a never-aborting
 * cancellation, a fixed tool call context, progress reports dropped). Inside
 * the executor, `Cancellation`, `ToolCallContext` and `ToolProgress` are the
 * call's own.
 */
import { Layer } from "effect"
import { Cancellation } from "./Cancellation.ts"
import { EventLog, EventSink } from "./EventSink.ts"
import { RunContext, type RunInfo } from "./RunContext.ts"
import { StoreRegistry } from "./StoreRegistry.ts"
import { ToolCallContext, type ToolCallInfo } from "./ToolCallContext.ts"
import { ToolProgress } from "./ToolProgress.ts"

/** Every hidden service the runtime can provide to a handler. */
export type Hidden = RunContext | StoreRegistry | EventSink | Cancellation | ToolCallContext | ToolProgress

/**
 * Every hidden service, in memory, plus `EventLog` to read the events back. `call` fixes the
 * `ToolCallContext` a handler called directly sees (the executor provides its own per call).
 */
export const layerTest = (
  info: Partial<RunInfo> = {},
  call: Partial<ToolCallInfo> = {}
): Layer.Layer<RunContext | StoreRegistry | EventSink | EventLog | Cancellation | ToolCallContext | ToolProgress> =>
  Layer.mergeAll(
    RunContext.layer({ threadId: "test-thread", runId: "test-run", turn: 0, ...info }),
    StoreRegistry.layerMemory,
    EventSink.layerMemory,
    Cancellation.layerNever,
    ToolCallContext.layer({ turn: info.turn ?? 0, ...call }),
    ToolProgress.layerDiscard
  )
