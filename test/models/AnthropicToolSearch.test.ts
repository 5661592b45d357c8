/**
 * Anthropic's own tool search through `Agent.run` (`toolSearch`) over a real loopback server: every
 * deferred tool goes in `tools` with `defer_loading: true` beside the loaded one and the search tool,
 * the same list every turn; a search's result answers with `tool_reference` blocks to the tools it
 * found; earlier turns go out byte for byte the same on every later request; a call to a deferred
 * tool no search revealed is refused with the search-first message, and a search that failed or
 * found nothing stays text.
 */
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Redacted, Result } from "effect"
import { Agent, EventSink, ToolRegistry, ToolSearch } from "../../src/index.ts"
import type { ToolEvent } from "../../src/index.ts"
import { AnthropicModel } from "../../src/agent/models/index.ts"
import { type Recorded, type Reply, serve } from "./support/loopback.ts"
import { assertStablePrefix, catalogue, deferredNames, toolSearch } from "./support/searchCatalogue.ts"
import { services } from "./support/tools.ts"

const key = "sk-ant-api03-TESTKEY-toolsearch-0a1b2c3d4e5f"

const model = (origin: string, options: Partial<AnthropicModel.Options> = {}) =>
  AnthropicModel.layer({ apiKey: Redacted.make(key), model: "claude-sonnet-4-5", baseUrl: origin, ...options }).pipe(
    Layer.provide(NodeHttpClient.layerUndici)
  )

/** A `Message` body with these content blocks. */
const message = (content: ReadonlyArray<unknown>, stop_reason = "tool_use"): Reply => ({
  json: {
    id: "msg_01XFDUDYJgAACzvnptvVoYEL",
    type: "message",
    role: "assistant",
    model: "claude-sonnet-4-5",
    content,
    stop_reason,
    stop_sequence: null,
    usage: { input_tokens: 410, output_tokens: 32 }
  }
})
const toolUse = (id: string, name: string, input: unknown) => ({ type: "tool_use", id, name, input })
const final = (text: string) => message([{ type: "text", text }], "end_turn")

interface Body {
  readonly tools: ReadonlyArray<Record<string, unknown>>
  readonly messages: ReadonlyArray<{ readonly role: string; readonly content: unknown }>
}
const bodyOf = (request: Recorded | undefined): Body => request?.json as Body

describe("AnthropicModel: tool search", () => {
  it.live("search, then the revealed tool, then the answer: deferred tools and tool_reference results", () =>
    Effect.gen(function*() {
      const server = yield* serve([
        message([{ type: "text", text: "Let me find a tool." }, toolUse("toolu_s1", "search_tools", { query: "weather" })]),
        message([toolUse("toolu_w1", "get_weather", { city: "Oslo" })]),
        final("Sunny in Oslo.")
      ])
      const result = yield* Agent.run({
        messages: [{ role: "user", content: "Weather in Oslo?" }],
        tools: catalogue,
        toolSearch
      }).pipe(Effect.provide(model(server.origin)))
      assert.strictEqual(result.text, "Sunny in Oslo.")
      assert.deepStrictEqual(result.results.map((r) => [r.name, r.isError]), [["search_tools", false], ["get_weather", false]])
      assert.strictEqual(result.results[1]!.value, "get_weather(Oslo)")
      assert.strictEqual(server.requests.length, 3)

      // the loaded tool, the search tool as a plain tool, then every deferred tool: the same every turn
      const first = bodyOf(server.requests[0])
      assert.deepStrictEqual(first.tools.map((t) => [t.name, t.defer_loading]), [
        ["convert_currency", undefined],
        ["search_tools", undefined],
        ...deferredNames.map((name) => [name, true])
      ])
      assert.deepStrictEqual(first.tools[1]!.input_schema, {
        type: "object",
        properties: { query: { type: "string", description: "What you need to do, in a few words." } },
        required: ["query"],
        additionalProperties: false
      })
      assertStablePrefix(server.requests, "messages")

      // turn 2: the search's answer is a reference to the tool it found
      const second = bodyOf(server.requests[1])
      assert.deepStrictEqual(second.messages[1], {
        role: "assistant",
        content: [{ type: "text", text: "Let me find a tool." }, toolUse("toolu_s1", "search_tools", { query: "weather" })]
      })
      assert.deepStrictEqual(second.messages[2], {
        role: "user",
        content: [{ type: "tool_result", tool_use_id: "toolu_s1", content: [{ type: "tool_reference", tool_name: "get_weather" }] }]
      })
      // turn 3: the revealed tool's call and its plain result follow
      assert.deepStrictEqual(bodyOf(server.requests[2]).messages.slice(3), [
        { role: "assistant", content: [toolUse("toolu_w1", "get_weather", { city: "Oslo" })] },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_w1", content: "get_weather(Oslo)" }] }
      ])
      const revealed = (yield* EventSink.EventLog.use((log) => log.all)).filter(
        (e): e is ToolEvent.AgentToolsRevealed => e._tag === "agent.tools_revealed"
      )
      assert.deepStrictEqual(revealed.map((e) => e.names), [["get_weather"]])
    }).pipe(Effect.provide(services), Effect.scoped))

  it.live("fail closed: a deferred tool no search revealed is refused; a failed or empty search stays text", () =>
    Effect.gen(function*() {
      const server = yield* serve([
        message([
          toolUse("toolu_1", "get_weather", { city: "Oslo" }),
          toolUse("toolu_2", "search_tools", {}),
          toolUse("toolu_3", "search_tools", { query: "xyzzy" })
        ]),
        final("I cannot tell.")
      ])
      const result = yield* Agent.run({
        messages: [{ role: "user", content: "Weather in Oslo?" }],
        tools: catalogue,
        toolSearch
      }).pipe(Effect.provide(Layer.merge(model(server.origin), services)))
      assert.strictEqual(result.text, "I cannot tell.")
      assert.strictEqual(result.results[0]!.error?._tag, "ToolNotAllowed")
      assert.isTrue(result.results[1]!.isError)
      assert.isFalse(result.results[2]!.isError)
      assertStablePrefix(server.requests, "messages")

      const answers = bodyOf(server.requests[1]).messages[2]!.content as ReadonlyArray<Record<string, unknown>>
      assert.deepStrictEqual(answers.map((a) => [a.tool_use_id, typeof a.content, a.is_error]), [
        ["toolu_1", "string", true],
        ["toolu_2", "string", true],
        ["toolu_3", "string", undefined]
      ])
      assert.match(String(answers[0]!.content), /not loaded yet: call search_tools first/)
      assert.match(String(answers[2]!.content), /No tool matched "xyzzy"/)
      assert.notInclude(server.requests[1]!.body, "tool_reference")
    }).pipe(Effect.scoped))

  it.live("toolSearch: false (a server without it): the portable form, no defer_loading, found tools as plain tools", () =>
    Effect.gen(function*() {
      const server = yield* serve([
        message([toolUse("toolu_s1", "search_tools", { query: "weather" })]),
        message([toolUse("toolu_w1", "get_weather", { city: "Oslo" })]),
        final("Sunny.")
      ])
      const result = yield* Agent.run({
        messages: [{ role: "user", content: "Weather in Oslo?" }],
        tools: catalogue,
        toolSearch
      }).pipe(Effect.provide(Layer.merge(model(server.origin, { toolSearch: false }), services)))
      assert.strictEqual(result.text, "Sunny.")
      assert.deepStrictEqual(server.requests.map((r) => bodyOf(r).tools.map((t) => t.name)), [
        ["convert_currency", "search_tools"],
        ["get_weather", "convert_currency", "search_tools"],
        ["get_weather", "convert_currency", "search_tools"]
      ])
      for (const request of server.requests) {
        assert.notInclude(request.body, "defer_loading")
        assert.notInclude(request.body, "tool_reference")
      }
    }).pipe(Effect.scoped))

  it("a found tool the request does not send deferred (the turn's selection left it out) is not referenced", () => {
    const specs = ToolRegistry.all(catalogue).specs
    const found = {
      toolCallId: "toolu_s1",
      name: "search_tools",
      content: [{ type: "text" as const, text: "Found 1 tool" }],
      value: { query: "hotel", tools: [{ name: "book_hotel", description: "Book a hotel room in a city." }] },
      artifacts: [],
      isError: false,
      elapsed: 0
    }
    const messages = [
      { role: "user" as const, content: "hotel" },
      { role: "assistant" as const, content: "", toolCalls: [{ id: "toolu_s1", name: "search_tools", arguments: { query: "hotel" } }] },
      { role: "tool" as const, results: [found] }
    ]
    const answer = (deferred: ReadonlyArray<string>) =>
      AnthropicModel.wireMessages(messages, {
        tool: "search_tools",
        deferred: specs.filter((s) => deferred.includes(s.name))
      }).messages[2]
    assert.deepStrictEqual(answer(["book_hotel", "get_weather"]), {
      role: "user",
      content: [{ type: "tool_result", tool_use_id: "toolu_s1", content: [{ type: "tool_reference", tool_name: "book_hotel" }] }]
    })
    assert.deepStrictEqual(answer(["get_weather"]), {
      role: "user",
      content: [{ type: "tool_result", tool_use_id: "toolu_s1", content: "Found 1 tool" }]
    })
    // without tool search the same result is text
    assert.deepStrictEqual(AnthropicModel.wireMessages(messages).messages[2], answer(["get_weather"]))
  })

  it("the deferred definitions are exported once per deferred list: every turn and run reuses them; another strict mode exports them again", () => {
    const plan = Result.getOrThrow(ToolSearch.plan(catalogue, toolSearch))!
    const deferredOf = (strict?: AnthropicModel.Options["strict"]) => {
      const request = (turn: number) => {
        const turnTools = ToolSearch.turnTools(plan, ToolRegistry.all(catalogue), new Map(), turn, true)
        return { messages: [{ role: "user" as const, content: "x" }], tools: turnTools.shown, toolSearch: turnTools.request! }
      }
      return [0, 1].map((turn) => {
        const body = Result.getOrThrow(AnthropicModel.encodeRequest({ ...{ model: "claude-sonnet-4-5" }, ...(strict === undefined ? {} : { strict }) }, request(turn)))
        return (body.tools ?? []).filter((tool) => (tool as { defer_loading?: boolean }).defer_loading === true)
      })
    }
    const [first, second] = deferredOf()
    assert.deepStrictEqual(first!.map((tool) => (tool as { name: string }).name), deferredNames)
    for (const [i, tool] of first!.entries()) assert.strictEqual(second![i], tool)
    // the next run over the registry: the same plan, the same definitions
    const [again] = deferredOf()
    for (const [i, tool] of first!.entries()) assert.strictEqual(again![i], tool)
    const [other] = deferredOf("auto")
    assert.notStrictEqual(other![0], first![0])
    assert.notDeepEqual(other![0], first![0])
  })
})
