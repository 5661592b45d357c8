import { Effect, Layer, Result, Schema } from "effect"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Agent, ChatModel, EventSink, RunContext, Tool, ToolRegistry } from "../src/index.ts"
import { DurableAgent, Runner } from "../src/durable/index.ts"
import * as Stores from "../src/stores/Stores.ts"

const sent: Array<string> = []
const send = Tool.make("send", {
  description: "Sends.",
  input: Schema.Struct({ to: Schema.String }),
  safety: { access: "mutate" },
  handler: ({ to }) => Effect.sync(() => (sent.push(to), `sent to ${to}`))
})
const model = ChatModel.fromFunction((req) => {
  const turn = req.messages.filter((m) => m.role === "tool").length
  if (turn === 0) return Effect.succeed(ChatModel.callTools([["c1", "send", { to: "alice" }], ["c1", "send", { to: "bob" }]]))
  return Effect.succeed(ChatModel.answer("done"))
})
const tools = Result.getOrThrow(ToolRegistry.makeResult([send]))
const agent = DurableAgent.make({ name: "dup", tools, pollInterval: "50 millis" })
const db = join(mkdtempSync(join(tmpdir(), "review-dup-")), "j.db")
const services = Layer.mergeAll(model, Stores.layerMemory)
// plain Agent.run for comparison
const plain = await Effect.runPromise(Agent.run({ tools, messages: [{ role: "user", content: "x" }] }).pipe(
  Effect.provide(Layer.mergeAll(services, EventSink.layerDiscard, RunContext.layer({ runId: "p", threadId: "p", turn: 0 }))),
  Effect.exit
)).catch((e) => String(e))
console.log("Agent.run: sent", [...sent], JSON.stringify((plain as any)?.value?.results?.map((r: any) => r.content) ?? plain).slice(0, 300))
sent.length = 0
const program = Effect.gen(function*() {
  yield* agent.start("r1", [{ role: "user", content: "x" }])
  const r = yield* agent.result("r1")
  console.log("durable: sent", sent, JSON.stringify(r.results.map((x) => [x.toolCallId, x.content])))
})
const runner = Runner.layerSqlite({ filename: db, pollInterval: "50 millis" })
await Effect.runPromise(program.pipe(Effect.provide(agent.layer.pipe(Layer.provide(services), Layer.provideMerge(runner)))))
process.exit(0)
