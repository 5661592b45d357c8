// Serve a tool registry over MCP (Streamable HTTP, a free loopback port) and call it with the official SDK client.
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { Effect, Schema } from "effect"
import { Tool, ToolRegistry, ToolServices } from "tinyagents"
import { McpServe } from "tinyagents/mcp"

const add = Tool.make("add", { description: "Adds two integers.", input: Schema.Struct({ a: Schema.Int, b: Schema.Int }),
  safety: { access: "read", idempotent: true }, handler: ({ a, b }) => Effect.succeed(a + b) })
const program = Effect.gen(function*() {
  const { url } = yield* McpServe.serveHttp(yield* ToolRegistry.make([add]), { port: 0 }) // serves until the scope closes
  const client = new Client({ name: "demo", version: "1.0.0" })
  yield* Effect.promise(() => client.connect(new StreamableHTTPClientTransport(new URL(url))))
  const { tools } = yield* Effect.promise(() => client.listTools())
  const result = yield* Effect.promise(() => client.callTool({ name: "add", arguments: { a: 2, b: 3 } })) // via an Executor
  console.log(`${tools[0]?.name} ${JSON.stringify(tools[0]?.annotations)}\n${JSON.stringify(result.content)}`)
  yield* Effect.promise(() => client.close())
})
Effect.runPromise(program.pipe(Effect.scoped, Effect.provide(ToolServices.layerTest())))
