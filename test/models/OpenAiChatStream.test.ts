import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Redacted, Schedule } from "effect"
import type OpenAI from "openai"
import { ChatCompletionStream } from "openai/lib/ChatCompletionStream"
import { ChatModel } from "../../src/index.ts"
import { OpenAiChatModel } from "../../src/agent/models/index.ts"
import { serve } from "./support/loopback.ts"
import { type SseEvent, serveSse, type StreamReply } from "./support/sseServer.ts"
import {
  argumentsOf,
  ask,
  assertInterruptCloses,
  finished,
  generate,
  streamAll,
  streamFailure,
  textOf,
  trace
} from "./support/streaming.ts"
import { fixture } from "./support/tools.ts"

const key = "sk-proj-TESTKEY-0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d"
const recorded = fixture("openai-chat-completions.json")

const model = (origin: string, options: Partial<OpenAiChatModel.Options> = {}) =>
  OpenAiChatModel.layer({ apiKey: Redacted.make(key), model: "gpt-4o-mini", baseUrl: `${origin}/v1`, ...options }).pipe(
    Layer.provide(NodeHttpClient.layerUndici)
  )

type Choice = OpenAI.Chat.Completions.ChatCompletionChunk.Choice
type ToolDelta = OpenAI.Chat.Completions.ChatCompletionChunk.Choice.Delta.ToolCall

/** A `ChatCompletionChunk` (typed against the official SDK) with one choice. */
const chunk = (delta: Choice["delta"], finish: Choice["finish_reason"] = null): OpenAI.Chat.Completions.ChatCompletionChunk => ({
  id: "chatcmpl-abc123",
  object: "chat.completion.chunk",
  created: 1699896916,
  model: "gpt-4o-mini",
  system_fingerprint: "fp_44709d6fcb",
  choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
  usage: null
})
const usageChunk = (prompt: number, completion: number): OpenAI.Chat.Completions.ChatCompletionChunk => ({
  id: "chatcmpl-abc123",
  object: "chat.completion.chunk",
  created: 1699896916,
  model: "gpt-4o-mini",
  choices: [],
  usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion }
})
const tool = (call: ToolDelta) => chunk({ tool_calls: [call] })
const data = (value: OpenAI.Chat.Completions.ChatCompletionChunk): SseEvent => ({ json: value })
const done: SseEvent = { text: "[DONE]" }

/** `parallelToolCalls` as OpenAI streams it: call 0 whole, then call 1, arguments split mid-token and mid-string. */
const parallelEvents: ReadonlyArray<SseEvent> = [
  chunk({ role: "assistant", content: null, refusal: null }),
  tool({ index: 0, id: "call_abc123", type: "function", function: { name: "add", arguments: "" } }),
  tool({ index: 0, function: { arguments: "{\"a" } }),
  tool({ index: 0, function: { arguments: "\":2,\"b\":" } }),
  tool({ index: 0, function: { arguments: "3}" } }),
  tool({ index: 1, id: "call_def456", type: "function", function: { name: "add", arguments: "" } }),
  tool({ index: 1, function: { arguments: "{\"a\":1" } }),
  tool({ index: 1, function: { arguments: "0,\"b\":-4}" } }),
  chunk({}, "tool_calls"),
  usageChunk(82, 17)
].map((e) => "id" in e ? data(e) : e).concat([done])

const textEvents = (text: ReadonlyArray<string>, then: ReadonlyArray<SseEvent> = [data(usageChunk(120, 12)), done]) => [
  data(chunk({ role: "assistant", content: "", refusal: null })),
  ...text.map((piece) => data(chunk({ content: piece }))),
  data(chunk({}, "stop")),
  ...then
]

const finalPieces = ["2 + 3", " = 5 and 1", "0 + -4 = 6", "."]

/** The calls the official SDK's `ChatCompletionStream` accumulates from `chunks`: `{ id, name, arguments }` in its order. */
const sdkCalls = (chunks: ReadonlyArray<OpenAI.Chat.Completions.ChatCompletionChunk>) =>
  Effect.promise(async () => {
    const lines = new TextEncoder().encode(chunks.map((c) => `${JSON.stringify(c)}\n`).join(""))
    const body = new ReadableStream<Uint8Array>({
      start: (controller) => {
        controller.enqueue(lines)
        controller.close()
      }
    })
    const completion = await ChatCompletionStream.fromReadableStream(body).finalChatCompletion()
    return (completion.choices[0]!.message.tool_calls ?? []).flatMap((call) =>
      call.type === "function" ? [{ id: call.id, name: call.function.name, arguments: call.function.arguments }] : []
    )
  })

describe("OpenAiChatModel.stream", () => {
  it.live("parallel calls: deltas split mid-string assemble per index; Finished equals generate's Response", () =>
    Effect.gen(function*() {
      const sse = yield* serveSse([{ events: parallelEvents }])
      const parts = yield* streamAll(ask("2+3 and 10-4?")).pipe(Effect.provide(model(sse.origin)))
      const json = yield* serve([{ json: recorded["parallelToolCalls"] }])
      const whole = yield* generate(ask("2+3 and 10-4?")).pipe(Effect.provide(model(json.origin)))

      assert.deepStrictEqual(finished(parts), whole)
      assert.deepStrictEqual(whole.finishReason, "tool_calls")
      assert.deepStrictEqual(whole.usage, { inputTokens: 82, outputTokens: 17 })
      // Call 0 is complete (whole JSON) when index 1 starts: it goes out before call 1 starts.
      assert.deepStrictEqual(trace(parts), [
        "start:call_abc123",
        "delta:call_abc123",
        "call:call_abc123",
        "start:call_def456",
        "delta:call_def456",
        "call:call_def456",
        "finished"
      ])
      assert.strictEqual(argumentsOf(parts, "call_abc123"), "{\"a\":2,\"b\":3}")
      assert.deepStrictEqual(
        parts.flatMap((p) => p._tag === "ToolCall" ? [p.call] : []),
        whole.toolCalls
      )

      const [request] = sse.requests
      assert.strictEqual(request?.path, "/v1/chat/completions")
      assert.strictEqual(request?.headers.accept, "text/event-stream")
      assert.deepInclude(request?.json as object, { stream: true, stream_options: { include_usage: true } })
    }).pipe(Effect.scoped))

  it.live("text: deltas as they arrive, joined they are the answer; usage and finish reason at the end", () =>
    Effect.gen(function*() {
      const sse = yield* serveSse([{ events: textEvents(finalPieces) }])
      const parts = yield* streamAll(ask("sum?")).pipe(Effect.provide(model(sse.origin)))
      const json = yield* serve([{ json: recorded["finalAnswer"] }])
      const whole = yield* generate(ask("sum?")).pipe(Effect.provide(model(json.origin)))

      assert.deepStrictEqual(parts.filter((p) => p._tag === "TextDelta").map((p) => p.text), finalPieces)
      assert.strictEqual(textOf(parts), whole.text)
      assert.deepStrictEqual(finished(parts), { ...whole, usage: { inputTokens: 120, outputTokens: 12 } })
      assert.strictEqual(finished(parts).finishReason, "stop")
      // ChatModel.collect reads the same Response off the stream.
      const sse2 = yield* serveSse([{ events: textEvents(finalPieces) }])
      const collected = yield* ChatModel.ChatModel.use((m) => ChatModel.collect(m.stream(ask("sum?")))).pipe(
        Effect.provide(model(sse2.origin))
      )
      assert.deepStrictEqual(collected, finished(parts))
    }).pipe(Effect.scoped))

  it.live("interleaved calls (deltas for two indexes alternate): each assembles whole, both complete at [DONE]", () =>
    Effect.gen(function*() {
      const events: ReadonlyArray<SseEvent> = [
        tool({ index: 0, id: "call_1", type: "function", function: { name: "add", arguments: "{\"a\":" } }),
        tool({ index: 1, id: "call_2", type: "function", function: { name: "add", arguments: "{\"a\":" } }),
        tool({ index: 0, function: { arguments: "1,\"b\"" } }),
        tool({ index: 1, function: { arguments: "7,\"b\"" } }),
        tool({ index: 0, function: { arguments: ":2}" } }),
        tool({ index: 1, function: { arguments: ":8}" } }),
        chunk({}, "tool_calls"),
        usageChunk(10, 5)
      ].map(data).concat([done])
      const sse = yield* serveSse([{ events, chunk: 3 }])
      const parts = yield* streamAll(ask("two sums")).pipe(Effect.provide(model(sse.origin)))
      const response = finished(parts)
      assert.deepStrictEqual(response.toolCalls, [
        { id: "call_1", name: "add", arguments: "{\"a\":1,\"b\":2}" },
        { id: "call_2", name: "add", arguments: "{\"a\":7,\"b\":8}" }
      ])
      assert.deepStrictEqual(trace(parts).slice(-3), ["call:call_1", "call:call_2", "finished"])
      assert.strictEqual(argumentsOf(parts, "call_2"), "{\"a\":7,\"b\":8}")
    }).pipe(Effect.scoped))

  it.live("calls are listed by index, as the official SDK accumulates them, whatever order their deltas arrive in", () =>
    Effect.gen(function*() {
      const chunks = [
        chunk({ role: "assistant", content: null, refusal: null }),
        tool({ index: 2, id: "call_c", type: "function", function: { name: "add", arguments: "{\"a\":5,\"b\":6}" } }),
        tool({ index: 0, id: "call_a", type: "function", function: { name: "add", arguments: "{\"a\":" } }),
        tool({ index: 1, id: "call_b", type: "function", function: { name: "add", arguments: "{\"a\":3,\"b\":4}" } }),
        tool({ index: 0, function: { arguments: "1,\"b\":2}" } }),
        chunk({}, "tool_calls"),
        usageChunk(10, 5)
      ]
      const sse = yield* serveSse([{ events: chunks.map(data).concat([done]) }])
      const parts = yield* streamAll(ask("three sums")).pipe(Effect.provide(model(sse.origin)))
      const expected = [
        { id: "call_a", name: "add", arguments: "{\"a\":1,\"b\":2}" },
        { id: "call_b", name: "add", arguments: "{\"a\":3,\"b\":4}" },
        { id: "call_c", name: "add", arguments: "{\"a\":5,\"b\":6}" }
      ]
      assert.deepStrictEqual(yield* sdkCalls(chunks), expected)
      assert.deepStrictEqual(finished(parts).toolCalls, expected)
      // a call still goes out as soon as it is complete (call_c when the next call starts); the rest at [DONE], by index
      assert.deepStrictEqual(trace(parts).filter((t) => t.startsWith("call:")), ["call:call_c", "call:call_a", "call:call_b"])
    }).pipe(Effect.scoped))

  it.live("an empty argument delta after a call's JSON is complete is accepted; more text is still a decode error", () =>
    Effect.gen(function*() {
      const calls = [
        tool({ index: 0, id: "call_1", type: "function", function: { name: "add", arguments: "{\"a\":1,\"b\":2}" } }),
        tool({ index: 1, id: "call_2", type: "function", function: { name: "add", arguments: "{\"a\":3," } }),
        // call 0 is complete now (call 1 started and its text is whole JSON); these add nothing
        tool({ index: 0, function: { arguments: "" } }),
        tool({ index: 0, id: "call_1", type: "function", function: { name: "add", arguments: "" } }),
        tool({ index: 0 }),
        tool({ index: 1, function: { arguments: "\"b\":4}" } })
      ]
      const chunks = [chunk({ role: "assistant", content: null, refusal: null }), ...calls, chunk({}, "tool_calls"), usageChunk(10, 5)]
      const sse = yield* serveSse([
        { events: chunks.map(data).concat([done]) },
        { events: [...calls.slice(0, 2), tool({ index: 0, function: { arguments: " " } })].map(data).concat([done]) },
        { events: [...calls.slice(0, 2), tool({ index: 0, function: { arguments: "}" } })].map(data).concat([done]) }
      ])
      const parts = yield* streamAll(ask("two sums")).pipe(Effect.provide(model(sse.origin)))
      const expected = [
        { id: "call_1", name: "add", arguments: "{\"a\":1,\"b\":2}" },
        { id: "call_2", name: "add", arguments: "{\"a\":3,\"b\":4}" }
      ]
      assert.deepStrictEqual(finished(parts).toolCalls, expected)
      assert.deepStrictEqual(yield* sdkCalls(chunks), expected)
      assert.strictEqual(argumentsOf(parts, "call_1"), "{\"a\":1,\"b\":2}")
      for (const _ of [1, 2]) {
        const { error } = yield* streamFailure(ask("x")).pipe(Effect.provide(model(sse.origin)))
        assert.strictEqual(error.reason, "decode")
        assert.include(error.message, "tool call 0 received more arguments after it was complete")
      }
    }).pipe(Effect.scoped))

  it.live("malformed argument text goes to the registry as written, as generate does", () =>
    Effect.gen(function*() {
      const events = [
        tool({ index: 0, id: "call_bad", type: "function", function: { name: "add", arguments: "{\"a\": 2, \"b\":" } }),
        chunk({}, "tool_calls"),
        usageChunk(1, 1)
      ].map(data).concat([done])
      const sse = yield* serveSse([{ events }])
      const parts = yield* streamAll(ask("x")).pipe(Effect.provide(model(sse.origin)))
      assert.deepStrictEqual(finished(parts).toolCalls, [{ id: "call_bad", name: "add", arguments: "{\"a\": 2, \"b\":" }])
    }).pipe(Effect.scoped))

  it.live("a stream cut mid-way (socket destroyed) is a retryable transport error after the parts that came; never re-sent", () =>
    Effect.gen(function*() {
      const sse = yield* serveSse([{ events: parallelEvents.slice(0, 4), then: "cut" }, { events: parallelEvents }])
      const { error, parts } = yield* streamFailure(ask("x")).pipe(
        Effect.provide(model(sse.origin, { retry: Schedule.recurs(3) }))
      )
      assert.strictEqual(error.reason, "transport")
      assert.isTrue(error.retryable)
      assert.deepStrictEqual(trace(parts), ["start:call_abc123", "delta:call_abc123"])
      assert.lengthOf(sse.requests, 1)
    }).pipe(Effect.scoped))

  it.live("a body that ends cleanly without [DONE] was cut too", () =>
    Effect.gen(function*() {
      const sse = yield* serveSse([{ events: textEvents(["hi"], []) }])
      const { error, parts } = yield* streamFailure(ask("x")).pipe(Effect.provide(model(sse.origin)))
      assert.strictEqual(error.reason, "transport")
      assert.include(error.message, "[DONE]")
      assert.strictEqual(textOf(parts), "hi")
    }).pipe(Effect.scoped))

  it.live("an error chunk mid-stream is a provider error; rate-limit kinds are retryable, others not", () =>
    Effect.gen(function*() {
      const errorEvent = (type: string, code: string | null): SseEvent => ({
        json: { error: { message: `boom ${key}`, type, param: null, code } }
      })
      const sse = yield* serveSse([
        { events: textEvents(["partial"], [errorEvent("server_error", "rate_limit_exceeded")]) },
        { events: textEvents(["partial"], [errorEvent("invalid_request_error", null)]) }
      ])
      const first = yield* streamFailure(ask("x")).pipe(Effect.provide(model(sse.origin)))
      assert.strictEqual(first.error.reason, "provider")
      assert.isTrue(first.error.retryable)
      assert.include(first.error.message, "rate_limit_exceeded")
      assert.notInclude(first.error.message, key)
      assert.strictEqual(textOf(first.parts), "partial")
      const second = yield* streamFailure(ask("x")).pipe(Effect.provide(model(sse.origin)))
      assert.strictEqual(second.error.reason, "provider")
      assert.isFalse(second.error.retryable)
    }).pipe(Effect.scoped))

  it.live("an event that is not JSON is a decode error", () =>
    Effect.gen(function*() {
      const sse = yield* serveSse([{ events: [data(chunk({ content: "a" })), { text: "{not json" }] }])
      const { error } = yield* streamFailure(ask("x")).pipe(Effect.provide(model(sse.origin)))
      assert.strictEqual(error.reason, "decode")
      assert.isFalse(error.retryable)
    }).pipe(Effect.scoped))

  it.live("opening is retried on a retryable status (nothing was delivered yet)", () =>
    Effect.gen(function*() {
      const sse = yield* serveSse([
        { status: 503, json: recorded["serverError"] },
        { events: textEvents(finalPieces) }
      ])
      const parts = yield* streamAll(ask("x")).pipe(
        Effect.provide(model(sse.origin, { retry: Schedule.recurs(2) }))
      )
      assert.strictEqual(textOf(parts), finalPieces.join(""))
      assert.lengthOf(sse.requests, 2)
    }).pipe(Effect.scoped))

  it.live("a server that ignores stream: true and answers JSON streams that whole answer", () =>
    Effect.gen(function*() {
      const json = yield* serve([{ json: recorded["parallelToolCalls"] }, { json: recorded["parallelToolCalls"] }])
      const parts = yield* streamAll(ask("x")).pipe(Effect.provide(model(json.origin)))
      const whole = yield* generate(ask("x")).pipe(Effect.provide(model(json.origin)))
      assert.deepStrictEqual(parts, ChatModel.partsOf(whole))
    }).pipe(Effect.scoped))

  it.live("a stream that stalls longer than the timeout fails with a retryable timeout after the parts that came", () =>
    Effect.gen(function*() {
      const sse = yield* serveSse([{ events: textEvents(["one"], []), then: "hang" }])
      const { error, parts } = yield* streamFailure(ask("x")).pipe(
        Effect.provide(model(sse.origin, { timeout: "300 millis", retry: Schedule.recurs(3) }))
      )
      assert.strictEqual(error.reason, "timeout")
      assert.isTrue(error.retryable)
      assert.strictEqual(textOf(parts), "one")
      assert.lengthOf(sse.requests, 1)
      assert.isTrue(yield* Effect.promise(() => sse.closed(0)))
    }).pipe(Effect.scoped))

  it.live("interrupting a slow stream closes the HTTP response; no request is left open", () =>
    Effect.gen(function*() {
      const reply: StreamReply = { events: textEvents(["one", "two"], []), then: "hang" }
      const sse = yield* serveSse([reply])
      const parts = yield* assertInterruptCloses(sse, ask("x"), 2).pipe(Effect.provide(model(sse.origin)))
      assert.deepStrictEqual(parts.slice(0, 2).map((p) => p._tag), ["TextDelta", "TextDelta"])
    }).pipe(Effect.scoped))
})
