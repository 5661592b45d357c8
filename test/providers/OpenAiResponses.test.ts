import { assert, describe, it } from "@effect/vitest"
import { Result } from "effect"
import * as OpenAiResponses from "../../src/providers/OpenAiResponses.ts"
import { metaErrors2020, strictViolations } from "./support/schemaChecks.ts"
import { fixture, imported, inputOf, mixed, registry, success } from "./support/tools.ts"

const official = fixture("openai-responses.json")
const officialTool = official.tools[0]
const weather = imported(officialTool.name, officialTool.parameters, { description: officialTool.description })

describe("OpenAiResponses golden (function calling guide)", () => {
  it("a strict flat function tool reproduces the guide's definition", () => {
    const tools = Result.getOrThrow(OpenAiResponses.toolDefinitionsResult(registry([weather]).specs))
    assert.deepStrictEqual(tools, official.tools)
    assert.deepStrictEqual(metaErrors2020(tools[0]!.parameters), [])
    assert.deepStrictEqual(strictViolations(tools[0]!.parameters), [])
  })

  it("strict is always explicit, false when not used", () => {
    const [tool] = Result.getOrThrow(OpenAiResponses.toolDefinitionsResult(registry([weather]).specs, { strict: false }))
    assert.strictEqual(tool!.strict, false)
  })

  it("function_call items become calls by call_id; web_search_call is passthrough; messages are ignored", () => {
    const reg = registry([weather])
    const { calls, passthrough } = OpenAiResponses.toolCalls(official.response)
    assert.deepStrictEqual(calls, [
      { id: "call_12345xyz", name: "get_weather", arguments: "{\"location\":\"Paris, France\"}" },
      { id: "call_67890abc", name: "get_weather", arguments: "{\"location\":\"Bogotá, Colombia\"}" }
    ])
    assert.deepStrictEqual(passthrough, [official.response.output[0]])
    assert.deepStrictEqual(inputOf(reg, calls[1]!), { location: "Bogotá, Colombia" })
  })

  it("a function_call_output answers each call_id", () => {
    const [call] = OpenAiResponses.toolCalls(official.response).calls
    assert.deepStrictEqual(OpenAiResponses.toolMessages([success(call!, "14 degrees celsius")]), [official.functionCallOutput])
  })

  it("binary resources travel as input_file data URLs named by their URI, in order; audio is a note, a text resource text", () => {
    const [output] = OpenAiResponses.toolMessages([mixed({ id: "call_m", name: "report" })])
    assert.deepStrictEqual(output!.output, [
      {
        type: "input_text",
        text: "report\n[audio: audio/wav, 3 bytes; not sent: a Responses function call output carries no audio]\n" +
          "[resource: file:///r/notes.md, text/markdown]\n# Notes"
      },
      { type: "input_file", file_data: "data:application/pdf;base64,JVBE", filename: "report.pdf" },
      { type: "input_file", file_data: "data:application/zip;base64,UEsD", filename: "all.zip" }
    ])
  })

  it("images travel as input_image data URLs next to the text", () => {
    const [output] = OpenAiResponses.toolMessages([{
      ...success({ id: "call_img", name: "snap" }, "here"),
      content: [{ type: "text", text: "here" }, { type: "image", data: "iVBO", mimeType: "image/png" }]
    }])
    assert.deepStrictEqual(output!.output, [
      { type: "input_text", text: "here" },
      { type: "input_image", image_url: "data:image/png;base64,iVBO", detail: "auto" }
    ])
  })

  it("strict nulls for optional properties are normalised when specs are given", () => {
    const tool = imported("search", {
      type: "object",
      properties: { query: { type: "string" }, limit: { type: "integer" } },
      required: ["query"]
    })
    const reg = registry([tool])
    const { calls } = OpenAiResponses.toolCalls([
      { type: "function_call", call_id: "c1", name: "search", arguments: "{\"query\":\"q\",\"limit\":null}" }
    ], { specs: reg.specs })
    assert.deepStrictEqual(inputOf(reg, calls[0]!), { query: "q" })
  })
})
