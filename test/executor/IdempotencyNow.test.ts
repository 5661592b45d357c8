/**
 * Keyed calls on the memory store take the synchronous views (`storeNow`): a call whose handler
 * completes at once is looked up, claimed, stored and released by plain calls, and one whose handler
 * suspends carries on as effects from there. The guarantees are the effect path's: a handler that
 * outlives its lease keeps its claim (renewed every third of the lease), an interrupted call frees
 * its key, and what is stored replays exactly what was returned (every kind of block, nested
 * values), with the same answer as the effect path (`Now.mode.eager = false`) for a value the
 * store cannot keep.
 */
import { assert, describe, it } from "@effect/vitest"
import { Clock, Effect, Exit, Fiber, Schema } from "effect"
import { TestClock } from "effect/testing"
import { Executor, StoreRegistry, Tool, ToolRegistry, ToolResult, ToolServices } from "../../src/index.ts"
import * as Now from "../../src/runtime/internal/executor/Now.ts"
import { Kept, storeNow } from "../../src/internal/storeNow.ts"

const call = (id: string, name: string, args: unknown = {}) => ({ id, name, arguments: args })
const test = ToolServices.layerTest({ runId: "run-1", threadId: "thread-1" })

/** Advances the test clock in steps so sleeps registered along the way also fire. */
const advance = (millis: number, step = 100) =>
  Effect.gen(function*() {
    for (let t = 0; t < millis; t += step) {
      yield* Effect.yieldNow
      yield* TestClock.adjust(step)
    }
    yield* Effect.yieldNow
  })

/** A keyed write whose handler sleeps `sleep` ms for the key "slow" and answers at once otherwise. */
const makeSlow = (sleep: number) => {
  const probe = { runs: 0, applied: 0 }
  const tool = Tool.make("slow_write", {
    description: "Writes once per key.",
    input: Schema.Struct({ key: Schema.String }),
    output: Schema.Struct({ n: Schema.Int }),
    safety: { access: "write" },
    idempotency: ({ key }) => key,
    timeout: "10 minutes",
    handler: ({ key }) =>
      Effect.gen(function*() {
        probe.runs++
        if (key === "slow") yield* Effect.sleep(sleep)
        return { n: ++probe.applied }
      })
  })
  return { probe, tool }
}

describe("keyed calls on the memory store (synchronous views)", () => {
  it.effect("a handler that outlives its lease keeps its claim while it runs, and releases it at its end", () =>
    Effect.gen(function*() {
      const { probe, tool } = makeSlow(90_000)
      const executor = yield* Executor.make(yield* ToolRegistry.make([tool]), { idempotency: { lease: "30 seconds" } })
      // a first call resolves the store; the next ones take the synchronous views
      yield* executor.run(call("w", "slow_write", { key: "warm" }))
      const claims = yield* StoreRegistry.StoreRegistry.use((registry) => registry.claims("idempotency"))
      const running = yield* Effect.forkChild(executor.run(call("a", "slow_write", { key: "slow" })))
      yield* advance(100)
      assert.strictEqual(probe.runs, 2)
      // three times the lease: without renewal another owner could take the key
      yield* advance(60_000)
      assert.isFalse(yield* claims.acquire("slow_write/slow", "another process", 30_000))
      yield* advance(31_000)
      const result = yield* Fiber.join(running)
      assert.deepStrictEqual(result.value, { n: 2 })
      assert.deepStrictEqual(result.idempotency, { key: "slow", replayed: false })
      // released: another owner takes it at once, and the result answers a repeat
      assert.isTrue(yield* claims.acquire("slow_write/slow", "another process", 30_000))
      yield* claims.release("slow_write/slow", "another process")
      const again = yield* executor.run(call("b", "slow_write", { key: "slow" }))
      assert.deepStrictEqual([again.value, again.idempotency?.replayed, probe.runs], [{ n: 2 }, true, 2])
    }).pipe(Effect.provide(test)))

  it.effect("a call that completes at once holds its key while it runs: no other owner takes it meanwhile", () =>
    Effect.gen(function*() {
      const claims = yield* StoreRegistry.StoreRegistry.use((registry) => registry.claims("idempotency"))
      // the handler's acquisitions read the test's clock, as the call's own do
      const clock = yield* Effect.clockWith(Effect.succeed)
      const seen: Array<boolean> = []
      const tool = Tool.make("grab", {
        description: "Tries to take its own key's claim while it runs.",
        input: Schema.Struct({ key: Schema.String }),
        safety: { access: "write" },
        idempotency: ({ key }) => key,
        // the handler's own code is all that can run while the call holds its key
        handler: ({ key }) =>
          Effect.sync(() => {
            seen.push(Effect.runSync(Effect.provideService(claims.acquire(`grab/${key}`, "another owner", 30_000), Clock.Clock, clock)))
            return key
          })
      })
      const executor = yield* Executor.make(yield* ToolRegistry.make([tool]))
      yield* executor.run(call("w", "grab", { key: "warm" }))
      const first = yield* executor.run(call("a", "grab", { key: "k" }))
      assert.deepStrictEqual([first.isError, first.idempotency?.replayed], [false, false])
      // held while it ran (the warm-up ran as effects, with its claim taken), free once it answered
      assert.deepStrictEqual(seen, [false, false])
      assert.isTrue(yield* claims.acquire("grab/k", "another owner", 30_000))
      yield* claims.release("grab/k", "another owner")
      // a claim another owner holds makes the call wait for it; once that claim expires, it runs
      yield* claims.acquire("grab/other", "another owner", 1_000)
      const waiting = yield* Effect.forkChild(executor.run(call("b", "grab", { key: "other" })))
      yield* advance(1_200)
      const ran = yield* Fiber.join(waiting)
      assert.deepStrictEqual([ran.isError, ran.idempotency?.replayed, seen.length], [false, false, 3])
    }).pipe(Effect.provide(test)))

  it.effect("a call interrupted while its handler runs frees its key: the next call with it runs", () =>
    Effect.gen(function*() {
      const { probe, tool } = makeSlow(60_000)
      const executor = yield* Executor.make(yield* ToolRegistry.make([tool]))
      yield* executor.run(call("w", "slow_write", { key: "warm" }))
      const first = yield* Effect.forkChild(executor.runBatch([call("a", "slow_write", { key: "slow" })]))
      yield* advance(100)
      assert.strictEqual(probe.runs, 2)
      yield* Fiber.interrupt(first)
      const claims = yield* StoreRegistry.StoreRegistry.use((registry) => registry.claims("idempotency"))
      assert.isTrue(yield* claims.acquire("slow_write/slow", "another process", 30_000))
      yield* claims.release("slow_write/slow", "another process")
      const second = yield* Effect.forkChild(executor.run(call("b", "slow_write", { key: "slow" })))
      yield* advance(61_000, 1_000)
      const result = yield* Fiber.join(second)
      assert.deepStrictEqual([result.value, result.idempotency?.replayed, probe.runs], [{ n: 2 }, false, 3])
    }).pipe(Effect.provide(test)))

  it.live("a call whose arguments throw while its redaction walks them leaves its key free: the next call with it runs", () =>
    Effect.gen(function*() {
      let runs = 0
      const tool = Tool.make("redacted_write", {
        description: "Writes once per key.",
        input: Schema.Struct({ key: Schema.String, token: Schema.String, extra: Schema.Unknown }),
        safety: { access: "write", redact: { keys: ["token"] } },
        idempotency: ({ key }) => key,
        handler: ({ key }) => Effect.sync(() => (runs++, `ok-${key}`))
      })
      const executor = yield* Executor.make(yield* ToolRegistry.make([tool]))
      yield* executor.run(call("w", "redacted_write", { key: "warm", token: "t", extra: 1 }))
      // object-form arguments (not JSON text): a value whose keys can be listed `n` times, then throw.
      // Every `n` up to one past the last walk, so the throw lands in each walk of the call in turn
      // (the arguments' checks, the started event's redaction, the keyed call's, the result's).
      for (let n = 0; n <= 8; n++) {
        let reads = 0
        const hostile = new Proxy({ a: 1 }, {
          ownKeys: (target) => {
            if (++reads > n) throw new Error("no more keys")
            return Reflect.ownKeys(target)
          }
        })
        const key = `k${n}`
        yield* Effect.exit(executor.run(call(`a${n}`, "redacted_write", { key, token: "t", extra: hostile })))
        const next = yield* Effect.timeoutOption(
          executor.run(call(`b${n}`, "redacted_write", { key, token: "t", extra: 2 })),
          "2 seconds"
        )
        assert.isTrue(next._tag === "Some", `the next call with the key ran (it was not left held; throw after ${n} walks)`)
        const claims = yield* StoreRegistry.StoreRegistry.use((registry) => registry.claims("idempotency"))
        assert.isTrue(yield* claims.acquire(`redacted_write/${key}`, "another process", 30_000), `key free (${n})`)
      }
      assert.isAbove(runs, 1)
    }).pipe(Effect.provide(test)))

  it.effect("what is stored replays exactly: text, image, audio and resource blocks, nested values", () =>
    Effect.gen(function*() {
      const Output = Schema.Struct({
        items: Schema.Array(Schema.Struct({ id: Schema.Int, tags: Schema.Array(Schema.String), score: Schema.NullOr(Schema.Number) })),
        deep: Schema.Unknown
      })
      let runs = 0
      const tool = Tool.make("rich", {
        description: "Answers blocks of every kind.",
        input: Schema.Struct({ key: Schema.String }),
        output: Output,
        safety: { access: "write" },
        idempotency: ({ key }) => key,
        handler: () =>
          Effect.sync(() => (runs++, {
            items: [{ id: 1, tags: ["a", "b"], score: 0.5 }, { id: 2, tags: [], score: null }],
            deep: { a: [{ b: { c: [1, "two", true, null] } }] }
          })),
        toModelOutput: (output) => [
          ToolResult.text(`${output.items.length} items`),
          ToolResult.image("aGVsbG8=", "image/png"),
          ToolResult.audio("aGVsbG8=", "audio/wav"),
          ToolResult.resource({ uri: "file:///a.txt", mimeType: "text/plain", text: "a" }),
          ToolResult.resource({ uri: "file:///b.bin", blob: "AAEC" })
        ]
      })
      const executor = yield* Executor.make(yield* ToolRegistry.make([tool]))
      yield* executor.run(call("w", "rich", { key: "warm" }))
      const first = yield* executor.run(call("a", "rich", { key: "k" }))
      const again = yield* executor.run(call("b", "rich", { key: "k" }))
      assert.strictEqual(runs, 2)
      assert.deepStrictEqual([first.idempotency?.replayed, again.idempotency?.replayed], [false, true])
      assert.deepStrictEqual(again.content, first.content)
      assert.deepStrictEqual(again.value, first.value)
      // the stored text reads back through the store's typed view too (the effect path's reads)
      const store = yield* StoreRegistry.store("idempotency")
      const text = yield* store.get("rich/k")
      assert.isString(text)
      assert.deepStrictEqual(JSON.parse(text!).content, first.content)
    }).pipe(Effect.provide(test)))

  it.effect("a result shown as its value's JSON is kept as that text: read back, replayed and unchanged by what the caller does to the result", () =>
    Effect.gen(function*() {
      let runs = 0
      const tool = Tool.make("plain", {
        description: "Answers a nested value, rendered by default.",
        input: Schema.Struct({ key: Schema.String }),
        output: Schema.Struct({ key: Schema.String, list: Schema.Array(Schema.Number), nested: Schema.Struct({ quote: Schema.String }) }),
        safety: { access: "write" },
        idempotency: ({ key }) => key,
        handler: ({ key }) => Effect.sync(() => (runs++, { key, list: [1, -0, 2.5], nested: { quote: "a \"quoted\" ✓ \u0000 line\n" } }))
      })
      const executor = yield* Executor.make(yield* ToolRegistry.make([tool]))
      yield* executor.run(call("w", "plain", { key: "warm" }))
      const first = yield* executor.run(call("a", "plain", { key: "k" }))
      const snapshot = JSON.parse(JSON.stringify({ content: first.content, value: first.value }))
      // what the caller does to its result is not what the store kept
      ;(first.value as { list: Array<number> }).list.push(99)
      ;(first.content as Array<unknown>).length = 0
      const again = yield* executor.run(call("b", "plain", { key: "k" }))
      assert.deepStrictEqual({ content: again.content, value: again.value }, snapshot)
      assert.deepStrictEqual([again.idempotency?.replayed, runs], [true, 2])
      // the store's own reads answer the stored text, as `JSON.stringify` of what is stored
      const store = yield* StoreRegistry.store("idempotency")
      assert.isTrue(storeNow(store)!.get("plain/k", 0) instanceof Kept) // (kept as made until then)
      const bytes = yield* store.getUint8Array("plain/k")
      const text = yield* store.get("plain/k")
      assert.isString(text)
      assert.strictEqual(new TextDecoder().decode(bytes), text)
      const parsed = JSON.parse(text!)
      assert.deepStrictEqual(Object.keys(parsed), ["storedAt", "content", "value"])
      assert.strictEqual(text, JSON.stringify({ storedAt: parsed.storedAt, content: snapshot.content, value: snapshot.value }))
      // and after that read, a replay answers the same
      const third = yield* executor.run(call("c", "plain", { key: "k" }))
      assert.deepStrictEqual({ content: third.content, value: third.value }, snapshot)
    }).pipe(Effect.provide(test)))

  it.effect("a stored text read back: the same answer as the effect path, whatever it holds", () =>
    Effect.gen(function*() {
      const tool = Tool.make("echo", {
        description: "Answers its key.",
        input: Schema.Struct({ key: Schema.String }),
        safety: { access: "write" },
        idempotency: ({ key }) => key,
        handler: ({ key }) => Effect.succeed(`fresh ${key}`)
      })
      const texts = [
        JSON.stringify({ storedAt: 1, content: [{ type: "text", text: "plain" }], value: { a: [1, null] } }),
        JSON.stringify({ storedAt: 1, content: [{ type: "text", text: "extra", more: 1 }], other: true }),
        JSON.stringify({ storedAt: 1, content: [{ type: "image", data: "AA==", mimeType: "image/png" }], scrub: ["s"] }),
        JSON.stringify({ storedAt: "1", content: [] }),
        JSON.stringify({ storedAt: 1, content: [{ type: "resource", resource: { uri: "u", text: "a", blob: "b" } }] }),
        JSON.stringify({ storedAt: 1, content: [], scrub: [1] }),
        "not json"
      ]
      const answer = (eager: boolean) =>
        Effect.gen(function*() {
          Now.mode.eager = eager
          const executor = yield* Executor.make(yield* ToolRegistry.make([tool]))
          yield* executor.run(call("w", "echo", { key: "warm" }))
          const store = yield* StoreRegistry.store("idempotency")
          const answers: Array<unknown> = []
          for (const [i, text] of texts.entries()) {
            yield* store.set(`echo/k${i}`, text)
            const exit = yield* Effect.exit(executor.run(call(`c${i}`, "echo", { key: `k${i}` })))
            answers.push(Exit.isSuccess(exit)
              ? { content: exit.value.content, value: exit.value.value, replayed: exit.value.idempotency?.replayed }
              : String(exit.cause).split("\n")[0])
          }
          return answers
        }).pipe(Effect.provide(test), Effect.ensuring(Effect.sync(() => (Now.mode.eager = true))))
      const now = yield* answer(true)
      assert.deepStrictEqual(now, yield* answer(false))
      assert.deepStrictEqual(now[0], { content: [{ type: "text", text: "plain" }], value: { a: [1, null] }, replayed: true })
      assert.deepStrictEqual(now[1], { content: [{ type: "text", text: "extra" }], value: undefined, replayed: true })
    }))

  it.effect("a value the store cannot keep (not JSON): the same answer as the effect path", () =>
    Effect.gen(function*() {
      const tool = Tool.make("odd", {
        description: "Answers a value JSON cannot hold.",
        input: Schema.Struct({ key: Schema.String }),
        output: Schema.Struct({ v: Schema.Unknown }),
        safety: { access: "write" },
        idempotency: ({ key }) => key,
        handler: ({ key }) => Effect.sync(() => ({ v: key === "warm" ? 1 : { n: Number.NaN, at: new Date(0) } }))
      })
      const answer = (eager: boolean) =>
        Effect.gen(function*() {
          Now.mode.eager = eager
          const executor = yield* Executor.make(yield* ToolRegistry.make([tool]))
          yield* executor.run(call("w", "odd", { key: "warm" }))
          return yield* Effect.exit(executor.run(call("a", "odd", { key: "k" })))
        }).pipe(Effect.provide(test), Effect.ensuring(Effect.sync(() => (Now.mode.eager = true))))
      const [now, effects] = [yield* answer(true), yield* answer(false)]
      assert.strictEqual(Exit.isSuccess(now), Exit.isSuccess(effects))
      if (Exit.isFailure(now) && Exit.isFailure(effects)) {
        assert.deepStrictEqual(String(now.cause).split("\n")[0], String(effects.cause).split("\n")[0])
      } else if (Exit.isSuccess(now) && Exit.isSuccess(effects)) {
        assert.deepStrictEqual({ ...now.value, toolCallId: "" }, { ...effects.value, toolCallId: "" })
      }
    }))
})
