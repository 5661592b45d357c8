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
 * Activities: `turn/<n>` (the model's whole answer to turn n, from 0) and `tool/<n>/<callId>`
 * (one call: its `ToolResult` and the events it emitted). The call in flight when a runner dies
 * (after its side effect, before its journal write) is re-run by the engine (at least once), so:
 *
 * | tool | a re-run after a crash |
 * |---|---|
 * | `safety.idempotent: true` | runs again |
 * | keyed (`Tool.make({ idempotency })`) | the key's claim owner is the activity's stable key (`Activity.idempotencyKey`); a stored result replays; no stored result: not run again, answered "may or may not have completed" |
 * | neither | a "started" marker is written before the call; a re-run that finds it does not run the tool and answers "may or may not have completed" (`ToolFailure` with `detail.outcome: "unknown"`; its `tool.failed` event has `outcome: "unknown"`) |
 *
 * A crash between the marker and the handler's start also answers "may or may not have
 * completed": the rule errs towards never applying twice.
 *
 * Approvals: a call for which `options.approval` holds waits, in the workflow body, on the
 * `DurableDeferred` `approval/<callId>` (after an `agent.approval_requested` event); `approve`
 * completes it from any process on the same database, and the decision is journaled. `Deny`
 * answers the call `ApprovalDenied` without running it; `Approve` and `Edit` run it with an
 * `Approval` service answering that decision, so the `consent` middleware works unchanged (an
 * `Edit` takes effect only through `consent`). A turn's calls start once all of the turn's
 * approvals are decided (in call order). Deferreds are named by call id, so a decision given
 * before the request (or a call id the model repeats in a later turn) answers it at once. Calls
 * that `consent` asks about but `options.approval` does not cover ask the `Approval` service the
 * application provides, as in `Agent.run`.
 *
 * The calls of a turn run as separate activities, at most `concurrency` at once; a fatal error
 * in one does not stop the others (the `fail-fast` policy does not apply), and the run then ends
 * with `AgentFailed` as in `Agent.run`.
 *
 * Events: the body writes its events to the table `tinyagents_durable_events` with deterministic
 * sequence numbers (`ON CONFLICT DO NOTHING`, so a replay writes nothing twice); a call's events
 * are returned by its activity and appended, in call order, after the turn's calls complete.
 * `events(runId, { since })` reads them from there. A durable stream carries `agent.turn_started`,
 * `agent.model_responded`, `agent.approval_requested`, every tool event (`tool.started`,
 * `tool.completed`, `tool.failed`, `tool.rejected`, `tool.retrying`, `tool.progress`, ...), and
 * `agent.finished`; never `agent.text_delta` or `agent.tool_call` (a turn is journaled whole).
 * An event's `timestamp` is when it was first written; its `sequence` is its journal position.
 * The events go to the journal only, not to an `EventSink` (the body provides its own).
 */
import { Cause, Effect, Exit, Layer, Option, Schedule, Stream } from "effect"
import type { Duration, Schema } from "effect"
import type { SqlClient } from "effect/sql"
import { Activity, DurableDeferred, Workflow, type WorkflowEngine } from "effect/workflow"
import * as Agent from "../agent/Agent.ts"
import * as ChatModel from "../agent/ChatModel.ts"
import type * as Tool from "../contract/Tool.ts"
import type { ToolCall } from "../contract/ToolCall.ts"
import type * as ToolRegistry from "../contract/ToolRegistry.ts"
import * as ToolError from "../contract/ToolError.ts"
import type * as ToolEvent from "../contract/ToolEvent.ts"
import * as ToolResult from "../contract/ToolResult.ts"
import * as Approval from "../governance/Approval.ts"
import { redactArguments } from "../internal/redact.ts"
import { EventSink } from "../runtime/EventSink.ts"
import * as Executor from "../runtime/Executor.ts"
import * as Idempotency from "../runtime/internal/executor/Idempotency.ts"
import { RunContext } from "../runtime/RunContext.ts"
import * as Journal from "./Journal.ts"
import * as Tables from "./internal/tables.ts"

/** What a finished durable run returns: an `Agent.AgentResult` (decoded from the journal). */
export type DurableResult = Agent.AgentResult

/** Options of {@link make}: the agent's `RunOptions` without the messages (given per run) and `cancelWhen`. */
export interface Options<R, MR = never> extends Omit<Agent.RunOptions<R, MR>, "messages" | "cancelWhen" | "name"> {
  /** The workflow's name (unique per application; part of every run's execution id). */
  readonly name: string
  /** Which calls wait for a durable approval before they run (default: none). */
  readonly approval?: (call: ToolCall, spec: Tool.ToolSpec) => boolean
  /** How often `result` and `events` look for news. Default 200 ms. */
  readonly pollInterval?: Duration.Input
}

/** The workflow behind a durable agent: payload `{ runId, messages }`, success the run's `Journal.Outcome`. */
export type DurableWorkflow = Workflow.Workflow<string, typeof Journal.Payload, typeof Journal.Outcome, typeof Schema.Never>


/** What the journaled steps need: the engine and the run's instance, the journal, and what calls need. */
type StepServices<R, MR> =
  | WorkflowEngine.WorkflowEngine
  | WorkflowEngine.WorkflowInstance
  | SqlClient.SqlClient
  | Executor.Requirements<R | MR>

/** What the workflow body needs besides what `layer` leaves to the caller. */
type BodyServices<R, MR> = Exclude<Executor.Requirements<R | MR>, RunContext | EventSink>

export interface DurableAgent<R, MR> {
  /** The `effect/workflow` Workflow. */
  readonly workflow: DurableWorkflow
  /**
   * Registers the workflow with the engine: provide it with a runner layer (`Runner.*`), the
   * `ChatModel`, a `StoreRegistry` and the tools' services. Only processes that run runs need it;
   * clients (start, approve, events) need the engine alone.
   */
  readonly layer: Layer.Layer<
    never,
    never,
    WorkflowEngine.WorkflowEngine | SqlClient.SqlClient | ChatModel.ChatModel | BodyServices<R, MR>
  >
  /** Starts run `runId` (idempotent: the same runId is the same run, its messages are ignored then) and returns at once. */
  readonly start: (
    runId: string,
    messages: ReadonlyArray<ChatModel.Message>
  ) => Effect.Effect<void, never, WorkflowEngine.WorkflowEngine>
  /** Waits for run `runId` to finish (polling the engine); it resumes nothing itself. */
  readonly result: (runId: string) => Effect.Effect<DurableResult, Agent.AgentFailed, WorkflowEngine.WorkflowEngine>
  /** The run's end: `Option.none()` while the run is unfinished (or unknown). */
  readonly poll: (
    runId: string
  ) => Effect.Effect<Option.Option<Exit.Exit<DurableResult, Agent.AgentFailed>>, never, WorkflowEngine.WorkflowEngine>
  /**
   * The run's journaled events with a sequence number above `since` (default: all), then new ones
   * as they are journaled, until `agent.finished` (or the run ends without one). See the module comment.
   */
  readonly events: (
    runId: string,
    options?: { readonly since?: number }
  ) => Stream.Stream<ToolEvent.Event, never, WorkflowEngine.WorkflowEngine | SqlClient.SqlClient>
  /** Decides a pending approval of run `runId`'s call `callId` (from any process connected to the same database). */
  readonly approve: (
    runId: string,
    callId: string,
    decision: Approval.Decision
  ) => Effect.Effect<void, never, WorkflowEngine.WorkflowEngine>
}

/** The durable deferred a call waits on for its approval. */
export const approvalDeferred = (callId: string) => DurableDeferred.make(`approval/${callId}`, { success: Journal.Decision })

/** Makes a durable agent (see the module comment). */
export const make = <R, MR = never>(options: Options<R, MR>): DurableAgent<R, MR> => {
  const workflow: DurableWorkflow = Workflow.make(`tinyagents/${options.name}`, {
    payload: Journal.Payload,
    success: Journal.Outcome,
    idempotencyKey: (payload) => payload.runId
  })
  const pollEvery = options.pollInterval ?? "200 millis"
  const executionId = (runId: string) => workflow.executionId({ runId, messages: [] })

  // the same services, with the engine's own (instance, execution, scope) excluded from generic `R`/`MR`
  const layer = workflow.toLayer((payload) => body(options, payload)) as DurableAgent<R, MR>["layer"]

  const poll: DurableAgent<R, MR>["poll"] = (runId) =>
    Effect.flatMap(executionId(runId), (id) => workflow.poll(id)).pipe(
      Effect.map(Option.flatMap((result) =>
        result._tag === "Complete" ? Option.some(exitOf(result.exit)) : Option.none()
      ))
    )

  const result: DurableAgent<R, MR>["result"] = (runId) =>
    Effect.flatMap(
      Effect.repeat(poll(runId), { until: Option.isSome, schedule: Schedule.spaced(pollEvery) }),
      (done) => Option.isSome(done) ? done.value : Effect.die("unreachable")
    )

  const events: DurableAgent<R, MR>["events"] = (runId, eventOptions) =>
    Stream.paginate(
      { since: eventOptions?.since ?? -1, wait: false },
      (state): Effect.Effect<
        readonly [ReadonlyArray<ToolEvent.Event>, Option.Option<{ since: number; wait: boolean }>],
        never,
        WorkflowEngine.WorkflowEngine | SqlClient.SqlClient
      > =>
        Effect.gen(function*() {
          if (state.wait) yield* Effect.sleep(pollEvery)
          const finishedBefore = Option.isSome(yield* poll(runId))
          const batch = yield* Tables.read(runId, state.since)
          const last = batch.at(-1)
          if (batch.some((event) => event._tag === "agent.finished")) {
            return [batch.slice(0, batch.findIndex((e) => e._tag === "agent.finished") + 1), Option.none()] as const
          }
          if (batch.length === 0 && finishedBefore) return [batch, Option.none()] as const
          return [
            batch,
            Option.some({ since: last === undefined ? state.since : last.sequence, wait: batch.length === 0 })
          ] as const
        })
    )

  const start: DurableAgent<R, MR>["start"] = (runId, messages) =>
    Effect.asVoid(workflow.execute({ runId, messages: messages as typeof Journal.Payload.Type["messages"] }, { discard: true }))

  const approve: DurableAgent<R, MR>["approve"] = (runId, callId, decision) =>
    Effect.gen(function*() {
      const deferred = approvalDeferred(callId)
      const token = DurableDeferred.tokenFromExecutionId(deferred, { workflow, executionId: yield* executionId(runId) })
      yield* DurableDeferred.succeed(deferred, { token, value: decision as typeof Journal.Decision.Type })
    })

  return { workflow, layer, start, result, poll, events, approve }
}

/** A journaled outcome as the run's exit. */
const exitOf = (exit: Exit.Exit<typeof Journal.Outcome.Type, never>): Exit.Exit<DurableResult, Agent.AgentFailed> => {
  if (exit._tag === "Failure") return Exit.failCause(exit.cause as Cause.Cause<never>)
  const outcome = exit.value
  if (outcome._tag === "Finished") return Exit.succeed(outcome.result as DurableResult)
  const error = outcome.error._tag === "ChatModelError" ? Journal.modelErrorOf(outcome.error) : outcome.error
  return Exit.fail(
    new Agent.AgentFailed({
      reason: outcome.reason,
      error: error as ToolError.ToolError | ChatModel.ChatModelError,
      turns: outcome.turns,
      transcript: outcome.transcript as ReadonlyArray<ChatModel.Message>,
      results: outcome.results as ReadonlyArray<ToolResult.ToolResult>
    })
  )
}

/** The workflow body: the agent loop with journaled steps, its events into the event journal. */
const body = <R, MR>(
  options: Options<R, MR>,
  payload: typeof Journal.Payload.Type
) =>
  Effect.gen(function*() {
    const runId = payload.runId
    yield* Tables.ensure
    const sql = yield* Effect.context<SqlClient.SqlClient>()
    let seq = 0
    // deterministic sequence numbers: the body makes the same events in the same order on every replay
    const journal = EventSink.of({
      emit: (event) =>
        Effect.suspend(() => {
          const n = seq++
          return Effect.provide(Tables.append(runId, n, { ...event, sequence: n }), sql)
        })
    })
    const runOptions: Agent.RunOptions<R, MR> = { ...options, messages: payload.messages as ReadonlyArray<ChatModel.Message> }
    const exit = yield* Effect.exit(
      Agent.loopWith(runOptions, (executor) => durableSteps(options, executor)).pipe(
        Effect.provideService(EventSink, journal),
        Effect.provideService(RunContext, { runId, threadId: runId, turn: 0 })
      )
    )
    if (Exit.isSuccess(exit)) {
      const { reason, ...rest } = exit.value
      return { _tag: "Finished", result: { ...rest, reason } } as typeof Journal.Outcome.Type
    }
    const failure = Cause.findErrorOption(exit.cause)
    if (Option.isNone(failure)) return yield* Effect.failCause(exit.cause as Cause.Cause<never>)
    const failed = failure.value
    return {
      _tag: "Failed",
      reason: failed.reason,
      error: failed.error._tag === "ChatModelError" ? Journal.modelErrorData(failed.error) : failed.error,
      turns: failed.turns,
      transcript: failed.transcript,
      results: failed.results
    } as typeof Journal.Outcome.Type
  })

/** The loop's steps as activities (see the module comment). */
const durableSteps = <R, MR>(options: Options<R, MR>, executor: Executor.Executor<R | MR>) =>
  Effect.gen(function*() {
    const model = yield* ChatModel.ChatModel
    const ask: Agent.Steps<StepServices<R, MR>>["ask"] = (request, turn) =>
      Effect.flatMap(
        Activity.make({
          name: `turn/${turn}`,
          success: Journal.Turn,
          execute: Effect.suspend(() => ChatModel.collect(model.stream(request))).pipe(
            Effect.map((response): typeof Journal.Turn.Type => ({
              _tag: "Answered",
              response: {
                text: response.text,
                toolCalls: response.toolCalls,
                usage: response.usage,
                ...(response.finishReason === undefined ? {} : { finishReason: response.finishReason })
              }
            })),
            Effect.catch((error) => Effect.succeed({ _tag: "Failed", error: Journal.modelErrorData(error) } as const))
          )
        }),
        (outcome) =>
          outcome._tag === "Answered"
            ? Effect.succeed(outcome.response as ChatModel.Response)
            : Effect.fail(Journal.modelErrorOf(outcome.error))
      )

    const batch = (
      calls: ReadonlyArray<ToolCall>,
      context: { readonly turn: number; readonly advertised: ToolRegistry.Advertised<unknown> }
    ) =>
      Effect.gen(function*() {
        // approvals first, in call order: each waits (durably) for its decision
        const decisions = new Map<string, Approval.Decision>()
        for (const call of calls) {
          const entry = options.tools.get(call.name)
          if (entry === undefined || options.approval?.(call, entry.spec) !== true) continue
          yield* executor.emit({
            _tag: "agent.approval_requested",
            turn: context.turn,
            toolCallId: call.id,
            toolName: call.name,
            arguments: redactArguments(call.arguments, entry.spec.safety.redact)
          })
          decisions.set(call.id, (yield* DurableDeferred.await(approvalDeferred(call.id))) as Approval.Decision)
        }
        const outcomes = yield* Effect.forEach(
          calls,
          (call) => callActivity(options, executor, call, context, decisions.get(call.id)),
          { concurrency: options.concurrency ?? Executor.defaultConcurrency }
        )
        const sink = yield* EventSink
        for (const outcome of outcomes) for (const event of outcome.events) yield* sink.emit(event)
        const results = outcomes.map((o) => o.result as ToolResult.ToolResult)
        const errors = outcomes.flatMap((o) => o.fatal === undefined ? [] : [o.fatal])
        if (errors.length > 0) return yield* Effect.fail(new Executor.BatchFailed({ results, errors }))
        return results
      })
    const steps: Agent.Steps<StepServices<R, MR>> = { ask, batch }
    return steps
  })

/** One call as the activity `tool/<turn>/<callId>`. */
const callActivity = <R, MR>(
  options: Options<R, MR>,
  executor: Executor.Executor<R | MR>,
  call: ToolCall,
  context: { readonly turn: number; readonly advertised: ToolRegistry.Advertised<unknown> },
  decision: Approval.Decision | undefined
) => {
  const name = `tool/${context.turn}/${call.id}`
  return Activity.make({
    name,
    success: Journal.Call,
    execute: Effect.gen(function*() {
      const key = yield* Activity.idempotencyKey(name)
      const entry = options.tools.get(call.name)
      const toolName = entry?.spec.name ?? call.name
      const events: Array<ToolEvent.Event> = []
      const collect = EventSink.of({ emit: (event) => Effect.sync(() => void events.push(event)) })
      if (decision?._tag === "Deny") {
        const error = new ToolError.ApprovalDenied({ toolName, reason: decision.reason })
        yield* Effect.provideService(
          executor.emit({ _tag: "tool.rejected", toolCallId: call.id, toolName, attempt: 1, error }),
          EventSink,
          collect
        )
        return { result: ToolResult.fromError(call, error), events }
      }
      const kind = entry === undefined
        ? "unknown"
        : entry.tool.idempotency !== undefined
        ? "keyed"
        : entry.spec.safety.idempotent
        ? "idempotent"
        : "unsafe"
      const resumed = kind === "keyed" || kind === "unsafe" ? !(yield* Tables.mark(key)) : false
      if (kind === "unsafe" && resumed) {
        const error = Idempotency.outcomeUnknown(toolName)
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
      let run = executor.runBatch([call], { advertised: context.advertised }).pipe(
        Effect.provideService(EventSink, collect)
      )
      if (kind === "keyed") run = Effect.provideService(run, Idempotency.DurableClaim, { owner: key, resumed })
      if (decision !== undefined) run = Effect.provideService(run, Approval.Approval, { decide: () => Effect.succeed(decision) })
      const exit = yield* Effect.result(run)
      const result = exit._tag === "Success" ? exit.success[0]! : exit.failure.results[0]!
      const fatal = exit._tag === "Failure" ? exit.failure.errors[0] : undefined
      const marked = events.map((event) =>
        event._tag === "tool.failed" && Idempotency.isOutcomeUnknown(event.error)
          ? { ...event, outcome: "unknown" as const }
          : event
      )
      return { result, events: marked, ...(fatal === undefined ? {} : { fatal }) }
    })
  })
}
