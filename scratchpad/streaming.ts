// Streaming: a run as a Stream of events (model text, decided calls, tool progress, the answer).
import { Effect, Layer, Schema, Stream } from "effect"
import { Agent, ChatModel, Tool, ToolEvent, ToolProgress, ToolRegistry, ToolServices } from "tinyagents"

const index = Tool.make("index_documents", {
  description: "Indexes `n` documents, reporting progress.",
  input: Schema.Struct({ n: Schema.Int }),
  services: [ToolProgress.ToolProgress],
  handler: ({ n }) =>
    Effect.as(Effect.forEach([...Array(n).keys()], (i) =>
      Effect.andThen(Effect.sleep(150), ToolProgress.report({ message: `doc ${i + 1}`, count: i + 1, total: n }))), "ok")
})
const model = ChatModel.scripted([ChatModel.callTools([["c1", "index_documents", { n: 3 }]], "Indexing."), ChatModel.answer("Done.")])
const line = (e: ToolEvent.Event) =>
  [e._tag, "toolName" in e ? e.toolName : "", e._tag === "tool.progress" ? `${e.count}/${e.total}` : "text" in e ? e.text : ""]
const run = Effect.flatMap(ToolRegistry.make([index]), (tools) =>
  Stream.runForEach(Agent.stream({ messages: [{ role: "user", content: "Index my documents" }], tools }), (e) =>
    Effect.sync(() => console.log(line(e).filter((part) => part !== "").join(" ")))))
Effect.runPromise(run.pipe(Effect.provide(Layer.merge(model, ToolServices.layerTest()))))
