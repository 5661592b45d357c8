/**
 * Keyed calls on the SQLite stores by plain calls (`src/internal/storeNow.ts`, `sqliteHeld`'s
 * `joined`): a replay is answered from a read at once; an application looks again, runs its handler
 * and writes its result inside the write transaction the calls of that moment share, and is answered
 * once it is committed (another connection, as another process, sees it by then). A handler may use
 * the same database; one that suspends holds its claim where other processes see it; a failure writes
 * nothing; a database locked by another process is waited for; `effect/sql` users are not starved; the
 * plain and effect paths (`Now.mode.eager = false`) answer alike. Across processes:
 * test/stores/TwoProcesses.test.ts (full tier).
 */
import { afterAll, assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Schema, Semaphore } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { DatabaseSync } from "node:sqlite"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { EventSink, Executor, RunContext, StoreRegistry, Tool, ToolRegistry } from "../../src/index.ts"
import * as Now from "../../src/runtime/internal/executor/Now.ts"
import { Stores } from "../../src/stores/index.ts"
import { waiting } from "../../src/stores/internal/sqliteHeld.ts"
import { later, storeNow } from "../../src/internal/storeNow.ts"

const dir = mkdtempSync(join(tmpdir(), "tinyagents-sqlite-keyed-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const fresh = () => join(dir, `keyed-${Math.random().toString(36).slice(2)}.db`)

const layerOf = (filename: string) =>
  Layer.mergeAll(
    Stores.layerSqlite({ filename }),
    RunContext.RunContext.layer({ threadId: "t", runId: "r", turn: 0 }),
    EventSink.EventSink.layerMemory
  )

/** Another connection to `filename` (as another process would open it), closed with the scope. */
const other = (filename: string) =>
  Effect.acquireRelease(Effect.sync(() => new DatabaseSync(filename)), (db) => Effect.sync(() => db.close()))

const call = (id: string, key: string, extra: Record<string, unknown> = {}) => ({
  id,
  name: "apply",
  arguments: { key, ...extra }
})

/** A keyed tool counting its applications per key; `body` is what it does (by default it completes at once). */
const applying = (
  body: (key: string, n: number) => Effect.Effect<{ readonly key: string; readonly n: number }, unknown, StoreRegistry.StoreRegistry> =
    (key, n) => Effect.succeed({ key, n })
) => {
  const applied = new Map<string, number>()
  const tool = Tool.make("apply", {
    description: "Applies a key once.",
    input: Schema.Struct({ key: Schema.String, fail: Schema.optionalKey(Schema.Boolean) }),
    output: Schema.Struct({ key: Schema.String, n: Schema.Number }),
    failure: Schema.String,
    services: [StoreRegistry.StoreRegistry],
    safety: { access: "write" },
    timeout: "60 seconds",
    idempotency: ({ key }) => key,
    handler: ({ fail, key }) =>
      Effect.suspend(() => {
        if (fail === true) return Effect.fail("refused")
        const n = (applied.get(key) ?? 0) + 1
        applied.set(key, n)
        return Effect.orDie(body(key, n))
      })
  })
  return { applied, tool }
}

const count = (db: DatabaseSync, table: string) =>
  Number((db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n)

describe("keyed calls on SQLite, by plain calls", () => {
  it.live("each key applied once (twice in one batch too), committed when answered; a second batch replays", () => {
    const filename = fresh()
    return Effect.gen(function*() {
      const { applied, tool } = applying()
      const executor = yield* Executor.make(yield* ToolRegistry.make([tool]), { concurrency: 16 })
      yield* executor.run(call("warm", "warm")) // opened, tables created
      const db = yield* other(filename)
      const calls = Array.from({ length: 200 }, (_, i) => call(`c${i}`, `k${i % 150}`))
      const first = yield* executor.runBatch(calls)
      // by the time the batch answers, another connection sees every result and no claim
      assert.strictEqual(count(db, "tinyagents_store"), 151)
      assert.strictEqual(count(db, "tinyagents_claims"), 0)
      assert.deepStrictEqual([...applied.values()].filter((n) => n !== 1), [])
      assert.strictEqual(applied.size, 151)
      assert.isTrue(first.every((r) => !r.isError))
      // the second call of a key in the batch answers the first's result
      assert.deepStrictEqual(first[170]!.value, first[20]!.value)
      assert.strictEqual(first.filter((r) => r.idempotency?.replayed === true).length, 50)
      const again = yield* executor.runBatch(calls)
      assert.isTrue(again.every((r) => r.idempotency?.replayed === true))
      assert.deepStrictEqual(again.map((r) => r.value), first.map((r) => r.value))
      assert.strictEqual(applied.size, 151)
    }).pipe(Effect.scoped, Effect.provide(layerOf(filename)))
  })

  it.live("a handler that reads and modifies the same database inside a keyed call completes", () => {
    const filename = fresh()
    return Effect.gen(function*() {
      const { tool } = applying((key, n) =>
        Effect.gen(function*() {
          const notes = yield* StoreRegistry.store("notes")
          yield* notes.set(key, "1")
          const seen = yield* notes.get(key)
          yield* notes.modify(key, (v) => `${v}+`)
          return { key, n: seen === "1" ? n : -1 }
        })
      )
      const executor = yield* Executor.make(yield* ToolRegistry.make([tool]), { concurrency: 16 })
      yield* executor.run(call("warm", "warm"))
      const results = yield* executor.runBatch(Array.from({ length: 40 }, (_, i) => call(`c${i}`, `k${i}`)))
      assert.deepStrictEqual(results.map((r) => r.value), Array.from({ length: 40 }, (_, i) => ({ key: `k${i}`, n: 1 })))
      const notes = yield* StoreRegistry.store("notes")
      assert.strictEqual(yield* notes.get("k39"), "1+")
    }).pipe(Effect.scoped, Effect.provide(layerOf(filename)))
  })

  it.live("a handler that suspends holds a claim other connections see while it runs, released at its end", () => {
    const filename = fresh()
    return Effect.gen(function*() {
      const { tool } = applying((key, n) => Effect.as(Effect.sleep(300), { key, n }))
      const executor = yield* Executor.make(yield* ToolRegistry.make([tool]))
      yield* executor.run(call("warm", "warm"))
      const db = yield* other(filename)
      const running = yield* Effect.forkChild(executor.run(call("a", "slow")))
      yield* Effect.sleep(100)
      const claim = db.prepare("SELECT owner FROM tinyagents_claims WHERE id = ?").get("idempotency/apply/slow")
      assert.isDefined(claim)
      const result = yield* Fiber.join(running)
      assert.deepStrictEqual([result.value, result.idempotency?.replayed], [{ key: "slow", n: 1 }, false])
      assert.strictEqual(count(db, "tinyagents_claims"), 0)
      const again = yield* executor.run(call("b", "slow"))
      assert.deepStrictEqual([again.value, again.idempotency?.replayed], [{ key: "slow", n: 1 }, true])
    }).pipe(Effect.scoped, Effect.provide(layerOf(filename)))
  })

  it.live("a failed call writes nothing: the key runs again", () => {
    const filename = fresh()
    return Effect.gen(function*() {
      const { applied, tool } = applying()
      const executor = yield* Executor.make(yield* ToolRegistry.make([tool]))
      yield* executor.run(call("warm", "warm"))
      const failed = yield* executor.run(call("a", "k", { fail: true }))
      assert.isTrue(failed.isError)
      const db = yield* other(filename)
      assert.strictEqual(count(db, "tinyagents_store"), 1)
      const ok = yield* executor.run(call("b", "k"))
      assert.deepStrictEqual([ok.value, ok.idempotency?.replayed, applied.get("k")], [{ key: "k", n: 1 }, false, 1])
    }).pipe(Effect.scoped, Effect.provide(layerOf(filename)))
  })

  it.live("a database locked by another connection is waited for; every key still runs once", () => {
    const filename = fresh()
    return Effect.gen(function*() {
      const { applied, tool } = applying()
      const executor = yield* Executor.make(yield* ToolRegistry.make([tool]), { concurrency: 16 })
      yield* executor.run(call("warm", "warm"))
      const db = yield* other(filename)
      db.exec("BEGIN IMMEDIATE")
      const batch = yield* Effect.forkChild(executor.runBatch(Array.from({ length: 50 }, (_, i) => call(`c${i}`, `k${i}`))))
      yield* Effect.sleep(200)
      assert.strictEqual(count(db, "tinyagents_store"), 1) // nothing written while locked
      db.exec("COMMIT")
      const results = yield* Fiber.join(batch)
      assert.isTrue(results.every((r) => !r.isError && r.idempotency?.replayed === false))
      assert.deepStrictEqual([applied.size, count(db, "tinyagents_store")], [51, 51])
    }).pipe(Effect.scoped, Effect.provide(layerOf(filename)))
  })

  it.live("an effect/sql transaction started during a long batch of keyed calls runs while the batch runs (not after it)", () => {
    const filename = fresh()
    return Effect.gen(function*() {
      const { applied, tool } = applying()
      const executor = yield* Executor.make(yield* ToolRegistry.make([tool]), { concurrency: 16 })
      yield* executor.run(call("warm", "warm"))
      const notes = yield* StoreRegistry.store("notes")
      yield* notes.set("n", "0")
      const total = 3_000
      const batch = yield* Effect.forkChild(executor.runBatch(Array.from({ length: total }, (_, i) => call(`c${i}`, `k${i}`))))
      // let the batch get going, then modify (one `effect/sql` transaction)
      while (applied.size < 50) yield* Effect.yieldNow
      yield* notes.modify("n", () => "1")
      const appliedWhenModified = applied.size
      const results = yield* Fiber.join(batch)
      assert.isTrue(results.every((r) => !r.isError))
      assert.isBelow(appliedWhenModified, total / 2)
      assert.strictEqual(yield* notes.get("n"), "1")
    }).pipe(Effect.scoped, Effect.provide(layerOf(filename)))
  })

  it.live("replays share a read transaction: an effect/sql transaction started during a long batch of them runs while it runs, and writes of another connection are read", () => {
    const filename = fresh()
    return Effect.gen(function*() {
      const { applied, tool } = applying()
      const executor = yield* Executor.make(yield* ToolRegistry.make([tool]), { concurrency: 16 })
      const total = 3_000
      const calls = Array.from({ length: total }, (_, i) => call(`c${i}`, `k${i}`))
      yield* executor.runBatch(calls)
      const notes = yield* StoreRegistry.store("notes")
      yield* notes.set("n", "0")
      const batch = yield* Effect.forkChild(executor.runBatch(calls))
      yield* Effect.yieldNow
      yield* notes.modify("n", () => "1")
      const db = yield* other(filename)
      // what another connection stores is what the next replay reads
      db.prepare("INSERT INTO tinyagents_store (id, value, value_type) VALUES (?, ?, 0)").run(
        "idempotency/apply/theirs",
        new TextEncoder().encode(JSON.stringify({ storedAt: Date.now(), content: [], value: { key: "theirs", n: 7 } }))
      )
      const modifiedBeforeTheEnd = batch.pollUnsafe() === undefined
      const results = yield* Fiber.join(batch)
      assert.strictEqual(results.filter((r) => r.idempotency?.replayed === true).length, total)
      assert.isTrue(modifiedBeforeTheEnd)
      assert.strictEqual(yield* notes.get("n"), "1")
      const theirs = yield* executor.run(call("t", "theirs"))
      assert.deepStrictEqual([theirs.value, theirs.idempotency?.replayed, applied.has("theirs")], [{ key: "theirs", n: 7 }, true, false])
    }).pipe(Effect.scoped, Effect.provide(layerOf(filename)))
  })

  it.live("the plain and effect paths answer alike", () => {
    const filename = fresh()
    return Effect.gen(function*() {
      const { tool } = applying()
      const executor = yield* Executor.make(yield* ToolRegistry.make([tool]), { concurrency: 4 })
      yield* executor.run(call("warm", "warm"))
      const run = (prefix: string) =>
        executor.runBatch(Array.from({ length: 30 }, (_, i) => call(`c${i}`, `${prefix}${i % 20}`)))
      const shape = (results: ReadonlyArray<{ readonly value?: unknown; readonly idempotency?: unknown }>) =>
        results.map((r) => [r.value, r.idempotency])
      const plain = [shape(yield* run("p")), shape(yield* run("p"))]
      Now.mode.eager = false
      const effects = yield* Effect.ensuring(
        Effect.all([run("e"), run("e")]),
        Effect.sync(() => void (Now.mode.eager = true))
      )
      const renamed = (xs: ReturnType<typeof shape>) => JSON.stringify(xs).replaceAll("\"e", "\"p")
      assert.strictEqual(renamed(effects.map(shape)), JSON.stringify(plain))
    }).pipe(Effect.scoped, Effect.provide(layerOf(filename)))
  })
})

describe("the keyed views' reads", () => {
  it.live("answer what the store's get answers, for every kind of value, outside and inside the shared transaction", () => {
    const filename = fresh()
    return Effect.gen(function*() {
      const store = yield* StoreRegistry.store("idempotency")
      const view = storeNow(store)!
      const values: ReadonlyArray<string | Uint8Array> = [
        "{\"storedAt\":1,\"content\":[]}",
        "",
        "a\u0000b",
        "\uFEFF{}",
        "\uFEFF\uFEFFx",
        "héllo ✓ 😀",
        "lone \uD800 surrogate",
        new Uint8Array([0, 255, 0xfe, 0x61]),
        "x".repeat(70_000)
      ]
      for (const [i, value] of values.entries()) yield* store.set(`k${i}`, value)
      const expected = yield* Effect.forEach(values, (_, i) => store.get(`k${i}`))
      const now = Date.now()
      assert.deepStrictEqual(values.map((_, i) => view.get(`k${i}`, now)), expected)
      assert.strictEqual(view.get("missing", now), undefined)
      // (the last write's group gives the connection back once its writer has resumed)
      yield* Effect.sleep(10)
      const looked = yield* Effect.withFiber((fiber) =>
        Effect.succeed([...values.map((_, i) => `k${i}`), "missing"].map((key) => view.claims!.look(key, now, fiber)))
      )
      for (const look of looked) if (look !== later) yield* look.committed()
      assert.deepStrictEqual(looked.map((look) => look === later ? "later" : [look.stored, look.claimed]), [
        ...expected.map((text) => [text, false]),
        [undefined, false]
      ])
    }).pipe(Effect.scoped, Effect.provide(layerOf(filename)))
  })
})

describe("the keyed views' writes", () => {
  it.live("store the bytes and type that the store's set stores, for every kind of string", () => {
    const filename = fresh()
    return Effect.gen(function*() {
      const store = yield* StoreRegistry.store("idempotency")
      const view = storeNow(store)!
      const values = ["{\"storedAt\":1,\"content\":[]}", "", "a\u0000b", "\uFEFF{}", "héllo ✓ 😀", "lone \uD800 surrogate", "x".repeat(70_000)]
      for (const [i, value] of values.entries()) yield* store.set(`set${i}`, value)
      yield* Effect.sleep(10)
      const puts = yield* Effect.withFiber((fiber) =>
        Effect.succeed(values.map((value, i) => view.claims!.put(`put${i}`, value, undefined, Date.now(), fiber)))
      )
      for (const put of puts) {
        assert.notStrictEqual(put, later)
        if (put !== later) yield* put
      }
      const db = yield* other(filename)
      const row = db.prepare("SELECT value, value_type, typeof(value) AS kind FROM tinyagents_store WHERE id = ?")
      for (const i of values.keys()) {
        assert.deepStrictEqual(row.get(`idempotency/put${i}`), row.get(`idempotency/set${i}`))
        assert.strictEqual(yield* store.get(`put${i}`), yield* store.get(`set${i}`))
      }
    }).pipe(Effect.scoped, Effect.provide(layerOf(filename)))
  })
})

describe("a SQLite file whose text is UTF-16 (made elsewhere)", () => {
  // SQLite's CASTs between a value's bytes and text convert to the file's encoding: the keyed views
  // (which use them) stay off there, and keyed calls take the effects, which store and read bytes.
  it.live("keyed calls apply once and replay what they stored; the store's own reads agree", () => {
    const filename = fresh()
    const made = new DatabaseSync(filename)
    made.exec("PRAGMA encoding = 'UTF-16le'; CREATE TABLE elsewhere (x TEXT)")
    made.close()
    return Effect.gen(function*() {
      const store = yield* StoreRegistry.store("idempotency")
      assert.strictEqual(storeNow(store), undefined, "no keyed views on a UTF-16 file")
      const { applied, tool } = applying()
      const executor = yield* Executor.make(yield* ToolRegistry.make([tool]), { concurrency: 16 })
      const calls = Array.from({ length: 40 }, (_, i) => call(`c${i}`, `k${i % 30} ✓ \uFEFF`))
      const first = yield* executor.runBatch(calls)
      assert.isTrue(first.every((r) => !r.isError))
      assert.deepStrictEqual([...applied.values()].filter((n) => n !== 1), [])
      const again = yield* executor.runBatch(calls)
      assert.isTrue(again.every((r) => r.idempotency?.replayed === true))
      assert.deepStrictEqual(again.map((r) => r.value), first.map((r) => r.value))
      const db = yield* other(filename)
      assert.strictEqual((db.prepare("PRAGMA encoding").get() as { encoding: string }).encoding, "UTF-16le")
      yield* store.set("text", "\uFEFFhé ✓")
      assert.strictEqual(yield* store.get("text"), "\uFEFFhé ✓")
    }).pipe(Effect.scoped, Effect.provide(layerOf(filename)))
  })
})

describe("the fairness check", () => {
  // The plain path gives way to a fiber waiting for the connection by reading Effect's semaphore's
  // queue of waiters (not part of its interface): if an Effect upgrade renamed it, the check would
  // read "none waiting" for ever. This fails first.
  it.effect("sees a fiber waiting for an Effect semaphore's permit, and no longer once it has it", () =>
    Effect.gen(function*() {
      const semaphore = yield* Semaphore.make(1)
      assert.isFalse(waiting(semaphore))
      yield* semaphore.take(1)
      const waiter = yield* Effect.forkChild(semaphore.withPermits(1)(Effect.void))
      yield* Effect.yieldNow
      assert.isTrue(waiting(semaphore))
      yield* semaphore.release(1)
      yield* Fiber.join(waiter)
      assert.isFalse(waiting(semaphore))
    }))
})
