/**
 * The agent loop: ask the model with this turn's advertised tools, check its
 * calls at the boundary (fail closed), run them as one bounded batch, append
 * the tool results in call order, and repeat until a final answer, `maxTurns`,
 * a `returnDirect` tool, or cancellation. Returns the transcript (tool call
 * arguments in it redacted per each tool's `safety.redact`) with usage and
 * every `ToolResult`; fatal errors end the run with a typed `AgentFailed`.
 * Spans: `invoke_agent` for the run, `agent_turn` per turn, around the turn's
 * `chat` (the model call) and `execute_tool` (each call) spans.
 */
import { Data, Effect } from "effect"
import * as ChatModel from "./ChatModel.ts"
import type { EventSink } from "../runtime/EventSink.ts"
import * as Executor from "../runtime/Executor.ts"
import * as Tracing from "../runtime/internal/executor/Tracing.ts"
import { RunContext } from "../runtime/RunContext.ts"
import type { ToolCall } from "../contract/ToolCall.ts"
import type { ToolError } from "../contract/ToolError.ts"
import { redactArguments } from "../internal/redact.ts"
import * as ToolRegistry from "../contract/ToolRegistry.ts"
import * as ToolResult from "../contract/ToolResult.ts"

/** What `selectTools` sees each turn. */
export interface TurnView<R> {
  readonly turn: number
  readonly transcript: ReadonlyArray<ChatModel.Message>
  readonly registry: ToolRegistry.ToolRegistry<R>
}

export interface RunOptions<R, MR = never> extends Executor.Options<MR> {
  /** The agent's name: `gen_ai.agent.name` on the run's `invoke_agent` span. */
  readonly name?: string
  readonly system?: string
  /** The conversation so far (usually one user message). */
  readonly messages: ReadonlyArray<ChatModel.Message>
  readonly tools: ToolRegistry.ToolRegistry<R>
  /** Default 10. */
  readonly maxTurns?: number
  /** The tools advertised each turn: names (canonical or original), or an `Advertised` view. Default: all. */
  readonly selectTools?: (view: TurnView<R>) => ReadonlyArray<string> | ToolRegistry.Advertised<R>
  /** Completing this effect cancels the run (calls in flight are cancelled and answered). */
  readonly cancelWhen?: Effect.Effect<unknown>
}

export type StopReason = "final_answer" | "max_turns" | "return_direct" | "cancelled"

export interface AgentResult {
  readonly text: string
  readonly reason: StopReason
  readonly turns: number
  readonly transcript: ReadonlyArray<ChatModel.Message>
  readonly results: ReadonlyArray<ToolResult.ToolResult>
  readonly usage: ChatModel.Usage
}

/** The run stopped on a fatal error. The transcript answers every call id the model sent. */
export class AgentFailed extends Data.TaggedError("AgentFailed")<{
  readonly reason: "tool" | "model"
  readonly error: ToolError | ChatModel.ChatModelError
  readonly turns: number
  readonly transcript: ReadonlyArray<ChatModel.Message>
  readonly results: ReadonlyArray<ToolResult.ToolResult>
}> {
  override get message(): string {
    return `agent run failed (${this.reason}) on turn ${this.turns}: ${this.error.message}`
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

/** Runs the loop. Requires a `ChatModel`, the run's `RunContext`, an `EventSink`, stores, and the tools' services. */
export const run = <R, MR = never>(
  options: RunOptions<R, MR>
): Effect.Effect<AgentResult, AgentFailed, ChatModel.ChatModel | Executor.Requirements<R | MR>> =>
  Effect.gen(function*() {
    const model = yield* ChatModel.ChatModel
    const base = yield* RunContext
    yield* Effect.annotateCurrentSpan({ "gen_ai.conversation.id": base.threadId, "tinyagents.run.id": base.runId })
    const executor = yield* Executor.make(options.tools, options)
    const maxTurns = options.maxTurns ?? 10
    const transcript: Array<ChatModel.Message> = [
      ...(options.system === undefined ? [] : [{ role: "system" as const, content: options.system }]),
      ...options.messages
    ]
    const results: Array<ToolResult.ToolResult> = []
    let usage = ChatModel.noUsage
    if (options.cancelWhen !== undefined) {
      yield* Effect.forkScoped(Effect.andThen(options.cancelWhen, executor.runCancel.cancel("cancelled by the caller")))
    }

    const finish = (reason: StopReason, turns: number, text: string) =>
      Effect.as(
        executor.emit({ _tag: "agent.finished", turns, reason }),
        { text, reason, turns, transcript, results, usage } satisfies AgentResult
      )
    const fail = (reason: "tool" | "model", error: ToolError | ChatModel.ChatModelError, turns: number) =>
      executor.emit({ _tag: "agent.finished", turns, reason: "failed" }).pipe(
        Effect.andThen(Effect.fail(new AgentFailed({ reason, error, turns, transcript, results })))
      )

    for (let turn = 0; turn < maxTurns; turn++) {
      if (yield* executor.runCancel.isCancelled) return yield* finish("cancelled", turn, "")
      const done = yield* Tracing.turn(turn, Effect.gen(function*() {
        const selected = options.selectTools?.({ turn, transcript, registry: options.tools })
        const advertised = selected === undefined
          ? ToolRegistry.all(options.tools)
          : Array.isArray(selected)
          ? ToolRegistry.advertise(options.tools, selected as ReadonlyArray<string>)
          : selected as ToolRegistry.Advertised<R>
        const inTurn = <A, E, R2>(effect: Effect.Effect<A, E, R2>) =>
          Effect.provideService(effect, RunContext, { ...base, turn })
        yield* inTurn(executor.emit({ _tag: "agent.turn_started", turn, advertised: advertised.names }))
        const response = yield* Effect.result(Tracing.chat(model.generate({ messages: transcript, tools: advertised.specs })))
        if (response._tag === "Failure") return yield* inTurn(fail("model", response.failure, turn + 1))
        const reply = response.success
        usage = ChatModel.addUsage(usage, reply.usage)
        transcript.push({ role: "assistant", content: reply.text, toolCalls: redactCalls(options.tools, reply.toolCalls) })
        yield* inTurn(executor.emit({
          _tag: "agent.model_responded",
          turn,
          toolCalls: reply.toolCalls.length,
          text: reply.text,
          usage: reply.usage
        }))
        if (reply.toolCalls.length === 0) return yield* inTurn(finish("final_answer", turn + 1, reply.text))

        const batch = yield* Effect.result(
          inTurn(executor.runBatch(reply.toolCalls, { advertised }))
        )
        const answered = batch._tag === "Success" ? batch.success : batch.failure.results
        results.push(...answered)
        transcript.push({ role: "tool", results: answered })
        if (batch._tag === "Failure") return yield* inTurn(fail("tool", batch.failure.errors[0]!, turn + 1))

        const direct = answered.find((r) => !r.isError && options.tools.get(r.name)?.tool.options.returnDirect === true)
        if (direct !== undefined) return yield* inTurn(finish("return_direct", turn + 1, ToolResult.textOf(direct)))
        if (yield* executor.runCancel.isCancelled) return yield* inTurn(finish("cancelled", turn + 1, ""))
        return undefined
      }))
      if (done !== undefined) return done
    }
    return yield* Effect.provideService(finish("max_turns", maxTurns, ""), RunContext, { ...base, turn: maxTurns })
  }).pipe(Effect.scoped, (effect) => Tracing.agent(options.name, effect)) as Effect.Effect<AgentResult, AgentFailed, ChatModel.ChatModel | Executor.Requirements<R | MR>>

/** The services an agent run needs besides the model and the tools' own: for typing layers. */
export type Services = RunContext | EventSink
