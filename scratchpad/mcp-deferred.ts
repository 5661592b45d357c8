// Serve a registry as a deferred catalogue: a client lists `add` and `search_tools`, searches, then calls what it found.
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js"
import { Effect, Schema } from "effect"
import { Tool, ToolRegistry, ToolServices } from "tinyagents"
import { McpServe } from "tinyagents/mcp"

const tool = (name: string, description: string, run: (city: string) => string) =>
  Tool.make(name, { description, input: Schema.Struct({ city: Schema.String }), safety: { access: "read" },
    handler: ({ city }) => Effect.succeed(run(city)) })
const add = Tool.make("add", { description: "Adds two integers.", input: Schema.Struct({ a: Schema.Int, b: Schema.Int }),
  safety: { access: "read", idempotent: true }, handler: ({ a, b }) => Effect.succeed(a + b) })
const registry = ToolRegistry.make([
  add,
  tool("get_weather", "Current weather for a city.", (city) => `sunny in ${city}`),
  tool("book_hotel", "Book a hotel room in a city.", (city) => `booked in ${city}`)
])

const program = Effect.gen(function*() {
  const { url } = yield* McpServe.serveHttp(yield* registry, { port: 0, toolSearch: { loaded: ["add"] } })
  const client = new Client({ name: "demo", version: "1.0.0" })
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => console.log("(tools/list_changed)"))
  const call = (name: string, args: Record<string, unknown>) =>
    Effect.promise(() => client.callTool({ name, arguments: args })).pipe(
      Effect.map((result) => (result.content as Array<{ text: string }>)[0]!.text)
    )
  const list = Effect.promise(() => client.listTools()).pipe(Effect.map(({ tools }) => tools.map((t) => t.name).join(", ")))
  yield* Effect.promise(() => client.connect(new StreamableHTTPClientTransport(new URL(url))))
  console.log(`listed: ${yield* list}`)
  console.log(yield* call("get_weather", { city: "Oslo" }))
  console.log((yield* call("search_tools", { query: "weather" })).split("\n")[0])
  console.log(`listed: ${yield* list}`)
  console.log(yield* call("get_weather", { city: "Oslo" }))
  yield* Effect.promise(() => client.close())
})
Effect.runPromise(program.pipe(Effect.scoped, Effect.provide(ToolServices.layerTest())))
