/**
 * Handoffs: a conversation that moves between registered agents, as the OpenAI Agents SDK's
 * handoffs do. {@link run} starts one agent; when a call's successful result hands work on (a
 * `ToolResult.Handoff` payload under `__handoff` or `handoff` in its value, the shape the
 * `handoffArtifact` middleware recognises) to another registered agent, that agent's run ends after
 * the turn (an `agent.handoff` event, then `agent.finished` with reason `handoff`) and the receiving
 * agent goes on with its own model, tools and instructions, seeing what {@link Options.inputFilter}
 * lets it see. It owns the registry of agents, the check of each handoff and the transfer; the loop
 * (`Agent`) owns stopping on a handoff (`RunOptions.handoffs`).
 *
 * Fail closed: a handoff to an agent that is not registered (or to the agent itself, or past
 * {@link Options.maxHandoffs}), or a malformed payload, is refused with a repairable `ToolFailure`
 * that the handing model reads (naming the registered agents); nothing is transferred.
 *
 * Each agent's run is a run of its own: the first has the caller's `RunContext`, the k-th receiving
 * one the run id `<run id>/handoff-<k>`, so each keeps its own gap-free event sequence.
 */
import { Effect, Result } from "effect"
import * as Agent from "./Agent.ts"
import * as AgentTool from "./AgentTool.ts"
import * as ChatModel from "./ChatModel.ts"
import * as Handoffs from "./internal/handoff.ts"
import { provideModel } from "./internal/model.ts"
import { normalize } from "../governance/middleware/HandoffArtifact.ts"
import * as ToolError from "../contract/ToolError.ts"
import type * as ToolResult from "../contract/ToolResult.ts"
import type * as Executor from "../runtime/Executor.ts"
import * as Middleware from "../runtime/Middleware.ts"
import { RunContext } from "../runtime/RunContext.ts"

/** What an input filter sees: who hands over to whom, the handoff, and the conversation so far. */
export interface HandoffInput {
  readonly from: string
  readonly to: string
  readonly handoff: ToolResult.Handoff
  /** The conversation so far without system messages: the last message answers the handing call. */
  readonly history: ReadonlyArray<ChatModel.Message>
}

/** What the receiving agent sees (its own system prompt comes first): the messages made from the handoff. */
export type InputFilter = (input: HandoffInput) => ReadonlyArray<ChatModel.Message>

/** The whole conversation (the default, as in the Agents SDK). */
export const wholeHistory: InputFilter = (input) => input.history

/** Only the handoff's task, as a user message (and its context as JSON, when it has one). */
export const taskOnly: InputFilter = ({ handoff }) => [{
  role: "user",
  content: handoff.context === undefined ? handoff.task : `${handoff.task}\n\ncontext: ${JSON.stringify(handoff.context)}`
}]

/** The conversation without tool calls and tool results (the Agents SDK's `remove_all_tools`). */
export const withoutTools: InputFilter = ({ history }) =>
  history.flatMap((message): ReadonlyArray<ChatModel.Message> =>
    message.role === "tool"
      ? []
      : message.role === "assistant"
      ? message.content === "" ? [] : [{ role: "assistant", content: message.content, toolCalls: [] }]
      : [message]
  )

/** How many handoffs one {@link run} allows unless {@link Options.maxHandoffs} says otherwise. */
export const defaultMaxHandoffs = 5

export interface Options<R, MR = never> {
  /** The registered agents, by name: the names handoffs target. */
  readonly agents: Readonly<Record<string, AgentTool.Definition<R, MR>>>
  /** The agent that starts. */
  readonly start: string
  /** The conversation so far (usually one user message). */
  readonly messages: ReadonlyArray<ChatModel.Message>
  /** What the receiving agent sees. Default {@link wholeHistory}. */
  readonly inputFilter?: InputFilter
  /** Handoffs allowed in the whole run; one more is refused (repairable). Default {@link defaultMaxHandoffs}. */
  readonly maxHandoffs?: number
  /** Completing this effect cancels the agent running then. */
  readonly cancelWhen?: Effect.Effect<unknown>
}

/** One transfer, in order. */
export interface Transfer {
  readonly from: string
  readonly to: string
  readonly task: string
  readonly toolCallId: string
}

/** The last agent's result, with who answered, the transfers, and the usage of every agent's run. */
export interface HandoffResult extends Agent.AgentResult {
  /** The agent whose run ended the conversation. */
  readonly agent: string
  readonly transfers: ReadonlyArray<Transfer>
}

/** The middleware that checks each handoff of `current`'s calls (see the module comment). */
const guard = (registered: ReadonlyArray<string>, current: string, exhausted: number | undefined) =>
  Middleware.make({
    name: "handoff",
    after: (invocation, result) => {
      if (result.isError) return Effect.succeed(result)
      const value = result.value
      const key = typeof value === "object" && value !== null && !Array.isArray(value)
        ? ["__handoff", "handoff"].find((k) => (value as Record<string, unknown>)[k] !== undefined)
        : undefined
      const payload = key === undefined ? result.audit?.handoff : (value as Record<string, unknown>)[key]
      if (payload === undefined) return Effect.succeed(result)
      const refuse = (why: string) =>
        Effect.fail(ToolError.repairable(`${invocation.spec.name}: handoff refused: ${why}; nothing was handed over`))
      const others = registered.filter((name) => name !== current)
      const normalized = normalize(payload, current)
      if (Result.isFailure(normalized)) {
        return refuse(`malformed (${normalized.failure.map((i) => `${ToolError.formatPath(i.path)}: ${i.message}`).join("; ")})`)
      }
      const handoff = normalized.success
      if (exhausted !== undefined) return refuse(`the limit of ${exhausted} handoffs is reached; answer yourself`)
      if (handoff.target === current) return refuse(`${current} is the agent running now`)
      if (!others.includes(handoff.target)) {
        return refuse(`no agent named ${JSON.stringify(handoff.target)}; the agents you may hand over to: ${others.join(", ")}`)
      }
      return Effect.succeed({ ...result, audit: { ...(result.audit ?? { layers: [] }), handoff } })
    }
  })

const middlewareOf = <MR>(given: Executor.Options<MR>["middleware"]): ReadonlyArray<Middleware.Middleware<MR>> =>
  given === undefined ? [] : Array.isArray(given) ? given : [given as Middleware.Middleware<MR>]

/**
 * Runs the conversation from `start`, handing it over between the registered agents until one of them
 * ends it (a final answer, `max_turns`, `return_direct`, cancellation) or fails (`AgentFailed`).
 */
export const run = <R, MR = never>(
  options: Options<R, MR>
): Effect.Effect<HandoffResult, Agent.AgentFailed, ChatModel.ChatModel | Executor.Requirements<R | MR>> =>
  Effect.gen(function*() {
    const base = yield* RunContext
    const registered = Object.keys(options.agents)
    const maxHandoffs = options.maxHandoffs ?? defaultMaxHandoffs
    const filter = options.inputFilter ?? wholeHistory
    if (options.agents[options.start] === undefined) {
      return yield* Effect.die(new Error(`Handoff.run: no agent named ${JSON.stringify(options.start)} is registered`))
    }
    const transfers: Array<Transfer> = []
    let usage = ChatModel.noUsage
    let current = options.start
    let messages = options.messages
    for (;;) {
      const { model, middleware, ...agent } = options.agents[current]!
      const exhausted = transfers.length >= maxHandoffs ? maxHandoffs : undefined
      const runOptions: Agent.RunOptions<R, MR> = {
        ...agent,
        name: agent.name ?? current,
        messages,
        middleware: [guard(registered, current, exhausted), ...middlewareOf(middleware)],
        handoffs: registered.filter((name) => name !== current),
        ...(options.cancelWhen === undefined ? {} : { cancelWhen: options.cancelWhen })
      }
      const context = transfers.length === 0 ? base : { ...base, runId: `${base.runId}/handoff-${transfers.length}`, turn: 0 }
      const result = yield* Agent.run(runOptions).pipe(
        (effect) => provideModel(effect, model),
        Effect.provideService(RunContext, context)
      )
      usage = ChatModel.addUsage(usage, result.usage)
      const last = result.transcript.at(-1)
      const found = result.reason === "handoff" && last?.role === "tool"
        ? Handoffs.find(last.results, registered)
        : undefined
      if (found === undefined) return { ...result, usage, agent: current, transfers }
      const { handoff } = found
      transfers.push({ from: current, to: handoff.target, task: handoff.task, toolCallId: found.result.toolCallId })
      messages = filter({
        from: current,
        to: handoff.target,
        handoff,
        history: result.transcript.filter((message) => message.role !== "system")
      })
      current = handoff.target
    }
  })
