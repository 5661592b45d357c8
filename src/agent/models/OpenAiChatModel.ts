/**
 * An OpenAI-compatible Chat Completions model as a `ChatModel`: it turns the
 * transcript into `POST {baseUrl}/chat/completions` (bearer key, `model`,
 * `messages`, `tools`), and the completion's first choice into a `Response`.
 * Tool definitions, tool calls and tool messages come from
 * `providers/OpenAiChat`; this module owns the rest of the request and
 * response, errors, timeouts and retries. `stream` asks for server-sent
 * events (`stream: true`, usage included) and assembles tool calls from their
 * deltas (`internal/openAiChatStream`). It never parses tool arguments: the
 * JSON text goes to the registry as the model wrote it, malformed or not.
 * Needs an `HttpClient` (e.g. `NodeHttpClient.layerUndici` or
 * `FetchHttpClient.layer`).
 */
import { Duration, Effect, Layer, Result, Schema } from "effect"
import { HttpClient } from "effect/http"
import { ChatModel, type ChatModelShape, type FinishReason, type Message, type Request, type Response } from "../ChatModel.ts"
import type { ChatModelError } from "../ChatModel.ts"
import * as OpenAiChat from "../../providers/OpenAiChat.ts"
import type { ToolCall } from "../../contract/ToolCall.ts"
import * as HttpChat from "./internal/httpChat.ts"
import * as HttpModel from "./internal/httpModel.ts"
import * as OpenAi from "./internal/openAi.ts"
import * as OpenAiChatStream from "./internal/openAiChatStream.ts"
import { argumentsText, inCallOrder } from "./internal/transcript.ts"
import type { ModelConfigError } from "./ModelConfigError.ts"

const provider = "openai-chat"

/** The environment variables `layerConfig` reads. */
const variables = OpenAi.variables("gpt-4o-mini")

// ---------------------------------------------------------------------------
// options
// ---------------------------------------------------------------------------

/** A retry policy; its input is the failed attempt's `ChatModelError`. */
export type RetryPolicy = HttpChat.RetryPolicy

/** How to reach the model: the shared connection fields (key, model, timeout, retry, `retry-after` ceiling, headers), base URL, strict mode and extra body fields. */
export type Options = OpenAi.Options

/** Up to 3 retries, jittered exponential backoff from 500 ms. */
export const defaultRetry: RetryPolicy = HttpChat.defaultRetry

/** The wait a 429/5xx answer asked for (`retry-after`, `retry-after-ms`), if any: for custom policies. */
export const retryAfter: (error: ChatModelError) => Duration.Duration | undefined = HttpChat.retryAfter

// ---------------------------------------------------------------------------
// request
// ---------------------------------------------------------------------------

/** `ChatCompletionSystemMessageParam` / `ChatCompletionUserMessageParam` with text content. */
export interface TextMessage {
  readonly role: "system" | "user"
  readonly content: string
}

/** `ChatCompletionAssistantMessageParam`: `content` is null when the turn only calls tools. */
export interface AssistantMessage {
  readonly role: "assistant"
  readonly content: string | null
  readonly tool_calls?: ReadonlyArray<OpenAiChat.FunctionToolCall>
}

/** One entry of the request's `messages`. */
export type WireMessage = TextMessage | AssistantMessage | OpenAiChat.ToolMessage

/** The request body this adapter sends. */
export interface RequestBody {
  readonly model: string
  readonly messages: ReadonlyArray<WireMessage>
  readonly tools?: ReadonlyArray<OpenAiChat.FunctionTool>
  readonly [parameter: string]: unknown
}

const assistantMessage = (content: string, toolCalls: ReadonlyArray<ToolCall>): AssistantMessage => ({
  role: "assistant",
  content: content === "" && toolCalls.length > 0 ? null : content,
  ...(toolCalls.length === 0 ? {} : {
    tool_calls: toolCalls.map((call) => ({
      id: call.id,
      type: "function" as const,
      function: { name: call.name, arguments: argumentsText(call.arguments) }
    }))
  })
})

/** The `messages` array for a transcript: tool results become one `role: "tool"` message each. */
export const wireMessages = (messages: ReadonlyArray<Message>): Array<WireMessage> =>
  messages.flatMap((message, i): ReadonlyArray<WireMessage> => {
    switch (message.role) {
      case "system":
      case "user":
        return [{ role: message.role, content: message.content }]
      case "assistant":
        return [assistantMessage(message.content, message.toolCalls)]
      case "tool":
        return OpenAiChat.toolMessages(inCallOrder(messages[i - 1], message.results))
    }
  })

/** The request body for `request`; fails when a tool cannot be exported. */
export const encodeRequest = (
  options: Pick<Options, "model" | "strict" | "parameters">,
  request: Request
): Result.Result<RequestBody, ChatModelError> =>
  OpenAi.withOutput(
    provider,
    OpenAi.requestBody(provider, options, OpenAiChat.toolDefinitionsResult, request, (messages) => ({
      messages: wireMessages(messages)
    })),
    request,
    (output) => OpenAiChat.responseFormatResult(output, { strict: options.strict ?? "auto" }),
    (body, response_format): RequestBody => ({ ...body, response_format })
  )

// ---------------------------------------------------------------------------
// response
// ---------------------------------------------------------------------------

const FunctionToolCall = Schema.Struct({
  id: Schema.String,
  type: Schema.Literal("function"),
  function: Schema.Struct({ name: Schema.String, arguments: Schema.String })
})

const CustomToolCall = Schema.Struct({
  id: Schema.String,
  type: Schema.Literal("custom"),
  custom: Schema.Struct({ name: Schema.String, input: Schema.String })
})

const Completion = Schema.Struct({
  choices: Schema.Array(Schema.Struct({
    message: Schema.Struct({
      content: Schema.optionalKey(Schema.NullOr(Schema.String)),
      refusal: Schema.optionalKey(Schema.NullOr(Schema.String)),
      tool_calls: Schema.optionalKey(Schema.NullOr(Schema.Array(Schema.Unknown)))
    }),
    finish_reason: Schema.optionalKey(Schema.NullOr(Schema.String))
  })),
  usage: Schema.optionalKey(Schema.NullOr(Schema.Struct({
    prompt_tokens: Schema.optionalKey(Schema.NullOr(Schema.Number)),
    completion_tokens: Schema.optionalKey(Schema.NullOr(Schema.Number))
  })))
})

/** The `FinishReason` of a choice's `finish_reason` (`function_call`, the legacy name, is `tool_calls`). */
export const finishReasonOf = (reason: string | null | undefined): FinishReason | undefined => {
  switch (reason) {
    case undefined:
    case null:
      return undefined
    case "stop":
    case "length":
    case "content_filter":
    case "tool_calls":
      return reason
    case "function_call":
      return "tool_calls"
    default:
      return "other"
  }
}

const typeOf = (value: unknown): unknown =>
  typeof value === "object" && value !== null ? (value as Record<string, unknown>).type : undefined

/**
 * The `Response` for a `ChatCompletion` body: the first choice's text (or
 * refusal), its function calls with the argument text untouched (strict-mode
 * nulls for optional properties become absent keys when `specs` are given),
 * custom and unknown tool calls as passthrough, usage, and the finish reason.
 */
export const decodeResponse = (
  body: unknown,
  specs?: Request["tools"]
): Result.Result<Response, ChatModelError> => {
  const decoded = Schema.decodeUnknownResult(Completion)(body)
  if (Result.isFailure(decoded)) return Result.fail(HttpChat.decodeError(provider, decoded.failure.message))
  const choice = decoded.success.choices[0]
  if (choice === undefined) return Result.fail(HttpChat.decodeError(provider, "the completion has no choices"))
  const known: Array<OpenAiChat.MessageToolCall> = []
  const unknown: Array<unknown> = []
  for (const [i, raw] of (choice.message.tool_calls ?? []).entries()) {
    const kind = typeOf(raw)
    if (kind !== "function" && kind !== "custom") {
      unknown.push(raw)
      continue
    }
    const call: Result.Result<OpenAiChat.MessageToolCall, Schema.SchemaError> = kind === "function"
      ? Schema.decodeUnknownResult(FunctionToolCall)(raw)
      : Schema.decodeUnknownResult(CustomToolCall)(raw)
    if (Result.isFailure(call)) {
      return Result.fail(HttpChat.decodeError(provider, `tool_calls[${i}]: ${call.failure.message}`))
    }
    known.push(call.success)
  }
  const calls = OpenAiChat.toolCalls(
    { role: "assistant", content: choice.message.content ?? null, tool_calls: known },
    specs === undefined ? {} : { specs }
  )
  const passthrough = [...calls.passthrough, ...unknown]
  const usage = decoded.success.usage
  const finishReason = finishReasonOf(choice.finish_reason)
  return Result.succeed({
    text: choice.message.content ?? choice.message.refusal ?? "",
    toolCalls: calls.calls,
    usage: { inputTokens: usage?.prompt_tokens ?? 0, outputTokens: usage?.completion_tokens ?? 0 },
    ...(finishReason === undefined ? {} : { finishReason }),
    ...(passthrough.length === 0 ? {} : { passthrough })
  })
}

// ---------------------------------------------------------------------------
// service
// ---------------------------------------------------------------------------

/** The model over the current `HttpClient`. */
export const make = (options: Options): Effect.Effect<ChatModelShape, never, HttpClient.HttpClient> =>
  HttpModel.make(() =>
    OpenAi.spec(provider, "OpenAiChatModel", "chat/completions", options, {
      encode: (request) => encodeRequest(options, request),
      decode: decodeResponse,
      stream: (body, specs) => ({
        body: { ...body, stream: true, stream_options: { include_usage: true } },
        decoder: OpenAiChatStream.decoder({
          response: (completion) => decodeResponse(completion, specs),
          call: (call) => OpenAiChat.toolCalls({ role: "assistant", content: null, tool_calls: [call] }, specs === undefined ? {} : { specs }).calls[0]!
        })
      })
    })
  )

/** A `ChatModel` layer; provide an `HttpClient` layer with it. */
export const layer = (options: Options): Layer.Layer<ChatModel, never, HttpClient.HttpClient> => HttpModel.layer(make, options)

/**
 * Like {@link layer}, reading the key from `OPENAI_API_KEY` (as `Redacted`),
 * the model from `OPENAI_MODEL` (falling back to `options.model`; one of the
 * two is required) and the base URL from `OPENAI_BASE_URL` (optional, an
 * http(s) URL including the API's `/v1`, as the official SDK expects). A
 * missing or invalid value fails the layer with a {@link ModelConfigError}
 * naming the variable; an empty one counts as missing.
 */
export const layerConfig = (options: HttpModel.ConfigOptions<Options> = {}): Layer.Layer<ChatModel, ModelConfigError, HttpClient.HttpClient> =>
  HttpModel.layerConfig(provider, variables, layer, options)
