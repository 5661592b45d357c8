// Agents as tools, and handoffs: a nested agent's events form a tree; a conversation moves between agents.
import { Effect, Schema } from "effect"
import { Agent, ChatModel, EventSink, Handoff, Tool, ToolRegistry, ToolServices } from "tinyagents"

const add = Tool.make("add", {
  description: "Adds two integers.",
  input: Schema.Struct({ a: Schema.Int, b: Schema.Int }),
  handler: ({ a, b }) => Effect.succeed(a + b)
})
const usage = (inputTokens: number, outputTokens: number) => ({ inputTokens, outputTokens })

const supervisor = ChatModel.scripted([
  { ...ChatModel.callTools([["c1", "researcher", { task: "Q3 revenue?" }]]), usage: usage(30, 6) },
  { ...ChatModel.answer("Q3 revenue was 1245 kEUR."), usage: usage(50, 7) }
])

const nested = Effect.gen(function*() {
  // A researcher agent (its own model and tools) as a tool whose input is a Schema.
  const researcher = Agent.asTool({
    system: "You research with arithmetic.",
    tools: yield* ToolRegistry.make([add]),
    model: ChatModel.scripted([
      { ...ChatModel.callTools([["r1", "add", { a: 1200, b: 45 }]]), usage: usage(40, 8) },
      { ...ChatModel.answer("Q3 revenue is 1245 kEUR."), usage: usage(60, 9) }
    ])
  }, { name: "researcher", description: "Answers a research question.", input: Schema.Struct({ task: Schema.String }) })
  const tools = yield* ToolRegistry.make([researcher])
  const result = yield* Agent.run({ messages: [{ role: "user", content: "How did Q3 go?" }], tools }).pipe(Effect.provide(supervisor))
  console.log(`answer: ${result.text}`)
  console.log(`usage: ${result.usage.inputTokens} in, ${result.usage.outputTokens} out (the researcher's included)`)
})

// Handoffs: triage hands the conversation to billing, which sees only the task.
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
const handoffs = Effect.gen(function*() {
  const result = yield* Handoff.run({
    agents: {
      triage: {
        system: "You route customers.",
        tools: yield* ToolRegistry.make([transfer]),
        model: ChatModel.scripted([ChatModel.callTools([["t1", "transfer", { to: "billing", task: "Refund order 42." }]])])
      },
      billing: {
        system: "You do refunds.",
        tools: yield* ToolRegistry.make([refund]),
        model: ChatModel.fromFunction((request) =>
          Effect.succeed(
            request.messages.at(-1)?.role === "tool"
              ? ChatModel.answer("Order 42 is refunded.")
              : ChatModel.callTools([["b1", "refund", { order: 42 }]])
          )
        )
      }
    },
    start: "triage",
    messages: [{ role: "user", content: "My order 42 arrived broken, I want my money back." }],
    inputFilter: Handoff.taskOnly
  })
  console.log(`${result.transfers.map((t) => `${t.from} -> ${t.to}`).join(", ")}; ${result.agent} saw:`, result.transcript.slice(0, 2))
  console.log(`${result.agent} answered: ${result.text}`)
})

// Every event, indented by its depth: the researcher's run sits under the supervisor's call c1.
const log = ToolServices.layerTest({ runId: "run" })
const tree = Effect.flatMap(
  EventSink.EventLog.use((l) => l.all),
  (events) =>
    Effect.sync(() => {
      for (const e of events) {
        const call = "toolCallId" in e ? ` ${e.toolName} ${e.toolCallId}` : ""
        const where = e.depth === undefined ? "" : ` (in ${e.parentRunId} call ${e.parentCallId})`
        console.log(`${"  ".repeat(e.depth ?? 0)}${e._tag}${call}${where}`)
      }
    })
)
Effect.runPromise(
  Effect.andThen(Effect.andThen(nested, tree), handoffs).pipe(Effect.provide([log, ChatModel.scripted([])]))
)
