/** rateLimit (on effect/persistence's RateLimiter): caps per run, per tool, per window; refusals are rate_limited. */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { ToolResult } from "../../src/index.ts"
import { rateLimit, RateLimit } from "../../src/middleware/index.ts"
import { call, executorOf, layersOf, makeCounter, makeTools, services } from "./fixtures.ts"

describe("rateLimit", () => {
  it.effect("maxCalls per run: calls beyond the cap short-circuit with rate_limited", () =>
    Effect.gen(function*() {
      const counter = makeCounter()
      const executor = yield* executorOf(makeTools(counter).all, [rateLimit({ maxCalls: 2 })])
      const results = yield* Effect.forEach(["a", "b", "c"], (text, i) => executor.run(call(`c${i}`, "echo", { text })))
      assert.deepStrictEqual(results.map((r) => layersOf(r)[0]), ["rate_limit:ok", "rate_limit:ok", "rate_limit:rate_limited"])
      const refused = results[2]!
      assert.strictEqual(refused.error?._tag, "PolicyBlocked")
      assert.strictEqual(refused.error?.disposition, "repair")
      assert.strictEqual(
        ToolResult.textOf(refused),
        "echo: refused: the limit of 2 tool calls per run is reached; do not call more tools"
      )
      assert.strictEqual(counter.count("echo"), 2)
    }).pipe(Effect.provide([services, RateLimit.layerMemory])))

  it.effect("perTool caps one tool while others still run", () =>
    Effect.gen(function*() {
      const counter = makeCounter()
      const executor = yield* executorOf(makeTools(counter).all, [rateLimit({ maxCalls: 10, perTool: { echo: 1 } })])
      yield* executor.run(call("c1", "echo", { text: "a" }))
      const second = yield* executor.run(call("c2", "echo", { text: "b" }))
      const other = yield* executor.run(call("c3", "write_note", { key: "k", text: "t" }))
      assert.include(ToolResult.textOf(second), "the limit of 1 calls to this tool per run is reached")
      assert.isFalse(other.isError)
      assert.deepStrictEqual([counter.count("echo"), counter.count("write_note")], [1, 1])
    }).pipe(Effect.provide([services, RateLimit.layerMemory])))

  it.effect("with a window the counter resets when the window has passed (TestClock)", () =>
    Effect.gen(function*() {
      const counter = makeCounter()
      const executor = yield* executorOf(makeTools(counter).all, [rateLimit({ maxCalls: 2, window: "1 minute" })])
      yield* executor.run(call("c1", "echo", { text: "a" }))
      yield* executor.run(call("c2", "echo", { text: "b" }))
      const refused = yield* executor.run(call("c3", "echo", { text: "c" }))
      assert.include(ToolResult.textOf(refused), "per window of 1m")
      yield* TestClock.adjust("61 seconds")
      const again = yield* executor.run(call("c4", "echo", { text: "d" }))
      assert.isFalse(again.isError)
      assert.strictEqual(counter.count("echo"), 3)
    }).pipe(Effect.provide([services, RateLimit.layerMemory])))
})
