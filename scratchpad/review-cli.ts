import { Effect, Layer, Result, Schema } from "effect"
import { spawnSync } from "node:child_process"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { ChatModel, Tool, ToolRegistry } from "../src/index.ts"
import { DurableAgent, Runner } from "../src/durable/index.ts"
import * as Stores from "../src/stores/Stores.ts"

const sent: Array<string> = []
const send = Tool.make("send", {
  description: "Sends.", input: Schema.Struct({ to: Schema.String }), safety: { access: "mutate" },
  handler: ({ to }) => Effect.sync(() => (sent.push(to), `sent to ${to}`))
})
const model = ChatModel.fromFunction((req) => {
  const turn = req.messages.filter((m) => m.role === "tool").length
  return Effect.succeed(turn === 0 ? ChatModel.callTools([["c1", "send", { to: "alice" }]]) : ChatModel.answer("done"))
})
const tools = Result.getOrThrow(ToolRegistry.makeResult([send]))
const agent = DurableAgent.make({ name: "mailer", tools, pollInterval: "50 millis", approval: () => true })
const dir = mkdtempSync(join(tmpdir(), "review-cli-"))
const db = join(dir, "j.db")
const cli = (...args: Array<string>) => {
  const r = spawnSync(process.execPath, ["--conditions=tinyagents-source", "src/cli/bin.ts", ...args], { encoding: "utf8", env: { ...process.env, NO_COLOR: "1" } })
  console.log(`$ tinyagents ${args.join(" ")}\n  exit=${r.status} stdout=${JSON.stringify(r.stdout.trim())} stderr=${JSON.stringify(r.stderr.trim().split("\n").slice(0, 3).join(" | "))}`)
}
const layer = agent.layer.pipe(Layer.provide(Layer.mergeAll(model, Stores.layerMemory)),
  Layer.provideMerge(Runner.layerSqlite({ filename: db, pollInterval: "50 millis" })))
await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
  yield* agent.start("run-1", [{ role: "user", content: "x" }])
  yield* Effect.sleep("1 second")
  const j = ["--db", db, "--workflow", "mailer"]
  cli("durable", "status", "nope", ...j)
  cli("durable", "status", "run-1", "--db", db, "--workflow", "mailr")
  cli("durable", "approve", "nope", "c1", ...j)
  cli("durable", "approve", "run-1", "c1", "--db", db, "--workflow", "mailr")
  cli("durable", "approve", "run-1", "c_typo", ...j)
  cli("durable", "approve", "run-1", "c1", ...j)
  cli("durable", "approve", "run-1", "c1", ...j, "--deny", "--reason", "changed my mind")
  console.log("result:", (yield* agent.result("run-1")).text, "sent:", sent)
  cli("durable", "approve", "run-1", "c1", ...j, "--deny", "--reason", "after finish")
  cli("durable", "status", "run-1", ...j)
  writeFileSync(join(dir, "empty.db"), "")
  cli("durable", "status", "run-1", "--db", join(dir, "empty.db"), "--workflow", "mailer")
  writeFileSync(join(dir, "junk.db"), "this is not sqlite at all, just some text padding ".repeat(200))
  cli("durable", "status", "run-1", "--db", join(dir, "junk.db"), "--workflow", "mailer")
  cli("durable", "status", "run-1", "--postgres", "postgres://127.0.0.1:1/nothing", "--workflow", "mailer")
})).pipe(Effect.provide(layer)))
process.exit(0)
