/**
 * OpenAI Responses as a `ChatModel`: it turns the transcript into
 * `POST {baseUrl}/responses` (bearer key, `model`, `input` items: role
 * messages, `function_call` items for earlier calls and
 * `function_call_output` items for their results, flat function `tools`),
 * and the `Response` object it gets back into a `Response`. `stream` asks
 * for server-sent events (`stream: true`) and reads `response.*` events
 * (`internal/responsesStream`). Tool definitions, calls and outputs come
 * from `providers/OpenAiResponses`; argument text goes to the registry as the
 * model wrote it. Reasoning items are not sent back (each request carries
 * the transcript, not a `previous_response_id`). Tool search
 * (`Request.toolSearch`) is the API's own, executed by the client: the search
 * tool goes as a `tool_search` tool (`execution: "client"`) and every deferred
 * tool as a function with `defer_loading: true`; the model's
 * `tool_search_call` is a call to the search tool, replayed as such, and its
 * result a `tool_search_output` with the definitions of the tools found.
 * Needs an `HttpClient`.
 */
import { Effect, Layer, Result, Schema } from "effect"
import { HttpClient } from "effect/http"
import { ChatModel, ChatModelError, type ChatModelShape, type FinishReason, type Message, type Request, type Response } from "../ChatModel.ts"
import * as ToolSearch from "../ToolSearch.ts"
import * as OpenAiResponses from "../../providers/OpenAiResponses.ts"
import type { ToolSpec } from "../../contract/Tool.ts"
import type { ToolCall } from "../../contract/ToolCall.ts"
import type { ToolResult } from "../../contract/ToolResult.ts"
import type { ProviderExportError } from "../../providers/ProviderExportError.ts"
import * as HttpChat from "./internal/httpChat.ts"
import * as HttpModel from "./internal/httpModel.ts"
import * as HttpStream from "./internal/httpStream.ts"
import * as OpenAi from "./internal/openAi.ts"
import * as ResponsesStream from "./internal/responsesStream.ts"
import { argumentsObject, argumentsText, inCallOrder } from "./internal/transcript.ts"
import type { ModelConfigError } from "./ModelConfigError.ts"

const provider = "openai-responses"

/** The environment variables `layerConfig` reads. */
const variables = OpenAi.variables("gpt-4.1-mini")

// ---------------------------------------------------------------------------
// options
// ---------------------------------------------------------------------------

/** A retry policy; its input is the failed attempt's `ChatModelError`. */
export type RetryPolicy = HttpChat.RetryPolicy

/** How to reach the model: the shared connection fields (key, model, timeout, retry, `retry-after` ceiling, headers), base URL, strict mode and extra body fields (as `OpenAiChatModel.Options`), and tool search. */
export interface Options extends OpenAi.Options {
  /**
   * Whether the model offers tool search executed by the client (`tool_search` tool, `defer_loading`
   * functions): default `true`. With `false` (an older model, or a compatible server without it), an
   * agent's tool search is portable: the tools a search finds are advertised as plain functions from
   * the next turn.
   */
  readonly toolSearch?: boolean
}

/** Up to 3 retries, jittered exponential backoff from 500 ms. */
export const defaultRetry: RetryPolicy = HttpChat.defaultRetry

// ---------------------------------------------------------------------------
// request
// ---------------------------------------------------------------------------

/** `EasyInputMessage` with text content. */
export interface InputMessage {
  readonly role: "system" | "user" | "assistant"
  readonly content: string
}

/** `ResponseFunctionToolCall` as an input item (an earlier call, replayed). */
export interface FunctionCallItem {
  readonly type: "function_call"
  readonly call_id: string
  readonly name: string
  readonly arguments: string
}

/** One entry of the request's `input`. */
export type InputItem =
  | InputMessage
  | FunctionCallItem
  | OpenAiResponses.FunctionCallOutput
  | OpenAiResponses.ToolSearchCall
  | OpenAiResponses.ToolSearchOutput

/** One entry of the request's `tools`. */
export type WireTool = OpenAiResponses.FunctionTool | OpenAiResponses.ToolSearchTool

/** The request body this adapter sends. */
export interface RequestBody {
  readonly model: string
  readonly input: ReadonlyArray<InputItem>
  readonly tools?: ReadonlyArray<WireTool>
  readonly [parameter: string]: unknown
}

/** Tool search in the transcript: the search tool's name, and the deferred functions as the request sends them. */
export interface SearchInput {
  readonly tool: string
  readonly deferred: ReadonlyMap<string, OpenAiResponses.FunctionTool>
}

const callItem = (call: ToolCall): FunctionCallItem => ({
  type: "function_call",
  call_id: call.id,
  name: call.name,
  arguments: argumentsText(call.arguments)
})

/** A result of the search tool as the `tool_search_output` it answers with: the deferred functions it found. */
const searchOutput = (result: ToolResult, search: SearchInput): OpenAiResponses.ToolSearchOutput =>
  OpenAiResponses.toolSearchOutput(
    result.toolCallId,
    ToolSearch.revealedBy(result, search.tool).flatMap((name) => {
      const tool = search.deferred.get(name)
      return tool === undefined ? [] : [tool]
    })
  )

/**
 * The `input` items for a transcript. With `search`, a call to the search tool is the
 * `tool_search_call` it came as and its result a `tool_search_output` (no tools when it found none
 * or failed).
 */
export const wireInput = (messages: ReadonlyArray<Message>, search?: SearchInput): Array<InputItem> =>
  messages.flatMap((message, i): ReadonlyArray<InputItem> => {
    switch (message.role) {
      case "system":
      case "user":
        return [{ role: message.role, content: message.content }]
      case "assistant":
        return [
          ...(message.content === "" ? [] : [{ role: "assistant" as const, content: message.content }]),
          ...message.toolCalls.map((call) =>
            search !== undefined && call.name === search.tool
              ? OpenAiResponses.toolSearchCall(call.id, argumentsObject(call.arguments))
              : callItem(call)
          )
        ]
      case "tool":
        return inCallOrder(messages[i - 1], message.results).map((result) =>
          search !== undefined && result.name === search.tool
            ? searchOutput(result, search)
            : OpenAiResponses.toolMessages([result])[0]!
        )
    }
  })

/**
 * The request's `tools` under tool search: its tools (the search tool as the `tool_search` tool, in
 * its place) and then every deferred tool with `defer_loading: true`, the same list every turn; and
 * the deferred functions by name, for the transcript's `tool_search_output` items.
 */
const searchTools = (
  request: Request,
  toolSearch: NonNullable<Request["toolSearch"]>,
  strict: OpenAi.Options["strict"]
): Result.Result<{ readonly tools: Array<WireTool>; readonly input: SearchInput }, ProviderExportError> => {
  const shown = new Set<string>(request.tools.map((spec) => spec.name))
  const loaded = request.tools.filter((spec) => spec.name !== toolSearch.tool)
  const searchSpec = request.tools.find((spec) => spec.name === toolSearch.tool)
  const all = toolSearch.deferred
  return Result.flatMap(
    OpenAiResponses.toolDefinitionsResult(loaded, { strict: strict ?? "auto" }),
    (functions) =>
      Result.map(deferredDefinitions(all, strict ?? "auto"), (deferred) => {
        const tools: Array<WireTool> = functions
        if (searchSpec !== undefined) {
          tools.splice(request.tools.indexOf(searchSpec), 0, OpenAiResponses.toolSearchTool(searchSpec))
        }
        // a deferred tool the request also shows is sent once, shown
        const later = all.some((spec) => shown.has(spec.name))
          ? deferred.tools.filter((_, i) => !shown.has(all[i]!.name))
          : deferred.tools
        return {
          tools: [...tools, ...later],
          input: {
            tool: toolSearch.tool,
            deferred: later === deferred.tools
              ? deferred.byName
              : new Map(later.map((tool) => [tool.name, tool] as const))
          }
        }
      })
  )
}

/**
 * The deferred functions (and by name), kept per `Request.toolSearch.deferred` array (the same array
 * every turn of a run, and across the runs over one registry) with the strict mode they were exported under.
 */
const exportedDeferred = new WeakMap<ReadonlyArray<ToolSpec>, {
  readonly strict: OpenAiResponses.Strict
  readonly exported: Result.Result<DeferredFunctions, ProviderExportError>
}>()

interface DeferredFunctions {
  readonly tools: ReadonlyArray<OpenAiResponses.FunctionTool>
  readonly byName: ReadonlyMap<string, OpenAiResponses.FunctionTool>
}

const deferredDefinitions = (
  deferred: ReadonlyArray<ToolSpec>,
  strict: OpenAiResponses.Strict
): Result.Result<DeferredFunctions, ProviderExportError> => {
  const kept = exportedDeferred.get(deferred)
  if (kept !== undefined && kept.strict === strict) return kept.exported
  const exported = Result.map(
    OpenAiResponses.toolDefinitionsResult(deferred, { strict, deferLoading: deferred.map((spec) => spec.name) }),
    (tools) => ({ tools, byName: new Map(tools.map((tool) => [tool.name, tool] as const)) })
  )
  exportedDeferred.set(deferred, { strict, exported })
  return exported
}

/**
 * The request body for `request`; fails when a tool cannot be exported. With `request.toolSearch`, the
 * search tool is the client `tool_search` tool and the deferred tools follow the others with
 * `defer_loading: true` (exported once per deferred list).
 */
export const encodeRequest = (
  options: Pick<Options, "model" | "strict" | "parameters">,
  request: Request
): Result.Result<RequestBody, ChatModelError> => {
  const search = request.toolSearch === undefined ? undefined : searchTools(request, request.toolSearch, options.strict)
  const tools = (specs: ReadonlyArray<ToolSpec>, exported: { readonly strict: OpenAiResponses.Strict }) =>
    search === undefined
      ? OpenAiResponses.toolDefinitionsResult(specs, exported)
      : Result.map(search, ({ tools }) => tools)
  return OpenAi.withOutput(
    provider,
    OpenAi.requestBody<WireTool, { readonly input: Array<InputItem> }>(provider, options, tools, request, (messages) => ({
      input: wireInput(messages, search === undefined || Result.isFailure(search) ? undefined : search.success.input)
    })),
    request,
    (output) => OpenAiResponses.textFormatResult(output, { strict: options.strict ?? "auto" }),
    (body, format): RequestBody => ({ ...body, text: { ...(body.text as object | undefined), format } })
  )
}

// ---------------------------------------------------------------------------
// response
// ---------------------------------------------------------------------------

const Tokens = Schema.optionalKey(Schema.NullOr(Schema.Number))

const ResponseBody = Schema.Struct({
  status: Schema.optionalKey(Schema.NullOr(Schema.String)),
  output: Schema.Array(Schema.Unknown),
  usage: Schema.optionalKey(Schema.NullOr(Schema.Struct({ input_tokens: Tokens, output_tokens: Tokens }))),
  incomplete_details: Schema.optionalKey(Schema.NullOr(Schema.Struct({ reason: Schema.optionalKey(Schema.NullOr(Schema.String)) }))),
  error: Schema.optionalKey(Schema.NullOr(Schema.Struct({
    code: Schema.optionalKey(Schema.NullOr(Schema.String)),
    message: Schema.optionalKey(Schema.NullOr(Schema.String))
  })))
})

const Item = Schema.Struct({ type: Schema.String })

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** Error codes of a failed response worth asking again. */
const retryableCodes = new Set(["server_error", "rate_limit_exceeded", "overloaded", "service_unavailable"])

/** The error a failed response (or an `error` event) reports: `provider`, retryable for server and rate-limit codes. */
export const failure = (error: { readonly code?: string | null; readonly message?: string | null } | null | undefined): ChatModelError =>
  HttpStream.providerError(
    provider,
    `response failed${error?.code == null ? "" : ` ${error.code}`}: ${error?.message ?? "no message"}`,
    error?.code != null && retryableCodes.has(error.code)
  )

const textOf = (items: ReadonlyArray<unknown>, kind: "output_text" | "refusal"): string =>
  items.flatMap((item) => {
    if (!isRecord(item) || item.type !== "message" || !Array.isArray(item.content)) return []
    return item.content.flatMap((part: unknown) =>
      isRecord(part) && part.type === kind
        ? [String(kind === "output_text" ? part.text ?? "" : part.refusal ?? "")]
        : []
    )
  }).join("")

/**
 * The `Response` for a Responses API `Response` object: the `output_text`
 * of its message items (their refusal when there is none), its
 * `function_call` items as calls (argument text untouched; strict-mode nulls
 * for optional properties become absent keys when `specs` are given), other
 * tool items as passthrough (but a client `tool_search_call`, which is a
 * call to the search tool `toolSearch` when given), usage, and the finish
 * reason (`incomplete` for `max_output_tokens` is `length`). A `failed`
 * response is its error.
 */
export const decodeResponse = (
  body: unknown,
  specs?: Request["tools"],
  toolSearch?: string
): Result.Result<Response, ChatModelError> => {
  const decoded = Schema.decodeUnknownResult(ResponseBody)(body)
  if (Result.isFailure(decoded)) return Result.fail(HttpChat.decodeError(provider, decoded.failure.message))
  const { error, incomplete_details, output, status, usage } = decoded.success
  if (status === "failed") return Result.fail(failure(error))
  const items: Array<OpenAiResponses.OutputItem> = []
  for (const [i, raw] of output.entries()) {
    if (Result.isFailure(Schema.decodeUnknownResult(Item)(raw))) {
      return Result.fail(HttpChat.decodeError(provider, `output[${i}] has no type`))
    }
    items.push(raw as OpenAiResponses.OutputItem)
  }
  const calls = OpenAiResponses.toolCalls(items, {
    ...(specs === undefined ? {} : { specs }),
    ...(toolSearch === undefined ? {} : { toolSearch })
  })
  const text = textOf(items, "output_text")
  const finishReason: FinishReason = status === "incomplete"
    ? incomplete_details?.reason === "max_output_tokens"
      ? "length"
      : incomplete_details?.reason === "content_filter"
      ? "content_filter"
      : "other"
    : calls.calls.length > 0
    ? "tool_calls"
    : "stop"
  return Result.succeed({
    text: text === "" ? textOf(items, "refusal") : text,
    toolCalls: calls.calls,
    usage: { inputTokens: usage?.input_tokens ?? 0, outputTokens: usage?.output_tokens ?? 0 },
    finishReason,
    ...(calls.passthrough.length === 0 ? {} : { passthrough: calls.passthrough })
  })
}

// ---------------------------------------------------------------------------
// service
// ---------------------------------------------------------------------------

/** The model over the current `HttpClient`. */
export const make = (options: Options): Effect.Effect<ChatModelShape, never, HttpClient.HttpClient> =>
  HttpModel.make(() =>
    OpenAi.spec(provider, "OpenAiResponsesModel", "responses", options, {
      encode: (request) => encodeRequest(options, request),
      decode: (json, specs, request) => decodeResponse(json, specs, request.toolSearch?.tool),
      stream: (body, specs, request) => ({
        body: { ...body, stream: true },
        decoder: ResponsesStream.decoder({
          response: (response) => decodeResponse(response, specs, request.toolSearch?.tool),
          call: (item) => OpenAiResponses.toolCalls([item], specs === undefined ? {} : { specs }).calls[0]!,
          failure,
          ...(request.toolSearch === undefined ? {} : { toolSearch: request.toolSearch.tool })
        })
      }),
      toolSearch: options.toolSearch !== false
    })
  )

/** A `ChatModel` layer; provide an `HttpClient` layer with it. */
export const layer = (options: Options): Layer.Layer<ChatModel, never, HttpClient.HttpClient> => HttpModel.layer(make, options)

/**
 * Like {@link layer}, reading the same variables as `OpenAiChatModel`: the key
 * from `OPENAI_API_KEY`, the model from `OPENAI_MODEL` (falling back to
 * `options.model`; one of the two is required) and the base URL from
 * `OPENAI_BASE_URL` (optional, including `/v1`). A missing or invalid value
 * fails the layer with a {@link ModelConfigError} naming the variable.
 */
export const layerConfig = (options: HttpModel.ConfigOptions<Options> = {}): Layer.Layer<ChatModel, ModelConfigError, HttpClient.HttpClient> =>
  HttpModel.layerConfig(provider, variables, layer, options)
