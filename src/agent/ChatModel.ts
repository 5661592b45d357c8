/**
 * The model an agent talks to, as a service: given provider-neutral messages
 * and the tool specs advertised this turn, it returns an assistant message
 * (text and/or tool calls) and token usage, whole (`generate`) or as a stream
 * of parts (`stream`). This module owns the message types, the service, and
 * the scripted model used by tests and the offline demo; HTTP adapters live in
 * `src/agent/models/`.
 *
 * The data of the contract (`Message`, `Usage`, `FinishReason`, `Response`,
 * `ChatModelError`) are Schemas, each type its schema's `Type`: their encoded
 * form is plain JSON (tool arguments and other unknown values as JSON, see
 * `ToolError.JsonData`), which is how durable runs journal them.
 */
import { Context, Effect, Layer, Schema, Stream } from "effect"
import type { ToolSpec } from "../contract/Tool.ts"
import type { JsonSchemaObject } from "../contract/ToolSchema.ts"
import { ToolCall } from "../contract/ToolCall.ts"
import { JsonData } from "../contract/ToolError.ts"
import { ToolResult } from "../contract/ToolResult.ts"
import { stringify } from "../internal/json.ts"

/** One entry of a transcript, provider-neutral. */
export const Message = Schema.Union([
  Schema.Struct({ role: Schema.Literal("system"), content: Schema.String }),
  Schema.Struct({ role: Schema.Literal("user"), content: Schema.String }),
  Schema.Struct({ role: Schema.Literal("assistant"), content: Schema.String, toolCalls: Schema.Array(ToolCall) }),
  /** The answers to the previous assistant message's tool calls, in call order. */
  Schema.Struct({ role: Schema.Literal("tool"), results: Schema.Array(ToolResult) })
])

export type Message = typeof Message.Type

/** Tokens one model call used: read (the request) and written (the answer), as the provider counts them. */
export const Usage = Schema.Struct({ inputTokens: Schema.Number, outputTokens: Schema.Number })

export type Usage = typeof Usage.Type

/**
 * A structured final answer a request asks for: a JSON value matching `schema`. Only a model that
 * declares `structuredOutput` is sent one; it uses its provider's structured output (the schema
 * exported in the provider's dialect) and answers with the JSON value as its text.
 */
export interface OutputFormat {
  /** The answer's name (the provider's schema name, or the final-answer tool's). */
  readonly name: string
  readonly description: string
  /** Canonical JSON Schema 2020-12: an object at the root, closed, as tool input schemas are. */
  readonly schema: JsonSchemaObject
}

/** What one model call is asked: the transcript so far and the tools it may call. */
export interface Request {
  readonly messages: ReadonlyArray<Message>
  /** The tools advertised this turn (already selected; may be empty). */
  readonly tools: ReadonlyArray<ToolSpec>
  /** The structured final answer asked for, if any (see {@link OutputFormat}). */
  readonly output?: OutputFormat
  /**
   * The final-answer tool among `tools`, when the answer is asked for as a tool call (a model without
   * `structuredOutput`): every turn ends in a tool call, so an adapter may require one (Anthropic
   * `tool_choice: any`, Gemini `mode: ANY`).
   */
  readonly answerTool?: string
  /**
   * Tool search in the provider's own form (only for a model that declares `toolSearch`; see
   * `ToolSearch`): `tool` names the search tool among `tools`, `deferred` lists every deferred tool
   * (revealed or not, in registry order, the same every turn, so that the request's tools never
   * change and prompt caching holds). The adapter sends the deferred tools with the provider's
   * deferral marker and its search tool in place of `tool`, and answers a search call's result
   * (`ToolSearch.revealedBy`) with the provider's references to the tools it found.
   */
  readonly toolSearch?: ToolSearchRequest
}

/** See {@link Request.toolSearch}. */
export interface ToolSearchRequest {
  readonly tool: string
  readonly deferred: ReadonlyArray<ToolSpec>
}

/** Why the model stopped: `stop` (a final answer), `tool_calls`, `length` (output token limit), `content_filter`, or `other`. */
export const FinishReason = Schema.Literals(["stop", "tool_calls", "length", "content_filter", "other"])

export type FinishReason = typeof FinishReason.Type

/** One whole answer: its text, the tool calls it makes (possibly none) and the tokens it used. */
export const Response = Schema.Struct({
  text: Schema.String,
  toolCalls: Schema.Array(ToolCall),
  usage: Usage,
  /** Why the model stopped, when the provider says. */
  finishReason: Schema.optionalKey(FinishReason),
  /** Provider-executed (server-side) tool calls: reported, never executed locally. */
  passthrough: Schema.optionalKey(Schema.Array(JsonData))
})

export type Response = typeof Response.Type

/**
 * One part of a streamed answer, in arrival order. Text arrives as
 * `TextDelta`s; a tool call as `ToolCallStarted`, zero or more
 * `ToolCallDelta`s (raw argument text, possibly split anywhere), then one
 * `ToolCall` with the assembled call once its arguments are complete (checked
 * by the registry only then). The last part is always `Finished`, with the
 * whole `Response` (the concatenated text, every assembled call, usage and
 * finish reason): exactly what `generate` returns for the same answer.
 */
export type StreamPart =
  | { readonly _tag: "TextDelta"; readonly text: string }
  | { readonly _tag: "ToolCallStarted"; readonly id: string; readonly name: string }
  | { readonly _tag: "ToolCallDelta"; readonly id: string; readonly argumentsDelta: string }
  | { readonly _tag: "ToolCall"; readonly call: ToolCall }
  | { readonly _tag: "Finished"; readonly response: Response }

/** The model could not answer. `retryable` says whether asking again may help. */
export class ChatModelError extends Schema.TaggedError<ChatModelError>()("ChatModelError", {
  /**
   * `http`: a non-success status; `rate_limited`: 429; `timeout`; `decode`: a body or stream event we
   * cannot read; `provider`: an error the provider reported inside a stream; `transport`: the
   * connection failed or the stream ended before its last event; `script_exhausted`: a scripted model ran out.
   */
  reason: Schema.Literals(["http", "rate_limited", "timeout", "decode", "provider", "script_exhausted", "transport"]),
  message: Schema.String,
  status: Schema.optionalKey(Schema.Number),
  retryable: Schema.Boolean
}) {}

/** What a `ChatModel` does: answer a request, whole or as a stream of parts. */
export interface ChatModelShape {
  /** The whole answer. */
  readonly generate: (request: Request) => Effect.Effect<Response, ChatModelError>
  /**
   * The answer as it arrives, ending with `Finished`. Interrupting the stream
   * (or stopping to read it) closes the underlying HTTP response.
   */
  readonly stream: (request: Request) => Stream.Stream<StreamPart, ChatModelError>
  /**
   * The model honours `Request.output` natively: a final answer (no tool calls) is the JSON value as
   * text. Without it, an agent asking for typed output gives the model a final-answer tool instead.
   */
  readonly structuredOutput?: boolean
  /**
   * The model's provider has tool search of its own (deferred tools and a search tool in its wire
   * format: Anthropic Messages, OpenAI Responses): an agent with `toolSearch` sends it
   * `Request.toolSearch`. Without it the agent's search is portable: the search tool is a plain tool
   * and the tools it reveals are advertised from the next turn.
   */
  readonly toolSearch?: boolean
}

/**
 * The model an agent talks to (a service). Provide one from `src/agent/models/` (OpenAI, Anthropic,
 * Gemini over HTTP) or a scripted model for tests and offline runs.
 */
export class ChatModel extends Context.Service<ChatModel, ChatModelShape>()("tinyagents/ChatModel") {}

/**
 * The parts a whole response streams as: its text as one `TextDelta` (none when empty), each call as
 * `ToolCallStarted`, one `ToolCallDelta` with its arguments as JSON text, and `ToolCall`; then `Finished`.
 */
export const partsOf = (response: Response): ReadonlyArray<StreamPart> => {
  const parts: Array<StreamPart> = []
  if (response.text !== "") parts.push({ _tag: "TextDelta", text: response.text })
  for (const call of response.toolCalls) {
    parts.push({ _tag: "ToolCallStarted", id: call.id, name: call.name })
    const text = typeof call.arguments === "string" ? call.arguments : stringify(call.arguments) ?? ""
    if (text !== "") parts.push({ _tag: "ToolCallDelta", id: call.id, argumentsDelta: text })
    parts.push({ _tag: "ToolCall", call })
  }
  parts.push({ _tag: "Finished", response })
  return parts
}

/** The `Response` a stream finishes with; a stream that ends without `Finished` is a `transport` error. */
export const collect = <R>(
  stream: Stream.Stream<StreamPart, ChatModelError, R>
): Effect.Effect<Response, ChatModelError, R> =>
  Stream.runFold(stream, () => undefined as Response | undefined, (last, part) =>
    part._tag === "Finished" ? part.response : last).pipe(
      Effect.flatMap((response) =>
        response === undefined
          ? Effect.fail(
            new ChatModelError({ reason: "transport", message: "the model's stream ended before it finished", retryable: true })
          )
          : Effect.succeed(response)
      )
    )

/**
 * A `ChatModelShape` from either operation: a missing `stream` streams the whole response (`partsOf`);
 * a missing `generate` collects the stream (`collect`).
 */
export const make = (
  operations:
    | { readonly generate: ChatModelShape["generate"]; readonly stream?: ChatModelShape["stream"] }
    | { readonly generate?: ChatModelShape["generate"]; readonly stream: ChatModelShape["stream"] },
  options: { readonly structuredOutput?: boolean; readonly toolSearch?: boolean } = {}
): ChatModelShape => {
  const generate = operations.generate ?? ((request: Request) => Effect.suspend(() => collect(operations.stream!(request))))
  const stream = operations.stream ??
    ((request: Request) => Stream.fromIterableEffect(Effect.map(Effect.suspend(() => generate(request)), partsOf)))
  return {
    generate,
    stream,
    ...(options.structuredOutput === true ? { structuredOutput: true } : {}),
    ...(options.toolSearch === true ? { toolSearch: true } : {})
  }
}

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

/** A structured final answer as a model with `structuredOutput` gives it: the value as JSON text. */
export const answerJson = (value: unknown): Response => answer(stringify(value) ?? "null")

/** Options of {@link scripted}. */
export interface ScriptedOptions {
  /**
   * Whether the model declares `structuredOutput` (default false: an agent asking for typed output
   * gives it the final-answer tool, so a turn answers with `callTools([[id, "final_answer", value]])`;
   * with true, a turn answers with `answerJson(value)` and sees `request.output`).
   */
  readonly structuredOutput?: boolean
  /**
   * Whether the model declares tool search of its own (default false: an agent with `toolSearch`
   * gives it the search tool as a plain tool; with true it sees `request.toolSearch`).
   */
  readonly toolSearch?: boolean
}

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
export const scripted = (turns: ReadonlyArray<ScriptedTurn>, options: ScriptedOptions = {}): Layer.Layer<ChatModel> =>
  Layer.sync(ChatModel, () => {
    let next = 0
    return make({
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
    }, options)
  })

/** A model whose every answer is computed from the request. */
export const fromFunction = (
  f: (request: Request) => Effect.Effect<Response, ChatModelError>,
  options: ScriptedOptions = {}
): Layer.Layer<ChatModel> => Layer.succeed(ChatModel, make({ generate: f }, options))
