/**
 * The SQLite stores' held statements (`src/stores/internal/sqliteHeld.ts`): writes of concurrent
 * fibers are committed together, and a caller resumes only once its write is committed (another
 * connection, as another process, sees it); a statement refused alone fails its own caller only; an
 * error that ends the transaction fails every write of the group and commits none; a write
 * interrupted before its group's transaction began is never run.
 */
import { afterAll, assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { DatabaseSync } from "node:sqlite"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { StoreRegistry } from "../../src/runtime/StoreRegistry.ts"
import { Stores } from "../../src/stores/index.ts"

const dir = mkdtempSync(join(tmpdir(), "tinyagents-sqlite-group-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const fresh = () => join(dir, `group-${Math.random().toString(36).slice(2)}.db`)

const notesStore = StoreRegistry.use((registry) => registry.store("notes"))

/** Another connection to `filename` (as another process would open it), closed with the scope. */
const other = (filename: string) =>
  Effect.acquireRelease(Effect.sync(() => new DatabaseSync(filename)), (db) => Effect.sync(() => db.close()))

/** Whether `db` sees the note `key`, committed. */
const sees = (db: DatabaseSync, key: string): boolean =>
  db.prepare("SELECT 1 FROM tinyagents_store WHERE id = ?").get(`notes/${key}`) !== undefined

describe("SQLite store writes, group-committed", () => {
  it.live("concurrent writes and claims: each caller resumes once its write is committed (another connection sees it)", () => {
    const filename = fresh()
    return Effect.gen(function*() {
      const notes = yield* notesStore
      const claims = yield* StoreRegistry.use((registry) => registry.claims("notes"))
      yield* notes.set("warm", "up") // opened, tables created
      const db = yield* other(filename)
      const seen = yield* Effect.forEach(Array.from({ length: 64 }, (_, i) => i), (i) =>
        Effect.gen(function*() {
          yield* notes.set(`k${i}`, `v${i}`)
          const stored = sees(db, `k${i}`)
          const mine = yield* claims.acquire(`c${i}`, `owner-${i}`, 30_000)
          const claimed = db.prepare("SELECT owner FROM tinyagents_claims WHERE id = ?").get(`notes/c${i}`)
          yield* claims.release(`c${i}`, `owner-${i}`)
          const released = db.prepare("SELECT 1 FROM tinyagents_claims WHERE id = ?").get(`notes/c${i}`) === undefined
          return stored && mine && claimed?.["owner"] === `owner-${i}` && released
        }), { concurrency: "unbounded" })
      assert.deepStrictEqual(seen.filter((ok) => !ok).length, 0)
      assert.strictEqual(yield* notes.get("k63"), "v63")
      assert.strictEqual(yield* notes.size, 65)
    }).pipe(Effect.scoped, Effect.provide(Stores.layerSqlite({ filename })))
  })

  it.live("a write refused on its own fails only its caller; the others of its group are committed", () => {
    const filename = fresh()
    return Effect.gen(function*() {
      const notes = yield* notesStore
      yield* notes.set("warm", "up")
      const db = yield* other(filename)
      db.exec(`CREATE TRIGGER refuse BEFORE INSERT ON tinyagents_store WHEN NEW.id LIKE 'notes/refused%'
        BEGIN SELECT RAISE(ABORT, 'refused by a trigger'); END`)
      const keys = Array.from({ length: 32 }, (_, i) => i % 4 === 0 ? `refused-${i}` : `kept-${i}`)
      const exits = yield* Effect.forEach(keys, (key) => Effect.exit(notes.set(key, "secret-value")), {
        concurrency: "unbounded"
      })
      keys.forEach((key, i) => {
        const exit = exits[i]!
        if (key.startsWith("refused")) {
          assert.isTrue(Exit.isFailure(exit), key)
          assert.isFalse(sees(db, key))
          assert.notInclude(JSON.stringify(Exit.isFailure(exit) ? exit.cause : ""), "secret-value")
        } else {
          assert.isTrue(Exit.isSuccess(exit), key)
          assert.isTrue(sees(db, key), key)
        }
      })
    }).pipe(Effect.scoped, Effect.provide(Stores.layerSqlite({ filename })))
  })

  it.live("an error that ends the transaction: no caller is told of a write that is not committed; later writes work", () => {
    const filename = fresh()
    return Effect.gen(function*() {
      const notes = yield* notesStore
      yield* notes.set("warm", "up")
      const db = yield* other(filename)
      db.exec(`CREATE TRIGGER doom BEFORE INSERT ON tinyagents_store WHEN NEW.id = 'notes/doomed'
        BEGIN SELECT RAISE(ROLLBACK, 'the whole transaction rolled back'); END`)
      const keys = Array.from({ length: 32 }, (_, i) => i === 5 ? "doomed" : `k${i}`)
      const exits = yield* Effect.forEach(keys, (key) => Effect.exit(notes.set(key, "v")), { concurrency: "unbounded" })
      assert.isTrue(Exit.isFailure(exits[5]!))
      keys.forEach((key, i) => assert.strictEqual(sees(db, key), Exit.isSuccess(exits[i]!), key))
      yield* notes.set("after", "v")
      assert.isTrue(sees(db, "after"))
    }).pipe(Effect.scoped, Effect.provide(Stores.layerSqlite({ filename })))
  })

  it.live("a write interrupted while its group waits for another process's lock is never run", () => {
    const filename = fresh()
    return Effect.gen(function*() {
      const notes = yield* notesStore
      yield* notes.set("warm", "up")
      const db = yield* other(filename)
      db.exec("BEGIN IMMEDIATE") // another process holds the write lock
      const gone = yield* Effect.forkChild(notes.set("gone", "v"))
      yield* Effect.sleep("50 millis")
      const started = Date.now()
      yield* Fiber.interrupt(gone)
      assert.isBelow(Date.now() - started, 40, "the interrupted write did not wait for the lock")
      const kept = yield* Effect.forkChild(notes.set("kept", "v"))
      yield* Effect.sleep("50 millis")
      db.exec("COMMIT")
      yield* Fiber.join(kept)
      assert.isTrue(sees(db, "kept"))
      assert.isFalse(sees(db, "gone"))
      assert.isUndefined(yield* notes.get("gone"))
    }).pipe(Effect.scoped, Effect.provide(Stores.layerSqlite({ filename, busyTimeout: 5_000 })))
  })
})
