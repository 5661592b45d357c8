/**
 * `npm run example:schemas`: builds a registry of example tools, prints each tool's
 * model-visible JSON Schema, and validates good and bad sample calls, showing
 * the text a model would read for each failure.
 */
import { Effect, Result } from "effect"
import { ToolRegistry } from "../src/index.ts"
import { factorial, getWeather, saveNote } from "./tools.ts"

const program = Effect.gen(function*() {
  const registry = yield* ToolRegistry.make([saveNote, getWeather, factorial])
  console.log("== Model-visible tool schemas ==")
  for (const spec of registry.specs) {
    const alias = spec.originalName === undefined ? "" : ` (imported as ${spec.originalName})`
    console.log(`\n${spec.name}${alias}: ${spec.description}`)
    console.log(JSON.stringify(spec.inputSchema, null, 2))
  }

  const advertised = yield* ToolRegistry.advertise(registry, ["get_weather", "math.factorial"])
  console.log(`\n== Sample calls (advertised this turn: ${advertised.names.join(", ")}) ==`)
  const samples: ReadonlyArray<readonly [name: string, args: unknown]> = [
    ["get_weather", "{\"city\":\"Lisbon\"}"],
    ["get_weather", { city: "Oslo", unit: "fahrenheit" }],
    ["math.factorial", "{\"number\":5}"],
    ["get_weather", "{\"city\": \"Lisbon\""],
    ["get_weather", "[\"Lisbon\"]"],
    ["get_weather", "{\"city\":42,\"unit\":\"kelvin\",\"country\":\"PT\"}"],
    ["math_factorial", "{\"number\":-1}"],
    ["save_note", "{\"key\":\"a\",\"text\":\"b\"}"],
    ["delete_everything", "{}"],
    ["get_weather", "{\"city\":\"x\",\"__proto__\":{\"admin\":true}}"]
  ]
  for (const [i, [name, args]] of samples.entries()) {
    const result = ToolRegistry.resolve(advertised, { id: `call_${i}`, name, arguments: args })
    const shown = typeof args === "string" ? args : JSON.stringify(args)
    console.log(`\n${name} ${shown}`)
    console.log(
      Result.isSuccess(result)
        ? `  ok -> ${result.success.entry.spec.name} ${JSON.stringify(result.success.input)}`
        : `  ${result.failure._tag} (${result.failure.disposition}): ${result.failure.message}`
    )
  }
})

Effect.runPromise(program).catch((error) => {
  console.error(error)
  process.exitCode = 1
})
