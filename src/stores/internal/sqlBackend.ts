/**
 * The machinery of the SQL stores, for any `SqlClient` (the sqlite and pg dialects): the tables,
 * the key-value store (Effect's `KeyValueStore.layerSql`, with a `modify` that is atomic across
 * processes and prefixed views that list only their own keys), claims as one atomic upsert, and the
 * artifacts table with its size cap and expiry. The public surface is `Stores` and `Postgres`.
 *
 * Ids: SQL text cannot hold every JS string (a lone surrogate becomes U+FFFD, so two keys would share
 * a row; Postgres refuses NUL). A key with a lone surrogate, a NUL or U+FFFF is stored as its start up
 * to the first such code unit, then U+FFFF, then every remaining UTF-16 code unit as 4 hex digits
 * ({@link encodeId}): reversible, never equal to a key stored as itself (those have no U+FFFF), and
 * prefix-preserving (`encodeId(p + r)` starts with `encodeId(p)`), so prefix queries stay exact.
 *
 * Claims expire on the database's clock (one clock for every process sharing it), not the `Clock`.
 */
import { Clock, Duration, Effect, Layer, Semaphore } from "effect"
import { KeyValueStore } from "effect/persistence"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql"
import { StoreFailed } from "../../contract/ToolError.ts"
import type { Backend, Claims } from "../../runtime/StoreRegistry.ts"

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

const ValueTypeString = 0
const ValueTypeBytes = 1
const encoder = new TextEncoder()
const decoder = new TextDecoder()

/** Creates the claims and artifacts tables (the key-value table is `layerSql`'s). */
const createTables = (sql: SqlClient.SqlClient): Effect.Effect<void, SqlError.SqlError> =>
  Effect.gen(function*() {
    const claims = sql(tables.claims)
    const artifacts = sql(tables.artifacts)
    yield* sql`CREATE TABLE IF NOT EXISTS ${claims} (
      id TEXT PRIMARY KEY,
      owner TEXT NOT NULL,
      expires_at BIGINT NOT NULL
    )`
    const bytes = sql.onDialectOrElse({ pg: () => sql.literal("BYTEA"), orElse: () => sql.literal("BLOB") })
    yield* sql`CREATE TABLE IF NOT EXISTS ${artifacts} (
      id TEXT PRIMARY KEY,
      value ${bytes} NOT NULL,
      value_type SMALLINT NOT NULL,
      size BIGINT NOT NULL,
      created_at BIGINT NOT NULL,
      expires_at BIGINT
    )`
    yield* sql`CREATE INDEX IF NOT EXISTS ${sql(`${tables.artifacts}_expires`)} ON ${artifacts} (expires_at)`
  })

const kvError = (method: string, key: string | undefined, cause: unknown): KeyValueStore.KeyValueStoreError =>
  new KeyValueStoreError({
    method,
    message: key === undefined ? `Unable to ${method}` : `Unable to ${method} item with key ${key}`,
    ...(key === undefined ? {} : { key }),
    cause
  })
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

/** `id` starts with the (encoded) `prefix`: compared exactly (not with LIKE), counting characters as SQL does. */
const startsWith = (sql: SqlClient.SqlClient, prefix: string) =>
  sql`substr(id, 1, ${Array.from(prefix).length}) = ${prefix}`

/** Keys (decoded) of `table` that start with `prefix`. */
const keysWithPrefix = (sql: SqlClient.SqlClient, table: string, prefix: string) =>
  Effect.map(
    sql<{ id: string }>`SELECT id FROM ${sql(table)} WHERE ${startsWith(sql, encodeId(prefix))}`,
    (rows) => rows.map((row) => decodeId(row.id))
  )

/** The database's time in milliseconds, as an SQL expression (claims expire on it). */
const databaseMillis = (sql: SqlClient.SqlClient) =>
  sql.onDialectOrElse({
    pg: () => sql.literal("(extract(epoch from clock_timestamp()) * 1000)::bigint"),
    orElse: () => sql.literal("CAST(unixepoch('subsec') * 1000 AS INTEGER)")
  })

/**
 * `modify` in one transaction: the row is locked (`FOR UPDATE` on pg; on sqlite the transaction
 * began with `BEGIN IMMEDIATE` holds the write lock), so concurrent modifies, in any process, are
 * applied one after another.
 */
const atomicModify = (sql: SqlClient.SqlClient, kv: KeyValueStore.KeyValueStore) =>
(
  key: string,
  f: (value: Uint8Array, type: number) => string | Uint8Array
): Effect.Effect<string | Uint8Array | undefined, KeyValueStore.KeyValueStoreError> => {
  const table = sql(tables.store)
  const lock = sql.onDialectOrElse({ pg: () => sql.literal("FOR UPDATE"), orElse: () => sql.literal("") })
  return sql.withTransaction(Effect.gen(function*() {
    const rows = yield* sql<{ value: Uint8Array; value_type: number }>`
      SELECT value, value_type FROM ${table} WHERE id = ${encodeId(key)} ${lock}`
    if (rows.length === 0) return undefined
    const next = f(rows[0]!.value, Number(rows[0]!.value_type))
    yield* kv.set(encodeId(key), next)
    return next
  })).pipe(Effect.mapError((cause) => cause._tag === "KeyValueStoreError" ? cause : kvError("modify", key, cause)))
}

/** The key-value store of `sql`: `layerSql`'s, with `modify` atomic across processes. */
const keyValueStore = (sql: SqlClient.SqlClient) =>
  Effect.gen(function*() {
    const context = yield* Layer.build(
      KeyValueStore.layerSql({ table: tables.store }).pipe(Layer.provide(Layer.succeed(SqlClient.SqlClient, sql)))
    )
    const kv = yield* Effect.service(KeyValueStore.KeyValueStore).pipe(Effect.provideContext(context))
    const modify = atomicModify(sql, kv)
    return {
      ...kv,
      get: (key) => kv.get(encodeId(key)),
      getUint8Array: (key) => kv.getUint8Array(encodeId(key)),
      set: (key, value) => kv.set(encodeId(key), value),
      remove: (key) => kv.remove(encodeId(key)),
      has: (key) => kv.has(encodeId(key)),
      clearPrefix: (prefix) => kv.clearPrefix(encodeId(prefix)),
      keys: Effect.map(kv.keys, (ids) => ids.map(decodeId)),
      size: kv.size,
      isEmpty: kv.isEmpty,
      modify: (key, f) =>
        Effect.map(
          modify(key, (bytes, type) => f(type === ValueTypeString ? decoder.decode(bytes) : Buffer.from(bytes).toString("base64"))),
          (value) => value === undefined ? undefined : value as string
        ),
      modifyUint8Array: (key, f) =>
        Effect.map(modify(key, (bytes) => f(bytes)), (value) => value as Uint8Array | undefined)
    } satisfies KeyValueStore.KeyValueStore
  })

/** The view of store `name` over the key-value table: prefixed, listing only its own keys. */
const prefixedView = (
  sql: SqlClient.SqlClient,
  kv: KeyValueStore.KeyValueStore,
  name: string
): KeyValueStore.KeyValueStore => {
  const prefix = `${name}/`
  const keys = keysWithPrefix(sql, tables.store, prefix).pipe(
    Effect.map((ids) => ids.map((id) => id.slice(prefix.length))),
    Effect.mapError((cause) => kvError("keys", undefined, cause))
  )
  return {
    ...KeyValueStore.prefix(kv, prefix),
    keys,
    size: Effect.map(keys, (all) => all.length),
    isEmpty: Effect.map(keys, (all) => all.length === 0)
  }
}

/**
 * Claims of store `name`: one upsert that takes a free, expired or own row, atomic in the database,
 * with expiry on the database's clock (so processes on machines whose clocks differ agree).
 */
const sqlClaims = (sql: SqlClient.SqlClient, name: string): Claims => {
  const table = sql(tables.claims)
  const now = databaseMillis(sql)
  const failed = (operation: string) => (cause: unknown) => new StoreFailed({ store: name, operation, cause })
  return {
    acquire: (key, owner, lease) => {
      const id = encodeId(`${name}/${key}`)
      return sql<{ owner: string }>`
        INSERT INTO ${table} (id, owner, expires_at) VALUES (${id}, ${owner}, ${now} + ${Math.max(0, Math.floor(lease))})
        ON CONFLICT (id) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
        WHERE ${table}.owner = excluded.owner OR ${table}.expires_at <= ${now}
        RETURNING owner`.pipe(
        Effect.map((rows) => rows.length === 1 && rows[0]!.owner === owner),
        Effect.mapError(failed("claim"))
      )
    },
    release: (key, owner) =>
      sql`DELETE FROM ${table} WHERE id = ${encodeId(`${name}/${key}`)} AND owner = ${owner}`.pipe(
        Effect.asVoid,
        Effect.mapError(failed("release"))
      )
  }
}

/** Why an artifact write was refused: a binary value over the cap (text is truncated instead). */
export const tooLarge = (key: string, size: number, maxBytes: number): KeyValueStore.KeyValueStoreError =>
  new KeyValueStoreError({
    method: "set",
    key,
    message: `artifact ${key} is ${size} bytes, over the cap of ${maxBytes} bytes`
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
 * The artifacts store: its own table (value bytes, size, creation and expiry time), with text over
 * `maxBytes` truncated, binary values over it refused, expired rows unreadable and swept on writes
 * at most once per `sweepEvery`.
 */
const artifactStore = (
  sql: SqlClient.SqlClient,
  name: string,
  policy: ArtifactPolicy
): KeyValueStore.KeyValueStore => {
  const table = sql(tables.artifacts)
  const prefix = `${name}/`
  const maxBytes = policy.maxBytes ?? 16 * 1024 * 1024
  const ttl = policy.ttl === undefined ? undefined : Duration.toMillis(Duration.fromInputUnsafe(policy.ttl))
  const sweepEvery = Duration.toMillis(Duration.fromInputUnsafe(policy.sweepEvery ?? "10 minutes"))
  const sweeping = Semaphore.makeUnsafe(1)
  let lastSweep = Number.NEGATIVE_INFINITY
  const sweep = Effect.flatMap(Clock.currentTimeMillis, (now) =>
    now - lastSweep < sweepEvery ? Effect.void : sweeping.withPermits(1)(
      sql`DELETE FROM ${table} WHERE expires_at IS NOT NULL AND expires_at <= ${Math.floor(now)}`.pipe(
        Effect.tap(() => Effect.sync(() => void (lastSweep = now)))
      )
    ))
  const read = (key: string) =>
    Effect.flatMap(Clock.currentTimeMillis, (now) =>
      sql<{ value: Uint8Array; value_type: number }>`
        SELECT value, value_type FROM ${table}
        WHERE id = ${encodeId(`${prefix}${key}`)} AND (expires_at IS NULL OR expires_at > ${Math.floor(now)})`).pipe(
      Effect.map((rows) => rows[0]),
      Effect.mapError((cause) => kvError("get", key, cause))
    )
  const write = (key: string, value: string | Uint8Array) =>
    Effect.gen(function*() {
      const text = typeof value === "string"
      const raw = text ? encoder.encode(value) : value
      if (!text && raw.length > maxBytes) return yield* Effect.fail(tooLarge(key, raw.length, maxBytes))
      const bytes = raw.length > maxBytes ? truncateText(value as string, maxBytes) : raw
      const now = yield* Clock.currentTimeMillis
      const expires = ttl === undefined ? null : Math.floor(now + ttl)
      yield* sql`
        INSERT INTO ${table} (id, value, value_type, size, created_at, expires_at)
        VALUES (${encodeId(`${prefix}${key}`)}, ${bytes}, ${text ? ValueTypeString : ValueTypeBytes}, ${bytes.length}, ${
        Math.floor(now)
      }, ${expires})
        ON CONFLICT (id) DO UPDATE SET value = excluded.value, value_type = excluded.value_type,
          size = excluded.size, created_at = excluded.created_at, expires_at = excluded.expires_at`.pipe(
        Effect.mapError((cause) => kvError("set", key, cause))
      )
      yield* sweep.pipe(Effect.ignore)
    })
  const keys = Effect.flatMap(Clock.currentTimeMillis, (now) =>
    sql<{ id: string }>`SELECT id FROM ${table} WHERE ${startsWith(sql, encodeId(prefix))}
      AND (expires_at IS NULL OR expires_at > ${Math.floor(now)})`).pipe(
    Effect.map((rows) => rows.map((row) => decodeId(row.id).slice(prefix.length))),
    Effect.mapError((cause) => kvError("keys", undefined, cause))
  )
  const clearPrefix = (more: string) =>
    sql`DELETE FROM ${table} WHERE ${startsWith(sql, encodeId(prefix + more))}`.pipe(
      Effect.asVoid,
      Effect.mapError((cause) => kvError("clearPrefix", more, cause))
    )
  return KeyValueStore.make({
    get: (key) =>
      Effect.map(read(key), (row) =>
        row === undefined
          ? undefined
          : Number(row.value_type) === ValueTypeString
          ? decoder.decode(row.value)
          : Buffer.from(row.value).toString("base64")),
    getUint8Array: (key) => Effect.map(read(key), (row) => row?.value),
    set: write,
    remove: (key) =>
      sql`DELETE FROM ${table} WHERE id = ${encodeId(`${prefix}${key}`)}`.pipe(
        Effect.asVoid,
        Effect.mapError((cause) => kvError("remove", key, cause))
      ),
    clear: clearPrefix(""),
    clearPrefix,
    keys,
    size: Effect.map(keys, (all) => all.length)
  })
}

/** A registry backend on `sql`: creates the tables, then the store, claims and artifacts view. */
export const sqlBackend = (
  sql: SqlClient.SqlClient,
  artifacts: ArtifactPolicy = {}
) =>
  Effect.gen(function*() {
    const raw = sql.withoutTransforms()
    const kv = yield* keyValueStore(raw)
    yield* createTables(raw)
    const artifactName = artifacts.store ?? "artifacts"
    return {
      store: kv,
      claims: (name) => sqlClaims(raw, name),
      view: (name) => name === artifactName ? artifactStore(raw, name, artifacts) : prefixedView(raw, kv, name)
    } satisfies Backend
  })
