import { assert, describe, it } from "@effect/vitest"
import { Effect, Result, Schema } from "effect"
import * as Tool from "../../src/contract/Tool.ts"
import * as ToolRegistry from "../../src/contract/ToolRegistry.ts"
import * as Anthropic from "../../src/providers/Anthropic.ts"
import * as Gemini from "../../src/providers/Gemini.ts"
import * as Mcp from "../../src/providers/Mcp.ts"
import * as OpenAiChat from "../../src/providers/OpenAiChat.ts"
import * as OpenAiResponses from "../../src/providers/OpenAiResponses.ts"
import type { ProviderExportError } from "../../src/providers/ProviderExportError.ts"
import { metaErrors2020, strictViolations, validate07, validate2020 } from "./support/schemaChecks.ts"
import { closed, fixture, imported, inputOf, mixed, registry, rejected, resolve, success } from "./support/tools.ts"

const official = fixture("mcp.json")
const protocol = fixture("mcp-2025-11-25.schema.subset.json")
/** Validates a value against a definition of MCP's published (draft-07) protocol schema. */
const conforms = (definition: string, value: unknown) =>
  validate07({ ...protocol, $ref: `#/definitions/${definition}` }, value)

/** A tool from one of the spec's `tools/list` examples, title included (the `imported` helper takes none). */
const fromExample = (
  example: { name: string; title: string; description: string; inputSchema: any; outputSchema?: any },
  safety: Tool.Dynamic["safety"]
): Tool.Dynamic<never, never> =>
  Result.getOrThrow(Tool.fromJsonSchema(example.name, {
    title: example.title,
    description: example.description,
    inputSchema: example.inputSchema,
    // Imported tools keep their output schema as given (the spec's example is an open object).
    ...(example.outputSchema === undefined ? {} : { outputSchema: example.outputSchema }),
    safety,
    handler: () => Effect.succeed(null)
  }))
const weather = fromExample(official.listedTool, { access: "network", idempotent: true })
const weatherData = fromExample(official.structuredTool, { access: "read" })

describe("Mcp golden (2025-11-25 tools page examples)", () => {
  it("tools/list entries reproduce the spec's tools, titles included (inputs closed, as enforced), with annotations from Safety, and conform to the schema", () => {
    const tools = Result.getOrThrow(Mcp.toolDefinitionsResult(registry([weather, weatherData]).specs))
    const listed = official.listedTool
    const structured = official.structuredTool
    assert.deepStrictEqual(tools, [
      {
        ...listed,
        inputSchema: closed(listed.inputSchema),
        annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: true }
      },
      {
        ...structured,
        inputSchema: closed(structured.inputSchema),
        annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: false, openWorldHint: false }
      }
    ])
    for (const tool of tools) {
      assert.deepStrictEqual(conforms("Tool", tool), [])
      assert.deepStrictEqual(metaErrors2020(tool.inputSchema), [])
    }
  })

  it("a title is MCP's alone: a tool without one lists none, and the other providers' exports ignore it", () => {
    const plain = imported(official.listedTool.name, official.listedTool.inputSchema, {
      description: official.listedTool.description,
      safety: { access: "network", idempotent: true }
    })
    const [withTitle, withoutTitle] = [registry([weather]).specs, registry([plain]).specs]
    assert.strictEqual(withTitle[0]!.title, "Weather Information Provider")
    assert.notProperty(Result.getOrThrow(Mcp.toolDefinitionsResult(withoutTitle))[0]!, "title")
    const exports: ReadonlyArray<(specs: typeof withTitle) => unknown> = [
      (specs) => Result.getOrThrow(OpenAiChat.toolDefinitionsResult(specs)),
      (specs) => Result.getOrThrow(OpenAiResponses.toolDefinitionsResult(specs)),
      (specs) => Result.getOrThrow(Anthropic.toolDefinitionsResult(specs)),
      (specs) => Result.getOrThrow(Gemini.toolDefinitionsResult(specs))
    ]
    for (const toolDefinitions of exports) {
      const exported = toolDefinitions(withTitle)
      assert.deepStrictEqual(exported, toolDefinitions(withoutTitle))
      assert.notInclude(JSON.stringify(exported), "Weather Information Provider")
    }
    // Tool.make takes one too.
    const made = Tool.make("greet", { title: "Greeter", description: "Greets.", input: Schema.Struct({}), handler: () => Effect.succeed("hi") })
    assert.strictEqual(Result.getOrThrow(Mcp.toolDefinitionsResult(registry([made]).specs))[0]!.title, "Greeter")
  })

  it.effect("every provider's toolDefinitions is an Effect (yield it); toolDefinitionsResult is the same as a Result", () =>
    Effect.gen(function*() {
      const specs = registry([weather]).specs
      const twice = [specs[0]!, specs[0]!]
      const providers: ReadonlyArray<{
        readonly toolDefinitions: (specs: ReadonlyArray<Tool.ToolSpec>) => Effect.Effect<ReadonlyArray<unknown>, ProviderExportError>
        readonly toolDefinitionsResult: (specs: ReadonlyArray<Tool.ToolSpec>) => Result.Result<ReadonlyArray<unknown>, ProviderExportError>
      }> = [OpenAiChat, OpenAiResponses, Anthropic, Gemini, Mcp]
      for (const provider of providers) {
        const exported = yield* provider.toolDefinitions(specs)
        assert.deepStrictEqual(exported, Result.getOrThrow(provider.toolDefinitionsResult(specs)))
        const failed = yield* Effect.flip(provider.toolDefinitions(twice))
        assert.strictEqual(failed._tag, "ProviderExportError")
        assert.strictEqual(failed.reason, "duplicate_name")
      }
    }))

  it("a tools/call request becomes a call; other requests are passthrough", () => {
    const reg = registry([weather])
    const list = { jsonrpc: "2.0" as const, id: 1, method: "tools/list" }
    assert.deepStrictEqual(conforms("CallToolRequest", official.callRequest), [])
    const { calls, passthrough } = Mcp.toolCalls([list, official.callRequest])
    assert.deepStrictEqual(calls, [{ id: "2", name: "get_weather", arguments: { location: "New York" } }])
    assert.deepStrictEqual(passthrough, [list])
    assert.deepStrictEqual(inputOf(reg, calls[0]!), { location: "New York" })
  })

  it("text and structured results reproduce the spec's CallToolResults", () => {
    const reg = registry([weather, weatherData])
    const [text] = Mcp.toolMessages([success({ id: "2", name: "get_weather" }, official.textResult.content[0].text)])
    assert.deepStrictEqual(text, official.textResult)
    const [structured] = Mcp.toolMessages([
      success(
        { id: "3", name: "get_weather_data" },
        official.structuredResult.content[0].text,
        official.structuredResult.structuredContent
      )
    ], { specs: reg.specs })
    assert.deepStrictEqual(structured, { ...official.structuredResult, isError: false })
    assert.deepStrictEqual(conforms("CallToolResult", text), [])
    assert.deepStrictEqual(conforms("CallToolResult", structured), [])
  })
})

describe("Mcp (providers.md cases)", () => {
  it("case 1: a draft-07 $schema is honoured: validated as draft-07, exported as equivalent 2020-12", () => {
    const draft07 = {
      $schema: "http://json-schema.org/draft-07/schema#",
      type: "object",
      properties: {
        point: { type: "array", items: [{ type: "number" }, { type: "number" }], additionalItems: false },
        unit: { $ref: "#/definitions/Unit" }
      },
      required: ["point"],
      definitions: { Unit: { type: "string", enum: ["m", "ft"] } }
    } as const
    const reg = registry([imported("locate", draft07 as any)])
    // The registry reads the tuple the draft-07 way.
    assert.deepStrictEqual(inputOf(reg, { id: "1", name: "locate", arguments: { point: [1, 2], unit: "m" } }), {
      point: [1, 2],
      unit: "m"
    })
    assert.isTrue(Result.isFailure(resolve(reg, { id: "2", name: "locate", arguments: { point: [1, 2, 3] } })))
    // The export says the same thing in 2020-12, which MCP assumes when $schema is absent.
    const [tool] = Result.getOrThrow(Mcp.toolDefinitionsResult(reg.specs))
    assert.deepStrictEqual(tool!.inputSchema.properties, {
      point: { type: "array", prefixItems: [{ type: "number" }, { type: "number" }], items: false },
      unit: { $ref: "#/$defs/Unit" }
    })
    assert.deepStrictEqual(metaErrors2020(tool!.inputSchema), [])
    for (const value of [{ point: [1, 2] }, { point: [1, 2, 3] }, { point: [1, "x"] }, { point: [1, 2], unit: "km" }]) {
      assert.strictEqual(
        validate2020(tool!.inputSchema, value).length === 0,
        validate07(draft07, value).length === 0,
        JSON.stringify(value)
      )
    }
  })

  it("case 2: admin.tools.list keeps its name in MCP and maps reversibly for OpenAI and Anthropic; collisions fail", () => {
    const admin = imported("admin.tools.list", { type: "object", properties: { page: { type: "integer" } } })
    const reg = registry([admin])
    assert.strictEqual(Result.getOrThrow(Mcp.toolDefinitionsResult(reg.specs))[0]!.name, "admin.tools.list")
    assert.strictEqual(Result.getOrThrow(OpenAiChat.toolDefinitionsResult(reg.specs))[0]!.function.name, "admin_tools_list")
    assert.strictEqual(Result.getOrThrow(Anthropic.toolDefinitionsResult(reg.specs))[0]!.name, "admin_tools_list")
    assert.strictEqual(reg.aliases.toOriginal(reg.names[0]!), "admin.tools.list")
    const viaMcp = Mcp.toolCalls({ jsonrpc: "2.0", id: "a", method: "tools/call", params: { name: "admin.tools.list", arguments: { page: 2 } } })
    const viaAnthropic = Anthropic.toolCalls([{ type: "tool_use", id: "b", name: "admin_tools_list", input: { page: 2 } }])
    const first = Result.getOrThrow(resolve(reg, viaMcp.calls[0]!))
    const second = Result.getOrThrow(resolve(reg, viaAnthropic.calls[0]!))
    assert.strictEqual(first.entry, second.entry)
    assert.deepStrictEqual(first.input, second.input)
    const collision = ToolRegistry.makeResult([admin, imported("admin_tools.list", { type: "object", properties: {} })])
    assert.isTrue(Result.isFailure(collision))
    if (Result.isFailure(collision)) assert.include(collision.failure.message, "both map to \"admin_tools_list\"")
  })

  it("case 3: structuredContent that violates outputSchema is an error", () => {
    const reg = registry([weatherData])
    const [result] = Mcp.toolMessages([
      success({ id: "9", name: "get_weather_data" }, "{}", { temperature: "hot", conditions: "Sunny" })
    ], { specs: reg.specs })
    assert.strictEqual(result!.isError, true)
    assert.isUndefined(result!.structuredContent)
    assert.include((result!.content[0] as Mcp.TextContent).text, "does not match its output schema")
    assert.include((result!.content[0] as Mcp.TextContent).text, "temperature")
    assert.deepStrictEqual(conforms("CallToolResult", result), [])
  })

  it("case 4: invalid arguments produce {isError: true, content: [text]}", () => {
    const reg = registry([weather])
    const { calls } = Mcp.toolCalls({ jsonrpc: "2.0", id: 5, method: "tools/call", params: { name: "get_weather", arguments: { location: 7 } } })
    const [result] = Mcp.toolMessages([rejected(reg, calls[0]!)])
    assert.strictEqual(result!.isError, true)
    assert.strictEqual(result!.content.length, 1)
    assert.strictEqual(result!.content[0]!.type, "text")
    assert.include((result!.content[0] as Mcp.TextContent).text, "invalid arguments")
    assert.deepStrictEqual(conforms("CallToolResult", result), [])
  })

  it("case 5: a tool with no parameters round-trips through the OpenAI strict export", () => {
    const noArgs = imported("server.ping", { type: "object", additionalProperties: false })
    const reg = registry([noArgs])
    const [mcpTool] = Result.getOrThrow(Mcp.toolDefinitionsResult(reg.specs))
    assert.deepStrictEqual(mcpTool!.inputSchema, { type: "object", additionalProperties: false })
    const [openAi] = Result.getOrThrow(OpenAiChat.toolDefinitionsResult(reg.specs, { strict: "require" }))
    assert.deepStrictEqual(openAi!.function.parameters, { type: "object", properties: {}, required: [], additionalProperties: false })
    assert.deepStrictEqual(strictViolations(openAi!.function.parameters), [])
    const message = (args: string): OpenAiChat.ChatCompletionMessage => ({
      role: "assistant",
      content: null,
      tool_calls: [{ id: "c", type: "function", function: { name: "server_ping", arguments: args } }]
    })
    assert.deepStrictEqual(inputOf(reg, OpenAiChat.toolCalls(message("{}"), { specs: reg.specs }).calls[0]!), {})
    assert.isTrue(Result.isFailure(resolve(reg, OpenAiChat.toolCalls(message("{\"x\":1}")).calls[0]!)))
  })

  it("arguments absent from tools/call count as no arguments; images become ImageContent", () => {
    const reg = registry([imported("server.ping", { type: "object", additionalProperties: false })])
    const { calls } = Mcp.toolCalls({ jsonrpc: "2.0", id: 8, method: "tools/call", params: { name: "server.ping" } })
    assert.deepStrictEqual(inputOf(reg, calls[0]!), {})
    const [result] = Mcp.toolMessages([{
      ...success({ id: "8", name: "server_ping" }, "pong"),
      content: [{ type: "text", text: "pong" }, { type: "image", data: "iVBO", mimeType: "image/png" }]
    }])
    assert.deepStrictEqual(result!.content, [{ type: "text", text: "pong" }, { type: "image", data: "iVBO", mimeType: "image/png" }])
    assert.deepStrictEqual(conforms("CallToolResult", result), [])
  })

  it("audio and embedded resources become AudioContent and EmbeddedResource, in order", () => {
    const [result] = Mcp.toolMessages([mixed({ id: "m", name: "report" })])
    assert.deepStrictEqual(result!.content, [
      { type: "text", text: "report" },
      { type: "audio", data: "UklG", mimeType: "audio/wav" },
      { type: "resource", resource: { uri: "file:///r/notes.md", mimeType: "text/markdown", text: "# Notes" } },
      { type: "resource", resource: { uri: "file:///r/report.pdf", mimeType: "application/pdf", blob: "JVBE" } },
      { type: "resource", resource: { uri: "file:///r/all.zip", mimeType: "application/zip", blob: "UEsD" } }
    ])
    assert.deepStrictEqual(conforms("CallToolResult", result), [])
  })

  it("structured content with media and no text: its JSON stands in the text, media data as notes", () => {
    const value = { frame: "UklGUklG", label: "beep" }
    const [result] = Mcp.toolMessages([{
      ...success({ id: "m2", name: "record" }, "", value),
      content: [{ type: "audio", data: "UklGUklG", mimeType: "audio/wav" }]
    }])
    assert.deepStrictEqual(result!.content, [
      { type: "text", text: `{"frame":"[audio: audio/wav, 6 bytes; sent as a block]","label":"beep"}` },
      { type: "audio", data: "UklGUklG", mimeType: "audio/wav" }
    ])
    assert.deepStrictEqual(result!.structuredContent, value)
    assert.deepStrictEqual(conforms("CallToolResult", result), [])
  })
})
