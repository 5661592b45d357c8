/**
 * The Postgres store (`Postgres.layer`, `@effect/sql-pg`): the conformance suite against PGlite
 * served on a loopback socket (always) and against a real `postgres` server when the machine has
 * one; values as BYTEA of their own size; a server stopped and restarted mid-run fails the calls in
 * between with a retryable `StoreFailed` and serves later calls; keys over Postgres's index limit (a
 * 12 KB idempotency id); failed operations whose errors hold no key or value; a wrong password, an
 * unknown role or database, an invalid URL: a fatal `StoreFailed`, never "retry later".
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Context, Effect, Layer, Redacted, Schema } from "effect"
import { PgClient } from "@effect/sql-pg"
import { SqlClient } from "effect/sql"
import { TestClock } from "effect/testing"
import { RateLimiter } from "effect/persistence"
import { Executor, Tool, ToolError, ToolRegistry, ToolServices } from "../../src/index.ts"
import { StoreRegistry } from "../../src/runtime/StoreRegistry.ts"
import * as Postgres from "../../src/stores/Postgres.ts"
import type { PgliteServer, PostgresServer } from "../support/postgres.ts"
import { postgresSkipReason, startPglite, startPostgres } from "../support/postgres.ts"
import { storeConformance } from "../support/storeConformance.ts"

let pglite: PgliteServer | undefined
let real: PostgresServer | undefined
beforeAll(async () => {
  pglite = await startPglite()
  if (postgresSkipReason === undefined) real = await startPostgres()
}, 60_000)
afterAll(async () => {
  await pglite?.stop()
  real?.destroy()
})

/** PGlite is one session behind its socket (connections interleave in it), so its pool has one connection. */
const layerOf = (url: () => string | undefined, maxConnections: number) => () =>
  Postgres.layer({ url: Redacted.make(url()!), maxConnections, connectTimeout: "2 seconds" })

storeConformance("postgres via PGlite", layerOf(() => pglite?.url, 1), {
  largeValueBytes: 1024 * 1024,
  claimsTime: "real",
  expiry: "clock"
})
storeConformance("postgres (real server)", layerOf(() => real?.url, 4), {
  skip: postgresSkipReason,
  claimsTime: "real",
  expiry: "clock"
})

const store = (name: string) => StoreRegistry.use((registry) => registry.store(name))


const claimsOf = (name: string) => StoreRegistry.use((registry) => registry.claims(name))
const SECRET = "sk-live-planted-secret-4242"

/** A keyed write tool: the executor stores its result under its key (the `idempotency` store) and claims the key. */
const makeCharge = () => {
  const probe = { applied: 0 }
  const charge = Tool.make("charge_card", {
    description: "Charges a card once per request id.",
    input: Schema.Struct({ requestId: Schema.String, cents: Schema.Int }),
    output: Schema.Struct({ chargeId: Schema.String, note: Schema.String }),
    safety: { access: "write" },
    idempotency: ({ requestId }) => requestId,
    handler: () => Effect.sync(() => ({ chargeId: `ch_${++probe.applied}`, note: SECRET }))
  })
  return { charge, probe }
}
const call = (id: string, requestId: string) => ({ id, name: "charge_card", arguments: { requestId, cents: 5 } })

describe("Postgres.layer claims", () => {
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
    }).pipe(Effect.provide(Layer.suspend(layerOf(() => pglite?.url, 1)))))
})

describe("long keys on Postgres (over the 2,704-byte index row limit)", () => {
  const longId = (seed: string) =>
    Array.from({ length: 2_000 }, (_, i) => `${seed}${(i * 7_919 % 1_000_003).toString(36)}`).join("").slice(0, 12_000)

  it.live("a keyed call whose idempotency id is 12 KB runs once and replays; the registry stores such keys", () =>
    Effect.gen(function*() {
      const { charge, probe } = makeCharge()
      const executor = yield* Executor.make(yield* ToolRegistry.make([charge]))
      const id = longId("r")
      const first = yield* executor.run(call("c1", id))
      assert.isFalse(first.isError, first.error?.message)
      const again = yield* executor.run(call("c2", id))
      assert.isTrue(again.idempotency?.replayed)
      assert.strictEqual(probe.applied, 1)
      const other = yield* executor.run(call("c3", `${id}x`))
      assert.isFalse(other.idempotency?.replayed, "a key that differs only at its end is another key")
      assert.strictEqual(probe.applied, 2)
      const notes = yield* store("notes")
      yield* notes.set(longId("n"), "v")
      assert.strictEqual(yield* notes.get(longId("n")), "v")
    }).pipe(
      Effect.provide(layerOf(() => pglite?.url, 1)()),
      Effect.provide(ToolServices.layerTest({ runId: "run-long", threadId: "t" }))
    ), 60_000)
})

describe.skipIf(postgresSkipReason !== undefined)(
  `a failed Postgres operation's StoreFailed holds neither its key nor its value${postgresSkipReason === undefined ? "" : ` (skipped: ${postgresSkipReason})`}`,
  () => {
    it.live("tables dropped under a running layer: set, get, modify, claim fail; no key or value in their message or JSON", () =>
      Effect.gen(function*() {
        const database = `scrub_${process.pid}_${Date.now()}`
        yield* Effect.scoped(Effect.gen(function*() {
          const context = yield* Layer.build(PgClient.layer({ url: Redacted.make(real!.url) }))
          yield* Context.get(context, SqlClient.SqlClient).unsafe(`CREATE DATABASE ${database}`)
        }))
        const url = real!.url.replace(/\/[^/]*$/, `/${database}`)
        const key = `key-${SECRET}-${"k".repeat(3_000)}`
        yield* Effect.gen(function*() {
          const notes = yield* store("notes")
          yield* notes.set("warm", "up")
          const claims = yield* claimsOf("notes")
          const sql = yield* SqlClient.SqlClient
          yield* sql`DROP TABLE tinyagents_store`
          yield* sql`DROP TABLE tinyagents_claims`
          const errors = [
            yield* Effect.flip(notes.set(key, SECRET)),
            yield* Effect.flip(notes.get(key)),
            yield* Effect.flip(notes.modify(key, () => SECRET)),
            yield* Effect.flip(notes.remove(key))
          ].map((cause) => new ToolError.StoreFailed({ store: "notes", operation: "write", cause }))
          const claimFailed = yield* Effect.flip(claims.acquire(key, SECRET, 1_000))
          for (const error of [...errors, claimFailed]) {
            const encoded = JSON.stringify(Schema.encodeUnknownSync(ToolError.ToolError)(error))
            assert.notInclude(encoded, SECRET)
            assert.notInclude(error.message, SECRET)
            assert.isBelow(encoded.length, 3_000, "no long text either")
          }
        }).pipe(
          Effect.provide(Layer.merge(
            Postgres.layer({ url: Redacted.make(url), maxConnections: 2 }),
            PgClient.layer({ url: Redacted.make(url), maxConnections: 1 })
          ))
        )
      }), 60_000)
  }
)

describe.skipIf(postgresSkipReason !== undefined)(
  `a real Postgres server stopped and restarted mid-run${postgresSkipReason === undefined ? "" : ` (skipped: ${postgresSkipReason})`}`,
  () => {
    it.live("calls while it is down fail with a retryable StoreFailed; later calls succeed; no value leaks", () =>
      Effect.gen(function*() {
        const server = real!
        const { charge, probe } = makeCharge()
        const executor = yield* Executor.make(yield* ToolRegistry.make([charge]))
        const first = yield* executor.run(call("c1", "r1"))
        assert.strictEqual(probe.applied, 1)
        const notes = yield* store("notes")
        yield* notes.set("k", SECRET)

        server.stop()
        // a retryable error is the call's result (shown to the model) rather than a failure of the run
        const outcome = yield* Effect.result(executor.run(call("c2", "r2")))
        const failed = outcome._tag === "Failure" ? outcome.failure : outcome.success.error!
        assert.strictEqual(failed._tag, "StoreFailed")
        assert.strictEqual(failed.disposition, "retry")
        assert.strictEqual(probe.applied, 1, "the handler does not run without the store")
        const claims = yield* claimsOf("jobs")
        const claimFailed = yield* Effect.flip(claims.acquire("j", "me", 60_000))
        assert.strictEqual(claimFailed.disposition, "retry")
        const writeFailed = yield* Effect.flip(notes.set("k2", SECRET))
        const wrapped = new ToolError.StoreFailed({ store: "notes", operation: "write", cause: writeFailed })
        assert.strictEqual(wrapped.disposition, "retry")
        for (const error of [failed, claimFailed, wrapped]) {
          const encoded = JSON.stringify(Schema.encodeUnknownSync(ToolError.ToolError)(error))
          assert.notInclude(encoded, SECRET)
          assert.notInclude(error.message, SECRET)
          assert.include(encoded, '"disposition":"retry"')
          assert.include(encoded, '"retryable":true')
        }

        server.start()
        const replay = yield* executor.run(call("c3", "r1"))
        assert.isTrue(replay.idempotency?.replayed, "the stored result is still there")
        assert.deepStrictEqual(replay.value, first.value)
        const fresh = yield* executor.run(call("c4", "r2"))
        assert.strictEqual(probe.applied, 2)
        assert.isFalse(fresh.idempotency?.replayed)
        assert.strictEqual(yield* notes.get("k"), SECRET)
        assert.isTrue(yield* claims.acquire("j", "me", 60_000))
      }).pipe(
        Effect.ensuring(Effect.sync(() => real!.start())),
        // the Postgres stores inside the test services (which bring a memory registry)
        Effect.provide(layerOf(() => real?.url, 4)()),
        Effect.provide(ToolServices.layerTest({ runId: "run-restart", threadId: "t" }))
      ), 60_000)

    it.live("a server down when the layer is built: calls fail retryably (no defect) until it is up", () =>
      Effect.gen(function*() {
        const server = real!
        server.stop()
        try {
          const opened = yield* Effect.exit(store("notes"))
          assert.strictEqual(opened._tag, "Failure")
          const error = yield* Effect.flip(store("notes"))
          assert.strictEqual(error.operation, "open")
          assert.strictEqual(error.disposition, "retry")
          const limited = yield* Effect.flip(
            RateLimiter.RateLimiter.use((limiter) => limiter.consume({ key: "k", limit: 1, window: "1 minute" }))
          )
          assert.strictEqual(limited.reason._tag, "RateLimitStoreError")
        } finally {
          server.start()
        }
        yield* (yield* store("notes")).set("after", "up")
        assert.strictEqual(yield* (yield* store("notes")).get("after"), "up")
      }).pipe(Effect.provide(layerOf(() => real?.url, 4)())), 60_000)
  }
)

/** The README's Postgres example, run twice as its own process against `url`: the second run replays the first's result. */
const runExampleTwice = async (url: string) => {
  const { spawnSync } = await import("node:child_process")
  const { fileURLToPath } = await import("node:url")
  const repo = fileURLToPath(new URL("../..", import.meta.url))
  const runExample = () =>
    spawnSync(process.execPath, ["--conditions=tinyagents-source", "scratchpad/stores-postgres.ts"], {
      cwd: repo,
      encoding: "utf8",
      timeout: 30_000,
      env: { ...process.env, DATABASE_URL: url }
    })
  const first = runExample()
  const second = runExample()
  assert.strictEqual(first.status, 0, first.stderr)
  assert.strictEqual(second.status, 0, second.stderr)
  const pidOf = (out: string) => /"pid":(\d+)/.exec(out)?.[1]
  assert.include(second.stdout, "replayed: true")
  assert.isDefined(pidOf(second.stdout))
  assert.strictEqual(pidOf(second.stdout), pidOf(first.stdout), "the second run answered with the first process's result")
}

// Not against PGlite: the example's pool has 10 connections, and PGlite is one session behind its socket.
describe("the README's Postgres example (scratchpad/stores-postgres.ts)", () => {
  it.skipIf(postgresSkipReason !== undefined)(
    `run twice against a real Postgres server: the second process replays the first's result${postgresSkipReason === undefined ? "" : ` (skipped: ${postgresSkipReason})`}`,
    () => runExampleTwice(real!.url),
    60_000
  )
})

describe.skipIf(postgresSkipReason !== undefined)(
  `several processes opening a fresh database at once${postgresSkipReason === undefined ? "" : ` (skipped: ${postgresSkipReason})`}`,
  () => {
    it.live("six store layers create the tables together: every first use succeeds (no catalog race)", () =>
      Effect.gen(function*() {
        const database = `fresh_${process.pid}_${Date.now()}`
        // a new, empty database on the real server
        yield* Effect.scoped(Effect.gen(function*() {
          const context = yield* Layer.build(PgClient.layer({ url: Redacted.make(real!.url) }))
          const sql = Context.get(context, SqlClient.SqlClient)
          yield* sql.unsafe(`CREATE DATABASE ${database}`)
        }))
        const url = real!.url.replace(/\/[^/]*$/, `/${database}`)
        const openers = Array.from({ length: 6 }, (_, i) =>
          Effect.scoped(Effect.gen(function*() {
            const context = yield* Layer.build(Postgres.layer({ url: Redacted.make(url), maxConnections: 2 }))
            const notes = yield* Effect.provide(store("notes"), context)
            yield* notes.set(`from-${i}`, "ok")
            const claims = yield* Effect.provide(claimsOf("idempotency"), context)
            return yield* claims.acquire("shared", `owner-${i}`, 60_000)
          })))
        const won = yield* Effect.all(openers, { concurrency: "unbounded" })
        assert.strictEqual(won.filter((w) => w).length, 1, "exactly one opener holds the shared claim")
      }), 60_000)
  }
)

describe.skipIf(postgresSkipReason !== undefined)(
  `configuration errors are permanent: a fatal StoreFailed, not "retry later"${postgresSkipReason === undefined ? "" : ` (skipped: ${postgresSkipReason})`}`,
  () => {
    let locked: PostgresServer | undefined
    beforeAll(async () => {
      locked = await startPostgres({ password: "right-password" })
    }, 60_000)
    afterAll(() => locked?.destroy())

    /** The error of a first write through `Postgres.layer` at `url`, and of a rate-limit check. */
    const failures = (url: string) =>
      Effect.gen(function*() {
        const failed = yield* Effect.flip(Effect.flatMap(store("notes"), (notes) => notes.set("k", "v")))
        const written = failed._tag === "StoreFailed"
          ? failed
          : new ToolError.StoreFailed({ store: "notes", operation: "write", cause: failed })
        const limited = yield* Effect.flip(
          RateLimiter.RateLimiter.use((limiter) => limiter.consume({ key: "k", limit: 1, window: "1 minute" }))
        )
        const consume = new ToolError.StoreFailed({
          store: "rate_limit",
          operation: "consume",
          cause: limited.reason._tag === "RateLimitStoreError" ? limited.reason.cause : limited
        })
        return [written, consume] as const
      }).pipe(Effect.provide(Postgres.layer({ url: Redacted.make(url), maxConnections: 1, connectTimeout: "2 seconds" })))

    it.live("a wrong password (28P01), an unknown role or database (3D000), a URL whose port is not a number", () =>
      Effect.gen(function*() {
        const port = locked!.port
        const cases = {
          "wrong password": `postgres://postgres:wrong-password@127.0.0.1:${port}/postgres`,
          "no password": `postgres://postgres@127.0.0.1:${port}/postgres`,
          "unknown role": `postgres://nobody_here:right-password@127.0.0.1:${port}/postgres`,
          "unknown database": `${real!.url.replace(/\/[^/]*$/, "")}/no_such_database`,
          "port not a number": `postgres://postgres@127.0.0.1:notaport/postgres`
        }
        for (const [what, url] of Object.entries(cases)) {
          for (const error of yield* failures(url)) {
            assert.strictEqual(error._tag, "StoreFailed", what)
            assert.strictEqual(error.disposition, "fatal", `${what}: ${error.message}`)
            assert.notMatch(error.message, /retry later/, what)
            assert.notInclude(JSON.stringify(Schema.encodeUnknownSync(ToolError.ToolError)(error)), "right-password", what)
          }
        }
        // the right password works
        yield* Effect.flatMap(store("notes"), (notes) => notes.set("k", "v")).pipe(
          Effect.provide(Postgres.layer({ url: Redacted.make(locked!.url), maxConnections: 1 }))
        )
      }), 60_000)
  }
)
