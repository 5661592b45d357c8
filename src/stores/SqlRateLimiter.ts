/**
 * A `RateLimiterStore` (`effect/persistence` `RateLimiter`) in a SQL table, so every process on one
 * database shares the limits. Each consumption is one transaction that locks its key's row (`FOR
 * UPDATE` on Postgres; `BEGIN IMMEDIATE` on SQLite holds the write lock), reads the counter, applies
 * the same fixed-window or token-bucket arithmetic as Effect's memory store and writes it back: atomic
 * across processes. Time is Effect's `Clock` of the consuming process (unlike claims, which expire
 * on the database's clock): processes on several machines sharing one database should have
 * synchronized clocks (NTP); a process whose clock is off by `d` sees windows and refills shifted by
 * `d` (a window may let through up to twice its limit, or reset late), never a corrupted counter.
 *
 * The adaptive limiter (`adaptiveConsume`/`adaptiveFeedback`) stays in this process's memory.
 */
import { Clock, Duration, Effect, Layer } from "effect"
import { RateLimiter } from "effect/persistence"
import { SqlClient } from "effect/sql"
import { withSchemaLock } from "../internal/schemaLock.ts"
import { scrubSqlError } from "./internal/scrub.ts"
import { idsOf } from "./internal/sqlBackend.ts"

/** The table of counters. */
export const table = "tinyagents_rate_limits"

/** A store error naming the operation; the database's text is scrubbed of the key and its id. */
const storeError = (operation: string, cause: unknown, secrets: ReadonlyArray<string>) =>
  new RateLimiter.RateLimiterError({
    reason: new RateLimiter.RateLimitStoreError({
      message: `rate limit store failed to ${operation}`,
      cause: scrubSqlError(cause, secrets)
    })
  })

/** Creates the counters table. */
export const createTable = (sql: SqlClient.SqlClient) =>
  sql`CREATE TABLE IF NOT EXISTS ${sql(table)} (
    id TEXT PRIMARY KEY,
    amount DOUBLE PRECISION,
    stamp BIGINT
  )`

/**
 * A `RateLimiterStore` over `client`, an Effect that gives the SQL client (and has created the
 * table); a failure to get it is a `RateLimitStoreError`.
 */
export const makeStore = <E>(
  client: Effect.Effect<SqlClient.SqlClient, E>
): Effect.Effect<Store> =>
  Effect.gen(function*() {
    const memory = yield* Effect.provide(RateLimiter.RateLimiterStore, RateLimiter.layerStoreMemory)
    /** Runs `step` on the row `id` (`[amount, stamp]`, undefined when new) in one transaction, writing back what it returns. */
    const update = <A>(
      key: string,
      operation: string,
      step: (
        row: readonly [amount: number, stamp: number] | undefined,
        now: number
      ) => readonly [write: readonly [number, number] | undefined, result: A]
    ) =>
      Effect.gen(function*() {
        const sql = yield* Effect.mapError(client, (cause) => storeError(operation, cause, [key]))
        const t = sql(table)
        // a key that SQL text cannot hold as itself (a lone surrogate, NUL) is escaped; a long one bounded on Postgres
        const { id } = idsOf(sql)(key)
        const now = yield* Clock.currentTimeMillis
        const lock = sql.onDialectOrElse({ pg: () => sql.literal("FOR UPDATE"), orElse: () => sql.literal("") })
        return yield* sql.withTransaction(Effect.gen(function*() {
          yield* sql`INSERT INTO ${t} (id, amount, stamp) VALUES (${id}, NULL, NULL) ON CONFLICT (id) DO NOTHING`
          const rows = yield* sql<{ amount: number | null; stamp: number | string | null }>`
            SELECT amount, stamp FROM ${t} WHERE id = ${id} ${lock}`
          const row = rows[0]
          const current = row === undefined || row.amount === null || row.stamp === null
            ? undefined
            : [Number(row.amount), Number(row.stamp)] as const
          const [write, result] = step(current, now)
          if (write !== undefined) {
            yield* sql`UPDATE ${t} SET amount = ${write[0]}, stamp = ${Math.floor(write[1])} WHERE id = ${id}`
          }
          return result
        })).pipe(Effect.mapError((cause) => storeError(operation, cause, [key, id])))
      })

    return RateLimiter.RateLimiterStore.of({
      // as Effect's memory store: the row is [count, expiresAt]
      fixedWindow: (options) => {
        const refill = Duration.toMillis(options.refillRate)
        return update(`fw:${options.key}`, "count a fixed window", (row, now) => {
          const [count, expiresAt] = row === undefined || row[1] <= now ? [0, now] : row
          if (options.limit !== undefined && count + options.tokens > options.limit) {
            return [undefined, [count + options.tokens, expiresAt - now] as const]
          }
          const next = [count + options.tokens, expiresAt + refill * options.tokens] as const
          return [next, [next[0], next[1] - now] as const]
        })
      },
      // as Effect's memory store: the row is [tokens, lastRefill]
      tokenBucket: (options) => {
        const refill = Duration.toMillis(options.refillRate)
        return update(`tb:${options.key}`, "take from a token bucket", (row, now) => {
          let [tokens, lastRefill] = row ?? [options.limit, now]
          const add = Math.floor((now - lastRefill) / refill)
          if (add > 0) {
            tokens = Math.min(options.limit, tokens + add)
            lastRefill += add * refill
          }
          if (tokens >= options.limit) lastRefill = now
          const next = tokens - options.tokens
          if (options.allowOverflow || next >= 0) tokens = next
          return [[tokens, lastRefill] as const, [next, Math.max(0, now - lastRefill)] as const]
        })
      },
      adaptiveConsume: memory.adaptiveConsume,
      adaptiveFeedback: memory.adaptiveFeedback
    })
  })

/** The `RateLimiterStore` in the database of the `SqlClient` in context (creates its table). */
export const layerStore: Layer.Layer<RateLimiter.RateLimiterStore, never, SqlClient.SqlClient> = Layer.effect(
  RateLimiter.RateLimiterStore,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    let created = false
    const ready = Effect.suspend(() =>
      created ? Effect.succeed(sql) : Effect.map(withSchemaLock(sql, createTable(sql)), () => {
        created = true
        return sql
      })
    )
    return yield* makeStore(ready)
  })
)

/** `RateLimiter.RateLimiter` over the SQL store in the database of the `SqlClient` in context. */
export const layer: Layer.Layer<RateLimiter.RateLimiter, never, SqlClient.SqlClient> = RateLimiter.layer.pipe(
  Layer.provide(layerStore)
)

/** The shape of a `RateLimiterStore`. */
export type Store = RateLimiter.RateLimiterStore["Service"]
