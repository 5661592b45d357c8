import { assert, describe, it } from "@effect/vitest"
import { Effect, Result, Schema } from "effect"
import { OpenAiStructuredOutput } from "effect/ai"
import * as Tool from "../../src/contract/Tool.ts"
import * as ToolCall from "../../src/contract/ToolCall.ts"
import * as ToolName from "../../src/contract/ToolName.ts"
import * as ToolRegistry from "../../src/contract/ToolRegistry.ts"
import * as OpenAiChat from "../../src/providers/OpenAiChat.ts"
import type { ProviderExportError } from "../../src/providers/ProviderExportError.ts"
import { metaErrors2020, strictViolations, validate2020 } from "./support/schemaChecks.ts"
import { closed, failure, fixture, handSpec, imported, inputOf, mixed, registry, rejected, resolve, success } from "./support/tools.ts"

const official = fixture("openai-chat.json")
const officialTool = official.request.tools[0]

const weather = imported(officialTool.function.name, officialTool.function.parameters, {
  description: officialTool.function.description
})

const exportOne = (tool: Tool.Any, options: OpenAiChat.ExportOptions = {}) =>
  OpenAiChat.toolDefinitionsResult(registry([tool]).specs, options)

const parametersOf = (tool: Tool.Any, options: OpenAiChat.ExportOptions = {}) => {
  const exported = exportOne(tool, options)
  if (Result.isFailure(exported)) throw new Error(exported.failure.message)
  return exported.success[0]!.function
}

const failureOf = (tool: Tool.Any, options: OpenAiChat.ExportOptions): ProviderExportError => {
  const exported = exportOne(tool, options)
  if (Result.isSuccess(exported)) throw new Error("expected the export to fail")
  return exported.failure
}

/** Every strict export in this file is also checked independently. */
const checkedStrict = (tool: Tool.Any) => {
  const fn = parametersOf(tool, { strict: "require" })
  assert.strictEqual(fn.strict, true)
  assert.deepStrictEqual(metaErrors2020(fn.parameters), [])
  assert.deepStrictEqual(strictViolations(fn.parameters), [])
  return fn.parameters as any
}

describe("OpenAiChat golden (API reference 'Functions' example)", () => {
  it("non-strict definition reproduces the reference request's tool, closed as it is enforced", () => {
    const exported = exportOne(weather, { strict: false })
    assert.deepStrictEqual(Result.getOrThrow(exported), [
      {
        ...officialTool,
        function: { ...officialTool.function, parameters: closed(officialTool.function.parameters), strict: false }
      }
    ])
  })

  it("strict definition: every property required, the optional one nullable, closed", () => {
    const fn = parametersOf(weather)
    assert.strictEqual(fn.strict, true)
    assert.deepStrictEqual(fn.parameters, {
      type: "object",
      properties: {
        location: { type: "string", description: "The city and state, e.g. San Francisco, CA" },
        unit: { type: ["string", "null"], enum: ["celsius", "fahrenheit", null] }
      },
      required: ["location", "unit"],
      additionalProperties: false
    })
  })

  it("the reference response's tool call keeps its id and argument text, and resolves", () => {
    const reg = registry([weather])
    const { calls, passthrough } = OpenAiChat.toolCalls(official.response)
    assert.deepStrictEqual(calls, [{
      id: "call_abc123",
      name: "get_current_weather",
      arguments: "{\n\"location\": \"Boston, MA\"\n}"
    }])
    assert.deepStrictEqual(passthrough, [])
    assert.deepStrictEqual(inputOf(reg, calls[0]!), { location: "Boston, MA" })
  })

  it("a tool message answers the call id with text", () => {
    const [call] = OpenAiChat.toolCalls(official.response).calls
    assert.deepStrictEqual(OpenAiChat.toolMessages([success(call!, "15 degrees celsius, sunny")]), [official.toolMessage])
  })

  it("parallel calls: strict nulls become absent; custom tool calls are passthrough", () => {
    const reg = registry([weather])
    const { calls, passthrough } = OpenAiChat.toolCalls(official.parallelMessage, { specs: reg.specs })
    assert.deepStrictEqual(calls.map((c) => c.id), ["call_1", "call_2"])
    assert.deepStrictEqual(passthrough, [official.parallelMessage.tool_calls[2]])
    assert.deepStrictEqual(inputOf(reg, calls[0]!), { location: "Paris, France" })
    assert.deepStrictEqual(inputOf(reg, calls[1]!), { location: "Bogotá, Colombia", unit: "celsius" })
  })

  it("images in a result become a note (Chat tool messages carry text only)", () => {
    const [message] = OpenAiChat.toolMessages([{
      ...success({ id: "c1", name: "snap" }, "see image"),
      content: [{ type: "text", text: "see image" }, { type: "image", data: "AAAA", mimeType: "image/png" }]
    }])
    assert.strictEqual(
      message!.content,
      "see image\n[image: image/png, 3 bytes; not sent: a Chat Completions tool message carries text only]"
    )
  })

  it("audio and binary resources become notes, a text resource its text under its URI (never base64)", () => {
    const [message] = OpenAiChat.toolMessages([mixed({ id: "c2", name: "report" })])
    const why = "not sent: a Chat Completions tool message carries text only"
    assert.strictEqual(
      message!.content,
      [
        "report",
        `[audio: audio/wav, 3 bytes; ${why}]`,
        "[resource: file:///r/notes.md, text/markdown]\n# Notes",
        `[resource: file:///r/report.pdf, application/pdf, 3 bytes; ${why}]`,
        `[resource: file:///r/all.zip, application/zip, 3 bytes; ${why}]`
      ].join("\n")
    )
    for (const data of ["UklG", "JVBE", "UEsD"]) assert.notInclude(message!.content as string, data)
  })

  it("failing results are answered too, with their error text", () => {
    const [message] = OpenAiChat.toolMessages([failure({ id: "c9", name: "get_current_weather" }, "city not found")])
    assert.deepStrictEqual(message, { role: "tool", tool_call_id: "c9", content: "city not found" })
  })
})

describe("OpenAI strict exporter (providers.md cases)", () => {
  it("case 1: optional enum unit becomes required, [string, null], and null joins the enum", () => {
    const tool = Tool.make("convert_temperature", {
      description: "Convert a temperature",
      input: Schema.Struct({ value: Schema.Number, unit: Schema.optionalKey(Schema.Literals(["F", "C"])) }),
      handler: () => Effect.succeed(0)
    })
    const parameters = checkedStrict(tool)
    assert.deepStrictEqual(parameters.required, ["value", "unit"])
    assert.deepStrictEqual(parameters.properties.unit, { type: ["string", "null"], enum: ["F", "C", null] })
    // Without null in the enum a standard validator would reject the null strict mode makes the model send.
    assert.deepStrictEqual(validate2020(parameters, { value: 1, unit: null }), [])
    assert.isAbove(validate2020({ ...parameters.properties.unit, enum: ["F", "C"] }, null).length, 0)
  })

  it("case 2: objects in items and $defs are closed and list every property as required", () => {
    const tool = imported("plan_route", {
      type: "object",
      properties: {
        stops: {
          type: "array",
          items: { type: "object", properties: { city: { type: "string" }, nights: { type: "integer" } }, required: ["city"] }
        },
        origin: { $ref: "#/$defs/Place" }
      },
      required: ["stops"],
      $defs: {
        Place: {
          type: "object",
          properties: { name: { type: "string" }, near: { $ref: "#/$defs/Place" } },
          required: ["name"]
        }
      }
    })
    const parameters = checkedStrict(tool)
    const item = parameters.properties.stops.items
    assert.strictEqual(item.additionalProperties, false)
    assert.deepStrictEqual(item.required, ["city", "nights"])
    assert.deepStrictEqual(item.properties.nights, { type: ["integer", "null"] })
    assert.deepStrictEqual(parameters.properties.origin, { anyOf: [{ $ref: "#/$defs/Place" }, { type: "null" }] })
    assert.deepStrictEqual(parameters.$defs.Place, {
      type: "object",
      properties: {
        name: { type: "string" },
        near: { anyOf: [{ $ref: "#/$defs/Place" }, { type: "null" }] }
      },
      required: ["name", "near"],
      additionalProperties: false
    })
    const reg = registry([tool])
    const call = ToolCall.make("c1", "plan_route", JSON.stringify({
      stops: [{ city: "Oslo", nights: null }],
      origin: { name: "Bergen", near: null }
    }))
    const [normalized] = OpenAiChat.toolCalls(
      { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "plan_route", arguments: call.arguments as string } }] },
      { specs: reg.specs }
    ).calls
    assert.deepStrictEqual(inputOf(reg, normalized!), { stops: [{ city: "Oslo" }], origin: { name: "Bergen" } })
  })

  it("case 3: math.factorial is exported as math_factorial and maps back; collisions and long names fail", () => {
    const factorial = imported("math.factorial", {
      type: "object",
      properties: { number: { type: "integer" } },
      required: ["number"]
    })
    const reg = registry([factorial])
    const [definition] = Result.getOrThrow(OpenAiChat.toolDefinitionsResult(reg.specs))
    assert.strictEqual(definition!.function.name, "math_factorial")
    const [call] = OpenAiChat.toolCalls({
      role: "assistant",
      content: null,
      tool_calls: [{ id: "call_f", type: "function", function: { name: "math_factorial", arguments: "{\"number\":5}" } }]
    }).calls
    const resolved = Result.getOrThrow(resolve(reg, call!))
    assert.strictEqual(resolved.entry.spec.originalName, "math.factorial")
    assert.deepStrictEqual(resolved.input, { number: 5 })

    const collision = ToolRegistry.makeResult([factorial, imported("math_factorial", { type: "object", properties: {} })])
    assert.isTrue(Result.isFailure(collision))
    if (Result.isFailure(collision)) assert.strictEqual(collision.failure.violations[0]?._tag, "ToolNameCollision")

    const spec = reg.specs[0]!
    const duplicated = OpenAiChat.toolDefinitionsResult([spec, spec])
    assert.strictEqual(Result.isFailure(duplicated) && duplicated.failure.reason, "duplicate_name")
    const long = OpenAiChat.toolDefinitionsResult([{ ...spec, name: "a".repeat(65) as ToolName.ToolName }])
    assert.isTrue(Result.isFailure(long))
    if (Result.isFailure(long)) {
      assert.strictEqual(long.failure.reason, "invalid_name")
      assert.include(long.failure.message, "^[a-zA-Z0-9_-]{1,64}$")
    }
    // The registry's own sanitiser keeps long foreign names within 64 characters.
    const longForeign = registry([imported(`ns.${"x".repeat(80)}`, { type: "object", properties: {} })])
    assert.isTrue(Result.isSuccess(OpenAiChat.toolDefinitionsResult(longForeign.specs)))
  })

  it("case 4: allOf, not, if and free-form objects fall back to strict:false, or fail under require", () => {
    const cases: ReadonlyArray<readonly [string, object, string]> = [
      ["with_all_of", { allOf: [{ type: "string" }, { minLength: 2 }] }, "allOf"],
      ["with_not", { type: "string", not: { const: "x" } }, "\"not\""],
      ["with_if", { type: "string", if: { const: "a" }, then: { minLength: 1 } }, "\"if\""],
      ["with_free_form", { type: "object" }, "free-form object"]
    ]
    for (const [name, property, reason] of cases) {
      const spec = handSpec(name, { type: "object", properties: { p: property }, required: ["p"] })
      const fallbacks: Array<ProviderExportError> = []
      const [auto] = Result.getOrThrow(OpenAiChat.toolDefinitionsResult([spec], { onFallback: (e) => fallbacks.push(e) }))
      assert.strictEqual(auto!.function.strict, false, name)
      assert.deepStrictEqual(auto!.function.parameters, spec.inputSchema, name)
      assert.strictEqual(fallbacks.length, 1, name)
      const required = OpenAiChat.toolDefinitionsResult([spec], { strict: "require" })
      if (Result.isSuccess(required)) throw new Error(`${name}: expected the export to fail`)
      const error = required.failure
      assert.strictEqual(error._tag, "ProviderExportError")
      assert.strictEqual(error.toolName, name)
      assert.strictEqual(error.reason, "unsupported_schema")
      assert.include(error.message, reason)
      assert.include(error.message, name)
    }
    // The same through the registry, for a free-form object Effect can import.
    const freeForm = imported("free_form", { type: "object", properties: { data: { type: "object" } } })
    assert.strictEqual(parametersOf(freeForm).strict, false)
  })

  it("case 5: a tool with no parameters exports as an empty closed object", () => {
    const tool = Tool.make("list_files", {
      description: "List files",
      input: Schema.Struct({}),
      handler: () => Effect.succeed([])
    })
    assert.deepStrictEqual(checkedStrict(tool), {
      type: "object",
      properties: {},
      required: [],
      additionalProperties: false
    })
  })

  it("case 6: 5,001 properties, 11 levels or 1,001 enum values are rejected; limits are configurable", () => {
    const wide = imported("wide", {
      type: "object",
      properties: Object.fromEntries(Array.from({ length: 5001 }, (_, i) => [`p${i}`, { type: "string" }]))
    })
    const nest = (levels: number): object =>
      levels === 1
        ? { type: "object", properties: { leaf: { type: "string" } }, required: ["leaf"] }
        : { type: "object", properties: { child: nest(levels - 1) }, required: ["child"] }
    const deep = imported("deep", nest(11) as any)
    const tenDeep = imported("ten_deep", nest(10) as any)
    const manyEnums = imported("many_enums", {
      type: "object",
      properties: { pick: { type: "integer", enum: Array.from({ length: 1001 }, (_, i) => i) } },
      required: ["pick"]
    })
    for (const [tool, words] of [[wide, "5000 properties"], [deep, "11 levels"], [manyEnums, "1000 enum values"]] as const) {
      const error = failureOf(tool, { strict: "require" })
      assert.strictEqual(error.reason, "limit_exceeded")
      assert.include(error.message, words)
      assert.strictEqual(parametersOf(tool).strict, false)
    }
    checkedStrict(tenDeep)
    // The 2024 limits (100 properties, 5 levels) are one option away.
    assert.strictEqual(failureOf(tenDeep, { strict: "require", limits: { maxDepth: 5 } }).reason, "limit_exceeded")
  })

  it("case 7: bad JSON or an unknown key becomes a validation-error result; null for an optional is absent", () => {
    const reg = registry([weather])
    const message = (id: string, args: string): OpenAiChat.ChatCompletionMessage => ({
      role: "assistant",
      content: null,
      tool_calls: [{ id, type: "function", function: { name: "get_current_weather", arguments: args } }]
    })
    const [bad] = OpenAiChat.toolCalls(message("c_bad", "{\"location\": \"Boston"), { specs: reg.specs }).calls
    assert.strictEqual(bad!.arguments, "{\"location\": \"Boston", "never replaced by {}")
    const badResult = rejected(reg, bad!)
    assert.strictEqual(badResult.error?._tag, "MalformedArguments")
    const [badMessage] = OpenAiChat.toolMessages([badResult])
    assert.strictEqual(badMessage!.tool_call_id, "c_bad")
    assert.include(badMessage!.content as string, "not valid JSON")

    const strictOnly = registry([imported("closed", {
      type: "object",
      properties: { location: { type: "string" } },
      required: ["location"],
      additionalProperties: false
    })])
    const unknownKey = ToolCall.make("c_key", "closed", "{\"location\":\"Oslo\",\"extra\":1}")
    const unknownResult = rejected(strictOnly, unknownKey)
    assert.strictEqual(unknownResult.error?._tag, "InvalidArguments")
    assert.include(OpenAiChat.toolMessages([unknownResult])[0]!.content as string, "extra")

    const [withNull] = OpenAiChat.toolCalls(message("c_null", "{\"location\":\"Boston, MA\",\"unit\":null}"), { specs: reg.specs }).calls
    const [without] = OpenAiChat.toolCalls(message("c_none", "{\"location\":\"Boston, MA\"}"), { specs: reg.specs }).calls
    assert.deepStrictEqual(inputOf(reg, withNull!), inputOf(reg, without!))
    assert.isFalse(Object.hasOwn(inputOf(reg, withNull!) as object, "unit"))
    // Without the specs the null reaches the registry, which rejects it.
    const [raw] = OpenAiChat.toolCalls(message("c_raw", "{\"location\":\"Boston, MA\",\"unit\":null}")).calls
    assert.isTrue(Result.isFailure(resolve(reg, raw!)))
  })

  it("normalizeArguments removes only the nulls strict mode introduced, and leaves text that is not JSON", () => {
    const spec = registry([imported("nullable_fields", {
      type: "object",
      properties: {
        note: { type: ["string", "null"] },
        tag: { type: "string" },
        cursor: { anyOf: [{ type: "string" }, { type: "null" }], default: null }
      },
      required: ["note"]
    })]).specs[0]!
    // `tag` became nullable for strict mode: its null means "absent". `note` and `cursor` admit null themselves.
    assert.strictEqual(
      OpenAiChat.normalizeArguments(spec, "{\"note\":null,\"tag\":null,\"cursor\":null}"),
      "{\"note\":null,\"cursor\":null}"
    )
    assert.deepStrictEqual(OpenAiChat.normalizeArguments(spec, { note: null }), { note: null })
    assert.strictEqual(OpenAiChat.normalizeArguments(spec, "not json"), "not json")
  })

  it("agrees with effect/ai's OpenAiStructuredOutput on an Effect schema: same verdicts, same decoded input", () => {
    const input = Schema.Struct({
      city: Schema.String,
      unit: Schema.optionalKey(Schema.Literals(["F", "C"])),
      stops: Schema.Array(Schema.Struct({ name: Schema.String, nights: Schema.optionalKey(Schema.Int) }))
    })
    const tool = Tool.make("trip", { description: "Plan a trip", input, handler: () => Effect.succeed(0) })
    const ours = checkedStrict(tool)
    const effect = OpenAiStructuredOutput.toCodecOpenAI(input)
    assert.deepStrictEqual(ours.required, effect.jsonSchema.required)
    const reg = registry([tool])
    const instances = [
      { city: "Oslo", unit: null, stops: [] },
      { city: "Oslo", unit: "C", stops: [{ name: "Bergen", nights: null }] },
      { city: "Oslo", unit: "K", stops: [] },
      { city: "Oslo", stops: [] },
      { city: "Oslo", unit: null, stops: [{ name: "Bergen", nights: 2, extra: 1 }] }
    ]
    for (const instance of instances) {
      const verdict = validate2020(ours, instance).length === 0
      assert.strictEqual(verdict, validate2020(effect.jsonSchema, instance).length === 0, JSON.stringify(instance))
      if (!verdict) continue
      const [call] = OpenAiChat.toolCalls({
        role: "assistant",
        content: null,
        tool_calls: [{ id: "t", type: "function", function: { name: "trip", arguments: JSON.stringify(instance) } }]
      }, { specs: reg.specs }).calls
      assert.deepStrictEqual(inputOf(reg, call!), Schema.decodeUnknownSync(effect.codec)(instance), JSON.stringify(instance))
    }
  })
})
