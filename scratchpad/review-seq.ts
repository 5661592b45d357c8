import { Effect, Layer, Result, Schema, Stream } from "effect"
import { Approval, ChatModel, Tool, ToolRegistry } from "../src/index.ts"
import { DurableAgent, Runner } from "../src/durable/index.ts"
import * as Stores from "../src/stores/Stores.ts"

const sent: Array<string> = []
const send = Tool.make("send", {
  description: "Sends.", input: Schema.Struct({ to: Schema.String }), safety: { access: "mutate" },
  handler: ({ to }) => Effect.sync(() => (sent.push(to), `sent to ${to}`))
})
const model = ChatModel.fromFunction((req) => {
  const turn = req.messages.filter((m) => m.role === "tool").length
  return Effect.succeed(turn === 0 ? ChatModel.callTools([["c1", "send", { to: "a" }], ["c2", "send", { to: "b" }]]) : ChatModel.answer("done"))
})
const tools = Result.getOrThrow(ToolRegistry.makeResult([send]))
const agent = DurableAgent.make({ name: "edit", tools, pollInterval: "20 millis", approval: () => true })
await Effect.runPromise(Effect.gen(function*() {
  yield* agent.start("r1", [{ role: "user", content: "x" }])
  yield* Effect.sleep("300 millis")
  console.log("pending requests after 300ms:", Array.from(yield* Stream.runCollect(Stream.take(agent.events("r1"), 3))).map((e) => e._tag + ("toolCallId" in e ? `(${(e as any).toolCallId})` : "")));
  yield* Effect.sleep("500 millis"); const seen = yield* Stream.runCollect(Stream.take(agent.events("r1"), 4).pipe(Stream.timeout("1 second"))); console.log("events after 800ms:", Array.from(seen).map((e) => e._tag + ("toolCallId" in e ? `(${(e as any).toolCallId})` : "")).join(" "));
  yield* agent.approve("r1", "c1", Approval.approve("x")); yield* agent.approve("r1", "c2", Approval.approve("x"))
  const r = yield* agent.result("r1")
  console.log("sent:", sent, "result:", JSON.stringify(r.results[0]?.content))
}).pipe(Effect.provide(agent.layer.pipe(Layer.provide(Layer.mergeAll(model, Stores.layerMemory)), Layer.provideMerge(Layer.fresh(Runner.layerMemory))))))
process.exit(0)
