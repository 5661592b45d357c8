import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { assert, describe, it } from "@effect/vitest"
import type * as Genai from "@google/genai"
import { Effect, Layer, Redacted } from "effect"
import { GeminiModel } from "../../src/agent/models/index.ts"
import { ToolResult } from "../../src/index.ts"
import { serve } from "./support/loopback.ts"
import { type SseEvent, serveSse } from "./support/sseServer.ts"
import {
  argumentsOf,
  ask,
  assertInterruptCloses,
  finished,
  generate,
  specs,
  streamAll,
  streamFailure,
  textOf,
  trace
} from "./support/streaming.ts"

const key = "AIzaSyTESTKEY-0a1b2c3d4e5f6a7b8c9d0e1f2a3b"

const model = (origin: string, options: Partial<GeminiModel.Options> = {}) =>
  GeminiModel.layer({ apiKey: Redacted.make(key), model: "gemini-2.5-flash", baseUrl: origin, ...options }).pipe(
    Layer.provide(NodeHttpClient.layerUndici)
  )

/** A `GenerateContentResponse` (typed against `@google/genai`) with the first candidate's parts. */
const chunk = (
  parts: Array<Genai.Part>,
  finishReason?: Genai.FinishReason,
  usage?: Genai.GenerateContentResponseUsageMetadata
): Genai.GenerateContentResponse =>
  ({
    candidates: [{ content: { role: "model", parts }, index: 0, ...(finishReason === undefined ? {} : { finishReason }) }],
    ...(usage === undefined ? {} : { usageMetadata: usage }),
    modelVersion: "gemini-2.5-flash",
    responseId: "mcp6aLHUC4-W_uMP7r2c4Ao"
  }) as Genai.GenerateContentResponse

const usage = { promptTokenCount: 70, candidatesTokenCount: 20, thoughtsTokenCount: 5, totalTokenCount: 95 }
const STOP = "STOP" as Genai.FinishReason

const callPart = (a: number, b: number, signature?: string): Genai.Part => ({
  functionCall: { name: "add", args: { a, b } },
  ...(signature === undefined ? {} : { thoughtSignature: signature })
})

/** The whole answer, as generateContent returns it. */
const wholeAnswer = chunk([{ text: "Adding both pairs." }, callPart(2, 3, "c2lnLTE="), callPart(10, -4)], STOP, usage)

/** The same answer as streamGenerateContent sends it: text split across events, calls whole. */
const streamEvents = (then: ReadonlyArray<SseEvent> = []): ReadonlyArray<SseEvent> => [
  { json: chunk([{ text: "Adding " }]) },
  { json: chunk([{ text: "both pairs." }]) },
  { json: chunk([callPart(2, 3, "c2lnLTE=")]) },
  { json: chunk([callPart(10, -4)], STOP, usage) },
  ...then
]

describe("GeminiModel", () => {
  it.live("generate: models/{model}:generateContent with x-goog-api-key; calls without ids get stable ids; signatures kept", () =>
    Effect.gen(function*() {
      const server = yield* serve([{ json: wholeAnswer }, { json: chunk([{ text: "5 and 6." }], STOP, usage) }])
      const response = yield* generate(ask("2+3 and 10-4?")).pipe(Effect.provide(model(server.origin)))
      assert.deepStrictEqual(response, {
        text: "Adding both pairs.",
        toolCalls: [
          { id: "gemini-call:0:1:add", name: "add", arguments: { a: 2, b: 3 }, provider: { thoughtSignature: "c2lnLTE=" } },
          { id: "gemini-call:0:2:add", name: "add", arguments: { a: 10, b: -4 } }
        ],
        usage: { inputTokens: 70, outputTokens: 25 },
        finishReason: "tool_calls"
      })
      const [sent] = server.requests
      assert.strictEqual(sent?.path, "/v1beta/models/gemini-2.5-flash:generateContent")
      assert.strictEqual(sent?.headers["x-goog-api-key"], key)
      const body = sent?.json as Record<string, unknown>
      assert.deepStrictEqual(body.systemInstruction, { parts: [{ text: "Be brief." }] })
      assert.deepStrictEqual(body.contents, [{ role: "user", parts: [{ text: "2+3 and 10-4?" }] }])
      assert.deepStrictEqual(
        (body.tools as ReadonlyArray<{ functionDeclarations: ReadonlyArray<{ name: string }> }>)[0]?.functionDeclarations.map((d) => d.name),
        ["add"]
      )

      // The next turn replays the calls (made-up ids left out, the signature sent back) and answers them.
      const next = yield* generate({
        messages: [
          { role: "user", content: "2+3 and 10-4?" },
          { role: "assistant", content: response.text, toolCalls: response.toolCalls },
          {
            role: "tool",
            results: response.toolCalls.map((call, i) => ({
              toolCallId: call.id,
              name: "add",
              content: [ToolResult.text(String([5, 6][i]))],
              value: [5, 6][i],
              artifacts: [],
              isError: false,
              elapsed: 1
            }))
          }
        ],
        tools: specs
      }).pipe(Effect.provide(model(server.origin)))
      assert.strictEqual(next.finishReason, "stop")
      const contents = (server.requests[1]?.json as { contents: ReadonlyArray<unknown> }).contents
      assert.deepStrictEqual(contents[1], {
        role: "model",
        parts: [
          { text: "Adding both pairs." },
          { functionCall: { name: "add", args: { a: 2, b: 3 } }, thoughtSignature: "c2lnLTE=" },
          { functionCall: { name: "add", args: { a: 10, b: -4 } } }
        ]
      })
      assert.deepStrictEqual(contents[2], {
        role: "user",
        parts: [
          { functionResponse: { name: "add", response: { output: 5 } } },
          { functionResponse: { name: "add", response: { output: 6 } } }
        ]
      })
    }).pipe(Effect.scoped))

  it("a tool result's audio goes as an inlineData part of its functionResponse (wireContents)", () => {
    const { contents } = GeminiModel.wireContents([
      { role: "user", content: "play it" },
      { role: "assistant", content: "", toolCalls: [{ id: "g_1", name: "media", arguments: {} }] },
      {
        role: "tool",
        results: [{
          toolCallId: "g_1",
          name: "media",
          content: [ToolResult.text("a beep"), ToolResult.audio("UklG", "audio/wav")],
          artifacts: [],
          isError: false,
          elapsed: 0
        }]
      }
    ])
    assert.deepStrictEqual(contents[2], {
      role: "user",
      parts: [{
        functionResponse: {
          id: "g_1",
          name: "media",
          response: { output: "a beep" },
          parts: [{ inlineData: { mimeType: "audio/wav", data: "UklG" } }]
        }
      }]
    })
  })

  it.live("generate: a blocked prompt is an empty content_filter answer; MAX_TOKENS is length", () =>
    Effect.gen(function*() {
      const server = yield* serve([
        { json: { promptFeedback: { blockReason: "SAFETY" }, usageMetadata: { promptTokenCount: 9 } } },
        { json: chunk([{ text: "cut" }], "MAX_TOKENS" as Genai.FinishReason, usage) }
      ])
      const blocked = yield* generate(ask("x")).pipe(Effect.provide(model(server.origin)))
      assert.deepStrictEqual(blocked, { text: "", toolCalls: [], usage: { inputTokens: 9, outputTokens: 0 }, finishReason: "content_filter" })
      const short = yield* generate(ask("x")).pipe(Effect.provide(model(server.origin)))
      assert.strictEqual(short.finishReason, "length")
    }).pipe(Effect.scoped))

  it.live("stream: :streamGenerateContent?alt=sse; text deltas, whole calls; Finished equals generate's Response", () =>
    Effect.gen(function*() {
      const sse = yield* serveSse([{ events: streamEvents() }])
      const parts = yield* streamAll(ask("2+3 and 10-4?")).pipe(Effect.provide(model(sse.origin)))
      const whole = yield* generate(ask("2+3 and 10-4?")).pipe(
        Effect.provide(model((yield* serve([{ json: wholeAnswer }])).origin))
      )
      assert.deepStrictEqual(finished(parts), whole)
      assert.deepStrictEqual(trace(parts), [
        "text",
        "start:gemini-call:0:1:add",
        "delta:gemini-call:0:1:add",
        "call:gemini-call:0:1:add",
        "start:gemini-call:0:2:add",
        "delta:gemini-call:0:2:add",
        "call:gemini-call:0:2:add",
        "finished"
      ])
      assert.strictEqual(textOf(parts), "Adding both pairs.")
      assert.strictEqual(argumentsOf(parts, "gemini-call:0:2:add"), "{\"a\":10,\"b\":-4}")
      assert.strictEqual(sse.requests[0]?.path, "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse")
      assert.strictEqual(sse.requests[0]?.headers["x-goog-api-key"], key)
    }).pipe(Effect.scoped))

  it.live("stream: an error event is a provider error (UNAVAILABLE retryable); a body ending before finishReason was cut", () =>
    Effect.gen(function*() {
      const sse = yield* serveSse([
        { events: [...streamEvents().slice(0, 2), { json: { error: { code: 503, message: "The model is overloaded.", status: "UNAVAILABLE" } } }] },
        { events: streamEvents().slice(0, 3) },
        { events: streamEvents().slice(0, 2), then: "cut" }
      ])
      const failed = yield* streamFailure(ask("x")).pipe(Effect.provide(model(sse.origin)))
      assert.strictEqual(failed.error.reason, "provider")
      assert.isTrue(failed.error.retryable)
      assert.include(failed.error.message, "overloaded")
      assert.strictEqual(textOf(failed.parts), "Adding both pairs.")
      const ended = yield* streamFailure(ask("x")).pipe(Effect.provide(model(sse.origin)))
      assert.strictEqual(ended.error.reason, "transport")
      assert.include(ended.error.message, "finishReason")
      const cut = yield* streamFailure(ask("x")).pipe(Effect.provide(model(sse.origin)))
      assert.strictEqual(cut.error.reason, "transport")
    }).pipe(Effect.scoped))

  it.live("stream: interrupting a slow stream closes the HTTP response", () =>
    Effect.gen(function*() {
      const sse = yield* serveSse([{ events: streamEvents().slice(0, 2), then: "hang" }])
      yield* assertInterruptCloses(sse, ask("x"), 2).pipe(Effect.provide(model(sse.origin)))
    }).pipe(Effect.scoped))
})
