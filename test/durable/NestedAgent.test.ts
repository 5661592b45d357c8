import { afterAll, assert, describe, it } from "@effect/vitest"
import { Effect, Schema, Stream } from "effect"
import { Agent, ChatModel, ToolRegistry } from "../../src/index.ts"
import { DurableAgent } from "../../src/durable/index.ts"
import * as Core from "./support/core.ts"

afterAll(Core.cleanup)

const user = (content: string) => [{ role: "user" as const, content }]

describe("DurableAgent with an agent as a tool", () => {
  it.live("the nested run is part of its call's activity: its answer and its events are journaled with the call", () => {
    const counters = Core.makeCounters()
    const nested = Agent.asTool({
      tools: ToolRegistry.makeResult([]).pipe((r) => r._tag === "Success" ? r.success : undefined)!,
      model: ChatModel.fromFunction((request) => {
        counters.bump("nested model")
        const last = request.messages.at(-1)
        return Effect.succeed({
          ...ChatModel.answer(`nested read ${last?.role === "user" ? last.content : "?"}`),
          usage: { inputTokens: 5, outputTokens: 2 }
        })
      })
    }, {
      name: "helper",
      description: "Helps.",
      input: Schema.Struct({ line: Schema.String }),
      prompt: ({ line }) => line
    })
    const agent = DurableAgent.make({
      name: "nested",
      tools: ToolRegistry.makeResult([nested]).pipe((r) => r._tag === "Success" ? r.success : undefined)!,
      pollInterval: "10 millis"
    })
    return Effect.gen(function*() {
      yield* agent.start("r1", user("plan: helper=x"))
      const result = yield* agent.result("r1")
      assert.strictEqual(result.text, "done: nested read x")
      assert.strictEqual(counters.get("nested model"), 1)
      // the nested run's usage adds to the run's (the durable model's own turns use none)
      assert.deepStrictEqual(result.usage, { inputTokens: 5, outputTokens: 2 })
      const events = Array.from(yield* Stream.runCollect(agent.events("r1")))
      const inner = events.filter((e) => e.depth === 1)
      assert.deepStrictEqual(inner.map((e) => [e._tag, e.runId, e.parentRunId, e.parentCallId]), [
        ["agent.turn_started", "r1/0-0", "r1", "0-0"],
        ["agent.model_responded", "r1/0-0", "r1", "0-0"],
        ["agent.finished", "r1/0-0", "r1", "0-0"]
      ])
      // the same run id again: nothing runs again, the nested model included
      yield* agent.start("r1", user("plan: helper=x"))
      assert.strictEqual((yield* agent.result("r1")).text, "done: nested read x")
      assert.strictEqual(counters.get("nested model"), 1)
    }).pipe(Effect.provide(Core.runner(agent, Core.memoryEngine(), counters)))
  })
})
