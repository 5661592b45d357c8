/**
 * The SQLite store (`Stores.layerSqlite`, on `node:sqlite`): the conformance suite on a file, the
 * `SqliteClient` as an `SqlClient` (transactions, rollback, streams), values as bytes (no base64),
 * data that survives reopening the file, the artifacts policy (cap, expiry, sweep), another
 * connection's write lock waited for without blocking the event loop, writes with a ttl swept out of
 * the table, and a database made by an older version upgraded in place.
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
import { withTtl } from "../../src/internal/expiry.ts"
import { truncateText } from "../../src/stores/internal/sqlBackend.ts"
import { storeConformance } from "../support/storeConformance.ts"

const dir = mkdtempSync(join(tmpdir(), "tinyagents-sqlite-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const shared = join(dir, "conformance.db")

// claims expire on the database's clock: tested in real time
storeConformance("sqlite (file)", () => Stores.layerSqlite({ filename: shared }), { claimsTime: "real", expiry: "clock" })

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

  it.effect("a file syncs at checkpoints (synchronous NORMAL) by default, at every commit with synchronous: \"full\"", () =>
    Effect.gen(function*() {
      const level = (synchronous?: "normal" | "full") =>
        Effect.flatMap(SqlClient.SqlClient, (sql) => sql<{ synchronous: number }>`PRAGMA synchronous`).pipe(
          Effect.map((rows) => rows[0]!.synchronous),
          Effect.provide(SqliteClient.layer({ filename: join(dir, `sync-${synchronous}.db`), synchronous }))
        )
      assert.strictEqual(yield* level(), 1) // NORMAL
      assert.strictEqual(yield* level("normal"), 1)
      assert.strictEqual(yield* level("full"), 2) // FULL
    }))
})

describe("a write lock held by another connection", () => {
  /**
   * Holds the write lock of `filename` from another connection (as another process would) for
   * `millis`, counting the ticks of a 10 ms timer meanwhile; `ticks()` is how many fired. A blocked
   * event loop fires such a timer once when it is free again (no catch-up), so a handful of ticks
   * tells a wait that yields from one that blocks, even on a loaded machine (40 would fire on an idle one).
   */
  const holdLock = (filename: string, millis: number) =>
    Effect.acquireRelease(
      Effect.sync(() => {
        const other = new DatabaseSync(filename)
        other.exec("BEGIN IMMEDIATE")
        let count = 0
        const interval = setInterval(() => count++, 10)
        const release = setTimeout(() => other.exec("COMMIT"), millis)
        return { other, interval, release, ticks: () => count }
      }),
      ({ interval, other, release }) =>
        Effect.sync(() => {
          clearInterval(interval)
          clearTimeout(release)
          if (other.isTransaction) other.exec("ROLLBACK")
          other.close()
        })
    )
  const fresh = () => join(dir, `lock-${Math.random().toString(36).slice(2)}.db`)

  it.live("a write waits without blocking the event loop (timers fire), and succeeds once the lock is released", () => {
    const filename = fresh()
    return Effect.gen(function*() {
      const notes = yield* store("notes")
      yield* notes.set("warm", "up") // opened, tables created
      const lock = yield* holdLock(filename, 400)
      const started = Date.now()
      yield* notes.set("k", "v")
      const waited = Date.now() - started
      assert.isAtLeast(waited, 350, "it waited for the lock")
      assert.isAtLeast(lock.ticks(), 5, `a 10 ms timer kept firing while it waited (${lock.ticks()} ticks in ${waited} ms)`)
      assert.strictEqual(yield* notes.get("k"), "v")
    }).pipe(Effect.scoped, Effect.provide(Stores.layerSqlite({ filename, busyTimeout: 5_000 })))
  }, 20_000)

  it.live("a transaction (BEGIN IMMEDIATE) waits the same way, then commits; a lock held past busyTimeout fails retryably", () => {
    const filename = fresh()
    return Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* sql`CREATE TABLE t (x INTEGER)`
      const lock = yield* holdLock(filename, 400)
      yield* sql.withTransaction(Effect.andThen(sql`INSERT INTO t (x) VALUES (1)`, sql`INSERT INTO t (x) VALUES (2)`))
      assert.isAtLeast(lock.ticks(), 5, `a 10 ms timer kept firing while it waited (${lock.ticks()} ticks)`)
      const rows = yield* sql<{ x: number }>`SELECT x FROM t ORDER BY x`
      assert.deepStrictEqual(rows.map((r) => r.x), [1, 2])
      const held = yield* holdLock(filename, 60_000)
      const started = Date.now()
      const error = yield* Effect.flip(sql`INSERT INTO t (x) VALUES (3)`)
      assert.isAtLeast(Date.now() - started, 900, "it waited up to busyTimeout")
      assert.isAtLeast(held.ticks(), 10, "without blocking the event loop")
      assert.strictEqual(error.reason._tag, "LockTimeoutError")
      assert.isTrue(error.isRetryable)
    }).pipe(Effect.scoped, Effect.provide(SqliteClient.layer({ filename, busyTimeout: 1_000 })))
  }, 20_000)
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

describe("writes with a ttl (idempotency results)", () => {
  it.effect("are deleted from the table by a later write's sweep (at most once a minute), in any store", () => {
    const filename = join(dir, `ttl-${Math.random().toString(36).slice(2)}.db`)
    return Effect.gen(function*() {
      const notes = yield* store("notes")
      const results = yield* store("idempotency")
      const sql = yield* SqlClient.SqlClient
      const count = Effect.map(sql<{ n: number }>`SELECT count(*) AS n FROM tinyagents_store`, (rows) => Number(rows[0]!.n))
      yield* withTtl(results, "1 hour").set("tool/a", "result a")
      yield* withTtl(notes, "2 hours").set("n", "note")
      yield* notes.set("kept", "for ever")
      assert.strictEqual(yield* count, 3)
      yield* TestClock.adjust("61 minutes")
      assert.strictEqual(yield* results.get("tool/a"), undefined, "expired: unreadable at once")
      yield* notes.set("trigger", "a write sweeps")
      assert.strictEqual(yield* count, 3, "the expired row is gone: kept, n, trigger")
      yield* TestClock.adjust("61 minutes")
      yield* results.set("other", "x")
      assert.strictEqual(yield* count, 3, "kept, trigger, other")
      assert.deepStrictEqual([...(yield* notes.keys)].sort(), ["kept", "trigger"])
    }).pipe(Effect.provide(Layer.merge(Stores.layerSqlite({ filename }), SqliteClient.layer({ filename }))))
  })

  it.effect("a database made before the expiry column is upgraded in place: its data stays, ttl writes work", () => {
    const filename = join(dir, `old-${Math.random().toString(36).slice(2)}.db`)
    const old = new DatabaseSync(filename)
    // the table as Effect's KeyValueStore.layerSql made it, with a row in it
    old.exec("CREATE TABLE tinyagents_store (id TEXT PRIMARY KEY, value BLOB NOT NULL, value_type INTEGER NOT NULL)")
    old.exec("CREATE TABLE tinyagents_artifacts (id TEXT PRIMARY KEY, value BLOB NOT NULL, value_type SMALLINT NOT NULL, size BIGINT NOT NULL, created_at BIGINT NOT NULL, expires_at BIGINT)")
    old.prepare("INSERT INTO tinyagents_store (id, value, value_type) VALUES (?, ?, 0)").run("notes/old", Buffer.from("from before"))
    old.close()
    return Effect.gen(function*() {
      const notes = yield* store("notes")
      assert.strictEqual(yield* notes.get("old"), "from before")
      yield* withTtl(notes, "1 second").set("short", "lived")
      assert.deepStrictEqual([...(yield* notes.keys)].sort(), ["old", "short"])
      yield* TestClock.adjust("2 seconds")
      assert.deepStrictEqual([...(yield* notes.keys)], ["old"])
      const long = "é".repeat(1_000)
      yield* notes.set(long, "long key")
      assert.strictEqual(yield* notes.get(long), "long key")
      const artifacts = yield* store("artifacts")
      yield* artifacts.set(long, "long artifact key")
      assert.deepStrictEqual([...(yield* artifacts.keys)], [long])
    }).pipe(Effect.provide(Stores.layerSqlite({ filename })))
  })
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
