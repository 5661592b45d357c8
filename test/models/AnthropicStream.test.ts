import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import type Anthropic from "@anthropic-ai/sdk"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Redacted, Schedule } from "effect"
import { AnthropicModel } from "../../src/agent/models/index.ts"
import { serve } from "./support/loopback.ts"
import { type SseEvent, serveSse } from "./support/sseServer.ts"
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

const key = "sk-ant-api03-TESTKEY-0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d"
const recorded = fixture("anthropic-messages.json")

const model = (origin: string, options: Partial<AnthropicModel.Options> = {}) =>
  AnthropicModel.layer({ apiKey: Redacted.make(key), model: "claude-sonnet-4-5", baseUrl: origin, ...options }).pipe(
    Layer.provide(NodeHttpClient.layerUndici)
  )

const ev = (value: { readonly type: string; readonly [field: string]: unknown }): SseEvent => ({ event: value.type, json: value })
const messageStart = (usage: Record<string, number>) =>
  ev({
    type: "message_start",
    message: {
      id: "msg_01Aq9w938a90dw8q",
      type: "message",
      role: "assistant",
      model: "claude-sonnet-4-5",
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage
    }
  })
const blockStart = (index: number, block: Record<string, unknown>) =>
  ev({ type: "content_block_start", index, content_block: block })
const delta = (index: number, d: Anthropic.RawContentBlockDeltaEvent["delta"]) =>
  ev({ type: "content_block_delta", index, delta: d } satisfies Anthropic.RawContentBlockDeltaEvent)
const text = (index: number, t: string) => delta(index, { type: "text_delta", text: t })
const json = (index: number, partial: string) => delta(index, { type: "input_json_delta", partial_json: partial })
const blockStop = (index: number) => ev({ type: "content_block_stop", index } satisfies Anthropic.RawContentBlockStopEvent)
const messageDelta = (stop: string, usage: Record<string, number>) =>
  ev({ type: "message_delta", delta: { stop_reason: stop, stop_sequence: null }, usage })
const messageStop = ev({ type: "message_stop" } satisfies Anthropic.RawMessageStopEvent)
const ping = ev({ type: "ping" })

/** `parallelToolUse` as the Messages API streams it (input JSON split mid-string). */
const parallelEvents: ReadonlyArray<SseEvent> = [
  messageStart({ input_tokens: 472, output_tokens: 1, cache_creation_input_tokens: 0, cache_read_input_tokens: 8 }),
  blockStart(0, { type: "text", text: "" }),
  ping,
  text(0, "I'll add "),
  text(0, "both pairs."),
  blockStop(0),
  blockStart(1, { type: "tool_use", id: "toolu_01A09q90qw90lq917835lq9", name: "add", input: {} }),
  json(1, ""),
  json(1, "{\"a\": 2, \"b"),
  json(1, "\": 3}"),
  blockStop(1),
  blockStart(2, { type: "tool_use", id: "toolu_01D7FLrfh4GYq7yT1ULFeyMV", name: "add", input: {} }),
  json(2, "{\"a\": 10,"),
  json(2, " \"b\": -4}"),
  blockStop(2),
  messageDelta("tool_use", { output_tokens: 91 }),
  messageStop
]

const finalEvents = (then: ReadonlyArray<SseEvent> = [messageDelta("end_turn", { output_tokens: 18 }), messageStop]) => [
  messageStart({ input_tokens: 610, output_tokens: 1 }),
  blockStart(0, { type: "text", text: "" }),
  text(0, "2 + 3 = 5 and "),
  text(0, "10 + -4 = 6."),
  blockStop(0),
  ...then
]

describe("AnthropicModel.stream", () => {
  it.live("text, then tool_use blocks assembled from split input_json_delta; Finished equals generate's Response", () =>
    Effect.gen(function*() {
      const sse = yield* serveSse([{ events: parallelEvents }])
      const parts = yield* streamAll(ask("2+3 and 10-4?")).pipe(Effect.provide(model(sse.origin)))
      const whole = yield* generate(ask("2+3 and 10-4?")).pipe(
        Effect.provide(model((yield* serve([{ json: recorded["parallelToolUse"] }])).origin))
      )
      assert.deepStrictEqual(finished(parts), whole)
      assert.strictEqual(whole.finishReason, "tool_calls")
      assert.deepStrictEqual(whole.usage, { inputTokens: 480, outputTokens: 91 })
      assert.deepStrictEqual(trace(parts), [
        "text",
        "start:toolu_01A09q90qw90lq917835lq9",
        "delta:toolu_01A09q90qw90lq917835lq9",
        "call:toolu_01A09q90qw90lq917835lq9",
        "start:toolu_01D7FLrfh4GYq7yT1ULFeyMV",
        "delta:toolu_01D7FLrfh4GYq7yT1ULFeyMV",
        "call:toolu_01D7FLrfh4GYq7yT1ULFeyMV",
        "finished"
      ])
      assert.strictEqual(textOf(parts), "I'll add both pairs.")
      assert.strictEqual(argumentsOf(parts, "toolu_01A09q90qw90lq917835lq9"), "{\"a\": 2, \"b\": 3}")
      assert.deepStrictEqual(parts.flatMap((p) => p._tag === "ToolCall" ? [p.call] : []), whole.toolCalls)
      assert.deepInclude(sse.requests[0]?.json as object, { stream: true })
      assert.strictEqual(sse.requests[0]?.path, "/v1/messages")
    }).pipe(Effect.scoped))

  it.live("a final answer: text deltas, end_turn is stop, usage from message_start and message_delta", () =>
    Effect.gen(function*() {
      const sse = yield* serveSse([{ events: finalEvents() }])
      const parts = yield* streamAll(ask("sum?")).pipe(Effect.provide(model(sse.origin)))
      const whole = yield* generate(ask("sum?")).pipe(
        Effect.provide(model((yield* serve([{ json: recorded["finalAnswer"] }])).origin))
      )
      assert.deepStrictEqual(finished(parts), whole)
      assert.deepStrictEqual(whole, {
        text: "2 + 3 = 5 and 10 + -4 = 6.",
        toolCalls: [],
        usage: { inputTokens: 610, outputTokens: 18 },
        finishReason: "stop"
      })
    }).pipe(Effect.scoped))

  it.live("a tool_use without input deltas keeps the start block's input; broken JSON goes to the registry as text", () =>
    Effect.gen(function*() {
      const sse = yield* serveSse([{
        events: [
          messageStart({ input_tokens: 5, output_tokens: 1 }),
          blockStart(0, { type: "tool_use", id: "toolu_empty", name: "add", input: {} }),
          blockStop(0),
          blockStart(1, { type: "tool_use", id: "toolu_broken", name: "add", input: {} }),
          json(1, "{\"a\": 2, \"b\""),
          blockStop(1),
          messageDelta("tool_use", { output_tokens: 7 }),
          messageStop
        ]
      }])
      const parts = yield* streamAll(ask("x")).pipe(Effect.provide(model(sse.origin)))
      assert.deepStrictEqual(finished(parts).toolCalls, [
        { id: "toolu_empty", name: "add", arguments: {} },
        { id: "toolu_broken", name: "add", arguments: "{\"a\": 2, \"b\"" }
      ])
    }).pipe(Effect.scoped))

  it.live("an error event (overloaded_error) mid-stream is a retryable provider error; invalid_request_error is not", () =>
    Effect.gen(function*() {
      const error = (type: string): SseEvent => ({
        event: "error",
        json: { type: "error", error: { type, message: type === "overloaded_error" ? "Overloaded" : "bad" } }
      })
      const sse = yield* serveSse([
        { events: finalEvents([error("overloaded_error")]) },
        { events: finalEvents([error("invalid_request_error")]) }
      ])
      const first = yield* streamFailure(ask("x")).pipe(Effect.provide(model(sse.origin, { retry: Schedule.recurs(3) })))
      assert.strictEqual(first.error.reason, "provider")
      assert.isTrue(first.error.retryable)
      assert.include(first.error.message, "Overloaded")
      assert.strictEqual(textOf(first.parts), "2 + 3 = 5 and 10 + -4 = 6.")
      const second = yield* streamFailure(ask("x")).pipe(Effect.provide(model(sse.origin)))
      assert.isFalse(second.error.retryable)
      assert.lengthOf(sse.requests, 2)
    }).pipe(Effect.scoped))

  it.live("a stream cut inside a tool_use block is a retryable transport error; the call never completes", () =>
    Effect.gen(function*() {
      const sse = yield* serveSse([{ events: parallelEvents.slice(0, 9), then: "cut" }])
      const { error, parts } = yield* streamFailure(ask("x")).pipe(Effect.provide(model(sse.origin)))
      assert.strictEqual(error.reason, "transport")
      assert.isTrue(error.retryable)
      assert.isFalse(parts.some((p) => p._tag === "ToolCall"))
      assert.deepStrictEqual(trace(parts).slice(-2), ["start:toolu_01A09q90qw90lq917835lq9", "delta:toolu_01A09q90qw90lq917835lq9"])
    }).pipe(Effect.scoped))

  it.live("a body that ends without message_stop was cut; an undecodable event is a decode error", () =>
    Effect.gen(function*() {
      const sse = yield* serveSse([
        { events: finalEvents([messageDelta("end_turn", { output_tokens: 18 })]) },
        { events: [messageStart({ input_tokens: 1 }), { event: "content_block_delta", text: "{\"type\":\"content_block_delta\",\"index\":" }] }
      ])
      const cut = yield* streamFailure(ask("x")).pipe(Effect.provide(model(sse.origin)))
      assert.strictEqual(cut.error.reason, "transport")
      const broken = yield* streamFailure(ask("x")).pipe(Effect.provide(model(sse.origin)))
      assert.strictEqual(broken.error.reason, "decode")
    }).pipe(Effect.scoped))

  it.live("interrupting a slow stream closes the HTTP response; no request is left open", () =>
    Effect.gen(function*() {
      const sse = yield* serveSse([{ events: parallelEvents.slice(0, 5), then: "hang" }])
      yield* assertInterruptCloses(sse, ask("x"), 2).pipe(Effect.provide(model(sse.origin)))
    }).pipe(Effect.scoped))
})
