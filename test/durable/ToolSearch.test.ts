/**
 * Tool search in durable runs: a search is a journaled call, and what it revealed is read from the
 * transcript, so a run resumed by another process advertises the tools its earlier searches found
 * (and reports `agent.tools_revealed` in its durable events once).
 */
import { afterAll, assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Layer, Schema, Scope, Stream } from "effect"
import { Approval, ChatModel, Tool, ToolRegistry } from "../../src/index.ts"
import * as Stores from "../../src/stores/Stores.ts"
import { DurableAgent, Runner } from "../../src/durable/index.ts"
import * as Core from "./support/core.ts"

afterAll(Core.cleanup)

const ran: Array<string> = []
const tool = (name: string, description: string) =>
  Tool.make(name, {
    description,
    input: Schema.Struct({ city: Schema.String }),
    handler: ({ city }) => Effect.sync(() => (ran.push(`${name}(${city})`), `${name}: ${city}`))
  })
const registry = ToolRegistry.makeResult([
  tool("get_weather", "Current weather for a city."),
  tool("book_hotel", "Book a hotel room in a city."),
  tool("local_time", "The local time in a city.")
])
const tools = registry._tag === "Success" ? registry.success : (() => {
  throw registry.failure
})()

const user = (content: string) => [{ role: "user" as const, content }]
const sqliteRunner = (filename: string) =>
  Runner.layerSqlite({ filename, pollInterval: "50 millis", lockExpiration: "2 seconds", shutdownTimeout: "50 millis" })
const sqliteClient = (filename: string) => Runner.layerSqliteClient({ filename, pollInterval: "50 millis" })

describe("DurableAgent with tool search", () => {
  it.live("a resumed run advertises what its journaled searches found", () =>
    Effect.gen(function*() {
      ran.length = 0
      const advertised: Array<ReadonlyArray<string>> = []
      const ask = (response: ChatModel.Response) => (request: ChatModel.Request) => {
        advertised.push(request.tools.map((t) => t.name as string))
        return response
      }
      const agent = DurableAgent.make({
        name: "searching",
        tools,
        toolSearch: { maxResults: 1 },
        pollInterval: "20 millis",
        approval: (call) => call.id === "c2"
      })
      const filename = Core.tempFile("toolsearch")
      const runner = (model: Layer.Layer<ChatModel.ChatModel>) =>
        agent.layer.pipe(Layer.provide([model, Stores.layerMemory]), Layer.provideMerge(sqliteRunner(filename)))
      // the first process searches (turn 0), then waits for the approval of the found tool's call (turn 1)
      const scope = yield* Scope.make()
      const first = yield* Layer.buildWithScope(
        runner(ChatModel.scripted([
          ask(ChatModel.callTools([["c1", "search_tools", { query: "book a hotel room" }]])),
          ask(ChatModel.callTools([["c2", "book_hotel", { city: "Rome" }]]))
        ])),
        scope
      )
      yield* Effect.provide(
        Effect.andThen(
          agent.start("t", user("a hotel in Rome")),
          Stream.runDrain(Stream.takeUntil(agent.events("t"), (e) => e._tag === "agent.approval_requested"))
        ),
        first
      )
      yield* Scope.close(scope, Exit.void)
      yield* Effect.provide(agent.approve("t", "c2", Approval.approve("alice")), sqliteClient(filename))
      // the second process replays turns 0 and 1 from the journal, runs the approved call, and asks turn 2
      const { result, events } = yield* Effect.provide(
        Effect.gen(function*() {
          const result = yield* agent.result("t")
          return { result, events: Array.from(yield* Stream.runCollect(agent.events("t"))) }
        }),
        runner(ChatModel.scripted([ask(ChatModel.answer("booked"))]))
      )
      assert.strictEqual(result.text, "booked")
      assert.deepStrictEqual(ran, ["book_hotel(Rome)"])
      assert.deepStrictEqual(advertised, [["search_tools"], ["book_hotel", "search_tools"], ["book_hotel", "search_tools"]])
      assert.deepStrictEqual(
        events.flatMap((e) => e._tag === "agent.tools_revealed" ? [[e.toolCallId, e.names]] : []),
        [["c1", ["book_hotel"]]]
      )
    }), 30_000)

  it.live("a call to a deferred tool not yet found asks no one for approval: it is refused, search first", () =>
    Effect.gen(function*() {
      ran.length = 0
      const agent = DurableAgent.make({
        name: "unfound",
        tools,
        toolSearch: {},
        pollInterval: "20 millis",
        approval: (call) => call.name === "book_hotel"
      })
      const model = ChatModel.scripted([
        ChatModel.callTools([["c1", "book_hotel", { city: "Rome" }]]),
        ChatModel.answer("I need to search first")
      ])
      const { result, events } = yield* Effect.provide(
        Effect.gen(function*() {
          yield* agent.start("u", user("a hotel in Rome"))
          // asking for an approval would leave the run waiting
          const result = yield* agent.result("u").pipe(Effect.timeout("10 seconds"))
          return { result, events: Array.from(yield* Stream.runCollect(agent.events("u"))) }
        }),
        agent.layer.pipe(Layer.provide([model, Stores.layerMemory]), Layer.provideMerge(Runner.layerMemory))
      )
      assert.strictEqual(result.text, "I need to search first")
      assert.deepStrictEqual(ran, [])
      assert.deepStrictEqual(events.filter((e) => e._tag === "agent.approval_requested"), [])
      assert.strictEqual(result.results[0]!.error?._tag, "ToolNotAllowed")
      assert.match(result.results[0]!.error?.message ?? "", /call search_tools first/)
    }), 30_000)
})
