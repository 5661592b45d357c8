// Production set-up: a real model; stores, idempotency keys and rate limits in one SQLite file, and every
// event appended to a JSON-lines file, both under .tinyagents/ (ToolServices.layer). Reads OPENAI_API_KEY,
// OPENAI_MODEL, OPENAI_BASE_URL. Run it twice: the notes and the events of both runs are in the files.
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Console, Effect, Layer, Logger, Schema } from "effect"
import { Agent, Models, RunContext, StoreRegistry, Tool, ToolRegistry, ToolServices } from "tinyagents"
import { rateLimit } from "tinyagents/middleware"

const saveNote = Tool.make("save_note", {
  description: "Saves a note under a key. Overwrites an existing note.",
  input: Schema.Struct({ key: Schema.String, text: Schema.String }),
  output: Schema.Struct({ saved: Schema.String }),
  services: [RunContext.RunContext, StoreRegistry.StoreRegistry],
  safety: { access: "write", idempotent: true },
  handler: ({ key, text }) =>
    Effect.gen(function*() {
      const { threadId } = yield* RunContext.RunContext
      yield* Effect.orDie((yield* StoreRegistry.store("notes")).set(`${threadId}/${key}`, text))
      return { saved: key }
    })
})

const program = Effect.gen(function*() {
  const tools = yield* ToolRegistry.make([saveNote])
  const result = yield* Agent.run({
    messages: [{ role: "user", content: "Note that the plumber comes on Tuesday." }],
    tools,
    middleware: [rateLimit({ maxCalls: 60, window: "1 minute" })] // counted in the SQLite file, across processes
  })
  const { runId } = yield* RunContext.RunContext
  console.log(result.text)
  console.log(`${runId}: ${result.results.length} tool call(s); events in .tinyagents/events.jsonl`)
})

const model = Models.OpenAiChatModel.layerConfig({ model: "gpt-4o-mini" }).pipe(Layer.provide(NodeHttpClient.layerUndici))
const services = ToolServices.layer({ run: { threadId: "household" } }) // .tinyagents/stores.sqlite, .tinyagents/events.jsonl
program.pipe(
  Effect.provide([model, services, Logger.layer([])]),
  Effect.tapError((error) => Console.error(`tinyagents production: ${error.message}`)),
  NodeRuntime.runMain({ disableErrorReporting: true })
)
