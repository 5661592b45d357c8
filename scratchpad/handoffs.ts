// Handoffs streamed and durable: triage hands the conversation to billing. `Handoff.stream` is one
// stream of both agents' events; a durable agent with `handoffs` journals billing's turns and calls
// too (under handoff-1/), so a resumed run goes on with billing without asking anything again.
import { Effect, Layer, Result, Schema, Stream } from "effect"
import { ChatModel, Handoff, Tool, ToolRegistry, ToolServices } from "tinyagents"
import { DurableAgent, Runner } from "tinyagents/durable"
import { Stores } from "tinyagents/stores"

const transfer = Tool.make("transfer", {
  description: "Hands the conversation to another agent.",
  input: Schema.Struct({ to: Schema.String, task: Schema.String }),
  handler: ({ task, to }) => Effect.succeed({ __handoff: { target: to, task } })
})
const refund = Tool.make("refund", {
  description: "Refunds an order.",
  input: Schema.Struct({ order: Schema.Int }),
  handler: ({ order }) => Effect.succeed(`order ${order} refunded`)
})
// Answers are functions of the transcript, as a durable run needs: a resumed run asks again only
// what it never journaled.
const triageModel = ChatModel.make({
  generate: () => Effect.succeed(ChatModel.callTools([["t1", "transfer", { to: "billing", task: "Refund order 42." }]]))
})
const billing = {
  system: "You do refunds.",
  tools: Result.getOrThrow(ToolRegistry.makeResult([refund])),
  model: ChatModel.make({
    generate: ({ messages }) =>
      Effect.succeed(
        messages.some((m) => m.role === "tool" && m.results[0]?.name === "refund")
          ? ChatModel.answer("Order 42 is refunded.")
          : ChatModel.callTools([["b1", "refund", { order: 42 }]])
      )
  })
}
const triageTools = Result.getOrThrow(ToolRegistry.makeResult([transfer]))
const messages = [{ role: "user" as const, content: "My order 42 arrived broken, I want my money back." }]

// 1. Streamed: every event of both agents, in order (the receiving agent's under run id run/handoff-1).
const streamed = Stream.runForEach(
  Handoff.stream({ agents: { triage: { tools: triageTools, model: triageModel }, billing }, start: "triage", messages }),
  (e) => Effect.sync(() => e._tag !== "agent.text_delta" && console.log(`${e.runId} ${e._tag}`))
).pipe(Effect.provide([ToolServices.layerTest({ runId: "run" }), ChatModel.scripted([])]))

// 2. Durable: the durable agent is triage (its `name`); billing is an agent it may hand over to.
const agent = DurableAgent.make({ name: "triage", tools: triageTools, handoffs: { agents: { billing } }, pollInterval: "20 millis" })
const durable = Effect.gen(function*() {
  yield* agent.start("order-42", messages)
  const result = yield* agent.result("order-42")
  const events = yield* Stream.runCollect(agent.events("order-42"))
  const handoff = events.find((e) => e._tag === "agent.handoff")
  console.log(`durable: ${handoff?._tag === "agent.handoff" ? `${handoff.runId} -> ${handoff.target}` : "no handoff"}; ${result.text}`)
}).pipe(
  Effect.provide(agent.layer.pipe(Layer.provide([Layer.succeed(ChatModel.ChatModel, triageModel), Stores.layerMemory]), Layer.provideMerge(Runner.layerMemory)))
)

Effect.runPromise(Effect.andThen(streamed, durable))
