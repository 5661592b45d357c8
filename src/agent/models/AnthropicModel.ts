/**
 * Anthropic Messages as a `ChatModel`: it turns the transcript into
 * `POST {baseUrl}/v1/messages` (`x-api-key`, `anthropic-version: 2023-06-01`,
 * `max_tokens`, system prompt as the top-level `system` field, tool results
 * as one user message with the `tool_result` blocks first), and the `Message`
 * it gets back into a `Response`. Tool definitions, `tool_use` blocks and the
 * `tool_result` message come from `providers/Anthropic`; this module owns the
 * rest of the request and response, errors, timeouts and retries. `stream`
 * asks for server-sent events (`stream: true`) and assembles each `tool_use`
 * block from its `input_json_delta`s (`internal/anthropicStream`). Tool
 * search (`Request.toolSearch`) is Anthropic's own, done by the agent's search
 * tool: every deferred tool is sent with `defer_loading: true` beside the
 * loaded ones and the search tool, and a search's result answers with a
 * `tool_reference` block per tool it found. Needs an `HttpClient` (e.g.
 * `NodeHttpClient.layerUndici`).
 */
import { Duration, Effect, Layer, Redacted, Result, Schema } from "effect"
import { HttpClient } from "effect/http"
import { ChatModel, type ChatModelShape, type FinishReason, type Message, type Request, type Response } from "../ChatModel.ts"
import type { ChatModelError } from "../ChatModel.ts"
import * as ToolSearch from "../ToolSearch.ts"
import * as Anthropic from "../../providers/Anthropic.ts"
import type { ToolResult } from "../../contract/ToolResult.ts"
import type { ToolCall } from "../../contract/ToolCall.ts"
import type { ToolSpec } from "../../contract/Tool.ts"
import type { ProviderExportError } from "../../providers/ProviderExportError.ts"
import type * as ModelConfig from "./internal/config.ts"
import * as AnthropicStream from "./internal/anthropicStream.ts"
import * as HttpChat from "./internal/httpChat.ts"
import * as HttpModel from "./internal/httpModel.ts"
import { argumentsObject, systemApart } from "./internal/transcript.ts"
import type { ModelConfigError } from "./ModelConfigError.ts"

const provider = "anthropic"

/** The environment variables `layerConfig` reads. */
const variables: ModelConfig.Variables = {
  apiKey: { name: "ANTHROPIC_API_KEY", hint: "your Anthropic API key" },
  model: { name: "ANTHROPIC_MODEL", hint: "a model name, e.g. claude-sonnet-4-5" },
  baseUrl: { name: "ANTHROPIC_BASE_URL", example: "https://api.anthropic.com" }
}

/** The `anthropic-version` header this adapter speaks. */
export const apiVersion = "2023-06-01"

// ---------------------------------------------------------------------------
// options
// ---------------------------------------------------------------------------

/** A retry policy; its input is the failed attempt's `ChatModelError`. */
export type RetryPolicy = HttpChat.RetryPolicy

/** How to reach the model: the shared connection fields (key, model, timeout, retry, `retry-after` ceiling, headers) and this adapter's own. */
export interface Options extends HttpChat.ConnectionOptions {
  /**
   * Default `https://api.anthropic.com`. With or without the trailing `/v1`:
   * like the official SDK, the host (or a proxy's prefix) alone is enough.
   * See {@link messagesUrl}.
   */
  readonly baseUrl?: string
  /** `max_tokens` of every request. Default 4096. */
  readonly maxTokens?: number
  /** Strict tool use: `false` (default), `"auto"` or `"require"`. */
  readonly strict?: Anthropic.Strict
  /** `cache_control` per canonical tool name. */
  readonly cacheControl?: Readonly<Record<string, Anthropic.CacheControlEphemeral>>
  /** Extra body fields (`temperature`, `tool_choice`, `thinking`, ...). */
  readonly parameters?: Readonly<Record<string, unknown>>
  /**
   * Whether the model offers structured outputs (`output_config.format`): default `true`. With
   * `false`, an agent asking for typed output gives the model a final-answer tool instead, and every
   * turn forces a tool call (`tool_choice: any`, unless `parameters` set `tool_choice`).
   */
  readonly structuredOutput?: boolean
  /**
   * Whether the model offers tool search (`defer_loading` tools and `tool_reference` results): default
   * `true`. With `false` (a model or a compatible server without it), an agent's tool search is
   * portable: the tools a search finds are advertised as plain tools from the next turn.
   */
  readonly toolSearch?: boolean
}

/** Up to 3 retries, jittered exponential backoff from 500 ms. */
export const defaultRetry: RetryPolicy = HttpChat.defaultRetry

/** The wait a 429/5xx answer asked for (`retry-after`), if any: for custom policies. */
export const retryAfter: (error: ChatModelError) => Duration.Duration | undefined = HttpChat.retryAfter

// ---------------------------------------------------------------------------
// request
// ---------------------------------------------------------------------------

/** `ToolUseBlockParam` as sent back in an assistant turn. */
export interface ToolUseBlockParam {
  readonly type: "tool_use"
  readonly id: string
  readonly name: string
  readonly input: unknown
}

/** `MessageParam` as this adapter sends it. */
export type WireMessage =
  | { readonly role: "user"; readonly content: string }
  | { readonly role: "assistant"; readonly content: ReadonlyArray<Anthropic.TextBlockParam | ToolUseBlockParam> }
  | Anthropic.ToolResultMessage

/** The request body this adapter sends. */
export interface RequestBody {
  readonly model: string
  readonly max_tokens: number
  readonly system?: string
  readonly messages: ReadonlyArray<WireMessage>
  readonly tools?: ReadonlyArray<Anthropic.Tool>
  readonly [parameter: string]: unknown
}

/** `tool_use.input` must be an object: Anthropic's own calls always are (see `argumentsObject` for the others). */
const assistantMessage = (content: string, toolCalls: ReadonlyArray<ToolCall>): WireMessage => ({
  role: "assistant",
  content: [
    ...(content === "" ? [] : [{ type: "text" as const, text: content }]),
    ...toolCalls.map((call) => ({ type: "tool_use" as const, id: call.id, name: call.name, input: argumentsObject(call.arguments) }))
  ]
})

/**
 * What a tool search's result references: the tools it found that the request sends deferred (a
 * found tool the turn's selection left out has no definition to refer to).
 */
const referencesOf = (toolSearch: Request["toolSearch"]) => {
  if (toolSearch === undefined) return undefined
  const deferred = new Set<string>(toolSearch.deferred.map((spec) => spec.name))
  return (result: ToolResult): ReadonlyArray<string> =>
    ToolSearch.revealedBy(result, toolSearch.tool).filter((name) => deferred.has(name))
}

/**
 * The top-level `system` text (every system message, in order, joined by a
 * blank line) and the `messages` array. A user message right after tool
 * results joins that user message, after its `tool_result` blocks; an empty
 * assistant turn is left out (Anthropic rejects empty content). With
 * `toolSearch`, a result of its search tool that found deferred tools answers
 * with `tool_reference` blocks to them (one that found none, or failed, stays text).
 */
export const wireMessages = (
  messages: ReadonlyArray<Message>,
  toolSearch?: Request["toolSearch"]
): { readonly system: string | undefined; readonly messages: Array<WireMessage> } => {
  const references = referencesOf(toolSearch)
  const { system, turns } = systemApart<WireMessage>(messages, {
    user: (text) => ({ role: "user", content: text }),
    join: (last, text) =>
      last.role === "user" && Array.isArray(last.content)
        ? { role: "user", content: [...last.content, { type: "text", text }] }
        : undefined,
    assistant: assistantMessage,
    tool: (results) => Anthropic.toolMessages(results, references === undefined ? {} : { references })
  })
  return { system, messages: turns }
}

/**
 * The deferred tools' definitions, kept per `Request.toolSearch.deferred` array (the same array every
 * turn of a run, and across the runs over one registry) with the options they were exported under.
 */
const exportedDeferred = new WeakMap<ReadonlyArray<ToolSpec>, {
  readonly strict: Anthropic.Strict
  readonly cacheControl: Options["cacheControl"]
  readonly tools: Result.Result<Array<Anthropic.Tool>, ProviderExportError>
}>()

const deferredDefinitions = (
  deferred: ReadonlyArray<ToolSpec>,
  strict: Anthropic.Strict,
  cacheControl: Options["cacheControl"]
): Result.Result<Array<Anthropic.Tool>, ProviderExportError> => {
  const kept = exportedDeferred.get(deferred)
  if (kept !== undefined && kept.strict === strict && kept.cacheControl === cacheControl) return kept.tools
  const tools = Anthropic.toolDefinitionsResult(deferred, {
    strict,
    ...(cacheControl === undefined ? {} : { cacheControl }),
    deferLoading: deferred.map((spec) => spec.name)
  })
  exportedDeferred.set(deferred, { strict, cacheControl, tools })
  return tools
}

/**
 * The request body for `request`; fails when a tool cannot be exported. With `request.toolSearch`,
 * `tools` is the request's tools (the loaded ones and the search tool) and then every deferred tool
 * with `defer_loading: true`: the same list every turn (exported once per deferred list).
 */
export const encodeRequest = (
  options: Pick<Options, "model" | "maxTokens" | "strict" | "cacheControl" | "parameters">,
  request: Request
): Result.Result<RequestBody, ChatModelError> => {
  const strict = options.strict ?? false
  const own = Anthropic.toolDefinitionsResult(request.tools, {
    strict,
    ...(options.cacheControl === undefined ? {} : { cacheControl: options.cacheControl })
  })
  const all = request.toolSearch?.deferred ?? []
  const later = all.length === 0 ? Result.succeed([]) : deferredDefinitions(all, strict, options.cacheControl)
  const shown = new Set<string>(request.tools.map((spec) => spec.name))
  const tools = Result.flatMap(own, (own) =>
    Result.map(later, (later) => [
      ...own,
      ...(all.some((spec) => shown.has(spec.name)) ? later.filter((_, i) => !shown.has(all[i]!.name)) : later)
    ]))
  if (Result.isFailure(tools)) return Result.fail(HttpChat.requestError(provider, tools.failure.message))
  const { messages, system } = wireMessages(request.messages, request.toolSearch)
  let format: Anthropic.OutputFormat | undefined
  if (request.output !== undefined) {
    const exported = Anthropic.outputFormatResult(request.output)
    if (Result.isFailure(exported)) return Result.fail(HttpChat.requestError(provider, exported.failure.message))
    format = exported.success
  }
  const outputConfig = options.parameters?.["output_config"]
  return Result.succeed({
    ...options.parameters,
    model: options.model,
    max_tokens: options.maxTokens ?? 4096,
    ...(system === undefined ? {} : { system }),
    messages,
    ...(tools.success.length === 0 ? {} : { tools: tools.success }),
    ...(format === undefined ? {} : { output_config: { ...(outputConfig as object | undefined), format } }),
    // the answer is a tool call: a tool is forced every turn (unless the caller chose tool_choice)
    ...(request.answerTool === undefined || options.parameters?.["tool_choice"] !== undefined
      ? {}
      : { tool_choice: { type: "any" } })
  })
}

// ---------------------------------------------------------------------------
// response
// ---------------------------------------------------------------------------

const Tokens = Schema.optionalKey(Schema.NullOr(Schema.Number))

const MessageBody = Schema.Struct({
  content: Schema.Array(Schema.Unknown),
  stop_reason: Schema.optionalKey(Schema.NullOr(Schema.String)),
  usage: Schema.optionalKey(Schema.NullOr(Schema.Struct({
    input_tokens: Tokens,
    output_tokens: Tokens,
    cache_creation_input_tokens: Tokens,
    cache_read_input_tokens: Tokens
  })))
})

const Block = Schema.Struct({ type: Schema.String })
const TextBlock = Schema.Struct({ type: Schema.Literal("text"), text: Schema.String })
const ToolUseBlock = Schema.Struct({
  type: Schema.Literal("tool_use"),
  id: Schema.String,
  name: Schema.String,
  input: Schema.Unknown
})

/**
 * The `FinishReason` of a `stop_reason`: `end_turn`, `stop_sequence` are `stop`, `tool_use` is
 * `tool_calls`, `max_tokens` and `model_context_window_exceeded` are `length`, `refusal` is
 * `content_filter`, others (`pause_turn`, ...) `other`.
 */
export const finishReasonOf = (reason: string | null | undefined): FinishReason | undefined => {
  switch (reason) {
    case undefined:
    case null:
      return undefined
    case "end_turn":
    case "stop_sequence":
      return "stop"
    case "tool_use":
      return "tool_calls"
    case "max_tokens":
    case "model_context_window_exceeded":
      return "length"
    case "refusal":
      return "content_filter"
    default:
      return "other"
  }
}

/**
 * The `Response` for a `Message` body: its text blocks joined, its
 * `tool_use` blocks as calls (`input` passed through as the object it is),
 * server tool blocks as passthrough, and usage (input counts cached tokens
 * too: `input_tokens + cache_creation_input_tokens + cache_read_input_tokens`), and the finish reason.
 */
export const decodeResponse = (body: unknown): Result.Result<Response, ChatModelError> => {
  const decoded = Schema.decodeUnknownResult(MessageBody)(body)
  if (Result.isFailure(decoded)) return Result.fail(HttpChat.decodeError(provider, decoded.failure.message))
  const blocks: Array<Anthropic.ContentBlock> = []
  const text: Array<string> = []
  for (const [i, raw] of decoded.success.content.entries()) {
    const block = Schema.decodeUnknownResult(Block)(raw)
    if (Result.isFailure(block)) return Result.fail(HttpChat.decodeError(provider, `content[${i}]: ${block.failure.message}`))
    const check = block.success.type === "tool_use"
      ? Schema.decodeUnknownResult(ToolUseBlock)(raw)
      : block.success.type === "text"
      ? Schema.decodeUnknownResult(TextBlock)(raw)
      : Result.succeed(raw)
    if (Result.isFailure(check)) return Result.fail(HttpChat.decodeError(provider, `content[${i}]: ${check.failure.message}`))
    if (block.success.type === "text") text.push((raw as Anthropic.TextBlockParam).text)
    blocks.push(raw as Anthropic.ContentBlock)
  }
  const calls = Anthropic.toolCalls(blocks)
  const usage = decoded.success.usage
  const finishReason = finishReasonOf(decoded.success.stop_reason)
  return Result.succeed({
    text: text.join(""),
    toolCalls: calls.calls,
    usage: {
      inputTokens: (usage?.input_tokens ?? 0) + (usage?.cache_creation_input_tokens ?? 0) +
        (usage?.cache_read_input_tokens ?? 0),
      outputTokens: usage?.output_tokens ?? 0
    },
    ...(finishReason === undefined ? {} : { finishReason }),
    ...(calls.passthrough.length === 0 ? {} : { passthrough: calls.passthrough })
  })
}

// ---------------------------------------------------------------------------
// service
// ---------------------------------------------------------------------------

/**
 * The endpoint for a base URL: `{baseUrl}/v1/messages`, or `{baseUrl}/messages`
 * when `baseUrl` already ends in `/v1` (trailing slashes ignored). So
 * `https://api.anthropic.com` (the official SDK's convention) and
 * `https://api.anthropic.com/v1` both reach `https://api.anthropic.com/v1/messages`.
 */
export const messagesUrl = (baseUrl: string = "https://api.anthropic.com"): string => {
  const base = baseUrl.trim().replace(/\/+$/, "")
  return `${/\/v1$/i.test(base) ? base : `${base}/v1`}/messages`
}

/** The model over the current `HttpClient`. */
export const make = (options: Options): Effect.Effect<ChatModelShape, never, HttpClient.HttpClient> =>
  HttpModel.make(() => ({
    name: "AnthropicModel",
    model: options.model,
    post: HttpChat.postOptions(provider, options, messagesUrl(options.baseUrl), {
      "anthropic-version": apiVersion,
      "x-api-key": Redacted.value(options.apiKey)
    }),
    encode: (request) => encodeRequest(options, request),
    decode: (json) => decodeResponse(json),
    stream: (body) => ({ body: { ...body, stream: true }, decoder: AnthropicStream.decoder(decodeResponse) }),
    structuredOutput: options.structuredOutput !== false,
    toolSearch: options.toolSearch !== false
  }))

/** A `ChatModel` layer; provide an `HttpClient` layer with it. */
export const layer = (options: Options): Layer.Layer<ChatModel, never, HttpClient.HttpClient> => HttpModel.layer(make, options)

/**
 * Like {@link layer}, reading the key from `ANTHROPIC_API_KEY` (as `Redacted`),
 * the model from `ANTHROPIC_MODEL` (falling back to `options.model`; one of the
 * two is required) and the base URL from `ANTHROPIC_BASE_URL` (optional, an
 * http(s) URL, with or without `/v1`: see {@link messagesUrl}). A missing or
 * invalid value fails the layer with a {@link ModelConfigError} naming the
 * variable; an empty one counts as missing.
 */
export const layerConfig = (options: HttpModel.ConfigOptions<Options> = {}): Layer.Layer<ChatModel, ModelConfigError, HttpClient.HttpClient> =>
  HttpModel.layerConfig(provider, variables, layer, options)
