// A durable agent as another durable agent's tool (DurableAgent.asTool): each call runs the nested
// agent as a durable run of its own (<run>/<turn>/<index>), journaled turn by turn, so a crash inside
// it resumes it instead of starting it over. In memory here; Runner.layerSqlite in production.
import { Effect, Layer, Result, Schema, Stream } from "effect"
import { ChatModel, Tool, ToolRegistry, ToolResult } from "tinyagents"
import { DurableAgent, Runner } from "tinyagents/durable"
import { Stores } from "tinyagents/stores"

const searchFlights = Tool.make("search_flights", {
  description: "Finds flights to a city.",
  input: Schema.Struct({ city: Schema.String }),
  safety: { access: "read", idempotent: true },
  handler: ({ city }) => Effect.succeed(`KL1234 to ${city}, 09:10`)
})

// The nested agent: searches, then answers. Its model answers from the transcript alone.
const researcher = DurableAgent.make({
  name: "researcher",
  tools: Result.getOrThrow(ToolRegistry.makeResult([searchFlights])),
  pollInterval: "20 millis"
})
const researcherModel = ChatModel.fromFunction(({ messages }) => {
  const last = messages.at(-1)
  const usage = { inputTokens: 40, outputTokens: 10 }
  return Effect.succeed(
    last?.role === "tool"
      ? { ...ChatModel.answer(`Best: ${ToolResult.textOf(last.results[0]!)}`), usage }
      : { ...ChatModel.callTools([["s1", "search_flights", { city: "Lisbon" }]]), usage }
  )
})

// The calling agent: its tool runs the researcher; the call is journaled with the nested run's answer.
const planner = DurableAgent.make({
  name: "planner",
  tools: Result.getOrThrow(ToolRegistry.makeResult([
    DurableAgent.asTool(researcher, {
      name: "research",
      description: "Researches a trip.",
      input: Schema.Struct({ question: Schema.String }),
      prompt: ({ question }) => question
    })
  ])),
  pollInterval: "20 millis"
})
const plannerModel = ChatModel.fromFunction(({ messages }) => {
  const last = messages.at(-1)
  return Effect.succeed(
    last?.role === "tool"
      ? ChatModel.answer(`Booked. ${ToolResult.textOf(last.results[0]!)}`)
      : ChatModel.callTools([["r1", "research", { question: "Flights to Lisbon?" }]])
  )
})

// Both agents' layers run on the same runner (here the in-memory engine), each with its own model.
const runner = Layer.mergeAll(
  planner.layer.pipe(Layer.provide([plannerModel, Stores.layerMemory])),
  researcher.layer.pipe(Layer.provide([researcherModel, Stores.layerMemory]))
).pipe(Layer.provideMerge(Runner.layerMemory))

const program = Effect.gen(function*() {
  yield* planner.start("trip-1", [{ role: "user", content: "Plan my trip to Lisbon." }])
  const result = yield* planner.result("trip-1")
  // the nested run's events are in the planner's, stamped with its run id and depth
  yield* Stream.runForEach(planner.events("trip-1"), (e) =>
    Effect.sync(() => console.log(`${"  ".repeat(e.depth ?? 0)}${e._tag} ${e.runId}`)))
  console.log(result.text)
  console.log(`usage: ${JSON.stringify(result.usage)}`) // the nested run's two turns
  // the nested run is a durable run of its own, read like any other
  console.log(`nested: ${(yield* researcher.result("trip-1/0/0")).text}`)
})
Effect.runPromise(program.pipe(Effect.provide(runner)))
