/** rateLimit (on effect/persistence's RateLimiter): calls per window, global or per tool, across runs; refusals are rate_limited. */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Layer } from "effect"
import { RateLimiter } from "effect/persistence"
import { TestClock } from "effect/testing"
import { ToolResult } from "../../src/index.ts"
import { rateLimit, RateLimit } from "../../src/governance/middleware/index.ts"
import { call, executorOf, layersOf, makeCounter, makeTools, services } from "./fixtures.ts"

describe("rateLimit", () => {
  it.effect("maxCalls per window: calls beyond it short-circuit with rate_limited; the window resets (TestClock)", () =>
    Effect.gen(function*() {
      const counter = makeCounter()
      const executor = yield* executorOf(makeTools(counter).all, [rateLimit({ maxCalls: 2, window: "1 minute" })])
      const results = yield* Effect.forEach(["a", "b", "c"], (text, i) => executor.run(call(`c${i}`, "echo", { text })))
      assert.deepStrictEqual(results.map((r) => layersOf(r)[0]), ["rate_limit:ok", "rate_limit:ok", "rate_limit:rate_limited"])
      const refused = results[2]!
      assert.strictEqual(refused.error?._tag, "PolicyBlocked")
      assert.strictEqual(refused.error?.disposition, "repair")
      assert.strictEqual(
        ToolResult.textOf(refused),
        "echo: refused: the rate limit of 2 tool calls per 1m is reached; try again later"
      )
      yield* TestClock.adjust("61 seconds")
      const again = yield* executor.run(call("c4", "echo", { text: "d" }))
      assert.isFalse(again.isError)
      assert.strictEqual(counter.count("echo"), 3)
    }).pipe(Effect.provide([services, RateLimit.layerMemory])))

  it.effect("counts across runs: a second executor (another run) shares the window", () =>
    Effect.gen(function*() {
      const counter = makeCounter()
      const middleware = [rateLimit({ maxCalls: 1, window: "1 hour" })]
      const first = yield* executorOf(makeTools(counter).all, middleware)
      const second = yield* executorOf(makeTools(counter).all, middleware)
      assert.isFalse((yield* first.run(call("c1", "echo", { text: "a" }))).isError)
      const refused = yield* second.run(call("c1", "echo", { text: "b" }))
      assert.deepStrictEqual(layersOf(refused), ["rate_limit:rate_limited"])
      assert.strictEqual(counter.count("echo"), 1)
    }).pipe(Effect.provide([services, RateLimit.layerMemory])))

  it.effect("perTool caps one tool while others still run", () =>
    Effect.gen(function*() {
      const counter = makeCounter()
      const executor = yield* executorOf(makeTools(counter).all, [rateLimit({ window: "1 minute", perTool: { echo: 1 } })])
      yield* executor.run(call("c1", "echo", { text: "a" }))
      const second = yield* executor.run(call("c2", "echo", { text: "b" }))
      const other = yield* executor.run(call("c3", "write_note", { key: "k", text: "t" }))
      assert.include(ToolResult.textOf(second), "the rate limit of 1 calls to this tool per 1m is reached")
      assert.isFalse(other.isError)
      assert.deepStrictEqual([counter.count("echo"), counter.count("write_note")], [1, 1])
    }).pipe(Effect.provide([services, RateLimit.layerMemory])))

  it.effect("onExceeded: delay waits for the window instead of refusing", () =>
    Effect.gen(function*() {
      const counter = makeCounter()
      const executor = yield* executorOf(makeTools(counter).all, [
        rateLimit({ maxCalls: 1, window: "10 seconds", onExceeded: "delay" })
      ])
      yield* executor.run(call("c1", "echo", { text: "a" }))
      const fiber = yield* Effect.forkChild(executor.run(call("c2", "echo", { text: "b" })))
      yield* Effect.yieldNow
      assert.strictEqual(counter.count("echo"), 1)
      yield* TestClock.adjust("10 seconds")
      const delayed = yield* Fiber.join(fiber)
      assert.isFalse(delayed.isError)
      assert.deepStrictEqual(layersOf(delayed), ["rate_limit:ok"])
      assert.strictEqual(counter.count("echo"), 2)
    }).pipe(Effect.provide([services, RateLimit.layerMemory])))

  it.effect("a limiter whose store fails: the call fails with StoreFailed (rate_limit, consume) and the handler does not run", () =>
    Effect.gen(function*() {
      const counter = makeCounter()
      const executor = yield* executorOf(makeTools(counter).all, [rateLimit({ maxCalls: 5, window: "1 minute" })])
      const error = yield* Effect.flip(executor.run(call("c1", "echo", { text: "a" })))
      assert.strictEqual(error._tag, "StoreFailed")
      assert.deepStrictEqual([(error as { store?: string }).store, (error as { operation?: string }).operation], [
        "rate_limit",
        "consume"
      ])
      assert.strictEqual(counter.count("echo"), 0)
    }).pipe(Effect.provide([services, unreachableLimiter])))
})

/** A `RateLimiter` whose store is unreachable (every consume is a store error). */
const unreachableLimiter = RateLimiter.layer.pipe(Layer.provide(Layer.succeed(
  RateLimiter.RateLimiterStore,
  RateLimiter.RateLimiterStore.of({
    fixedWindow: () => Effect.fail(unreachable),
    tokenBucket: () => Effect.fail(unreachable),
    adaptiveConsume: () => Effect.fail(unreachable),
    adaptiveFeedback: () => Effect.fail(unreachable)
  })
)))
const unreachable = new RateLimiter.RateLimiterError({
  reason: new RateLimiter.RateLimitStoreError({ message: "connection refused", cause: new Error("ECONNREFUSED") })
})
