/**
 * The agent loop: ask the model with this turn's advertised tools, check its
 * calls at the boundary (fail closed), run them as one bounded batch, append
 * the tool results in call order, and repeat until a final answer, `maxTurns`,
 * a `returnDirect` tool, or cancellation. Returns the transcript (tool call
 * arguments in it redacted per each tool's `safety.redact`) with usage and
 * every `ToolResult`; fatal errors end the run with a typed `AgentFailed`.
 * Spans: `invoke_agent` for the run, `agent_turn` per turn, around the turn's
 * `chat` (the model call) and `execute_tool` (each call) spans.
 *
 * One loop, two ways to consume it. It always reads the model's answer as a
 * stream (`ChatModel.stream`) and reports its events to the `EventSink`.
 * {@link run} runs it to the end and returns the `AgentResult`. {@link stream}
 * runs the same loop and is the `Stream` of its events: every event the sink
 * receives, in the same order, plus the model's text as it arrives
 * (`agent.text_delta`) and each tool call as soon as it is decided
 * (`agent.tool_call`), which a streamed run also sends to the sink. A bounded
 * buffer sits between the loop and the consumer: a slow consumer slows the
 * loop (the event sink waits), nothing is dropped.
 *
 * The loop's two steps, asking the model and running a turn's calls, are parameters
 * ({@link loopWith}, {@link Steps}): `tinyagents/durable` runs the same loop with steps that
 * journal each model turn and each call as workflow activities.
 */
import { Data, Effect, Result, Schema, Stream } from "effect"
import * as ChatModel from "./ChatModel.ts"
import * as Output from "./internal/output.ts"
import { eventStream } from "./internal/eventStream.ts"
import * as Partials from "./internal/partialJson.ts"
import { InvalidArguments, MalformedArguments } from "../contract/ToolError.ts"
import { stringify } from "../internal/json.ts"
import { EventSink } from "../runtime/EventSink.ts"
import type * as ToolEvent from "../contract/ToolEvent.ts"
import * as Executor from "../runtime/Executor.ts"
import * as Tracing from "./internal/tracing.ts"
import { RunContext } from "../runtime/RunContext.ts"
import type { ToolCall } from "../contract/ToolCall.ts"
import type { ToolError } from "../contract/ToolError.ts"
import { redactError } from "../internal/redact/errors.ts"
import { redactArguments, redactStoredText } from "../internal/redact/policy.ts"
import * as ToolRegistry from "../contract/ToolRegistry.ts"
import * as ToolSearch from "./ToolSearch.ts"
import * as ToolResult from "../contract/ToolResult.ts"
import { UsageMeter } from "./internal/usage.ts"
import type { Context } from "effect"
import * as Handoffs from "./internal/handoff.ts"
import * as AgentTool from "./AgentTool.ts"
import * as AgentState from "./AgentState.ts"
import * as ToolErrors from "../contract/ToolError.ts"

/** What `selectTools` sees each turn. */
export interface TurnView<R, St = unknown> {
  readonly turn: number
  readonly transcript: ReadonlyArray<ChatModel.Message>
  readonly registry: ToolRegistry.ToolRegistry<R>
  /** The run's state (`RunOptions.state`) as the previous turns' updates left it; `undefined` without one. */
  readonly state: St
}

/** What `output` accepts: a schema decoding without services, with an object (`Schema.Struct`) at the root. */
export type OutputSchema = Schema.ConstraintDecoder<unknown>

export interface RunOptions<R, MR = never, S extends OutputSchema = never, St = unknown> extends Executor.Options<MR> {
  /** The agent's name: `gen_ai.agent.name` on the run's `invoke_agent` span. */
  readonly name?: string
  /** The system prompt; a function of the run's state (`state`) is asked again each turn. */
  readonly system?: string | ((state: St) => string)
  /** The conversation so far (usually one user message). */
  readonly messages: ReadonlyArray<ChatModel.Message>
  readonly tools: ToolRegistry.ToolRegistry<R>
  /** Default 10. */
  readonly maxTurns?: number
  /**
   * The tools advertised each turn: names (canonical or original), or an `Advertised` view. Default: all.
   * A name the registry lacks is a bug: the run dies with `ToolRegistry.UnknownToolNames` naming it.
   */
  readonly selectTools?: (view: TurnView<R, St>) => ReadonlyArray<string> | ToolRegistry.Advertised<R>
  /** Completing this effect cancels the run (calls in flight are cancelled and answered). */
  readonly cancelWhen?: Effect.Effect<unknown>
  /**
   * The agents this run may hand the conversation over to (`Handoff.run` sets it): a call whose
   * successful result carries a handoff to one of them (`audit.handoff`, as the `handoffArtifact`
   * middleware records it) ends the run after its turn, with an `agent.handoff` event and reason `handoff`.
   */
  readonly handoffs?: ReadonlyArray<string>
  /**
   * A typed final answer: the run ends when the model gives a value this schema decodes, which
   * becomes `AgentResult.output`. A model with `structuredOutput` is asked through its provider's
   * structured output; any other gets a final-answer tool (`outputName`). A rejected answer goes
   * back to the model with the schema's issues, at most `outputRetries` times; then the run fails
   * with `AgentFailed` (reason `output`, an `OutputInvalid`). The schema's root must be an object.
   */
  readonly output?: S
  /** The answer's name: the final-answer tool's, the provider's schema name. Default `final_answer`. */
  readonly outputName?: string
  /** Rejected final answers sent back for repair before the run fails. Default 2. */
  readonly outputRetries?: number
  /**
   * The run's state (`AgentState.make`): tools read it and record updates (listing `AgentState` in
   * their `services`); after each turn's batch the updates of the calls that succeeded apply in call
   * order (`agent.state` events), a refused one answers its call with a repairable error. The next
   * turn's `selectTools`, `system`, middleware and tools see the new state; `AgentResult.state` is the last.
   */
  readonly state?: AgentState.Definition<St, any>
  /**
   * Tool search (`ToolSearch`): deferred tools are not advertised until the model finds them with
   * the search tool this adds (`search_tools`); each search's finds are reported
   * (`agent.tools_revealed`) and advertised from the next turn. Native where the model's provider
   * has tool search (`ChatModel.toolSearch`), portable otherwise.
   */
  readonly toolSearch?: ToolSearch.Options
}

export type StopReason = "final_answer" | "max_turns" | "return_direct" | "cancelled" | "handoff"

/**
 * How a run ended. `Output`: the type of the typed final answer (`never`: the run asked for none);
 * `State`: the type of the run's state (`RunOptions.state`).
 */
export interface AgentResult<Output = never, State = unknown> {
  readonly text: string
  readonly reason: StopReason
  readonly turns: number
  readonly transcript: ReadonlyArray<ChatModel.Message>
  readonly results: ReadonlyArray<ToolResult.ToolResult>
  readonly usage: ChatModel.Usage
  /** The decoded final answer: present when the run asked for `output` and ended with `final_answer`. */
  readonly output?: Output
  /** The run's state as its last applied update left it: present when the run declared `state`. */
  readonly state?: State
}

/**
 * The model's final answer did not decode with the run's output schema, after `attempts` answers
 * (the first and each repair). `error` holds the issues of the last one.
 */
export class OutputInvalid extends Schema.TaggedError<OutputInvalid>()("OutputInvalid", {
  /** The answer's name (`outputName`). */
  outputName: Schema.String,
  attempts: Schema.Number,
  error: Schema.Union([MalformedArguments, InvalidArguments])
}) {
  override get message(): string {
    return `the final answer did not match the output schema after ${this.attempts} attempt${
      this.attempts === 1 ? "" : "s"
    }: ${this.error.message}`
  }
}

/** The run stopped on a fatal error. The transcript answers every call id the model sent. */
export class AgentFailed extends Data.TaggedError("AgentFailed")<{
  /** `tool`: a fatal tool error; `model`: the model failed; `output`: no valid final answer (`OutputInvalid`). */
  readonly reason: "tool" | "model" | "output"
  readonly error: ToolError | ChatModel.ChatModelError | OutputInvalid
  readonly turns: number
  readonly transcript: ReadonlyArray<ChatModel.Message>
  readonly results: ReadonlyArray<ToolResult.ToolResult>
}> {
  override get message(): string {
    // Turns are numbered from 0, as in RunContext.turn, events and receipts; `turns` counts them.
    return `agent run failed (${this.reason}) in turn ${this.turns - 1}: ${this.error.message}`
  }
}

/**
 * The model's tool calls as the transcript keeps them: arguments under a tool's `safety.redact`
 * (keys and patterns) are redacted, so the transcript (and the history sent back to the provider,
 * and `AgentFailed`) never holds them; the executor runs the calls as the model sent them.
 */
const redactCalls = <R>(
  tools: ToolRegistry.ToolRegistry<R>,
  calls: ReadonlyArray<ToolCall>
): ReadonlyArray<ToolCall> => {
  let changed = false
  const out = calls.map((call) => {
    const policy = tools.get(call.name)?.spec.safety.redact
    if (policy === undefined) return call
    const args = redactArguments(call.arguments, policy)
    if (args === call.arguments) return call
    changed = true
    return { ...call, arguments: args }
  })
  return changed ? out : calls
}

/**
 * The two steps of a turn that the loop delegates: asking the model (`ask`) and running the turn's
 * calls (`batch`). {@link run} and {@link stream} use {@link directSteps}; the durable agent
 * (`tinyagents/durable`) passes steps that journal each model turn and each call as workflow
 * activities. `X`: what the steps need besides the loop's own services.
 */
export interface Steps<X> {
  /** The model's whole answer to `request` (turn `turn`, from 0). */
  readonly ask: (
    request: ChatModel.Request,
    turn: number
  ) => Effect.Effect<ChatModel.Response, ChatModel.ChatModelError, RunContext | EventSink | X>
  /** Runs the turn's calls: every call answered, in call order; `BatchFailed` for fatal errors. */
  readonly batch: (
    calls: ReadonlyArray<ToolCall>,
    context: { readonly turn: number; readonly advertised: ToolRegistry.Advertised<unknown> }
  ) => Effect.Effect<ReadonlyArray<ToolResult.ToolResult>, Executor.BatchFailed, X>
  /**
   * `ask` sends `Request.output` to a model that answers it natively (`ChatModel.structuredOutput`);
   * otherwise a run with `output` advertises the final-answer tool.
   */
  readonly structuredOutput?: boolean
  /** `ask` sends `Request.toolSearch` to a model with tool search of its own (`ChatModel.toolSearch`). */
  readonly toolSearch?: boolean
}

/**
 * The plain steps: the model's answer read from its stream (with `live`, reporting its text deltas
 * and each decided call as they arrive), and the executor's `runBatch`.
 */
export const directSteps = <R, MR, S extends OutputSchema = never, St = unknown>(
  options: RunOptions<R, MR, S, St>,
  executor: Executor.Executor<R | MR>,
  live: boolean
): Effect.Effect<Steps<Executor.Requirements<R | MR>>, never, ChatModel.ChatModel> =>
  Effect.map(ChatModel.ChatModel, (model): Steps<Executor.Requirements<R | MR>> => ({
    structuredOutput: model.structuredOutput === true,
    toolSearch: model.toolSearch === true,
    ask: (request, turn) => {
      let response: ChatModel.Response | undefined
      // the typed final answer as it arrives: the text (structured output) or the final-answer call's arguments
      const outputName = live && options.output !== undefined ? options.outputName ?? Output.defaultName : undefined
      let outputCall: string | undefined
      // parsed as it grows, less often once long (the parse work stays linear in the answer's length)
      const outputText = Partials.partials()
      let lastPartial: string | undefined
      const outputDelta = (partial: unknown): Effect.Effect<void, never, RunContext | EventSink> => {
        const shown = partial === undefined ? undefined : stringify(partial)
        if (shown === undefined || shown === lastPartial) return Effect.void
        lastPartial = shown
        return executor.emit({ _tag: "agent.output_delta", turn, partial })
      }
      const onPart = (part: ChatModel.StreamPart): Effect.Effect<void, never, RunContext | EventSink> => {
        switch (part._tag) {
          case "Finished":
            response = part.response
            // the whole answer's partial, if the last deltas were not parsed
            return outputName === undefined ? Effect.void : outputDelta(outputText.flush())
          case "ToolCallStarted":
            if (outputName !== undefined && outputCall === undefined && part.name === outputName) outputCall = part.id
            return Effect.void
          case "ToolCallDelta":
            return outputCall !== undefined && part.id === outputCall
              ? outputDelta(outputText.push(part.argumentsDelta))
              : Effect.void
          case "TextDelta":
            return live && part.text !== ""
              ? Effect.andThen(
                executor.emit({ _tag: "agent.text_delta", turn, text: part.text }),
                outputName !== undefined && request.output !== undefined ? outputDelta(outputText.push(part.text)) : Effect.void
              )
              : Effect.void
          case "ToolCall":
            return live
              ? executor.emit({
                _tag: "agent.tool_call",
                turn,
                toolCallId: part.call.id,
                toolName: part.call.name,
                arguments: redactArguments(part.call.arguments, options.tools.get(part.call.name)?.spec.safety.redact)
              })
              : Effect.void
          default:
            return Effect.void
        }
      }
      return Stream.runForEach(model.stream(request), onPart).pipe(
        Effect.flatMap(() =>
          response === undefined
            ? Effect.fail(
              new ChatModel.ChatModelError({
                reason: "transport",
                message: "the model's stream ended before it finished",
                retryable: true
              })
            )
            : Effect.succeed(response)
        )
      )
    },
    batch: (calls, { advertised }) => executor.runBatch(calls, { advertised })
  }))

/**
 * The loop, with its two steps made by `steps` from the run's executor: the one loop behind
 * {@link run}, {@link stream} (both with {@link directSteps}) and the durable agent. It reports the
 * lifecycle events itself; whatever else is reported (text deltas, decided calls) is up to the steps.
 */
export const loopWith = <R, MR, X, Y, S extends OutputSchema = never, St = unknown>(
  options: RunOptions<R, MR, S, St>,
  steps: (executor: Executor.Executor<R | MR>) => Effect.Effect<Steps<X>, never, Y>
): Effect.Effect<
  AgentResult<S["Type"], St>,
  AgentFailed,
  Exclude<Executor.Requirements<R | MR> | X | Y, AgentState.AgentState>
> =>
  Effect.suspend(() => {
    // the run's state: tools read it through the AgentState service; updates apply after each batch
    const state = AgentState.cell(options.state)
    return Effect.provideService(loopBody(options, steps, state), AgentState.AgentState, state.service)
  }) as any

const loopBody = <R, MR, X, Y, S extends OutputSchema, St>(
  options: RunOptions<R, MR, S, St>,
  steps: (executor: Executor.Executor<R | MR>) => Effect.Effect<Steps<X>, never, Y>,
  state: AgentState.Cell
): Effect.Effect<AgentResult<S["Type"], St>, AgentFailed, Executor.Requirements<R | MR> | X | Y> =>
  Effect.gen(function*() {
    const base = yield* RunContext
    yield* Effect.annotateCurrentSpan({ "gen_ai.conversation.id": base.threadId, "tinyagents.run.id": base.runId })
    // tool search: the run's tools and the search tool; what the transcript's searches revealed
    const search = options.toolSearch === undefined
      ? undefined
      : yield* Effect.orDie(Effect.fromResult(ToolSearch.plan(options.tools, options.toolSearch)))
    const revealed = search === undefined ? undefined : ToolSearch.revealedIn(options.messages, search.tool)
    const executor = yield* Executor.make(search?.tools ?? options.tools, options)
    const maxTurns = options.maxTurns ?? 10
    const systemPrompt = (): string | undefined =>
      typeof options.system === "function" ? options.system(state.get() as St) : options.system
    const firstSystem = systemPrompt()
    const transcript: Array<ChatModel.Message> = [
      ...(firstSystem === undefined ? [] : [{ role: "system" as const, content: firstSystem }]),
      ...options.messages
    ]
    const results: Array<ToolResult.ToolResult> = []
    let usage = ChatModel.noUsage
    // usage of runs nested in this run's calls (AgentTool), folded in after each batch; all of it also
    // goes to the run around this one, at once (a run interrupted mid-batch, its parent cancelled,
    // has passed on what its nested runs used)
    const outer = yield* UsageMeter
    let nested = ChatModel.noUsage
    const meter = {
      add: (more: ChatModel.Usage) => {
        nested = ChatModel.addUsage(nested, more)
        outer.add(more)
      }
    }
    if (options.cancelWhen !== undefined) {
      yield* Effect.forkScoped(Effect.andThen(options.cancelWhen, executor.runCancel.cancel("cancelled by the caller")))
    }
    // the typed final answer: a schema no model can be shown, or a final-answer tool that shadows a tool, is a bug
    const output = options.output === undefined
      ? undefined
      : yield* Effect.orDie(Effect.fromResult(Output.plan(options.output, { name: options.outputName })))
    if (output !== undefined && (search?.tools ?? options.tools).get(output.name) !== undefined) {
      return yield* Effect.die(
        new Error(`the output name ${output.name} is a registered tool's${
          search !== undefined && output.name === search.tool ? " (the tool search's)" : ""
        }; choose another outputName`)
      )
    }
    const outputRetries = options.outputRetries ?? 2
    let rejected = 0

    const finish = (reason: StopReason, turns: number, text: string, answer?: { readonly value: S["Type"] }) =>
      Effect.suspend(() =>
        Effect.as(
          executor.emit({ _tag: "agent.finished", turns, reason, text, usage }),
          {
            text,
            reason,
            turns,
            transcript,
            results,
            usage,
            ...(answer === undefined ? {} : { output: answer.value }),
            ...(options.state === undefined ? {} : { state: state.get() as St })
          } satisfies AgentResult<S["Type"], St>
        )
      )
    const fail = (
      reason: AgentFailed["reason"],
      error: ToolError | ChatModel.ChatModelError | OutputInvalid,
      turns: number
    ) =>
      Effect.suspend(() => executor.emit({ _tag: "agent.finished", turns, reason: "failed", text: "", usage })).pipe(
        Effect.andThen(Effect.fail(new AgentFailed({ reason, error, turns, transcript, results })))
      )

    const step = yield* steps(executor)

    // the updates the batch's successful calls recorded, applied in call order (all of a call's, or
    // none: a refused one turns its call's result into a repairable error, redacted as the tool's
    // errors are, and is reported as an `agent.state` event with `refused`); a failed call's are dropped
    const settle = (answered: ReadonlyArray<ToolResult.ToolResult>, calls: ReadonlyArray<ToolCall>, turn: number) =>
      Effect.gen(function*() {
        const settled: Array<ToolResult.ToolResult> = []
        const outcomes = state.settle(answered)
        for (const [i, result] of answered.entries()) {
          const applied = outcomes[i]!
          if (Result.isFailure(applied)) {
            const { message, update, thrown } = applied.failure
            const call = { id: result.toolCallId, name: result.name, ...(result.provider === undefined ? {} : { provider: result.provider }) }
            const policy = options.tools.get(result.name)?.spec.safety.redact
            const refused = redactError(
              ToolErrors.repairable(`the state update was refused: ${message}`),
              policy,
              calls[i]?.arguments
            )
            yield* executor.emit({
              _tag: "agent.state",
              turn,
              toolCallId: result.toolCallId,
              toolName: result.name,
              state: state.json(),
              refused: refused.message,
              ...(update === undefined ? {} : { update }),
              ...(thrown === undefined ? {} : { thrown: redactStoredText(thrown, policy, calls[i]?.arguments) })
            })
            settled.push(ToolResult.fromError(call, refused, result.elapsed))
            continue
          }
          for (const update of applied.success) {
            yield* executor.emit({
              _tag: "agent.state",
              turn,
              toolCallId: result.toolCallId,
              toolName: result.name,
              update: update.update,
              state: update.stateJson
            })
          }
          settled.push(result)
        }
        return settled
      })

    for (let turn = 0; turn < maxTurns; turn++) {
      if (yield* executor.runCancel.isCancelled) return yield* finish("cancelled", turn, "")
      const done = yield* Tracing.turn(turn, Effect.gen(function*() {
        if (typeof options.system === "function" && transcript[0]?.role === "system") {
          transcript[0] = { role: "system", content: systemPrompt() ?? "" }
        }
        const selected = options.selectTools?.({ turn, transcript, registry: options.tools, state: state.get() as St })
        const chosen = selected === undefined
          ? ToolRegistry.all(options.tools)
          : Array.isArray(selected)
          ? yield* Effect.orDie(ToolRegistry.advertise(options.tools, selected as ReadonlyArray<string>))
          : selected as ToolRegistry.Advertised<R>
        const searching = search === undefined
          ? undefined
          : ToolSearch.turnTools(search, chosen, revealed!, turn, step.toolSearch === true)
        const advertised = searching?.advertised ?? chosen
        const shown = searching?.shown ?? advertised.specs
        const searchRequest = searching?.request === undefined ? {} : { toolSearch: searching.request }
        const inTurn = <A, E, R2>(effect: Effect.Effect<A, E, R2>) =>
          Effect.provideService(effect, RunContext, { ...base, turn })
        yield* inTurn(executor.emit({ _tag: "agent.turn_started", turn, advertised: advertised.names }))
        const request: ChatModel.Request = output === undefined
          ? { messages: transcript, tools: shown, ...searchRequest }
          : step.structuredOutput === true
          ? { messages: transcript, tools: shown, output: output.format, ...searchRequest }
          : { messages: transcript, tools: [...shown, output.tool], answerTool: output.name, ...searchRequest }
        const response = yield* Effect.result(Tracing.chat(inTurn(step.ask(request, turn))))
        if (response._tag === "Failure") return yield* inTurn(fail("model", response.failure, turn + 1))
        // cancelled while the model answered: the answer is not acted on (its calls never start)
        if (yield* executor.runCancel.isCancelled) return yield* inTurn(finish("cancelled", turn, ""))
        const reply = response.success
        usage = ChatModel.addUsage(usage, reply.usage)
        outer.add(reply.usage)
        transcript.push({ role: "assistant", content: reply.text, toolCalls: redactCalls(options.tools, reply.toolCalls) })
        yield* inTurn(executor.emit({
          _tag: "agent.model_responded",
          turn,
          toolCalls: reply.toolCalls.length,
          text: reply.text,
          usage: reply.usage
        }))
        // with `output`, an answer is a text (structured output) or final-answer calls alone; it is
        // decoded, and a rejected one goes back for repair (at most outputRetries times)
        const finalCalls = output === undefined ? [] : reply.toolCalls.filter((call) => call.name === output.name)
        if (output !== undefined && finalCalls.length === reply.toolCalls.length) {
          const viaTool = step.structuredOutput !== true
          const first = finalCalls[0]
          let decoded = output.decode(first === undefined ? reply.text : first.arguments)
          if (first === undefined && viaTool && Result.isFailure(decoded) && decoded.failure._tag === "MalformedArguments") {
            decoded = Result.fail(Output.notCalled(output.name))
          }
          if (first !== undefined) {
            transcript.push({
              role: "tool",
              results: finalCalls.map((call, i) =>
                i > 0 ? Output.unread(call) : Result.isSuccess(decoded) ? Output.accepted(call) : ToolResult.fromError(call, decoded.failure)
              )
            })
          }
          if (Result.isSuccess(decoded)) {
            const value = decoded.success
            const json = output.encode(value)
            const text = first === undefined ? reply.text : stringify(json) ?? ""
            return yield* inTurn(Effect.andThen(
              executor.emit({ _tag: "agent.output", turn, output: json }),
              finish("final_answer", turn + 1, text, { value })
            ))
          }
          rejected++
          if (first === undefined) transcript.push(Output.repairMessage(output.name, decoded.failure, viaTool))
          if (rejected > outputRetries) {
            const invalid = new OutputInvalid({ outputName: output.name, attempts: rejected, error: decoded.failure })
            return yield* inTurn(fail("output", invalid, turn + 1))
          }
          return undefined
        }
        if (reply.toolCalls.length === 0) return yield* inTurn(finish("final_answer", turn + 1, reply.text))
        // final-answer calls beside other calls are not read: answered in place, the others run
        const calls = finalCalls.length === 0 ? reply.toolCalls : reply.toolCalls.filter((call) => call.name !== output!.name)

        const batch = yield* Effect.result(
          inTurn(step.batch(calls, { turn, advertised })).pipe(
            Effect.provideService(UsageMeter, meter),
            searching === undefined ? (effect) => effect : ToolSearch.withinTurn(searching)
          )
        )
        usage = ChatModel.addUsage(usage, nested)
        nested = ChatModel.noUsage
        const answered = batch._tag === "Success"
          ? yield* inTurn(settle(batch.success, calls, turn))
          : batch.failure.results
        results.push(...answered)
        const ran = answered[Symbol.iterator]()
        transcript.push({
          role: "tool",
          results: finalCalls.length === 0
            ? answered
            : reply.toolCalls.flatMap((call) => {
              if (call.name === output!.name) return [Output.unread(call)]
              const next = ran.next()
              return next.done === true ? [] : [next.value]
            })
        })
        if (batch._tag === "Failure") return yield* inTurn(fail("tool", batch.failure.errors[0]!, turn + 1))
        if (search !== undefined) {
          for (const result of answered) {
            const names = ToolSearch.revealedBy(result, search.tool)
            if (names.length === 0) continue
            for (const name of names) revealed!.set(name, turn)
            yield* inTurn(executor.emit({
              _tag: "agent.tools_revealed",
              turn,
              toolCallId: result.toolCallId,
              toolName: result.name,
              query: ToolSearch.queryOf(result),
              names
            }))
          }
        }

        const handoff = options.handoffs === undefined ? undefined : Handoffs.find(answered, options.handoffs)
        if (handoff !== undefined) {
          const { source, target, task } = handoff.handoff
          yield* inTurn(executor.emit({
            _tag: "agent.handoff",
            turn,
            toolCallId: handoff.result.toolCallId,
            toolName: handoff.result.name,
            target,
            task,
            ...(source === undefined ? {} : { source })
          }))
          return yield* inTurn(finish("handoff", turn + 1, ToolResult.textOf(handoff.result)))
        }
        const direct = answered.find((r) => !r.isError && options.tools.get(r.name)?.tool.options.returnDirect === true)
        if (direct !== undefined) return yield* inTurn(finish("return_direct", turn + 1, ToolResult.textOf(direct)))
        if (yield* executor.runCancel.isCancelled) return yield* inTurn(finish("cancelled", turn + 1, ""))
        return undefined
      }))
      if (done !== undefined) return done
    }
    return yield* Effect.provideService(finish("max_turns", maxTurns, ""), RunContext, { ...base, turn: maxTurns })
  }).pipe(Effect.scoped, (effect) => Tracing.agent(options.name, effect)) as Effect.Effect<
    AgentResult<S["Type"], St>,
    AgentFailed,
    Executor.Requirements<R | MR> | X | Y
  >

/** The plain loop (see {@link loopWith}). */
const loop = <R, MR, S extends OutputSchema = never, St = unknown>(
  options: RunOptions<R, MR, S, St>,
  live: boolean
): Effect.Effect<AgentResult<S["Type"], St>, AgentFailed, ChatModel.ChatModel | Requirements<R | MR>> =>
  loopWith(options, (executor) => directSteps(options, executor, live))

/**
 * Runs the loop to the end. Requires a `ChatModel`, the run's `RunContext`, an `EventSink`, stores, and the tools' services.
 * With `output`, `AgentResult.output` is the decoded final answer, typed by the schema.
 */
export const run = <R, MR = never, S extends OutputSchema = never, St = unknown>(
  options: RunOptions<R, MR, S, St>
): Effect.Effect<AgentResult<S["Type"], St>, AgentFailed, ChatModel.ChatModel | Requirements<R | MR>> =>
  loop(options, false)

/** Options of {@link stream}. */
export interface StreamOptions<R, MR = never, S extends OutputSchema = never, St = unknown>
  extends RunOptions<R, MR, S, St>
{
  /** Events buffered between the loop and the consumer before the loop waits. Default 64. */
  readonly bufferSize?: number
}

/**
 * The run as a stream of its events (see the module comment): `agent.turn_started`,
 * `agent.text_delta`, `agent.tool_call`, every tool event (`tool.started`, `tool.progress`,
 * `tool.retrying`, `tool.completed`, `tool.failed`, ...), `agent.model_responded`, and last
 * `agent.finished` with the final text and usage. The stream then ends, or fails with
 * `AgentFailed` when the run failed. The loop starts when the stream is read; it waits
 * whenever the buffer is full. Ending the stream early (interrupting it, `Stream.take`)
 * stops the loop: the model's stream is closed and running tools are cancelled, each still
 * reporting its terminal event to the `EventSink`; the stream's scope closes only after they have.
 */
export const stream = <R, MR = never, S extends OutputSchema = never, St = unknown>(
  options: StreamOptions<R, MR, S, St>
): Stream.Stream<ToolEvent.Event, AgentFailed, ChatModel.ChatModel | Requirements<R | MR>> =>
  eventStream(loop(options, true), options.bufferSize)

/** What a run of tools `R` requires: the executor's requirements, less the `AgentState` the loop provides. */
export type Requirements<R> = [Exclude<Executor.Requirements<R>, AgentState.AgentState>][0]

/** The services an agent run needs besides the model and the tools' own: for typing layers. */
export type Services = RunContext | EventSink

/**
 * An agent as a tool: each call runs `agent` as a nested loop on a prompt made from the call's
 * input; its final answer is the tool's output (see `AgentTool`, which this is).
 */
export const asTool: typeof AgentTool.make = (agent, options) => AgentTool.make(agent, options)

/**
 * Where a run counts the token usage of runs nested in its tool calls (each batch gets its own): a
 * runtime that runs a nested agent elsewhere (a durable child run) or replays a call adds its usage here.
 */
export const NestedUsage: Context.Reference<{ readonly add: (usage: ChatModel.Usage) => void }> = UsageMeter
