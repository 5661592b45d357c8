/**
 * The agent's spans, after the OpenTelemetry GenAI semantic conventions: `invoke_agent` (the run),
 * `agent_turn` (one turn) and `chat` (the model call), around the executor's `execute_tool` spans.
 * It owns their names and attributes; `Agent` decides where they go. Messages, replies and error
 * messages are never attached (see `src/internal/spans.ts`).
 */
import { type Effect, Exit } from "effect"
import { failureType, tagOf, within } from "../../internal/spans.ts"

/**
 * The agent run: `invoke_agent [name]`, kind INTERNAL (an in-process agent). The run adds
 * `gen_ai.conversation.id` (thread id) and `tinyagents.run.id`; the end adds the stop reason,
 * turns and token usage, or `error.type` (the `_tag` of the error that ended the run).
 */
export const agent = <A extends AgentSummary, E extends { readonly error: unknown }, R>(
  name: string | undefined,
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> =>
  within(
    name === undefined ? "invoke_agent" : `invoke_agent ${name}`,
    {
      kind: "internal",
      attributes: {
        "gen_ai.operation.name": "invoke_agent",
        ...(name === undefined ? {} : { "gen_ai.agent.name": name })
      }
    },
    effect,
    (exit) => ({
      errorType: failureType(exit, (failed) => tagOf(failed.error)),
      attributes: Exit.isSuccess(exit)
        ? {
          "tinyagents.agent.stop_reason": exit.value.reason,
          "tinyagents.agent.turns": exit.value.turns,
          "gen_ai.usage.input_tokens": exit.value.usage.inputTokens,
          "gen_ai.usage.output_tokens": exit.value.usage.outputTokens
        }
        : undefined
    })
  )

interface AgentSummary {
  readonly reason: string
  readonly turns: number
  readonly usage: { readonly inputTokens: number; readonly outputTokens: number }
}

/** One agent turn (the model call and the tool batch): `agent_turn`, with `tinyagents.agent.turn`. */
export const turn = <A, E extends { readonly error: unknown }, R>(
  index: number,
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> =>
  within(
    "agent_turn",
    { kind: "internal", attributes: { "tinyagents.agent.turn": index } },
    effect,
    (exit) => ({ errorType: failureType(exit, (failed) => tagOf(failed.error)) })
  )

/**
 * The model call: `chat`, kind CLIENT, `gen_ai.operation.name` `chat`, token
 * usage on success; `error.type` is the `ChatModelError` reason (`timeout`,
 * `rate_limited`, `http`, ...). Messages and replies are never attached.
 */
export const chat = <
  A extends { readonly usage: AgentSummary["usage"]; readonly toolCalls: ReadonlyArray<unknown> },
  E extends { readonly reason: string },
  R
>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  within(
    "chat",
    { kind: "client", attributes: { "gen_ai.operation.name": "chat" } },
    effect,
    (exit) => ({
      errorType: failureType(exit, (error) => error.reason),
      attributes: Exit.isSuccess(exit)
        ? {
          "gen_ai.usage.input_tokens": exit.value.usage.inputTokens,
          "gen_ai.usage.output_tokens": exit.value.usage.outputTokens,
          "tinyagents.model.tool_calls": exit.value.toolCalls.length
        }
        : undefined
    })
  )
