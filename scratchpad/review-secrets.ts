import { Effect, Layer, Result, Schema } from "effect"
import { DatabaseSync } from "node:sqlite"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { ChatModel, Tool, ToolRegistry } from "../src/index.ts"
import { DurableAgent, Runner } from "../src/durable/index.ts"
import * as Stores from "../src/stores/Stores.ts"

const SECRET = "hunter2-TOPSECRET"
const login = Tool.make("login", {
  description: "Logs in.",
  input: Schema.Struct({ user: Schema.String, password: Schema.String }),
  safety: { access: "read", idempotent: true, redact: { keys: ["password"] } },
  handler: ({ user }) => Effect.succeed(`logged in ${user}`)
})
const model = ChatModel.fromFunction((req) => {
  const turn = req.messages.filter((m) => m.role === "tool").length
  return Effect.succeed(turn === 0 ? ChatModel.callTools([["c1", "login", { user: "bob", password: SECRET }]]) : ChatModel.answer("ok"))
})
const tools = Result.getOrThrow(ToolRegistry.makeResult([login]))
const agent = DurableAgent.make({ name: "sec", tools, pollInterval: "50 millis", approval: () => false })
const db = join(mkdtempSync(join(tmpdir(), "review-sec-")), "j.db")
const program = Effect.gen(function*() {
  yield* agent.start("r1", [{ role: "user", content: "log in" }])
  const r = yield* agent.result("r1")
  console.log("result contains secret:", JSON.stringify(r).includes(SECRET))
})
const runner = Runner.layerSqlite({ filename: db, pollInterval: "50 millis" })
await Effect.runPromise(program.pipe(Effect.provide(agent.layer.pipe(Layer.provide(Layer.mergeAll(model, Stores.layerMemory)), Layer.provideMerge(runner)))))
const d = new DatabaseSync(db)
for (const { name } of d.prepare("SELECT name FROM sqlite_master WHERE type='table'").all() as Array<{name: string}>) {
  const st = d.prepare(`SELECT * FROM ${name}`); st.setReadBigInts(true); const rows = st.all()
  const hits = rows.filter((row) => JSON.stringify(row, (_k, v) => typeof v === "bigint" ? String(v) : v instanceof Uint8Array ? Buffer.from(v).toString() : v).includes(SECRET))
  if (hits.length > 0) console.log(`table ${name}: ${hits.length} row(s) with the secret:`, JSON.stringify(hits[0], (_k, v) => typeof v === "bigint" ? String(v) : v instanceof Uint8Array ? Buffer.from(v).toString() : v).slice(0, 400))
}
process.exit(0)
