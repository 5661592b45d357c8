/**
 * The lifecycle events of tool calls and of the agent loop, as one tagged
 * union. Every tool event carries run, thread, call id, canonical tool name,
 * attempt, a `Clock` timestamp and a per-run sequence number. Arguments and
 * outputs in events are redacted before they get here. A started call ends with
 * exactly one `tool.completed` or `tool.failed`; a refused one has one
 * `tool.rejected` and no start; a call that never started has no events, except
 * in a durable run (`tinyagents/durable`), where a call a cancel kept from
 * starting has one `tool.rejected` carrying `ToolCancelled` (`started: false`).
 *
 * A running call may report progress (`ToolProgress`): `tool.progress` events,
 * bounded in size and rate, between its start and its terminal event, never
 * after it. A running call may ask a question (`Ask`): a `tool.question` and its
 * `tool.answered`, also before its terminal event. The agent loop reports turns, the model's answers and the end of
 * the run; a streamed run (`Agent.stream`) also reports the model's text as it
 * arrives (`agent.text_delta`) and each tool call once the model has decided
 * it (`agent.tool_call`).
 *
 * Events are data: {@link Event} is also the schema of the union (one per
 * kind: {@link ToolStarted}, ...), whose encoded form is plain JSON with the
 * field names below, so events can be written as JSON lines, sent over SSE or
 * MCP, stored and decoded back. The exceptions, stated once: a `Cause`
 * (`tool.failed.cause`, `ToolDefect.cause`, `MiddlewareFailed.cause`) encodes
 * to its rendered text and decodes to a `Cause` whose defect is that text;
 * unknown values (`arguments`, audit `metadata`, a `ToolFailure`'s `detail`)
 * are kept as JSON (a `Date` comes back as its ISO string, a value nesting more
 * than 256 levels deep as its JSON text); errors come back as
 * instances of their classes.
 */
import { type Cause, Effect, Schema } from "effect"
import { CauseFromText, Disposition, JsonData, ToolError } from "./ToolError.ts"
import { ArtifactRef, Audit } from "./ToolResult.ts"
import { parses } from "../internal/json.ts"

interface Stamp {
  readonly runId: string
  readonly threadId: string
  /** Milliseconds since the epoch, from `Clock`, when the event was handed to the sink. */
  readonly timestamp: number
  /** Position in the run's event stream, from 0: gap-free, in the order the sink received the events. */
  readonly sequence: number
  /**
   * A nested run's events (an agent run as a tool, `AgentTool`) name the run and the call that run it,
   * and its depth (1 under a top-level run), so one run's events form a tree. Absent at the top.
   */
  readonly parentRunId?: string
  readonly parentCallId?: string
  readonly depth?: number
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
  /** The call's idempotency key, for tools that declare one. */
  readonly idempotencyKey?: string
  /** Decoded arguments, redacted. */
  readonly arguments: unknown
}

export interface ToolCompleted extends CallStamp {
  readonly _tag: "tool.completed"
  /** The call's idempotency key, for tools that declare one. */
  readonly idempotencyKey?: string
  readonly elapsed: number
  /** True when the tool produced an error result that the model will read (repairable). */
  readonly isError: boolean
  /** Model-facing text, bounded and redacted. */
  readonly output: string
  readonly artifacts: ReadonlyArray<ArtifactRef>
}

export interface ToolFailed extends CallStamp {
  readonly _tag: "tool.failed"
  /** The call's idempotency key, for tools that declare one. */
  readonly idempotencyKey?: string
  readonly elapsed: number
  readonly reason: "error" | "cancelled" | "timeout"
  readonly error: ToolError
  readonly disposition: Disposition
  /**
   * `"unknown"`: the error is `OutcomeUnknown`: a durable run re-ran this call after a crash and did not
   * run it again, since the first run may have applied it (see `tinyagents/durable`).
   */
  readonly outcome?: "unknown"
  /** The full cause, for the application; never shown to a model. */
  readonly cause?: Cause.Cause<unknown>
}

export interface ToolRejected extends CallStamp {
  readonly _tag: "tool.rejected"
  readonly error: ToolError
}

export interface ToolRetrying extends CallStamp {
  readonly _tag: "tool.retrying"
  /** The call's idempotency key, for tools that declare one. */
  readonly idempotencyKey?: string
  /** Milliseconds before the next attempt. */
  readonly delay: number
  readonly error: ToolError
}

export interface ToolProgress extends CallStamp {
  readonly _tag: "tool.progress"
  /** The call's idempotency key, for tools that declare one. */
  readonly idempotencyKey?: string
  /** The latest message, redacted, at most `ToolProgress.limits.messageChars` characters. */
  readonly message?: string
  /** The latest fraction done, from 0 to 1. */
  readonly fraction?: number
  /** The latest count of items done, and of items in all. */
  readonly count?: number
  readonly total?: number
  /**
   * Partial output reported since the previous event, concatenated and redacted: its last
   * `ToolProgress.limits.chunkChars` characters.
   */
  readonly chunk?: string
  /** Characters of partial output left out of `chunk` (it was over the cap). */
  readonly chunkDropped?: number
  /** How many reports this event stands for (reports within the rate bound are coalesced). */
  readonly reports: number
}

/**
 * A running call asks a question (`Ask.question`): a person or the application answers it, or no one
 * can. Its `tool.answered` follows before the call's terminal event.
 */
export interface ToolQuestion extends CallStamp {
  readonly _tag: "tool.question"
  /** The call's idempotency key, for tools that declare one. */
  readonly idempotencyKey?: string
  /** Numbers the call's questions: `1` for its first. */
  readonly question: number
  /** The question, redacted. */
  readonly message: string
  /** The JSON Schema (2020-12, an object) of the answer, for a front-end to render a form. */
  readonly schema: unknown
  /** Offered answers (encoded, redacted), when the tool gave some. */
  readonly choices?: ReadonlyArray<unknown>
}

/** The end of a {@link ToolQuestion}: the answer (encoded, redacted), or why there is none. */
export interface ToolAnswered extends CallStamp {
  readonly _tag: "tool.answered"
  /** The call's idempotency key, for tools that declare one. */
  readonly idempotencyKey?: string
  readonly question: number
  readonly outcome: "answered" | "declined" | "unanswerable"
  /** The decoded answer, encoded again and redacted (`outcome: "answered"`). */
  readonly answer?: unknown
  /** Why it was declined or could not be answered. */
  readonly reason?: string
  /** Who answered or declined (`Ask.Reply.answeredBy`). */
  readonly answeredBy?: string
  /** Milliseconds from the question to its end. */
  readonly elapsed: number
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

/** Model text as it arrives (`Agent.stream` only). */
export interface AgentTextDelta extends Stamp {
  readonly _tag: "agent.text_delta"
  readonly turn: number
  readonly text: string
}

/** A tool call the model decided, as soon as its arguments are complete (`Agent.stream` only). */
export interface AgentToolCall extends Stamp {
  readonly _tag: "agent.tool_call"
  readonly turn: number
  readonly toolCallId: string
  /** The name as the model sent it. */
  readonly toolName: string
  /** The arguments as the model sent them (JSON text or a value), redacted per the tool's `safety.redact`. */
  readonly arguments: unknown
}

/**
 * A durable run (`tinyagents/durable`) waits for a person to decide this call (approve it from any
 * process on the same database); the tool runs after the decision.
 */
export interface AgentApprovalRequested extends Stamp {
  readonly _tag: "agent.approval_requested"
  readonly turn: number
  readonly toolCallId: string
  /** The name as the model sent it. */
  readonly toolName: string
  /** The arguments as the model sent them, redacted per the tool's `safety.redact`. */
  readonly arguments: unknown
}

/**
 * The typed final answer (`Agent.run`'s `output` option) as far as it has arrived: the partial
 * JSON parsed, open strings and containers closed (`Agent.stream` only; sent when it changes).
 */
export interface AgentOutputDelta extends Stamp {
  readonly _tag: "agent.output_delta"
  readonly turn: number
  readonly partial: unknown
}

/** The typed final answer, decoded by the output schema (sent once, encoded as JSON, before `agent.finished`). */
export interface AgentOutput extends Stamp {
  readonly _tag: "agent.output"
  readonly turn: number
  readonly output: unknown
}

/**
 * The run hands the conversation over to another agent (`Handoff.run`): a call's result carried this
 * handoff to a registered agent; the run ends next (`agent.finished`, reason `handoff`).
 */
export interface AgentHandoff extends Stamp {
  readonly _tag: "agent.handoff"
  readonly turn: number
  /** The call whose result hands over. */
  readonly toolCallId: string
  readonly toolName: string
  /** The receiving agent. */
  readonly target: string
  /** What it is to do. */
  readonly task: string
  /** Who hands over, when the handoff names it. */
  readonly source?: string
}

/**
 * An update to the run's state (`Agent.run`'s `state`) applied after its turn's batch: the call that
 * recorded it, the update and the new state, both encoded as JSON. Updates apply in call order.
 * A refused update (`refused`) changed nothing: the call that recorded it, which had completed, is
 * answered with that error instead of its result, `state` is the state as it stays, and `update` the
 * refused update when it could be encoded.
 */
export interface AgentState extends Stamp {
  readonly _tag: "agent.state"
  readonly turn: number
  readonly toolCallId: string
  readonly toolName: string
  readonly update?: unknown
  readonly state: unknown
  /** Why the update was refused: the text the model reads (paths and expectations, no values). */
  readonly refused?: string
  /** What the reducer's exception said, when it threw something other than `AgentState.UpdateRefused`. */
  readonly thrown?: string
}

/**
 * A tool search (`ToolSearch`) revealed deferred tools: the search call, its query and the tools it
 * found, in rank order. They are advertised to the model from the next turn (for the rest of the
 * run, unless the search keeps them one turn).
 */
export interface AgentToolsRevealed extends Stamp {
  readonly _tag: "agent.tools_revealed"
  readonly turn: number
  readonly toolCallId: string
  /** The search tool's name. */
  readonly toolName: string
  readonly query: string
  readonly names: ReadonlyArray<string>
}

export interface AgentFinished extends Stamp {
  readonly _tag: "agent.finished"
  readonly turns: number
  readonly reason: "final_answer" | "max_turns" | "return_direct" | "cancelled" | "handoff" | "failed"
  /** The final answer (`AgentResult.text`); empty when the run failed or stopped without one. */
  readonly text: string
  /** Token usage of the whole run. */
  readonly usage: { readonly inputTokens: number; readonly outputTokens: number }
}

export type ToolEvent =
  | ToolStarted
  | ToolCompleted
  | ToolFailed
  | ToolRejected
  | ToolRetrying
  | ToolProgress
  | ToolQuestion
  | ToolAnswered
  | ToolArtifactStored
  | ToolAudit

export type AgentEvent =
  | AgentTurnStarted
  | AgentTextDelta
  | AgentToolCall
  | AgentModelResponded
  | AgentApprovalRequested
  | AgentHandoff
  | AgentOutputDelta
  | AgentOutput
  | AgentState
  | AgentToolsRevealed
  | AgentFinished

/** Everything that goes through an `EventSink`. */
export type Event = ToolEvent | AgentEvent

/** An event before the executor stamps it with time and sequence. */
export type Unstamped<E extends Event> = E extends unknown
  ? Omit<E, "timestamp" | "sequence" | "runId" | "threadId" | "parentRunId" | "parentCallId" | "depth">
  : never

// ---------------------------------------------------------------------------
// schemas: one per kind, named as its type, and the unions
// ---------------------------------------------------------------------------

const stamp = {
  runId: Schema.String,
  threadId: Schema.String,
  timestamp: Schema.Number,
  sequence: Schema.Number,
  parentRunId: Schema.optionalKey(Schema.String),
  parentCallId: Schema.optionalKey(Schema.String),
  depth: Schema.optionalKey(Schema.Number)
}

const callStamp = {
  ...stamp,
  toolCallId: Schema.String,
  toolName: Schema.String,
  attempt: Schema.Number
}

const idempotencyKey = Schema.optionalKey(Schema.String)

export const ToolStarted = Schema.TaggedStruct("tool.started", {
  ...callStamp,
  idempotencyKey,
  arguments: JsonData
})

export const ToolCompleted = Schema.TaggedStruct("tool.completed", {
  ...callStamp,
  idempotencyKey,
  elapsed: Schema.Number,
  isError: Schema.Boolean,
  output: Schema.String,
  artifacts: Schema.Array(ArtifactRef)
})

export const ToolFailed = Schema.TaggedStruct("tool.failed", {
  ...callStamp,
  idempotencyKey,
  elapsed: Schema.Number,
  reason: Schema.Literals(["error", "cancelled", "timeout"]),
  error: ToolError,
  disposition: Disposition,
  cause: Schema.optionalKey(CauseFromText),
  outcome: Schema.optionalKey(Schema.Literal("unknown"))
})

export const ToolRejected = Schema.TaggedStruct("tool.rejected", {
  ...callStamp,
  error: ToolError
})

export const ToolRetrying = Schema.TaggedStruct("tool.retrying", {
  ...callStamp,
  idempotencyKey,
  delay: Schema.Number,
  error: ToolError
})

export const ToolProgress = Schema.TaggedStruct("tool.progress", {
  ...callStamp,
  idempotencyKey,
  message: Schema.optionalKey(Schema.String),
  fraction: Schema.optionalKey(Schema.Number),
  count: Schema.optionalKey(Schema.Number),
  total: Schema.optionalKey(Schema.Number),
  chunk: Schema.optionalKey(Schema.String),
  chunkDropped: Schema.optionalKey(Schema.Number),
  reports: Schema.Number
})

export const ToolQuestion = Schema.TaggedStruct("tool.question", {
  ...callStamp,
  idempotencyKey,
  question: Schema.Number,
  message: Schema.String,
  schema: JsonData,
  choices: Schema.optionalKey(Schema.Array(JsonData))
})

export const ToolAnswered = Schema.TaggedStruct("tool.answered", {
  ...callStamp,
  idempotencyKey,
  question: Schema.Number,
  outcome: Schema.Literals(["answered", "declined", "unanswerable"]),
  answer: Schema.optionalKey(JsonData),
  reason: Schema.optionalKey(Schema.String),
  answeredBy: Schema.optionalKey(Schema.String),
  elapsed: Schema.Number
})

export const ToolArtifactStored = Schema.TaggedStruct("tool.artifact_stored", {
  ...callStamp,
  artifact: ArtifactRef
})

export const ToolAudit = Schema.TaggedStruct("tool.audit", {
  ...callStamp,
  audit: Audit
})

const Usage = Schema.Struct({ inputTokens: Schema.Number, outputTokens: Schema.Number })

export const AgentTurnStarted = Schema.TaggedStruct("agent.turn_started", {
  ...stamp,
  turn: Schema.Number,
  advertised: Schema.Array(Schema.String)
})

export const AgentModelResponded = Schema.TaggedStruct("agent.model_responded", {
  ...stamp,
  turn: Schema.Number,
  toolCalls: Schema.Number,
  text: Schema.String,
  usage: Usage
})

export const AgentTextDelta = Schema.TaggedStruct("agent.text_delta", {
  ...stamp,
  turn: Schema.Number,
  text: Schema.String
})

export const AgentToolCall = Schema.TaggedStruct("agent.tool_call", {
  ...stamp,
  turn: Schema.Number,
  toolCallId: Schema.String,
  toolName: Schema.String,
  arguments: JsonData
})

export const AgentApprovalRequested = Schema.TaggedStruct("agent.approval_requested", {
  ...stamp,
  turn: Schema.Number,
  toolCallId: Schema.String,
  toolName: Schema.String,
  arguments: JsonData
})

export const AgentOutputDelta = Schema.TaggedStruct("agent.output_delta", {
  ...stamp,
  turn: Schema.Number,
  partial: JsonData
})

export const AgentOutput = Schema.TaggedStruct("agent.output", {
  ...stamp,
  turn: Schema.Number,
  output: JsonData
})

export const AgentHandoff = Schema.TaggedStruct("agent.handoff", {
  ...stamp,
  turn: Schema.Number,
  toolCallId: Schema.String,
  toolName: Schema.String,
  target: Schema.String,
  task: Schema.String,
  source: Schema.optionalKey(Schema.String)
})

export const AgentState = Schema.TaggedStruct("agent.state", {
  ...stamp,
  turn: Schema.Number,
  toolCallId: Schema.String,
  toolName: Schema.String,
  update: Schema.optionalKey(JsonData),
  state: JsonData,
  refused: Schema.optionalKey(Schema.String),
  thrown: Schema.optionalKey(Schema.String)
})

export const AgentToolsRevealed = Schema.TaggedStruct("agent.tools_revealed", {
  ...stamp,
  turn: Schema.Number,
  toolCallId: Schema.String,
  toolName: Schema.String,
  query: Schema.String,
  names: Schema.Array(Schema.String)
})

export const AgentFinished = Schema.TaggedStruct("agent.finished", {
  ...stamp,
  turns: Schema.Number,
  reason: Schema.Literals(["final_answer", "max_turns", "return_direct", "cancelled", "handoff", "failed"]),
  text: Schema.String,
  usage: Usage
})

/** The schema of every {@link ToolEvent}. */
export const ToolEvent = Schema.Union([
  ToolStarted,
  ToolCompleted,
  ToolFailed,
  ToolRejected,
  ToolRetrying,
  ToolProgress,
  ToolQuestion,
  ToolAnswered,
  ToolArtifactStored,
  ToolAudit
]).pipe(Schema.toTaggedUnion("_tag"))

/** The schema of every {@link AgentEvent}. */
export const AgentEvent = Schema.Union([
  AgentTurnStarted,
  AgentTextDelta,
  AgentToolCall,
  AgentModelResponded,
  AgentApprovalRequested,
  AgentHandoff,
  AgentOutputDelta,
  AgentOutput,
  AgentState,
  AgentToolsRevealed,
  AgentFinished
]).pipe(
  Schema.toTaggedUnion("_tag")
)

/**
 * The schema of every event: `Schema.encodeSync(ToolEvent.Event)(event)` is
 * its JSON form ({@link EventJson} also covers non-finite numbers);
 * `Event.cases` lists the kinds, `Event.match` matches on them.
 */
export const Event = Schema.Union([ToolEvent, AgentEvent]).pipe(Schema.toTaggedUnion("_tag"))

/** The encoded (JSON) form of an event. */
export type Encoded = typeof Event.Encoded

/**
 * The JSON codec of events: {@link Event}, with the one value plain JSON lacks
 * made safe (a non-finite number encodes as the string `"Infinity"`, `"NaN"`).
 * {@link encodeJson}, {@link decodeJsonl} and `EventSink.layerJsonl` use it.
 */
export const EventJson = Schema.toCodecJson(Event)

// The schemas and the interfaces above describe the same values (checked here, at compile time).
type Same<A, B> = [A, keyof A] extends [B, keyof B] ? [B, keyof B] extends [A, keyof A] ? true : false : false
type Mismatched = {
  [K in Event["_tag"] | typeof Event.Type["_tag"]]: Same<
    Extract<Event, { readonly _tag: K }>,
    Extract<typeof Event.Type, { readonly _tag: K }>
  > extends true ? never
    : K
}[Event["_tag"] | typeof Event.Type["_tag"]]
const schemasMatchTypes: [Mismatched] extends [never] ? true : { readonly mismatched: Mismatched } = true
void schemasMatchTypes

/** A line of a JSON-lines event log that is not an event. */
export class MalformedEventLine extends Schema.TaggedError<MalformedEventLine>()("MalformedEventLine", {
  /** 1-based. */
  line: Schema.Number,
  reason: Schema.String
}) {
  override get message(): string {
    return `event log line ${this.line}: ${this.reason}`
  }
}

const EventFromJson = Schema.fromJsonString(EventJson)
const encodeLine = Schema.encodeEffect(EventFromJson)
const decodeLine = Schema.decodeUnknownEffect(EventFromJson)

/** One event as one line of JSON (no newline). Fails only with a defect, for a value that is not an event. */
export const encodeJson = (event: Event): Effect.Effect<string> => Effect.orDie(encodeLine(event))

/**
 * Decodes a JSON-lines event log (as {@link encodeJson} and
 * `EventSink.layerJsonl` write it): one event per line, blank lines skipped.
 * A last line without its newline that is not valid JSON is a write cut
 * short, and is ignored; any other bad line fails with its number.
 */
export const decodeJsonl = (text: string): Effect.Effect<ReadonlyArray<Event>, MalformedEventLine> => {
  const lines = text.split("\n")
  const torn = lines.length - 1 // the index of the part after the last newline ("" for a complete log)
  return Effect.forEach(lines, (line, i) => {
    if (line.trim() === "") return Effect.succeed([])
    return decodeLine(line).pipe(
      Effect.map((event) => [event]),
      Effect.catch((error) =>
        i === torn && !parses(line)
          ? Effect.succeed([])
          : Effect.fail(new MalformedEventLine({ line: i + 1, reason: error.message }))
      )
    )
  }).pipe(Effect.map((chunks) => chunks.flat()))
}

