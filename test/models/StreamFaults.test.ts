/**
 * Stream faults across the HTTP adapters, each against a real `node:http`
 * server on 127.0.0.1 replaying server-sent events: a stream that fails
 * before delivering any part is asked again under the adapter's retry policy
 * (and only then: never once a part went out, never for a non-retryable
 * error); a key in an undecodable event is scrubbed before the quote is cut;
 * OpenAI-compatible tool-call deltas without an `index` (or two calls at one
 * index) assemble into separate calls; an `event: error` without an `error`
 * key is the provider's error.
 */
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Layer, Redacted, Schedule } from "effect"
import { Agent, ChatModel } from "../../src/index.ts"
import { AnthropicModel, GeminiModel, OpenAiChatModel, OpenAiResponsesModel } from "../../src/agent/models/index.ts"
import { assertNoSecret, captureLogs, serve } from "./support/loopback.ts"
import { type SseEvent, serveSse } from "./support/sseServer.ts"
import { ask, finished, generate, streamAll, streamFailure, textOf, trace } from "./support/streaming.ts"
import { registry, services } from "./support/tools.ts"

const key = "sk-proj-REVIEWKEY-0123456789abcdefghij"
/** A key's first characters: a prefix that survived a cut would show them. */
const prefix = key.slice(0, 10)

type Options = Pick<OpenAiChatModel.Options, "timeout" | "retry" | "maxRetryAfter">

const http = NodeHttpClient.layerUndici
const openAiChat = (origin: string, options: Options = {}) =>
  OpenAiChatModel.layer({ apiKey: Redacted.make(key), model: "gpt-4o-mini", baseUrl: `${origin}/v1`, ...options }).pipe(Layer.provide(http))
const anthropic = (origin: string, options: Options = {}) =>
  AnthropicModel.layer({ apiKey: Redacted.make(key), model: "claude-sonnet-4-5", baseUrl: origin, ...options }).pipe(Layer.provide(http))
const responses = (origin: string, options: Options = {}) =>
  OpenAiResponsesModel.layer({ apiKey: Redacted.make(key), model: "gpt-4.1-mini", baseUrl: `${origin}/v1`, ...options }).pipe(
    Layer.provide(http)
  )
const gemini = (origin: string, options: Options = {}) =>
  GeminiModel.layer({ apiKey: Redacted.make(key), model: "gemini-2.5-flash", baseUrl: origin, ...options }).pipe(Layer.provide(http))

/** Fast retries: the policy's shape (attempts) is what the tests check, not its delays. */
const fast = (retries: number) => Schedule.recurs(retries)

// --- OpenAI Chat Completions -------------------------------------------------

const chatChunk = (delta: Record<string, unknown>, finish: string | null = null): SseEvent => ({
  json: {
    id: "chatcmpl-abc123",
    object: "chat.completion.chunk",
    created: 1699896916,
    model: "gpt-4o-mini",
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }]
  }
})
const chatDone: SseEvent = { text: "[DONE]" }
const chatText = (...pieces: ReadonlyArray<string>): ReadonlyArray<SseEvent> => [
  chatChunk({ role: "assistant", content: "" }),
  ...pieces.map((content) => chatChunk({ content })),
  chatChunk({}, "stop"),
  chatDone
]
const chatTools = (...deltas: ReadonlyArray<Record<string, unknown>>): ReadonlyArray<SseEvent> => [
  chatChunk({ role: "assistant", content: null }),
  ...deltas.map((d) => chatChunk({ tool_calls: [d] })),
  chatChunk({}, "tool_calls"),
  chatDone
]

// --- Anthropic Messages --------------------------------------------------------

const aev = (value: { readonly type: string; readonly [field: string]: unknown }): SseEvent => ({ event: value.type, json: value })
const messageStart = aev({
  type: "message_start",
  message: {
    id: "msg_01",
    type: "message",
    role: "assistant",
    model: "claude-sonnet-4-5",
    content: [],
    stop_reason: null,
    stop_sequence: null,
    usage: { input_tokens: 10, output_tokens: 1 }
  }
})
const anthropicText = (text: string): ReadonlyArray<SseEvent> => [
  messageStart,
  aev({ type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }),
  aev({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text } }),
  aev({ type: "content_block_stop", index: 0 }),
  aev({ type: "message_delta", delta: { stop_reason: "end_turn", stop_sequence: null }, usage: { output_tokens: 5 } }),
  aev({ type: "message_stop" })
]
const anthropicError = (type: string, message: string) => aev({ type: "error", error: { type, message } })

// --- OpenAI Responses ----------------------------------------------------------

const rev = (value: { readonly type: string; readonly [field: string]: unknown }): SseEvent => ({ event: value.type, json: value })
const responseBody = (text: string, status = "completed") => ({
  id: "resp_1",
  object: "response",
  created_at: 1741476542,
  status,
  error: null,
  incomplete_details: null,
  model: "gpt-4.1-mini-2025-04-14",
  output: [{
    type: "message",
    id: "msg_1",
    status: "completed",
    role: "assistant",
    content: [{ type: "output_text", text, annotations: [] }]
  }],
  usage: { input_tokens: 3, output_tokens: 2, total_tokens: 5 }
})
const responsesText = (text: string): ReadonlyArray<SseEvent> => [
  rev({ type: "response.created", response: { ...responseBody("", "in_progress"), output: [] } }),
  rev({ type: "response.output_text.delta", item_id: "msg_1", output_index: 0, content_index: 0, delta: text }),
  rev({ type: "response.completed", response: responseBody(text) })
]

// --- Gemini --------------------------------------------------------------------

const geminiChunk = (text: string, finishReason?: string): SseEvent => ({
  json: {
    candidates: [{ content: { role: "model", parts: [{ text }] }, index: 0, ...(finishReason === undefined ? {} : { finishReason }) }],
    modelVersion: "gemini-2.5-flash"
  }
})
const geminiText = (text: string): ReadonlyArray<SseEvent> => [
  geminiChunk(text, "STOP"),
  { json: { candidates: [], usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 2, totalTokenCount: 5 } } }
]

const warnings = (lines: ReadonlyArray<string>, message: string) => lines.filter((line) => line.includes(message)).length

describe("stream faults: a failure before the first part is retried under the policy", () => {
  it.live("Anthropic: an overloaded_error as the first event (or after message_start, still no part) is asked again", () =>
    Effect.gen(function*() {
      const sse = yield* serveSse([
        { events: [anthropicError("overloaded_error", "Overloaded")] },
        { events: [messageStart, aev({ type: "ping" }), anthropicError("overloaded_error", "Overloaded")] },
        { events: anthropicText("fine now") }
      ])
      const logs = captureLogs()
      const parts = yield* streamAll(ask("x")).pipe(Effect.provide(anthropic(sse.origin, { retry: fast(3) })), Effect.provide(logs.layer))
      assert.strictEqual(textOf(parts), "fine now")
      assert.strictEqual(finished(parts).text, "fine now")
      assert.lengthOf(sse.requests, 3)
      // One warning per failed attempt.
      assert.strictEqual(warnings(logs.lines, "chat model request failed"), 2)
      assert.strictEqual(warnings(logs.lines, "chat model stream failed"), 0)
    }).pipe(Effect.scoped))

  it.live("the failed attempt's response is closed before it is asked again; none is left open", () =>
    Effect.gen(function*() {
      const sse = yield* serveSse([
        { events: [anthropicError("overloaded_error", "Overloaded")], then: "hang" },
        { events: anthropicText("fine now") }
      ])
      const parts = yield* streamAll(ask("x")).pipe(Effect.provide(anthropic(sse.origin, { retry: fast(3) })))
      assert.strictEqual(textOf(parts), "fine now")
      assert.isTrue(yield* Effect.promise(() => sse.closed(0)).pipe(Effect.timeout("10 seconds")))
      yield* Effect.promise(() => sse.closed(1)).pipe(Effect.timeout("10 seconds"))
      assert.strictEqual(sse.open(), 0)
    }).pipe(Effect.scoped))

  it.live("Anthropic: the policy's attempts bound the retries; a non-retryable first event is not asked again", () =>
    Effect.gen(function*() {
      const overloaded = { events: [anthropicError("overloaded_error", "Overloaded")] }
      const sse = yield* serveSse([overloaded, overloaded, overloaded, { events: [anthropicError("invalid_request_error", "bad")] }])
      const logs = captureLogs()
      const exhausted = yield* streamFailure(ask("x")).pipe(
        Effect.provide(anthropic(sse.origin, { retry: fast(2) })),
        Effect.provide(logs.layer)
      )
      assert.strictEqual(exhausted.error.reason, "provider")
      assert.isTrue(exhausted.error.retryable)
      assert.include(exhausted.error.message, "Overloaded")
      assert.lengthOf(sse.requests, 3)
      assert.strictEqual(warnings(logs.lines, "chat model request failed"), 3)
      const invalid = yield* streamFailure(ask("x")).pipe(Effect.provide(anthropic(sse.origin, { retry: fast(3) })))
      assert.isFalse(invalid.error.retryable)
      assert.lengthOf(sse.requests, 4)
    }).pipe(Effect.scoped))

  it.live("OpenAI Chat: a 200 whose socket is destroyed before any event is asked again; alone it says the connection closed", () =>
    Effect.gen(function*() {
      const sse = yield* serveSse([{ events: [], then: "cut" }, { events: chatText("hello") }, { events: [], then: "cut" }])
      const parts = yield* streamAll(ask("x")).pipe(Effect.provide(openAiChat(sse.origin, { retry: fast(3) })))
      assert.strictEqual(textOf(parts), "hello")
      assert.lengthOf(sse.requests, 2)
      const logs = captureLogs()
      const { error } = yield* streamFailure(ask("x")).pipe(
        Effect.provide(openAiChat(sse.origin, { retry: false })),
        Effect.provide(logs.layer)
      )
      assert.lengthOf(sse.requests, 3)
      assert.strictEqual(error.reason, "transport")
      assert.isTrue(error.retryable)
      assert.include(error.message, "openai-chat: the connection closed before any event")
      assert.notInclude(error.message, "Decode error")
      // Logged once, even without retries.
      assert.strictEqual(warnings(logs.lines, "chat model request failed"), 1)
    }).pipe(Effect.scoped))

  it.live("OpenAI Chat: a body that ends cleanly with no event at all is asked again", () =>
    Effect.gen(function*() {
      const sse = yield* serveSse([{ events: [] }, { events: chatText("hello") }])
      const parts = yield* streamAll(ask("x")).pipe(Effect.provide(openAiChat(sse.origin, { retry: fast(3) })))
      assert.strictEqual(textOf(parts), "hello")
      assert.lengthOf(sse.requests, 2)
    }).pipe(Effect.scoped))

  it.live("OpenAI Responses: an error event with code server_error as the first event is asked again", () =>
    Effect.gen(function*() {
      const sse = yield* serveSse([
        { events: [rev({ type: "error", code: "server_error", message: "The server had an error.", param: null })] },
        { events: responsesText("recovered") }
      ])
      const parts = yield* streamAll(ask("x")).pipe(Effect.provide(responses(sse.origin, { retry: fast(3) })))
      assert.strictEqual(textOf(parts), "recovered")
      assert.lengthOf(sse.requests, 2)
    }).pipe(Effect.scoped))

  it.live("Gemini: an UNAVAILABLE error event as the first event is asked again", () =>
    Effect.gen(function*() {
      const sse = yield* serveSse([
        { events: [{ json: { error: { code: 503, message: "The model is overloaded.", status: "UNAVAILABLE" } } }] },
        { events: geminiText("recovered") }
      ])
      const parts = yield* streamAll(ask("x")).pipe(Effect.provide(gemini(sse.origin, { retry: fast(3) })))
      assert.strictEqual(textOf(parts), "recovered")
      assert.lengthOf(sse.requests, 2)
    }).pipe(Effect.scoped))

  it.live("after a part went out nothing is asked again, whatever the policy", () =>
    Effect.gen(function*() {
      const sse = yield* serveSse([
        { events: [...anthropicText("partial").slice(0, 3), anthropicError("overloaded_error", "Overloaded")] },
        { events: anthropicText("never asked") }
      ])
      const { error, parts } = yield* streamFailure(ask("x")).pipe(Effect.provide(anthropic(sse.origin, { retry: fast(3) })))
      assert.isTrue(error.retryable)
      assert.strictEqual(textOf(parts), "partial")
      assert.lengthOf(sse.requests, 1)
    }).pipe(Effect.scoped))

  it.live("a 429 at opening waits the server's retry-after (also when its body quoted the key); beyond maxRetryAfter it fails at once", () =>
    Effect.gen(function*() {
      const limited = (wait: string) => ({
        status: 429,
        json: { error: { message: `Rate limit reached for key ${key}`, type: "requests", code: "rate_limit_exceeded" } },
        headers: { "retry-after-ms": wait }
      })
      const sse = yield* serveSse([limited("400"), { events: chatText("after the wait") }, limited("5000")])
      const started = Date.now()
      const parts = yield* streamAll(ask("x")).pipe(Effect.provide(openAiChat(sse.origin, { retry: fast(3) })))
      assert.isAtLeast(Date.now() - started, 400)
      assert.strictEqual(textOf(parts), "after the wait")
      assert.lengthOf(sse.requests, 2)
      const { error } = yield* streamFailure(ask("x")).pipe(
        Effect.provide(openAiChat(sse.origin, { retry: fast(3), maxRetryAfter: "1 second" }))
      )
      assert.strictEqual(error.reason, "rate_limited")
      assert.include(error.message, "[redacted]")
      assert.lengthOf(sse.requests, 3)
    }).pipe(Effect.scoped))

  it.live("each attempt's opening keeps its own timeout: a server that never answers is asked again", () =>
    Effect.gen(function*() {
      const server = yield* serve([
        "hang",
        { json: { choices: [{ index: 0, message: { role: "assistant", content: "late" }, finish_reason: "stop" }] } }
      ])
      const parts = yield* streamAll(ask("x")).pipe(Effect.provide(openAiChat(server.origin, { timeout: "300 millis", retry: fast(1) })))
      assert.strictEqual(textOf(parts), "late")
      assert.lengthOf(server.requests, 2)
    }).pipe(Effect.scoped))

  it.live("Agent.run (which streams) recovers from a stream cut before any event", () =>
    Effect.gen(function*() {
      const sse = yield* serveSse([{ events: [], then: "cut" }, { events: chatText("2 + 3 = 5.") }])
      const result = yield* Agent.run({ messages: [{ role: "user", content: "2+3?" }], tools: registry }).pipe(
        Effect.provide(Layer.merge(openAiChat(sse.origin, { retry: fast(2) }), services))
      )
      assert.strictEqual(result.text, "2 + 3 = 5.")
      assert.lengthOf(sse.requests, 2)
    }).pipe(Effect.scoped))
})

describe("stream faults: a key in an undecodable event is scrubbed before the quote is cut", () => {
  const raw: SseEvent = { text: `${"x".repeat(185)}${key} trailing` }
  const cases: ReadonlyArray<{
    readonly label: string
    readonly layer: (origin: string) => Layer.Layer<ChatModel.ChatModel>
    readonly first: SseEvent
  }> = [
    { label: "openai-chat", layer: (o) => openAiChat(o, { retry: false }), first: chatChunk({ role: "assistant", content: "a" }) },
    { label: "anthropic", layer: (o) => anthropic(o, { retry: false }), first: messageStart },
    { label: "openai-responses", layer: (o) => responses(o, { retry: false }), first: responsesText("a")[0]! },
    { label: "gemini", layer: (o) => gemini(o, { retry: false }), first: geminiChunk("a") }
  ]
  for (const { first, label, layer } of cases) {
    it.live(`${label}: the decode error, its log line and Cause quote no prefix of the key`, () =>
      Effect.gen(function*() {
        const sse = yield* serveSse([{ events: [first, raw] }])
        const logs = captureLogs()
        const { error } = yield* streamFailure(ask("x")).pipe(Effect.provide(layer(sse.origin)), Effect.provide(logs.layer))
        assert.strictEqual(error.reason, "decode")
        assert.include(error.message, "[redacted]")
        assert.isAbove(logs.lines.length, 0)
        assertNoSecret(prefix, [error, error.message, Cause.pretty(Cause.fail(error)), ...logs.lines])
      }).pipe(Effect.scoped))
  }

  it.live("Agent.run: AgentFailed and the logs quote no prefix of the key", () =>
    Effect.gen(function*() {
      const sse = yield* serveSse([{ events: [chatChunk({ role: "assistant", content: "a" }), raw] }])
      const logs = captureLogs()
      const failed = yield* Effect.flip(Agent.run({ messages: [{ role: "user", content: "hi" }], tools: registry })).pipe(
        Effect.provide(Layer.mergeAll(openAiChat(sse.origin, { retry: false }), services, logs.layer))
      )
      assert.strictEqual(failed.reason, "model")
      assertNoSecret(prefix, [failed, String(failed), Cause.pretty(Cause.fail(failed)), ...logs.lines])
    }).pipe(Effect.scoped))

  it.live("generate: a failed Responses answer that quotes the key is scrubbed", () =>
    Effect.gen(function*() {
      const server = yield* serve([{
        json: { ...responseBody("", "failed"), output: [], error: { code: "server_error", message: `bad key ${key}` } }
      }])
      const logs = captureLogs()
      const failed = yield* Effect.flip(generate(ask("x"))).pipe(
        Effect.provide(responses(server.origin, { retry: false })),
        Effect.provide(logs.layer)
      )
      assert.strictEqual(failed.reason, "provider")
      assert.include(failed.message, "[redacted]")
      assertNoSecret(prefix, [failed, failed.message, ...logs.lines])
    }).pipe(Effect.scoped))
})

describe("stream faults: OpenAI-compatible tool-call deltas", () => {
  it.live("deltas without an index (Google's compatible endpoint): an id starts a call, a delta without one continues the latest", () =>
    Effect.gen(function*() {
      const sse = yield* serveSse([{
        events: chatTools(
          { id: "call_a", type: "function", function: { name: "add", arguments: "{\"a\":1," } },
          { function: { arguments: "\"b\":2}" } },
          { id: "call_b", type: "function", function: { name: "add", arguments: "{\"a\":3,\"b\":4}" } }
        )
      }])
      const parts = yield* streamAll(ask("x")).pipe(Effect.provide(openAiChat(sse.origin)))
      assert.deepStrictEqual(finished(parts).toolCalls, [
        { id: "call_a", name: "add", arguments: "{\"a\":1,\"b\":2}" },
        { id: "call_b", name: "add", arguments: "{\"a\":3,\"b\":4}" }
      ])
      assert.deepStrictEqual(trace(parts), ["start:call_a", "delta:call_a", "call:call_a", "start:call_b", "delta:call_b", "call:call_b", "finished"])
    }).pipe(Effect.scoped))

  it.live("two whole calls both at index 0 with different ids are two calls, not one with joined arguments", () =>
    Effect.gen(function*() {
      const sse = yield* serveSse([{
        events: chatTools(
          { index: 0, id: "call_a", type: "function", function: { name: "add", arguments: "{\"a\":1,\"b\":2}" } },
          { index: 0, id: "call_b", type: "function", function: { name: "add", arguments: "{\"a\":3,\"b\":4}" } }
        )
      }])
      const parts = yield* streamAll(ask("x")).pipe(Effect.provide(openAiChat(sse.origin)))
      assert.deepStrictEqual(finished(parts).toolCalls, [
        { id: "call_a", name: "add", arguments: "{\"a\":1,\"b\":2}" },
        { id: "call_b", name: "add", arguments: "{\"a\":3,\"b\":4}" }
      ])
      assert.deepStrictEqual(trace(parts), ["start:call_a", "delta:call_a", "call:call_a", "start:call_b", "delta:call_b", "call:call_b", "finished"])
    }).pipe(Effect.scoped))

  it.live("a delta repeating its call's id (no index) continues that call", () =>
    Effect.gen(function*() {
      const sse = yield* serveSse([{
        events: chatTools(
          { id: "call_a", type: "function", function: { name: "add", arguments: "{\"a\":1," } },
          { id: "call_a", function: { arguments: "\"b\":2}" } }
        )
      }])
      const parts = yield* streamAll(ask("x")).pipe(Effect.provide(openAiChat(sse.origin)))
      assert.deepStrictEqual(finished(parts).toolCalls, [{ id: "call_a", name: "add", arguments: "{\"a\":1,\"b\":2}" }])
    }).pipe(Effect.scoped))
})

describe("stream faults: OpenAI Chat `event: error` without an `error` key", () => {
  const errorEvent = (body: Record<string, unknown>): SseEvent => ({ event: "error", json: body })

  it.live("before any part: the provider error, retryable for overload, asked again", () =>
    Effect.gen(function*() {
      const overloaded = errorEvent({ message: "upstream overloaded", type: "overloaded" })
      const sse = yield* serveSse([{ events: [overloaded] }, { events: chatText("ok") }, { events: [overloaded] }])
      const parts = yield* streamAll(ask("x")).pipe(Effect.provide(openAiChat(sse.origin, { retry: fast(2) })))
      assert.strictEqual(textOf(parts), "ok")
      assert.lengthOf(sse.requests, 2)
      const { error } = yield* streamFailure(ask("x")).pipe(Effect.provide(openAiChat(sse.origin, { retry: false })))
      assert.strictEqual(error.reason, "provider")
      assert.isTrue(error.retryable)
      assert.include(error.message, "upstream overloaded")
    }).pipe(Effect.scoped))

  it.live("mid-stream: the provider error after the parts that came; an invalid request is not retryable", () =>
    Effect.gen(function*() {
      const sse = yield* serveSse([
        { events: [...chatText("partial").slice(0, 2), errorEvent({ message: "upstream overloaded", type: "overloaded" })] },
        { events: [errorEvent({ message: "bad request", type: "invalid_request_error" })] },
        { events: [errorEvent({ error: { message: "quota", type: "rate_limit_exceeded" } })] }
      ])
      const mid = yield* streamFailure(ask("x")).pipe(Effect.provide(openAiChat(sse.origin, { retry: fast(3) })))
      assert.strictEqual(mid.error.reason, "provider")
      assert.isTrue(mid.error.retryable)
      assert.include(mid.error.message, "upstream overloaded")
      assert.strictEqual(textOf(mid.parts), "partial")
      assert.lengthOf(sse.requests, 1)
      const invalid = yield* streamFailure(ask("x")).pipe(Effect.provide(openAiChat(sse.origin, { retry: fast(3) })))
      assert.strictEqual(invalid.error.reason, "provider")
      assert.isFalse(invalid.error.retryable)
      assert.include(invalid.error.message, "bad request")
      assert.lengthOf(sse.requests, 2)
      const nested = yield* streamFailure(ask("x")).pipe(Effect.provide(openAiChat(sse.origin, { retry: false })))
      assert.isTrue(nested.error.retryable)
      assert.include(nested.error.message, "quota")
    }).pipe(Effect.scoped))
})
