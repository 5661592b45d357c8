import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Redacted, Schedule, Stream } from "effect"
import { AiError, LanguageModel, type Response } from "effect/ai"
import { ChatModel } from "../../src/index.ts"
import { LanguageModelBridge } from "../../src/agent/models/index.ts"
import { ask, finished, generate, streamAll, streamFailure, trace } from "./support/streaming.ts"

const key = "sk-bridge-stream-SECRET-0123456789"

const finish: Response.StreamPartEncoded = {
  type: "finish",
  reason: "tool-calls",
  usage: { inputTokens: { total: 82 }, outputTokens: { total: 17 } }
}

/** `parallelToolCalls` as an effect/ai provider streams it: text, one call with params deltas, one without. */
const streamed: ReadonlyArray<Response.StreamPartEncoded> = [
  { type: "text-start", id: "t1" },
  { type: "text-delta", id: "t1", delta: "Adding " },
  { type: "text-delta", id: "t1", delta: "both." },
  { type: "text-end", id: "t1" },
  { type: "tool-params-start", id: "call_abc123", name: "add" },
  { type: "tool-params-delta", id: "call_abc123", delta: "{\"a\":2," },
  { type: "tool-params-delta", id: "call_abc123", delta: "\"b\":3}" },
  { type: "tool-params-end", id: "call_abc123" },
  { type: "tool-call", id: "call_abc123", name: "add", params: { a: 2, b: 3 } },
  { type: "tool-call", id: "call_def456", name: "add", params: { a: 10, b: -4 } },
  finish
]

/** The same answer whole, as `generateText` returns it. */
const whole: Array<Response.PartEncoded> = [
  { type: "text", text: "Adding both." },
  { type: "tool-call", id: "call_abc123", name: "add", params: { a: 2, b: 3 } },
  { type: "tool-call", id: "call_def456", name: "add", params: { a: 10, b: -4 } },
  finish
]

/** A scripted `LanguageModel`: `generateText` answers `whole`, `streamText` plays `parts` then `tail`. */
const scripted = (
  parts: ReadonlyArray<Response.StreamPartEncoded>,
  tail: Stream.Stream<Response.StreamPartEncoded, AiError.AiError> = Stream.empty
) =>
  Layer.effect(
    LanguageModel.LanguageModel,
    LanguageModel.make({
      generateText: () => Effect.succeed(whole),
      streamText: () => Stream.concat(Stream.fromIterable(parts), tail)
    })
  )

const bridge = (model: Layer.Layer<LanguageModel.LanguageModel>) =>
  LanguageModelBridge.layer({ secrets: [Redacted.make(key)] }).pipe(Layer.provide(model))

describe("LanguageModelBridge.stream", () => {
  it.effect("maps streamText parts to StreamParts; Finished equals generate's Response", () =>
    Effect.gen(function*() {
      const layer = bridge(scripted(streamed))
      const parts = yield* streamAll(ask("2+3 and 10-4?")).pipe(Effect.provide(layer))
      const response = yield* generate(ask("2+3 and 10-4?")).pipe(Effect.provide(layer))
      assert.deepStrictEqual(finished(parts), response)
      assert.deepStrictEqual(response, {
        text: "Adding both.",
        toolCalls: [
          { id: "call_abc123", name: "add", arguments: { a: 2, b: 3 } },
          { id: "call_def456", name: "add", arguments: { a: 10, b: -4 } }
        ],
        usage: { inputTokens: 82, outputTokens: 17 },
        finishReason: "tool_calls"
      })
      assert.deepStrictEqual(trace(parts), [
        "text",
        "start:call_abc123",
        "delta:call_abc123",
        "call:call_abc123",
        "start:call_def456",
        "call:call_def456",
        "finished"
      ])
    }))

  it.effect("an error part is a provider error (key scrubbed); a stream without finish was cut; AiErrors map as in generate", () =>
    Effect.gen(function*() {
      const errored = yield* streamFailure(ask("x")).pipe(
        Effect.provide(bridge(scripted([...streamed.slice(0, 3), { type: "error", error: `upstream broke (${key})` }])))
      )
      assert.strictEqual(errored.error.reason, "provider")
      assert.notInclude(errored.error.message, key)
      assert.deepStrictEqual(trace(errored.parts), ["text"])

      const cut = yield* streamFailure(ask("x")).pipe(Effect.provide(bridge(scripted(streamed.slice(0, 6)))))
      assert.strictEqual(cut.error.reason, "transport")

      const limited = yield* streamFailure(ask("x")).pipe(
        Effect.provide(bridge(scripted(
          streamed.slice(0, 2),
          Stream.fail(AiError.make({ module: "Test", method: "streamText", reason: new AiError.RateLimitError({}) }))
        )))
      )
      assert.strictEqual(limited.error.reason, "rate_limited")
      assert.isTrue(limited.error.retryable)
    }))

  it.effect("with a retry policy, a failure before the first part is asked again; after it, never", () =>
    Effect.gen(function*() {
      let calls = 0
      const rateLimited = Stream.fail(AiError.make({ module: "Test", method: "streamText", reason: new AiError.RateLimitError({}) }))
      const flaky = (failFirst: boolean, prefix: ReadonlyArray<Response.StreamPartEncoded>) =>
        Layer.effect(
          LanguageModel.LanguageModel,
          LanguageModel.make({
            generateText: () => Effect.succeed(whole),
            streamText: () =>
              Stream.suspend(() =>
                ++calls === 1 && failFirst
                  ? rateLimited
                  : prefix.length === 0
                  ? Stream.fromIterable(streamed)
                  : Stream.concat(Stream.fromIterable(prefix), rateLimited)
              )
          })
        )
      const retried = LanguageModelBridge.layer({ retry: Schedule.recurs(2) })
      const parts = yield* streamAll(ask("x")).pipe(Effect.provide(retried.pipe(Layer.provide(flaky(true, [])))))
      assert.strictEqual(finished(parts).text, "Adding both.")
      assert.strictEqual(calls, 2)
      calls = 0
      const failed = yield* streamFailure(ask("x")).pipe(
        Effect.provide(retried.pipe(Layer.provide(flaky(false, streamed.slice(0, 2)))))
      )
      assert.strictEqual(failed.error.reason, "rate_limited")
      assert.strictEqual(calls, 1)
    }))

  it.effect("interrupting the stream interrupts the provider's stream", () =>
    Effect.gen(function*() {
      let interrupted = false
      const tail = Stream.fromEffect(
        Effect.never.pipe(Effect.onInterrupt(() => Effect.sync(() => (interrupted = true))))
      ) as Stream.Stream<Response.StreamPartEncoded, AiError.AiError>
      const layer = bridge(scripted(streamed.slice(0, 3), tail))
      const seen: Array<ChatModel.StreamPart> = []
      const fiber = yield* ChatModel.ChatModel.use((m) =>
        m.stream(ask("x")).pipe(Stream.runForEach((part) => Effect.sync(() => seen.push(part))))
      ).pipe(Effect.provide(layer), Effect.forkChild)
      while (seen.length < 2) yield* Effect.yieldNow
      yield* Fiber.interrupt(fiber)
      assert.isTrue(interrupted)
      assert.deepStrictEqual(trace(seen), ["text"])
    }))
})
