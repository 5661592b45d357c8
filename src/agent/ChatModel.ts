/**
 * The model an agent talks to, as a service: given provider-neutral messages
 * and the tool specs advertised this turn, it returns an assistant message
 * (text and/or tool calls) and token usage. This module owns the message types,
 * the service, and the scripted model used by tests and the offline demo; HTTP
 * adapters live in `src/models/`.
 */
import { Context, Data, Effect, Layer } from "effect"
import type { ToolSpec } from "../contract/Tool.ts"
import type { ToolCall } from "../contract/ToolCall.ts"
import type { ToolResult } from "../contract/ToolResult.ts"

/** One entry of a transcript, provider-neutral. */
export type Message =
  | { readonly role: "system"; readonly content: string }
  | { readonly role: "user"; readonly content: string }
  | { readonly role: "assistant"; readonly content: string; readonly toolCalls: ReadonlyArray<ToolCall> }
  /** The answers to the previous assistant message's tool calls, in call order. */
  | { readonly role: "tool"; readonly results: ReadonlyArray<ToolResult> }

export interface Usage {
  readonly inputTokens: number
  readonly outputTokens: number
}

export interface Request {
  readonly messages: ReadonlyArray<Message>
  /** The tools advertised this turn (already selected; may be empty). */
  readonly tools: ReadonlyArray<ToolSpec>
}

export interface Response {
  readonly text: string
  readonly toolCalls: ReadonlyArray<ToolCall>
  readonly usage: Usage
  /** Provider-executed (server-side) tool calls: reported, never executed locally. */
  readonly passthrough?: ReadonlyArray<unknown>
}

/** The model could not answer. `retryable` says whether asking again may help. */
export class ChatModelError extends Data.TaggedError("ChatModelError")<{
  readonly reason: "http" | "rate_limited" | "timeout" | "decode" | "script_exhausted" | "transport"
  readonly message: string
  readonly status?: number
  readonly retryable: boolean
}> {}

export interface ChatModelShape {
  readonly generate: (request: Request) => Effect.Effect<Response, ChatModelError>
}

export class ChatModel extends Context.Service<ChatModel, ChatModelShape>()("tinyagents/ChatModel") {}

/** Zero usage. */
export const noUsage: Usage = { inputTokens: 0, outputTokens: 0 }

/** Adds two usages. */
export const addUsage = (a: Usage, b: Usage): Usage => ({
  inputTokens: a.inputTokens + b.inputTokens,
  outputTokens: a.outputTokens + b.outputTokens
})

/** A scripted turn: a fixed response, or one computed from the request (transcript and advertised tools). */
export type ScriptedTurn = Response | ((request: Request) => Response)

/** A final answer with no tool calls. */
export const answer = (text: string): Response => ({ text, toolCalls: [], usage: noUsage })

/** A turn that calls tools; `calls` are `[id, name, arguments]`. */
export const callTools = (
  calls: ReadonlyArray<readonly [id: string, name: string, args: unknown]>,
  text = ""
): Response => ({
  text,
  toolCalls: calls.map(([id, name, args]) => ({ id, name, arguments: args })),
  usage: noUsage
})

/**
 * A model that plays `turns` in order (one per `generate`), failing with
 * `script_exhausted` when asked for more. For tests and the offline demo.
 */
export const scripted = (turns: ReadonlyArray<ScriptedTurn>): Layer.Layer<ChatModel> =>
  Layer.sync(ChatModel, () => {
    let next = 0
    return {
      generate: (request) =>
        Effect.suspend(() => {
          const turn = turns[next++]
          if (turn === undefined) {
            return Effect.fail(
              new ChatModelError({
                reason: "script_exhausted",
                message: `the script has ${turns.length} turns; turn ${next} was requested`,
                retryable: false
              })
            )
          }
          return Effect.succeed(typeof turn === "function" ? turn(request) : turn)
        })
    }
  })

/** A model whose every answer is computed from the request. */
export const fromFunction = (
  f: (request: Request) => Effect.Effect<Response, ChatModelError>
): Layer.Layer<ChatModel> => Layer.succeed(ChatModel, { generate: f })
