/**
 * An agent as a tool (`Agent.asTool`, or {@link make}): calling the tool runs a nested agent loop
 * (its own model, tools, system prompt and limits) on a prompt made from the call's input, and the
 * nested run's final answer is the tool's output. It owns the nesting: the nested run's `RunContext`
 * (its run id is `<parent run>/<turn>/<call id>`, the turn the parent's call is in, so that call ids a
 * provider repeats from turn to turn (Gemini's `call_0`) name distinct runs; a retried attempt adds
 * `#<attempt>`; `nesting` names the parent run, call and depth, so every
 * event it reports carries `parentRunId`, `parentCallId` and `depth` and one run's events form a tree),
 * the depth limit, and how the nested run's end becomes the call's outcome. It does not own the loop
 * (`Agent`), nor handing a conversation over to another agent (`Handoff`).
 *
 * Bounds: the nested run is part of its call, so the call's timeout (the tool's `timeout`, else the
 * executor's default), the parent run's cancellation (interrupting the call interrupts the nested
 * model and tools, which report `tool.failed` with reason `cancelled`) and {@link Options.maxDepth}
 * all hold; its own `maxTurns` and `limits` bound its turns and calls. Its token usage is added to the
 * parent run's (`AgentResult.usage`, `agent.finished`), failed or not.
 *
 * The nested run's failure is the call's repairable `ToolFailure` (the calling model reads what went
 * wrong and may answer otherwise): a fatal error in the nested run (`AgentFailed`), a run that ended
 * without an answer (`max_turns`, `cancelled`), an agent with `output` that ended without its typed
 * answer (`return_direct`, `handoff`) with a text its output schema does not decode (a text it decodes
 * is the output), or a depth over the limit (nothing runs). A parent that wants these fatal runs with
 * `repair: false`.
 */
import { type Duration, Effect, type Layer, Result, type Schema } from "effect"
import * as Agent from "./Agent.ts"
import * as ChatModel from "./ChatModel.ts"
import { provideModel } from "./internal/model.ts"
import * as Output from "./internal/output.ts"
import type { Safety } from "../contract/Safety.ts"
import * as Tool from "../contract/Tool.ts"
import * as ToolError from "../contract/ToolError.ts"
import * as ToolInput from "../contract/ToolInput.ts"
import { EventSink } from "../runtime/EventSink.ts"
import type * as Executor from "../runtime/Executor.ts"
import { RunContext } from "../runtime/RunContext.ts"
import { StoreRegistry } from "../runtime/StoreRegistry.ts"
import { ToolCallContext } from "../runtime/ToolCallContext.ts"

/**
 * An agent to run as a tool (or to hand a conversation to, `Handoff`): the options of `Agent.run`
 * without the conversation, and its own model.
 */
export interface Definition<R, MR = never, S extends Agent.OutputSchema = never, St = unknown>
  extends Omit<Agent.RunOptions<R, MR, S, St>, "messages" | "cancelWhen">
{
  /** The agent's model: a `ChatModel` (a layer is built per call). Default: the calling run's model. */
  readonly model?: ChatModel.ChatModelShape | Layer.Layer<ChatModel.ChatModel>
}

/** Nested runs below this depth are refused unless {@link Options.maxDepth} says otherwise. */
export const defaultMaxDepth = 3

export interface Options<Name extends string, Input extends Schema.Top> {
  /** The tool's name (canonical snake_case); also the nested run's agent name when it has none. */
  readonly name: Name
  /** What the agent does: the calling model reads this. */
  readonly description: string
  /** What the calling model passes to the agent. */
  readonly input: Input
  /**
   * The nested run's conversation, from the call's input: a user message's text, or messages.
   * Default: the input's `task` when it is a string, else the input as JSON.
   */
  readonly prompt?: (input: Input["Type"]) => string | ReadonlyArray<ChatModel.Message>
  /**
   * The deepest the nested run may sit: 1 under a top-level run, 2 when that run is itself nested, ...
   * A call that would run deeper is refused (a repairable `ToolFailure`; nothing runs). Default {@link defaultMaxDepth}.
   */
  readonly maxDepth?: number
  /** The call's timeout: the whole nested run. Default: the executor's `defaultTimeout`. */
  readonly timeout?: Duration.Input
  readonly safety?: Safety
}

/** The services an agent tool's calls use besides its nested tools' own (all in every agent run). */
export type Services = RunContext | EventSink | StoreRegistry | ChatModel.ChatModel | ToolCallContext

/**
 * An agent as a tool: its output is the nested run's final answer: its text, or its typed output
 * when the agent declares `output` (then the tool's output schema is that schema).
 */
export type AgentTool<Name extends string, Input extends Schema.Top, R, MR, S extends Agent.OutputSchema = never> = Tool.Tool<
  Name,
  Input,
  [S] extends [never] ? undefined : S & Schema.Top,
  ToolError.ToolError,
  Executor.Requirements<R | MR> | Services
>

const defaultPrompt = (input: unknown): string => {
  if (typeof input === "object" && input !== null && typeof (input as { task?: unknown }).task === "string") {
    return (input as { task: string }).task
  }
  return typeof input === "string" ? input : JSON.stringify(input)
}

/** Makes `agent` a tool: each call runs it, nested, on the prompt its input makes (see the module comment). */
export const make = <
  const Name extends string,
  Input extends Schema.Top,
  R,
  MR = never,
  S extends Agent.OutputSchema = never,
  St = unknown
>(
  agent: Definition<R, MR, S, St>,
  options: Options<Name, Input>
): AgentTool<Name, Input, R, MR, S> => {
  const maxDepth = options.maxDepth ?? defaultMaxDepth
  const agentName = agent.name ?? options.name
  const prompt = options.prompt ?? defaultPrompt
  // A typed final output, when the agent declares one (`RunOptions.output`): the tool's output schema.
  const output = agent.output as Schema.Top | undefined
  const decodeText = agent.output === undefined ? undefined : ToolInput.decoder(options.name, agent.output)
  const failure = (message: string, detail: Record<string, unknown>) =>
    Effect.fail(ToolError.repairable(message, { agent: agentName, ...detail }))

  const handler = (input: unknown) =>
    Effect.gen(function*() {
      const context = yield* RunContext
      const call = yield* ToolCallContext
      const depth = (context.nesting?.depth ?? 0) + 1
      if (depth > maxDepth) {
        return yield* failure(
          `agent ${agentName} was not run: it would run at depth ${depth}, over the limit of ${maxDepth}; answer without it`,
          { depth, maxDepth }
        )
      }
      const given = prompt(input)
      const messages: ReadonlyArray<ChatModel.Message> = typeof given === "string"
        ? [{ role: "user", content: given }]
        : given
      const runId = `${context.runId}/${call.turn}/${call.toolCallId}${call.attempt > 1 ? `#${call.attempt}` : ""}`
      // read when called, so that an agent may list itself among its tools (a getter)
      const { model, ...runOptions } = agent
      const exit = yield* Agent.run({ ...runOptions, name: agentName, messages } as Agent.RunOptions<R, MR, S, St>).pipe(
        (effect) => provideModel(effect, model),
        Effect.provideService(RunContext, {
          ...context,
          runId,
          turn: 0,
          nesting: { parentRunId: context.runId, parentCallId: call.toolCallId, depth }
        }),
        Effect.result
      )
      if (exit._tag === "Failure") {
        const failed = exit.failure
        return yield* failure(`agent ${agentName} failed: ${failed.message}`, {
          reason: failed.reason,
          error: failed.error._tag
        })
      }
      const result = exit.success
      if (result.reason === "max_turns" || result.reason === "cancelled") {
        return yield* failure(
          result.reason === "max_turns"
            ? `agent ${agentName} gave no answer within its ${result.turns} turns`
            : `agent ${agentName} was cancelled before it answered`,
          { reason: result.reason }
        )
      }
      if (decodeText === undefined) return result.text
      if (result.output !== undefined) return result.output
      // ended without its typed answer (`return_direct`, `handoff`): the text it ended with, if the schema takes it
      const decoded = decodeText(result.text)
      if (Result.isSuccess(decoded)) return decoded.success
      return yield* failure(
        `agent ${agentName} ended (${result.reason}) without its typed answer, and the text it ended with is not one (${
          Output.issuesText(decoded.failure)
        }); answer without it or ask again`,
        { reason: result.reason }
      )
    })

  return Tool.make(options.name, {
    description: options.description,
    input: options.input,
    ...(output === undefined ? {} : { output }),
    ...(options.timeout === undefined ? {} : { timeout: options.timeout }),
    ...(options.safety === undefined ? {} : { safety: options.safety }),
    services: [RunContext, ToolCallContext, EventSink, StoreRegistry, ChatModel.ChatModel],
    // the nested tools' services are not keys we can list: the cast adds them to the tool's requirements
    handler: handler as (input: Input["Type"]) => Effect.Effect<never, ToolError.ToolError, Services>
  }) as unknown as AgentTool<Name, Input, R, MR, S>
}
