/** timeout: observes budget breaches (status timeout) without cancelling the call. */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { timeout } from "../../src/middleware/index.ts"
import { advance, call, executorOf, layersOf, makeCounter, makeTools, services } from "./fixtures.ts"

describe("timeout", () => {
  it.effect("within the budget: ok", () =>
    Effect.gen(function*() {
      const executor = yield* executorOf(makeTools(makeCounter()).all, [timeout({ max: "1 second" })])
      const fiber = yield* Effect.forkChild(executor.run(call("c1", "slow", { millis: 500 })))
      yield* advance(600)
      assert.deepStrictEqual(layersOf(yield* Fiber.join(fiber)), ["timeout:ok"])
    }).pipe(Effect.provide(services)))

  it.effect("a breach is marked timeout with the elapsed time; the call still completes", () =>
    Effect.gen(function*() {
      const executor = yield* executorOf(makeTools(makeCounter()).all, [timeout({ max: "1 second" })])
      const fiber = yield* Effect.forkChild(executor.run(call("c1", "slow", { millis: 2000 })))
      yield* advance(2100)
      const result = yield* Fiber.join(fiber)
      assert.isFalse(result.isError)
      assert.strictEqual(result.value, "done")
      assert.deepStrictEqual(layersOf(result), ["timeout:timeout"])
      assert.strictEqual(result.audit?.layers[0]?.error, "slow took 2000 ms, over its 1000 ms budget")
      assert.deepStrictEqual(result.audit?.metadata?.["timeout"], { budgetMillis: 1000, elapsedMillis: 2000 })
    }).pipe(Effect.provide(services)))

  it.effect("perTool overrides the budget", () =>
    Effect.gen(function*() {
      const executor = yield* executorOf(makeTools(makeCounter()).all, [timeout({ max: "1 second", perTool: { slow: "5 seconds" } })])
      const fiber = yield* Effect.forkChild(executor.run(call("c1", "slow", { millis: 2000 })))
      yield* advance(2100)
      assert.deepStrictEqual(layersOf(yield* Fiber.join(fiber)), ["timeout:ok"])
    }).pipe(Effect.provide(services)))
})
