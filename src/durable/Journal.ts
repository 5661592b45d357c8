/**
 * The data a durable agent run journals, as Schemas: the workflow's payload (the run id and its
 * opening messages), each model turn's answer, each tool call's outcome (its `ToolResult`, the
 * events it emitted and the usage of runs nested in it), an approval decision, and the run's end.
 * Everything here round-trips through JSON (`Schema.toCodecJson`), which is how `effect/workflow` stores activity results and the
 * workflow's result in SQL. This module owns the shapes of a run only: a transcript, a model's answer
 * and its failure are `ChatModel`'s schemas (`Message`, `Response`, `ChatModelError`), journaled as
 * they encode; `DurableAgent` uses them.
 */
import { Schema } from "effect"
import { OutputInvalid } from "../agent/Agent.ts"
import * as ChatModel from "../agent/ChatModel.ts"
import * as ToolError from "../contract/ToolError.ts"
import * as ToolEvent from "../contract/ToolEvent.ts"
import * as ToolResult from "../contract/ToolResult.ts"

/** The journaled outcome of a `turn/<n>` activity: the answer, or the model's failure. */
export const Turn = Schema.Union([
  Schema.TaggedStruct("Answered", { response: ChatModel.Response }),
  Schema.TaggedStruct("Failed", { error: ChatModel.ChatModelError }),
  /** The run was cancelled (`DurableAgent.cancel`) before the model was asked: the reason. */
  Schema.TaggedStruct("Cancelled", { reason: Schema.String })
])

/**
 * The journaled outcome of a `tool/<n>/<index>` activity: the call's result, the events it emitted
 * (re-numbered when the workflow appends them to the run's event journal), and the fatal error that
 * ends the run, if any.
 */
export const Call = Schema.Struct({
  result: ToolResult.ToolResult,
  events: Schema.Array(ToolEvent.Event),
  fatal: Schema.optionalKey(ToolError.ToolError),
  /** The run was cancelled (`DurableAgent.cancel`) before the call started: the reason (the call did not run). */
  cancelled: Schema.optionalKey(Schema.String),
  /** The run was cancelled (`Cancellation.cancelRun`) when the call ended: the reason, replayed after a restart. */
  cancelRun: Schema.optionalKey(Schema.String),
  /**
   * The state updates the call recorded (`AgentState`), as JSON, or why one could not be encoded:
   * replayed after a restart, applied by the loop as when the call ran (older rows have none).
   */
  state: Schema.optionalKey(Schema.Array(Schema.Struct({
    json: Schema.optionalKey(ToolError.JsonData),
    refused: Schema.optionalKey(Schema.String)
  }))),
  /**
   * The token usage of the runs nested in the call (an agent as a tool): added to the run's again
   * when the call is replayed, so a resumed run's usage is the uncrashed run's (older rows have none).
   */
  usage: Schema.optionalKey(ChatModel.Usage)
})

/** An `Approval.Decision` (an edit's arguments as JSON). */
export const Decision = Schema.Union([
  Schema.TaggedStruct("Approve", { decidedBy: Schema.String }),
  Schema.TaggedStruct("Deny", { reason: Schema.String, decidedBy: Schema.String }),
  Schema.TaggedStruct("Edit", { arguments: ToolError.JsonData, decidedBy: Schema.String })
])

/** What an approval's wait ended with: a decision, or the run's cancellation (its reason). */
export const Waited = Schema.Union([Decision, Schema.TaggedStruct("Cancelled", { reason: Schema.String })])

/**
 * The reply to a question a call asked (`Ask`) in a durable run: an answer (its value encoded, as the
 * question's JSON Schema describes it) or a refusal; a cancelled run's open questions are declined
 * (`answeredBy: "cancel"`).
 */
export const QuestionReply = Schema.Union([
  Schema.TaggedStruct("Answer", { value: ToolError.JsonData, answeredBy: Schema.String }),
  Schema.TaggedStruct("Decline", { reason: Schema.String, answeredBy: Schema.String })
])

/** An `Agent.AgentResult` as data: what a finished durable run returns. */
export const RunResult = Schema.Struct({
  text: Schema.String,
  reason: Schema.Literals(["final_answer", "max_turns", "return_direct", "cancelled", "handoff"]),
  turns: Schema.Number,
  transcript: Schema.Array(ChatModel.Message),
  results: Schema.Array(ToolResult.ToolResult),
  usage: ChatModel.Usage,
  /** The typed final answer, as JSON (runs with `output`; older rows have none). */
  output: Schema.optionalKey(ToolError.JsonData),
  /** The run's state at its end, as JSON (runs with `state`; older rows have none). */
  state: Schema.optionalKey(ToolError.JsonData),
  /** Runs with handoffs: the agent whose part ended the run, and the transfers before it, in order. */
  agent: Schema.optionalKey(Schema.String),
  transfers: Schema.optionalKey(Schema.Array(Schema.Struct({
    from: Schema.String,
    to: Schema.String,
    task: Schema.String,
    toolCallId: Schema.String
  })))
})

/** How a durable run ended: its result, or the fields of its `Agent.AgentFailed`. */
export const Outcome = Schema.Union([
  Schema.TaggedStruct("Finished", {
    result: RunResult,
    /** The reason given to `DurableAgent.cancel`, when that is how the run ended. */
    cancelled: Schema.optionalKey(Schema.String)
  }),
  Schema.TaggedStruct("Failed", {
    reason: Schema.Literals(["tool", "model", "output"]),
    error: Schema.Union([ToolError.ToolError, ChatModel.ChatModelError, OutputInvalid]),
    turns: Schema.Number,
    transcript: Schema.Array(ChatModel.Message),
    results: Schema.Array(ToolResult.ToolResult)
  })
])

/** A durable run: its workflow's name and its run id. */
export const RunKey = Schema.Struct({ workflow: Schema.String, runId: Schema.String })

/**
 * Where a nested durable run sits (`RunContext.nesting`: the parent run, its call, the depth) and the
 * runs around it, outermost first: cancelling any of them cancels it.
 */
export const Nesting = Schema.Struct({
  parentRunId: Schema.String,
  parentCallId: Schema.String,
  depth: Schema.Number,
  within: Schema.Array(RunKey)
})

/**
 * The workflow's payload: the run id (its idempotency key), the conversation it starts from, and
 * the run's `RunContext` fields (thread id, default the run id; the application's user context, as JSON).
 */
export const Payload = Schema.Struct({
  runId: Schema.String,
  messages: Schema.Array(ChatModel.Message),
  threadId: Schema.optionalKey(Schema.String),
  user: Schema.optionalKey(ToolError.JsonData),
  /** Set for a run nested in a durable run's call (`DurableAgent.asTool`); absent at the top (older rows). */
  nesting: Schema.optionalKey(Nesting)
})
