/**
 * `StoreFailed` says what happens next: retryable for a transient cause (connection refused or
 * dropped, timeouts, SQLITE_BUSY, Postgres shutting down), fatal otherwise and for a misconfiguration
 * anywhere in the cause (a wrong password, an unknown database, an invalid URL); it round-trips through
 * the wire JSON; and neither its message nor its JSON ever carries the key or the value being stored.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { SqlClient, SqlError } from "effect/sql"
import { mkdtempSync, rmSync } from "node:fs"
import { DatabaseSync } from "node:sqlite"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { ToolError } from "../../src/index.ts"
import { StoreRegistry } from "../../src/runtime/StoreRegistry.ts"
import { SqliteClient, Stores } from "../../src/stores/index.ts"

const encode = Schema.encodeUnknownSync(ToolError.ToolError)
const decode = Schema.decodeUnknownSync(ToolError.ToolError)
const failed = (cause: unknown) => new ToolError.StoreFailed({ store: "notes", operation: "write", cause })
const SECRET = "sk-live-planted-secret-9876"
const SECRET_KEY = "key-planted-secret-5432"

describe("StoreFailed", () => {
  it("is retryable for transient causes, at any depth, and fatal otherwise", () => {
    const transient = [
      Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" }),
      { code: "ECONNRESET" },
      { code: "57P01", message: "terminating connection due to administrator command" },
      { code: "SQLITE_BUSY" },
      { _tag: "TimeoutError" },
      new SqlError.SqlError({ reason: new SqlError.ConnectionError({ cause: new Error("Connection closed") }) }),
      new SqlError.SqlError({ reason: new SqlError.LockTimeoutError({ cause: { errcode: 5 } }) }),
      { _tag: "KeyValueStoreError", cause: { _tag: "SqlError", reason: { _tag: "ConnectionError" } } },
      { name: "ReconnectStrategyError", originalError: Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" }) }
    ]
    for (const cause of transient) {
      const error = failed(cause)
      assert.strictEqual(error.disposition, "retry", JSON.stringify(cause))
      assert.isTrue(error.retryable)
      assert.match(error.message, /unavailable for now/)
    }
    const fatal = [
      "invalid store name",
      new Error("ENOSPC"),
      new SqlError.SqlError({ reason: new SqlError.SqlSyntaxError({ cause: new Error("syntax error") }) }),
      { code: "23505" },
      // misconfigurations, even inside a cause that says "retryable"
      new SqlError.SqlError({
        reason: new SqlError.ConnectionError({ cause: Object.assign(new TypeError("Invalid URL"), { code: "ERR_INVALID_URL" }) })
      }),
      { isRetryable: true, cause: { code: "28P01", message: "password authentication failed for user \"app\"" } },
      { _tag: "ConnectionError", cause: { code: "3D000", message: "database \"app\" does not exist" } },
      { code: "28000", message: "role \"app\" does not exist" },
      // node-redis's ReconnectStrategyError: why it gave up
      { name: "ReconnectStrategyError", originalError: new Error("WRONGPASS invalid username-password pair") },
      { _tag: "RedisUnavailable", isRetryable: true, cause: new Error("NOAUTH Authentication required.") }
    ]
    for (const cause of fatal) assert.strictEqual(failed(cause).disposition, "fatal", JSON.stringify(cause))
    assert.strictEqual(
      new ToolError.StoreFailed({ store: "s", operation: "read", cause: { code: "ECONNRESET" }, retryable: false }).disposition,
      "fatal",
      "an explicit retryable wins"
    )
  })

  it("the wire JSON keeps the disposition: a retryable error decodes retryable; old JSON decodes fatal", () => {
    const encoded = encode(failed({ code: "ECONNREFUSED" })) as Record<string, unknown>
    assert.strictEqual(encoded["disposition"], "retry")
    assert.strictEqual(encoded["retryable"], true)
    const back = decode(JSON.parse(JSON.stringify(encoded))) as ToolError.StoreFailed
    assert.strictEqual(back.disposition, "retry")
    const old = decode({ _tag: "StoreFailed", store: "a", operation: "write", cause: "disk gone" }) as ToolError.StoreFailed
    assert.strictEqual(old.disposition, "fatal")
    assert.notProperty(encode(failed("bad")), "retryable", "a fatal error's JSON is as before")
  })

  it.effect("a failed SQLite write: fatal for a broken schema, retryable while another process holds the lock; the key and the value never appear", () =>
    Effect.gen(function*() {
      const dir = mkdtempSync(join(tmpdir(), "tinyagents-storefailed-"))
      const filename = join(dir, "s.db")
      try {
        yield* Effect.gen(function*() {
          const notes = yield* StoreRegistry.use((r) => r.store("notes"))
          yield* notes.set("ok", "fine")
          const other = new DatabaseSync(filename)
          other.exec("BEGIN IMMEDIATE")
          const busy = yield* Effect.flip(notes.set(SECRET_KEY, SECRET))
          other.exec("ROLLBACK")
          const sql = yield* SqlClient.SqlClient
          yield* sql`DROP TABLE tinyagents_store`
          yield* sql`DROP TABLE tinyagents_claims`
          const broken = yield* Effect.flip(notes.set(SECRET_KEY, SECRET))
          const modified = yield* Effect.flip(notes.modify(SECRET_KEY, () => SECRET))
          const read = yield* Effect.flip(notes.get(SECRET_KEY))
          const claims = yield* StoreRegistry.use((r) => r.claims("notes"))
          const claimFailed = yield* Effect.flip(claims.acquire(SECRET_KEY, SECRET, 1_000))
          other.close()
          const busyFailed = failed(busy)
          const brokenFailed = failed(broken)
          assert.strictEqual(busyFailed.disposition, "retry")
          assert.strictEqual(brokenFailed.disposition, "fatal")
          for (const error of [busyFailed, brokenFailed, failed(modified), failed(read), claimFailed]) {
            for (const secret of [SECRET, SECRET_KEY]) {
              assert.notInclude(error.message, secret)
              assert.notInclude(JSON.stringify(encode(error)), secret)
            }
          }
        }).pipe(
          Effect.provide(Stores.layerSqlite({ filename, busyTimeout: 20 })),
          Effect.provide(SqliteClient.layer({ filename }))
        )
      } finally {
        rmSync(dir, { recursive: true, force: true })
      }
    }))
})
