import { assert, describe, it } from "@effect/vitest"
import { Result } from "effect"
import * as Gemini from "../../src/providers/Gemini.ts"
import { geminiOpenApiViolations, metaErrors2020 } from "./support/schemaChecks.ts"
import { closed, failure, fixture, handSpec, imported, inputOf, mixed, registry, success } from "./support/tools.ts"

const official = fixture("gemini.json")
const temperature = imported(official.declaration.name, official.declaration.parameters, {
  description: official.declaration.description
})

/**
 * A Google `Schema` as the JSON it is: `type` is a plain string at runtime
 * (`Gemini.Type` is a declared enum so that `Schema` assigns to the SDK's).
 */
const plain = (schema: Gemini.Schema | undefined): unknown => schema

const declarationOf = (inputSchema: object, options: Gemini.ExportOptions = {}) => {
  const exported = Gemini.toolDefinitionsResult([handSpec("t", inputSchema as any)], options)
  if (Result.isFailure(exported)) throw new Error(exported.failure.message)
  const declaration = exported.success[0]!.functionDeclarations[0]!
  if (declaration.parameters !== undefined) assert.deepStrictEqual(geminiOpenApiViolations(declaration.parameters), [])
  if (declaration.parametersJsonSchema !== undefined) {
    assert.deepStrictEqual(metaErrors2020(declaration.parametersJsonSchema), [])
  }
  return declaration
}

describe("Gemini golden (function calling guide: get_current_temperature)", () => {
  it("the default declaration carries the guide's schema as parametersJsonSchema, closed as it is enforced", () => {
    assert.deepStrictEqual(Result.getOrThrow(Gemini.toolDefinitionsResult(registry([temperature]).specs)), [{
      functionDeclarations: [{
        name: official.declaration.name,
        description: official.declaration.description,
        parametersJsonSchema: closed(official.declaration.parameters)
      }]
    }])
  })

  it("the openapi dialect writes Google's Schema (upper-case types)", () => {
    const [tool] = Result.getOrThrow(Gemini.toolDefinitionsResult(registry([temperature]).specs, { dialect: "openapi" }))
    assert.deepStrictEqual(plain(tool!.functionDeclarations[0]!.parameters), {
      type: "OBJECT",
      properties: { location: { type: "STRING", description: "The city name, e.g. San Francisco" } },
      required: ["location"]
    })
  })

  it("functionCall parts become calls (ids kept or made up deterministically); code execution is passthrough", () => {
    const reg = registry([temperature])
    const { calls, passthrough } = Gemini.toolCalls(official.response)
    assert.deepStrictEqual(calls, [
      { id: "8f2b1a", name: "get_current_temperature", arguments: { location: "London" } },
      { id: "gemini-call:0:3:get_current_temperature", name: "get_current_temperature", arguments: { location: "Paris" } }
    ])
    assert.deepStrictEqual(Gemini.toolCalls(official.response).calls[1]!.id, calls[1]!.id, "stable across parses")
    assert.deepStrictEqual(passthrough.map((p) => Object.keys(p)[0]), ["executableCode", "codeExecutionResult"])
    assert.deepStrictEqual(inputOf(reg, calls[0]!), { location: "London" })
  })

  it("functionResponse parts echo real ids only and carry the value", () => {
    const { calls } = Gemini.toolCalls(official.response)
    const content = Gemini.toolMessages([
      success(calls[0]!, "18 C", { result: { temperature: 18, unit: "celsius" } }),
      success(calls[1]!, "21 C", { temperature: 21 })
    ], { calls })
    assert.deepStrictEqual(content, {
      role: "user",
      parts: [
        official.functionResponsePart,
        { functionResponse: { name: "get_current_temperature", response: { temperature: 21 } } }
      ]
    })
  })

  it("a call without args resolves as an empty object", () => {
    const reg = registry([imported("ping", { type: "object", properties: {} })])
    const { calls } = Gemini.toolCalls([{ functionCall: { id: "p1", name: "ping" } }])
    assert.deepStrictEqual(inputOf(reg, calls[0]!), {})
  })
})

describe("Gemini (providers.md cases)", () => {
  const nullable = {
    type: "object",
    properties: { note: { type: ["string", "null"], description: "Optional note" } },
    required: ["note"]
  }

  it("case 1: [string, null] becomes {type: STRING, nullable: true} on parameters, unchanged on parametersJsonSchema", () => {
    assert.deepStrictEqual(plain(declarationOf(nullable, { dialect: "openapi" }).parameters!.properties!.note), {
      type: "STRING",
      nullable: true,
      description: "Optional note"
    })
    assert.deepStrictEqual(declarationOf(nullable).parametersJsonSchema, nullable)
    const union = { type: "object", properties: { n: { anyOf: [{ type: "integer" }, { type: "null" }] } } }
    assert.deepStrictEqual(plain(declarationOf(union, { dialect: "openapi" }).parameters!.properties!.n), {
      type: "INTEGER",
      nullable: true
    })
  })

  it("case 2: an integer enum [15, 120] becomes a string enum with format enum on parameters", () => {
    const schema = { type: "object", properties: { minutes: { type: "integer", enum: [15, 120] } }, required: ["minutes"] }
    assert.deepStrictEqual(plain(declarationOf(schema, { dialect: "openapi" }).parameters!.properties!.minutes), {
      type: "INTEGER",
      format: "enum",
      enum: ["15", "120"]
    })
  })

  it("case 3: additionalProperties is dropped and $ref is inlined on parameters", () => {
    const schema = {
      type: "object",
      properties: { home: { $ref: "#/$defs/Address" }, work: { $ref: "#/$defs/Address", description: "Office" } },
      required: ["home"],
      additionalProperties: false,
      $defs: {
        Address: {
          type: "object",
          properties: { street: { type: "string", maxLength: 80 } },
          required: ["street"],
          additionalProperties: false
        }
      }
    }
    const address = {
      type: "OBJECT",
      properties: { street: { type: "STRING", maxLength: "80" } },
      required: ["street"]
    }
    assert.deepStrictEqual(plain(declarationOf(schema, { dialect: "openapi" }).parameters), {
      type: "OBJECT",
      properties: { home: address, work: { ...address, description: "Office" } },
      required: ["home"]
    })
    const recursive = {
      type: "object",
      properties: { node: { $ref: "#/$defs/Node" } },
      $defs: { Node: { type: "object", properties: { next: { $ref: "#/$defs/Node" } } } }
    }
    const failed = Gemini.toolDefinitionsResult([handSpec("tree", recursive)], { dialect: "openapi" })
    assert.isTrue(Result.isFailure(failed) && failed.failure.detail.includes("recursive $ref"))
  })

  it("case 4: math.factorial and ns:tool are valid names; 1tool and 129 characters are not", () => {
    const named = (name: string) => Gemini.toolDefinitionsResult([handSpec(name, { type: "object", properties: {} })])
    assert.isTrue(Result.isSuccess(named("math.factorial")))
    assert.isTrue(Result.isSuccess(named("ns:tool")))
    assert.isTrue(Result.isSuccess(named(`_${"a".repeat(127)}`)))
    for (const bad of ["1tool", "a".repeat(129)]) {
      const result = named(bad)
      assert.isTrue(Result.isFailure(result), bad)
      if (Result.isFailure(result)) assert.strictEqual(result.failure.reason, "invalid_name")
    }
    // Original (dotted) names can be sent on request; the registry resolves them.
    const reg = registry([imported("math.factorial", { type: "object", properties: { n: { type: "integer" } } })])
    const [tool] = Result.getOrThrow(Gemini.toolDefinitionsResult(reg.specs, { names: "original" }))
    assert.strictEqual(tool!.functionDeclarations[0]!.name, "math.factorial")
    const { calls } = Gemini.toolCalls([{ functionCall: { name: "math.factorial", args: { n: 3 } } }])
    assert.deepStrictEqual(inputOf(reg, calls[0]!), { n: 3 })
  })

  it("case 5: a non-object result is wrapped as {output: v} and an error as {error: msg}", () => {
    const content = Gemini.toolMessages([
      success({ id: "a", name: "count" }, "3", 3),
      success({ id: "b", name: "list" }, "[1,2]", [1, 2]),
      success({ id: "c", name: "echo" }, "has output", { output: "x", extra: 1 }),
      failure({ id: "d", name: "count" }, "division by zero")
    ])
    assert.deepStrictEqual(content.parts!.map((p) => p.functionResponse!.response), [
      { output: 3 },
      { output: [1, 2] },
      { output: { output: "x", extra: 1 } },
      { error: "division by zero" }
    ])
  })

  it("case 6: type together with anyOf is rejected", () => {
    const schema = { type: "object", properties: { v: { type: "string", anyOf: [{ minLength: 1 }, { const: "" }] } } }
    const result = Gemini.toolDefinitionsResult([handSpec("mixed", schema)], { dialect: "openapi" })
    assert.isTrue(Result.isFailure(result))
    if (Result.isFailure(result)) {
      assert.strictEqual(result.failure.reason, "unsupported_schema")
      assert.deepStrictEqual(result.failure.path, ["properties", "v"])
      assert.include(result.failure.message, "type and anyOf")
    }
  })

  it("a lone type null, free-form objects and untyped values have no OpenAPI form", () => {
    for (const property of [{ type: "null" }, { type: "object" }, {}]) {
      const result = Gemini.toolDefinitionsResult([handSpec("odd", { type: "object", properties: { p: property } })], {
        dialect: "openapi"
      })
      assert.isTrue(Result.isFailure(result), JSON.stringify(property))
    }
    // A tool without parameters omits `parameters`, as Google's docs do.
    assert.isUndefined(declarationOf({ type: "object", properties: {} }, { dialect: "openapi" }).parameters)
  })

  it("audio and embedded resources travel as inlineData parts, in order; a text resource as text/plain under its URI", () => {
    const content = Gemini.toolMessages([mixed({ id: "g1", name: "report" })])
    const response = content.parts[0]!.functionResponse
    assert.deepStrictEqual(response.response, { output: "report" })
    assert.deepStrictEqual(response.parts, [
      { inlineData: { mimeType: "audio/wav", data: "UklG" } },
      {
        inlineData: {
          mimeType: "text/plain",
          data: Buffer.from("[resource: file:///r/notes.md, text/markdown]\n# Notes").toString("base64")
        }
      },
      { inlineData: { mimeType: "application/pdf", data: "JVBE" } },
      { inlineData: { mimeType: "application/zip", data: "UEsD" } }
    ])
  })

  it("a value that repeats a media block's base64 sends a note in its place (the data goes once, as a part)", () => {
    const png = "iVBORw0KGgo".repeat(100)
    const result = {
      ...success({ id: "g2", name: "read_media" }, "", { content: [{ type: "image", data: png, mimeType: "image/png" }] }),
      content: [{ type: "image" as const, data: png, mimeType: "image/png" }]
    }
    const response = Gemini.toolMessages([result]).parts[0]!.functionResponse
    assert.deepStrictEqual(response.response, {
      content: [{ type: "image", data: "[image: image/png, 825 bytes; sent as a block]", mimeType: "image/png" }]
    })
    assert.deepStrictEqual(response.parts, [{ inlineData: { mimeType: "image/png", data: png } }])
  })
})
