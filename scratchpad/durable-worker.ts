// A durable agent on a SQLite journal (argv: the database file; a fresh one when none is given). It sends two emails, one per model
// turn; each real send prints "sent <to>". Started again after a crash, it resumes the run from the
// journal: a journaled email is not sent again, a journaled model turn is not asked again.
import { Effect, Layer, Result, Schema } from "effect"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { ChatModel, Tool, ToolRegistry } from "tinyagents"
import { DurableAgent, Runner } from "tinyagents/durable"
import { Stores } from "tinyagents/stores"

const sendEmail = Tool.make("send_email", {
  description: "Sends an email, once per recipient.",
  input: Schema.Struct({ to: Schema.String }),
  safety: { access: "write" },
  idempotency: ({ to }) => to,
  handler: ({ to }) => Effect.sync(() => (console.log(`sent ${to}`), `sent to ${to}`))
})

// The model's answer is a function of the transcript: turn n emails the n-th recipient.
const model = ChatModel.fromFunction(({ messages }) => {
  const turn = messages.filter((m) => m.role === "tool").length
  const to = ["alice", "bob"][turn]
  const answer = to ? ChatModel.callTools([[`c${turn}`, "send_email", { to }]]) : ChatModel.answer("both sent")
  // prints when the model is really asked (inside the journaled turn), then thinks for 300 ms
  return Effect.as(Effect.andThen(Effect.sync(() => console.log(`model turn ${turn}`)), Effect.sleep("300 millis")), answer)
})

const tools = Result.getOrThrow(ToolRegistry.makeResult([sendEmail]))
const agent = DurableAgent.make({ name: "mailer", tools, pollInterval: "100 millis" })
const program = Effect.gen(function*() {
  yield* agent.start("run-1", [{ role: "user", content: "Email alice, then bob." }]) // a no-op when it exists
  console.log(`finished: ${(yield* agent.result("run-1")).text}`)
})
// The journal (runs, turns, calls) and the idempotency store in SQLite files beside each other.
const db = process.argv[2] ?? join(mkdtempSync(join(tmpdir(), "tinyagents-durable-")), "journal.db")
const runner = Runner.layerSqlite({ filename: db, pollInterval: "100 millis" })
const services = Layer.mergeAll(model, Stores.layerSqlite({ filename: `${db}.stores` }))
Effect.runPromise(program.pipe(Effect.provide(agent.layer.pipe(Layer.provide(services), Layer.provideMerge(runner)))))
  .then(() => process.exit(0))
