/**
 * Table creation that is safe when several processes start at once. Postgres's
 * `CREATE TABLE IF NOT EXISTS` is not atomic across sessions: two sessions creating the
 * same table can both pass the check and one fails (a unique violation in the catalog).
 * So on Postgres the statements run in a transaction holding one transaction-scoped
 * advisory lock, and a second process waits for the first to finish instead of failing.
 * On SQLite they run in one transaction (`BEGIN IMMEDIATE`: the write lock), so a check
 * followed by a change (a column added to an older table) is not raced either. Every tinyagents
 * table is created under it: the stores' and the durable journal's.
 */
import { Effect } from "effect"
import type { SqlClient, SqlError } from "effect/sql"

/** The advisory lock key every tinyagents schema change takes (an arbitrary constant). */
const lockKey = 7_294_317_001

/** Runs `create` (idempotent DDL) under the schema lock on Postgres, in one transaction elsewhere. */
export const withSchemaLock = <A, E, R>(
  sql: SqlClient.SqlClient,
  create: Effect.Effect<A, E, R>
): Effect.Effect<A, E | SqlError.SqlError, R> =>
  sql.onDialectOrElse({
    pg: () => sql.withTransaction(Effect.andThen(sql`SELECT pg_advisory_xact_lock(${lockKey})`, create)),
    orElse: () => sql.withTransaction(create)
  })
