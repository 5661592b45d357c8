import { Effect, Layer, Result, Schema, Scope, Exit } from "effect"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { ChatModel, Tool, ToolRegistry } from "../src/index.ts"
import { DurableAgent, Runner } from "../src/durable/index.ts"
import * as Stores from "../src/stores/Stores.ts"

const ran: Array<string> = []
const read = Tool.make("read", {
  description: "Reads.",
  input: Schema.Struct({ n: Schema.Number }),
  safety: { access: "read", idempotent: true },
  handler: ({ n }) => Effect.sync(() => (ran.push(`read ${n}`), `read ${n}`))
})
let slowOnce = false
const model = ChatModel.fromFunction((req) => {
  const turn = req.messages.filter((m) => m.role === "tool").length
  if (turn === 0) return Effect.succeed(ChatModel.callTools([["a", "read", { n: 1 }], ["b", "read", { n: 2 }]]))
  if (turn === 1) {
    const answer = ChatModel.callTools([["c", "read", { n: 3 }], ["d", "read", { n: 4 }]])
    if (slowOnce) { slowOnce = false; return Effect.as(Effect.sleep("3 seconds"), answer) }
    return Effect.succeed(answer)
  }
  return Effect.succeed(ChatModel.answer("done"))
})
const tools = Result.getOrThrow(ToolRegistry.makeResult([read]))
const agent = DurableAgent.make({ name: "lim", tools, pollInterval: "50 millis", limits: { run: { max: 2 } } })
const db = join(mkdtempSync(join(tmpdir(), "review-lim-")), "j.db")
const runner = () => agent.layer.pipe(Layer.provide(Layer.mergeAll(model, Stores.layerMemory)),
  Layer.provideMerge(Runner.layerSqlite({ filename: db, pollInterval: "50 millis", lockExpiration: "1 second", shutdownTimeout: "10 millis" })))
// first runner: start, let turn 0 finish, stop during turn 1
await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
  yield* agent.start("r1", [{ role: "user", content: "x" }])
  yield* Effect.sleep("1500 millis")
}).pipe(Effect.provide(runner()))))
console.log("after first runner, ran:", ran)
const r = await Effect.runPromise(agent.result("r1").pipe(Effect.provide(runner())))
console.log("ran:", ran)
console.log(JSON.stringify(r.results.map((x) => [x.toolCallId, x.isError, x.content[0]])))
process.exit(0)
