/**
 * The Responses API's tool search executed by the client, through `Agent.run` (`toolSearch`) over a
 * real loopback server, whole and streamed: the search tool goes as a `tool_search` tool
 * (`execution: "client"`) and every deferred tool as a function with `defer_loading: true`, the same
 * list every turn; the model's `tool_search_call` is a call to the search tool, replayed as a
 * `tool_search_call` and answered with a `tool_search_output` carrying the definitions of the tools
 * found; earlier turns go out byte for byte the same; a call to a deferred tool no search revealed
 * is refused with the search-first message.
 */
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Redacted, Result, Schema, Stream } from "effect"
import type OpenAI from "openai"
import { Agent, ChatModel, Tool, ToolRegistry, ToolSearch } from "../../src/index.ts"
import { OpenAiResponsesModel } from "../../src/agent/models/index.ts"
import { type Recorded, serve } from "./support/loopback.ts"
import { assertStablePrefix, catalogue, deferredNames, toolSearch } from "./support/searchCatalogue.ts"
import { type SseEvent, serveSse } from "./support/sseServer.ts"
import { trace } from "./support/streaming.ts"
import { services } from "./support/tools.ts"

const key = "sk-proj-TESTKEY-toolsearch-0a1b2c3d4e5f6a7b"

const model = (origin: string, options: Partial<OpenAiResponsesModel.Options> = {}) =>
  OpenAiResponsesModel.layer({ apiKey: Redacted.make(key), model: "gpt-5.4", baseUrl: `${origin}/v1`, ...options }).pipe(
    Layer.provide(NodeHttpClient.layerUndici)
  )

const searchCall = (
  args: unknown,
  status: "in_progress" | "completed" = "completed"
): OpenAI.Responses.ResponseToolSearchCall => ({
  type: "tool_search_call",
  id: "tsc_68f1",
  call_id: "call_s1",
  execution: "client",
  arguments: args,
  status
})
const functionCall = (callId: string, name: string, args: string): OpenAI.Responses.ResponseFunctionToolCall => ({
  type: "function_call",
  id: `fc_${callId}`,
  call_id: callId,
  name,
  arguments: args,
  status: "completed"
})
const message = (text: string): OpenAI.Responses.ResponseOutputMessage => ({
  type: "message",
  id: "msg_68f1",
  status: "completed",
  role: "assistant",
  content: [{ type: "output_text", text, annotations: [], logprobs: [] }]
})
const response = (output: ReadonlyArray<unknown>, status = "completed") => ({
  id: "resp_68f1",
  object: "response",
  created_at: 1741476542,
  status,
  error: null,
  incomplete_details: null,
  model: "gpt-5.4",
  output,
  usage: { input_tokens: 300, output_tokens: 20, total_tokens: 320 }
})

interface Body {
  readonly tools: ReadonlyArray<Record<string, unknown>>
  readonly input: ReadonlyArray<Record<string, unknown>>
}
const bodyOf = (request: Recorded | undefined): Body => request?.json as Body

/** What every request of a search round trip carries: tools, and the search's call and output in the transcript. */
const assertRoundTrip = (requests: ReadonlyArray<Recorded>) => {
  assert.strictEqual(requests.length, 3)
  const first = bodyOf(requests[0])
  assert.deepStrictEqual(first.tools.map((t) => [t.type, t.name, t.defer_loading]), [
    ["function", "convert_currency", undefined],
    ["tool_search", undefined, undefined],
    ...deferredNames.map((name) => ["function", name, true])
  ])
  assert.deepStrictEqual(first.tools[1], {
    type: "tool_search",
    execution: "client",
    description: first.tools[1]!.description,
    parameters: {
      type: "object",
      properties: { query: { type: "string", description: "What you need to do, in a few words." } },
      required: ["query"],
      additionalProperties: false
    }
  })
  assert.match(String(first.tools[1]!.description), /^Search the tool catalogue/)
  assertStablePrefix(requests, "input")

  const weather = first.tools.find((t) => t.name === "get_weather")!
  assert.deepInclude(weather, { type: "function", strict: true, defer_loading: true })
  assert.deepStrictEqual(bodyOf(requests[1]).input.slice(1), [
    { type: "tool_search_call", call_id: "call_s1", arguments: { query: "weather" }, execution: "client", status: "completed" },
    { type: "tool_search_output", call_id: "call_s1", execution: "client", status: "completed", tools: [weather] }
  ])
  assert.deepStrictEqual(bodyOf(requests[2]).input.slice(3), [
    { type: "function_call", call_id: "call_w1", name: "get_weather", arguments: "{\"city\":\"Oslo\"}" },
    { type: "function_call_output", call_id: "call_w1", output: "get_weather(Oslo)" }
  ])
}

let seq = 0
const ev = (value: { readonly type: string; readonly [field: string]: unknown }): SseEvent => ({
  event: value.type,
  json: { ...value, sequence_number: seq++ }
})
const itemAdded = (index: number, item: OpenAI.Responses.ResponseOutputItem): SseEvent =>
  ev({ type: "response.output_item.added", output_index: index, item, sequence_number: 0 } satisfies OpenAI.Responses.ResponseOutputItemAddedEvent)
const itemDone = (index: number, item: OpenAI.Responses.ResponseOutputItem): SseEvent =>
  ev({ type: "response.output_item.done", output_index: index, item, sequence_number: 0 } satisfies OpenAI.Responses.ResponseOutputItemDoneEvent)
const created = () => ev({ type: "response.created", response: response([], "in_progress") })
const completed = (output: ReadonlyArray<unknown>) => ev({ type: "response.completed", response: response(output) })

const searchEvents = [
  created(),
  itemAdded(0, searchCall({}, "in_progress")),
  itemDone(0, searchCall({ query: "weather" })),
  completed([searchCall({ query: "weather" })])
]
const weatherEvents = [
  created(),
  itemAdded(0, { ...functionCall("call_w1", "get_weather", ""), status: "in_progress" }),
  ev({ type: "response.function_call_arguments.delta", item_id: "fc_call_w1", output_index: 0, delta: "{\"city\":" }),
  ev({ type: "response.function_call_arguments.delta", item_id: "fc_call_w1", output_index: 0, delta: "\"Oslo\"}" }),
  ev({ type: "response.function_call_arguments.done", item_id: "fc_call_w1", output_index: 0, name: "get_weather", arguments: "{\"city\":\"Oslo\"}" }),
  itemDone(0, functionCall("call_w1", "get_weather", "{\"city\":\"Oslo\"}")),
  completed([functionCall("call_w1", "get_weather", "{\"city\":\"Oslo\"}")])
]
const answerEvents = [
  created(),
  itemAdded(0, { ...message(""), status: "in_progress", content: [] }),
  ev({ type: "response.output_text.delta", item_id: "msg_68f1", output_index: 0, content_index: 0, delta: "Sunny.", logprobs: [] }),
  itemDone(0, message("Sunny.")),
  completed([message("Sunny.")])
]

const run = Agent.run({ messages: [{ role: "user", content: "Weather in Oslo?" }], tools: catalogue, toolSearch })

describe("OpenAiResponsesModel: tool search", () => {
  it.live("whole responses: tool_search_call, then the revealed tool, then the answer", () =>
    Effect.gen(function*() {
      const server = yield* serve([
        { json: response([searchCall({ query: "weather" })]) },
        { json: response([functionCall("call_w1", "get_weather", "{\"city\":\"Oslo\"}")]) },
        { json: response([message("Sunny.")]) }
      ])
      const result = yield* run.pipe(Effect.provide(model(server.origin)))
      assert.strictEqual(result.text, "Sunny.")
      assert.deepStrictEqual(result.results.map((r) => [r.toolCallId, r.name, r.isError]), [
        ["call_s1", "search_tools", false],
        ["call_w1", "get_weather", false]
      ])
      assertRoundTrip(server.requests)
    }).pipe(Effect.provide(services), Effect.scoped))

  it.live("streamed: a tool_search_call item in the event stream is a call to the search tool", () =>
    Effect.gen(function*() {
      const sse = yield* serveSse([{ events: searchEvents }, { events: weatherEvents }, { events: answerEvents }])
      const result = yield* run.pipe(Effect.provide(model(sse.origin)))
      assert.strictEqual(result.text, "Sunny.")
      assert.strictEqual(result.results[1]!.value, "get_weather(Oslo)")
      assert.isTrue(sse.requests.every((r) => (r.json as { stream?: boolean }).stream === true))
      assertRoundTrip(sse.requests)

      // the parts of the search turn: started at output_item.added, arguments and call at output_item.done
      const again = yield* serveSse([{ events: searchEvents }])
      const specs = ToolRegistry.all(catalogue).specs
      const parts = yield* ChatModel.ChatModel.use((m) =>
        Stream.runCollect(m.stream({
          messages: [{ role: "user", content: "Weather in Oslo?" }],
          tools: specs.filter((s) => s.name === "convert_currency"),
          toolSearch: { tool: "search_tools", deferred: specs.filter((s) => s.name !== "convert_currency") }
        }))
      ).pipe(Effect.provide(model(again.origin)))
      assert.deepStrictEqual(trace(parts), ["start:call_s1", "delta:call_s1", "call:call_s1", "finished"])
      assert.deepStrictEqual(parts[0], { _tag: "ToolCallStarted", id: "call_s1", name: "search_tools" })
      assert.deepStrictEqual(parts[1], { _tag: "ToolCallDelta", id: "call_s1", argumentsDelta: "{\"query\":\"weather\"}" })
      const call = { id: "call_s1", name: "search_tools", arguments: { query: "weather" } }
      assert.deepStrictEqual(parts[2], { _tag: "ToolCall", call })
      const last = parts.at(-1)
      assert.deepStrictEqual(last?._tag === "Finished" ? last.response.toolCalls : [], [call])
    }).pipe(Effect.provide(services), Effect.scoped))

  it.live("fail closed: a deferred tool no search revealed is refused with the search-first message", () =>
    Effect.gen(function*() {
      const server = yield* serve([
        { json: response([functionCall("call_w0", "get_weather", "{\"city\":\"Oslo\"}")]) },
        { json: response([message("I cannot tell.")]) }
      ])
      const result = yield* run.pipe(Effect.provide(model(server.origin)))
      assert.strictEqual(result.text, "I cannot tell.")
      assert.strictEqual(result.results[0]!.error?._tag, "ToolNotAllowed")
      assertStablePrefix(server.requests, "input")
      const output = bodyOf(server.requests[1]).input.at(-1)!
      assert.strictEqual(output.type, "function_call_output")
      assert.match(String(output.output), /not loaded yet: call search_tools first/)
    }).pipe(Effect.provide(services), Effect.scoped))

  it.live("without a search request a tool_search_call stays passthrough; toolSearch: false sends the portable form", () =>
    Effect.gen(function*() {
      const server = yield* serve([{ json: response([searchCall({ query: "weather" })]) }])
      const whole = yield* ChatModel.ChatModel.use((m) =>
        m.generate({ messages: [{ role: "user", content: "x" }], tools: ToolRegistry.all(catalogue).specs })
      ).pipe(Effect.provide(model(server.origin)))
      assert.deepStrictEqual(whole.toolCalls, [])
      assert.deepStrictEqual(whole.passthrough, [searchCall({ query: "weather" })])

      const portable = yield* serve([{ json: response([message("ok")]) }])
      yield* run.pipe(Effect.provide(model(portable.origin, { toolSearch: false })))
      assert.deepStrictEqual(bodyOf(portable.requests[0]).tools.map((t) => [t.type, t.name]), [
        ["function", "convert_currency"],
        ["function", "search_tools"]
      ])
      assert.notInclude(portable.requests[0]!.body, "defer_loading")
    }).pipe(Effect.provide(services), Effect.scoped))

  it.live("strict mode: a null for an optional property of a deferred tool is an absent key again", () =>
    Effect.gen(function*() {
      const forecast = Tool.make("get_forecast", {
        description: "Forecast for a city, some days ahead.",
        input: Schema.Struct({ city: Schema.String, days: Schema.optionalKey(Schema.Int) }),
        handler: ({ city }) => Effect.succeed(city)
      })
      const specs = ToolRegistry.all(ToolRegistry.makeResult([forecast]).pipe((r) => {
        if (r._tag === "Failure") throw r.failure
        return r.success
      })).specs
      const server = yield* serve([{ json: response([functionCall("call_f1", "get_forecast", "{\"city\":\"Oslo\",\"days\":null}")]) }])
      const whole = yield* ChatModel.ChatModel.use((m) =>
        m.generate({ messages: [{ role: "user", content: "x" }], tools: [], toolSearch: { tool: "search_tools", deferred: specs } })
      ).pipe(Effect.provide(model(server.origin)))
      assert.deepStrictEqual(whole.toolCalls, [{ id: "call_f1", name: "get_forecast", arguments: "{\"city\":\"Oslo\"}" }])
      const sent = bodyOf(server.requests[0]).tools[0]!
      assert.deepInclude(sent, { name: "get_forecast", strict: true, defer_loading: true })
    }).pipe(Effect.scoped))

  it("the deferred definitions are exported once per deferred list: every turn and run reuses them; another strict mode exports them again", () => {
    const plan = Result.getOrThrow(ToolSearch.plan(catalogue, toolSearch))!
    const deferredOf = (strict?: OpenAiResponsesModel.Options["strict"]) => {
      const request = (turn: number) => {
        const turnTools = ToolSearch.turnTools(plan, ToolRegistry.all(catalogue), new Map(), turn, true)
        return { messages: [{ role: "user" as const, content: "x" }], tools: turnTools.shown, toolSearch: turnTools.request! }
      }
      return [0, 1].map((turn) => {
        const body = Result.getOrThrow(OpenAiResponsesModel.encodeRequest({ ...{ model: "gpt-5" }, ...(strict === undefined ? {} : { strict }) }, request(turn)))
        return (body.tools ?? []).filter((tool) => (tool as { defer_loading?: boolean }).defer_loading === true)
      })
    }
    const [first, second] = deferredOf()
    assert.deepStrictEqual(first!.map((tool) => (tool as { name: string }).name), deferredNames)
    for (const [i, tool] of first!.entries()) assert.strictEqual(second![i], tool)
    // the next run over the registry: the same plan, the same definitions
    const [again] = deferredOf()
    for (const [i, tool] of first!.entries()) assert.strictEqual(again![i], tool)
    const [other] = deferredOf(false)
    assert.notStrictEqual(other![0], first![0])
    assert.notDeepEqual(other![0], first![0])
  })
})
