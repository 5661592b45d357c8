// Tool search: a catalogue of tools of which the model sees only what it searched for.
import { Effect, Schema } from "effect"
import { Agent, ChatModel, EventSink, Tool, ToolRegistry, ToolResult, ToolSearch, ToolServices } from "tinyagents"

// A catalogue: two tools imported from an MCP server (McpConnect tags them "mcp" and "mcp:<server>"), and local ones.
const tool = (name: string, description: string, tags: ReadonlyArray<string> = []) =>
  Tool.make(name, {
    description,
    input: Schema.Struct({ city: Schema.String.annotate({ description: "the city" }) }),
    safety: { access: "read", tags },
    handler: ({ city }) => Effect.succeed(`${name}: done for ${city}`)
  })
const catalogue = [
  tool("get_weather", "Current weather for a city: temperature, wind and sky.", ["mcp", "mcp:weather"]),
  tool("get_forecast", "Five-day weather forecast for a city.", ["mcp", "mcp:weather"]),
  tool("book_hotel", "Book a hotel room in a city."),
  tool("find_restaurant", "Find restaurants in a city by cuisine."),
  tool("local_time", "The local time in a city.")
]

// The stand-in for the model: it searches with the question, calls the first tool found, then answers.
const model = ChatModel.scripted([
  ChatModel.callTools([["c1", "get_forecast", { city: "Oslo" }]]), // not found yet: refused, "search first"
  ChatModel.callTools([["c2", "search_tools", { query: "weather forecast for a city" }]]),
  ChatModel.callTools([["c3", "get_forecast", { city: "Oslo" }]]),
  ChatModel.answer("Sun all week in Oslo.")
])

const program = Effect.gen(function*() {
  const tools = yield* ToolRegistry.make(catalogue)
  const result = yield* Agent.run({
    messages: [{ role: "user", content: "What is the weather forecast for Oslo?" }],
    tools,
    // defer the tools imported from MCP servers; at most 2 tools per search
    toolSearch: { defer: ToolSearch.mcpTools, maxResults: 2 }
  }).pipe(Effect.provide(model))
  for (const event of yield* EventSink.EventLog.use((log) => log.all)) {
    if (event._tag === "agent.turn_started") console.log(`turn ${event.turn}: ${event.advertised.join(", ")}`)
    if (event._tag === "agent.tools_revealed") console.log(`  ${event.toolName} found ${event.names.join(", ")}`)
  }
  for (const r of result.results) console.log(`${r.toolCallId}: ${ToolResult.textOf(r).split("\n")[0]}`)
  console.log(result.text)
})
Effect.runPromise(program.pipe(Effect.provide(ToolServices.layerTest())))
