/**
 * Portable tool search through the adapters whose providers have none of their own (OpenAI Chat
 * Completions, Gemini, the effect/ai bridge), through `Agent.run` (`toolSearch`) over a real
 * loopback server: turn 1 sends only the loaded tool and `search_tools` (no deferral marker: the
 * official SDK types of these providers have none); the search's answer goes back as the provider's
 * tool message; turn 2 sends the tool it found among the request's tools, and turn 3 its result;
 * earlier turns go out unchanged on every later request; a call to a deferred tool no search revealed
 * is refused with the search-first message. Chat Completions also streamed (`Agent.stream`).
 */
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { assert, describe, it } from "@effect/vitest"
import type * as Genai from "@google/genai"
import { Effect, Layer, Redacted, Result, Stream } from "effect"
import type OpenAI from "openai"
import { Agent, type ChatModel, EventSink, ToolRegistry } from "../../src/index.ts"
import type { ToolEvent } from "../../src/index.ts"
import { GeminiModel, LanguageModelBridge, OpenAiChatModel } from "../../src/agent/models/index.ts"
import { OpenAiChat } from "../../src/providers/index.ts"
import { type Recorded, type Reply, serve } from "./support/loopback.ts"
import { completion } from "./support/node.ts"
import * as TestOpenAi from "./support/openAiLanguageModel.ts"
import { catalogue, deferredNames, toolSearch } from "./support/searchCatalogue.ts"
import { type SseEvent, serveSse } from "./support/sseServer.ts"
import { services } from "./support/tools.ts"

const key = "sk-proj-TESTKEY-portable-search-0a1b2c3d4e5f"
const geminiKey = "AIzaSyTESTKEY-portable-search-0a1b2c3d4e"

const chatModel = (origin: string) =>
  OpenAiChatModel.layer({ apiKey: Redacted.make(key), model: "gpt-4o-mini", baseUrl: `${origin}/v1` }).pipe(
    Layer.provide(NodeHttpClient.layerUndici)
  )
const geminiModel = (origin: string) =>
  GeminiModel.layer({ apiKey: Redacted.make(geminiKey), model: "gemini-2.5-flash", baseUrl: origin }).pipe(
    Layer.provide(NodeHttpClient.layerUndici)
  )
const bridgeModel = (origin: string) =>
  LanguageModelBridge.layer({ secrets: [Redacted.make(key)] }).pipe(
    Layer.provide(TestOpenAi.layer(origin, Redacted.make(key))),
    Layer.provide(NodeHttpClient.layerUndici)
  )

const specs = ToolRegistry.all(catalogue).specs
const weather = specs.find((spec) => spec.name === "get_weather")!

/** What the search tool's result reads as text: each tool found with its description and parameters. */
const foundText = `Found 1 tool; you can call it from your next step:\n${
  JSON.stringify([{ name: "get_weather", description: weather.description, parameters: weather.inputSchema }])
}`
const refused = /^tool "get_weather" is not loaded yet: call search_tools first with what you need, then call a tool it returns; available tools: convert_currency, search_tools$/

const options = { messages: [{ role: "user" as const, content: "Weather in Oslo?" }], tools: catalogue, toolSearch }

/** The run, its requests as the server saw them, and its `agent.tools_revealed` events. */
const runOver = <E>(layer: Layer.Layer<ChatModel.ChatModel, E>, requests: ReadonlyArray<Recorded>) =>
  Effect.gen(function*() {
    const result = yield* Agent.run(options).pipe(Effect.provide(layer))
    const revealed = (yield* EventSink.EventLog.use((log) => log.all)).filter(
      (e): e is ToolEvent.AgentToolsRevealed => e._tag === "agent.tools_revealed"
    )
    return { result, requests, revealed }
  }).pipe(Effect.provide(services))

/** Each request's `field` (its transcript) starts with the previous request's, unchanged. */
const assertTranscriptPrefix = (requests: ReadonlyArray<Recorded>, field: string) => {
  for (const [n, request] of requests.entries()) {
    if (n === 0) continue
    const before = (requests[n - 1]!.json as Record<string, ReadonlyArray<unknown>>)[field]!
    const now = (request.json as Record<string, ReadonlyArray<unknown>>)[field]!
    assert.deepStrictEqual(now.slice(0, before.length), before, `request ${n}: the ${field} of request ${n - 1} is not its prefix`)
  }
}

/** No request carries a deferral marker or a tool reference (the native forms). */
const assertNoNativeForm = (requests: ReadonlyArray<Recorded>) => {
  for (const request of requests) {
    for (const marker of ["defer_loading", "tool_reference", "tool_search"]) assert.notInclude(request.body, marker)
  }
}

/** A request before any search names no deferred tool at all. */
const assertNoneDeferredSent = (request: Recorded | undefined) => {
  for (const name of deferredNames) assert.notInclude(request?.body, name)
}

/** What every portable round trip ends with: the search, the revealed tool's call, the answer, one reveal. */
const assertRun = (
  { result, revealed, requests }: {
    readonly result: Agent.AgentResult<unknown, unknown>
    readonly revealed: ReadonlyArray<ToolEvent.AgentToolsRevealed>
    readonly requests: ReadonlyArray<Recorded>
  }
) => {
  assert.strictEqual(result.text, "Sunny in Oslo.")
  assert.deepStrictEqual(result.results.map((r) => [r.name, r.isError]), [["search_tools", false], ["get_weather", false]])
  assert.strictEqual(result.results[1]!.value, "get_weather(Oslo)")
  assert.deepStrictEqual(revealed.map((e) => [e.turn, e.toolName, e.query, e.names]), [
    [0, "search_tools", "weather", ["get_weather"]]
  ])
  assert.strictEqual(requests.length, 3)
  assertNoneDeferredSent(requests[0])
  assertNoNativeForm(requests)
}

// ---------------------------------------------------------------------------
// OpenAI Chat Completions (and the effect/ai bridge, whose test LanguageModel speaks it)
// ---------------------------------------------------------------------------

interface ChatBody {
  readonly stream?: boolean
  readonly messages: ReadonlyArray<Record<string, unknown>>
  readonly tools: ReadonlyArray<{ readonly type: string; readonly function: Record<string, unknown> }>
}
const chatBody = (request: Recorded | undefined): ChatBody => request?.json as ChatBody
const chatToolNames = (request: Recorded | undefined) => chatBody(request).tools.map((t) => t.function.name)

const searchCall = { id: "call_s1", type: "function", function: { name: "search_tools", arguments: "{\"query\":\"weather\"}" } }
const weatherCall = { id: "call_w1", type: "function", function: { name: "get_weather", arguments: "{\"city\":\"Oslo\"}" } }

const chatReplies: ReadonlyArray<Reply> = [
  { json: completion(null, [["call_s1", "search_tools", "{\"query\":\"weather\"}"]]) },
  { json: completion(null, [["call_w1", "get_weather", "{\"city\":\"Oslo\"}"]]) },
  { json: completion("Sunny in Oslo.") }
]

/** The Chat Completions wire of a round trip: tools per turn, the search's tool message, the revealed call. */
const assertChatWire = (requests: ReadonlyArray<Recorded>, tools: "adapter" | "bridge") => {
  assert.deepStrictEqual(chatToolNames(requests[0]), ["convert_currency", "search_tools"])
  assert.deepStrictEqual(chatToolNames(requests[1]), ["get_weather", "convert_currency", "search_tools"])
  assert.deepStrictEqual(chatToolNames(requests[2]), ["get_weather", "convert_currency", "search_tools"])
  // the found tool goes out as any tool does: the adapter's export (strict), the bridge's plain schema
  const sent = chatBody(requests[1]).tools[0]
  const exported = Result.getOrThrow(OpenAiChat.toolDefinitionsResult([weather]))[0]
  assert.deepStrictEqual<unknown>(
    sent,
    tools === "adapter"
      ? exported
      : { type: "function", function: { name: "get_weather", description: weather.description, parameters: weather.inputSchema } }
  )
  assertTranscriptPrefix(requests, "messages")

  assert.deepStrictEqual(chatBody(requests[1]).messages.slice(1), [
    { role: "assistant", content: null, tool_calls: [searchCall] },
    { role: "tool", tool_call_id: "call_s1", content: foundText }
  ])
  assert.deepStrictEqual(chatBody(requests[2]).messages.slice(3), [
    { role: "assistant", content: null, tool_calls: [weatherCall] },
    { role: "tool", tool_call_id: "call_w1", content: "get_weather(Oslo)" }
  ])
}

/** The fail-closed run: a call to a deferred tool before any search, then an answer. */
const failClosedReplies: ReadonlyArray<Reply> = [
  { json: completion(null, [["call_w0", "get_weather", "{\"city\":\"Oslo\"}"]]) },
  { json: completion("I cannot tell.") }
]

// Chat Completions chunks, typed against the official SDK
type Delta = OpenAI.Chat.Completions.ChatCompletionChunk.Choice["delta"]
type Finish = OpenAI.Chat.Completions.ChatCompletionChunk.Choice["finish_reason"]
const chunk = (delta: Delta, finish: Finish = null): SseEvent => ({
  json: {
    id: "chatcmpl-search",
    object: "chat.completion.chunk",
    created: 1699896916,
    model: "gpt-4o-mini",
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    usage: null
  } satisfies OpenAI.Chat.Completions.ChatCompletionChunk
})
const done: SseEvent = { text: "[DONE]" }
const callEvents = (id: string, name: string, pieces: ReadonlyArray<string>): ReadonlyArray<SseEvent> => [
  chunk({ role: "assistant", content: null, refusal: null }),
  chunk({ tool_calls: [{ index: 0, id, type: "function", function: { name, arguments: "" } }] }),
  ...pieces.map((piece) => chunk({ tool_calls: [{ index: 0, function: { arguments: piece } }] })),
  chunk({}, "tool_calls"),
  done
]
const textEvents = (pieces: ReadonlyArray<string>): ReadonlyArray<SseEvent> => [
  chunk({ role: "assistant", content: "", refusal: null }),
  ...pieces.map((piece) => chunk({ content: piece })),
  chunk({}, "stop"),
  done
]

describe("OpenAiChatModel: portable tool search", () => {
  it.live("search_tools, then the revealed tool, then the answer: the found tool's definition as the tool message", () =>
    Effect.gen(function*() {
      const server = yield* serve(chatReplies)
      const run = yield* runOver(chatModel(server.origin), server.requests)
      assertRun(run)
      assertChatWire(server.requests, "adapter")
    }).pipe(Effect.scoped))

  it.live("fail closed: a deferred tool no search revealed is refused with the search-first message", () =>
    Effect.gen(function*() {
      const server = yield* serve(failClosedReplies)
      const { result, requests } = yield* runOver(chatModel(server.origin), server.requests)
      assert.strictEqual(result.text, "I cannot tell.")
      assert.strictEqual(result.results[0]!.error?._tag, "ToolNotAllowed")
      assert.deepStrictEqual(requests.map(chatToolNames), [["convert_currency", "search_tools"], ["convert_currency", "search_tools"]])
      const answer = chatBody(requests[1]).messages.at(-1)!
      assert.deepInclude(answer, { role: "tool", tool_call_id: "call_w0" })
      assert.match(String(answer.content), refused)
      assertNoneDeferredSent(requests[0])
      assertNoNativeForm(requests)
    }).pipe(Effect.scoped))

  it.live("Agent.stream: the same wire, streamed; the reveal is an event between the search and the revealed call", () =>
    Effect.gen(function*() {
      const sse = yield* serveSse([
        { events: callEvents("call_s1", "search_tools", ["{\"query\":", "\"weather\"}"]), chunk: 40 },
        { events: callEvents("call_w1", "get_weather", ["{\"city\":\"Os", "lo\"}"]), chunk: 40 },
        { events: textEvents(["Sunny ", "in Oslo."]), chunk: 40 }
      ])
      const events = yield* Agent.stream(options).pipe(
        Stream.runCollect,
        Effect.provide(Layer.merge(chatModel(sse.origin), services))
      )
      assert.isTrue(sse.requests.every((r) => chatBody(r).stream === true))
      assert.strictEqual(sse.requests.length, 3)
      assertNoNativeForm(sse.requests)
      assertChatWire(sse.requests, "adapter")

      const story = events.flatMap((e) =>
        e._tag === "agent.tool_call"
          ? [`call ${e.toolName}`]
          : e._tag === "agent.tools_revealed"
          ? [`revealed ${e.names.join(",")}`]
          : e._tag === "agent.finished"
          ? [`finished ${e.text}`]
          : []
      )
      assert.deepStrictEqual(story, ["call search_tools", "revealed get_weather", "call get_weather", "finished Sunny in Oslo."])
      const text = events.flatMap((e) => e._tag === "agent.text_delta" ? [e.text] : [])
      assert.deepStrictEqual(text, ["Sunny ", "in Oslo."])
    }).pipe(Effect.scoped))
})

describe("LanguageModelBridge: portable tool search", () => {
  it.live("search_tools, then the revealed tool, then the answer: the search's text reaches the LanguageModel's prompt", () =>
    Effect.gen(function*() {
      const server = yield* serve(chatReplies)
      const run = yield* runOver(bridgeModel(server.origin), server.requests)
      assertRun(run)
      assertChatWire(server.requests, "bridge")
    }).pipe(Effect.scoped))

  it.live("fail closed: a deferred tool no search revealed is refused with the search-first message", () =>
    Effect.gen(function*() {
      const server = yield* serve(failClosedReplies)
      const { result, requests } = yield* runOver(bridgeModel(server.origin), server.requests)
      assert.strictEqual(result.text, "I cannot tell.")
      assert.strictEqual(result.results[0]!.error?._tag, "ToolNotAllowed")
      assert.deepStrictEqual(requests.map(chatToolNames), [["convert_currency", "search_tools"], ["convert_currency", "search_tools"]])
      const answer = chatBody(requests[1]).messages.at(-1)!
      assert.deepInclude(answer, { role: "tool", tool_call_id: "call_w0" })
      assert.match(String(answer.content), refused)
      assertNoneDeferredSent(requests[0])
      assertNoNativeForm(requests)
    }).pipe(Effect.scoped))
})

// ---------------------------------------------------------------------------
// Gemini
// ---------------------------------------------------------------------------

/** A `GenerateContentResponse` (typed against `@google/genai`) with the first candidate's parts. */
const gemini = (parts: Array<Genai.Part>): Reply => ({
  json: {
    candidates: [{ content: { role: "model", parts }, index: 0, finishReason: "STOP" as Genai.FinishReason }],
    usageMetadata: { promptTokenCount: 90, candidatesTokenCount: 10, totalTokenCount: 100 },
    modelVersion: "gemini-2.5-flash",
    responseId: "mcp6aLHUC4-W_uMP7r2c4Ao"
  } satisfies Pick<Genai.GenerateContentResponse, "candidates" | "usageMetadata" | "modelVersion" | "responseId">
})

interface GeminiBody {
  readonly contents: ReadonlyArray<{ readonly role: string; readonly parts: ReadonlyArray<Record<string, unknown>> }>
  readonly tools: ReadonlyArray<{ readonly functionDeclarations: ReadonlyArray<Record<string, unknown>> }>
}
const geminiBody = (request: Recorded | undefined): GeminiBody => request?.json as GeminiBody
const declared = (request: Recorded | undefined) => geminiBody(request).tools.flatMap((t) => t.functionDeclarations)

describe("GeminiModel: portable tool search", () => {
  it.live("search_tools, then the revealed tool, then the answer: the search's finds as a functionResponse", () =>
    Effect.gen(function*() {
      const server = yield* serve([
        gemini([{ functionCall: { name: "search_tools", args: { query: "weather" } } }]),
        gemini([{ functionCall: { name: "get_weather", args: { city: "Oslo" } } }]),
        gemini([{ text: "Sunny in Oslo." }])
      ])
      const run = yield* runOver(geminiModel(server.origin), server.requests)
      assertRun(run)
      const { requests } = run
      assert.deepStrictEqual(requests.map((r) => declared(r).map((d) => d.name)), [
        ["convert_currency", "search_tools"],
        ["get_weather", "convert_currency", "search_tools"],
        ["get_weather", "convert_currency", "search_tools"]
      ])
      // the found tool's declaration carries its parameters from the next turn on
      assert.deepStrictEqual(declared(requests[1])[0], {
        name: "get_weather",
        description: weather.description,
        parametersJsonSchema: weather.inputSchema
      })
      assertTranscriptPrefix(requests, "contents")

      // Gemini's functionResponse carries the search's structured value (query, names, descriptions)
      assert.deepStrictEqual(geminiBody(requests[1]).contents.slice(1), [
        { role: "model", parts: [{ functionCall: { name: "search_tools", args: { query: "weather" } } }] },
        {
          role: "user",
          parts: [{
            functionResponse: {
              name: "search_tools",
              response: { query: "weather", tools: [{ name: "get_weather", description: weather.description }] }
            }
          }]
        }
      ])
      assert.deepStrictEqual(geminiBody(requests[2]).contents.slice(3), [
        { role: "model", parts: [{ functionCall: { name: "get_weather", args: { city: "Oslo" } } }] },
        { role: "user", parts: [{ functionResponse: { name: "get_weather", response: { output: "get_weather(Oslo)" } } }] }
      ])
    }).pipe(Effect.scoped))

  it.live("fail closed: a deferred tool no search revealed is refused with the search-first message", () =>
    Effect.gen(function*() {
      const server = yield* serve([
        gemini([{ functionCall: { name: "get_weather", args: { city: "Oslo" } } }]),
        gemini([{ text: "I cannot tell." }])
      ])
      const { result, requests } = yield* runOver(geminiModel(server.origin), server.requests)
      assert.strictEqual(result.text, "I cannot tell.")
      assert.strictEqual(result.results[0]!.error?._tag, "ToolNotAllowed")
      assert.deepStrictEqual(requests.map((r) => declared(r).map((d) => d.name)), [
        ["convert_currency", "search_tools"],
        ["convert_currency", "search_tools"]
      ])
      const answer = geminiBody(requests[1]).contents.at(-1)!
      const response = answer.parts[0]!.functionResponse as { name: string; response: { error: string } }
      assert.strictEqual(response.name, "get_weather")
      assert.match(response.response.error, refused)
      assertNoneDeferredSent(requests[0])
      assertNoNativeForm(requests)
    }).pipe(Effect.scoped))
})
