/**
 * The lifecycle events of tool calls and of the agent loop, as one tagged
 * union. Every tool event carries run, thread, call id, canonical tool name,
 * attempt, a `Clock` timestamp and a per-run sequence number. Arguments and
 * outputs in events are redacted before they get here. A started call ends with
 * exactly one `tool.completed` or `tool.failed`; a refused one has one
 * `tool.rejected` and no start; a call that never started has no events.
 */
import type { Cause } from "effect"
import type { ArtifactRef, Audit } from "./ToolResult.ts"
import type { Disposition, ToolError } from "./ToolError.ts"

interface Stamp {
  readonly runId: string
  readonly threadId: string
  /** Milliseconds since the epoch, from `Clock`, when the event was handed to the sink. */
  readonly timestamp: number
  /** Position in the run's event stream, from 0: gap-free, in the order the sink received the events. */
  readonly sequence: number
}

interface CallStamp extends Stamp {
  readonly toolCallId: string
  /** Canonical name (the name as sent, for unknown tools). */
  readonly toolName: string
  /** 1 for the first attempt. */
  readonly attempt: number
}

export interface ToolStarted extends CallStamp {
  readonly _tag: "tool.started"
  /** Decoded arguments, redacted. */
  readonly arguments: unknown
}

export interface ToolCompleted extends CallStamp {
  readonly _tag: "tool.completed"
  readonly elapsed: number
  /** True when the tool produced an error result that the model will read (repairable). */
  readonly isError: boolean
  /** Model-facing text, bounded and redacted. */
  readonly output: string
  readonly artifacts: ReadonlyArray<ArtifactRef>
}

export interface ToolFailed extends CallStamp {
  readonly _tag: "tool.failed"
  readonly elapsed: number
  readonly reason: "error" | "cancelled" | "timeout"
  readonly error: ToolError
  readonly disposition: Disposition
  /** The full cause, for the application; never shown to a model. */
  readonly cause?: Cause.Cause<unknown>
}

export interface ToolRejected extends CallStamp {
  readonly _tag: "tool.rejected"
  readonly error: ToolError
}

export interface ToolRetrying extends CallStamp {
  readonly _tag: "tool.retrying"
  /** Milliseconds before the next attempt. */
  readonly delay: number
  readonly error: ToolError
}

export interface ToolArtifactStored extends CallStamp {
  readonly _tag: "tool.artifact_stored"
  readonly artifact: ArtifactRef
}

export interface ToolAudit extends CallStamp {
  readonly _tag: "tool.audit"
  readonly audit: Audit
}

export interface AgentTurnStarted extends Stamp {
  readonly _tag: "agent.turn_started"
  readonly turn: number
  readonly advertised: ReadonlyArray<string>
}

export interface AgentModelResponded extends Stamp {
  readonly _tag: "agent.model_responded"
  readonly turn: number
  readonly toolCalls: number
  readonly text: string
  readonly usage: { readonly inputTokens: number; readonly outputTokens: number }
}

export interface AgentFinished extends Stamp {
  readonly _tag: "agent.finished"
  readonly turns: number
  readonly reason: "final_answer" | "max_turns" | "return_direct" | "cancelled" | "failed"
}

export type ToolEvent =
  | ToolStarted
  | ToolCompleted
  | ToolFailed
  | ToolRejected
  | ToolRetrying
  | ToolArtifactStored
  | ToolAudit

export type AgentEvent = AgentTurnStarted | AgentModelResponded | AgentFinished

/** Everything that goes through an `EventSink`. */
export type Event = ToolEvent | AgentEvent

/** An event before the executor stamps it with time and sequence. */
export type Unstamped<E extends Event> = E extends unknown ? Omit<E, "timestamp" | "sequence" | "runId" | "threadId">
  : never
