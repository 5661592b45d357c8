/**
 * Receipts in SQL: the executor with `auditLog` (JSONL and SQL sinks) and `consent` writes one row per
 * call with the receipt's fields as columns; the documented query answers "every destructive call
 * this week, with its consent decision" on SQLite and on Postgres (PGlite); a model-chosen key or
 * call id holding NUL or a lone surrogate still gets its receipt (escaped in the text columns).
 */
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import { PgClient } from "@effect/sql-pg"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Effect, FileSystem, Layer, Redacted, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { TestClock } from "effect/testing"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { DatabaseSync } from "node:sqlite"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Approval } from "../../src/governance/Approval.ts"
import { AuditLog, auditLog, consent } from "../../src/governance/middleware/index.ts"
import { Tool } from "../../src/index.ts"
import { SqlAudit, SqliteClient } from "../../src/stores/index.ts"
import { call, executorOf, makeCounter, makeTools, services } from "../middleware/fixtures.ts"
import type { PgliteServer } from "../support/postgres.ts"
import { startPglite } from "../support/postgres.ts"

const dir = mkdtempSync(join(tmpdir(), "tinyagents-audit-"))
let pglite: PgliteServer | undefined
beforeAll(async () => {
  pglite = await startPglite()
}, 60_000)
afterAll(async () => {
  await pglite?.stop()
  rmSync(dir, { recursive: true, force: true })
})

const approvals = Approval.layerRules([
  { name: "no-delete-all", match: (r) => r.toolName === "delete_all", decide: "deny", reason: "not today" },
  { name: "rest", match: () => true, decide: "approve" }
])

/** A tool marked destructive by its safety metadata although its access is `write`. */
const wipeCache = Tool.make("wipe_cache", {
  description: "Deletes a cache. Destructive.",
  input: Schema.Struct({ name: Schema.String }),
  safety: { access: "write", destructive: true },
  handler: () => Effect.succeed("wiped")
})

const day = 24 * 60 * 60 * 1000
const monday = Date.UTC(2026, 10, 16) // the week starts; the test clock begins a week before it

/**
 * Runs destructive and harmless calls last week and this week, through consent and the SQL sink
 * (`clock`: false on the live clock, where every call is this week's).
 */
const produceReceipts = (clock: boolean) => Effect.gen(function*() {
  const tools = makeTools(makeCounter())
  const jsonlDir = join(dir, `jsonl-${Math.random().toString(36).slice(2)}`)
  const executor = yield* executorOf(
    [...tools.all, wipeCache],
    [auditLog(AuditLog.all<FileSystem.FileSystem | SqlClient.SqlClient>([AuditLog.jsonl(jsonlDir), SqlAudit.sink()])), consent()]
  )
  if (clock) {
    yield* TestClock.setTime(monday - 3 * day)
    yield* executor.run(call("old-1", "wipe_cache", { name: "last-week" }))
    yield* TestClock.setTime(monday + day)
  }
  yield* executor.run(call("c1", "echo", { text: "hi" }))
  yield* executor.run(call("c2", "delete_all"))
  yield* executor.run(call("c3", "wipe_cache", { name: "thumbnails" }))
  yield* executor.run(call("c4", "write_note", { key: "k", text: "t" }))
  return readFileSync(AuditLog.receiptPath(jsonlDir, "run-1"), "utf8").trim().split("\n").map((line) =>
    JSON.parse(line) as AuditLog.Receipt
  )
})

const expected = [
  { tool: "delete_all", call_id: "c2", status: "consent_denied", consent_decision: "denied", consent_decided_by: "rule:no-delete-all" },
  { tool: "wipe_cache", call_id: "c3", status: "ok", consent_decision: "approved", consent_decided_by: "rule:rest" }
]

describe("SqlAudit", () => {
  it.effect("SQLite: every receipt is a row (same fields as the JSONL line); the documented query finds this week's destructive calls", () =>
    Effect.gen(function*() {
      const jsonl = yield* produceReceipts(true)
      const sql = yield* SqlClient.SqlClient
      const rows = yield* sql<Record<string, unknown>>`SELECT * FROM tinyagents_receipts ORDER BY emit_order`
      assert.strictEqual(rows.length, 5)
      assert.deepStrictEqual(rows.map((r) => JSON.parse(r["receipt"] as string)), jsonl, "the wire format, whole")
      const c3 = rows.find((r) => r["call_id"] === "c3")!
      const receipt = jsonl.find((r) => r.callId === "c3")!
      assert.deepStrictEqual(
        { ...c3, audit: undefined, receipt: undefined },
        { ...SqlAudit.rowOf(receipt), audit: undefined, receipt: undefined }
      )
      assert.strictEqual(c3["arguments_sha256"], receipt.argumentsSha256)
      assert.strictEqual(c3["access"], "write")

      const found = yield* SqlAudit.destructiveCallsSince(monday)
      assert.deepStrictEqual(found.map(({ started_at: _, run_id: __, ...rest }) => rest), expected)
      assert.isTrue(found.every((r) => r.started_at >= monday && r.run_id === "run-1"))
      // the documented query text, as is, on the same file
      const db = new DatabaseSync(filename)
      try {
        const raw = db.prepare(SqlAudit.destructiveCallsQuery).all(monday) as Array<Record<string, unknown>>
        assert.deepStrictEqual(raw.map((r) => r["call_id"]), ["c2", "c3"])
      } finally {
        db.close()
      }
    }).pipe(Effect.provide([services, approvals, NodeFileSystem.layer, SqliteClient.layer({ filename })])))

  it.live("Postgres (PGlite): the same rows and the same answer", () =>
    Effect.gen(function*() {
      const since = Date.now() - 1_000
      yield* produceReceipts(false)
      const found = yield* SqlAudit.destructiveCallsSince(since)
      assert.deepStrictEqual(found.map(({ started_at: _, run_id: __, ...rest }) => rest), expected)
      const sql = yield* SqlClient.SqlClient
      const [count] = yield* sql<{ n: string }>`SELECT count(*) AS n FROM tinyagents_receipts`
      assert.strictEqual(Number(count!.n), 4)
    }).pipe(
      Effect.provide([
        services,
        approvals,
        NodeFileSystem.layer,
        Layer.unwrap(Effect.sync(() => PgClient.layer({ url: Redacted.make(pglite!.url), maxConnections: 1 })))
      ])
    ))
})

const filename = join(dir, "audit.db")

/** A keyed write tool whose idempotency key the model chooses (the table name). */
const upsertRow = Tool.make("upsert_row", {
  description: "Upserts a row into a table, once per table.",
  input: Schema.Struct({ table: Schema.String }),
  safety: { access: "write" },
  idempotency: ({ table }) => table,
  handler: ({ table }) => Effect.succeed(`upserted into ${table}`)
})

/** Keyed calls whose key and call id hold what SQL text cannot: each is applied and has its receipt. */
const oddReceipts = Effect.gen(function*() {
  const executor = yield* executorOf([upsertRow], [auditLog(SqlAudit.sink())])
  const odd = [["c\u0000nul", "users\u0000x"], ["c-lone", "users\uD800"], ["c-pair", "users🦀\\u0000"]] as const
  for (const [id, table] of odd) {
    const result = yield* executor.run(call(id, "upsert_row", { table }))
    assert.isFalse(result.isError, `${JSON.stringify(table)}: ${result.error?.message}`)
  }
  const sql = (yield* SqlClient.SqlClient).withoutTransforms()
  const rows = yield* sql<{ call_id: string; idempotency_key: string; receipt: string }>`
    SELECT call_id, idempotency_key, receipt FROM tinyagents_receipts WHERE tool = 'upsert_row' ORDER BY emit_order`
  const receipts = rows.map((row) => JSON.parse(row.receipt) as AuditLog.Receipt)
  assert.deepStrictEqual(receipts.map((r) => [r.callId, r.idempotencyKey]), odd.map(([id, table]) => [id, table]), "the receipt column keeps them exactly")
  assert.deepStrictEqual(
    rows.map((row) => [row.call_id, row.idempotency_key]),
    [["c\\u0000nul", "users\\u0000x"], ["c-lone", "users\\ud800"], ["c-pair", "users🦀\\u0000"]],
    "text columns hold them escaped, JSON-style"
  )
})

describe("SqlAudit: keys and ids that SQL text cannot hold (NUL, lone surrogates)", () => {
  it.effect("SQLite: the call is applied and its receipt written", () =>
    oddReceipts.pipe(Effect.provide([services, SqliteClient.layer({ filename: join(dir, "odd.db") })])))

  it.live("Postgres (PGlite): the call is applied and its receipt written (a NUL in text would fail the insert)", () =>
    oddReceipts.pipe(Effect.provide([
      services,
      Layer.unwrap(Effect.sync(() => PgClient.layer({ url: Redacted.make(pglite!.url), maxConnections: 1 })))
    ])))
})
