/**
 * Tool search (`Agent.run`'s `toolSearch`): deferred tools are hidden until the search tool finds
 * them; a call to an unrevealed one is refused with a message that says to search first; a search's
 * finds are an `agent.tools_revealed` event and advertised from the next turn (for the rest of the
 * run, or one turn with `keep: "turn"`); a model with tool search of its own gets the deferred tools
 * in `request.toolSearch` and an unchanging tool list.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit, Result, Schema, Stream } from "effect"
import { Agent, ChatModel, EventSink, Tool, ToolRegistry, ToolSearch, ToolServices } from "../../src/index.ts"
import type { ToolEvent } from "../../src/index.ts"
import type { ToolSpec } from "../../src/contract/Tool.ts"

const tool = (name: string, description: string) =>
  Tool.make(name, {
    description,
    input: Schema.Struct({ city: Schema.String.annotate({ description: "the city" }) }),
    handler: ({ city }) => Effect.succeed(`${name}(${city})`)
  })

const tools = ToolRegistry.makeResult([
  tool("get_weather", "Current weather for a city: temperature and sky."),
  tool("book_hotel", "Book a hotel room in a city."),
  tool("find_restaurant", "Find restaurants in a city by cuisine."),
  tool("convert_currency", "Convert an amount between currencies.")
])
const registry = tools._tag === "Success" ? tools.success : (() => {
  throw tools.failure
})()

const user = (content: string): ChatModel.Message => ({ role: "user", content })
const events = EventSink.EventLog.use((log) => log.all)
const names = (request: ChatModel.Request) => request.tools.map((t) => t.name as string)

describe("Agent toolSearch", () => {
  it.effect("hides deferred tools, refuses one not yet found, reveals what a search finds from the next turn", () =>
    Effect.gen(function*() {
      const seen: Array<ReadonlyArray<string>> = []
      const turns: ReadonlyArray<ChatModel.ScriptedTurn> = [
        (request) => (seen.push(names(request)), ChatModel.callTools([["c1", "get_weather", { city: "Oslo" }]])),
        (request) => (seen.push(names(request)), ChatModel.callTools([["c2", "search_tools", { query: "weather in a city" }]])),
        (request) => (seen.push(names(request)), ChatModel.callTools([["c3", "get_weather", { city: "Oslo" }]])),
        (request) => (seen.push(names(request)), ChatModel.answer("sunny"))
      ]
      const result = yield* Agent.run({
        messages: [user("weather in Oslo?")],
        tools: registry,
        toolSearch: { maxResults: 1 }
      }).pipe(Effect.provide(ChatModel.scripted(turns)))
      assert.strictEqual(result.text, "sunny")
      assert.deepStrictEqual(seen, [["search_tools"], ["search_tools"], ["get_weather", "search_tools"], [
        "get_weather",
        "search_tools"
      ]])
      const [refused, found, called] = result.results
      assert.isTrue(refused!.isError)
      assert.strictEqual(refused!.error?._tag, "ToolNotAllowed")
      assert.match(refused!.content[0]!.type === "text" ? refused!.content[0]!.text : "", /not loaded yet: call search_tools first/)
      assert.deepStrictEqual(found!.value, {
        query: "weather in a city",
        tools: [{ name: "get_weather", description: "Current weather for a city: temperature and sky." }]
      })
      // a model without tool search of its own reads each tool found with its parameters
      const text = found!.content[0]!.type === "text" ? found!.content[0]!.text : ""
      assert.match(text, /"name":"get_weather"/)
      assert.match(text, /"parameters":\{/)
      assert.strictEqual(called!.isError, false)
      const revealed = (yield* events).filter((e): e is ToolEvent.AgentToolsRevealed => e._tag === "agent.tools_revealed")
      assert.deepStrictEqual(revealed.map((e) => [e.turn, e.toolCallId, e.toolName, e.query, e.names]), [
        [1, "c2", "search_tools", "weather in a city", ["get_weather"]]
      ])
    }).pipe(Effect.provide(ToolServices.layerTest({ runId: "ts" }))))

  it.effect("keep: \"turn\" advertises a find only the turn after its search", () =>
    Effect.gen(function*() {
      const seen: Array<ReadonlyArray<string>> = []
      const turns: ReadonlyArray<ChatModel.ScriptedTurn> = [
        (request) => (seen.push(names(request)), ChatModel.callTools([["c1", "search_tools", { query: "hotel" }]])),
        (request) => (seen.push(names(request)), ChatModel.callTools([["c2", "get_weather", { city: "Rome" }]])),
        (request) => (seen.push(names(request)), ChatModel.callTools([["c3", "book_hotel", { city: "Rome" }]])),
        ChatModel.answer("done")
      ]
      const result = yield* Agent.run({
        messages: [user("book a hotel")],
        tools: registry,
        toolSearch: { keep: "turn" }
      }).pipe(Effect.provide(ChatModel.scripted(turns)))
      assert.deepStrictEqual(seen, [["search_tools"], ["book_hotel", "search_tools"], ["search_tools"]])
      assert.strictEqual(result.results[1]!.error?._tag, "ToolNotAllowed")
      assert.strictEqual(result.results[2]!.error?._tag, "ToolNotAllowed")
    }).pipe(Effect.provide(ToolServices.layerTest({ runId: "ts" }))))

  it.effect("loaded tools, minTools, and a continued conversation's earlier finds", () =>
    Effect.gen(function*() {
      const seen: Array<ReadonlyArray<string>> = []
      const record = (request: ChatModel.Request) => (seen.push(names(request)), ChatModel.answer("ok"))
      // below minTools nothing is deferred: no search tool
      yield* Agent.run({ messages: [user("x")], tools: registry, toolSearch: { minTools: 4 } }).pipe(
        Effect.provide(ChatModel.scripted([record]))
      )
      // a loaded tool stays advertised
      yield* Agent.run({ messages: [user("x")], tools: registry, toolSearch: { loaded: ["convert_currency"] } }).pipe(
        Effect.provide(ChatModel.scripted([record]))
      )
      // what an earlier search in the given messages found is advertised from the first turn
      const earlier: ReadonlyArray<ChatModel.Message> = [
        user("weather?"),
        { role: "assistant", content: "", toolCalls: [{ id: "s1", name: "search_tools", arguments: { query: "weather" } }] },
        {
          role: "tool",
          results: [{
            toolCallId: "s1",
            name: "search_tools",
            content: [],
            value: { query: "weather", tools: [{ name: "get_weather", description: "w" }] },
            artifacts: [],
            isError: false,
            elapsed: 0
          }]
        },
        user("and tomorrow?")
      ]
      yield* Agent.run({ messages: earlier, tools: registry, toolSearch: {} }).pipe(
        Effect.provide(ChatModel.scripted([record]))
      )
      assert.deepStrictEqual(seen, [
        ["get_weather", "book_hotel", "find_restaurant", "convert_currency"],
        ["convert_currency", "search_tools"],
        ["get_weather", "search_tools"]
      ])
    }).pipe(Effect.provide(ToolServices.layerTest({ runId: "ts" }))))

  it.effect("a model with tool search of its own: the same tools every turn, the deferred ones in request.toolSearch", () =>
    Effect.gen(function*() {
      const requests: Array<ChatModel.Request> = []
      const turns: ReadonlyArray<ChatModel.ScriptedTurn> = [
        (request) => (requests.push(request), ChatModel.callTools([["c1", "search_tools", { query: "restaurants" }]])),
        (request) => (requests.push(request), ChatModel.callTools([["c2", "find_restaurant", { city: "Lyon" }]])),
        (request) => (requests.push(request), ChatModel.answer("found"))
      ]
      const result = yield* Agent.run({
        messages: [user("eat in Lyon")],
        tools: registry,
        toolSearch: { loaded: ["convert_currency"] }
      }).pipe(Effect.provide(ChatModel.scripted(turns, { toolSearch: true })))
      assert.strictEqual(result.text, "found")
      assert.strictEqual(result.results[1]!.isError, false)
      for (const request of requests) {
        assert.deepStrictEqual(names(request), ["convert_currency", "search_tools"])
        assert.strictEqual(request.toolSearch?.tool, "search_tools")
        assert.deepStrictEqual(request.toolSearch?.deferred.map((t) => t.name as string), [
          "get_weather",
          "book_hotel",
          "find_restaurant"
        ])
      }
    }).pipe(Effect.provide(ToolServices.layerTest({ runId: "ts" }))))

  it.effect("Agent.stream reports the finds in its stream; mcpServer defers one MCP server's tools", () =>
    Effect.gen(function*() {
      const imported = (name: string, server: string) =>
        Tool.make(name, {
          description: `${name} from ${server}`,
          input: Schema.Struct({ path: Schema.String }),
          safety: { tags: ["mcp", `mcp:${server}`] },
          handler: ({ path }) => Effect.succeed(path)
        })
      const mixed = ToolRegistry.makeResult([imported("read_file", "fs"), imported("list_issues", "github"), tool("get_weather", "Weather.")])
      assert.strictEqual(mixed._tag, "Success")
      if (mixed._tag !== "Success") return
      const seen: Array<ReadonlyArray<string>> = []
      const turns: ReadonlyArray<ChatModel.ScriptedTurn> = [
        (request) => (seen.push(names(request)), ChatModel.callTools([["c1", "search_tools", { query: "read a file" }]])),
        (request) => (seen.push(names(request)), ChatModel.answer("ok"))
      ]
      const streamed = yield* Agent.stream({
        messages: [user("read it")],
        tools: mixed.success,
        toolSearch: { defer: ToolSearch.mcpServer("fs") }
      }).pipe(Stream.runCollect, Effect.provide(ChatModel.scripted(turns)))
      assert.deepStrictEqual(seen, [["list_issues", "get_weather", "search_tools"], [
        "read_file",
        "list_issues",
        "get_weather",
        "search_tools"
      ]])
      const revealed = Array.from(streamed).flatMap((e) => e._tag === "agent.tools_revealed" ? [e.names] : [])
      assert.deepStrictEqual(revealed, [["read_file"]])
      assert.isTrue(ToolSearch.mcpTools(mixed.success.specs[1]!))
      assert.isFalse(ToolSearch.mcpTools(mixed.success.specs[2]!))
    }).pipe(Effect.provide(ToolServices.layerTest({ runId: "ts" }))))

  it.effect("runs over one registry share their plan: the deferral rule reads each tool once, one catalogue is searched", () =>
    Effect.gen(function*() {
      const made = ToolRegistry.makeResult([tool("get_weather", "Weather in a city."), tool("book_hotel", "Book a hotel.")])
      const fresh = Result.getOrThrow(made)
      let ruled = 0
      const defer = (spec: ToolSpec) => (ruled++, spec.name !== "book_hotel")
      const catalogues: Array<ReadonlyArray<ToolSpec>> = []
      const searcher: ToolSearch.Searcher = (query, catalogue, limit) => (
        catalogues.push(catalogue), ToolSearch.lexical(query, catalogue, limit)
      )
      // each run's options made afresh, with the same values (maxResults: the default, spelled out)
      const once = (maxResults?: number) =>
        Agent.run({
          messages: [user("weather?")],
          tools: fresh,
          toolSearch: { defer, searcher, ...(maxResults === undefined ? {} : { maxResults }) }
        }).pipe(Effect.provide(ChatModel.scripted([
          ChatModel.callTools([["c1", "search_tools", { query: "weather" }]]),
          ChatModel.answer("ok")
        ])))
      yield* once()
      yield* once()
      yield* once(ToolSearch.defaultMaxResults)
      assert.strictEqual(ruled, 2)
      assert.strictEqual(catalogues.length, 3)
      assert.deepStrictEqual(catalogues[0]!.map((spec) => spec.name as string), ["get_weather"])
      assert.strictEqual(catalogues[1], catalogues[0])
      assert.strictEqual(catalogues[2], catalogues[0])
      const first = Result.getOrThrow(ToolSearch.plan(fresh, { defer, searcher }))!
      const again = Result.getOrThrow(ToolSearch.plan(fresh, { defer, searcher }))!
      assert.strictEqual(again.tools, first.tools)
      assert.strictEqual(again.deferred, first.deferred)
      // other options, another plan
      assert.notStrictEqual(Result.getOrThrow(ToolSearch.plan(fresh, { defer, searcher, maxResults: 2 })), first)
      assert.strictEqual(ToolSearch.mcpServer("fs"), ToolSearch.mcpServer("fs"))
    }).pipe(Effect.provide(ToolServices.layerTest({ runId: "ts" }))))

  it.effect("selectTools bounds the search: a hidden tool is never found, and a call to it is plainly not available", () =>
    Effect.gen(function*() {
      const catalogues: Array<ReadonlyArray<string>> = []
      const requests: Array<ChatModel.Request> = []
      const searcher: ToolSearch.Searcher = (query, catalogue, limit) => (
        catalogues.push(catalogue.map((spec) => spec.name)), ToolSearch.lexical(query, catalogue, limit)
      )
      const turns: ReadonlyArray<ChatModel.ScriptedTurn> = [
        (request) => (requests.push(request), ChatModel.callTools([["c1", "search_tools", { query: "book a hotel room in a city" }]])),
        (request) => (requests.push(request), ChatModel.callTools([["c2", "book_hotel", { city: "Rome" }]])),
        ChatModel.answer("done")
      ]
      for (const [native, searching] of [[false, { maxResults: 1 }], [true, { maxResults: 1, searcher }]] as const) {
        requests.length = 0
        const result = yield* Agent.run({
          messages: [user("a hotel in Rome")],
          tools: registry,
          selectTools: (view) => view.registry.names.filter((name) => name !== "book_hotel"),
          toolSearch: searching
        }).pipe(Effect.provide(ChatModel.scripted(turns, { toolSearch: native })))
        const [found, refused] = result.results
        const foundNames = (found!.value as ToolSearch.Found).tools.map((t) => t.name)
        assert.notInclude(foundNames, "book_hotel")
        assert.lengthOf(foundNames, 1)
        assert.strictEqual(refused!.error?._tag, "ToolNotAllowed")
        const text = refused!.content[0]!.type === "text" ? refused!.content[0]!.text : ""
        assert.match(text, /is not available this turn/)
        assert.notMatch(text, /search_tools first/)
        if (native) {
          for (const request of requests) {
            assert.notInclude(request.toolSearch!.deferred.map((spec) => spec.name as string), "book_hotel")
          }
        }
      }
      assert.deepStrictEqual(catalogues, [["get_weather", "find_restaurant", "convert_currency"]])
      const revealed = (yield* events).filter((e): e is ToolEvent.AgentToolsRevealed => e._tag === "agent.tools_revealed")
      for (const event of revealed) assert.notInclude(event.names, "book_hotel")
    }).pipe(Effect.provide(ToolServices.layerTest({ runId: "ts" }))))

  it.effect("an outputName that is the search tool's is refused at the run's start", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.exit(
        Agent.run({
          messages: [user("x")],
          tools: registry,
          toolSearch: {},
          output: Schema.Struct({ answer: Schema.String }),
          outputName: "search_tools"
        }).pipe(Effect.provide(ChatModel.scripted([ChatModel.answer("{}")])))
      )
      assert.isTrue(Exit.isFailure(exit) && Cause.hasDies(exit.cause))
      if (Exit.isFailure(exit)) assert.match(Cause.pretty(exit.cause), /output name search_tools .*choose another outputName/)
    }).pipe(Effect.provide(ToolServices.layerTest({ runId: "ts" }))))

  it("a search tool name the registry already holds, or a deferred name it lacks, is refused", () => {
    const taken = ToolSearch.plan(registry, { name: "get_weather" })
    assert.strictEqual(taken._tag, "Failure")
    if (taken._tag === "Failure") assert.match(taken.failure.message, /set toolSearch\.name/)
    const unknown = ToolSearch.plan(registry, { loaded: ["nope"] })
    assert.strictEqual(unknown._tag, "Failure")
    if (unknown._tag === "Failure") assert.match(unknown.failure.message, /nope/)
  })
})
