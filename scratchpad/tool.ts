// A tool with hidden services, the per-turn boundary check, and one real call.
import { Effect, Result, Schema } from "effect"
import { Executor, RunContext, StoreRegistry, Tool, ToolRegistry, ToolResult, ToolServices } from "tinyagents"

const saveNote = Tool.make("save_note", {
  description: "Save a note under a key. Overwrites an existing note.",
  input: Schema.Struct({
    key: Schema.String.annotate({ description: "note key" }),
    text: Schema.String
  }),
  output: Schema.Struct({ saved: Schema.String }),
  services: [RunContext.RunContext, StoreRegistry.StoreRegistry], // hidden: never in a schema
  safety: { access: "write", idempotent: true },
  handler: ({ key, text }) =>
    Effect.gen(function*() {
      const run = yield* RunContext.RunContext
      const notes = yield* StoreRegistry.store("notes")
      yield* Effect.orDie(notes.set(`${run.threadId}/${key}`, text))
      return { saved: key }
    })
})

const program = Effect.gen(function*() {
  const registry = yield* ToolRegistry.make([saveNote]) // checks names and schemas
  const turn = yield* ToolRegistry.advertise(registry, ["save_note"]) // what the model sees this turn (a typo fails)
  const refused = ToolRegistry.resolve(turn, { id: "call_1", name: "save_note", arguments: "{\"key\":1}" })
  if (Result.isFailure(refused)) console.log(refused.failure.message)
  const executor = yield* Executor.make(registry)
  const result = yield* executor.run({ id: "call_2", name: "save_note", arguments: "{\"key\":\"todo\",\"text\":\"milk\"}" })
  console.log(ToolResult.textOf(result))
})

Effect.runPromise(program.pipe(Effect.provide(ToolServices.layerTest())))
