/**
 * Agent state in durable runs: each call's recorded updates are journaled with the call
 * (`Journal.Call.state`) and applied by the loop as in `Agent.run`, so a resumed run replays them
 * and has the state it had; the final state is journaled with the run's result and decoded again.
 */
import { afterAll, assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Layer, Option, Schema, Scope, Stream } from "effect"
import { AgentState, Approval, ChatModel, Tool, ToolRegistry } from "../../src/index.ts"
import * as Stores from "../../src/stores/Stores.ts"
import { DurableAgent, Runner } from "../../src/durable/index.ts"
import * as Core from "./support/core.ts"

afterAll(Core.cleanup)

const Notes = AgentState.make({
  schema: Schema.Struct({ items: Schema.Array(Schema.String) }),
  update: Schema.Struct({ add: Schema.String }),
  initial: { items: [] as ReadonlyArray<string> },
  reduce: (state, update) => ({ items: [...state.items, update.add] })
})

const ran: Array<string> = []
const note = Tool.make("note", {
  description: "Adds a note; answers with the notes it saw.",
  input: Schema.Struct({ text: Schema.String }),
  services: [AgentState.AgentState],
  handler: ({ text }) =>
    Effect.gen(function*() {
      ran.push(text)
      const seen = yield* Notes.get
      yield* Notes.update({ add: text })
      return `saw ${seen.items.join(",")}`
    })
})
const registry = ToolRegistry.makeResult([note])
const tools = registry._tag === "Success" ? registry.success : (() => {
  throw registry.failure
})()

const user = (content: string) => [{ role: "user" as const, content }]
const sqliteRunner = (filename: string) =>
  Runner.layerSqlite({ filename, pollInterval: "50 millis", lockExpiration: "2 seconds", shutdownTimeout: "50 millis" })
const sqliteClient = (filename: string) => Runner.layerSqliteClient({ filename, pollInterval: "50 millis" })

describe("DurableAgent with state", () => {
  it.live("a resumed run has the state it had: the journaled calls' updates are applied again, the calls not run again", () =>
    Effect.gen(function*() {
      ran.length = 0
      const prompts: Array<string> = []
      const ask = (response: ChatModel.Response) => (request: ChatModel.Request) => {
        const first = request.messages[0]
        prompts.push(first?.role === "system" ? first.content : "?")
        return response
      }
      const agent = DurableAgent.make({
        name: "stateful",
        tools,
        state: Notes,
        system: (state) => `notes: ${state.items.join(",")}`,
        pollInterval: "20 millis",
        approval: (call) => call.id === "n3"
      })
      const filename = Core.tempFile("state")
      const runner = (model: Layer.Layer<ChatModel.ChatModel>) =>
        agent.layer.pipe(Layer.provide([model, Stores.layerMemory]), Layer.provideMerge(sqliteRunner(filename)))
      // the first process runs turn 0's calls, then waits for turn 1's approval, and stops
      const scope = yield* Scope.make()
      const first = yield* Layer.buildWithScope(
        runner(ChatModel.scripted([
          ask(ChatModel.callTools([["n1", "note", { text: "a" }], ["n2", "note", { text: "b" }]])),
          ask(ChatModel.callTools([["n3", "note", { text: "c" }]]))
        ])),
        scope
      )
      yield* Effect.provide(
        Effect.andThen(
          agent.start("s", user("take notes")),
          Stream.runDrain(Stream.takeUntil(agent.events("s"), (e) => e._tag === "agent.approval_requested"))
        ),
        first
      )
      yield* Scope.close(scope, Exit.void)
      assert.deepStrictEqual(ran, ["a", "b"])
      yield* Effect.provide(agent.approve("s", "n3", Approval.approve("alice")), sqliteClient(filename))
      // the second process replays turn 0 (its updates from the journal) and runs the approved call
      const { result, events } = yield* Effect.provide(
        Effect.gen(function*() {
          const result = yield* agent.result("s")
          return { result, events: Array.from(yield* Stream.runCollect(agent.events("s"))) }
        }),
        runner(ChatModel.scripted([ask(ChatModel.answer("done"))]))
      )
      assert.deepStrictEqual(ran, ["a", "b", "c"], "turn 0's calls did not run again")
      const state: { readonly items: ReadonlyArray<string> } | undefined = result.state as never
      assert.deepStrictEqual(state, { items: ["a", "b", "c"] })
      const approved = result.results.find((r) => r.toolCallId === "n3")!
      assert.deepStrictEqual(approved.value, "saw a,b")
      assert.deepStrictEqual(prompts, ["notes: ", "notes: a,b", "notes: a,b,c"])
      assert.deepStrictEqual(
        events.flatMap((e) => e._tag === "agent.state" ? [[e.toolCallId, e.state]] : []),
        [["n1", { items: ["a"] }], ["n2", { items: ["a", "b"] }], ["n3", { items: ["a", "b", "c"] }]]
      )
      // read back by another process: the state decoded from the journal
      const again = yield* Effect.provide(agent.poll("s"), sqliteClient(filename))
      assert.isTrue(Option.isSome(again))
      const exit = Option.getOrThrow(again)
      assert.deepStrictEqual(Exit.isSuccess(exit) ? exit.value.state : undefined, { items: ["a", "b", "c"] })
    }), 30_000)
})
