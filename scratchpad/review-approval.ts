import { Effect, Layer, Result, Schema, Stream } from "effect"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Approval, ChatModel, Tool, ToolRegistry } from "../src/index.ts"
import { DurableAgent, Runner } from "../src/durable/index.ts"
import * as Stores from "../src/stores/Stores.ts"

const sent: Array<string> = []
const send = Tool.make("send", {
  description: "Sends money.",
  input: Schema.Struct({ to: Schema.String, amount: Schema.Number }),
  safety: { access: "mutate" },
  handler: ({ to, amount }) => Effect.sync(() => (sent.push(`${to}:${amount}`), `sent ${amount} to ${to}`))
})
// like Gemini's generated ids: position-based, the same in every turn
const model = ChatModel.fromFunction((req) => {
  const turn = req.messages.filter((m) => m.role === "tool").length
  if (turn === 0) return Effect.succeed(ChatModel.callTools([["gemini-call:0:0:send", "send", { to: "alice", amount: 5 }]]))
  if (turn === 1) return Effect.succeed(ChatModel.callTools([["gemini-call:0:0:send", "send", { to: "mallory", amount: 5000 }]]))
  return Effect.succeed(ChatModel.answer("done"))
})
const tools = Result.getOrThrow(ToolRegistry.makeResult([send]))
const agent = DurableAgent.make({ name: "appr", tools, pollInterval: "50 millis", approval: (call) => call.name === "send" })
const db = join(mkdtempSync(join(tmpdir(), "review-appr-")), "j.db")
const program = Effect.gen(function*() {
  yield* agent.start("r1", [{ role: "user", content: "pay" }])
  yield* Effect.sleep("1 second")
  console.log("before approval, sent:", sent)
  yield* agent.approve("r1", "gemini-call:0:0:send", Approval.approve("alice-approver"))
  const r = yield* agent.result("r1")
  console.log("result:", r.text, "sent:", sent)
  const events = Array.from(yield* Stream.runCollect(agent.events("r1")))
  console.log(events.map((e) => e._tag + ("toolCallId" in e ? `(${(e as any).toolCallId})` : "")).join(" "))
})
const runner = Runner.layerSqlite({ filename: db, pollInterval: "50 millis" })
await Effect.runPromise(program.pipe(Effect.provide(agent.layer.pipe(Layer.provide(Layer.mergeAll(model, Stores.layerMemory)), Layer.provideMerge(runner)))))
process.exit(0)
