/**
 * A durable agent: the agent loop (`Agent.loopWith`, the same loop as `Agent.run`) as an
 * `effect/workflow` `Workflow`, whose model turns and tool calls are `Activity`s journaled in SQL
 * by the workflow engine (`Runner.layerSqlite` / `Runner.layerPostgres`). A run is identified by
 * its `runId` (the workflow's idempotency key): starting it again is the same run. When a runner
 * dies, a restarted runner (or, on Postgres, another runner) resumes every unfinished run: the
 * workflow body runs again from the top, but every activity that completed answers from the
 * journal, so a completed call is not executed again and the model is not asked again for a turn
 * it answered.
 *
 * Activities: `turn/<n>` (the model's whole answer to turn n, from 0) and `tool/<n>/<i>` (call i
 * of turn n, from 0: its `ToolResult`, the events it emitted and the state updates it recorded
 * (`AgentState`: a replayed call's are applied again, so a resumed run has the state it had); named
 * by position, so two calls with the same id both run, as in `Agent.run`); after a handoff
 * (`Options.handoffs`), the k-th receiving agent's are named under `handoff-<k>/` (see {@link Handoffs}).
 * The call in flight when a runner dies
 * (after its side effect, before its journal write) is re-run by the engine (at least once), so:
 *
 * | tool (`Tool.retrySafety`) | a re-run after a crash |
 * |---|---|
 * | `safety.idempotent: true` (keyed or not) | runs again (a keyed one replays its key's stored result, if any) |
 * | keyed (`Tool.make({ idempotency })`), not idempotent | the key's claim owner is the activity's stable key (`Activity.idempotencyKey`); a stored result replays; no stored result: not run again, answered "may or may not have completed" |
 * | neither | a "started" marker is written before the call; a re-run that finds it does not run the tool and answers "may or may not have completed" (`ToolError.OutcomeUnknown`; its `tool.failed` event has `outcome: "unknown"`) |
 *
 * This is the rule of automatic retries after a timeout (`Tool.mayRunAgain`): only an idempotent
 * tool runs again when its last attempt may have had its effect. A keyed call's claim owner is the
 * activity's stable key whether or not the tool is idempotent. A crash between the marker and the
 * handler's start also answers "may or may not have completed": the rule errs towards never
 * applying twice.
 *
 * Approvals: for each call of a turn for which `options.approval` holds, the body records a request
 * (table `tinyagents_durable_approvals`) and reports `agent.approval_requested`, all of the turn's
 * requests first; then it waits, durably, on each request's `DurableDeferred` `approval/<n>/<i>`
 * (named by the call's position). `approve(runId, callId, decision)` decides the latest pending
 * request for that call id, from any process on the same database (a journaled claim, then the
 * deferred), and fails with `ApprovalNotPending` when none waits: a decision answers exactly one
 * request, never a later call that reuses the id. `pending(runId)` lists the waiting requests.
 * `Deny` answers the call `ApprovalDenied` without running it; `Edit` runs it with the edited
 * arguments (decoded like any call's); `Approve` and `Edit` run it with an `Approval` service
 * answering that decision for that call's id, so the `consent` middleware reads it instead of
 * asking (another question asked during the call, such as an MCP server's elicitation, goes to the
 * application's `Approval`, and is denied when there is none). A turn's calls
 * start once all of the turn's approvals are decided. Calls that `consent` asks about but
 * `options.approval` does not cover ask the `Approval` service the application provides, as in
 * `Agent.run`.
 *
 * Questions (`Ask`): a call's own `Ask.question` is recorded (table `tinyagents_durable_questions`,
 * with the answer's JSON Schema) and awaited as the `DurableDeferred` `question/<turn>/<index>/<n>`:
 * with no reply the activity suspends, journaling nothing, and so does the run (a tool neither
 * idempotent nor keyed loses its "started" marker: the call runs again by design). `answer(runId,
 * callId, reply)` checks an answer against the JSON Schema (`AnswerRefused` when it does not match:
 * nothing is sent), claims the question and completes its deferred, from any process; the run wakes,
 * the call runs again from its start, and the same question gets the journaled reply at once. What a
 * handler does before it asks must therefore be idempotent. `questions` / `questionsAll` list the
 * open questions; `cancel` declines them. Questions from inside the call (an inline agent's calls, an
 * imported MCP tool's elicitation) go to the application's `Ask.Answerer` (see `internal/questions.ts`).
 *
 * Cancellation: `cancel(runId)` completes the run's durable deferred `cancel` with the reason
 * (which wakes a run waiting for approvals: each wait races it) and records the reason in the table
 * `tinyagents_durable_cancels`, which each runner reads every `pollInterval` into memory while it
 * runs a run (all of it when it starts; again when a run starts after a pause longer than that), and
 * which every step checks there before it starts anything: a `turn/<n>`
 * activity then journals `Cancelled` instead of asking the model, a `tool/<n>/<i>` activity journals
 * the call as not started (`ToolCancelled`, `started: false`, with its terminal event: `tool.rejected`
 * carrying that error; a call whose "started" marker exists is answered as after a crash), and a
 * turn with approvals journals a check (`cancel-check/<n>`)
 * before requesting them. Every such answer is journaled, so a replay takes the same path. The loop
 * then ends as `Agent.run` ends a cancelled run (calls already running finish and keep their
 * events; `agent.finished` with reason `cancelled`), the outcome records the reason, and
 * `poll`/`result` answer `RunCancelled` (`outcome`: status `cancelled`, beside `finished` and `failed`).
 *
 * Nested durable agents (`asTool`, `DurableAgentTool`): a call runs another durable agent's run as
 * a child workflow, `<run>/<turn>/<index>`, journaled in its own right; its payload carries the
 * nesting (`RunContext.nesting`) and the runs around it, whose cancellation its steps also check. A
 * call that the nested run suspended (it waits for an approval) suspends its activity, journaling
 * nothing; the nested run's end wakes the run, and the call runs again and reads it. A call that
 * times out cancels the nested runs it started (reason "timed out"). The usage of runs
 * nested in a call (either kind) is journaled with the call, and added again when it is replayed.
 *
 * Limits: the executor's run-scoped call counters (`limits`) are in memory, so a call replayed from
 * the journal is counted again when its journaled events show it was admitted (`tool.started`, or
 * answered "may or may not have completed"): the limits hold across restarts.
 *
 * The calls of a turn run as separate activities, at most `concurrency` at once; a fatal error
 * in one does not stop the others (the `fail-fast` policy does not apply), and the run then ends
 * with `AgentFailed` as in `Agent.run`.
 *
 * Events: the body writes its events to the table `tinyagents_durable_run_events` (keyed by the
 * workflow's name and the run id, so two agents' runs with the same id stay apart) with
 * deterministic sequence numbers (`ON CONFLICT DO NOTHING`, so a replay writes nothing twice); a
 * call's events are returned by its activity and appended, in call order, after the turn's calls
 * complete.
 * `events(runId, { since })` reads them from there and follows the run until it ends; with
 * `follow: false` it reads what is journaled now. A durable stream carries `agent.turn_started`,
 * `agent.model_responded`, `agent.approval_requested`, every tool event (`tool.started`,
 * `tool.completed`, `tool.failed`, `tool.rejected`, `tool.retrying`, `tool.progress`, ...), and
 * `agent.finished`; never `agent.text_delta` or `agent.tool_call` (a turn is journaled whole).
 * An event's `timestamp` is when it was first written; its `sequence` is its journal position.
 * The events go to the journal only, not to an `EventSink` (the body provides its own).
 *
 * `start(runId, messages, { threadId, user })` journals the run's `RunContext` with its payload:
 * handlers see that thread id (default the run id) and user context.
 *
 * Listing: `start` (with the journal's SQL client at hand) and the runner that picks a run up record
 * it (table `tinyagents_durable_runs`: its start, the turn it is at, the run it is nested in);
 * `list` pages through them newest first with each run's status (from the engine), turn and pending
 * approvals, and `pendingAll` lists every waiting call across runs.
 */
import { Cause, Clock, Context, Data, Effect, Exit, Layer, Option, Semaphore, Stream } from "effect"
import { Schema } from "effect"
import { Duration } from "effect"
import { SqlClient } from "effect/sql"
import { Activity, DurableDeferred, Workflow, WorkflowEngine } from "effect/workflow"
import * as Agent from "../agent/Agent.ts"
import * as AgentState from "../agent/AgentState.ts"
import type * as AgentTool from "../agent/AgentTool.ts"
import * as ChatModel from "../agent/ChatModel.ts"
import * as Handoff from "../agent/Handoff.ts"
import * as Tool from "../contract/Tool.ts"
import type { ToolCall } from "../contract/ToolCall.ts"
import type * as ToolRegistry from "../contract/ToolRegistry.ts"
import * as ToolError from "../contract/ToolError.ts"
import type * as ToolEvent from "../contract/ToolEvent.ts"
import * as ToolResult from "../contract/ToolResult.ts"
import * as ToolSchema from "../contract/ToolSchema.ts"
import * as Approval from "../governance/Approval.ts"
import * as Ask from "../governance/Ask.ts"
import { redactArguments } from "../internal/redact/policy.ts"
import { EventSink } from "../runtime/EventSink.ts"
import * as Executor from "../runtime/Executor.ts"
import { RunContext } from "../runtime/RunContext.ts"
import * as DurableAgentTool from "./DurableAgentTool.ts"
import * as Journal from "./Journal.ts"
import { CurrentCall } from "./internal/call.ts"
import * as Questions from "./internal/questions.ts"
import * as Tables from "./internal/tables.ts"

/**
 * What a finished durable run returns: an `Agent.AgentResult` (decoded from the journal; its typed
 * `output`, journaled as JSON, decoded again by the run's `output` schema). A run with `handoffs`
 * also names the agent whose part ended it and the transfers before it (as `Handoff.HandoffResult`).
 */
export type DurableResult<Output = unknown> = Agent.AgentResult<Output> & {
  readonly agent?: string
  readonly transfers?: ReadonlyArray<Handoff.Transfer>
}

/** Options of {@link make}: the agent's `RunOptions` without the messages (given per run) and `cancelWhen`. */
export interface Options<R, MR = never, S extends Agent.OutputSchema = never, St = unknown>
  extends Omit<Agent.RunOptions<R, MR, S, St>, "messages" | "cancelWhen" | "name" | "handoffs">
{
  /** The workflow's name (unique per application; part of every run's execution id). */
  readonly name: string
  /** Agents this one may hand the conversation over to (see {@link Handoffs}). Default: none. */
  readonly handoffs?: Handoffs<R, MR>
  /** Which calls wait for a durable approval before they run (default: none). */
  readonly approval?: (call: ToolCall, spec: Tool.ToolSpec) => boolean
  /** How often `result` and `events` look for news. Default 200 ms. */
  readonly pollInterval?: Duration.Input
}

/** Per-run options of `start`: the `RunContext` the run's handlers see. */
export interface StartOptions {
  /** The conversation the run belongs to (`RunContext.threadId`). Default: the run id. */
  readonly threadId?: string
  /** The application's user context (`RunContext.user`); journaled with the run, so JSON. */
  readonly user?: Schema.Json
}

/** A call of a run waiting for its approval (see `pending`). */
export interface PendingApproval {
  /** The call's id, as the model sent it (what `approve` takes). */
  readonly callId: string
  readonly toolName: string
  /** The call's arguments, redacted per the tool's `safety.redact`. */
  readonly arguments: unknown
  /** The turn (from 0) and the call's position in it. */
  readonly turn: number
  readonly index: number
}

/** A call waiting for its approval, with its run (see `pendingAll`). */
export interface RunPendingApproval extends PendingApproval {
  readonly runId: string
}

/** A question a call of a run asked (`Ask.question`), waiting for its answer (see `questions`). */
export interface PendingQuestion {
  /** The asking call's id, as the model sent it (what `answer` takes). */
  readonly callId: string
  readonly toolName: string
  /** The call's question number (1 for its first; what `answer`'s `question` option takes). */
  readonly question: number
  /** The question, redacted like the call's arguments. */
  readonly message: string
  /** The answer's JSON Schema (2020-12, an object): what `answer` checks a value against. */
  readonly schema: ToolSchema.JsonSchemaObject
  /** The offered answers, encoded. */
  readonly choices?: ReadonlyArray<unknown>
  /** The turn (from 0) and the call's position in it. */
  readonly turn: number
  readonly index: number
}

/** A question waiting for its answer, with its run (see `questionsAll`). */
export interface RunPendingQuestion extends PendingQuestion {
  readonly runId: string
}

/** What `answer` takes: an answer (`Ask.answer(value, answeredBy)`) or a refusal (`Ask.decline(reason, answeredBy)`). */
export type QuestionReply = Ask.AnswerReply | Ask.DeclineReply

/**
 * Where a run stands, as `list` reports it: `queued` (started, not picked up by a runner yet),
 * `running`, `awaiting_approval` (running, with calls waiting for a decision), `awaiting_answer`
 * (running, suspended on questions its calls asked), or ended: `finished`
 * (a result, including one a handler's `Cancellation.cancelRun` ended), `failed` (`AgentFailed`, or
 * a defect) or `cancelled` (`cancel`).
 */
export type RunStatus = "queued" | "running" | "awaiting_approval" | "awaiting_answer" | "finished" | "failed" | "cancelled"

/** One run of a durable agent, as `list` reports it. */
export interface RunSummary {
  readonly runId: string
  readonly status: RunStatus
  /** The latest turn the run started (from 0; after a handoff, the receiving agent's), `undefined` before its first. */
  readonly turn: number | undefined
  /** How many of its calls wait for a decision (0 once the run has ended or is cancelled). */
  readonly pendingApprovals: number
  /** How many questions of its calls wait for an answer (0 once the run has ended or is cancelled). */
  readonly pendingQuestions: number
  /**
   * When the run was started (epoch ms): when `start` returned, or, for a run started without the
   * journal's SQL client at hand (or before runs were recorded), its first event's `timestamp`.
   */
  readonly startedAt: number
  /** The reason of a `cancel` that a running run has not acted on yet. */
  readonly cancelling?: string
  /** For a run nested in a durable run's call (`asTool`): that run's id. */
  readonly parentRunId?: string
}

/** A page of `list`: the runs, and the cursor of the next page (`undefined` on the last). */
export interface RunPage {
  readonly runs: ReadonlyArray<RunSummary>
  readonly next: string | undefined
}

/** Options of `list`: how many runs (default 50, at most 1,000) and from which page (`RunPage.next`). */
export interface ListOptions {
  readonly limit?: number
  readonly cursor?: string
}

/**
 * A run's end (or that it has none yet) as data, to switch on `status` (see `outcome`): `running`;
 * `finished` with its result; `cancelled` with the `RunCancelled` that `result` fails with; `failed`
 * with the `AgentFailed` (`undefined` when the workflow ended with a defect) and the whole cause.
 */
export type RunOutcome<Output = unknown> =
  | { readonly status: "running" }
  | { readonly status: "finished"; readonly result: DurableResult<Output> }
  | { readonly status: "cancelled"; readonly error: RunCancelled }
  | {
    readonly status: "failed"
    readonly error: Agent.AgentFailed | undefined
    readonly cause: Cause.Cause<Agent.AgentFailed | RunCancelled>
  }

/** The outcome of a poll's answer (`Option.none()`: the run is still running). */
export const outcomeOf = <Output>(
  polled: Option.Option<Exit.Exit<DurableResult<Output>, Agent.AgentFailed | RunCancelled>>
): RunOutcome<Output> => {
  if (Option.isNone(polled)) return { status: "running" }
  const exit = polled.value
  if (Exit.isSuccess(exit)) return { status: "finished", result: exit.value }
  const error = Option.getOrUndefined(Cause.findErrorOption(exit.cause))
  if (error?._tag === "RunCancelled") return { status: "cancelled", error }
  return { status: "failed", error, cause: exit.cause }
}

/**
 * `approve` found no request to decide: the run is unknown to the journal (`"no such run"`: never
 * started, or not yet picked up by a runner), no call `callId` waits (`"not pending"`), its latest
 * request was already decided otherwise (`"already decided"`), the run has ended (`"finished"`) or
 * it was cancelled (`"cancelled"`).
 */
export class ApprovalNotPending extends Data.TaggedError("ApprovalNotPending")<{
  readonly runId: string
  readonly callId: string
  readonly reason: "no such run" | "not pending" | "already decided" | "finished" | "cancelled"
}> {
  override get message(): string {
    return `no pending approval for call ${this.callId} of run ${this.runId}: ${this.reason}`
  }
}

/**
 * `answer` found no open question to answer: the run is unknown to the journal (`"no such run"`), no
 * question of call `callId` waits (`"not pending"`), the question was answered otherwise (`"already
 * answered"`), the run has ended (`"finished"`) or it was cancelled (`"cancelled"`).
 */
export class QuestionNotPending extends Data.TaggedError("QuestionNotPending")<{
  readonly runId: string
  readonly callId: string
  readonly reason: "no such run" | "not pending" | "already answered" | "finished" | "cancelled"
}> {
  override get message(): string {
    return `no open question of call ${this.callId} of run ${this.runId}: ${this.reason}`
  }
}

/** `answer` was given a value that does not match the question's answer schema: nothing was sent, the question stays open. */
export class AnswerRefused extends Data.TaggedError("AnswerRefused")<{
  readonly runId: string
  readonly callId: string
  readonly question: number
  readonly reason: string
}> {
  override get message(): string {
    return `answer to question ${this.question} of call ${this.callId} of run ${this.runId} refused: ${this.reason}`
  }
}

/** `list` was given a cursor that is not a `RunPage.next` it returned. */
export class InvalidCursor extends Data.TaggedError("InvalidCursor")<{ readonly cursor: string }> {
  override get message(): string {
    return `not a cursor of DurableAgent.list: ${JSON.stringify(this.cursor)}`
  }
}

/** Run `runId` was cancelled (`cancel`) before it finished: what `result` fails with then. */
export class RunCancelled extends Data.TaggedError("RunCancelled")<{
  readonly runId: string
  /** The reason given to the first `cancel`. */
  readonly reason: string
  /** What the run did before it stopped, as in `Agent.AgentResult`. */
  readonly turns: number
  readonly transcript: ReadonlyArray<ChatModel.Message>
  readonly results: ReadonlyArray<ToolResult.ToolResult>
}> {
  override get message(): string {
    return `run ${this.runId} was cancelled: ${this.reason}`
  }
}

/**
 * `cancel` found no run to cancel: the run is unknown to the journal (`"no such run"`: never started,
 * or not yet picked up by a runner) or it has already ended otherwise (`"finished"`).
 */
export class RunNotCancellable extends Data.TaggedError("RunNotCancellable")<{
  readonly runId: string
  readonly reason: "no such run" | "finished"
}> {
  override get message(): string {
    return `run ${this.runId} cannot be cancelled: ${this.reason}`
  }
}

/** The workflow behind a durable agent: payload `{ runId, messages, threadId?, user? }`, success the run's `Journal.Outcome`. */
export type DurableWorkflow = Workflow.Workflow<string, typeof Journal.Payload, typeof Journal.Outcome, typeof Schema.Never>


/** What the journaled steps need: the engine and the run's instance, the journal, and what calls need. */
type StepServices<R, MR> =
  | WorkflowEngine.WorkflowEngine
  | WorkflowEngine.WorkflowInstance
  | SqlClient.SqlClient
  | AgentState.AgentState
  | Executor.Requirements<R | MR>

/** What the workflow body needs besides what `layer` leaves to the caller. */
type BodyServices<R, MR> = Exclude<Executor.Requirements<R | MR>, RunContext | EventSink | AgentState.AgentState>

/** What a client needs: the engine and the SQL client it journals to (what every `Runner` layer provides). */
type ClientServices = WorkflowEngine.WorkflowEngine | SqlClient.SqlClient

/**
 * A durable agent (see the module comment): the workflow, the layer that registers it on a runner,
 * and the client operations (start a run, wait for or poll its end, read its events, list and decide
 * its pending approvals), which work from any process connected to the same journal.
 */
export interface DurableAgent<R, MR, S extends Agent.OutputSchema = never> {
  /** The `effect/workflow` Workflow. */
  readonly workflow: DurableWorkflow
  /** The typed final answer's schema (`Options.output`), `undefined` when the answer is text. */
  readonly output: S | undefined
  /**
   * Registers the workflow with the engine: provide it with a runner layer (`Runner.*`), the
   * `ChatModel`, a `StoreRegistry` and the tools' services. Only processes that run runs need it.
   * Clients need a client layer (`Runner.layerSqliteClient`, `Runner.layerPostgresClient`): `start`,
   * `result` and `poll` use the engine alone; `events`, `pending`, `approve` and `cancel` also the `SqlClient`.
   */
  readonly layer: Layer.Layer<
    never,
    never,
    WorkflowEngine.WorkflowEngine | SqlClient.SqlClient | ChatModel.ChatModel | BodyServices<R, MR>
  >
  /**
   * Starts run `runId` (idempotent: the same runId is the same run, its messages and options are
   * ignored then) and returns at once. `options` give the run's `RunContext` (thread id, user).
   */
  readonly start: (
    runId: string,
    messages: ReadonlyArray<ChatModel.Message>,
    options?: StartOptions
  ) => Effect.Effect<void, never, WorkflowEngine.WorkflowEngine>
  /**
   * Waits for run `runId` to finish (polling the engine); it resumes nothing itself. Fails with
   * `AgentFailed` as `Agent.run` does, or `RunCancelled` when the run was cancelled.
   */
  readonly result: (
    runId: string
  ) => Effect.Effect<DurableResult<S["Type"]>, Agent.AgentFailed | RunCancelled, WorkflowEngine.WorkflowEngine>
  /** The run's end: `Option.none()` while the run is unfinished (or unknown). */
  readonly poll: (
    runId: string
  ) => Effect.Effect<
    Option.Option<Exit.Exit<DurableResult<S["Type"]>, Agent.AgentFailed | RunCancelled>>,
    never,
    WorkflowEngine.WorkflowEngine
  >
  /**
   * The run's end as data (see {@link RunOutcome}): `poll`'s answer to switch on, without reading an
   * `Exit`; with `wait: true`, waits for the end as `result` does (never `running` then).
   */
  readonly outcome: (
    runId: string,
    options?: { readonly wait?: boolean }
  ) => Effect.Effect<RunOutcome<S["Type"]>, never, WorkflowEngine.WorkflowEngine>
  /**
   * The run's journaled events with a sequence number above `since` (default: all), then new ones
   * as they are journaled, until `agent.finished` (or the run ends without one). With `follow: false`,
   * only those journaled now (a snapshot: the stream ends at once, also while the run goes on).
   * See the module comment.
   */
  readonly events: (
    runId: string,
    options?: { readonly since?: number; readonly follow?: boolean }
  ) => Stream.Stream<ToolEvent.Event, never, ClientServices>
  /** The run's calls waiting for a decision, in call order (none once the run has ended). */
  readonly pending: (runId: string) => Effect.Effect<ReadonlyArray<PendingApproval>, never, ClientServices>
  /**
   * Every call waiting for a decision, across the agent's runs (those that have not ended and are not
   * cancelled), by run id, then call order.
   */
  readonly pendingAll: () => Effect.Effect<ReadonlyArray<RunPendingApproval>, never, ClientServices>
  /**
   * The agent's runs, newest first, a page at a time (see {@link ListOptions}): each one's status,
   * turn, pending approvals and start. A run is listed once `start` returns (with the journal's SQL
   * client in context, as every `Runner` layer provides; otherwise once a runner picks it up).
   */
  readonly list: (options?: ListOptions) => Effect.Effect<RunPage, InvalidCursor, ClientServices>
  /**
   * Decides the pending approval of run `runId`'s call `callId` (its latest request; from any process
   * connected to the same database). A decision answers exactly one request: it fails with
   * `ApprovalNotPending` when no request for `callId` waits. Repeating the same decision for a
   * request it decided succeeds (and delivers it again), so a caller may retry after a crash.
   */
  readonly approve: (
    runId: string,
    callId: string,
    decision: Approval.Decision
  ) => Effect.Effect<void, ApprovalNotPending, ClientServices>
  /** The questions the run's calls asked that wait for an answer, in call order (none once the run has ended or is cancelled). */
  readonly questions: (runId: string) => Effect.Effect<ReadonlyArray<PendingQuestion>, never, ClientServices>
  /** Every question waiting for an answer, across the agent's runs (those not ended nor cancelled), by run id, then call order. */
  readonly questionsAll: () => Effect.Effect<ReadonlyArray<RunPendingQuestion>, never, ClientServices>
  /**
   * Answers (or declines) the open question of run `runId`'s call `callId` (its latest; `question`
   * picks one by number), from any process connected to the same database. An answer is checked
   * against the question's JSON Schema first: one that does not match fails with `AnswerRefused`
   * (the reason; nothing is sent, the question stays open). The reply is journaled (a claim, then the
   * question's deferred), the run resumes, and the call runs again from its start: the same question
   * gets this reply at once. Fails with `QuestionNotPending` when no such question waits; repeating
   * the same reply succeeds (and delivers it again).
   */
  readonly answer: (
    runId: string,
    callId: string,
    reply: QuestionReply,
    options?: { readonly question?: number }
  ) => Effect.Effect<void, QuestionNotPending | AnswerRefused, ClientServices>
  /**
   * Cancels run `runId`, from any process connected to the same database, also while no runner runs
   * (it is journaled): the run starts no new model turn or tool call, its approvals stop waiting,
   * calls already running finish, the run's events end with `agent.finished` (reason `cancelled`),
   * and `result` fails with `RunCancelled` (the first reason given; default `"cancelled"`). It returns
   * once the cancellation is recorded, not when the run has stopped. Fails with `RunNotCancellable`
   * when the journal does not know the run or the run has ended otherwise; cancelling a cancelled
   * run again succeeds (and completes a cancellation that failed half-way). A run that finishes
   * before it reaches a step keeps its result. The runs nested in its calls (`asTool`) are cancelled
   * with it, with the same reason.
   */
  readonly cancel: (
    runId: string,
    options?: { readonly reason?: string }
  ) => Effect.Effect<void, RunNotCancellable, ClientServices>
}

/**
 * The durable deferred that call `index` of turn `turn` waits on for its approval (`prefix`: the
 * running agent's activity prefix after a handoff, `handoff-<k>/`).
 */
export const approvalDeferred = (turn: number, index: number, prefix = "") =>
  DurableDeferred.make(`${prefix}approval/${turn}/${index}`, { success: Journal.Decision })

/**
 * The cancelled runs this process knows of (key: workflow and run id), filled by `cancel` in this
 * process and by each runner's watcher ({@link watchCancels}), which reads the cancellations table
 * every `pollInterval` while runs run: a step reads this map, not the journal.
 */
const cancelled = new Map<string, string>()
const cancelledKey = (run: Tables.RunKey) => `${run.workflow}\u0000${run.runId}`

/** A run's key and, for a nested run (`asTool`), the runs it is nested in: cancelling any of them stops it. */
interface Watched extends Tables.RunKey {
  readonly within?: ReadonlyArray<Tables.RunKey>
}

/** Why the run stopped, if it or a run it is nested in was cancelled (as this process knows). */
const cancelledReason = (run: Watched): string | undefined => {
  for (const key of [run, ...(run.within ?? [])]) {
    const reason = cancelled.get(cancelledKey(key))
    if (reason !== undefined) return reason
  }
  return undefined
}

/** The same, read from the journal. */
const journaledCancelReason = (run: Watched): Effect.Effect<string | undefined, never, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    for (const key of [run, ...(run.within ?? [])]) {
      const reason = yield* Tables.cancelReason(key)
      if (reason !== undefined) return reason
    }
    return undefined
  })

/** A runner's cancellation watcher (one per agent layer, {@link watchCancels}): `during` runs a run's body under it. */
class CancelWatch extends Context.Service<CancelWatch, {
  readonly during: <A, E, R>(body: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
}>()("tinyagents/durable/CancelWatch") {}

/**
 * Reads the cancellations recorded since the last read (all of them first), into {@link cancelled},
 * every `everyMillis` while a run's body runs in this process, and when a body starts if the last
 * read is older than that: a step's view is never older than `everyMillis`, and an idle runner
 * (no run in flight: no step reads the view) sends no query (it was the most frequent statement of
 * an idle runner, issue #25). Other processes' clocks may lag: each read goes back a minute.
 */
const watchCancels = (everyMillis: number): Layer.Layer<CancelWatch, never, SqlClient.SqlClient> =>
  Layer.effect(
    CancelWatch,
    Effect.gen(function*() {
      let since = 0
      // the bodies running, and when the last read that succeeded started
      let live = 0
      let readAt = Number.NEGATIVE_INFINITY
      const sql = yield* Effect.context<SqlClient.SqlClient>()
      const read = Effect.flatMap(Clock.currentTimeMillis, (started) =>
        Effect.flatMap(Tables.cancelsSince(since), (rows) =>
          Effect.sync(() => {
            for (const row of rows) {
              cancelled.set(cancelledKey(row.run), row.reason)
              since = Math.max(since, row.at - 60_000)
            }
            readAt = started
          }))).pipe(Effect.provide(sql))
      yield* read
      // a failed read (the database restarting) is tried again at the next tick
      yield* Effect.forkScoped(Effect.forever(Effect.andThen(
        Effect.sleep(everyMillis),
        Effect.suspend(() => live > 0 ? Effect.exit(read) : Effect.void)
      )))
      const fresh = Effect.flatMap(Clock.currentTimeMillis, (now) => now - readAt <= everyMillis ? Effect.void : Effect.exit(read))
      return CancelWatch.of({
        during: (body) =>
          Effect.andThen(
            fresh,
            Effect.acquireUseRelease(Effect.sync(() => void live++), () => body, () => Effect.sync(() => void live--))
          )
      })
    })
  )

/** How old a step's view of its run's cancellation may be: the agent's `pollInterval` (ms). */
const freshness = (options: { readonly pollInterval?: Duration.Input }): number =>
  Duration.toMillis(Duration.fromInputUnsafe(options.pollInterval ?? "200 millis"))

/** Completed by `cancel` with the reason: every approval wait races it. */
export const cancelDeferred = DurableDeferred.make("cancel", { success: Schema.String })

/** The workflow of a durable agent's runs, by its name (`tinyagents/<name>`): enough to address a run. */
const workflowNamed = (tag: string): DurableWorkflow =>
  Workflow.make(tag, { payload: Journal.Payload, success: Journal.Outcome, idempotencyKey: (payload) => payload.runId })

/** Cancels nested run `run` as `cancel` does, unless it has ended (its approval waits end). */
const cancelNested = (run: Tables.RunKey, reason: string) =>
  Effect.gen(function*() {
    const workflow = workflowNamed(run.workflow)
    const id = yield* workflow.executionId({ runId: run.runId, messages: [] })
    const ended = yield* workflow.poll(id)
    if (Option.isSome(ended) && ended.value._tag === "Complete") return
    const token = DurableDeferred.tokenFromExecutionId(cancelDeferred, { workflow, executionId: id })
    yield* DurableDeferred.succeed(cancelDeferred, { token, value: reason })
    yield* Tables.cancel(run, reason)
    cancelled.set(cancelledKey(run), reason)
    yield* closeQuestions(workflow, id, run, reason)
  })

/** Makes a durable agent (see the module comment). */
export const make = <R, MR = never, S extends Agent.OutputSchema = never, St = unknown>(
  options: Options<R, MR, S, St>
): DurableAgent<R, MR, S> => {
  const workflow: DurableWorkflow = Workflow.make(`tinyagents/${options.name}`, {
    payload: Journal.Payload,
    success: Journal.Outcome,
    idempotencyKey: (payload) => payload.runId
  })
  const pollEvery = options.pollInterval ?? "200 millis"
  const executionId = (runId: string) => workflow.executionId({ runId, messages: [] })
  const runKey = (runId: string): Tables.RunKey => ({ workflow: workflow._tag, runId })

  // the same services, with the engine's own (instance, execution, scope) excluded from generic `R`/`MR`
  // the runner's cancellation watcher is running (and has read every cancellation) before any run resumes
  const layer = workflow.toLayer((payload) => CancelWatch.use((watch) => watch.during(body(options, workflow._tag, payload)))).pipe(
    Layer.provide(watchCancels(freshness(options)))
  ) as DurableAgent<R, MR, S>["layer"]

  const poll: DurableAgent<R, MR, S>["poll"] = (runId) =>
    Effect.flatMap(executionId(runId), (id) => workflow.poll(id)).pipe(
      Effect.map(Option.flatMap((result) =>
        result._tag === "Complete"
          ? Option.some(exitOf(runId, result.exit, outputCodec(options), options.state?.schema) as Exit.Exit<DurableResult<S["Type"]>, Agent.AgentFailed | RunCancelled>)
          : Option.none()
      ))
    )

  const result: DurableAgent<R, MR, S>["result"] = (runId) =>
    Effect.flatMap(poll(runId), (done) =>
      Option.isSome(done) ? done.value : Effect.andThen(Effect.sleep(pollEvery), result(runId)))

  const outcome: DurableAgent<R, MR, S>["outcome"] = (runId, outcomeOptions) =>
    outcomeOptions?.wait === true
      ? Effect.map(Effect.exit(result(runId)), (exit) => outcomeOf(Option.some(exit)))
      : Effect.map(poll(runId), outcomeOf)

  const events: DurableAgent<R, MR, S>["events"] = (runId, eventOptions) =>
    eventOptions?.follow === false ? snapshot(runKey(runId), eventOptions.since ?? -1) : Stream.paginate(
      { since: eventOptions?.since ?? -1, wait: false },
      (state): Effect.Effect<
        readonly [ReadonlyArray<ToolEvent.Event>, Option.Option<{ since: number; wait: boolean }>],
        never,
        ClientServices
      > =>
        Effect.gen(function*() {
          if (state.wait) yield* Effect.sleep(pollEvery)
          const finishedBefore = Option.isSome(yield* poll(runId))
          const batch = yield* Tables.read(runKey(runId), state.since)
          const last = batch.at(-1)
          // the run's own end (a nested run's `agent.finished` is among its events too; so is that of
          // an agent that handed the conversation over: see `endsRun`)
          const end = batch.findIndex(endsRun(runId))
          if (end >= 0) return [batch.slice(0, end + 1), Option.none()] as const
          if (batch.length === 0 && finishedBefore) return [batch, Option.none()] as const
          return [
            batch,
            Option.some({ since: last === undefined ? state.since : last.sequence, wait: batch.length === 0 })
          ] as const
        })
    )

  const start: DurableAgent<R, MR, S>["start"] = (runId, messages, startOptions) =>
    Effect.gen(function*() {
      yield* workflow.execute({
        runId,
        messages,
        ...(startOptions?.threadId === undefined ? {} : { threadId: startOptions.threadId }),
        ...(startOptions?.user === undefined ? {} : { user: startOptions.user })
      }, { discard: true })
      // listed from now on, before a runner picks it up, when the journal's SQL client is at hand
      // (after the run is queued: a crash in between leaves the row to the runner that picks it up)
      const sql = yield* Effect.serviceOption(SqlClient.SqlClient)
      if (Option.isSome(sql)) {
        yield* Effect.provideService(Tables.begin(runKey(runId), yield* Clock.currentTimeMillis, undefined), SqlClient.SqlClient, sql.value)
      }
    })

  /** Whether run `runId` no longer runs or waits: it has ended, or it is cancelled. */
  const settled = (runId: string) =>
    Effect.map(
      Effect.all([poll(runId), Tables.cancelReason(runKey(runId))]),
      ([done, reason]) => Option.isSome(done) || reason !== undefined
    )

  /** The rows of runs still going (each run asked once). */
  const ofLiveRuns = <Row extends { readonly runId: string }>(rows: ReadonlyArray<Row>) =>
    Effect.gen(function*() {
      const live = new Map<string, boolean>()
      for (const row of rows) if (!live.has(row.runId)) live.set(row.runId, !(yield* settled(row.runId)))
      return rows.filter((row) => live.get(row.runId) === true)
    })

  const pendingAll: DurableAgent<R, MR, S>["pendingAll"] = () =>
    Effect.map(
      Effect.flatMap(Tables.undecided(workflow._tag), ofLiveRuns),
      (rows) => rows.map((row): RunPendingApproval => ({ runId: row.runId, ...pendingOf(row) }))
    )

  const list: DurableAgent<R, MR, S>["list"] = (listOptions) =>
    Effect.gen(function*() {
      const limit = Math.max(1, Math.min(1_000, Math.floor(listOptions?.limit ?? 50)))
      const after = listOptions?.cursor === undefined ? undefined : yield* cursorAfter(listOptions.cursor)
      // one more than asked: whether there is a next page
      const rows = yield* Tables.runs(workflow._tag, { limit: limit + 1, after })
      const page = rows.slice(0, limit)
      const waiting = new Map<string, number>()
      for (const row of yield* Tables.undecided(workflow._tag)) waiting.set(row.runId, (waiting.get(row.runId) ?? 0) + 1)
      const asking = new Map<string, number>()
      for (const row of yield* Tables.unanswered(workflow._tag)) asking.set(row.runId, (asking.get(row.runId) ?? 0) + 1)
      const runs: Array<RunSummary> = []
      for (const row of page) {
        const end = outcomeOf(yield* poll(row.runId))
        const cancelling = end.status === "running" ? yield* Tables.cancelReason(runKey(row.runId)) : undefined
        const pendingApprovals = end.status === "running" && cancelling === undefined ? waiting.get(row.runId) ?? 0 : 0
        const pendingQuestions = end.status === "running" && cancelling === undefined ? asking.get(row.runId) ?? 0 : 0
        // started, and no runner has journaled anything of it yet
        const queued = end.status === "running" && row.turn === undefined && !(yield* Tables.known(runKey(row.runId)))
        runs.push({
          runId: row.runId,
          status: queued
            ? "queued"
            : end.status === "running" && pendingApprovals > 0
            ? "awaiting_approval"
            : end.status === "running" && pendingQuestions > 0
            ? "awaiting_answer"
            : end.status,
          turn: row.turn,
          pendingApprovals,
          pendingQuestions,
          startedAt: row.startedAt,
          ...(cancelling === undefined ? {} : { cancelling }),
          ...(row.parentRunId === undefined ? {} : { parentRunId: row.parentRunId })
        })
      }
      const last = page.at(-1)
      return { runs, next: rows.length > limit && last !== undefined ? cursorOf(last) : undefined }
    })

  const pending: DurableAgent<R, MR, S>["pending"] = (runId) =>
    Effect.gen(function*() {
      if (yield* settled(runId)) return []
      const rows = yield* Tables.approvals(runKey(runId))
      return rows.filter((row) => row.decision === null).reverse().map(pendingOf)
    })

  const approve: DurableAgent<R, MR, S>["approve"] = (runId, callId, decision) =>
    Effect.gen(function*() {
      const run = runKey(runId)
      const notPending = (reason: ApprovalNotPending["reason"]) =>
        Effect.fail(new ApprovalNotPending({ runId, callId, reason }))
      if (Option.isSome(yield* poll(runId))) return yield* notPending("finished")
      if ((yield* Tables.cancelReason(run)) !== undefined) return yield* notPending("cancelled")
      const latest = (yield* Tables.approvals(run, callId))[0]
      if (latest === undefined) return yield* notPending((yield* Tables.known(run)) ? "not pending" : "no such run")
      const text = JSON.stringify(decision)
      // the claim makes the decision answer this request only; the same decision again re-delivers it
      const claimed = latest.decision === null && (yield* Tables.decide(run, latest.deferred, text))
      if (!claimed) {
        const stored = latest.decision ?? (yield* Tables.approvals(run, callId)).find((row) => row.deferred === latest.deferred)?.decision
        if (stored !== text) return yield* notPending("already decided")
      }
      const deferred = DurableDeferred.make(latest.deferred, { success: Journal.Decision })
      const token = DurableDeferred.tokenFromExecutionId(deferred, { workflow, executionId: yield* executionId(runId) })
      yield* DurableDeferred.succeed(deferred, { token, value: decision as typeof Journal.Decision.Type })
    })

  const questions: DurableAgent<R, MR, S>["questions"] = (runId) =>
    Effect.gen(function*() {
      if (yield* settled(runId)) return []
      const rows = yield* Tables.questions(runKey(runId))
      return rows.filter((row) => row.reply === null).reverse().map(questionOf)
    })

  const questionsAll: DurableAgent<R, MR, S>["questionsAll"] = () =>
    Effect.map(
      Effect.flatMap(Tables.unanswered(workflow._tag), ofLiveRuns),
      (rows) => rows.map((row): RunPendingQuestion => ({ runId: row.runId, ...questionOf(row) }))
    )

  const answer: DurableAgent<R, MR, S>["answer"] = (runId, callId, reply, answerOptions) =>
    Effect.gen(function*() {
      const run = runKey(runId)
      const notPending = (reason: QuestionNotPending["reason"]) =>
        Effect.fail(new QuestionNotPending({ runId, callId, reason }))
      if (Option.isSome(yield* poll(runId))) return yield* notPending("finished")
      if ((yield* Tables.cancelReason(run)) !== undefined) return yield* notPending("cancelled")
      const rows = yield* Tables.questions(run, callId)
      const asked = answerOptions?.question === undefined ? rows : rows.filter((row) => row.question === answerOptions.question)
      // the latest open one, else the latest (a reply repeated after a crash re-delivers it)
      const target = asked.find((row) => row.reply === null) ?? asked[0]
      if (target === undefined) return yield* notPending((yield* Tables.known(run)) ? "not pending" : "no such run")
      const value: typeof Journal.QuestionReply.Type = reply._tag === "Answer"
        ? { _tag: "Answer", value: reply.value, answeredBy: reply.answeredBy }
        : { _tag: "Decline", reason: reply.reason, answeredBy: reply.answeredBy }
      if (reply._tag === "Answer") {
        const refused = Questions.refusal(target, reply.value)
        if (refused !== undefined) {
          return yield* Effect.fail(new AnswerRefused({ runId, callId, question: target.question, reason: refused }))
        }
      }
      const text = JSON.stringify(value)
      // the claim makes the reply answer this question only; the same reply again re-delivers it
      const claimed = target.reply === null && (yield* Tables.reply(run, target.deferred, text))
      if (!claimed) {
        const stored = target.reply ?? (yield* Tables.questions(run, callId)).find((row) => row.deferred === target.deferred)?.reply
        if (stored !== text) return yield* notPending("already answered")
      }
      const deferred = Questions.questionDeferred(target.deferred)
      const token = DurableDeferred.tokenFromExecutionId(deferred, { workflow, executionId: yield* executionId(runId) })
      yield* DurableDeferred.succeed(deferred, { token, value })
    })

  const cancel: DurableAgent<R, MR, S>["cancel"] = (runId, cancelOptions) =>
    Effect.gen(function*() {
      const run = runKey(runId)
      const done = yield* poll(runId)
      if (Option.isSome(done)) {
        const exit = done.value
        if (Exit.isFailure(exit) && Option.getOrUndefined(Cause.findErrorOption(exit.cause))?._tag === "RunCancelled") return
        return yield* Effect.fail(new RunNotCancellable({ runId, reason: "finished" }))
      }
      const id = yield* executionId(runId)
      if (!(yield* Tables.known(run)) && !(yield* Tables.queued(`Workflow/${workflow._tag}`, id))) {
        return yield* Effect.fail(new RunNotCancellable({ runId, reason: "no such run" }))
      }
      // the first reason stays; the deferred first: it wakes a run waiting for approvals even if this
      // process dies before the row is written (which stops a running run at its next step)
      const reason = (yield* Tables.cancelReason(run)) ?? cancelOptions?.reason ?? "cancelled"
      const token = DurableDeferred.tokenFromExecutionId(cancelDeferred, { workflow, executionId: id })
      yield* DurableDeferred.succeed(cancelDeferred, { token, value: reason })
      yield* Tables.cancel(run, reason)
      cancelled.set(cancelledKey(run), reason)
      // its open questions close, declined (which wakes a run suspended on one: the call's handler
      // reads `Ask.Declined`, then the run stops at its next step)
      yield* closeQuestions(workflow, id, run, reason)
      // so are the runs nested in its calls (`asTool`): one waiting for an approval wakes (the others
      // would stop at their next step anyway: they check the runs around them)
      for (const nested of yield* Tables.nestedRuns(run)) yield* cancelNested(nested, reason)
    })

  return {
    workflow,
    output: options.output,
    layer,
    start,
    result,
    poll,
    outcome,
    events,
    pending,
    pendingAll,
    list,
    approve,
    questions,
    questionsAll,
    answer,
    cancel
  }
}

/** A stored question as `questions` reports it. */
const questionOf = (row: Tables.QuestionRow): PendingQuestion => ({
  callId: row.callId,
  toolName: row.tool,
  question: row.question,
  message: row.message,
  schema: JSON.parse(row.schema) as ToolSchema.JsonSchemaObject,
  ...(row.choices === null ? {} : { choices: JSON.parse(row.choices) as ReadonlyArray<unknown> }),
  turn: row.turn,
  index: row.callIndex
})

/** Declines run `run`'s open questions ("the run was cancelled: <reason>", `answeredBy: "cancel"`), waking it. */
const closeQuestions = (workflow: DurableWorkflow, executionId: string, run: Tables.RunKey, reason: string) =>
  Effect.gen(function*() {
    const value: typeof Journal.QuestionReply.Type = {
      _tag: "Decline",
      reason: `the run was cancelled: ${reason}`,
      answeredBy: "cancel"
    }
    for (const row of yield* Tables.questions(run)) {
      if (row.reply !== null) continue
      if (!(yield* Tables.reply(run, row.deferred, JSON.stringify(value)))) continue
      const deferred = Questions.questionDeferred(row.deferred)
      const token = DurableDeferred.tokenFromExecutionId(deferred, { workflow, executionId })
      yield* DurableDeferred.succeed(deferred, { token, value })
    }
  })

/** A stored approval request as `pending` reports it. */
const pendingOf = (row: Tables.ApprovalRow): PendingApproval => ({
  callId: row.callId,
  toolName: row.tool,
  arguments: JSON.parse(row.arguments),
  turn: row.turn,
  index: row.callIndex
})

/** The run's events after `since` journaled now, page by page, ending at the last (`events` with `follow: false`). */
const snapshot = (run: Tables.RunKey, since: number): Stream.Stream<ToolEvent.Event, never, SqlClient.SqlClient> =>
  Stream.paginate(since, (after) =>
    Effect.map(Tables.read(run, after, snapshotPage), (batch) => {
      const last = batch.at(-1)
      return [batch, batch.length < snapshotPage || last === undefined ? Option.none() : Option.some(last.sequence)] as const
    }))

const snapshotPage = 500

/** `list`'s cursor: the last run of a page (its start and id), as base64url JSON. */
const cursorOf = (row: Tables.RunRow): string =>
  Buffer.from(JSON.stringify([row.startedAt, row.runId]), "utf8").toString("base64url")

const cursorAfter = (cursor: string): Effect.Effect<{ readonly startedAt: number; readonly runId: string }, InvalidCursor> =>
  Effect.suspend(() => {
    try {
      const value: unknown = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"))
      if (Array.isArray(value) && value.length === 2 && Number.isSafeInteger(value[0]) && typeof value[1] === "string") {
        return Effect.succeed({ startedAt: value[0] as number, runId: value[1] })
      }
    } catch {
      // not JSON: refused below
    }
    return Effect.fail(new InvalidCursor({ cursor }))
  })

/**
 * A durable agent as a tool of another durable agent: each call runs it as a child run, named by
 * the call's position (`<run>/<turn>/<index>`), that resumes from its own journal after a crash
 * (see `DurableAgentTool`). Its layer must run on the same runners as the calling agent's.
 */
export const asTool: typeof DurableAgentTool.make = (agent, options) => DurableAgentTool.make(agent, options)

/** The run's `output` schema as the JSON codec its answer is journaled with (`undefined`: no output). */
const outputCodec = (options: { readonly output?: Agent.OutputSchema }) =>
  options.output === undefined ? undefined : ToolSchema.toModelCodec(options.output as unknown as Schema.Top)

/** A journaled outcome as the run's exit (its output decoded again by `codec`). */
const exitOf = (
  runId: string,
  exit: Exit.Exit<typeof Journal.Outcome.Type, never>,
  codec: Schema.Codec<unknown, unknown> | undefined,
  stateSchema?: AgentState.StateSchema<unknown>
): Exit.Exit<DurableResult, Agent.AgentFailed | RunCancelled> => {
  if (exit._tag === "Failure") return Exit.failCause(exit.cause as Cause.Cause<never>)
  const outcome = exit.value
  if (outcome._tag === "Finished" && outcome.cancelled !== undefined) {
    const { transcript, results, turns } = outcome.result
    return Exit.fail(new RunCancelled({ runId, reason: outcome.cancelled, turns, transcript, results }))
  }
  if (outcome._tag === "Finished") {
    const { output, state, ...result } = outcome.result
    return Exit.succeed({
      ...result,
      ...(output === undefined || codec === undefined ? {} : { output: Schema.decodeUnknownSync(codec)(output) }),
      ...(state === undefined
        ? {}
        : { state: stateSchema === undefined ? state : Schema.decodeUnknownSync(Schema.toCodecJson(stateSchema))(state) })
    })
  }
  return Exit.fail(
    new Agent.AgentFailed({
      reason: outcome.reason,
      error: outcome.error,
      turns: outcome.turns,
      transcript: outcome.transcript,
      results: outcome.results
    })
  )
}

/** The workflow body: the agent loop with journaled steps, its events into the event journal. */
const body = <R, MR, S extends Agent.OutputSchema, St>(
  options: Options<R, MR, S, St>,
  workflowName: string,
  payload: typeof Journal.Payload.Type
) =>
  Effect.gen(function*() {
    const runId = payload.runId
    const nesting = payload.nesting
    const run: Watched = { workflow: workflowName, runId, ...(nesting === undefined ? {} : { within: nesting.within }) }
    yield* Tables.ensure
    const sql = yield* Effect.context<SqlClient.SqlClient>()
    let seq = 0
    // deterministic sequence numbers: the body makes the same events in the same order on every
    // replay, so those a run before this one journaled are not written again
    const journaled = yield* Tables.lastSequence(run)
    // the run's row (what `list` reads): its start is its first event's time, also when a runner resumes it
    const first = journaled < 0 ? undefined : (yield* Tables.read(run, -1, 1))[0]
    yield* Tables.begin(run, first?.timestamp ?? (yield* Clock.currentTimeMillis), nesting?.parentRunId)
    const ownTurn = isOwnRun(runId)
    // The events made between two steps of the run are journaled together, by `flush`, before the
    // next step (an activity or a durable wait) and when the body ends: one statement instead of one
    // per event and one for the turn (each a round trip between two activities, issue #25). A crash
    // loses nothing: the replay makes the same events with the same numbers and journals those
    // missing. Flushes take their rows in order under one permit, so the journal grows in sequence
    // order (a follower reading `since` its last row never skips one).
    let pending: Array<readonly [number, ToolEvent.Event]> = []
    let pendingTurn: number | undefined
    const flushing = Semaphore.makeUnsafe(1)
    const flush = flushing.withPermits(1)(Effect.suspend(() => {
      if (pending.length === 0 && pendingTurn === undefined) return Effect.void
      const rows = pending
      const turn = pendingTurn
      pending = []
      pendingTurn = undefined
      return Effect.provide(Tables.appendAll(run, rows, turn), sql)
    }))
    const journal = EventSink.of({
      emit: (event) =>
        Effect.sync(() => {
          const n = seq++
          if (n <= journaled) return
          pending.push([n, { ...event, sequence: n }])
          if (event._tag === "agent.turn_started" && ownTurn(event.runId)) pendingTurn = event.turn
        })
    })
    // the reason of a `cancel` the run observed (journaled by the step that observed it)
    let cancelledBy: string | undefined
    const onCancelled = (executor: Executor.Executor<R | MR>, reason: string) =>
      Effect.suspend(() => {
        cancelledBy ??= reason
        return executor.runCancel.cancel(reason)
      })
    const codec = outputCodec(options)
    const exit = yield* Effect.exit(
      conversation(options, payload.messages, (agent) =>
        Agent.loopWith(agent, (executor) => durableSteps(agent, run, executor, (reason) => onCancelled(executor, reason), flush))).pipe(
        Effect.provideService(EventSink, journal),
        Effect.provideService(RunContext, {
          runId,
          threadId: payload.threadId ?? runId,
          turn: 0,
          ...(payload.user === undefined ? {} : { user: payload.user }),
          ...(nesting === undefined
            ? {}
            : { nesting: { parentRunId: nesting.parentRunId, parentCallId: nesting.parentCallId, depth: nesting.depth } })
        })
      )
    )
    yield* flush
    if (Exit.isSuccess(exit)) {
      const { output, reason, state, ...rest } = exit.value
      return {
        _tag: "Finished",
        result: {
          ...rest,
          reason,
          ...(output === undefined || codec === undefined ? {} : { output: Schema.encodeUnknownSync(codec)(output) }),
          ...(state === undefined || options.state === undefined
            ? {}
            : { state: Schema.encodeUnknownSync(Schema.toCodecJson(options.state.schema))(state) as Schema.Json })
        },
        ...(reason === "cancelled" && cancelledBy !== undefined ? { cancelled: cancelledBy } : {})
      } satisfies typeof Journal.Outcome.Type
    }
    const failure = Cause.findErrorOption(exit.cause)
    if (Option.isNone(failure)) return yield* Effect.failCause(exit.cause as Cause.Cause<never>)
    const failed = failure.value
    return {
      _tag: "Failed",
      reason: failed.reason,
      error: failed.error,
      turns: failed.turns,
      transcript: failed.transcript,
      results: failed.results
    } satisfies typeof Journal.Outcome.Type
  })

/** The loop's steps as activities (see the module comment). */
const durableSteps = <R, MR, S extends Agent.OutputSchema, St>(
  options: Omit<Options<R, MR, S, St>, "handoffs">,
  run: Watched,
  executor: Executor.Executor<R | MR>,
  onCancelled: (reason: string) => Effect.Effect<void>,
  flush: Effect.Effect<void>
) =>
  Effect.gen(function*() {
    const model = yield* ChatModel.ChatModel
    const prefix = yield* ActivityPrefix
    // every step journals the run's events made since the last one (see `body`): an activity while
    // it starts (the two writes on two connections, not one after the other: the round trip between
    // two activities that the events cost, issue #25), a durable wait before it. The write is not
    // interrupted (a step that suspends the run waits for it), so a suspended run's journal is whole.
    const withFlush = <A, E, R>(step: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
      Effect.zipWith(Effect.uninterruptible(flush), step, (_, a) => a, { concurrent: true })
    const ask: Agent.Steps<StepServices<R, MR>>["ask"] = (request, turn) =>
      Effect.flatMap(
        withFlush(Activity.make({
          name: `${prefix}turn/${turn}`,
          success: Journal.Turn,
          execute: Effect.flatMap(Effect.sync(() => cancelledReason(run)), (reason) =>
            reason !== undefined
              ? Effect.succeed({ _tag: "Cancelled", reason } as const)
              : Effect.suspend(() => ChatModel.collect(model.stream(request))).pipe(
            Effect.map((response): typeof Journal.Turn.Type => ({
              _tag: "Answered",
              response: {
                text: response.text,
                toolCalls: response.toolCalls,
                usage: response.usage,
                ...(response.finishReason === undefined ? {} : { finishReason: response.finishReason })
              }
            })),
            Effect.catch((error) => Effect.succeed({ _tag: "Failed", error } as const))
          ))
        })),
        (outcome) =>
          outcome._tag === "Answered"
            ? Effect.succeed(outcome.response)
            : outcome._tag === "Cancelled"
            // the loop ends the run as cancelled without reading this answer
            ? Effect.as(onCancelled(outcome.reason), { text: "", toolCalls: [], usage: ChatModel.noUsage })
            : Effect.fail(outcome.error)
      )

    const batch = (
      calls: ReadonlyArray<ToolCall>,
      context: { readonly turn: number; readonly advertised: ToolRegistry.Advertised<unknown> }
    ) =>
      Effect.gen(function*() {
        // approvals first: every request of the turn is recorded and reported, then each decision is
        // awaited (durably, in call order, each wait racing the run's cancellation); a request is named
        // by its position, so a decision answers it alone
        const needsApproval = calls.flatMap((call, index) => {
          const entry = options.tools.get(call.name)
          // a call refused anyway (its tool not advertised this turn: hidden, or deferred and not found) asks no one
          return entry !== undefined && context.advertised.has(entry.spec.name) &&
              options.approval?.(call, entry.spec) === true
            ? [{ call, index, entry }]
            : []
        })
        // a cancelled run requests no approval (a journaled check, so a replay takes the same path)
        const cancelled = needsApproval.length === 0 ? null : yield* withFlush(Activity.make({
          name: `${prefix}cancel-check/${context.turn}`,
          success: Schema.NullOr(Schema.String),
          execute: Effect.map(journaledCancelReason(run), (reason) => reason ?? null)
        }))
        if (cancelled !== null) yield* onCancelled(cancelled)
        const requests = cancelled === null ? needsApproval : []
        for (const { call, entry, index } of requests) {
          const args = redactArguments(call.arguments, entry.spec.safety.redact)
          yield* Tables.request(run, {
            deferred: approvalDeferred(context.turn, index, prefix).name,
            turn: context.turn,
            callIndex: index,
            callId: call.id,
            tool: call.name,
            arguments: JSON.stringify(args ?? null)
          })
          yield* executor.emit({
            _tag: "agent.approval_requested",
            turn: context.turn,
            toolCallId: call.id,
            toolName: call.name,
            arguments: args
          })
        }
        const decisions = new Map<number, Approval.Decision>()
        for (const { index } of requests) {
          // the requests' events are in the journal before the run waits
          yield* flush
          const waited = yield* DurableDeferred.raceAll({
            name: `${prefix}approval/${context.turn}/${index}`,
            success: Journal.Waited,
            error: Schema.Never,
            effects: [
              DurableDeferred.await(approvalDeferred(context.turn, index, prefix)),
              Effect.map(DurableDeferred.await(cancelDeferred), (reason) => ({ _tag: "Cancelled", reason } as const))
            ]
          })
          if (waited._tag === "Cancelled") {
            yield* onCancelled(waited.reason)
            break
          }
          decisions.set(index, waited as Approval.Decision)
        }
        const outcomes = yield* withFlush(Effect.forEach(
          calls,
          (call, index) =>
            callActivity(options, run, executor, call, index, { ...context, prefix }, {
              decision: decisions.get(index),
              needsApproval: needsApproval.some((request) => request.index === index)
            }, onCancelled),
          { concurrency: options.concurrency ?? Executor.defaultConcurrency }
        ))
        const sink = yield* EventSink
        for (const outcome of outcomes) for (const event of outcome.events) yield* sink.emit(event)
        const results = outcomes.map((o) => o.result as ToolResult.ToolResult)
        const errors = outcomes.flatMap((o) => o.fatal === undefined ? [] : [o.fatal])
        if (errors.length > 0) return yield* Effect.fail(new Executor.BatchFailed({ results, errors }))
        return results
      })
    // a model with structured output is asked through it inside the turn's activity (the answer is journaled)
    const steps: Agent.Steps<StepServices<R, MR>> = {
      ask,
      batch,
      structuredOutput: model.structuredOutput === true,
      toolSearch: model.toolSearch === true
    }
    return steps
  })

/** Call `index` of its turn as the activity `tool/<turn>/<index>`. */
const callActivity = <R, MR, S extends Agent.OutputSchema, St>(
  options: Omit<Options<R, MR, S, St>, "handoffs">,
  run: Watched,
  executor: Executor.Executor<R | MR>,
  call: ToolCall,
  index: number,
  context: { readonly turn: number; readonly advertised: ToolRegistry.Advertised<unknown>; readonly prefix: string },
  approval: { readonly decision: Approval.Decision | undefined; readonly needsApproval: boolean },
  onCancelled: (reason: string) => Effect.Effect<void>
) => {
  const { decision } = approval
  const name = `${context.prefix}tool/${context.turn}/${index}`
  const toolName = options.tools.get(call.name)?.spec.name ?? call.name
  // the run's limits count calls admitted in an earlier process too: a call this executor did not run
  // (replayed from the journal, or answered "may or may not have completed") counts if it was admitted
  let ranHere = false
  const admittedBefore = (events: ReadonlyArray<ToolEvent.Event>) =>
    events.some((e) => e._tag === "tool.started" || (e._tag === "tool.failed" && e.outcome === "unknown"))
  return Effect.tap(Activity.make({
    name,
    success: Journal.Call,
    execute: Effect.gen(function*() {
      const key = yield* Activity.idempotencyKey(name)
      const entry = options.tools.get(call.name)
      // a tool that lists `Ask`: its questions suspend the run (see `internal/questions.ts`)
      const asks = entry !== undefined && entry.tool.services.some((service) => service.key === Ask.Ask.key)
      const events: Array<ToolEvent.Event> = []
      const collect = EventSink.of({ emit: (event) => Effect.sync(() => void events.push(event)) })
      // whether a re-run may run the call again: the rule of automatic retries after a timeout
      // (`spec.idempotency` is `Tool.retrySafety`)
      const safety = entry?.spec.idempotency
      // a call that may not run again is marked before it starts, so a re-run knows it started
      const marks = safety !== undefined && !Tool.mayRunAgain(safety)
      // a cancelled run starts no call (one whose marker shows an earlier start is answered as after a crash)
      const stop = cancelledReason(run) ??
        (approval.needsApproval && decision === undefined ? executor.runCancel.reasonUnsafe() ?? "cancelled" : undefined)
      // a call that asked a question before the run was cancelled runs again: its handler reads the
      // question declined (the cancellation closed it), as it would have, had it been waiting
      const askedBefore = stop !== undefined && asks && (yield* Tables.questions(run, call.id))
        .some((row) => row.deferred.startsWith(Questions.callQuestions(context.prefix, context.turn, index)))
      if (stop !== undefined && !askedBefore && !(marks && (yield* Tables.marked(key)))) {
        // its terminal event: refused before it started (as a denied call is), journaled with its answer
        const error = new ToolError.ToolCancelled({ toolName, started: false })
        yield* Effect.provideService(
          executor.emit({ _tag: "tool.rejected", toolCallId: call.id, toolName, attempt: 1, error }),
          EventSink,
          collect
        )
        return { result: ToolResult.fromError(call, error), events, cancelled: stop }
      }
      if (decision?._tag === "Deny") {
        const error = new ToolError.ApprovalDenied({ toolName, reason: decision.reason })
        yield* Effect.provideService(
          executor.emit({ _tag: "tool.rejected", toolCallId: call.id, toolName, attempt: 1, error }),
          EventSink,
          collect
        )
        return { result: ToolResult.fromError(call, error), events }
      }
      const resumed = marks ? !(yield* Tables.mark(key)) : false
      if (safety === "none" && resumed) {
        const error = new ToolError.OutcomeUnknown({ toolName })
        yield* Effect.provideService(
          executor.emit({
            _tag: "tool.failed",
            toolCallId: call.id,
            toolName,
            attempt: 1,
            elapsed: 0,
            reason: "error",
            error,
            disposition: error.disposition,
            outcome: "unknown"
          }),
          EventSink,
          collect
        )
        return { result: ToolResult.fromError(call, error), events }
      }
      // an edit's arguments replace the model's, decoded like any call's (`consent`, if installed, reads the same edit)
      const effective = decision?._tag === "Edit" ? { ...call, arguments: decision.arguments } : call
      ranHere = true
      // a keyed call's claim owner is stable across re-runs; an idempotent one (`resumed` false) runs again
      // the usage of runs nested in the call is journaled with it (a replay adds it again); a nested
      // durable agent (`asTool`) names its run by the call's position
      let usage = ChatModel.noUsage
      const outerUsage = yield* Agent.NestedUsage
      const caller = (yield* RunContext).runId
      const started: Array<Tables.RunKey> = []
      let attempt = executor.runBatch([effective], { advertised: context.advertised, durable: { owner: key, resumed } })
        .pipe(
          Effect.provideService(EventSink, collect),
          Effect.provideService(Agent.NestedUsage, {
            add: (more) => {
              usage = ChatModel.addUsage(usage, more)
              outerUsage.add(more)
            }
          }),
          Effect.provideService(CurrentCall, {
            run: { workflow: run.workflow, runId: run.runId },
            index,
            callId: call.id,
            caller,
            started,
            within: run.within ?? []
          })
        )
      // a question of the call waits, durably, for `answer`: the run suspends, and the call runs again
      let waiting = false
      if (asks) {
        const journalContext = yield* Effect.context<WorkflowEngine.WorkflowEngine | WorkflowEngine.WorkflowInstance | SqlClient.SqlClient>()
        const outerAnswerer = yield* Effect.serviceOption(Ask.Answerer)
        attempt = Effect.provideService(
          attempt,
          Ask.Answerer,
          Questions.answerer(
            { run, prefix: context.prefix, turn: context.turn, index, callId: call.id },
            journalContext,
            outerAnswerer,
            () => {
              waiting = true
            }
          )
        )
      }
      if (decision !== undefined) {
        // the decision answers this call's own request; anything else asked during the call (an MCP
        // server's elicitation) goes to the application's `Approval`, and is denied when there is none
        const outer = yield* Effect.serviceOption(Approval.Approval)
        attempt = Effect.provideService(attempt, Approval.Approval, {
          decide: (request) =>
            request.callId === call.id
              ? Effect.succeed(decision)
              : Option.isSome(outer)
              ? outer.value.decide(request)
              : Effect.succeed(Approval.deny("no one can answer it during a durable run", "durable"))
        })
      }
      const exit = yield* Effect.result(attempt)
      // a nested durable run (`asTool`) that waits (an approval) suspended this activity's instance,
      // which interrupted the call: the activity suspends too, journaling nothing, and runs again
      // when the nested run ends (that run's end answers it then)
      const instance = yield* WorkflowEngine.WorkflowInstance
      if (instance.suspended) {
        // suspended on a question: the call runs again from its start once answered, so its
        // "started" marker goes (it did not end; what it did before asking must be idempotent)
        if (waiting && marks) yield* Tables.unmark(key)
        return yield* Workflow.suspend(instance)
      }
      const result = exit._tag === "Success" ? exit.success[0]! : exit.failure.results[0]!
      const fatal = exit._tag === "Failure" ? exit.failure.errors[0] : undefined
      // a call that timed out (not one that waits: that suspended above) cancels the nested durable
      // runs it started, and theirs, before its answer is journaled: none goes on unwatched
      if (result.error?._tag === "ToolTimeout") {
        for (const nested of started) {
          for (const each of [nested, ...(yield* Tables.nestedRuns(nested))]) yield* cancelNested(each, "timed out")
        }
      }
      const cancelRun = executor.runCancel.reasonUnsafe()
      const updates = (yield* AgentState.AgentState).recorded(call.id)
      return {
        result,
        events,
        ...(fatal === undefined ? {} : { fatal }),
        ...(cancelRun === undefined ? {} : { cancelRun }),
        ...(updates === undefined || updates.length === 0 ? {} : { state: updates as ReadonlyArray<AgentState.Recorded> }),
        ...(usage.inputTokens === 0 && usage.outputTokens === 0 ? {} : { usage })
      }
    })
  }), (outcome) =>
    Effect.gen(function*() {
      const state = yield* AgentState.AgentState
      // replayed: the updates the call recorded, for the loop to apply as when it ran
      if (!ranHere && outcome.state !== undefined) state.restore(call.id, outcome.state as ReadonlyArray<AgentState.Recorded>)
      if (outcome.cancelled !== undefined) return yield* onCancelled(outcome.cancelled)
      if (ranHere) return
      // replayed: its nested runs' usage adds to the run's again, it counts if it was admitted, and
      // it cancels the run again if a handler cancelled it then
      if (outcome.usage !== undefined) (yield* Agent.NestedUsage).add(outcome.usage)
      if (admittedBefore(outcome.events as ReadonlyArray<ToolEvent.Event>)) yield* executor.countReplayed(toolName)
      if (outcome.cancelRun !== undefined) yield* executor.runCancel.cancel(outcome.cancelRun)
    }))
}

// Handoffs (`Options.handoffs`) ------------------------------------------------------------------

/**
 * The agents a durable agent may hand its conversation over to, as `Handoff.run` does: a call's
 * result carrying a handoff to one of them ends the running agent's part after its turn and the
 * receiving agent goes on, in the same run (run id `<run id>/handoff-<k>` in its events and
 * `RunContext`). The durable agent itself is the agent named by `Options.name` (a receiving agent
 * may hand back to it by that name). Each agent's turns and calls are activities of the run, the k-th
 * receiving agent's named under `handoff-<k>/` (`handoff-1/turn/0`, `handoff-1/tool/0/0`, ...), so a
 * resumed run answers every agent's answered turns and completed calls from the journal and takes
 * the same handoffs again (the input filter must be a pure function of its input).
 * `Options.approval` applies to every agent's calls.
 */
export interface Handoffs<R, MR = never> {
  /** The other agents, by name (each its own tools, system prompt, limits; `model`: its own model). */
  readonly agents: Readonly<Record<string, AgentTool.Definition<R, MR>>>
  /** What the receiving agent sees. Default `Handoff.wholeHistory`. */
  readonly inputFilter?: Handoff.InputFilter
  /** Handoffs allowed in one run. Default `Handoff.defaultMaxHandoffs`. */
  readonly maxHandoffs?: number
}

/** One agent's options in a durable run: its `RunOptions` (handoffs as the loop takes them) and the durable agent's. */
type AgentOptions<R, MR, S extends Agent.OutputSchema, St> = Omit<Options<R, MR, S, St>, "handoffs"> & Agent.RunOptions<R, MR, S, St>

/** The prefix of the running agent's activity names: `handoff-<k>/` for the k-th receiving agent. */
const ActivityPrefix = Context.Reference<string>("tinyagents/durable/ActivityPrefix", { defaultValue: () => "" })

/**
 * Whether an event ends run `runId`'s event journal: its own `agent.finished`, or that of an agent a
 * handoff passed the conversation to (`<run id>/handoff-<k>`), unless it handed over in turn; never
 * that of a run nested in a call.
 */
const endsRun = (runId: string) => {
  const own = isOwnRun(runId)
  return (event: ToolEvent.Event): boolean => event._tag === "agent.finished" && event.reason !== "handoff" && own(event.runId)
}

/** Whether an event's run id is run `runId`'s own or that of an agent a handoff passed it to (`<run id>/handoff-<k>`). */
const isOwnRun = (runId: string) => (eventRunId: string): boolean => {
  const leg = eventRunId.startsWith(`${runId}/handoff-`) ? eventRunId.slice(`${runId}/handoff-`.length) : undefined
  return eventRunId === runId || (leg !== undefined && /^[0-9]+$/.test(leg))
}

/**
 * The run's loop (`loop`: the durable loop of one agent), once per agent when the run hands over
 * (see {@link Handoffs}): the legs of `Handoff.start` / `Handoff.next`, each under its activity
 * prefix and run id. The result is the last agent's, with every agent's usage, who that agent is and
 * the transfers; its `state` only when that agent is this one (another agent's state has a schema of its own).
 */
const conversation = <R, MR, S extends Agent.OutputSchema, St, E, X>(
  options: Options<R, MR, S, St>,
  messages: ReadonlyArray<ChatModel.Message>,
  loop: (agent: AgentOptions<R, MR, S, St>) => Effect.Effect<Agent.AgentResult<S["Type"], St>, E, X>
): Effect.Effect<
  Agent.AgentResult<S["Type"], St> & { readonly agent?: string; readonly transfers?: ReadonlyArray<Handoff.Transfer> },
  E,
  X | RunContext
> => {
  const { handoffs, ...own } = options
  if (handoffs === undefined) return loop({ ...own, messages })
  const legs: Handoff.Options<R, MR> = {
    agents: { ...handoffs.agents, [options.name]: own as unknown as AgentTool.Definition<R, MR> },
    start: options.name,
    messages,
    ...(handoffs.inputFilter === undefined ? {} : { inputFilter: handoffs.inputFilter }),
    ...(handoffs.maxHandoffs === undefined ? {} : { maxHandoffs: handoffs.maxHandoffs })
  }
  return Effect.gen(function*() {
    if (Object.hasOwn(handoffs.agents, options.name)) {
      return yield* Effect.die(new Error(`DurableAgent ${options.name}: handoffs.agents names the durable agent itself`))
    }
    let leg = yield* Handoff.start(legs)
    let usage = ChatModel.noUsage
    for (;;) {
      // the leg's own options (this agent's are all of `own`); the approvals are the durable agent's
      const agent = {
        ...leg.options,
        ...(own.approval === undefined ? {} : { approval: own.approval }),
        name: leg.agent
      } as AgentOptions<R, MR, S, St>
      const result = yield* leg.within(loop(agent)).pipe(
        Effect.provideService(ActivityPrefix, leg.index === 0 ? "" : `handoff-${leg.index}/`)
      )
      usage = ChatModel.addUsage(usage, result.usage)
      const following = Handoff.next(legs, leg, result)
      if (following === undefined) {
        const { state, ...rest } = result
        return {
          ...rest,
          usage,
          agent: leg.agent,
          transfers: leg.transfers,
          ...(leg.agent === options.name && state !== undefined ? { state } : {})
        }
      }
      leg = following
    }
  })
}
