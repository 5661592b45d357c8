// The inspector inside an application: an EventSink that serves the page for the runs as they happen.
import { Effect, Schema, Stream } from "effect"
import { Agent, ChatModel, Tool, ToolRegistry, ToolServices } from "tinyagents"
import { layerLive } from "tinyagents/inspect"

const send = Tool.make("send", {
  description: "Sends a message.",
  input: Schema.Struct({ to: Schema.String, body: Schema.String }),
  safety: { access: "write", redact: { keys: ["to"] } }, // the page shows "to" as [redacted]
  handler: ({ body }) => Effect.succeed(`sent ${body}`)
})

const program = Effect.gen(function*() {
  const tools = yield* ToolRegistry.make([send])
  yield* Stream.runDrain(Agent.stream({ messages: [{ role: "user", content: "Mail the report" }], tools }))
  // a real application keeps running here; the page stays up while the layer is in use
})

Effect.runPromise(program.pipe(
  Effect.provide(ChatModel.scripted([
    ChatModel.callTools([["c1", "send", { to: "alice@example.com", body: "Q3 report" }]], "Sending."),
    ChatModel.answer("Sent.")
  ])),
  // innermost: its EventSink replaces the test services' own
  Effect.provide(layerLive({ onReady: (url) => console.log(`inspector: ${url.replace(/:\d+$/, ":<port>")}`) })),
  Effect.provide(ToolServices.layerTest())
))
