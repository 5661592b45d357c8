// Serve scratchpad/mcp-notes.ts's tools, prompts and resources (Streamable HTTP), and use them with McpConnect.
import { Effect, Stream } from "effect"
import { Executor, ToolRegistry, ToolServices } from "tinyagents"
import { McpConnect, McpServe } from "tinyagents/mcp"
import tools, { prompts, resources } from "./mcp-notes.ts"

const program = Effect.gen(function*() {
  const { url } = yield* McpServe.serveHttp(yield* ToolRegistry.make(tools), { port: 0, prompts, resources })
  const connection = yield* McpConnect.http({ url })
  for (const prompt of yield* connection.prompts) {
    console.log(`prompt ${prompt.name}(${prompt.arguments.map((a) => a.required ? a.name : `${a.name}?`).join(", ")})`)
  }
  const { messages } = yield* connection.getPrompt("summarize", { key: "groceries", words: "5" })
  console.log(JSON.stringify(messages.map((message) => message.content)))
  const listed = yield* connection.resources
  console.log([...listed.resources.map((r) => r.uri), ...listed.templates.map((t) => t.uriTemplate)].join(" "))
  console.log(JSON.stringify(yield* connection.readResource("notes://note/todo")))
  const updates = yield* connection.subscribe("notes://note/todo") // subscribed from here until the scope closes
  const executor = yield* Executor.make(yield* connection.registry)
  yield* executor.run({ id: "c1", name: "write_note", arguments: JSON.stringify({ key: "todo", text: "ship it" }) })
  const [updated] = yield* Stream.runCollect(Stream.take(updates, 1))
  console.log(`updated ${updated}: ${JSON.stringify(yield* connection.readResource(updated!))}`)
})
Effect.runPromise(program.pipe(Effect.scoped, Effect.provide(ToolServices.layerTest())))
