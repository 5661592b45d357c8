import { Effect, Layer, Result, Schema, Stream } from "effect"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { ChatModel, Tool, ToolRegistry } from "../src/index.ts"
import { DurableAgent, Runner } from "../src/durable/index.ts"
import * as Stores from "../src/stores/Stores.ts"

const ran: Array<string> = []
let slow = true
const read = Tool.make("read", {
  description: "Reads.", input: Schema.Struct({ n: Schema.Number }), safety: { access: "read", idempotent: true },
  handler: ({ n }) => Effect.andThen(Effect.sync(() => ran.push(`read ${n}`)), Effect.as(Effect.sleep(slow ? "5 seconds" : "1 millis"), `read ${n}`))
})
const write = Tool.make("write", {
  description: "Writes.", input: Schema.Struct({ n: Schema.Number }), safety: { access: "write" },
  handler: ({ n }) => Effect.andThen(Effect.sync(() => ran.push(`write ${n}`)), Effect.as(Effect.sleep(slow ? "5 seconds" : "1 millis"), `wrote ${n}`))
})
const model = ChatModel.fromFunction((req) => {
  const turn = req.messages.filter((m) => m.role === "tool").length
  if (turn === 0) return Effect.succeed(ChatModel.callTools([["a", "read", { n: 1 }], ["b", "write", { n: 2 }]]))
  return Effect.succeed(ChatModel.answer("done"))
})
const tools = Result.getOrThrow(ToolRegistry.makeResult([read, write]))
const agent = DurableAgent.make({ name: "sd", tools, pollInterval: "50 millis" })
const db = join(mkdtempSync(join(tmpdir(), "review-sd-")), "j.db")
const runner = () => agent.layer.pipe(Layer.provide(Layer.mergeAll(model, Stores.layerMemory)),
  Layer.provideMerge(Runner.layerSqlite({ filename: db, pollInterval: "50 millis", lockExpiration: "1 second", shutdownTimeout: "10 millis" })))
await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
  yield* agent.start("r1", [{ role: "user", content: "x" }])
  yield* Effect.sleep("1500 millis")
}).pipe(Effect.provide(runner()))))
console.log("after graceful stop, ran:", ran)
slow = false
await Effect.runPromise(Effect.gen(function*() {
  const r = yield* agent.result("r1")
  console.log("ran:", ran)
  console.log(JSON.stringify(r.results.map((x) => [x.toolCallId, x.isError, x.content[0]])))
  const ev = Array.from(yield* Stream.runCollect(agent.events("r1")))
  console.log(ev.map((e) => e._tag + (e._tag === "tool.failed" ? `(${e.reason},${e.outcome ?? ""})` : "")).join(" "))
}).pipe(Effect.provide(runner())))
process.exit(0)
