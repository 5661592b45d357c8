// Typed final output: the answer decoded by a Schema, a rejected answer repaired, the partial answer streamed.
import { Effect, Layer, Schema, Stream } from "effect"
import { Agent, ChatModel, Tool, ToolRegistry, ToolResult, ToolServices } from "tinyagents"

const Weather = Schema.Struct({ city: Schema.String, celsius: Schema.Number, advice: Schema.String })
  .annotate({ description: "The weather report." })
const temperature = Tool.make("temperature", {
  description: "The temperature of a city, in °C.",
  input: Schema.Struct({ city: Schema.String }),
  handler: ({ city }) => Effect.succeed(city === "Oslo" ? 4 : 21)
})
const ask = [{ role: "user" as const, content: "Weather in Oslo?" }]

// A model without structured output answers through the final-answer tool; its first answer is refused.
const toolModel = ChatModel.scripted([
  ChatModel.callTools([["c1", "temperature", { city: "Oslo" }]]),
  ChatModel.callTools([["f1", "final_answer", { city: "Oslo", celsius: "4" }]]),
  ChatModel.callTools([["f2", "final_answer", { city: "Oslo", celsius: 4, advice: "Wear a coat." }]])
])
// A model with structured output (as the OpenAI, Anthropic and Gemini adapters are) answers in JSON text, streamed.
const pieces = ["{\"city\":\"Oslo\",", "\"celsius\":4,\"advice\":\"Wear", " a coat.\"}"]
const jsonModel = Layer.succeed(ChatModel.ChatModel, ChatModel.make({
  stream: () =>
    Stream.fromIterable<ChatModel.StreamPart>([
      ...pieces.map((text) => ({ _tag: "TextDelta" as const, text })),
      { _tag: "Finished", response: ChatModel.answer(pieces.join("")) }
    ])
}, { structuredOutput: true }))

const program = Effect.gen(function*() {
  const tools = yield* ToolRegistry.make([temperature])
  const result = yield* Agent.run({ messages: ask, tools, output: Weather }).pipe(Effect.provide(toolModel))
  const refused = result.transcript[4]
  if (refused?.role === "tool") console.log(`repair: ${ToolResult.textOf(refused.results[0]!)}`)
  const { advice, celsius, city } = result.output! // typed: { city: string; celsius: number; advice: string }
  console.log(`output: ${city}, ${celsius} °C. ${advice}`)
  yield* Stream.runForEach(Agent.stream({ messages: ask, tools, output: Weather }), (event) =>
    Effect.sync(() => {
      if (event._tag === "agent.output_delta") console.log(`partial: ${JSON.stringify(event.partial)}`)
      if (event._tag === "agent.output") console.log(`final: ${JSON.stringify(event.output)}`)
    })).pipe(Effect.provide(jsonModel))
})
Effect.runPromise(program.pipe(Effect.provide(ToolServices.layerTest())))
