// A tool with a typed failure: the handler may fail only with the error it declares as `failure`
// (or a ToolError); the model reads it as a repair message, the application gets its fields.
import { Effect, Schema } from "effect"
import { Agent, ChatModel, Tool, ToolRegistry, ToolResult, ToolServices } from "tinyagents"

class OrderNotFound extends Schema.TaggedError<OrderNotFound>()("OrderNotFound", {
  orderId: Schema.String,
  known: Schema.Array(Schema.String)
}) {
  override get message() { // what the model reads, after the tool's name
    return `no order ${this.orderId}; known orders: ${this.known.join(", ")}`
  }
}

const orders = new Map([["A-17", "shipped"], ["A-18", "packing"]])

const findOrder = Tool.make("find_order", {
  description: "Looks up an order's status by its id.",
  input: Schema.Struct({ orderId: Schema.String }),
  output: Schema.Struct({ status: Schema.String }),
  failure: OrderNotFound, // failing with anything else is a compile error
  safety: { access: "read", idempotent: true },
  handler: ({ orderId }) =>
    Effect.gen(function*() {
      const status = orders.get(orderId)
      if (status === undefined) return yield* new OrderNotFound({ orderId, known: [...orders.keys()] })
      return { status }
    })
})

const lastResult = (request: ChatModel.Request) =>
  request.messages.flatMap((m) => (m.role === "tool" ? m.results : [])).at(-1)!
const model = ChatModel.scripted([
  ChatModel.callTools([["call_1", "find_order", { orderId: "A-71" }]]), // a typo
  (request) => { // the model reads the failure and repairs its call
    console.log(`model reads: ${ToolResult.textOf(lastResult(request))}`)
    return ChatModel.callTools([["call_2", "find_order", { orderId: "A-17" }]])
  },
  (request) => ChatModel.answer(`Order A-17 is ${JSON.parse(ToolResult.textOf(lastResult(request))).status}.`)
])

const program = Effect.gen(function*() {
  const run = yield* Agent.run({ messages: [{ role: "user", content: "Where is order A-71?" }], tools: yield* ToolRegistry.make([findOrder]) })
  const error = run.results.find((r) => r.isError)?.error // the error result of call_1
  if (error?._tag === "ToolFailure") console.log(`application sees: ${error.disposition}, ${JSON.stringify(error.detail)}`)
  console.log(`answer: ${run.text}`)
})

Effect.runPromise(program.pipe(Effect.provide([model, ToolServices.layerTest()])))
