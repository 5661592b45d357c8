/**
 * A durable agent as a tool of another durable agent (`DurableAgent.asTool`): a call starts the
 * nested agent's run as a child workflow of the calling run, named by the call's position
 * (`<parent run>/<turn>/<index>`), and waits for it. The nested run is a durable run of its own:
 * its model turns and tool calls are activities in its own journal, so after a crash the restarted
 * runner resumes it (turns it answered are not asked again, calls that completed are not run again)
 * and the calling run's call, re-run by the engine, starts the same nested run again, which joins it
 * (the tool is idempotent for that reason). Its events, stamped with the nesting (`parentRunId`,
 * `parentCallId`, `depth`), are journaled with the call's; its token usage (its result's: every
 * agent's when it handed over) adds to the calling run's; cancelling the calling run cancels it (`DurableAgent.cancel` cancels
 * the runs nested in the run's calls, and each step of a nested run checks the runs around it).
 *
 * It owns the call's side only; the nested run is the nested agent's (`DurableAgent`), whose layer
 * must run on the same runners. Outside a durable run's call the tool dies (`NotInDurableRun`): an
 * `Agent.run` nests agents with `Agent.asTool`. Called by an agent that a durable call runs inline
 * (`Agent.asTool`), it answers a repairable error and runs nothing: that agent's turns are not
 * journaled, so no name of the nested run would be the same when the call runs again.
 */
import { Context, Data, Effect, Schema } from "effect"
import type { SqlClient } from "effect/sql"
import type { WorkflowEngine } from "effect/workflow"
import * as Agent from "../agent/Agent.ts"
import * as AgentTool from "../agent/AgentTool.ts"
import * as AgentState from "../agent/AgentState.ts"
import * as ChatModel from "../agent/ChatModel.ts"
import * as Tool from "../contract/Tool.ts"
import * as ToolError from "../contract/ToolError.ts"
import type * as ToolEvent from "../contract/ToolEvent.ts"
import * as ToolSchema from "../contract/ToolSchema.ts"
import * as Approval from "../governance/Approval.ts"
import { EventSink } from "../runtime/EventSink.ts"
import { RunContext } from "../runtime/RunContext.ts"
import { StoreRegistry } from "../runtime/StoreRegistry.ts"
import { ToolCallContext } from "../runtime/ToolCallContext.ts"
import type * as DurableAgent from "./DurableAgent.ts"
import { CurrentCall } from "./internal/call.ts"
import * as Tables from "./internal/tables.ts"

/**
 * Options of {@link make}: those of `Agent.asTool` (name, description, input, maxDepth, timeout,
 * safety), with the prompt required (the nested run's conversation, from the call's input).
 */
export interface Options<Name extends string, Input extends Schema.Top> extends AgentTool.Options<Name, Input> {
  readonly prompt: (input: Input["Type"]) => string | ReadonlyArray<ChatModel.Message>
}

/** What a durable agent tool's calls use: the run and call, the journal and the engine. */
export type Services = RunContext | ToolCallContext | EventSink | WorkflowEngine.WorkflowEngine | SqlClient.SqlClient

/** A durable agent as a tool: its output is the nested run's answer (its typed output when it declares one). */
export type DurableAgentTool<Name extends string, Input extends Schema.Top, S extends Agent.OutputSchema = never> = Tool.Tool<
  Name,
  Input,
  [S] extends [never] ? undefined : S & Schema.Top,
  ToolError.ToolError,
  Services
>

/** A durable agent tool was called outside a durable run's tool call (a defect: use `Agent.asTool` there). */
export class NotInDurableRun extends Data.TaggedError("NotInDurableRun")<{ readonly tool: string }> {
  override get message(): string {
    return `tool ${this.tool} runs a durable agent: it can only be called by a durable agent's run (use Agent.asTool in Agent.run)`
  }
}

/**
 * The calling run's own services, left out of the context the nested run starts from: an engine that
 * runs a child in its caller's fiber (`WorkflowEngine.layerMemory`) would give them to the child's
 * body over those of the child's layer (its model, stores, approvals, usage meter).
 */
const withoutRunServices = Context.omit(
  ChatModel.ChatModel,
  StoreRegistry,
  Approval.Approval,
  AgentState.AgentState,
  Agent.NestedUsage,
  RunContext,
  EventSink,
  ToolCallContext,
  CurrentCall
)

/** All of a run's journaled events, in order. */
const allEvents = (run: Tables.RunKey): Effect.Effect<ReadonlyArray<ToolEvent.Event>, never, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const events: Array<ToolEvent.Event> = []
    let since = -1
    while (true) {
      const page = yield* Tables.read(run, since)
      events.push(...page)
      const last = page.at(-1)
      if (page.length < 500 || last === undefined) return events
      since = last.sequence
    }
  })

/** Whether `id` names a leg of run `runId` after a handoff (`<runId>/handoff-<k>`), not a run nested in it. */
const isLeg = (runId: string, id: string): boolean =>
  id.startsWith(`${runId}/handoff-`) && /^[0-9]+$/.test(id.slice(`${runId}/handoff-`.length))

/** Makes durable agent `agent` a tool of durable runs (see the module comment). */
export const make = <const Name extends string, Input extends Schema.Top, R, MR, S extends Agent.OutputSchema = never>(
  agent: DurableAgent.DurableAgent<R, MR, S>,
  options: Options<Name, Input>
): DurableAgentTool<Name, Input, S> => {
  const maxDepth = options.maxDepth ?? AgentTool.defaultMaxDepth
  const agentName = options.name
  const output = agent.output as Schema.Top | undefined
  const codec = output === undefined ? undefined : ToolSchema.toModelCodec(output)
  const failure = (message: string, detail: Record<string, unknown>) =>
    Effect.fail(ToolError.repairable(message, { agent: agentName, ...detail }))

  const handler = (input: unknown) =>
    Effect.gen(function*() {
      const context = yield* RunContext
      const call = yield* ToolCallContext
      const here = yield* CurrentCall
      if (here === undefined) return yield* Effect.die(new NotInDurableRun({ tool: options.name }))
      // called by an agent the durable call runs inline (`Agent.asTool`): its turns are not journaled,
      // so no name of the nested run would be the same when the call runs again; refused
      if (context.runId !== here.caller || call.toolCallId !== here.callId) {
        return yield* failure(
          `agent ${agentName} was not run: a durable agent tool must be called directly by a durable agent, not by an agent nested in its call; answer without it`,
          { reason: "not called by a durable agent" }
        )
      }
      const depth = (context.nesting?.depth ?? 0) + 1
      if (depth > maxDepth) {
        return yield* failure(
          `agent ${agentName} was not run: it would run at depth ${depth}, over the limit of ${maxDepth}; answer without it`,
          { depth, maxDepth }
        )
      }
      const given = options.prompt(input)
      const messages: ReadonlyArray<ChatModel.Message> = typeof given === "string" ? [{ role: "user", content: given }] : given
      // named by position, so a re-run of the call (after a crash, or a retry) joins the same run
      const runId = `${context.runId}/${context.turn}/${here.index}`
      // linked to the calling run before it starts: what cancelling that run cascades along
      yield* Tables.link(here.run, { workflow: agent.workflow._tag, runId })
      if (!here.started.some((run) => run.runId === runId)) here.started.push({ workflow: agent.workflow._tag, runId })
      const outcome = yield* agent.workflow.execute({
        runId,
        messages,
        threadId: context.threadId,
        ...(context.user === undefined ? {} : { user: context.user as Schema.Json }),
        nesting: {
          parentRunId: context.runId,
          parentCallId: call.toolCallId,
          depth,
          within: [...here.within, here.run]
        }
      }).pipe(Effect.updateContext(withoutRunServices))
      // its events (stamped with the nesting by its own run) become the call's; its usage the run's
      const events = yield* allEvents({ workflow: agent.workflow._tag, runId })
      const sink = yield* EventSink
      for (const event of events) yield* sink.emit(event)
      // every agent's usage when the nested run handed over: its result's, or (failed) its legs' ends
      const legs = events.filter((event): event is ToolEvent.AgentFinished =>
        event._tag === "agent.finished" && (event.runId === runId || isLeg(runId, event.runId))
      )
      const usage = outcome._tag === "Finished"
        ? outcome.result.usage
        : legs.reduce((sum, event) => ChatModel.addUsage(sum, event.usage), ChatModel.noUsage)
      ;(yield* Agent.NestedUsage).add(usage)
      if (outcome._tag === "Failed") {
        const failed = new Agent.AgentFailed(outcome)
        return yield* failure(`agent ${agentName} failed: ${failed.message}`, {
          reason: failed.reason,
          error: failed.error._tag
        })
      }
      const result = outcome.result
      if (outcome.cancelled !== undefined || result.reason === "cancelled") {
        return yield* failure(`agent ${agentName} was cancelled before it answered`, { reason: "cancelled" })
      }
      if (result.reason === "max_turns") {
        return yield* failure(`agent ${agentName} gave no answer within its ${result.turns} turns`, { reason: result.reason })
      }
      if (codec === undefined) return result.text
      if (result.output === undefined) {
        return yield* failure(`agent ${agentName} ended (${result.reason}) without its typed answer`, { reason: result.reason })
      }
      return yield* Effect.orDie(Schema.decodeUnknownEffect(codec)(result.output))
    })

  return Tool.make(options.name, {
    description: options.description,
    input: options.input,
    ...(output === undefined ? {} : { output }),
    ...(options.timeout === undefined ? {} : { timeout: options.timeout }),
    // starting the same nested run again joins it: re-running the call is safe
    safety: { ...options.safety, idempotent: true },
    services: [RunContext, ToolCallContext, EventSink],
    handler: handler as (input: Input["Type"]) => Effect.Effect<never, ToolError.ToolError, RunContext | ToolCallContext | EventSink>
  }) as unknown as DurableAgentTool<Name, Input, S>
}
