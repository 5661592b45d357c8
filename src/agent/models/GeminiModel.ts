/**
 * Google Gemini as a `ChatModel`: it turns the transcript into
 * `POST {baseUrl}/v1beta/models/{model}:generateContent` (`x-goog-api-key`,
 * `contents` with `user` / `model` roles, system prompt as
 * `systemInstruction`, function results as `functionResponse` parts) and the
 * first candidate into a `Response`; `stream` uses
 * `:streamGenerateContent?alt=sse`, whose events are partial
 * `GenerateContentResponse`s (`internal/geminiStream`). Declarations, calls
 * and function responses come from `providers/Gemini`. Gemini sends whole
 * calls, sometimes without an id: those get a stable one from their position
 * (adjacent text parts are merged first, so a streamed answer and the same
 * answer whole give the same ids). A call's `thoughtSignature` travels in
 * `ToolCall.provider` and is sent back with the call. Needs an `HttpClient`.
 */
import { Effect, Layer, Redacted, Result, Schema } from "effect"
import { HttpClient } from "effect/http"
import { ChatModel, type ChatModelError, type ChatModelShape, type FinishReason, type Message, type Request, type Response } from "../ChatModel.ts"
import * as Gemini from "../../providers/Gemini.ts"
import type { ToolCall } from "../../contract/ToolCall.ts"
import type * as ModelConfig from "./internal/config.ts"
import * as GeminiStream from "./internal/geminiStream.ts"
import * as HttpChat from "./internal/httpChat.ts"
import * as HttpModel from "./internal/httpModel.ts"
import { argumentsObject, systemApart } from "./internal/transcript.ts"
import type { ModelConfigError } from "./ModelConfigError.ts"

const provider = "gemini"

/** The environment variables `layerConfig` reads. */
const variables: ModelConfig.Variables = {
  apiKey: { name: "GEMINI_API_KEY", hint: "your Gemini API key" },
  model: { name: "GEMINI_MODEL", hint: "a model name, e.g. gemini-2.5-flash" },
  baseUrl: { name: "GEMINI_BASE_URL", example: "https://generativelanguage.googleapis.com" }
}

// ---------------------------------------------------------------------------
// options
// ---------------------------------------------------------------------------

/** A retry policy; its input is the failed attempt's `ChatModelError`. */
export type RetryPolicy = HttpChat.RetryPolicy

/** How to reach the model: the shared connection fields (key, model, timeout, retry, `retry-after` ceiling, headers) and this adapter's own. */
export interface Options extends HttpChat.ConnectionOptions {
  /** `gemini-2.5-flash` (a leading `models/` is accepted). */
  readonly model: string
  /** Default `https://generativelanguage.googleapis.com`, with or without `/v1beta`. See {@link modelUrl}. */
  readonly baseUrl?: string
  /** Declaration dialect and names, as `Gemini.toolDefinitions` takes them. */
  readonly export?: Gemini.ExportOptions
  /** Extra body fields (`generationConfig`, `safetySettings`, `toolConfig`, ...). */
  readonly parameters?: Readonly<Record<string, unknown>>
  /**
   * Whether the model answers in JSON under `responseJsonSchema` while it may call tools (Gemini 3
   * does): default `true`. With `false`, an agent asking for typed output gives it a final-answer tool
   * and every turn forces a function call (`toolConfig` mode `ANY`, unless `parameters` set `toolConfig`).
   */
  readonly structuredOutput?: boolean
}

/** Up to 3 retries, jittered exponential backoff from 500 ms. */
export const defaultRetry: RetryPolicy = HttpChat.defaultRetry

// ---------------------------------------------------------------------------
// request
// ---------------------------------------------------------------------------

/** A `Part` as this adapter sends it. */
export type WirePart =
  | { readonly text: string }
  | { readonly functionCall: Gemini.FunctionCall; readonly thoughtSignature?: string }
  | { readonly functionResponse: Gemini.FunctionResponse }

/** A `Content` as this adapter sends it. */
export interface WireContent {
  readonly role: "user" | "model"
  readonly parts: ReadonlyArray<WirePart>
}

/** The request body this adapter sends. */
export interface RequestBody {
  readonly contents: ReadonlyArray<WireContent>
  readonly systemInstruction?: { readonly parts: ReadonlyArray<{ readonly text: string }> }
  readonly tools?: ReadonlyArray<Gemini.Tool>
  readonly [parameter: string]: unknown
}

const isObject = (value: unknown): value is { readonly [key: string]: unknown } =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const callPart = (call: ToolCall): WirePart => {
  const signature = call.provider?.["thoughtSignature"]
  return {
    functionCall: {
      ...(call.id.startsWith(Gemini.generatedIdPrefix) ? {} : { id: call.id }),
      name: call.name,
      args: argumentsObject(call.arguments)
    },
    ...(typeof signature === "string" ? { thoughtSignature: signature } : {})
  }
}

/**
 * The `systemInstruction` text (system messages joined by a blank line) and
 * the `contents`: a user message right after function responses joins that
 * user content; an empty assistant turn is left out.
 */
export const wireContents = (
  messages: ReadonlyArray<Message>
): { readonly system: string | undefined; readonly contents: Array<WireContent> } => {
  const { system, turns } = systemApart<WireContent>(messages, {
    user: (text) => ({ role: "user", parts: [{ text }] }),
    join: (last, text) => last.role === "user" ? { role: "user", parts: [...last.parts, { text }] } : undefined,
    assistant: (content, toolCalls) => ({
      role: "model",
      parts: [...(content === "" ? [] : [{ text: content }]), ...toolCalls.map(callPart)]
    }),
    tool: (results, previous) => Gemini.toolMessages(results, previous?.role === "assistant" ? { calls: previous.toolCalls } : {})
  })
  return { system, contents: turns }
}

/** The request body for `request`; fails when a tool cannot be exported. */
export const encodeRequest = (
  options: Pick<Options, "export" | "parameters">,
  request: Request
): Result.Result<RequestBody, ChatModelError> => {
  const tools = Gemini.toolDefinitionsResult(request.tools, options.export ?? {})
  if (Result.isFailure(tools)) return Result.fail(HttpChat.requestError(provider, tools.failure.message))
  const { contents, system } = wireContents(request.messages)
  let format: Gemini.ResponseFormat | undefined
  if (request.output !== undefined) {
    const exported = Gemini.responseFormatResult(request.output)
    if (Result.isFailure(exported)) return Result.fail(HttpChat.requestError(provider, exported.failure.message))
    format = exported.success
  }
  const generationConfig = options.parameters?.["generationConfig"]
  return Result.succeed({
    ...options.parameters,
    contents,
    ...(system === undefined ? {} : { systemInstruction: { parts: [{ text: system }] } }),
    ...(tools.success.length === 0 ? {} : { tools: tools.success }),
    ...(format === undefined ? {} : { generationConfig: { ...(generationConfig as object | undefined), ...format } }),
    // the answer is a function call: one is forced every turn (unless the caller chose a toolConfig)
    ...(request.answerTool === undefined || options.parameters?.["toolConfig"] !== undefined
      ? {}
      : { toolConfig: { functionCallingConfig: { mode: "ANY" } } })
  })
}

// ---------------------------------------------------------------------------
// response
// ---------------------------------------------------------------------------

const Count = Schema.optionalKey(Schema.NullOr(Schema.Number))

const Body = Schema.Struct({
  candidates: Schema.optionalKey(Schema.NullOr(Schema.Array(Schema.Struct({
    content: Schema.optionalKey(Schema.NullOr(Schema.Struct({
      parts: Schema.optionalKey(Schema.NullOr(Schema.Array(Schema.Unknown)))
    }))),
    finishReason: Schema.optionalKey(Schema.NullOr(Schema.String)),
    index: Schema.optionalKey(Schema.NullOr(Schema.Number))
  })))),
  usageMetadata: Schema.optionalKey(Schema.NullOr(Schema.Struct({
    promptTokenCount: Count,
    toolUsePromptTokenCount: Count,
    candidatesTokenCount: Count,
    thoughtsTokenCount: Count
  }))),
  promptFeedback: Schema.optionalKey(Schema.NullOr(Schema.Struct({ blockReason: Schema.optionalKey(Schema.NullOr(Schema.String)) })))
})

const filtered = new Set(["SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY", "LANGUAGE"])

/** The `FinishReason` of a candidate: `STOP` is `tool_calls` when it called tools, `MAX_TOKENS` is `length`, safety stops `content_filter`. */
export const finishReasonOf = (reason: string | null | undefined, calls: number): FinishReason | undefined => {
  if (reason === undefined || reason === null || reason === "" || reason === "FINISH_REASON_UNSPECIFIED") return undefined
  if (reason === "STOP") return calls > 0 ? "tool_calls" : "stop"
  if (reason === "MAX_TOKENS") return "length"
  return filtered.has(reason) ? "content_filter" : "other"
}

/** The parts with each run of adjacent plain text parts (same `thought` flag) merged into one. */
export const mergeText = (parts: ReadonlyArray<Gemini.Part>): Array<Gemini.Part> => {
  const out: Array<Gemini.Part> = []
  const plain = (part: Gemini.Part) =>
    typeof part.text === "string" && Object.keys(part).every((k) => k === "text" || k === "thought" || k === "thoughtSignature")
  for (const part of parts) {
    const last = out.at(-1)
    if (last !== undefined && plain(last) && plain(part) && (last.thought ?? false) === (part.thought ?? false)) {
      const signature = last.thoughtSignature ?? part.thoughtSignature
      out[out.length - 1] = {
        ...last,
        text: `${last.text}${part.text}`,
        ...(signature === undefined ? {} : { thoughtSignature: signature })
      }
    } else out.push(part)
  }
  return out
}

/** The calls of merged parts, ids made up where missing, each `thoughtSignature` in `provider`. */
export const callsOf = (parts: ReadonlyArray<Gemini.Part>) => {
  const found = Gemini.toolCalls(parts)
  const signatures = parts.filter((part) => part.functionCall !== undefined).map((part) => part.thoughtSignature)
  return {
    calls: found.calls.map((call, i): ToolCall => {
      const signature = signatures[i]
      return signature === undefined ? call : { ...call, provider: { thoughtSignature: signature } }
    }),
    passthrough: found.passthrough
  }
}

/**
 * The `Response` for a `GenerateContentResponse`: the first candidate's
 * text (thoughts left out), its `functionCall` parts as calls (`args` as the
 * object it is), code-execution parts as passthrough, usage (output counts
 * thinking tokens too), and the finish reason. A prompt blocked before any
 * candidate is an empty answer with `content_filter`.
 */
export const decodeResponse = (body: unknown): Result.Result<Response, ChatModelError> => {
  const decoded = Schema.decodeUnknownResult(Body)(body)
  if (Result.isFailure(decoded)) return Result.fail(HttpChat.decodeError(provider, decoded.failure.message))
  const { candidates, promptFeedback, usageMetadata } = decoded.success
  const candidate = candidates?.[0]
  const usage = {
    inputTokens: (usageMetadata?.promptTokenCount ?? 0) + (usageMetadata?.toolUsePromptTokenCount ?? 0),
    outputTokens: (usageMetadata?.candidatesTokenCount ?? 0) + (usageMetadata?.thoughtsTokenCount ?? 0)
  }
  if (candidate === undefined) {
    if (typeof promptFeedback?.blockReason === "string") {
      return Result.succeed({ text: "", toolCalls: [], usage, finishReason: "content_filter" })
    }
    return Result.fail(HttpChat.decodeError(provider, "the response has no candidates"))
  }
  const raw = candidate.content?.parts ?? []
  for (const [i, part] of raw.entries()) {
    if (!isObject(part)) return Result.fail(HttpChat.decodeError(provider, `candidates[0].content.parts[${i}] is not an object`))
  }
  const parts = mergeText(raw as ReadonlyArray<Gemini.Part>)
  const { calls, passthrough } = callsOf(parts)
  const finishReason = finishReasonOf(candidate.finishReason, calls.length)
  return Result.succeed({
    text: parts.filter((part) => typeof part.text === "string" && part.thought !== true).map((part) => part.text).join(""),
    toolCalls: calls,
    usage,
    ...(finishReason === undefined ? {} : { finishReason }),
    ...(passthrough.length === 0 ? {} : { passthrough })
  })
}

// ---------------------------------------------------------------------------
// service
// ---------------------------------------------------------------------------

/**
 * The URL of a model method: `{baseUrl}/v1beta/models/{model}:{method}`, or
 * without the added `/v1beta` when `baseUrl` already ends in a version
 * (`/v1beta`, `/v1`, ...).
 */
export const modelUrl = (model: string, method: string, baseUrl: string = "https://generativelanguage.googleapis.com"): string => {
  const base = baseUrl.trim().replace(/\/+$/, "")
  const versioned = /\/v\d+(alpha|beta)?\d*$/i.test(base) ? base : `${base}/v1beta`
  return `${versioned}/models/${encodeURIComponent(model.replace(/^models\//, ""))}:${method}`
}

/** The model over the current `HttpClient`. */
export const make = (options: Options): Effect.Effect<ChatModelShape, never, HttpClient.HttpClient> =>
  HttpModel.make(() => ({
    name: "GeminiModel",
    model: options.model,
    post: HttpChat.postOptions(provider, options, modelUrl(options.model, "generateContent", options.baseUrl), {
      "x-goog-api-key": Redacted.value(options.apiKey)
    }),
    encode: (request) => encodeRequest(options, request),
    decode: (json) => decodeResponse(json),
    stream: (body) => ({
      url: `${modelUrl(options.model, "streamGenerateContent", options.baseUrl)}?alt=sse`,
      body,
      decoder: GeminiStream.decoder({ response: decodeResponse, calls: callsOf, mergeText })
    }),
    structuredOutput: options.structuredOutput !== false
  }))

/** A `ChatModel` layer; provide an `HttpClient` layer with it. */
export const layer = (options: Options): Layer.Layer<ChatModel, never, HttpClient.HttpClient> => HttpModel.layer(make, options)

/**
 * Like {@link layer}, reading the key from `GEMINI_API_KEY` (as `Redacted`),
 * the model from `GEMINI_MODEL` (falling back to `options.model`; one of the
 * two is required) and the base URL from `GEMINI_BASE_URL` (optional, an
 * http(s) URL: see {@link modelUrl}). A missing or invalid value fails the
 * layer with a {@link ModelConfigError} naming the variable.
 */
export const layerConfig = (options: HttpModel.ConfigOptions<Options> = {}): Layer.Layer<ChatModel, ModelConfigError, HttpClient.HttpClient> =>
  HttpModel.layerConfig(provider, variables, layer, options)
