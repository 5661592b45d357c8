import { assert, describe, it } from "@effect/vitest"
import { transformJSONSchema } from "@anthropic-ai/sdk/lib/transform-json-schema"
import { Result } from "effect"
import * as ToolName from "../../src/contract/ToolName.ts"
import * as ToolRegistry from "../../src/contract/ToolRegistry.ts"
import * as Anthropic from "../../src/providers/Anthropic.ts"
import * as ToolAnswers from "../../src/providers/ToolAnswers.ts"
import { metaErrors2020 } from "./support/schemaChecks.ts"
import { closed, failure, fixture, handSpec, imported, inputOf, mixed, registry, rejected, success } from "./support/tools.ts"

const official = fixture("anthropic.json")
const officialTool = official.tools[0]
const stock = imported(officialTool.name, officialTool.input_schema, { description: officialTool.description })

const strictSchema = (inputSchema: object) => {
  const exported = Anthropic.toolDefinitionsResult([handSpec("t", inputSchema as any)], { strict: "require" })
  if (Result.isFailure(exported)) throw new Error(exported.failure.message)
  const [tool] = exported.success
  assert.strictEqual(tool!.strict, true)
  assert.deepStrictEqual(metaErrors2020(tool!.input_schema), [])
  return tool!.input_schema as any
}

describe("Anthropic golden (SDK doc example: get_stock_price)", () => {
  it("the definition reproduces the SDK's example tool, closed as it is enforced", () => {
    assert.deepStrictEqual(
      Result.getOrThrow(Anthropic.toolDefinitionsResult(registry([stock]).specs)),
      official.tools.map((tool: any) => ({ ...tool, input_schema: closed(tool.input_schema) }))
    )
  })

  it("tool_use blocks become calls; server tool blocks are passthrough; text is ignored", () => {
    const { calls, passthrough } = Anthropic.toolCalls(official.message)
    assert.deepStrictEqual(calls.map((c) => c.id), ["toolu_01D7FLrfh4GYq7yT1ULFeyMV", "toolu_02", "toolu_03"])
    assert.deepStrictEqual(calls[0], { id: "toolu_01D7FLrfh4GYq7yT1ULFeyMV", name: "get_stock_price", arguments: { ticker: "^GSPC" } })
    assert.deepStrictEqual(passthrough.map((b) => b.type), ["server_tool_use", "web_search_tool_result"])
  })

  it("the tool_result answers the tool_use id", () => {
    const [call] = Anthropic.toolCalls(official.message).calls
    assert.deepStrictEqual(Anthropic.toolMessages([success(call!, "259.75 USD")]), {
      role: "user",
      content: [official.toolResult]
    })
  })
})

describe("Anthropic (providers.md cases)", () => {
  it("case 1: under strict an optional field stays out of required and gets no null union", () => {
    const schema = strictSchema({
      type: "object",
      properties: { city: { type: "string" }, unit: { type: "string", enum: ["c", "f"] } },
      required: ["city"]
    })
    assert.deepStrictEqual(schema, {
      type: "object",
      properties: { city: { type: "string" }, unit: { type: "string", enum: ["c", "f"] } },
      additionalProperties: false,
      required: ["city"]
    })
  })

  it("case 2: minimum, maxLength and pattern move into the description; additionalProperties:false is added", () => {
    const schema = strictSchema({
      type: "object",
      properties: {
        age: { type: "integer", minimum: 0, description: "Age in years" },
        code: { type: "string", maxLength: 8, pattern: "^[A-Z]+$" }
      }
    })
    assert.strictEqual(schema.additionalProperties, false)
    assert.deepStrictEqual(schema.properties.age, { type: "integer", description: "Age in years\n\n{minimum: 0}" })
    assert.deepStrictEqual(schema.properties.code, { type: "string", description: "{maxLength: 8, pattern: \"^[A-Z]+$\"}" })
  })

  it("strict accepts enum-only and const-only properties, as the SDK's transform does (types kept where declared)", () => {
    const properties = {
      level: { enum: [1, 2, 3] },
      mode: { const: "fast" },
      nullable: { enum: ["a", null], description: "an enum with null" },
      typed: { type: "string", enum: ["x", "y"] },
      objects: { type: "array", items: { type: "string" }, enum: [["a"]] }
    }
    const input = { type: "object", properties, required: ["level", "mode"], additionalProperties: false }
    const ours = strictSchema(input)
    const sdk = transformJSONSchema(structuredClone(input))
    // the SDK drops a declared type beside literals; otherwise the two agree
    const { type: _, ...typedWithoutType } = ours.properties.typed
    assert.deepStrictEqual({ ...ours, properties: { ...ours.properties, typed: typedWithoutType } }, sdk)
    assert.deepStrictEqual(ours.properties.level, { enum: [1, 2, 3] })
    assert.deepStrictEqual(ours.properties.mode, { const: "fast" })
    assert.deepStrictEqual(ours.properties.typed, { type: "string", enum: ["x", "y"] })
    // an enum of non-primitives is described, as in the SDK
    assert.include(ours.properties.objects.description, "enum: [[\"a\"]]")
    // still an error: no type, no combinator, no literal
    const untyped = Anthropic.toolDefinitionsResult([handSpec("t", { type: "object", properties: { any: {} } } as any)], { strict: "require" })
    assert.isTrue(Result.isFailure(untyped))
  })

  it("case 3: oneOf becomes anyOf", () => {
    const schema = strictSchema({
      type: "object",
      properties: { id: { oneOf: [{ type: "string" }, { type: "integer" }] } },
      required: ["id"]
    })
    assert.deepStrictEqual(schema.properties.id, { anyOf: [{ type: "string" }, { type: "integer" }] })
  })

  it("case 4: a recursive $ref is rejected under strict (auto falls back to the plain schema)", () => {
    const tree = {
      type: "object" as const,
      properties: { root: { $ref: "#/$defs/Node" } },
      $defs: { Node: { type: "object", properties: { children: { type: "array", items: { $ref: "#/$defs/Node" } } } } }
    }
    const required = Anthropic.toolDefinitionsResult([handSpec("tree", tree)], { strict: "require" })
    assert.isTrue(Result.isFailure(required))
    if (Result.isFailure(required)) {
      assert.strictEqual(required.failure.reason, "unsupported_schema")
      assert.include(required.failure.message, "recursive $ref (Node -> Node)")
    }
    const [auto] = Result.getOrThrow(Anthropic.toolDefinitionsResult([handSpec("tree", tree)], { strict: "auto" }))
    assert.isUndefined(auto!.strict)
    assert.deepStrictEqual(auto!.input_schema, tree)
  })

  it("case 5: input is validated as an object directly, with no parse step", () => {
    const reg = registry([stock])
    const { calls } = Anthropic.toolCalls(official.message)
    assert.deepStrictEqual(inputOf(reg, calls[1]!), { ticker: "AAPL" })
    assert.strictEqual(typeof calls[1]!.arguments, "object")
    const wrongType = rejected(reg, calls[2]!)
    assert.strictEqual(wrongType.error?._tag, "InvalidArguments")
    // An input that is not an object is malformed, never coerced.
    const notObject = rejected(reg, { id: "toolu_s", name: "get_stock_price", arguments: [] })
    assert.strictEqual(notObject.error?._tag, "MalformedArguments")
  })

  it("case 6: N parallel tool_use blocks get one user message, tool_results first, in call order, errors flagged", () => {
    const reg = registry([stock])
    const { calls } = Anthropic.toolCalls(official.message)
    // Results arrive out of order; answerAll restores call order and checks every id is answered once.
    const results = [
      rejected(reg, calls[2]!),
      success(calls[0]!, "259.75 USD"),
      failure(calls[1]!, "market closed")
    ]
    const ordered = Result.getOrThrow(ToolAnswers.answerAll(calls, results))
    const message = Anthropic.toolMessages(ordered, { after: [{ type: "text", text: "Continue." }] })
    assert.strictEqual(message.role, "user")
    assert.deepStrictEqual(
      message.content.map((b) => b.type === "tool_result" ? [b.tool_use_id, b.is_error ?? false] : [b.type]),
      [["toolu_01D7FLrfh4GYq7yT1ULFeyMV", false], ["toolu_02", true], ["toolu_03", true], ["text"]]
    )
    const missing = ToolAnswers.answerAll(calls, results.slice(1))
    assert.isTrue(Result.isFailure(missing))
  })

  it("case 7: a.b is sanitised by the registry and rejected raw; 65-character names are rejected", () => {
    const reg = registry([imported("a.b", { type: "object", properties: {} })])
    const [tool] = Result.getOrThrow(Anthropic.toolDefinitionsResult(reg.specs))
    assert.strictEqual(tool!.name, "a_b")
    assert.strictEqual(reg.get("a_b")?.spec.originalName, "a.b")
    const dotted = Anthropic.toolDefinitionsResult([{ ...reg.specs[0]!, name: "a.b" as ToolName.ToolName }])
    assert.strictEqual(Result.isFailure(dotted) && dotted.failure.reason, "invalid_name")
    const long = Anthropic.toolDefinitionsResult([handSpec("x".repeat(65), { type: "object", properties: {} })])
    assert.isTrue(Result.isFailure(long))
    if (Result.isFailure(long)) assert.include(long.failure.message, "at most 64 characters")
    assert.isTrue(Result.isFailure(ToolRegistry.makeResult([
      imported("a.b", { type: "object", properties: {} }),
      imported("a_b", { type: "object", properties: {} })
    ])))
  })

  it("case 8: cache_control passes through per tool", () => {
    const reg = registry([stock, imported("get_news", { type: "object", properties: { q: { type: "string" } } })])
    const tools = Result.getOrThrow(Anthropic.toolDefinitionsResult(reg.specs, {
      cacheControl: { get_news: { type: "ephemeral", ttl: "1h" } }
    }))
    assert.isUndefined(tools[0]!.cache_control)
    assert.deepStrictEqual(tools[1]!.cache_control, { type: "ephemeral", ttl: "1h" })
  })

  it("images go as base64 image blocks, in order; unsupported image types become a note", () => {
    const message = Anthropic.toolMessages([{
      ...success({ id: "toolu_i", name: "snap" }, "two images"),
      content: [
        { type: "text", text: "two images" },
        { type: "image", data: "iVBO", mimeType: "image/png" },
        { type: "image", data: "PHN2", mimeType: "image/svg+xml" }
      ]
    }])
    assert.deepStrictEqual(message.content[0], {
      type: "tool_result",
      tool_use_id: "toolu_i",
      content: [
        { type: "text", text: "two images" },
        { type: "image", source: { type: "base64", media_type: "image/png", data: "iVBO" } },
        { type: "text", text: "[image: image/svg+xml, 3 bytes; not sent: Anthropic accepts JPEG, PNG, GIF and WebP images]" }
      ]
    })
  })

  it("text and PDF resources go as documents titled with their URI; audio and other binaries become notes, in order", () => {
    const message = Anthropic.toolMessages([mixed({ id: "toolu_m", name: "report" })])
    assert.deepStrictEqual(message.content[0], {
      type: "tool_result",
      tool_use_id: "toolu_m",
      content: [
        { type: "text", text: "report\n[audio: audio/wav, 3 bytes; not sent: an Anthropic tool result carries no audio]" },
        { type: "document", source: { type: "text", media_type: "text/plain", data: "# Notes" }, title: "file:///r/notes.md" },
        { type: "document", source: { type: "base64", media_type: "application/pdf", data: "JVBE" }, title: "file:///r/report.pdf" },
        {
          type: "text",
          text: "[resource: file:///r/all.zip, application/zip, 3 bytes; not sent: an Anthropic document is a PDF or text]"
        }
      ]
    })
  })
})
