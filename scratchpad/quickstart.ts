// Quick start: a real agent with one tool. `npm run quickstart`; reads OPENAI_API_KEY, OPENAI_MODEL, OPENAI_BASE_URL.
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Console, Effect, Layer, Logger, Schema } from "effect"
import { Agent, Models, Tool, ToolRegistry, ToolServices } from "tinyagents"

const add = Tool.make("add", {
  description: "Adds two integers. Pure; never fails.",
  input: Schema.Struct({ a: Schema.Int, b: Schema.Int }),
  safety: { access: "read", idempotent: true },
  handler: ({ a, b }) => Effect.succeed(a + b)
})

const program = Effect.gen(function*() {
  const tools = yield* ToolRegistry.make([add])
  const result = yield* Agent.run({ messages: [{ role: "user", content: "What is 1234 + 4321?" }], tools })
  console.log(result.text)
})

const model = Models.OpenAiChatModel.layerConfig({ model: "gpt-4o-mini" }).pipe(Layer.provide(NodeHttpClient.layerUndici))
program.pipe(
  Effect.provide([model, ToolServices.layerTest(), Logger.layer([])]), // no log lines: failures print once, below
  Effect.tapError((error) => Console.error(`tinyagents quickstart: ${error.message}`)),
  NodeRuntime.runMain({ disableErrorReporting: true }) // exit code 1 on failure
)
