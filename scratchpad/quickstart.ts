// The README's quick start: a real agent (OpenAI-compatible API; set OPENAI_API_KEY and OPENAI_MODEL).
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { Effect, Layer, Schema } from "effect"
import { Agent, Models, Tool, ToolRegistry, ToolServices } from "../src/index.ts"

const add = Tool.make("add", {
  description: "Adds two integers. Pure; never fails.",
  input: Schema.Struct({ a: Schema.Int, b: Schema.Int }),
  safety: { effect: "read", idempotent: true },
  handler: ({ a, b }) => Effect.succeed(a + b)
})

const program = Effect.gen(function*() {
  const tools = yield* ToolRegistry.make([add])
  const result = yield* Agent.run({ messages: [{ role: "user", content: "What is 1234 + 4321?" }], tools })
  console.log(result.text, result.usage)
})

const model = Models.OpenAiChatModel.layerConfig().pipe(Layer.provide(NodeHttpClient.layerUndici))
Effect.runPromise(program.pipe(Effect.provide(Layer.merge(model, ToolServices.layerTest()))))
