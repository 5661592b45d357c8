/**
 * The machinery of the SQL stores, for any `SqlClient` (the sqlite and pg dialects): the tables
 * (created when missing; one made by an older version gets the columns it lacks), one key-value
 * table for every named store (store `name` is the view of its keys under `<name>/`, with a `modify`
 * that is atomic across processes), claims as one atomic upsert, and the artifacts table with its
 * size cap and expiry. The public surface is `Stores` and `Postgres`.
 *
 * Ids: SQL text cannot hold every JS string (a lone surrogate becomes U+FFFD, so two keys would share
 * a row; Postgres refuses NUL). A key with a lone surrogate, a NUL or U+FFFF is stored as its start up
 * to the first such code unit, then U+FFFF, then every remaining UTF-16 code unit as 4 hex digits
 * ({@link encodeId}): reversible, never equal to a key stored as itself (those have no U+FFFF), and
 * prefix-preserving (`encodeId(p + r)` starts with `encodeId(p)`), so prefix queries stay exact.
 *
 * Long keys: Postgres refuses an index entry over about 2.7 KB, so there an encoded key over 512
 * UTF-8 bytes has a bounded id ({@link boundedId}): its readable start (at most 256 bytes), U+FFFF,
 * `#`, then the SHA-256 hex of the key's UTF-16 code units. An encoded key never holds U+FFFF then
 * `#` (after U+FFFF come only hex digits), so such an id is no other key's. The encoded key is kept
 * whole in `full_key` (not indexed), which listing and prefix queries read (`coalesce(full_key, id)`).
 * SQLite has no such limit: there the id is always the encoded key.
 *
 * Values are bytes with a type: 0, a string as UTF-8; 1, bytes; 2, a string that is not well-formed
 * UTF-16 (a lone surrogate, which UTF-8 cannot hold) as its UTF-16LE code units. So every string reads
 * back as it was written; its bytes (`getUint8Array`) are its UTF-8, lone surrogates as U+FFFD, as in
 * the memory store.
 *
 * Expiry: a row's `expires_at` (epoch milliseconds on the `Clock`; NULL: never), set by a view from
 * `withTtl` (`src/internal/expiry`) or by the artifacts policy; an expired row is not readable, and writes
 * sweep expired rows out, at most once a minute (artifacts: `sweepEvery`).
 *
 * Errors never carry a key or a value: the database's text is scrubbed (`internal/scrub`).
 *
 * Claims expire on the database's clock (one clock for every process sharing it), not the `Clock`.
 *
 * On a `SqliteClient` the statements outside transactions (reads, `set`, `remove`, claims) run as
 * held statements (`internal/sqliteHeld`: prepared once, writes group-committed); `modify`, listing
 * and the sweeps go through `effect/sql` on every dialect. Each statement is written once, as an
 * `effect/sql` template: the held statement is that template's SQLite text. There a named store
 * also has a view for the executor's keyed calls (`src/internal/storeNow`): its reads by plain
 * calls, and a look at a stored result and its claim and a result's write in the write transaction
 * those calls share (`sqliteHeld`'s `joined`).
 */
import { createHash } from "node:crypto"
import { Clock, Duration, Effect, type Fiber, Semaphore } from "effect"
import { KeyValueStore } from "effect/persistence"
import type { SqlClient, SqlError, Statement } from "effect/sql"
import type { SQLInputValue } from "node:sqlite"
import { StoreFailed } from "../../contract/ToolError.ts"
import type { Backend, Claims } from "../../runtime/StoreRegistry.ts"
import { expiring } from "../../internal/expiry.ts"
import { later, type Looked, withStoreNow } from "../../internal/storeNow.ts"
import { scrubSqlError } from "./scrub.ts"
import type { Held, HeldRow, Joined } from "./sqliteHeld.ts"

/** The size cap and expiry of the artifacts store (see `Stores.ArtifactPolicy`). */
export interface ArtifactPolicy {
  readonly store?: string | undefined
  readonly maxBytes?: number | undefined
  readonly ttl?: Duration.Input | undefined
  readonly sweepEvery?: Duration.Input | undefined
}

/** The tables the SQL stores use. */
export const tables = {
  store: "tinyagents_store",
  claims: "tinyagents_claims",
  artifacts: "tinyagents_artifacts"
} as const

/** How often writes sweep expired rows out of the key-value table. */
const storeSweepEvery = 60_000

const ValueTypeString = 0
const ValueTypeBytes = 1
const ValueTypeUtf16 = 2
const encoder = new TextEncoder()
// a leading U+FEFF is the value's own character: kept (`TextDecoder` drops it by default)
const decoder = new TextDecoder("utf-8", { ignoreBOM: true })

/** A lone surrogate (a pair is one code point under the `u` flag). */
const loneSurrogate = /\p{Cs}/u

/** The columns of a table, by name (to add those an older version's table lacks). */
const columnsOf = (sql: SqlClient.SqlClient, table: string) =>
  Effect.map(
    sql.onDialectOrElse({
      pg: () =>
        sql<{ name: string }>`SELECT column_name AS name FROM information_schema.columns
          WHERE table_schema = current_schema() AND table_name = ${table}`,
      orElse: () => sql<{ name: string }>`SELECT name FROM pragma_table_info(${table})`
    }),
    (rows) => new Set(rows.map((row) => row.name))
  )

/** Adds the `columns` (name, SQL type) that `table` lacks. */
const addMissingColumns = (
  sql: SqlClient.SqlClient,
  table: string,
  columns: ReadonlyArray<readonly [name: string, type: string]>
) =>
  Effect.flatMap(columnsOf(sql, table), (have) =>
    Effect.forEach(
      columns.filter(([name]) => !have.has(name)),
      ([name, type]) => sql`ALTER TABLE ${sql(table)} ADD COLUMN ${sql(name)} ${sql.literal(type)}`,
      { discard: true }
    ))

/** Creates the key-value, claims and artifacts tables, or adds what an older version's lack. */
const createTables = (sql: SqlClient.SqlClient): Effect.Effect<void, SqlError.SqlError> =>
  Effect.gen(function*() {
    const store = sql(tables.store)
    const claims = sql(tables.claims)
    const artifacts = sql(tables.artifacts)
    const bytes = sql.onDialectOrElse({ pg: () => sql.literal("BYTEA"), orElse: () => sql.literal("BLOB") })
    yield* sql`CREATE TABLE IF NOT EXISTS ${store} (
      id TEXT PRIMARY KEY,
      value ${bytes} NOT NULL,
      value_type SMALLINT NOT NULL,
      full_key TEXT,
      expires_at BIGINT
    )`
    // made by Effect's KeyValueStore.layerSql before: id, value and value_type only
    yield* addMissingColumns(sql, tables.store, [["full_key", "TEXT"], ["expires_at", "BIGINT"]])
    // (only the rows that expire: a table made by an older version keeps its index of every row, which works alike)
    yield* sql`CREATE INDEX IF NOT EXISTS ${sql(`${tables.store}_expires`)} ON ${store} (expires_at) WHERE expires_at IS NOT NULL`
    yield* sql`CREATE TABLE IF NOT EXISTS ${claims} (
      id TEXT PRIMARY KEY,
      owner TEXT NOT NULL,
      expires_at BIGINT NOT NULL
    )`
    yield* sql`CREATE TABLE IF NOT EXISTS ${artifacts} (
      id TEXT PRIMARY KEY,
      value ${bytes} NOT NULL,
      value_type SMALLINT NOT NULL,
      size BIGINT NOT NULL,
      created_at BIGINT NOT NULL,
      expires_at BIGINT,
      full_key TEXT
    )`
    yield* addMissingColumns(sql, tables.artifacts, [["full_key", "TEXT"]])
    yield* sql`CREATE INDEX IF NOT EXISTS ${sql(`${tables.artifacts}_expires`)} ON ${artifacts} (expires_at)`
  })

/** A store error that names the operation only: no key, no value (the cause is scrubbed of them). */
const kvError = (
  method: string,
  cause: unknown,
  secrets: ReadonlyArray<string>
): KeyValueStore.KeyValueStoreError =>
  new KeyValueStoreError({ method, message: `the SQL store failed to ${method}`, cause: scrubSqlError(cause, secrets) })
const { KeyValueStoreError } = KeyValueStore

/** Starts the hex rest of an id that SQL text could not hold as itself (see the module comment). */
const escapeUnit = 0xffff

/** Index of the first code unit SQL text cannot hold faithfully (a lone surrogate, NUL) or U+FFFF; -1 when none. */
const firstUnsafe = (key: string): number => {
  for (let i = 0; i < key.length; i++) {
    const code = key.charCodeAt(i)
    if (code === 0 || code === escapeUnit) return i
    if (code >= 0xd800 && code <= 0xdbff) {
      const next = key.charCodeAt(i + 1)
      if (next >= 0xdc00 && next <= 0xdfff) {
        i++
        continue
      }
      return i
    }
    if (code >= 0xdc00 && code <= 0xdfff) return i
  }
  return -1
}

/** The id a key is stored under: itself, or its safe start, U+FFFF and hex code units (module comment). */
export const encodeId = (key: string): string => {
  const at = firstUnsafe(key)
  if (at < 0) return key
  let out = `${key.slice(0, at)}${String.fromCharCode(escapeUnit)}`
  for (let i = at; i < key.length; i++) out += key.charCodeAt(i).toString(16).padStart(4, "0")
  return out
}

/** The key stored under `id` (the inverse of {@link encodeId}). */
export const decodeId = (id: string): string => {
  const at = id.indexOf(String.fromCharCode(escapeUnit))
  if (at < 0) return id
  let out = id.slice(0, at)
  for (let i = at + 1; i + 4 <= id.length; i += 4) out += String.fromCharCode(parseInt(id.slice(i, i + 4), 16))
  return out
}

/** Where a key is stored: its `id` (the primary key) and, when that is not the encoded key itself, `full`. */
export interface StoredId {
  readonly id: string
  readonly full: string | null
}

/** The longest encoded key that is its own id on Postgres, in UTF-8 bytes. */
const maxIdBytes = 512
/** The longest readable start of a bounded id, in UTF-8 bytes. */
const readableBytes = 256

/** The id of `key` as itself, encoded (SQLite). */
const plainId = (key: string): StoredId => ({ id: encodeId(key), full: null })

/** The id of `key` on Postgres: encoded, and bounded when that is over 512 bytes (see the module comment). */
const boundedId = (key: string): StoredId => {
  const encoded = encodeId(key)
  if (Buffer.byteLength(encoded, "utf8") <= maxIdBytes) return { id: encoded, full: null }
  let readable = ""
  let bytes = 0
  for (const char of encoded) {
    const size = Buffer.byteLength(char, "utf8")
    if (bytes + size > readableBytes) break
    readable += char
    bytes += size
  }
  const digest = createHash("sha256").update(Buffer.from(key, "utf16le")).digest("hex")
  return { id: `${readable}${String.fromCharCode(escapeUnit)}#${digest}`, full: encoded }
}

/** How `sql`'s dialect stores keys: bounded ids on Postgres, plain ones elsewhere. */
export const idsOf = (sql: SqlClient.SqlClient): (key: string) => StoredId =>
  sql.onDialectOrElse({ pg: () => boundedId, orElse: () => plainId })

/** `column` starts with the (encoded) `prefix`: compared exactly (not with LIKE), counting characters as SQL does. */
const startsWith = (sql: SqlClient.SqlClient, column: string, prefix: string) =>
  sql`substr(${sql.literal(column)}, 1, ${Array.from(prefix).length}) = ${prefix}`

/** The database's time in milliseconds, as an SQL expression (claims expire on it). */
const databaseMillis = (sql: SqlClient.SqlClient) =>
  sql.onDialectOrElse({
    pg: () => sql.literal("(extract(epoch from clock_timestamp()) * 1000)::bigint"),
    orElse: () => sql.literal("CAST(unixepoch('subsec') * 1000 AS INTEGER)")
  })

/** A value as stored: its bytes and its type (see the module comment). */
interface Stored {
  readonly bytes: Uint8Array
  readonly type: number
}

const storedOf = (value: string | Uint8Array): Stored =>
  typeof value !== "string"
    ? { bytes: value, type: ValueTypeBytes }
    : loneSurrogate.test(value)
    ? { bytes: Buffer.from(value, "utf16le"), type: ValueTypeUtf16 }
    : { bytes: encoder.encode(value), type: ValueTypeString }

/** A row's value and type as read. */
interface Row {
  readonly value: Uint8Array
  readonly value_type: number | string
}

/** A row as `get` answers: a string as itself, bytes as base64. */
const stringOf = (row: Row): string => {
  const type = Number(row.value_type)
  return type === ValueTypeBytes
    ? Buffer.from(row.value).toString("base64")
    : type === ValueTypeUtf16
    ? Buffer.from(row.value).toString("utf16le")
    : decoder.decode(row.value)
}

/** A row read with a string's value as SQLite's text of its bytes (`CAST(value AS TEXT)`, the views' reads). */
interface TextRow {
  readonly value: Uint8Array | string
  readonly value_type: number | string
}

/**
 * A row as `get` answers (as {@link stringOf}), read as a {@link TextRow}: a string's text is
 * SQLite's decoding of its UTF-8 (invalid bytes as U+FFFD, as `TextDecoder` decodes them, a leading
 * U+FEFF kept).
 */
const textOf = (value: TextRow["value"], type: TextRow["value_type"]): string =>
  typeof value === "string" ? value : stringOf({ value, value_type: type })

/** A row as `getUint8Array` answers: bytes as themselves, a string as its UTF-8. */
const bytesOf = (row: Row): Uint8Array =>
  Number(row.value_type) === ValueTypeUtf16 ? encoder.encode(stringOf(row)) : row.value

/**
 * Deletes the expired rows of `table`, at most once per `every` milliseconds (of the `Clock`), with
 * `due`: whether a sweep at `now` would delete (the plain check the sweep itself makes first).
 */
const sweeper = (sql: SqlClient.SqlClient, table: string, every: number): Pick<Table, "sweep" | "sweepDue"> => {
  const sweeping = Semaphore.makeUnsafe(1)
  let lastSweep = Number.NEGATIVE_INFINITY
  const sweepDue = (now: number) => now - lastSweep >= every
  const sweep = Effect.flatMap(Clock.currentTimeMillis, (now) =>
    !sweepDue(now) ? Effect.void : sweeping.withPermits(1)(
      Effect.suspend(() =>
        !sweepDue(now) ? Effect.void : sql`
          DELETE FROM ${sql(table)} WHERE expires_at IS NOT NULL AND expires_at <= ${Math.floor(now)}`.pipe(
          Effect.andThen(Effect.sync(() => void (lastSweep = now)))
        )
      )
    ))
  return { sweep, sweepDue }
}

/**
 * A statement of the stores, run through `effect/sql` or, with `held` (SQLite), as the held statement
 * of its text (compiled once, from the first call: `build` must place its arguments, in order, as
 * its only parameters).
 */
const statementOf = <Args extends ReadonlyArray<SQLInputValue>, Rows>(
  held: Held | undefined,
  mode: "first" | "write",
  build: (...args: Args) => Statement.Statement<HeldRow>,
  rows: (rows: ReadonlyArray<HeldRow>) => Rows
): (...args: Args) => Effect.Effect<Rows, SqlError.SqlError> => {
  if (held === undefined) return (...args) => Effect.map(build(...args), rows)
  let run: ((params: ReadonlyArray<SQLInputValue>) => Effect.Effect<ReadonlyArray<HeldRow>, SqlError.SqlError>) | undefined
  const runOf = (args: Args) => {
    const text = heldText(build, args)
    return mode === "write" ? held.write(text) : held.first(text)
  }
  return (...args) => Effect.map((run ??= runOf(args))(args), rows)
}

/** The SQLite text of `build(...args)`, whose parameters must be `args`, in order (a held statement's). */
const heldText = <Args extends ReadonlyArray<SQLInputValue>>(
  build: (...args: Args) => Statement.Statement<HeldRow>,
  args: Args
): string => {
  const [text, params] = build(...args).compile()
  if (params.length !== args.length || params.some((param, i) => param !== args[i])) {
    throw new Error(`a held statement's parameters must be its arguments in order: ${text}`)
  }
  return text
}

/** `build`'s held text, compiled once, from its first arguments. */
const heldTextOnce = <Args extends ReadonlyArray<SQLInputValue>>(
  build: (...args: Args) => Statement.Statement<HeldRow>
): (args: Args) => string => {
  let text: string | undefined
  return (args) => text ??= heldText(build, args)
}

/** The upsert that takes a free, expired or own claim (its row's owner when taken). */
const takeClaim = (sql: SqlClient.SqlClient) => {
  const table = sql(tables.claims)
  const now = databaseMillis(sql)
  return (id: string, owner: string, lease: number) =>
    sql<HeldRow>`
      INSERT INTO ${table} (id, owner, expires_at) VALUES (${id}, ${owner}, ${now} + ${lease})
      ON CONFLICT (id) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
      WHERE ${table}.owner = excluded.owner OR ${table}.expires_at <= ${now}
      RETURNING owner`
}

/** The delete of `owner`'s claim. */
const freeClaim = (sql: SqlClient.SqlClient) => {
  const table = sql(tables.claims)
  return (id: string, owner: string) => sql<HeldRow>`DELETE FROM ${table} WHERE id = ${id} AND owner = ${owner}`
}

/** True when the rows of `takeClaim` say `owner` holds the claim. */
const claimed = (rows: ReadonlyArray<HeldRow>, owner: string): boolean =>
  rows.length === 1 && rows[0]!["owner"] === owner

/** One table of keys and values. */
interface Table {
  readonly name: string
  /** The artifacts table: its `size` and `created_at` columns, and its cap on a value's stored bytes. */
  readonly artifacts?: { readonly maxBytes: number } | undefined
  /** Deletes expired rows (at most once per its interval): run after writes, its failure ignored. */
  readonly sweep: Effect.Effect<void, SqlError.SqlError>
  /** Whether `sweep` at `now` (the `Clock`'s milliseconds) would delete: false within its interval of the last. */
  readonly sweepDue: (now: number) => boolean
  /**
   * Whether the database's text is UTF-8 (`PRAGMA encoding`; always on Postgres): the keyed views'
   * `CAST`s between a value's bytes and text are exact only then (on a UTF-16 file they would convert).
   */
  readonly utf8Text: boolean
}

/**
 * The store of the keys of `table` under `prefix` (`""`: every key), whose writes expire `ttl`
 * milliseconds later (`undefined`: never); `withTtl` gives the same store with another ttl.
 */
const tableStore = (
  sql: SqlClient.SqlClient,
  held: Held | undefined,
  ids: (key: string) => StoredId,
  table: Table,
  prefix: string,
  ttl: number | undefined
): KeyValueStore.KeyValueStore => {
  const t = sql(table.name)
  const listed = "coalesce(full_key, id)"
  const lock = sql.onDialectOrElse({ pg: () => sql.literal("FOR UPDATE"), orElse: () => sql.literal("") })
  const now = Effect.map(Clock.currentTimeMillis, Math.floor)
  const live = (at: number) => sql`(expires_at IS NULL OR expires_at > ${at})`
  // a keyed call reads and writes one key in a row: its id is made once
  let lastKey: string | undefined
  let lastId: StoredId = { id: "", full: null }
  const idOf = (key: string): StoredId => key === lastKey ? lastId : (lastKey = key, lastId = ids(`${prefix}${key}`))
  /** What an error about `key` must not say: the key, its id, and a string value. */
  const secretsOf = (key: string | undefined, value?: string | Uint8Array): ReadonlyArray<string> => {
    if (key === undefined) return []
    const { full, id } = idOf(key)
    return [key, id, ...(full === null ? [] : [full]), ...(typeof value === "string" ? [value] : [])]
  }
  const failed = (method: string, key?: string, value?: string | Uint8Array) => (cause: unknown) =>
    cause instanceof KeyValueStoreError ? cause : kvError(method, cause, secretsOf(key, value))

  /** `value` as stored, under the artifacts cap: text over it truncated, bytes over it refused. */
  const capped = (value: string | Uint8Array): Effect.Effect<Stored, KeyValueStore.KeyValueStoreError> => {
    const stored = storedOf(value)
    const maxBytes = table.artifacts?.maxBytes
    if (maxBytes === undefined || stored.bytes.length <= maxBytes) return Effect.succeed(stored)
    if (typeof value !== "string") return Effect.fail(tooLarge(value.length, maxBytes))
    return Effect.succeed({ bytes: truncateText(value, maxBytes), type: ValueTypeString })
  }
  const upsertValue = (id: string, bytes: Uint8Array, type: number, full: string | null, expires: number | null) =>
    sql<HeldRow>`INSERT INTO ${t} (id, value, value_type, full_key, expires_at)
      VALUES (${id}, ${bytes}, ${type}, ${full}, ${expires})
      ON CONFLICT (id) DO UPDATE SET value = excluded.value, value_type = excluded.value_type,
        full_key = excluded.full_key, expires_at = excluded.expires_at`
  const upsertArtifact = (
    id: string,
    bytes: Uint8Array,
    type: number,
    size: number,
    at: number,
    expires: number | null,
    full: string | null
  ) =>
    sql<HeldRow>`INSERT INTO ${t} (id, value, value_type, size, created_at, expires_at, full_key)
      VALUES (${id}, ${bytes}, ${type}, ${size}, ${at}, ${expires}, ${full})
      ON CONFLICT (id) DO UPDATE SET value = excluded.value, value_type = excluded.value_type,
        size = excluded.size, created_at = excluded.created_at, expires_at = excluded.expires_at,
        full_key = excluded.full_key`
  /** The upsert of `key` with the statements `value` and `artifact` (held or not). */
  const upsertWith = (
    value: (...args: Parameters<typeof upsertValue>) => Effect.Effect<unknown, SqlError.SqlError>,
    artifact: (...args: Parameters<typeof upsertArtifact>) => Effect.Effect<unknown, SqlError.SqlError>
  ) =>
  (key: string, stored: Stored, at: number) => {
    const { full, id } = idOf(key)
    const expires = ttl === undefined ? null : at + ttl
    return table.artifacts === undefined
      ? value(id, stored.bytes, stored.type, full, expires)
      : artifact(id, stored.bytes, stored.type, stored.bytes.length, at, expires, full)
  }
  // inside `modify`'s transaction: through `effect/sql`; alone (`set`): held on SQLite
  const upsert = upsertWith(upsertValue, upsertArtifact)
  const upsertHeld = upsertWith(
    statementOf(held, "write", upsertValue, () => undefined),
    statementOf(held, "write", upsertArtifact, () => undefined)
  )
  const select = (id: string, at: number) => sql<HeldRow>`SELECT value, value_type FROM ${t} WHERE id = ${id} AND ${live(at)}`
  const selectRow = statementOf(held, "first", select, (rows) => rows[0] as Row | undefined)
  const found = statementOf(
    held,
    "first",
    (id: string, at: number) => sql<HeldRow>`SELECT 1 AS found FROM ${t} WHERE id = ${id} AND ${live(at)}`,
    (rows) => rows.length > 0
  )
  const deleteRow = statementOf(
    held,
    "write",
    (id: string) => sql<HeldRow>`DELETE FROM ${t} WHERE id = ${id}`,
    () => undefined
  )
  const swept = <A, E, R>(write: Effect.Effect<A, E, R>) => Effect.tap(write, () => Effect.ignore(table.sweep))

  const read = (method: string, key: string) =>
    Effect.flatMap(now, (at) => selectRow(idOf(key).id, at)).pipe(Effect.mapError(failed(method, key)))
  const set = (key: string, value: string | Uint8Array) =>
    swept(
      Effect.flatMap(capped(value), (stored) => Effect.flatMap(now, (at) => upsertHeld(key, stored, at))).pipe(
        Effect.mapError(failed("set", key, value))
      )
    )
  /** `modify` in one transaction: the row is locked (`FOR UPDATE` on pg; sqlite's `BEGIN IMMEDIATE` holds the write lock). */
  const modify = <A extends string | Uint8Array>(method: string, key: string, f: (row: Row) => A) =>
    swept(
      Effect.flatMap(now, (at) =>
        sql.withTransaction(Effect.gen(function*() {
          const rows = yield* sql<Row>`SELECT value, value_type FROM ${t} WHERE id = ${idOf(key).id} AND ${live(at)} ${lock}`
          if (rows.length === 0) return undefined
          const next = f(rows[0]!)
          yield* upsert(key, yield* capped(next), at)
          return next
        }))).pipe(Effect.mapError(failed(method, key)))
    )
  const where = (start: string) => startsWith(sql, listed, encodeId(`${prefix}${start}`))
  const keys = Effect.flatMap(now, (at) =>
    sql<{ id: string }>`SELECT ${sql.literal(listed)} AS id FROM ${t} WHERE ${where("")} AND ${live(at)}`).pipe(
    Effect.map((rows) => rows.map((row) => decodeId(row.id).slice(prefix.length))),
    Effect.mapError(failed("keys"))
  )
  const size = Effect.flatMap(now, (at) =>
    sql<{ n: number | string }>`SELECT count(*) AS n FROM ${t} WHERE ${where("")} AND ${live(at)}`).pipe(
    Effect.map((rows) => Number(rows[0]?.n ?? 0)),
    Effect.mapError(failed("size"))
  )
  const clearPrefix = (start: string) =>
    sql`DELETE FROM ${t} WHERE ${where(start)}`.pipe(Effect.asVoid, Effect.mapError(failed("clearPrefix", start)))
  const store = KeyValueStore.make({
    get: (key) => Effect.map(read("get", key), (row) => row === undefined ? undefined : stringOf(row)),
    getUint8Array: (key) => Effect.map(read("getUint8Array", key), (row) => row === undefined ? undefined : bytesOf(row)),
    has: (key) => Effect.flatMap(now, (at) => found(idOf(key).id, at)).pipe(Effect.mapError(failed("has", key))),
    set,
    modify: (key, f) => modify("modify", key, (row) => f(stringOf(row))),
    modifyUint8Array: (key, f) => modify("modifyUint8Array", key, (row) => f(bytesOf(row))),
    remove: (key) => deleteRow(idOf(key).id).pipe(Effect.mapError(failed("remove", key))),
    clear: clearPrefix(""),
    clearPrefix,
    keys,
    size,
    isEmpty: Effect.map(size, (n) => n === 0)
  })
  const expiringStore = expiring(store, (millis) => tableStore(sql, held, ids, table, prefix, millis))
  // the executor's keyed calls (`internal/storeNow`): reads by plain calls, and a look at the result and
  // the claim and a result's write in the write transaction plain calls share (not the capped artifacts table)
  if (held === undefined || table.artifacts !== undefined || prefix === "" || !table.utf8Text) return expiringStore
  const name = prefix.slice(0, -1)
  // a string's row read as SQLite's text of its bytes (`textOf`), not as bytes then decoded
  const valueRead = sql.literal(`CASE WHEN value_type = ${ValueTypeString} THEN CAST(value AS TEXT) ELSE value END`)
  const selectText = heldTextOnce((id: string, at: number) =>
    sql<HeldRow>`SELECT ${valueRead} AS value, value_type FROM ${t} WHERE id = ${id} AND ${live(at)}`
  )
  let reader: ReturnType<Held["nowValues"]> | undefined
  const selectNow = (id: string, at: number, fiber: Fiber.Fiber<unknown, unknown> | undefined) => {
    const args: [string, number] = [id, at]
    return (reader ??= held.nowValues(selectText(args)))(args, fiber)
  }
  const claimsTable = sql(tables.claims)
  // (two statements: for a key with neither, the common case, cheaper than one that joins them)
  const claimText = heldTextOnce((id: string) =>
    sql<HeldRow>`SELECT owner FROM ${claimsTable} WHERE id = ${id} AND expires_at > ${databaseMillis(sql)}`
  )
  // a string bound as text, stored as its UTF-8 bytes by SQLite (`CAST`: the bytes `storedOf` makes, with no copy made here)
  const upsertText = heldTextOnce((id: string, value: string | Uint8Array, type: number, full: string | null, expires: number | null) =>
    sql<HeldRow>`INSERT INTO ${t} (id, value, value_type, full_key, expires_at)
      VALUES (${id}, CAST(${value} AS BLOB), ${type}, ${full}, ${expires})
      ON CONFLICT (id) DO UPDATE SET value = excluded.value, value_type = excluded.value_type,
        full_key = excluded.full_key, expires_at = excluded.expires_at`
  )
  const takeText = heldTextOnce(takeClaim(sql))
  return withStoreNow(expiringStore, {
    get: (key, at, fiber) => {
      const row = selectNow(idOf(key).id, Math.floor(at), fiber)
      return row === undefined || row === later
        ? row
        : textOf(row[0] as TextRow["value"], row[1] as TextRow["value_type"])
    },
    claims: {
      // the claims of `name` (`sqlClaims`): their id of a key is the store's (`<name>/<key>`)
      look: (key, at, fiber) => {
        const { id } = idOf(key)
        const selectArgs: [string, number] = [id, Math.floor(at)]
        const claimArgs: [string] = [id]
        let joined: Joined<LookedRow> | typeof later
        try {
          joined = held.joined(fiber, (statement) => {
            const row = statement(selectText(selectArgs)).get(...selectArgs) as TextRow | undefined
            const claimed = statement(claimText(claimArgs)).get(...claimArgs) !== undefined
            return new LookedRow(row === undefined ? undefined : textOf(row.value, row.value_type), claimed, name, key, secretsOf)
          })
        } catch {
          return later // the effect looks again, and says what failed
        }
        if (joined === later) return later
        joined.value.waited = joined.committed
        return joined.value
      },
      claim: (key, owner, lease, fiber) => {
        const takeArgs: [string, string, number] = [idOf(key).id, owner, Math.max(0, Math.floor(lease))]
        try {
          const joined = held.joined(fiber, (statement) =>
            claimed(statement(takeText(takeArgs)).all(...takeArgs) as ReadonlyArray<HeldRow>, owner))
          return joined === later ? later : joined.value
        } catch {
          return later
        }
      },
      put: (key, value, ttl, at, fiber) => {
        const { full, id } = idOf(key)
        // (a string with a lone surrogate is stored as its UTF-16, as `set` stores it)
        const stored = loneSurrogate.test(value) ? storedOf(value) : undefined
        const upsertArgs: [string, string | Uint8Array, number, string | null, number | null] = [
          id,
          stored === undefined ? value : stored.bytes,
          stored === undefined ? ValueTypeString : stored.type,
          full,
          ttl === undefined ? null : Math.floor(at) + Math.max(1, Math.ceil(ttl))
        ]
        let joined: Joined<void> | typeof later
        try {
          joined = held.joined(fiber, (statement) => void statement(upsertText(upsertArgs)).run(...upsertArgs))
        } catch (cause) {
          return Effect.fail(failed("set", key, value)(cause))
        }
        if (joined === later) return later
        const committed = Effect.mapError(joined.committed, (cause) => failed("set", key, value)(cause))
        // the sweep after a write, when one is due (checked by a plain call: not an effect per write)
        return table.sweepDue(at) ? swept(committed) : committed
      }
    }
  })
}

/** What a look in the shared write transaction found (`storeNow`'s `Looked`), with the wait for its commit. */
class LookedRow implements Looked {
  readonly stored: string | undefined
  readonly claimed: boolean
  readonly name: string
  readonly key: string
  /** What an error about `key` must not say (the table's). */
  readonly secretsOf: (key: string) => ReadonlyArray<string>
  /** The transaction's commit, as the held statements answer it. */
  waited: Effect.Effect<void, SqlError.SqlError> = Effect.void
  constructor(
    stored: string | undefined,
    claimed: boolean,
    name: string,
    key: string,
    secretsOf: (key: string) => ReadonlyArray<string>
  ) {
    this.stored = stored
    this.claimed = claimed
    this.name = name
    this.key = key
    this.secretsOf = secretsOf
  }
  committed(): Effect.Effect<void, StoreFailed> {
    const { key, name, secretsOf } = this
    return Effect.mapError(this.waited, (cause) =>
      new StoreFailed({ store: name, operation: "read", cause: scrubSqlError(cause, secretsOf(key)) }))
  }
}

/**
 * Claims of store `name`: one upsert that takes a free, expired or own row, atomic in the database,
 * with expiry on the database's clock (so processes on machines whose clocks differ agree).
 */
const sqlClaims = (
  sql: SqlClient.SqlClient,
  held: Held | undefined,
  ids: (key: string) => StoredId,
  name: string
): Claims => {
  const failed = (operation: string, key: string, id: string) => (cause: unknown) =>
    new StoreFailed({ store: name, operation, cause: scrubSqlError(cause, [key, `${name}/${key}`, id]) })
  const take = statementOf(held, "write", takeClaim(sql), (rows) => rows)
  const free = statementOf(held, "write", freeClaim(sql), () => undefined)
  return {
    acquire: (key, owner, lease) => {
      const { id } = ids(`${name}/${key}`)
      return take(id, owner, Math.max(0, Math.floor(lease))).pipe(
        Effect.map((rows) => claimed(rows, owner)),
        Effect.mapError(failed("claim", key, id))
      )
    },
    release: (key, owner) => {
      const { id } = ids(`${name}/${key}`)
      return free(id, owner).pipe(Effect.mapError(failed("release", key, id)))
    }
  }
}

/** Why an artifact write was refused: a binary value over the cap (text is truncated instead). No key: errors never carry one. */
export const tooLarge = (size: number, maxBytes: number): KeyValueStore.KeyValueStoreError =>
  new KeyValueStoreError({
    method: "set",
    message: `an artifact of ${size} bytes is over the cap of ${maxBytes} bytes`
  })

/** The smallest artifact cap a layer accepts: room for the truncation note and some text. */
export const minArtifactBytes = 1024

/** Throws a `RangeError` when `policy.maxBytes` is not an integer of at least {@link minArtifactBytes}. */
export const checkArtifactPolicy = (policy: ArtifactPolicy | undefined): void => {
  const maxBytes = policy?.maxBytes
  if (maxBytes !== undefined && !(Number.isSafeInteger(maxBytes) && maxBytes >= minArtifactBytes)) {
    throw new RangeError(`artifacts.maxBytes must be an integer of at least ${minArtifactBytes} bytes, got ${maxBytes}`)
  }
}

/** `text` cut to at most `maxBytes` UTF-8 bytes, on a character boundary, with a note saying so (never over `maxBytes`). */
export const truncateText = (text: string, maxBytes: number): Uint8Array => {
  const bytes = encoder.encode(text)
  let note = encoder.encode(`\n[truncated by the artifact store: ${bytes.length} bytes, cap ${maxBytes}]\n`)
  if (note.length > maxBytes) note = note.subarray(0, Math.max(0, maxBytes)) // ASCII: any cut is a boundary
  let end = Math.max(0, maxBytes - note.length)
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end-- // not inside a UTF-8 sequence
  const out = new Uint8Array(end + note.length)
  out.set(bytes.subarray(0, end))
  out.set(note, end)
  return out
}

/**
 * A registry backend on `sql`: creates (or upgrades) the tables, then gives the key-value store, the
 * claims, and the views of store names (the artifacts store on its own table, with its policy).
 */
export const sqlBackend = (
  sql: SqlClient.SqlClient,
  artifacts: ArtifactPolicy = {},
  held?: Held
): Effect.Effect<Backend, SqlError.SqlError> =>
  Effect.gen(function*() {
    const raw = sql.withoutTransforms()
    yield* createTables(raw)
    const ids = idsOf(raw)
    // (a SQLite file made elsewhere may hold its text as UTF-16: the keyed views then stay off)
    const utf8Text = yield* raw.onDialectOrElse({
      sqlite: () => Effect.map(raw<{ encoding: string }>`PRAGMA encoding`, (rows) => rows[0]?.encoding === "UTF-8"),
      orElse: () => Effect.succeed(true)
    })
    const store: Table = { name: tables.store, ...sweeper(raw, tables.store, storeSweepEvery), utf8Text }
    const artifactTable: Table = {
      utf8Text,
      name: tables.artifacts,
      artifacts: { maxBytes: artifacts.maxBytes ?? 16 * 1024 * 1024 },
      ...sweeper(raw, tables.artifacts, Duration.toMillis(Duration.fromInputUnsafe(artifacts.sweepEvery ?? "10 minutes")))
    }
    const artifactTtl = artifacts.ttl === undefined
      ? undefined
      : Math.max(1, Math.ceil(Duration.toMillis(Duration.fromInputUnsafe(artifacts.ttl))))
    const artifactName = artifacts.store ?? "artifacts"
    return {
      store: tableStore(raw, held, ids, store, "", undefined),
      claims: (name) => sqlClaims(raw, held, ids, name),
      view: (name) =>
        name === artifactName
          ? tableStore(raw, held, ids, artifactTable, `${name}/`, artifactTtl)
          : tableStore(raw, held, ids, store, `${name}/`, undefined)
    } satisfies Backend
  })
