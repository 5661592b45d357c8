/**
 * Stores in a SQL database: one layer gives the `StoreRegistry` (every named store, claims, the
 * artifacts store) and the `RateLimiter` (`effect/persistence`), all in one database, shared by every
 * process that opens it. `layerSqlite` is the embedded default (Node's `node:sqlite`, one file, no
 * set-up); `layerSql` takes any `SqlClient` layer (Postgres: see `Postgres.layer`).
 *
 * The database is opened on first use, not when the layer is built: a database that is down at
 * start fails the calls that need it with a retryable `StoreFailed` (or `RateLimitStoreError`), and
 * the next use tries again. Tables (`tinyagents_store`, `tinyagents_claims`, `tinyagents_artifacts`,
 * `tinyagents_rate_limits`) are created when missing (one made by an older version gets the columns
 * it lacks). Values are stored as bytes (BLOB / BYTEA); a string that is not well-formed UTF-16 (a
 * lone surrogate) as its UTF-16 code units, so every string reads back as it was written. Any string
 * is a key: one SQL text cannot hold (a lone surrogate, NUL) is stored escaped, so distinct keys stay
 * distinct, and on Postgres a key over 512 bytes is stored under a bounded id (its start and its
 * SHA-256) with the whole key beside it, as Postgres cannot index a long key. A failure's error never
 * holds a key or a value. Claims expire on the database's clock; rate limits use each process's
 * `Clock`, so processes on several machines sharing one database should have synchronized clocks (NTP).
 *
 * A write can expire (the executor's idempotency results, through `src/internal/expiry`'s `withTtl`): its
 * row is not readable once past, and writes delete expired rows, at most once a minute.
 *
 * Artifacts (the store the executor writes large outputs to, `"artifacts"` by default) have their own
 * table with a size cap and an expiry ({@link ArtifactPolicy}): a text artifact over the cap is kept
 * truncated to the cap, with a note at its end; a binary one over the cap is refused (a
 * `KeyValueStoreError`, so the write fails with `StoreFailed`); an expired artifact is not readable
 * and is deleted by a sweep that runs on writes, at most once per `sweepEvery`.
 */
import { Cause, Context, Effect, Layer } from "effect"
import { RateLimiter } from "effect/persistence"
import { SqlClient } from "effect/sql"
import { StoreRegistry } from "../runtime/StoreRegistry.ts"
import * as Registry from "../runtime/StoreRegistry.ts"
import { lazily } from "../internal/lazily.ts"
import { withSchemaLock } from "../internal/schemaLock.ts"
import { checkArtifactPolicy, sqlBackend } from "./internal/sqlBackend.ts"
import type { ArtifactPolicy as Policy } from "./internal/sqlBackend.ts"
import { heldOf } from "./internal/sqliteHeld.ts"
import * as SqliteClient from "./SqliteClient.ts"
import * as SqlRateLimiter from "./SqlRateLimiter.ts"

/**
 * The size cap and expiry of the artifacts store. `store`: its name (default `"artifacts"`, the
 * executor's default); `maxBytes`: the cap (default 16 MiB; at least 1024, a smaller one is a
 * `RangeError` when the layer is made: the truncation note must fit); `ttl`: how long an artifact lives
 * (default: forever); `sweepEvery`: how often writes sweep out expired artifacts (default 10 minutes).
 */
export type ArtifactPolicy = Policy

/** Options of the SQL store layers. */
export interface Options {
  /** The artifacts store's cap and expiry. */
  readonly artifacts?: ArtifactPolicy | undefined
}

/** The services every store layer provides. */
export type Services = StoreRegistry | RateLimiter.RateLimiter

/** A defect while opening (a driver that throws) as a failure, so it is not kept and is retried. */
const defectsAsFailures = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, unknown, R> =>
  Effect.catchCause(effect, (cause) => Effect.fail(Cause.squash(cause)))

/**
 * `StoreRegistry` and `RateLimiter` in the database `client` connects to, opened on first use (see the
 * module comment). Use it for any `SqlClient`; `layerSqlite` and `Postgres.layer` call it.
 */
export const layerSql = <E>(
  client: Layer.Layer<SqlClient.SqlClient, E>,
  options: Options = {}
): Layer.Layer<Services> => {
  checkArtifactPolicy(options.artifacts)
  return Layer.effectContext(Effect.gen(function*() {
    const opened = yield* lazily(defectsAsFailures(Effect.gen(function*() {
      const context = yield* Layer.build(client)
      const connected = Context.get(context, SqlClient.SqlClient)
      const sql = connected.withoutTransforms()
      // several processes may open the same database at once: the tables are created under one lock
      const backend = yield* withSchemaLock(
        sql,
        Effect.tap(sqlBackend(sql, options.artifacts, heldOf(connected)), () => SqlRateLimiter.createTable(sql))
      )
      return { sql, backend }
    })))
    const registry = yield* Registry.make(Effect.map(opened, (o) => o.backend))
    const store = yield* SqlRateLimiter.makeStore(Effect.map(opened, (o) => o.sql))
    const limiter = yield* RateLimiter.make.pipe(Effect.provideService(RateLimiter.RateLimiterStore, store))
    return Context.make(StoreRegistry, registry).pipe(Context.add(RateLimiter.RateLimiter, limiter))
  }))
}

/** How to open the SQLite store file, and the artifacts policy. */
export interface SqliteOptions extends Options {
  /** The database file, created when missing (WAL mode: `<file>-wal` and `<file>-shm` beside it). */
  readonly filename: string
  /** How long a statement waits for another process's lock (asynchronously: the process keeps running). Default 5000 ms. */
  readonly busyTimeout?: number | undefined
  /**
   * `"normal"` (default): a killed process loses nothing committed, a power loss may undo the last
   * commits; `"full"`: an fsync per commit, so a power loss undoes nothing committed either.
   */
  readonly synchronous?: "normal" | "full" | undefined
}

/**
 * The embedded default: every store, claim and rate limit in one SQLite file (Node's built-in
 * `node:sqlite`), shared by every process that opens the file and kept across restarts.
 */
export const layerSqlite = (options: SqliteOptions): Layer.Layer<Services> =>
  layerSql(
    SqliteClient.layer({ filename: options.filename, busyTimeout: options.busyTimeout, synchronous: options.synchronous }),
    options
  )

/** Stores and rate limits in this process's memory (tests, one process): nothing survives a restart. */
export const layerMemory: Layer.Layer<Services> = Layer.mergeAll(
  Registry.layerMemory,
  RateLimiter.layer.pipe(Layer.provide(RateLimiter.layerStoreMemory))
)
