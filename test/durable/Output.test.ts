/**
 * Typed final output in durable runs: the loop is `Agent.loopWith`, so `output` works as in
 * `Agent.run` (final-answer tool or structured output, repair, `OutputInvalid`); the answer is
 * journaled as JSON with the run's outcome and decoded again by the schema when read back.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"
import { Agent, ChatModel } from "../../src/index.ts"
import * as Stores from "../../src/stores/Stores.ts"
import { DurableAgent } from "../../src/durable/index.ts"
import * as Core from "./support/core.ts"

const Total = Schema.Struct({ total: Schema.Int, items: Schema.Array(Schema.String) })
const user = (content: string) => [{ role: "user" as const, content }]
const engine = <R, MR, S extends Agent.OutputSchema>(
  agent: DurableAgent.DurableAgent<R, MR, S>,
  model: Layer.Layer<ChatModel.ChatModel>
) => agent.layer.pipe(Layer.provide([model, Stores.layerMemory]), Layer.provideMerge(Core.memoryEngine()))

describe("DurableAgent with output", () => {
  it.live("a repaired answer is the run's typed output, read back from the journal", () => {
    const counters = Core.makeCounters()
    const agent = DurableAgent.make({ name: "typed", tools: Core.makeTools(counters), output: Total, pollInterval: "10 millis" })
    return Effect.gen(function*() {
      yield* agent.start("o1", user("count"))
      const result = yield* agent.result("o1")
      const output: { readonly total: number; readonly items: ReadonlyArray<string> } | undefined = result.output
      assert.deepStrictEqual(output, { total: 2, items: ["a", "b"] })
      assert.strictEqual(result.turns, 2)
      // the first, rejected, call was answered with the repair message
      const repaired = result.transcript[2]!
      assert.isTrue(repaired.role === "tool" && repaired.results[0]!.isError)
    }).pipe(Effect.provide(engine(agent, ChatModel.scripted([
      ChatModel.callTools([["f1", "final_answer", { total: "2" }]]),
      ChatModel.callTools([["f2", "final_answer", { total: 2, items: ["a", "b"] }]])
    ]))))
  })

  it.live("a model with structured output is asked through it; after the repairs the run fails with OutputInvalid, journaled", () => {
    const counters = Core.makeCounters()
    const agent = DurableAgent.make({
      name: "typed-fail",
      tools: Core.makeTools(counters),
      output: Total,
      outputRetries: 0,
      pollInterval: "10 millis"
    })
    const requests: Array<ChatModel.Request> = []
    return Effect.gen(function*() {
      yield* agent.start("o2", user("count"))
      const failed = yield* Effect.flip(agent.result("o2"))
      assert.strictEqual(failed._tag, "AgentFailed")
      const error = failed._tag === "AgentFailed" ? failed.error : undefined
      assert.instanceOf(error, Agent.OutputInvalid)
      assert.strictEqual((error as Agent.OutputInvalid).attempts, 1)
      assert.strictEqual(requests[0]?.output?.name, "final_answer")
    }).pipe(Effect.provide(engine(
      agent,
      ChatModel.scripted([(request) => (requests.push(request), ChatModel.answer("two"))], { structuredOutput: true })
    )))
  })
})
