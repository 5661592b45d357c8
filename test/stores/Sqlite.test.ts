/**
 * The SQLite store (`Stores.layerSqlite`, on `node:sqlite`): the conformance suite on a file, the
 * `SqliteClient` as an `SqlClient` (transactions, rollback, streams), values as bytes (no base64),
 * data that survives reopening the file, and the artifacts policy (cap, expiry, sweep).
 */
import { afterAll, assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Stream } from "effect"
import { SqlClient } from "effect/sql"
import { TestClock } from "effect/testing"
import { mkdtempSync, rmSync } from "node:fs"
import { DatabaseSync } from "node:sqlite"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { StoreRegistry } from "../../src/runtime/StoreRegistry.ts"
import { SqliteClient, Stores } from "../../src/stores/index.ts"
import { truncateText } from "../../src/stores/internal/sqlBackend.ts"
import { storeConformance } from "../support/storeConformance.ts"

const dir = mkdtempSync(join(tmpdir(), "tinyagents-sqlite-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const shared = join(dir, "conformance.db")

// claims expire on the database's clock: tested in real time
storeConformance("sqlite (file)", () => Stores.layerSqlite({ filename: shared }), { claimsTime: "real" })

const store = (name: string) => StoreRegistry.use((registry) => registry.store(name))

describe("SqliteClient", () => {
  it.effect("is an SqlClient: statements, transactions that commit or roll back, streams", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* sql`CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, data BLOB, flag INTEGER)`
      yield* sql`INSERT INTO t ${sql.insert({ id: 1, name: "a", data: new Uint8Array([1, 2]), flag: true })}`
      yield* sql.withTransaction(sql`INSERT INTO t (id, name) VALUES (2, 'b')`)
      const failed = yield* Effect.flip(sql.withTransaction(Effect.gen(function*() {
        yield* sql`INSERT INTO t (id, name) VALUES (3, 'c')`
        return yield* Effect.fail("abort")
      })))
      assert.strictEqual(failed, "abort")
      const rows = yield* sql<{ id: number; name: string }>`SELECT id, name FROM t ORDER BY id`
      assert.deepStrictEqual(rows.map((r) => r.id), [1, 2], "the rolled-back insert is gone")
      const values = yield* sql`SELECT id, flag FROM t WHERE id = 1`.values
      assert.deepStrictEqual(values, [[1, 1]])
      const [row] = yield* sql<{ data: Uint8Array }>`SELECT data FROM t WHERE id = 1`
      assert.deepStrictEqual(Array.from(row!.data), [1, 2])
      const streamed = yield* Stream.runCollect(sql`SELECT id FROM t ORDER BY id`.stream)
      assert.deepStrictEqual(streamed.map((r) => (r as { id: number }).id), [1, 2])
      const error = yield* Effect.flip(sql`SELECT * FROM missing_table`)
      assert.strictEqual(error._tag, "SqlError")
      assert.isFalse(error.isRetryable)
    }).pipe(Effect.provide(SqliteClient.layer({ filename: ":memory:" }))))

  it.effect("a file is in WAL mode; a second process's write lock makes a statement wait, then fail as retryable", () =>
    Effect.gen(function*() {
      const filename = join(dir, "busy.db")
      const sql = yield* SqlClient.SqlClient
      const [mode] = yield* sql<{ journal_mode: string }>`PRAGMA journal_mode`
      assert.strictEqual(mode!.journal_mode, "wal")
      yield* sql`CREATE TABLE IF NOT EXISTS t (x INTEGER)`
      const other = new DatabaseSync(filename)
      other.exec("BEGIN IMMEDIATE")
      try {
        const error = yield* Effect.flip(sql`INSERT INTO t (x) VALUES (1)`)
        assert.strictEqual(error.reason._tag, "LockTimeoutError")
        assert.isTrue(error.isRetryable)
      } finally {
        other.exec("ROLLBACK")
        other.close()
      }
      yield* sql`INSERT INTO t (x) VALUES (1)`
    }).pipe(Effect.provide(SqliteClient.layer({ filename: join(dir, "busy.db"), busyTimeout: 50 }))))
})

describe("Stores.layerSqlite", () => {
  it.effect("claims expire on the database's clock: processes whose clocks disagree agree on a claim", () =>
    Effect.gen(function*() {
      const claims = yield* StoreRegistry.use((r) => r.claims(`skew-${Math.random().toString(36).slice(2)}`))
      // The TestClock starts at 0 (1970): this process's clock is decades behind the database's.
      assert.isTrue(yield* claims.acquire("k", "alice", 60_000))
      // 61 s later on the process clock alice's lease would have run out; not on the database's.
      yield* TestClock.adjust("61 seconds")
      assert.isFalse(yield* claims.acquire("k", "bob", 60_000), "alice still holds it on the database's clock")
      yield* claims.release("k", "alice")
      assert.isTrue(yield* claims.acquire("k", "bob", 60_000))
    }).pipe(Effect.provide(Stores.layerSqlite({ filename: shared }))))
  it.effect("what is written survives closing and reopening the file", () =>
    Effect.gen(function*() {
      const filename = join(dir, "restart.db")
      yield* Effect.gen(function*() {
        yield* (yield* store("notes")).set("k", "kept")
        assert.isTrue(yield* (yield* StoreRegistry.use((r) => r.claims("jobs"))).acquire("j", "first", 60_000))
      }).pipe(Effect.provide(Stores.layerSqlite({ filename })))
      yield* Effect.gen(function*() {
        assert.strictEqual(yield* (yield* store("notes")).get("k"), "kept")
        const claims = yield* StoreRegistry.use((r) => r.claims("jobs"))
        assert.isFalse(yield* claims.acquire("j", "second", 60_000), "the claim survives too")
      }).pipe(Effect.provide(Stores.layerSqlite({ filename })))
    }))

  it.effect("values are stored as bytes: a BLOB of the value's own size, no base64", () =>
    Effect.gen(function*() {
      const filename = join(dir, "bytes.db")
      const bytes = Uint8Array.from({ length: 100_000 }, (_, i) => (i * 7) & 0xff)
      yield* Effect.gen(function*() {
        yield* (yield* store("blobs")).set("b", bytes)
        yield* (yield* store("artifacts")).set("run/call", "é".repeat(50_000))
      }).pipe(Effect.provide(Stores.layerSqlite({ filename })))
      const db = new DatabaseSync(filename)
      try {
        const kv = db.prepare("SELECT typeof(value) AS type, length(value) AS size FROM tinyagents_store WHERE id = ?")
          .get("blobs/b") as { type: string; size: number }
        assert.deepStrictEqual({ ...kv }, { type: "blob", size: 100_000 })
        const artifact = db.prepare(
          "SELECT typeof(value) AS type, length(value) AS size FROM tinyagents_artifacts WHERE id = ?"
        ).get("artifacts/run/call") as { type: string; size: number }
        assert.deepStrictEqual({ ...artifact }, { type: "blob", size: 100_000 }, "UTF-8 bytes: 2 per é")
      } finally {
        db.close()
      }
    }))

  it.effect("a database that cannot be opened fails calls with StoreFailed (open); the layer itself builds", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(store("notes"))
      assert.strictEqual(error._tag, "StoreFailed")
      assert.strictEqual(error.operation, "open")
    }).pipe(Effect.provide(Stores.layerSqlite({ filename: join(dir, "no-such-dir", "x.db") }))))
})

describe("artifacts policy", () => {
  const layer = () =>
    Stores.layerSqlite({
      filename: join(dir, `artifacts-${Math.random().toString(36).slice(2)}.db`),
      artifacts: { maxBytes: 1_024, ttl: "1 hour", sweepEvery: "1 minute" }
    })

  it.effect("text over the cap is kept truncated to the cap, with a note; bytes over the cap are refused", () =>
    Effect.gen(function*() {
      const artifacts = yield* store("artifacts")
      yield* artifacts.set("big", "😀".repeat(1_000))
      const kept = (yield* artifacts.get("big"))!
      assert.isAtMost(Buffer.byteLength(kept), 1_024)
      assert.match(kept, /^(?:😀)+\n\[truncated by the artifact store: 4000 bytes, cap 1024\]\n$/u)
      const refused = yield* Effect.flip(artifacts.set("bin", new Uint8Array(1_025)))
      assert.strictEqual(refused._tag, "KeyValueStoreError")
      assert.match(refused.message, /over the cap of 1024 bytes/)
      assert.isFalse(yield* artifacts.has("bin"))
      yield* artifacts.set("small", new Uint8Array(1_024))
      assert.strictEqual((yield* artifacts.getUint8Array("small"))?.length, 1_024)
    }).pipe(Effect.provide(layer())))

  it("a cap below the minimum (room for the truncation note) is refused when the layer is made", () => {
    for (const maxBytes of [20, 0, -1, 1_023, 1.5, Number.NaN]) {
      assert.throws(
        () => Stores.layerSqlite({ filename: join(dir, "never.db"), artifacts: { maxBytes } }),
        RangeError,
        /at least 1024 bytes/
      )
    }
    assert.doesNotThrow(() => Stores.layerSqlite({ filename: join(dir, "never.db"), artifacts: { maxBytes: 1_024 } }))
  })

  it("truncated text never exceeds the cap, even a cap smaller than the note", () => {
    for (const cap of [0, 1, 20, 54, 80, 1_024]) {
      const out = truncateText("é".repeat(2_000), cap)
      assert.isAtMost(out.length, cap, `cap ${cap}`)
    }
    assert.match(new TextDecoder().decode(truncateText("x".repeat(2_000), 1_024)), /\[truncated by the artifact store: 2000 bytes, cap 1024\]\n$/)
  })

  it.effect("expired artifacts are not readable, and a later write sweeps them out", () =>
    Effect.gen(function*() {
      const artifacts = yield* store("artifacts")
      yield* artifacts.set("old", "first")
      yield* TestClock.adjust("30 minutes")
      yield* artifacts.set("newer", "second")
      assert.deepStrictEqual([...(yield* artifacts.keys)].sort(), ["newer", "old"])
      yield* TestClock.adjust("31 minutes")
      assert.strictEqual(yield* artifacts.get("old"), undefined, "expired")
      assert.isFalse(yield* artifacts.has("old"))
      assert.strictEqual(yield* artifacts.get("newer"), "second")
      assert.deepStrictEqual(yield* artifacts.keys, ["newer"])
      yield* artifacts.set("trigger", "sweep")
      const sql = yield* SqlClient.SqlClient
      const rows = yield* sql<{ id: string }>`SELECT id FROM tinyagents_artifacts ORDER BY id`
      assert.deepStrictEqual(rows.map((r) => r.id), ["artifacts/newer", "artifacts/trigger"], "the sweep deleted it")
      const other = yield* store("notes")
      yield* other.set("old", "other stores do not expire")
      yield* TestClock.adjust("2 hours")
      assert.strictEqual(yield* other.get("old"), "other stores do not expire")
    }).pipe(Effect.provide(Layer.unwrap(Effect.sync(() => {
      const filename = join(dir, `sweep-${Math.random().toString(36).slice(2)}.db`)
      return Layer.merge(
        Stores.layerSqlite({ filename, artifacts: { maxBytes: 1_024, ttl: "1 hour", sweepEvery: "1 minute" } }),
        SqliteClient.layer({ filename })
      )
    })))))
})
