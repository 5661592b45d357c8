/** idempotency: a repeat within the TTL is answered from the store without running the tool. */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { TestClock } from "effect/testing"
import { Tool, ToolError } from "../../src/index.ts"
import { idempotency, Idempotency } from "../../src/middleware/index.ts"
import { call, executorOf, layersOf, makeCounter, makeTools, services } from "./fixtures.ts"

describe("idempotency", () => {
  it.effect("a repeat within the TTL returns the cached result (new call id) and skips the handler", () =>
    Effect.gen(function*() {
      const counter = makeCounter()
      const executor = yield* executorOf(makeTools(counter).all, [idempotency(Idempotency.byArguments, { ttl: "1 minute" })])
      const first = yield* executor.run(call("c1", "echo", { text: "hi" }))
      yield* TestClock.adjust("30 seconds")
      const second = yield* executor.run(call("c2", "echo", { text: "hi" }))
      assert.strictEqual(counter.count("echo"), 1)
      assert.strictEqual(second.toolCallId, "c2")
      assert.deepStrictEqual(second.value, first.value)
      assert.deepStrictEqual(second.content, first.content)
      const hitOf = (result: typeof first) => result.audit?.metadata?.["idempotency"] as { key: string; hit: boolean }
      assert.isFalse(hitOf(first).hit)
      assert.isTrue(hitOf(second).hit)
      assert.match(hitOf(second).key, /^echo:[0-9a-f]{64}$/)
      assert.deepStrictEqual(layersOf(second), ["idempotency:ok"])
      // different arguments: a different key
      yield* executor.run(call("c3", "echo", { text: "other" }))
      assert.strictEqual(counter.count("echo"), 2)
    }).pipe(Effect.provide(services)))

  it.effect("after the TTL the tool runs again", () =>
    Effect.gen(function*() {
      const counter = makeCounter()
      const executor = yield* executorOf(makeTools(counter).all, [idempotency(Idempotency.byArguments, { ttl: "1 minute" })])
      yield* executor.run(call("c1", "echo", { text: "hi" }))
      yield* TestClock.adjust("61 seconds")
      yield* executor.run(call("c2", "echo", { text: "hi" }))
      assert.strictEqual(counter.count("echo"), 2)
    }).pipe(Effect.provide(services)))

  it.effect("error results are not cached; a key of undefined skips the cache", () =>
    Effect.gen(function*() {
      let runs = 0
      const failing = Tool.make("failing", {
        description: "Fails the first time.",
        input: Schema.Struct({}),
        safety: { effect: "read" },
        handler: () => Effect.suspend(() => ++runs === 1 ? Effect.fail(ToolError.repairable("try again")) : Effect.succeed("ok"))
      })
      const counter = makeCounter()
      const tools = makeTools(counter)
      const executor = yield* executorOf([failing, tools.echo], [
        idempotency((inv) => inv.spec.name === "echo" ? undefined : "same", { ttl: "1 hour" })
      ])
      const failed = yield* executor.run(call("c1", "failing"))
      assert.isTrue(failed.isError)
      const ok = yield* executor.run(call("c2", "failing"))
      assert.strictEqual(ok.value, "ok")
      yield* executor.run(call("c3", "failing"))
      assert.strictEqual(runs, 2)
      yield* executor.run(call("c4", "echo", { text: "a" }))
      yield* executor.run(call("c5", "echo", { text: "a" }))
      assert.strictEqual(counter.count("echo"), 2)
    }).pipe(Effect.provide(services)))
})
