// Audit receipts in SQL next to the JSONL files, and the question an operator asks of them:
// "every destructive call this week, with its consent decision".
import { NodeFileSystem } from "@effect/platform-node"
import { Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { FileSystem } from "effect"
import { mkdirSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Approval, Executor, Tool, ToolRegistry, ToolServices } from "tinyagents"
import { AuditLog, auditLog, consent, stack } from "tinyagents/middleware"
import { SqlAudit, SqliteClient } from "tinyagents/stores"

const dropTable = Tool.make("drop_table", {
  description: "Drops a table. Destructive.",
  input: Schema.Struct({ table: Schema.String }),
  safety: { access: "mutate" }, // mutate is destructive unless `destructive: false`
  handler: ({ table }) => Effect.succeed(`dropped ${table}`)
})

const dir = join(tmpdir(), `tinyagents-audit-${process.pid}`)
mkdirSync(dir, { recursive: true })
const receipts = AuditLog.all<FileSystem.FileSystem | SqlClient.SqlClient>([AuditLog.jsonl(dir), SqlAudit.sink()])

const program = Effect.gen(function*() {
  const executor = yield* Executor.make(yield* ToolRegistry.make([dropTable]), {
    middleware: stack(auditLog(receipts), consent())
  })
  yield* executor.run({ id: "c1", name: "drop_table", arguments: { table: "sessions" } })
  yield* executor.run({ id: "c2", name: "drop_table", arguments: { table: "users" } })
  const weekAgo = Date.now() - 7 * 24 * 60 * 60 * 1000
  for (const row of yield* SqlAudit.destructiveCallsSince(weekAgo)) {
    console.log(row.tool, row.call_id, row.status, row.consent_decision, row.consent_decided_by)
  }
})

const approvals = Approval.layerRules([
  { name: "keep-users", match: (r) => JSON.stringify(r.arguments).includes("users"), decide: "deny", reason: "not the users" },
  { name: "rest", match: () => true, decide: "approve" }
])
const services = Layer.mergeAll(
  ToolServices.layerTest(),
  approvals,
  NodeFileSystem.layer,
  SqliteClient.layer({ filename: join(dir, "receipts.db") })
)
Effect.runPromise(program.pipe(Effect.provide(services)))
