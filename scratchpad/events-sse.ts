// A run's events as plain server-sent events for any front-end, decoded back with the event Schemas.
import { Effect, Layer, ManagedRuntime, Schema } from "effect"
import { Agent, ChatModel, EventSse, Tool, ToolRegistry, ToolServices } from "tinyagents"

const add = Tool.make("add", { description: "Adds two integers.", input: Schema.Struct({ a: Schema.Int, b: Schema.Int }), handler: ({ a, b }) => Effect.succeed(a + b) })
const model = ChatModel.scripted([ChatModel.callTools([["c1", "add", { a: 2, b: 3 }]]), ChatModel.answer("5")])
const runtime = ManagedRuntime.make(Layer.merge(model, ToolServices.layerTest()))

// The server: each event one `data:` message, in its Schema's JSON form.
const response = await runtime.runPromise(Effect.flatMap(ToolRegistry.make([add]), (tools) =>
  EventSse.toResponse(Agent.stream({ messages: [{ role: "user", content: "2 + 3?" }], tools }))))

// The client (a browser's EventSource hands over each message's data the same way): decode with the Schema.
const decode = Schema.decodeUnknownSync(Schema.fromJsonString(EventSse.MessageJson))
for (const frame of (await response.text()).split("\n\n").filter((frame) => frame !== "")) {
  const message = decode(frame.slice("data: ".length))
  console.log(message._tag, message._tag === "tool.completed" ? message.output : message._tag === "agent.finished" ? message.text : "")
}
await runtime.dispose()
