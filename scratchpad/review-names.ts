import { Effect, Layer, Result, Schema, Stream } from "effect"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { ChatModel, Tool, ToolRegistry } from "../src/index.ts"
import { DurableAgent, Runner } from "../src/durable/index.ts"
import * as Stores from "../src/stores/Stores.ts"

const read = Tool.make("read", {
  description: "Reads.", input: Schema.Struct({ n: Schema.Number }), safety: { access: "read", idempotent: true },
  handler: ({ n }) => Effect.succeed(`read ${n}`)
})
const model = ChatModel.fromFunction((req) => {
  const user = req.messages.find((m) => m.role === "user")
  const turn = req.messages.filter((m) => m.role === "tool").length
  const text = user?.role === "user" ? user.content : ""
  if (text === "A" && turn === 0) return Effect.succeed(ChatModel.callTools([["a", "read", { n: 1 }]]))
  return Effect.succeed(ChatModel.answer(`answer to ${text}`))
})
const tools = Result.getOrThrow(ToolRegistry.makeResult([read]))
const a = DurableAgent.make({ name: "alpha", tools, pollInterval: "50 millis" })
const b = DurableAgent.make({ name: "beta", tools, pollInterval: "50 millis" })
const db = join(mkdtempSync(join(tmpdir(), "review-names-")), "j.db")
const layer = Layer.mergeAll(a.layer, b.layer).pipe(Layer.provide(Layer.mergeAll(model, Stores.layerMemory)),
  Layer.provideMerge(Runner.layerSqlite({ filename: db, pollInterval: "50 millis" })))
await Effect.runPromise(Effect.gen(function*() {
  yield* a.start("run-1", [{ role: "user", content: "A" }])
  console.log("alpha:", (yield* a.result("run-1")).text)
  yield* b.start("run-1", [{ role: "user", content: "B" }])
  console.log("beta:", (yield* b.result("run-1")).text)
  const evB = Array.from(yield* Stream.runCollect(b.events("run-1")))
  console.log("beta events:", evB.map((e) => e._tag === "agent.finished" ? `finished(${e.text})` : e._tag).join(" "))
}).pipe(Effect.provide(layer)))
process.exit(0)
