/**
 * Any `effect/ai` `LanguageModel` as a `ChatModel`, with tool calls left to
 * tinyagents: the advertised specs become handler-less `Tool.dynamic` tools
 * (their canonical JSON Schema as parameters), `generateText` runs with
 * `disableToolCallResolution: true` and `toolCallValidation: "deferred"` so
 * the model's calls come back unexecuted and undecoded, and they become
 * `ToolCall`s for the registry to check. The transcript becomes a `Prompt`
 * (tool results as `tool-result` parts). Errors (`AiError`) become
 * `ChatModelError`s. `stream` runs `streamText` the same way and maps its
 * parts (`text-delta`, `tool-params-*`, `tool-call`, `finish`, `error`) to
 * `StreamPart`s. Approvals and structured output are not bridged.
 */
import { Duration, Effect, Layer, type Redacted, Stream } from "effect"
import { AiError, LanguageModel, type Prompt, type Response as AiResponse, Tool, Toolkit } from "effect/ai"
import {
  ChatModel,
  ChatModelError,
  type ChatModelShape,
  type FinishReason,
  make as ChatModelMake,
  type Message,
  type Request,
  type Response,
  type StreamPart,
  type Usage
} from "../ChatModel.ts"
import { carriesMedia, contentFor, fileNameOf, textOf } from "../../providers/ResultContent.ts"
import type { ToolSpec } from "../../contract/Tool.ts"
import type { ToolCall } from "../../contract/ToolCall.ts"
import type { ToolResult } from "../../contract/ToolResult.ts"
import * as HttpChat from "./internal/httpChat.ts"
import { inCallOrder } from "./internal/transcript.ts"

// ---------------------------------------------------------------------------
// options
// ---------------------------------------------------------------------------

/** A retry policy; its input is the failed attempt's `ChatModelError`. */
export type RetryPolicy = HttpChat.RetryPolicy

/** Options of the bridge. */
export interface Options {
  /** Values scrubbed from error messages (e.g. the provider client's API key). */
  readonly secrets?: ReadonlyArray<Redacted.Redacted<string>>
  /** `toolChoice` of every request. Default `"auto"`. */
  readonly toolChoice?: "auto" | "none" | "required"
  /** Per attempt; when streaming, between parts. Default: none (the provider client's own). */
  readonly timeout?: Duration.Input
  /**
   * Which failures to ask again (a stream only before its first part: nothing is re-sent): retryable `AiError`s only, never sooner than
   * their `retryAfter`. Default `false` (provider clients usually retry
   * themselves); `OpenAiChatModel.defaultRetry` is a sensible choice.
   */
  readonly retry?: RetryPolicy | false
  /** A `retryAfter` longer than this fails at once. Default 60 seconds. */
  readonly maxRetryAfter?: Duration.Input
}

// ---------------------------------------------------------------------------
// tools
// ---------------------------------------------------------------------------

/**
 * One handler-less dynamic tool per spec, named by canonical name, with the
 * spec's description and canonical input schema. The `LanguageModel`
 * advertises them; it never runs them.
 */
export const toTools = (specs: ReadonlyArray<ToolSpec>): Array<Tool.AnyDynamic> =>
  specs.map((spec) =>
    Tool.dynamic(spec.name, {
      description: spec.description,
      parameters: spec.inputSchema
    })
  )

// ---------------------------------------------------------------------------
// prompt
// ---------------------------------------------------------------------------

/** Arguments as a prompt `tool-call` part carries them: parsed values; JSON text parsed, other text kept as is. */
const paramsOf = (args: unknown): unknown => {
  if (typeof args !== "string") return args
  try {
    return JSON.parse(args)
  } catch {
    return args
  }
}

const toolResultPart = (result: ToolResult, calledAs: string | undefined): Prompt.ToolResultPartEncoded => {
  const text = textOf(result)
  return {
    type: "tool-result",
    id: result.toolCallId,
    name: calledAs ?? result.name,
    isFailure: result.isError,
    result: result.isError || result.value === undefined ? text : result.value,
    modelOutput: contentFor(result, carriesMedia).map((block) => {
      switch (block.type) {
        case "text":
          return { type: "text" as const, text: block.text }
        case "image":
        case "audio":
          return { type: "file" as const, mediaType: block.mimeType, data: block.data }
        case "resource":
          return {
            type: "file" as const,
            mediaType: block.resource.mimeType ?? "application/octet-stream",
            fileName: fileNameOf(block.resource),
            data: "blob" in block.resource ? block.resource.blob : ""
          }
      }
    }),
    providerExecuted: false
  }
}

/**
 * The transcript as encoded prompt messages: system and user text, assistant
 * text plus `tool-call` parts, and one `tool` message of `tool-result` parts
 * per tool turn (in call order, named as the model called them).
 */
export const toPrompt = (messages: ReadonlyArray<Message>): Array<Prompt.MessageEncoded> =>
  messages.map((message, i): Prompt.MessageEncoded => {
    switch (message.role) {
      case "system":
        return { role: "system", content: message.content }
      case "user":
        return { role: "user", content: [{ type: "text", text: message.content }] }
      case "assistant":
        return {
          role: "assistant",
          content: [
            ...(message.content === "" ? [] : [{ type: "text" as const, text: message.content }]),
            ...message.toolCalls.map((call) => ({
              type: "tool-call" as const,
              id: call.id,
              name: call.name,
              params: paramsOf(call.arguments),
              providerExecuted: false
            }))
          ]
        }
      case "tool": {
        const previous = messages[i - 1]
        const names = new Map(previous?.role === "assistant" ? previous.toolCalls.map((c) => [c.id, c.name]) : [])
        return {
          role: "tool",
          content: inCallOrder(previous, message.results).map((result) =>
            toolResultPart(result, names.get(result.toolCallId))
          )
        }
      }
    }
  })

// ---------------------------------------------------------------------------
// response
// ---------------------------------------------------------------------------

/** The `FinishReason` of an `effect/ai` finish reason (`tool-calls` is `tool_calls`, ...). */
export const finishReasonOf = (reason: AiResponse.FinishReason): FinishReason => {
  switch (reason) {
    case "stop":
    case "length":
      return reason
    case "tool-calls":
      return "tool_calls"
    case "content-filter":
      return "content_filter"
    default:
      return "other"
  }
}

/** What a response is made of, as parts arrive. */
class Gathered {
  readonly text: Array<string> = []
  readonly toolCalls: Array<ToolCall> = []
  readonly passthrough: Array<unknown> = []
  usage: Usage = { inputTokens: 0, outputTokens: 0 }
  finishReason: FinishReason | undefined = undefined
  finished = false

  finish(part: AiResponse.FinishPart): void {
    this.finished = true
    this.usage = { inputTokens: part.usage.inputTokens.total ?? 0, outputTokens: part.usage.outputTokens.total ?? 0 }
    this.finishReason = finishReasonOf(part.reason)
  }

  response(): Response {
    return {
      text: this.text.join(""),
      toolCalls: this.toolCalls,
      usage: this.usage,
      ...(this.finishReason === undefined ? {} : { finishReason: this.finishReason }),
      ...(this.passthrough.length === 0 ? {} : { passthrough: this.passthrough })
    }
  }
}

/**
 * The `Response` for the parts `generateText` returned: text parts joined,
 * client-side `tool-call` parts as `ToolCall`s (parameters exactly as the
 * provider decoded them), provider-executed calls and their results as
 * passthrough, usage and finish reason from the `finish` part (0 and none when absent).
 */
export const fromParts = (parts: ReadonlyArray<AiResponse.AllParts<Record<string, Tool.Any>>>): Response => {
  const gathered = new Gathered()
  for (const part of parts) {
    if (part.type === "text") gathered.text.push(part.text)
    else if (part.type === "tool-call") {
      if (part.providerExecuted) gathered.passthrough.push(part)
      else gathered.toolCalls.push({ id: part.id, name: part.name, arguments: part.params })
    } else if (part.type === "tool-result") gathered.passthrough.push(part)
    else if (part.type === "finish") gathered.finish(part)
  }
  return gathered.response()
}

/**
 * The `StreamPart`s of a `streamText` stream: `text-delta` as `TextDelta`,
 * client-side `tool-params-start` / `-delta` as `ToolCallStarted` /
 * `ToolCallDelta`, each client-side `tool-call` as `ToolCall` (after a
 * `ToolCallStarted` when the provider sent no params parts), and `Finished`
 * (the response `fromParts` would make) when the stream ends after its
 * `finish` part. An `error` part is a `provider` error; a stream ending
 * without `finish` was cut.
 */
export const fromStreamParts = <E>(
  parts: Stream.Stream<AiResponse.StreamPart<Record<string, Tool.Any>, "deferred">, E>,
  secrets: ReadonlyArray<Redacted.Redacted<string>> = []
): Stream.Stream<StreamPart, E | ChatModelError> =>
  Stream.suspend(() => {
    const gathered = new Gathered()
    const started = new Set<string>()
    const map = (part: AiResponse.StreamPart<Record<string, Tool.Any>, "deferred">): Effect.Effect<ReadonlyArray<StreamPart>, ChatModelError> => {
      switch (part.type) {
        case "text-delta":
          gathered.text.push(part.delta)
          return Effect.succeed(part.delta === "" ? [] : [{ _tag: "TextDelta", text: part.delta }])
        case "tool-params-start":
          if (part.providerExecuted) return Effect.succeed([])
          started.add(part.id)
          return Effect.succeed([{ _tag: "ToolCallStarted", id: part.id, name: part.name }])
        case "tool-params-delta":
          return Effect.succeed(
            started.has(part.id) && part.delta !== "" ? [{ _tag: "ToolCallDelta", id: part.id, argumentsDelta: part.delta }] : []
          )
        case "tool-call": {
          if (part.providerExecuted) {
            gathered.passthrough.push(part)
            return Effect.succeed([])
          }
          const call: ToolCall = { id: part.id, name: part.name, arguments: part.params }
          gathered.toolCalls.push(call)
          const start: ReadonlyArray<StreamPart> = started.has(part.id)
            ? []
            : [{ _tag: "ToolCallStarted", id: part.id, name: part.name }]
          return Effect.succeed([...start, { _tag: "ToolCall", call }])
        }
        case "tool-result":
          gathered.passthrough.push(part)
          return Effect.succeed([])
        case "finish":
          gathered.finish(part)
          return Effect.succeed([])
        case "error":
          return Effect.fail(
            new ChatModelError({
              reason: "provider",
              message: HttpChat.scrub(`language-model: stream error: ${describe(part.error)}`, secrets),
              retryable: false
            })
          )
        default:
          return Effect.succeed([])
      }
    }
    const end = Effect.suspend((): Effect.Effect<ReadonlyArray<StreamPart>, ChatModelError> =>
      gathered.finished
        ? Effect.succeed([{ _tag: "Finished", response: gathered.response() }])
        : Effect.fail(
          new ChatModelError({
            reason: "transport",
            message: "language-model: the stream ended before its finish part",
            retryable: true
          })
        )
    )
    return parts.pipe(
      Stream.mapEffect(map),
      Stream.concat(Stream.fromEffect(end)),
      Stream.flattenIterable
    )
  })

const describe = (error: unknown): string => {
  if (error instanceof Error) return error.message
  if (typeof error === "string") return error
  try {
    return JSON.stringify(error) ?? String(error)
  } catch {
    return String(error)
  }
}

// ---------------------------------------------------------------------------
// errors
// ---------------------------------------------------------------------------

const statusOf = (reason: AiError.AiErrorReason): number | undefined => {
  const http = "http" in reason ? reason.http : undefined
  return typeof http === "object" && http !== null && "response" in http ? http.response?.status : undefined
}

/**
 * The `ChatModelError` for an `AiError`: rate limits are `rate_limited`,
 * network failures `transport`, unparseable output `decode`, everything else
 * `http`; `retryable` is the reason's own verdict.
 */
export const fromAiError = (
  error: AiError.AiError,
  secrets: ReadonlyArray<Redacted.Redacted<string>> = []
): ChatModelError => {
  if (!AiError.isAiError(error)) {
    // Typed away, but a provider hook may still fail with something else: report it, never crash on it.
    return new ChatModelError({ reason: "http", message: HttpChat.scrub(`language-model: ${String(error)}`, secrets), retryable: false })
  }
  const reason = error.reason
  const status = statusOf(reason)
  const kind: ChatModelError["reason"] = reason._tag === "RateLimitError"
    ? "rate_limited"
    : reason._tag === "NetworkError"
    ? "transport"
    : reason._tag === "InvalidOutputError" || reason._tag === "InvalidResponseError" ||
        reason._tag === "StructuredOutputError"
    ? "decode"
    : "http"
  return HttpChat.withRetryAfter(
    new ChatModelError({
      reason: kind,
      message: HttpChat.scrub(error.message, secrets),
      retryable: error.isRetryable,
      ...(status === undefined ? {} : { status })
    }),
    error.retryAfter
  )
}

// ---------------------------------------------------------------------------
// service
// ---------------------------------------------------------------------------

/** The `ChatModel` over a given `LanguageModel`. */
export const fromLanguageModel = (
  model: LanguageModel.LanguageModel,
  options: Options = {}
): ChatModelShape => {
  const policy: HttpChat.AttemptPolicy = {
    provider: "language-model",
    timeout: options.timeout === undefined ? undefined : Duration.fromInputUnsafe(options.timeout),
    retry: options.retry ?? false,
    maxRetryAfter: options.maxRetryAfter === undefined
      ? HttpChat.defaultMaxRetryAfter
      : Duration.fromInputUnsafe(options.maxRetryAfter)
  }
  // What `generateText` and `streamText` are asked: the prompt, and the tools (when there are any, else no
  // toolkit at all) as a toolkit whose calls are neither resolved nor validated here (the registry does both).
  const textOptions = (request: Request) =>
    ({
      prompt: toPrompt(request.messages),
      toolChoice: options.toolChoice ?? "auto",
      toolCallValidation: "deferred",
      disableToolCallResolution: true
    }) as const
  const toolkitOf = (request: Request) => request.tools.length === 0 ? undefined : Toolkit.make(...toTools(request.tools))
  const generate = (request: Request): Effect.Effect<Response, ChatModelError> => {
    const text = textOptions(request)
    const toolkit = toolkitOf(request)
    const generated = toolkit === undefined ? model.generateText(text) : model.generateText({ ...text, toolkit })
    return generated.pipe(
      Effect.map((response) => fromParts(response.content)),
      Effect.mapError((error) => fromAiError(error, options.secrets))
    )
  }
  const stream = (request: Request): Stream.Stream<StreamPart, ChatModelError> => {
    const text = textOptions(request)
    const toolkit = toolkitOf(request)
    const parts = toolkit === undefined ? model.streamText(text) : model.streamText({ ...text, toolkit })
    const mapped = fromStreamParts(
      (parts as Stream.Stream<AiResponse.StreamPart<Record<string, Tool.Any>, "deferred">, AiError.AiError>).pipe(
        Stream.mapError((error) => fromAiError(error, options.secrets))
      ),
      options.secrets
    )
    const timeout = policy.timeout
    const bounded = timeout === undefined ? mapped : mapped.pipe(
      Stream.timeoutOrElse({ duration: timeout, orElse: () => Stream.fail(HttpChat.timeoutError(policy.provider, timeout)) })
    )
    return HttpChat.retryBeforeFirst(bounded, policy).pipe(Stream.withSpan("LanguageModelBridge.stream"))
  }
  return ChatModelMake({
    generate: (request) => HttpChat.withPolicy(generate(request), policy).pipe(Effect.withSpan("LanguageModelBridge.generate")),
    stream
  })
}

/** The bridge over the current `LanguageModel`. */
export const make = (options: Options = {}): Effect.Effect<ChatModelShape, never, LanguageModel.LanguageModel> =>
  Effect.map(LanguageModel.LanguageModel, (model) => fromLanguageModel(model, options))

/** A `ChatModel` layer over the `LanguageModel` in context (e.g. a provider package's `model(...)` layer). */
export const layer = (options: Options = {}): Layer.Layer<ChatModel, never, LanguageModel.LanguageModel> =>
  Layer.effect(ChatModel, make(options))
