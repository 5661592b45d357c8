/**
 * Audit receipts in SQL (SQLite or Postgres), queryable: an `AuditLog` sink that writes each receipt
 * as one row of `tinyagents_receipts`, its wire-format fields as columns (snake_case), the consent
 * decision lifted out of the audit into its own columns, and the receipt's JSON line kept whole in
 * `receipt`. Use it next to the JSONL sink (`AuditLog.all([AuditLog.jsonl(dir), SqlAudit.sink()])`).
 *
 * Booleans are `SMALLINT` 0/1 and times epoch milliseconds (`BIGINT`), so one query text runs on both
 * dialects. Text that SQL cannot hold (NUL, which Postgres refuses; a lone surrogate, which would become
 * U+FFFD) is written JSON-style escaped (`\u0000`, `\ud800`) in every text column, so a receipt is
 * always written, whatever ids and keys a model sent; the `receipt` column (JSON) keeps it exactly. "Every destructive call this week, with its consent decision" is {@link destructiveCallsQuery}
 * (run by {@link destructiveCallsSince}):
 *
 * ```sql
 * SELECT started_at, run_id, tool, call_id, status, consent_decision, consent_decided_by
 * FROM tinyagents_receipts
 * WHERE destructive = 1 AND started_at >= $since   -- since: the week's start, epoch ms
 * ORDER BY started_at, emit_order
 * ```
 */
import { Effect, Schedule } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql"
import { withSchemaLock } from "../internal/schemaLock.ts"
import type { Receipt, Sink } from "../governance/middleware/AuditLog.ts"

/** The receipts table. */
export const table = "tinyagents_receipts"

/** Creates the receipts table and its indexes when missing. */
export const createTable = (sql: SqlClient.SqlClient): Effect.Effect<void, SqlError.SqlError> =>
  Effect.gen(function*() {
    const t = sql(table)
    yield* sql`CREATE TABLE IF NOT EXISTS ${t} (
      tool TEXT NOT NULL,
      call_id TEXT NOT NULL,
      idempotency_key TEXT,
      run_id TEXT NOT NULL,
      thread_id TEXT NOT NULL,
      turn INTEGER NOT NULL,
      status TEXT NOT NULL,
      is_error SMALLINT NOT NULL,
      error TEXT,
      started_at BIGINT NOT NULL,
      ended_at BIGINT NOT NULL,
      duration_millis BIGINT NOT NULL,
      emit_order INTEGER NOT NULL,
      arguments_sha256 TEXT NOT NULL,
      result_sha256 TEXT,
      refused SMALLINT NOT NULL,
      access TEXT,
      destructive SMALLINT NOT NULL,
      consent_decision TEXT,
      consent_decided_by TEXT,
      consent_decided_at BIGINT,
      receipt_uri TEXT,
      audit TEXT NOT NULL,
      receipt TEXT NOT NULL
    )`
    yield* sql`CREATE INDEX IF NOT EXISTS ${sql(`${table}_started`)} ON ${t} (started_at)`
    yield* sql`CREATE INDEX IF NOT EXISTS ${sql(`${table}_run`)} ON ${t} (run_id, emit_order)`
  })

/** NUL or a lone surrogate (a pair is one code point under the `u` flag). */
const unsafeText = /\u0000|\p{Cs}/gu

/** `text` as SQL text holds it: NUL and lone surrogates as JSON-style escapes (`\u0000`, `\ud800`), the rest as is. */
export const sqlText = (text: string): string =>
  text.replace(unsafeText, (unit) => `\\u${unit.charCodeAt(0).toString(16).padStart(4, "0")}`)

const textOrNull = (text: string | undefined): string | null => text === undefined ? null : sqlText(text)

/** The row of a receipt (every text through {@link sqlText}). */
export const rowOf = (receipt: Receipt) => {
  const uri = receipt.audit.metadata?.["receiptUri"]
  return {
    tool: sqlText(receipt.tool),
    call_id: sqlText(receipt.callId),
    idempotency_key: textOrNull(receipt.idempotencyKey),
    run_id: sqlText(receipt.runId),
    thread_id: sqlText(receipt.threadId),
    turn: receipt.turn,
    status: sqlText(receipt.status),
    is_error: receipt.isError ? 1 : 0,
    error: textOrNull(receipt.error),
    started_at: receipt.startedAt,
    ended_at: receipt.endedAt,
    duration_millis: receipt.durationMillis,
    emit_order: receipt.emitOrder,
    arguments_sha256: sqlText(receipt.argumentsSha256),
    result_sha256: textOrNull(receipt.resultSha256),
    refused: receipt.refused === true ? 1 : 0,
    access: textOrNull(receipt.access),
    destructive: receipt.destructive === true ? 1 : 0,
    consent_decision: textOrNull(receipt.audit.consent?.decision),
    consent_decided_by: textOrNull(receipt.audit.consent?.decidedBy),
    consent_decided_at: receipt.audit.consent?.decidedAt ?? null,
    receipt_uri: typeof uri === "string" ? sqlText(uri) : null,
    // JSON escapes NUL and lone surrogates itself
    audit: sqlText(JSON.stringify(receipt.audit)),
    receipt: sqlText(JSON.stringify(receipt))
  }
}

/** Options of the SQL sink. */
export interface SinkOptions {
  /** Retries of a transient write failure (the database restarting) before the run stops. Default 3. */
  readonly retries?: number | undefined
}

/**
 * A sink that inserts each receipt into `tinyagents_receipts` in the database of the `SqlClient` in
 * context (the table is created on first write). As with the JSONL sink, a receipt that cannot be
 * written (after `retries` of a transient failure) is a defect: the run stops rather than go unaudited.
 */
export const sink = (options: SinkOptions = {}): Sink<SqlClient.SqlClient> => {
  let created = false
  return {
    write: (receipt) =>
      Effect.gen(function*() {
        const sql = (yield* SqlClient.SqlClient).withoutTransforms()
        if (!created) {
          yield* withSchemaLock(sql, createTable(sql))
          created = true
        }
        yield* sql`INSERT INTO ${sql(table)} ${sql.insert(rowOf(receipt))}`
      }).pipe(
        Effect.retry({
          schedule: Schedule.exponential("100 millis"),
          times: options.retries ?? 3,
          while: (error) => error.isRetryable
        }),
        Effect.orDie
      )
  }
}

/** A row of {@link destructiveCallsQuery}. */
export interface DestructiveCall {
  readonly started_at: number
  readonly run_id: string
  readonly tool: string
  readonly call_id: string
  readonly status: string
  readonly consent_decision: string | null
  readonly consent_decided_by: string | null
}

/**
 * "Every destructive call since `since` (epoch ms; a week ago for this week), with its consent
 * decision", as SQL text with one `?` parameter (the Postgres client numbers it): calls of tools whose
 * `safety` makes them destructive, in the order they started, refused calls excluded.
 */
export const destructiveCallsQuery = `SELECT started_at, run_id, tool, call_id, status, consent_decision, consent_decided_by
FROM ${table}
WHERE destructive = 1 AND started_at >= ?
ORDER BY started_at, emit_order`

/** Runs {@link destructiveCallsQuery} for calls that started at or after `since` (epoch milliseconds). */
export const destructiveCallsSince = (
  since: number
): Effect.Effect<ReadonlyArray<DestructiveCall>, SqlError.SqlError, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const sql = (yield* SqlClient.SqlClient).withoutTransforms()
    const rows = yield* sql<DestructiveCall>`SELECT started_at, run_id, tool, call_id, status, consent_decision, consent_decided_by
FROM ${sql(table)}
WHERE destructive = 1 AND started_at >= ${Math.floor(since)}
ORDER BY started_at, emit_order`
    return rows.map((row) => ({ ...row, started_at: Number(row.started_at) }))
  })
