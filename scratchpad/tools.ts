/**
 * Example tools shared by the scratchpad examples: a note store using hidden
 * services, a weather lookup, and an imported (JSON Schema) tool with a foreign name.
 */
import { Effect, Result, Schema } from "effect"
import { RunContext, StoreRegistry, Tool } from "../src/index.ts"

export const saveNote = Tool.make("save_note", {
  description: "Save a note under a key in the notes store. Overwrites an existing note with the same key.",
  input: Schema.Struct({
    key: Schema.String.check(Schema.isMinLength(1)).annotate({ description: "note key" }),
    text: Schema.String.annotate({ description: "note text" })
  }),
  output: Schema.Struct({ saved: Schema.String }),
  services: [RunContext.RunContext, StoreRegistry.StoreRegistry],
  safety: { access: "write", idempotent: true },
  handler: ({ key, text }) =>
    Effect.gen(function*() {
      const run = yield* RunContext.RunContext
      const notes = yield* StoreRegistry.store("notes")
      yield* Effect.orDie(notes.set(`${run.threadId}/${key}`, text))
      return { saved: key }
    })
})

export const getWeather = Tool.make("get_weather", {
  description: "Current weather for a city. Read-only; fails for unknown cities.",
  input: Schema.Struct({
    city: Schema.String.annotate({ description: "city name, e.g. Lisbon" }),
    unit: Schema.optionalKey(Schema.Literals(["celsius", "fahrenheit"]))
  }),
  safety: { access: "read", idempotent: true, networked: true },
  handler: ({ city, unit }) => Effect.succeed({ city, temperature: unit === "fahrenheit" ? 68 : 20, unit: unit ?? "celsius" })
})

export const factorial = Result.getOrThrow(Tool.fromJsonSchema("math.factorial", {
  description: "Calculate the factorial of a given number.",
  inputSchema: {
    type: "object",
    properties: { number: { type: "integer", minimum: 0, description: "The number." } },
    required: ["number"]
  },
  safety: { access: "read", idempotent: true },
  handler: ({ number }) =>
    Effect.succeed(Array.from({ length: Number(number) }, (_, i) => i + 1).reduce((a, b) => a * b, 1))
}))
