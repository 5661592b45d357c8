/**
 * Handoffs: a conversation that moves between registered agents, as the OpenAI Agents SDK's
 * handoffs do. {@link run} starts one agent ({@link stream}: the same, as one stream of every agent's
 * events, as `Agent.stream`); when a call's successful result hands work on (a
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
 * A handoff counts when the call's value has a `__handoff` key (the marker: a malformed payload there
 * is refused), or a `handoff` key holding a well-formed payload (a tool whose output merely has a
 * field named `handoff` is not handing over), or when a middleware recorded one (`audit.handoff`).
 *
 * Each agent's run is a run of its own: the first has the caller's `RunContext`, the k-th receiving
 * one the run id `<run id>/handoff-<k>`, so each keeps its own gap-free event sequence. One agent's
 * part of the conversation is a {@link Leg} ({@link start}, {@link next}): `run`, `stream` and the
 * durable agent (`tinyagents/durable`) each run the legs with their own steps.
 */
import { Effect, Predicate, Result, type Stream } from "effect"
import * as Agent from "./Agent.ts"
import * as AgentTool from "./AgentTool.ts"
import * as ChatModel from "./ChatModel.ts"
import { eventStream } from "./internal/eventStream.ts"
import * as Handoffs from "./internal/handoff.ts"
import { provideModel } from "./internal/model.ts"
import { normalize } from "../governance/middleware/HandoffArtifact.ts"
import * as ToolError from "../contract/ToolError.ts"
import type * as ToolResult from "../contract/ToolResult.ts"
import type * as ToolEvent from "../contract/ToolEvent.ts"
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

/**
 * The handoff a successful result carries, unchecked: the `__handoff` marker's payload (whatever it
 * holds), a well-formed payload under `handoff`, else the one a middleware recorded (`audit.handoff`).
 */
const payloadOf = (result: ToolResult.ToolResult, current: string): unknown => {
  const value = result.value
  if (Predicate.isObject(value) && !Array.isArray(value)) {
    const fields = value as Record<string, unknown>
    if (fields["__handoff"] !== undefined) return fields["__handoff"]
    const named = fields["handoff"]
    if (named !== undefined && Result.isSuccess(normalize(named, current))) return named
  }
  return result.audit?.handoff
}

/** The middleware that checks each handoff of `current`'s calls (see the module comment). */
const guard = (registered: ReadonlyArray<string>, current: string, exhausted: number | undefined) =>
  Middleware.make({
    name: "handoff",
    after: (invocation, result) => {
      if (result.isError) return Effect.succeed(result)
      const payload = payloadOf(result, current)
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
 * One agent's part of a conversation: who runs, with which run options (the handoff check installed,
 * the messages the input filter gave it), and the transfers before it. {@link start} makes the first,
 * {@link next} the one a finished run hands on to.
 */
export interface Leg<R, MR = never> {
  /** The registered name of the agent that runs. */
  readonly agent: string
  /** 0 for the starting agent, k for the k-th receiving one. */
  readonly index: number
  /** The agent's run options (its model aside). */
  readonly options: Agent.RunOptions<R, MR>
  readonly transfers: ReadonlyArray<Transfer>
  /**
   * Runs `effect` as this leg: with the agent's own model (if it has one) and, for a receiving agent,
   * the run id `<run id>/handoff-<k>` (turn 0).
   */
  readonly within: <A, E, R2>(effect: Effect.Effect<A, E, R2>) => Effect.Effect<A, E, R2 | RunContext>
}

const legOf = <R, MR>(
  options: Options<R, MR>,
  current: string,
  messages: ReadonlyArray<ChatModel.Message>,
  transfers: ReadonlyArray<Transfer>
): Leg<R, MR> => {
  const registered = Object.keys(options.agents)
  const maxHandoffs = options.maxHandoffs ?? defaultMaxHandoffs
  const { model, middleware, ...agent } = options.agents[current]!
  const exhausted = transfers.length >= maxHandoffs ? maxHandoffs : undefined
  const index = transfers.length
  return {
    agent: current,
    index,
    transfers,
    options: {
      ...agent,
      name: agent.name ?? current,
      messages,
      middleware: [guard(registered, current, exhausted), ...middlewareOf(middleware)],
      handoffs: registered.filter((name) => name !== current),
      ...(options.cancelWhen === undefined ? {} : { cancelWhen: options.cancelWhen })
    },
    within: (effect) =>
      Effect.flatMap(RunContext, (base) =>
        provideModel(effect, model).pipe(
          Effect.provideService(RunContext, index === 0 ? base : { ...base, runId: `${base.runId}/handoff-${index}`, turn: 0 })
        ))
  }
}

/** The first leg: `options.start` on `options.messages`. Dies when `start` is not a registered agent (a bug). */
export const start = <R, MR = never>(options: Options<R, MR>): Effect.Effect<Leg<R, MR>> =>
  Effect.suspend(() =>
    options.agents[options.start] === undefined
      ? Effect.die(new Error(`Handoff: no agent named ${JSON.stringify(options.start)} is registered`))
      : Effect.succeed(legOf(options, options.start, options.messages, []))
  )

/**
 * The leg `result` (the run of `leg`) hands on to: the receiving agent, seeing what the input filter
 * makes of the conversation; `undefined` when the run ended the conversation.
 */
export const next = <R, MR = never>(
  options: Options<R, MR>,
  leg: Leg<R, MR>,
  result: Agent.AgentResult<unknown, unknown>
): Leg<R, MR> | undefined => {
  const last = result.transcript.at(-1)
  const found = result.reason === "handoff" && last?.role === "tool"
    ? Handoffs.find(last.results, Object.keys(options.agents))
    : undefined
  if (found === undefined) return undefined
  const { handoff } = found
  const transfer: Transfer = { from: leg.agent, to: handoff.target, task: handoff.task, toolCallId: found.result.toolCallId }
  const messages = (options.inputFilter ?? wholeHistory)({
    from: leg.agent,
    to: handoff.target,
    handoff,
    history: result.transcript.filter((message) => message.role !== "system")
  })
  return legOf(options, handoff.target, messages, [...leg.transfers, transfer])
}

/** The legs run one after the other, each on the plain steps (`live`: as `Agent.stream` runs them). */
const conversation = <R, MR>(
  options: Options<R, MR>,
  live: boolean
): Effect.Effect<HandoffResult, Agent.AgentFailed, ChatModel.ChatModel | Agent.Requirements<R | MR>> =>
  Effect.gen(function*() {
    let leg = yield* start(options)
    let usage = ChatModel.noUsage
    for (;;) {
      const runOptions = leg.options
      const result = yield* leg.within(Agent.loopWith(runOptions, (executor) => Agent.directSteps(runOptions, executor, live)))
      usage = ChatModel.addUsage(usage, result.usage)
      const following = next(options, leg, result)
      if (following === undefined) return { ...result, usage, agent: leg.agent, transfers: leg.transfers }
      leg = following
    }
  })

/**
 * Runs the conversation from `start`, handing it over between the registered agents until one of them
 * ends it (a final answer, `max_turns`, `return_direct`, cancellation) or fails (`AgentFailed`).
 */
export const run = <R, MR = never>(
  options: Options<R, MR>
): Effect.Effect<HandoffResult, Agent.AgentFailed, ChatModel.ChatModel | Executor.Requirements<R | MR>> =>
  conversation(options, false)

/** Options of {@link stream}. */
export interface StreamOptions<R, MR = never> extends Options<R, MR> {
  /** Events buffered between the agents' loops and the consumer before they wait. Default 64. */
  readonly bufferSize?: number
}

/**
 * The conversation of {@link run} as one stream of events, as `Agent.stream` has them: the first
 * agent's (text deltas and decided calls included), its `agent.handoff` and `agent.finished` (reason
 * `handoff`), then the receiving agent's (run id `<run id>/handoff-<k>`), ..., last the
 * `agent.finished` of the agent that ended it. The stream then ends, or fails with `AgentFailed`.
 * Ending it early stops the agent running then, as `Agent.stream` does.
 */
export const stream = <R, MR = never>(
  options: StreamOptions<R, MR>
): Stream.Stream<ToolEvent.Event, Agent.AgentFailed, ChatModel.ChatModel | Agent.Requirements<R | MR>> =>
  eventStream(conversation(options, true), options.bufferSize)
