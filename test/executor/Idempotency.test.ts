/**
 * Idempotency that is real: a keyed tool's key is computed from its input,
 * exposed to the handler, recorded in its events, and applied at most once —
 * a retry or a repeated call with the same key returns the stored result,
 * across executors sharing a `StoreRegistry` and across "processes" sharing a
 * file-system store. Failures are not stored; store failures are typed.
 * Across processes a key is claimed: "processes" here are registries sharing
 * one store and one set of claims (each with its own in-process lock); the
 * real thing, two Node processes on Redis and SQLite, is in
 * test/stores/TwoProcesses.test.ts.
 */
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Schema } from "effect"
import { KeyValueStore } from "effect/persistence"
import { TestClock } from "effect/testing"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { DatabaseSync } from "node:sqlite"
import { Stores } from "../../src/stores/index.ts"
import {
  EventSink,
  Executor,
  RunContext,
  StoreRegistry,
  Tool,
  ToolCallContext,
  ToolError,
  ToolRegistry,
  ToolResult,
  ToolServices
} from "../../src/index.ts"
import type { ToolEvent } from "../../src/index.ts"

const call = (id: string, name: string, args: unknown = {}) => ({ id, name, arguments: args })
const eventsOf = EventSink.EventLog.use((log) => log.all)
const test = ToolServices.layerTest({ runId: "run-1", threadId: "thread-1" })

/** A write tool keyed by `requestId`, retried on transient failures; it fails `failures` times first. */
const makeCharge = (
  options: { readonly failures?: number; readonly sleep?: number; readonly retry?: boolean; readonly timeout?: string } = {}
) => {
  const probe = { handlerRuns: 0, keyRuns: 0, applied: 0, keysSeen: [] as Array<string | undefined> }
  const charge = Tool.make("charge_card", {
    description: "Charges a card once per request id.",
    input: Schema.Struct({ requestId: Schema.String, cents: Schema.Int }),
    output: Schema.Struct({ chargeId: Schema.String, cents: Schema.Int }),
    safety: { access: "write" },
    idempotency: ({ requestId }) => {
      probe.keyRuns++
      return requestId
    },
    ...(options.retry === false ? {} : { retry: Executor.backoff({ base: "10 millis", maxAttempts: 3, jitter: false }) }),
    ...(options.timeout === undefined ? {} : { timeout: options.timeout as "1 second" }),
    services: [ToolCallContext.ToolCallContext],
    handler: ({ cents }) =>
      Effect.gen(function*() {
        const ctx = yield* ToolCallContext.ToolCallContext
        probe.handlerRuns++
        probe.keysSeen.push(ctx.idempotencyKey)
        if (options.sleep !== undefined) yield* Effect.sleep(options.sleep)
        if (probe.handlerRuns <= (options.failures ?? 0)) {
          return yield* ToolError.retryable(`card network busy (${probe.handlerRuns})`)
        }
        probe.applied++
        return { chargeId: `ch_${probe.applied}`, cents }
      })
  })
  return { charge, probe }
}

/** Advances the test clock in steps so sleeps registered along the way also fire. */
const advance = (millis: number, step = 10) =>
  Effect.gen(function*() {
    for (let t = 0; t < millis; t += step) {
      yield* Effect.yieldNow
      yield* TestClock.adjust(step)
    }
    yield* Effect.yieldNow
  })

/** Claims shared by every registry built on them (what a database gives processes), on the `Clock`. */
const sharedClaims = (): StoreRegistry.Claims => {
  const held = new Map<string, { readonly owner: string; readonly until: number }>()
  return {
    acquire: (key, owner, lease) =>
      Effect.clockWith((clock) =>
        Effect.sync(() => {
          const now = clock.currentTimeMillisUnsafe()
          const current = held.get(key)
          if (current !== undefined && current.owner !== owner && current.until > now) return false
          held.set(key, { owner, until: now + lease })
          return true
        })
      ),
    release: (key, owner) =>
      Effect.sync(() => {
        if (held.get(key)?.owner === owner) held.delete(key)
      })
  }
}

/** A backend two "processes" share: one key-value store, one set of claims. */
const sharedBackend = Effect.gen(function*() {
  const kv = yield* Effect.provide(Effect.service(KeyValueStore.KeyValueStore), KeyValueStore.layerMemory)
  const claims = sharedClaims()
  /** One process: its own registry (and so its own in-process lock) over the shared backend. */
  const process = (runId: string) =>
    Layer.mergeAll(
      RunContext.RunContext.layer({ threadId: "t", runId, turn: 0 }),
      EventSink.EventSink.layerMemory,
      Layer.effect(
        StoreRegistry.StoreRegistry,
        Effect.map(Effect.service(StoreRegistry.StoreRegistry), (registry) => ({
          ...registry,
          claims: () => Effect.succeed(claims)
        }))
      ).pipe(Layer.provide(StoreRegistry.layer), Layer.provide(Layer.succeed(KeyValueStore.KeyValueStore, kv)))
    )
  return { claims, process }
})

/** Runs one keyed charge in `process`, on its own executor. */
const chargeIn = (
  tool: Tool.Any,
  process: Layer.Layer<RunContext.RunContext | EventSink.EventSink | StoreRegistry.StoreRegistry>,
  id: string
) =>
  Effect.forkChild(
    Effect.provide(
      Effect.flatMap(Executor.make(registryOf(tool)), (e) => e.run(call(id, "charge_card", { requestId: "k", cents: 1 }))),
      process
    )
  )

describe("idempotency keys", () => {
  it.effect("a keyed write tool with a retry schedule: the key is computed, seen by the handler, in every event; a repeat returns the stored result", () =>
    Effect.gen(function*() {
      const { charge, probe } = makeCharge({ failures: 2 })
      const executor = yield* Executor.make(yield* ToolRegistry.make([charge]))
      const fiber = yield* Effect.forkChild(executor.run(call("c1", "charge_card", { requestId: "req-42", cents: 500 })))
      yield* advance(100)
      const first = yield* Fiber.join(fiber)
      // the old executor: 3 handler runs, 0 key computations
      assert.strictEqual(probe.handlerRuns, 3)
      assert.isAtLeast(probe.keyRuns, 1)
      assert.deepStrictEqual(probe.keysSeen, ["req-42", "req-42", "req-42"])
      assert.deepStrictEqual(first.value, { chargeId: "ch_1", cents: 500 })
      assert.deepStrictEqual(first.idempotency, { key: "req-42", replayed: false })
      const events = yield* eventsOf
      assert.deepStrictEqual(events.map((e) => e._tag), ["tool.started", "tool.retrying", "tool.retrying", "tool.completed"])
      for (const e of events) assert.strictEqual((e as ToolEvent.ToolStarted).idempotencyKey, "req-42", e._tag)

      // the model calls again with the same key: the stored result, the handler does not run
      const again = yield* executor.run(call("c2", "charge_card", { requestId: "req-42", cents: 500 }))
      assert.strictEqual(probe.handlerRuns, 3)
      assert.strictEqual(probe.applied, 1)
      assert.strictEqual(again.toolCallId, "c2")
      assert.deepStrictEqual(again.value, first.value)
      assert.deepStrictEqual(again.content, first.content)
      assert.deepStrictEqual(again.idempotency, { key: "req-42", replayed: true })
      const replayEvents = (yield* eventsOf).filter((e) => "toolCallId" in e && e.toolCallId === "c2")
      assert.deepStrictEqual(replayEvents.map((e) => [e._tag, (e as ToolEvent.ToolCompleted).idempotencyKey]), [
        ["tool.started", "req-42"],
        ["tool.completed", "req-42"]
      ])

      // another key runs
      const other = yield* executor.run(call("c3", "charge_card", { requestId: "req-43", cents: 100 }))
      assert.deepStrictEqual(other.value, { chargeId: "ch_2", cents: 100 })
    }).pipe(Effect.provide(test)))

  it.effect("calls with the same key at the same time do not both run: the second waits and gets the first's result", () =>
    Effect.gen(function*() {
      const { charge, probe } = makeCharge({ sleep: 50 })
      const executor = yield* Executor.make(yield* ToolRegistry.make([charge]))
      const fiber = yield* Effect.forkChild(executor.runBatch([
        call("a", "charge_card", { requestId: "same", cents: 1 }),
        call("b", "charge_card", { requestId: "same", cents: 1 }),
        call("c", "charge_card", { requestId: "other", cents: 2 }),
        call("d", "charge_card", { requestId: "same", cents: 1 })
      ], { concurrency: 4 }))
      yield* advance(300)
      const results = yield* Fiber.join(fiber)
      assert.strictEqual(probe.applied, 2)
      assert.deepStrictEqual(results.map((r) => [r.toolCallId, r.idempotency?.replayed]), [
        ["a", false],
        ["b", true],
        ["c", false],
        ["d", true]
      ])
      assert.deepStrictEqual(results[1]!.value, results[0]!.value)
      assert.deepStrictEqual(results[3]!.value, results[0]!.value)
    }).pipe(Effect.provide(test)))

  it.effect("the stored result holds across executors sharing a StoreRegistry, not across separate ones", () =>
    Effect.gen(function*() {
      const { charge, probe } = makeCharge()
      const registry = yield* ToolRegistry.make([charge])
      const shared = Layer.mergeAll(
        RunContext.RunContext.layer({ threadId: "t", runId: "r", turn: 0 }),
        EventSink.EventSink.layerMemory,
        StoreRegistry.StoreRegistry.layerMemory
      )
      const once = Effect.gen(function*() {
        const a = yield* (yield* Executor.make(registry)).run(call("c1", "charge_card", { requestId: "k", cents: 1 }))
        const b = yield* (yield* Executor.make(registry)).run(call("c2", "charge_card", { requestId: "k", cents: 1 }))
        return [a, b] as const
      })
      const [a, b] = yield* Effect.provide(once, shared)
      assert.strictEqual(probe.applied, 1)
      assert.deepStrictEqual([a.idempotency?.replayed, b.idempotency?.replayed], [false, true])
      // a fresh StoreRegistry knows nothing of it
      yield* Effect.provide(once, shared)
      assert.strictEqual(probe.applied, 2)
    }))

  it.effect("two processes sharing a file-system store: the second answers from the first's stored result", () => {
    const root = mkdtempSync(join(tmpdir(), "tinyagents-idempotency-"))
    const process = (runId: string) =>
      Layer.mergeAll(
        RunContext.RunContext.layer({ threadId: "t", runId, turn: 0 }),
        EventSink.EventSink.layerMemory,
        StoreRegistry.StoreRegistry.layerFileSystem(root)
      ).pipe(Layer.provide([NodeFileSystem.layer, NodePath.layer]))
    return Effect.gen(function*() {
      const first = makeCharge()
      const second = makeCharge()
      const a = yield* Effect.provide(
        Effect.flatMap(Executor.make(registryOf(first.charge)), (e) => e.run(call("c1", "charge_card", { requestId: "r/1", cents: 7 }))),
        process("run-a")
      )
      const b = yield* Effect.provide(
        Effect.flatMap(Executor.make(registryOf(second.charge)), (e) => e.run(call("c1", "charge_card", { requestId: "r/1", cents: 7 }))),
        process("run-b")
      )
      assert.strictEqual(first.probe.applied, 1)
      assert.strictEqual(second.probe.applied, 0)
      assert.deepStrictEqual(b.value, a.value)
      assert.isTrue(b.idempotency?.replayed)
    }).pipe(Effect.ensuring(Effect.sync(() => rmSync(root, { recursive: true, force: true }))))
  })

  it.effect("two processes with shared claims, simultaneous first calls: the key is applied once and both get its result", () =>
    Effect.gen(function*() {
      const { process } = yield* sharedBackend
      const { charge, probe } = makeCharge({ sleep: 50 })
      const a = yield* chargeIn(charge, process("run-a"), "a")
      const b = yield* chargeIn(charge, process("run-b"), "b")
      yield* advance(500)
      const [first, second] = [yield* Fiber.join(a), yield* Fiber.join(b)]
      assert.strictEqual(probe.handlerRuns, 1)
      assert.deepStrictEqual([first.idempotency?.replayed, second.idempotency?.replayed], [false, true])
      assert.deepStrictEqual(second.value, first.value)
    }))

  it.effect("a winner that fails releases its claim: the waiting process takes the key and runs it", () =>
    Effect.gen(function*() {
      const { process } = yield* sharedBackend
      const { charge: noRetry, probe } = makeCharge({ sleep: 50, failures: 1, retry: false })
      const a = yield* chargeIn(noRetry, process("run-a"), "a")
      const b = yield* chargeIn(noRetry, process("run-b"), "b")
      yield* advance(500)
      const [first, second] = [yield* Fiber.join(a), yield* Fiber.join(b)]
      assert.isTrue(first.isError)
      assert.strictEqual(probe.handlerRuns, 2)
      assert.strictEqual(probe.applied, 1)
      assert.deepStrictEqual(second.idempotency, { key: "k", replayed: false })
      assert.deepStrictEqual(second.value, { chargeId: "ch_1", cents: 1 })
    }))

  it.effect("a holder that died: its claim stops others until the lease runs out, then a waiting call takes over", () =>
    Effect.gen(function*() {
      const { claims, process } = yield* sharedBackend
      const { charge, probe } = makeCharge()
      // a process took the key and died before storing anything
      assert.isTrue(yield* claims.acquire("charge_card/k", "dead-process", 30_000))
      const waiting = yield* chargeIn(charge, process("run-b"), "b")
      yield* advance(29_000, 100)
      assert.strictEqual(probe.handlerRuns, 0)
      yield* advance(2_000, 100)
      const result = yield* Fiber.join(waiting)
      assert.strictEqual(probe.applied, 1)
      assert.deepStrictEqual(result.idempotency, { key: "k", replayed: false })
    }))

  it.effect("a long handler renews its claim: another process waits the whole run, then replays its result", () =>
    Effect.gen(function*() {
      const { process } = yield* sharedBackend
      const long = makeCharge({ sleep: 90_000, timeout: "5 minutes" })
      const slowTool = long.charge
      const a = yield* chargeIn(slowTool, process("run-a"), "a")
      yield* advance(100)
      const b = yield* chargeIn(slowTool, process("run-b"), "b")
      yield* advance(60_000, 100)
      // three times the 30 s lease has passed: without renewal b would have run the key too
      assert.strictEqual(long.probe.handlerRuns, 1)
      yield* advance(31_000, 100)
      const [first, second] = [yield* Fiber.join(a), yield* Fiber.join(b)]
      assert.strictEqual(long.probe.handlerRuns, 1)
      assert.deepStrictEqual([first.idempotency?.replayed, second.idempotency?.replayed], [false, true])
      assert.deepStrictEqual(second.value, first.value)
    }))

  it.effect("a claim that cannot be taken is a StoreFailed; the handler does not run", () =>
    Effect.gen(function*() {
      const { charge, probe } = makeCharge()
      const broken = Layer.effect(
        StoreRegistry.StoreRegistry,
        Effect.map(Effect.service(StoreRegistry.StoreRegistry), (registry) => ({
          ...registry,
          claims: (name: string) =>
            Effect.succeed<StoreRegistry.Claims>({
              acquire: () => Effect.fail(new ToolError.StoreFailed({ store: name, operation: "claim", cause: "connection lost" })),
              release: () => Effect.void
            })
        }))
      ).pipe(Layer.provide(StoreRegistry.layerMemory))
      const error = yield* Effect.flip(
        Effect.flatMap(Executor.make(registryOf(charge)), (e) => e.run(call("c1", "charge_card", { requestId: "k", cents: 1 }))).pipe(
          Effect.provide(Layer.mergeAll(RunContext.RunContext.layer({ threadId: "t", runId: "r", turn: 0 }), EventSink.EventSink.layerMemory, broken))
        )
      )
      assert.strictEqual(error._tag, "StoreFailed")
      assert.strictEqual((error as ToolError.StoreFailed).operation, "claim")
      assert.strictEqual(probe.handlerRuns, 0)
    }))

  it.effect("only successes are stored: a failed call can run again with the same key", () =>
    Effect.gen(function*() {
      let runs = 0
      const flaky = Tool.make("place_order", {
        description: "Fails the first time.",
        input: Schema.Struct({ orderId: Schema.String }),
        safety: { access: "write" },
        idempotency: ({ orderId }) => orderId,
        handler: () => Effect.suspend(() => ++runs === 1 ? Effect.fail(ToolError.repairable("out of stock")) : Effect.succeed("placed"))
      })
      const executor = yield* Executor.make(yield* ToolRegistry.make([flaky]))
      const failed = yield* executor.run(call("c1", "place_order", { orderId: "o1" }))
      assert.isTrue(failed.isError)
      const placed = yield* executor.run(call("c2", "place_order", { orderId: "o1" }))
      assert.strictEqual(placed.value, "placed")
      const replayed = yield* executor.run(call("c3", "place_order", { orderId: "o1" }))
      assert.isTrue(replayed.idempotency?.replayed)
      assert.strictEqual(runs, 2)
    }).pipe(Effect.provide(test)))

  it.effect("a stored result expires after the executor's ttl", () =>
    Effect.gen(function*() {
      const { charge, probe } = makeCharge()
      const executor = yield* Executor.make(yield* ToolRegistry.make([charge]), { idempotency: { ttl: "1 hour" } })
      yield* executor.run(call("c1", "charge_card", { requestId: "k", cents: 1 }))
      yield* TestClock.adjust("59 minutes")
      yield* executor.run(call("c2", "charge_card", { requestId: "k", cents: 1 }))
      assert.strictEqual(probe.applied, 1)
      yield* TestClock.adjust("2 minutes")
      yield* executor.run(call("c3", "charge_card", { requestId: "k", cents: 1 }))
      assert.strictEqual(probe.applied, 2)
    }).pipe(Effect.provide(test)))

  it.effect("store failures are typed StoreFailed (fatal), and the handler does not run without the store", () =>
    Effect.gen(function*() {
      const { charge, probe } = makeCharge()
      const registry = yield* ToolRegistry.make([charge])
      const broken = Layer.succeed(StoreRegistry.StoreRegistry, {
        store: (name) => Effect.fail(new ToolError.StoreFailed({ store: name, operation: "open", cause: "disk gone" })),
        claims: (name) => Effect.fail(new ToolError.StoreFailed({ store: name, operation: "open", cause: "disk gone" }))
      })
      const error = yield* Effect.flip(
        Effect.flatMap(Executor.make(registry), (e) => e.run(call("c1", "charge_card", { requestId: "k", cents: 1 }))).pipe(
          Effect.provide(broken)
        )
      )
      assert.strictEqual(error._tag, "StoreFailed")
      assert.strictEqual(error.disposition, "fatal")
      assert.strictEqual(probe.handlerRuns, 0)
      // an unreadable entry is not a miss: the key cannot be known to be unapplied
      const store = yield* StoreRegistry.store("idempotency")
      yield* store.set("charge_card/bad", "{not json")
      const executor = yield* Executor.make(registry)
      const unreadable = yield* Effect.flip(executor.run(call("c2", "charge_card", { requestId: "bad", cents: 1 })))
      assert.strictEqual(unreadable._tag, "StoreFailed")
      assert.strictEqual((unreadable as ToolError.StoreFailed).operation, "decode")
      assert.strictEqual(probe.handlerRuns, 0)
    }).pipe(Effect.provide(test)))

  it.effect("a result that cannot be stored after the handler succeeded is fatal even for a transient cause: never 'retry later'", () =>
    Effect.gen(function*() {
      const { charge, probe } = makeCharge({ retry: false })
      const registry = yield* ToolRegistry.make([charge])
      let writesFail = true
      const memory = yield* Effect.gen(function*() {
        return yield* KeyValueStore.KeyValueStore
      }).pipe(Effect.provide(KeyValueStore.layerMemory))
      const flaky: KeyValueStore.KeyValueStore = {
        ...memory,
        set: (key, value) =>
          writesFail
            ? Effect.fail(new KeyValueStore.KeyValueStoreError({ method: "set", key, message: "reset", cause: { code: "ECONNRESET" } }))
            : memory.set(key, value)
      }
      const stores = StoreRegistry.layerBackend(Effect.succeed({ store: flaky, claims: () => StoreRegistry.memoryClaims() }))
      const error = yield* Effect.flip(
        Effect.flatMap(Executor.make(registry), (e) => e.run(call("c1", "charge_card", { requestId: "order-17", cents: 5 }))).pipe(
          Effect.provide(stores)
        )
      )
      assert.strictEqual(probe.handlerRuns, 1)
      assert.strictEqual(error._tag, "StoreFailed")
      assert.strictEqual((error as ToolError.StoreFailed).operation, "write")
      assert.strictEqual(error.disposition, "fatal")
      assert.notInclude(error.message, "retry later")
      writesFail = false
    }).pipe(Effect.provide(test)))

  it.effect("a key function that throws is a ToolDefect; the handler never runs", () =>
    Effect.gen(function*() {
      let runs = 0
      const bad = Tool.make("bad_key", {
        description: "Its key function throws.",
        input: Schema.Struct({}),
        safety: { access: "write" },
        idempotency: () => {
          throw new Error("no key")
        },
        handler: () => Effect.sync(() => ++runs)
      })
      const executor = yield* Executor.make(yield* ToolRegistry.make([bad]))
      const error = yield* Effect.flip(executor.run(call("c1", "bad_key")))
      assert.strictEqual(error._tag, "ToolDefect")
      assert.strictEqual(runs, 0)
      assert.deepStrictEqual((yield* eventsOf).map((e) => e._tag), ["tool.started", "tool.failed"])
    }).pipe(Effect.provide(test)))

  it.effect("a replay to a call with other arguments is scrubbed of the storing call's redacted values too", () =>
    Effect.gen(function*() {
      let runs = 0
      const echo = Tool.make("echo_secret", {
        description: "Echoes its secret.",
        input: Schema.Struct({ id: Schema.String, secret: Schema.optionalKey(Schema.String) }),
        output: Schema.Struct({ echo: Schema.String, note: Schema.String }),
        safety: { access: "write", redact: { keys: ["secret"] } },
        idempotency: ({ id }) => id,
        // the model text is not the value's JSON: it is scrubbed as text
        toModelOutput: ({ echo }) => `you sent ${echo}`,
        handler: ({ secret }) => Effect.sync(() => ({ echo: secret ?? "none", note: `run ${++runs}` }))
      })
      const big = Tool.make("big_secret", {
        description: "Echoes its secret in a large output.",
        input: Schema.Struct({ id: Schema.String, secret: Schema.String }),
        safety: { access: "write", redact: { keys: ["secret"] } },
        idempotency: ({ id }) => id,
        handler: ({ secret }) => Effect.succeed(`${"x".repeat(5_000)} ${secret} ${"y".repeat(5_000)}`)
      })
      const executor = yield* Executor.make(yield* ToolRegistry.make([echo, big]), { artifacts: { threshold: 2_000 } })
      const first = yield* executor.run(call("c1", "echo_secret", { id: "k", secret: "s3cr3t" }))
      assert.strictEqual(ToolResult.textOf(first), "you sent [redacted]")
      assert.deepStrictEqual(first.value, { echo: "[redacted]", note: "run 1" })
      for (const args of [{ id: "k", secret: "other" }, { id: "k" }]) {
        const again = yield* executor.run(call("c2", "echo_secret", args))
        assert.deepStrictEqual(again.idempotency, { key: "k", replayed: true })
        assert.strictEqual(ToolResult.textOf(again), "you sent [redacted]")
        assert.deepStrictEqual(again.value, { echo: "[redacted]", note: "run 1" })
      }
      assert.strictEqual(runs, 1)
      // the same with the default model text (the value's JSON) and with a large output offloaded again
      const plain = Tool.make("plain_secret", {
        description: "Echoes its secret.",
        input: Schema.Struct({ id: Schema.String, secret: Schema.optionalKey(Schema.String) }),
        output: Schema.Struct({ echo: Schema.String }),
        safety: { access: "write", redact: { keys: ["secret"] } },
        idempotency: ({ id }) => id,
        handler: ({ secret }) => Effect.succeed({ echo: secret ?? "none" })
      })
      const executor2 = yield* Executor.make(yield* ToolRegistry.make([plain, big]), { artifacts: { threshold: 2_000 } })
      yield* executor2.run(call("p1", "plain_secret", { id: "k", secret: "s3cr3t" }))
      const replayed = yield* executor2.run(call("p2", "plain_secret", { id: "k", secret: "other" }))
      assert.strictEqual(ToolResult.textOf(replayed), `{"echo":"[redacted]"}`)
      assert.deepStrictEqual(replayed.value, { echo: "[redacted]" })
      yield* executor2.run(call("b1", "big_secret", { id: "k", secret: "s3cr3t-big" }))
      const bigAgain = yield* executor2.run(call("b2", "big_secret", { id: "k", secret: "other" }))
      assert.deepStrictEqual(bigAgain.idempotency, { key: "k", replayed: true })
      assert.strictEqual(bigAgain.artifacts.length, 1)
      assert.notInclude(ToolResult.textOf(bigAgain), "s3cr3t")
      // the artifact written for the replay (what resources/read and other readers get) lacks it too
      const artifact = yield* (yield* StoreRegistry.store(bigAgain.artifacts[0]!.store)).get(bigAgain.artifacts[0]!.key)
      assert.include(artifact ?? "", "[redacted]")
      assert.notInclude(artifact ?? "", "s3cr3t-big")
      const events = JSON.stringify(yield* eventsOf)
      assert.notInclude(events, "s3cr3t")
    }).pipe(Effect.provide(test)))

  it.effect("unkeyed tools carry no key anywhere", () =>
    Effect.gen(function*() {
      const plain = Tool.make("plain", {
        description: "No key.",
        input: Schema.Struct({}),
        services: [ToolCallContext.ToolCallContext],
        handler: () => ToolCallContext.idempotencyKey
      })
      const executor = yield* Executor.make(yield* ToolRegistry.make([plain]))
      const result = yield* executor.run(call("c1", "plain"))
      assert.isUndefined(result.idempotency)
      assert.strictEqual(ToolResult.textOf(result), "")
      for (const e of yield* eventsOf) assert.isFalse("idempotencyKey" in e)
    }).pipe(Effect.provide(test)))
})

/** A registry of one tool, synchronously. */
const registryOf = (tool: Tool.Any) => ToolRegistry.makeResult([tool]).pipe((r) => {
  if (r._tag === "Failure") throw r.failure
  return r.success
})

describe("idempotency ttl on a store that deletes expired entries", () => {
  it.live("with a ttl, the stored result is written to expire (SQLite: expires_at); without one, never", () =>
    Effect.gen(function*() {
      const dir = mkdtempSync(join(tmpdir(), "tinyagents-idem-ttl-"))
      try {
        const filename = join(dir, "stores.db")
        const tool = Tool.make("book", {
          description: "Books once per id.",
          input: Schema.Struct({ id: Schema.String }),
          safety: { access: "write" },
          idempotency: ({ id }) => id,
          handler: ({ id }) => Effect.succeed(`booked ${id}`)
        })
        const registry = yield* ToolRegistry.make([tool])
        const before = Date.now()
        yield* Effect.gen(function*() {
          const withTtl = yield* Executor.make(registry, { idempotency: { ttl: "1 hour" } })
          yield* withTtl.run({ id: "a", name: "book", arguments: { id: "with-ttl" } })
          const forever = yield* Executor.make(registry)
          yield* forever.run({ id: "b", name: "book", arguments: { id: "no-ttl" } })
        }).pipe(Effect.provide(Layer.mergeAll(ToolServices.layerTest({ runId: "run-1", threadId: "thread-1" }), Stores.layerSqlite({ filename }))))
        const db = new DatabaseSync(filename)
        const rows = db.prepare("SELECT full_key, id, expires_at FROM tinyagents_store").all() as Array<{ full_key: string | null; id: string; expires_at: number | null }>
        db.close()
        const expiry = (key: string) => rows.find((row) => (row.full_key ?? row.id).includes(key))?.expires_at
        const withTtl = expiry("with-ttl")
        assert.isNumber(withTtl)
        assert.isAtLeast(Number(withTtl), before + 3_600_000)
        assert.isAtMost(Number(withTtl), Date.now() + 3_600_000)
        assert.isNull(expiry("no-ttl"))
      } finally {
        rmSync(dir, { recursive: true, force: true })
      }
    }))
})
