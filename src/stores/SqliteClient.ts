/**
 * An Effect `SqlClient` (`effect/sql`) on Node's built-in `node:sqlite` (`DatabaseSync`): no
 * native module, no install step. One connection per client, shared through a semaphore (Effect's
 * `SqlClient.makeSqliteAcquirers`), so statements and transactions of one process run one at a
 * time; transactions begin with `BEGIN IMMEDIATE`, so a read-then-write transaction holds the write
 * lock from its start and two processes never deadlock on a lock upgrade. A file database is put in
 * WAL mode, so two processes on one file wait for each other instead of failing, with `synchronous`
 * NORMAL unless `synchronous: "full"` (see {@link SqliteClientConfig.synchronous}: what a crash can lose).
 *
 * Waiting for a lock does not block the process: `node:sqlite` is synchronous, so the driver itself
 * waits a few milliseconds at most (its `busy_timeout`); a statement that still finds the database
 * locked (`SQLITE_BUSY`) is tried again after an asynchronous pause (2 ms doubling to 100 ms,
 * jittered, on the wall clock, never a test clock), for up to `busyTimeout` in all. Only what SQLite
 * says is safe to run again is retried: a statement outside a transaction (its implicit transaction
 * was rolled back), `BEGIN IMMEDIATE` itself, and `COMMIT`; inside a transaction the statement fails
 * and the transaction rolls back. Errors are `SqlError`s whose reason says whether a retry can help
 * (`SQLITE_BUSY` is a retryable `LockTimeoutError`).
 *
 * The SQL stores also run their own statements on the connection, outside transactions, held
 * prepared and group-committed (`internal/sqliteHeld`), under the same semaphore; the executor's
 * keyed calls share one write transaction by plain calls, holding the semaphore until it commits.
 *
 * This module owns the client only; the stores on it are in `Stores`.
 */
import { Clock, Context, Effect, Layer, Schedule, Scope, Semaphore, Stream } from "effect"
import { Reactivity } from "effect/reactivity"
import { SqlClient, SqlConnection, SqlError, Statement } from "effect/sql"
import { DatabaseSync } from "node:sqlite"
import type { SQLInputValue } from "node:sqlite"
import * as Held from "./internal/sqliteHeld.ts"

/** How to open a SQLite database. */
export interface SqliteClientConfig {
  /** The database file (created when missing), or `":memory:"` for a private in-memory database. */
  readonly filename: string
  /**
   * How long a statement waits for another process's lock before failing with `SQLITE_BUSY`, waiting
   * asynchronously (the process keeps running). Default 5000 ms.
   */
  readonly busyTimeout?: number | undefined
  /** Open read-only. Default `false`. */
  readonly readonly?: boolean | undefined
  /**
   * When a file database syncs to disk (SQLite's `synchronous`, in WAL mode). `"normal"` (the
   * default): at checkpoints only; a crashed or killed process loses nothing committed, a power loss
   * or OS crash may undo the last transactions committed before it (never a torn write). `"full"`:
   * at every commit, so a power loss undoes nothing committed either, at the cost of an fsync per
   * transaction.
   */
  readonly synchronous?: "normal" | "full" | undefined
  /** Rename result columns (e.g. snake_case to camelCase). */
  readonly transformResultNames?: ((name: string) => string) | undefined
  /** Rename identifiers in queries (e.g. camelCase to snake_case). */
  readonly transformQueryNames?: ((name: string) => string) | undefined
}

/** The `SqlClient` of a SQLite database, with its configuration. */
export interface SqliteClient extends SqlClient.SqlClient {
  readonly config: SqliteClientConfig
}

/** The SQLite client in context (also provided as `SqlClient.SqlClient`). */
export const SqliteClient: Context.Service<SqliteClient, SqliteClient> = Context.Service<SqliteClient>(
  "tinyagents/stores/SqliteClient"
)

/** A parameter as `node:sqlite` accepts it (booleans as 0/1, dates as ISO text, `undefined` as NULL). */
const toInput = (value: unknown): SQLInputValue => {
  if (value === undefined || value === null) return null
  if (typeof value === "boolean") return value ? 1 : 0
  if (value instanceof Date) return value.toISOString()
  if (typeof value === "number" || typeof value === "bigint" || typeof value === "string") return value
  if (value instanceof Uint8Array) return value
  if (ArrayBuffer.isView(value)) return new Uint8Array(value.buffer, value.byteOffset, value.byteLength)
  return JSON.stringify(value)
}

/** A `node:sqlite` failure as a `SqlError` (its SQLite result code, `errcode`, says which reason). */
const toSqlError = (cause: unknown, message: string, operation: string): SqlError.SqlError => {
  if (typeof cause === "object" && cause !== null && "errcode" in cause && !("errno" in cause)) {
    // `classifySqliteError` reads the numeric SQLite code from `errno`
    Object.defineProperty(cause, "errno", { value: (cause as { errcode: unknown }).errcode, enumerable: false })
  }
  return new SqlError.SqlError({ reason: SqlError.classifySqliteError(cause, { message, operation }) })
}

/** Runs `f` on the database, as an Effect that fails with a `SqlError`. */
const attempt = <A>(f: () => A, operation: string): Effect.Effect<A, SqlError.SqlError> =>
  Effect.try({ try: f, catch: (cause) => toSqlError(cause, `SQLite ${operation} failed`, operation) })

/** The default of `busyTimeout`, in milliseconds. */
const defaultBusyTimeout = 5_000
/** The most the driver itself waits for a lock, blocking the thread (longer waits are asynchronous retries). */
const driverBusyTimeout = 5

/** The wall clock: a lock is held on another process's time, so its waits never follow a test clock. */
const wallClock = Clock.Clock.defaultValue()

/** `SQLITE_BUSY` (or `SQLITE_LOCKED`): the database was locked. */
const isBusy = (error: SqlError.SqlError): boolean => error.reason._tag === "LockTimeoutError"

/** The pauses between tries of a statement that found the database locked, for `budget` ms in all. */
const busySchedule = (budget: number) =>
  Schedule.max([
    Schedule.min([Schedule.exponential("2 millis"), Schedule.spaced("100 millis")]),
    Schedule.during(budget)
  ]).pipe(Schedule.jittered)

/**
 * `effect` retried, after asynchronous pauses on the wall clock (2 ms doubling to 100 ms, jittered),
 * while it fails because the database is locked and `retryable()` says running it again is safe, for
 * up to `budget` milliseconds in all; then its last error (a retryable `LockTimeoutError`). The first
 * try is `effect` as it is: the retrying starts only once it found the database locked.
 */
const whileBusy = <A>(
  effect: Effect.Effect<A, SqlError.SqlError>,
  budget: number,
  retryable: () => boolean
): Effect.Effect<A, SqlError.SqlError> => {
  if (budget <= driverBusyTimeout) return effect
  const again = (error: SqlError.SqlError) => isBusy(error) && retryable()
  return Effect.catchIf(effect, again, () =>
    effect.pipe(
      Effect.retry({ schedule: busySchedule(budget), while: again }),
      Effect.delay(Math.min(2, budget)),
      Effect.provideService(Clock.Clock, wallClock)
    ))
}

/** `COMMIT` (SQLite keeps the transaction open when it is busy: it can be run again). */
const isCommit = (sql: string): boolean => /^\s*COMMIT\b/i.test(sql)

/**
 * The `SqlConnection` of an open database; a statement that finds it locked is retried (see the module
 * comment) for up to `busyTimeout` milliseconds.
 */
const connectionOf = (
  db: DatabaseSync,
  busyTimeout: number
): SqlConnection.Connection & { readonly db: DatabaseSync } => {
  /** Safe to run `sql` again after `SQLITE_BUSY`: outside a transaction (`BEGIN` included), or `COMMIT`. */
  const retryable = (sql: string) => () => !db.isTransaction || isCommit(sql)
  const retried = <A>(sql: string, effect: Effect.Effect<A, SqlError.SqlError>) =>
    whileBusy(effect, busyTimeout, retryable(sql))
  const cache = new Map<string, ReturnType<DatabaseSync["prepare"]>>()
  const prepared = (sql: string) => {
    let statement = cache.get(sql)
    if (statement === undefined) {
      statement = db.prepare(sql)
      if (cache.size >= 200) cache.delete(cache.keys().next().value!)
      cache.set(sql, statement)
    }
    return statement
  }
  const rows = (sql: string, params: ReadonlyArray<unknown>, cached: boolean): ReadonlyArray<object> => {
    const statement = cached ? prepared(sql) : db.prepare(sql)
    statement.setReturnArrays(false)
    const inputs = params.map(toInput)
    // `all` runs any statement; one without result columns (INSERT without RETURNING) gives []
    return statement.all(...inputs) as ReadonlyArray<object>
  }
  const run = (
    sql: string,
    params: ReadonlyArray<unknown>,
    transformRows: (<A extends object>(row: ReadonlyArray<A>) => ReadonlyArray<A>) | undefined,
    cached: boolean
  ) =>
    retried(
      sql,
      attempt(() => {
        const result = rows(sql, params, cached)
        return transformRows === undefined ? result : transformRows(result)
      }, "execute")
    )
  return {
    db,
    execute: (sql, params, transformRows) => run(sql, params, transformRows, true),
    executeUnprepared: (sql, params, transformRows) => run(sql, params, transformRows, false),
    executeRaw: (sql, params) =>
      retried(
        sql,
        attempt(() => {
          const statement = prepared(sql)
          return statement.columns().length === 0
            ? statement.run(...params.map(toInput))
            : (statement.setReturnArrays(false), statement.all(...params.map(toInput)))
        }, "execute")
      ),
    executeValues: (sql, params) =>
      retried(
        sql,
        attempt(() => {
          const statement = prepared(sql)
          statement.setReturnArrays(true)
          try {
            return statement.all(...params.map(toInput)) as unknown as ReadonlyArray<ReadonlyArray<unknown>>
          } finally {
            statement.setReturnArrays(false)
          }
        }, "execute")
      ),
    executeValuesUnprepared: (sql, params) =>
      retried(
        sql,
        attempt(() => {
          const statement = db.prepare(sql)
          statement.setReturnArrays(true)
          return statement.all(...params.map(toInput)) as unknown as ReadonlyArray<ReadonlyArray<unknown>>
        }, "execute")
      ),
    executeStream: (sql, params, transformRows) =>
      Stream.suspend(() => {
        const statement = db.prepare(sql)
        statement.setReturnArrays(false)
        const iterator = statement.iterate(...params.map(toInput)) as IterableIterator<object>
        return Stream.fromIteratorSucceed(iterator, 128).pipe(
          Stream.mapArray((chunk) => transformRows === undefined ? chunk : transformRows(chunk) as typeof chunk)
        )
      }).pipe(Stream.mapError((cause) => toSqlError(cause, "SQLite stream failed", "stream")))
  }
}

/** Opens the database (WAL mode for a file; the driver's own busy wait a few milliseconds), closed with `scope`. */
const open = (config: SqliteClientConfig, busyTimeout: number): Effect.Effect<DatabaseSync, SqlError.SqlError, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.gen(function*() {
      const db = yield* attempt(
        () =>
          new DatabaseSync(config.filename, {
            readOnly: config.readonly ?? false,
            timeout: Math.min(busyTimeout, driverBusyTimeout)
          }),
        "connect"
      )
      if (config.filename !== ":memory:" && config.filename !== "" && config.readonly !== true) {
        // another process may hold a lock while the journal mode is read or set
        yield* whileBusy(
          attempt(() => {
            db.exec("PRAGMA journal_mode = WAL")
            db.exec(`PRAGMA synchronous = ${config.synchronous === "full" ? "FULL" : "NORMAL"}`)
          }, "connect"),
          busyTimeout,
          () => true
        ).pipe(Effect.tapError(() => Effect.sync(() => db.close())))
      }
      return db
    }),
    (db) => Effect.sync(() => db.isOpen && db.close())
  )

/** A `SqliteClient` on the database `config` names, closed with the scope. */
export const make = (
  config: SqliteClientConfig
): Effect.Effect<SqliteClient, SqlError.SqlError, Scope.Scope | Reactivity.Reactivity> =>
  Effect.gen(function*() {
    const busyTimeout = Math.max(0, config.busyTimeout ?? defaultBusyTimeout)
    const db = yield* open(config, busyTimeout)
    const connection = connectionOf(db, busyTimeout)
    const semaphore = yield* Semaphore.make(1)
    const acquirers = SqlClient.makeSqliteAcquirers({
      connection: Effect.succeed(connection),
      semaphore,
      isTransaction: (conn) => conn.db.isTransaction
    })
    const compiler = Statement.makeCompilerSqlite(config.transformQueryNames)
    const transformRows = config.transformResultNames === undefined
      ? undefined
      : Statement.defaultTransforms(config.transformResultNames).array
    const client = yield* SqlClient.make({
      ...acquirers,
      compiler,
      driver: "node:sqlite",
      spanAttributes: [["db.system.name", "sqlite"]],
      beginTransaction: "BEGIN IMMEDIATE",
      transformRows
    })
    // the stores' own statements, held prepared and group-committed (`internal/sqliteHeld`)
    const held = Held.make({
      db,
      semaphore,
      attempt,
      busy: (effect) => whileBusy(effect, busyTimeout, () => true),
      error: (cause, operation) => toSqlError(cause, `SQLite ${operation} failed`, operation)
    })
    return Object.assign(client, { config, [Held.heldKey]: held }) as SqliteClient
  })

/** Provides `SqliteClient` and `SqlClient.SqlClient` for the database `config` names. */
export const layer = (
  config: SqliteClientConfig
): Layer.Layer<SqliteClient | SqlClient.SqlClient, SqlError.SqlError> =>
  Layer.effectContext(
    Effect.map(make(config), (client) =>
      Context.make(SqliteClient, client).pipe(Context.add(SqlClient.SqlClient, client))
    )
  ).pipe(Layer.provide(Reactivity.layer))
