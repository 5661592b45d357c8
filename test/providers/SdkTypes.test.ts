/**
 * The provider wire types against the official SDKs (dev dependencies only):
 * every outbound value (tool definitions, tool result messages) goes into the
 * SDK's own request params with no cast, and every SDK response object goes
 * into `toolCalls` with no cast. The type checker (`tsc`, which includes
 * test/) is the first half of the proof; the second is that each SDK's real
 * client sends our objects and returns its typed response, over a fake
 * `fetch` (or MCP's in-memory transport): no network.
 */
import type Anthropic from "@anthropic-ai/sdk"
import { assert, describe, it } from "@effect/vitest"
import * as Genai from "@google/genai"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js"
import { Server } from "@modelcontextprotocol/sdk/server/index.js"
import * as McpTypes from "@modelcontextprotocol/sdk/types.js"
import { Result } from "effect"
import OpenAI from "openai"
import * as AnthropicTools from "../../src/providers/Anthropic.ts"
import * as Gemini from "../../src/providers/Gemini.ts"
import * as Mcp from "../../src/providers/Mcp.ts"
import * as OpenAiChat from "../../src/providers/OpenAiChat.ts"
import * as OpenAiResponses from "../../src/providers/OpenAiResponses.ts"
import type { ToolCall } from "../../src/contract/ToolCall.ts"
import * as ToolResult from "../../src/contract/ToolResult.ts"
import { imported, inputOf, mixed, registry, success } from "./support/tools.ts"

// ---------------------------------------------------------------------------
// shared
// ---------------------------------------------------------------------------

const weather = imported("get_weather", {
  type: "object",
  properties: {
    location: { type: "string", description: "City and country, e.g. Paris, France" },
    unit: { type: "string", enum: ["celsius", "fahrenheit"] }
  },
  required: ["location"]
}, { description: "Get the current temperature for a location.", safety: { access: "network", idempotent: true } })

const screenshot = imported("take_screenshot", {
  type: "object",
  properties: { url: { type: "string", description: "Page to capture" } },
  required: ["url"]
}, { description: "Capture a web page as a PNG.", safety: { access: "read" } })

const reg = registry([weather, screenshot])
const specs = reg.specs

/** A search tool for the tool search blocks (its result is handled by the caller, as the agent's is). */
const searchSpec = registry([
  imported("search_tools", {
    type: "object",
    properties: { query: { type: "string" } },
    required: ["query"]
  }, { description: "Search the tool catalogue." })
]).specs[0]!

/** A 1x1 PNG. */
const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="

/** The results a runtime would produce for these calls: a temperature, or a screenshot with text. */
const answer = (calls: ReadonlyArray<ToolCall>): Array<ToolResult.ToolResult> =>
  calls.map((call) =>
    call.name === "take_screenshot"
      ? {
        toolCallId: call.id,
        name: call.name,
        content: [ToolResult.text("example.com home page"), { type: "image", data: png, mimeType: "image/png" }],
        artifacts: [],
        isError: false,
        elapsed: 1
      }
      : success(call, "14 °C", { temperature: 14, unit: "celsius" })
  )

interface Sent {
  readonly url: string
  readonly body: any
}

/** A `fetch` that answers the n-th request with `replies[n]` (JSON) and records what the SDK sent. */
const fakeFetch = (...replies: ReadonlyArray<unknown>) => {
  const sent: Array<Sent> = []
  const fetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    sent.push({ url: input instanceof Request ? input.url : String(input), body: JSON.parse(String(init?.body)) })
    return Response.json(replies[sent.length - 1] ?? replies.at(-1))
  }
  return { fetch, sent }
}

// ---------------------------------------------------------------------------
// OpenAI Chat Completions
// ---------------------------------------------------------------------------

/** A `ChatCompletion` body with two parallel function calls (strict mode sent `unit: null`). */
const chatBody = {
  id: "chatcmpl-abc123",
  object: "chat.completion",
  created: 1699896916,
  model: "gpt-4.1",
  choices: [{
    index: 0,
    message: {
      role: "assistant",
      content: null,
      refusal: null,
      tool_calls: [
        {
          id: "call_1",
          type: "function",
          function: { name: "get_weather", arguments: "{\"location\":\"Paris, France\",\"unit\":null}" }
        },
        { id: "call_2", type: "function", function: { name: "take_screenshot", arguments: "{\"url\":\"https://example.com\"}" } }
      ]
    },
    logprobs: null,
    finish_reason: "tool_calls"
  }],
  usage: { prompt_tokens: 82, completion_tokens: 17, total_tokens: 99 }
}

describe("OpenAiChat with the openai SDK", () => {
  it("tools and tool messages go into chat.completions.create; its ChatCompletion comes back into toolCalls", async () => {
    const http = fakeFetch(chatBody, { ...chatBody, choices: [] })
    const openai = new OpenAI({ apiKey: "test", fetch: http.fetch, maxRetries: 0 })

    const tools: Array<OpenAI.Chat.ChatCompletionTool> = Result.getOrThrow(OpenAiChat.toolDefinitionsResult(specs))
    const question: OpenAI.Chat.ChatCompletionMessageParam = { role: "user", content: "Weather in Paris, and a screenshot?" }
    const completion: OpenAI.Chat.ChatCompletion = await openai.chat.completions.create({
      model: "gpt-4.1",
      messages: [question],
      tools
    })

    const { calls, passthrough } = OpenAiChat.toolCalls(completion, { specs })
    assert.deepStrictEqual(calls.map((call) => [call.id, call.name]), [["call_1", "get_weather"], ["call_2", "take_screenshot"]])
    assert.deepStrictEqual(inputOf(reg, calls[0]!), { location: "Paris, France" })
    assert.deepStrictEqual(passthrough, [])
    assert.deepStrictEqual(OpenAiChat.toolCalls(completion.choices[0]!.message).calls.map((call) => call.id), ["call_1", "call_2"])

    const answers: Array<OpenAI.Chat.ChatCompletionToolMessageParam> = OpenAiChat.toolMessages(answer(calls))
    await openai.chat.completions.create({
      model: "gpt-4.1",
      messages: [question, completion.choices[0]!.message, ...OpenAiChat.toolMessages(answer(calls))],
      tools
    })
    assert.deepStrictEqual(http.sent.map((sent) => new URL(sent.url).pathname), ["/v1/chat/completions", "/v1/chat/completions"])
    assert.deepStrictEqual(http.sent[0]!.body.tools, tools)
    assert.deepStrictEqual(http.sent[1]!.body.messages.slice(2), answers)
    assert.deepStrictEqual(answers.map((message) => message.tool_call_id), ["call_1", "call_2"])
  })

  it("a ChatCompletionMessage with a custom tool call: the custom call is passthrough, in the SDK's shape", () => {
    const message: OpenAI.Chat.ChatCompletionMessage = {
      role: "assistant",
      content: null,
      refusal: null,
      tool_calls: [
        { id: "call_9", type: "custom", custom: { name: "code_exec", input: "print(1)" } },
        { id: "call_10", type: "function", function: { name: "get_weather", arguments: "{\"location\":\"Oslo\"}" } }
      ]
    }
    const { calls, passthrough } = OpenAiChat.toolCalls(message)
    const replay: Array<OpenAI.Chat.ChatCompletionMessageToolCall> = [...passthrough]
    assert.deepStrictEqual(calls.map((call) => call.id), ["call_10"])
    assert.deepStrictEqual(replay, [message.tool_calls![0]!])
  })
})

// ---------------------------------------------------------------------------
// OpenAI Responses
// ---------------------------------------------------------------------------

/** A `Response` body: a web search the server ran, two function calls, a message. */
const responsesBody = {
  id: "resp_67ccd2bed1ec8190",
  object: "response",
  created_at: 1741476542,
  status: "completed",
  model: "gpt-4.1",
  output: [
    { type: "web_search_call", id: "ws_67c9fa05", status: "completed", action: { type: "search", query: "Paris weather" } },
    {
      type: "function_call",
      id: "fc_1",
      call_id: "call_1",
      name: "get_weather",
      arguments: "{\"location\":\"Paris, France\",\"unit\":null}",
      status: "completed"
    },
    {
      type: "function_call",
      id: "fc_2",
      call_id: "call_2",
      name: "take_screenshot",
      arguments: "{\"url\":\"https://example.com\"}",
      status: "completed"
    },
    {
      type: "message",
      id: "msg_1",
      role: "assistant",
      status: "completed",
      content: [{ type: "output_text", text: "Checking.", annotations: [] }]
    }
  ],
  parallel_tool_calls: true,
  tool_choice: "auto",
  tools: [],
  error: null,
  incomplete_details: null,
  instructions: null,
  metadata: {},
  temperature: 1,
  top_p: 1
}

describe("OpenAiResponses with the openai SDK", () => {
  it("tools and function_call_output items go into responses.create; its Response comes back into toolCalls", async () => {
    const http = fakeFetch(responsesBody)
    const openai = new OpenAI({ apiKey: "test", fetch: http.fetch, maxRetries: 0 })

    const tools: Array<OpenAI.Responses.FunctionTool> = Result.getOrThrow(OpenAiResponses.toolDefinitionsResult(specs))
    const response: OpenAI.Responses.Response = await openai.responses.create({
      model: "gpt-4.1",
      input: "Weather in Paris, and a screenshot?",
      tools: [...tools, { type: "web_search" }]
    })

    const { calls, passthrough } = OpenAiResponses.toolCalls(response, { specs })
    assert.deepStrictEqual(calls.map((call) => [call.id, call.name]), [["call_1", "get_weather"], ["call_2", "take_screenshot"]])
    assert.deepStrictEqual(inputOf(reg, calls[0]!), { location: "Paris, France" })
    // The passthrough keeps the SDK's item types, so it replays as input unchanged.
    const replay: Array<OpenAI.Responses.ResponseInputItem> = [...passthrough]
    const webSearch: (typeof passthrough)[number] | undefined = response.output.find((item) => item.type === "web_search_call")
    assert.deepStrictEqual(replay.map((item) => item.type), ["web_search_call"])
    assert.strictEqual(webSearch, passthrough[0])
    assert.deepStrictEqual(OpenAiResponses.toolCalls(response.output, { specs }).calls, calls)

    const outputs: Array<OpenAI.Responses.ResponseInputItem> = OpenAiResponses.toolMessages(answer(calls))
    const functionCalls = response.output.filter((item) => item.type === "function_call")
    await openai.responses.create({
      model: "gpt-4.1",
      input: [
        { role: "user", content: "Weather in Paris, and a screenshot?" },
        ...functionCalls,
        ...OpenAiResponses.toolMessages(answer(calls))
      ],
      tools
    })
    assert.deepStrictEqual(http.sent.map((sent) => new URL(sent.url).pathname), ["/v1/responses", "/v1/responses"])
    assert.deepStrictEqual(http.sent[0]!.body.tools.slice(0, 2), tools)
    assert.deepStrictEqual(http.sent[1]!.body.input.slice(3), outputs)
    assert.deepStrictEqual(http.sent[1]!.body.input.at(-1).output, [
      { type: "input_text", text: "example.com home page" },
      { type: "input_image", image_url: `data:image/png;base64,${png}`, detail: "auto" }
    ])
  })

  it("tool search: deferred functions, the client tool_search tool, its call and output items fit responses.create", async () => {
    const searchCall: OpenAI.Responses.ResponseToolSearchCall = {
      type: "tool_search_call",
      id: "tsc_1",
      call_id: "call_s1",
      execution: "client",
      arguments: { query: "weather" },
      status: "completed"
    }
    const response = { ...responsesBody, output: [searchCall] }
    const http = fakeFetch(response, responsesBody)
    const openai = new OpenAI({ apiKey: "test", fetch: http.fetch, maxRetries: 0 })

    const functions: Array<OpenAI.Responses.FunctionTool> = Result.getOrThrow(
      OpenAiResponses.toolDefinitionsResult(specs, { deferLoading: ["get_weather", "take_screenshot"] })
    )
    const tools: Array<OpenAI.Responses.Tool> = [OpenAiResponses.toolSearchTool(searchSpec), ...functions]
    const searchTool: OpenAI.Responses.ToolSearchTool = OpenAiResponses.toolSearchTool(searchSpec)
    const sdkResponse: OpenAI.Responses.Response = await openai.responses.create({ model: "gpt-5.4", input: "Weather?", tools })

    // the SDK's Response: the client tool_search_call is a call to the search tool, not passthrough
    const { calls, passthrough } = OpenAiResponses.toolCalls(sdkResponse, { toolSearch: "search_tools" })
    assert.deepStrictEqual(calls, [{ id: "call_s1", name: "search_tools", arguments: { query: "weather" } }])
    assert.deepStrictEqual(passthrough, [])
    assert.deepStrictEqual(OpenAiResponses.toolCalls(sdkResponse).passthrough, [searchCall])

    const call: OpenAI.Responses.ResponseInputItem = OpenAiResponses.toolSearchCall("call_s1", { query: "weather" })
    const output: OpenAI.Responses.ResponseToolSearchOutputItemParam = OpenAiResponses.toolSearchOutput("call_s1", [functions[0]!])
    await openai.responses.create({ model: "gpt-5.4", input: [{ role: "user", content: "Weather?" }, call, output], tools })
    assert.deepStrictEqual(http.sent[0]!.body.tools, [searchTool, ...functions])
    assert.deepStrictEqual(searchTool, {
      type: "tool_search",
      execution: "client",
      description: "Search the tool catalogue.",
      parameters: searchSpec.inputSchema
    })
    assert.deepStrictEqual(functions.map((f) => [f.name, f.defer_loading]), [["get_weather", true], ["take_screenshot", true]])
    assert.deepStrictEqual(http.sent[1]!.body.input.slice(1), [
      { type: "tool_search_call", call_id: "call_s1", arguments: { query: "weather" }, execution: "client", status: "completed" },
      { type: "tool_search_output", call_id: "call_s1", execution: "client", status: "completed", tools: [functions[0]] }
    ])
  })
})

// ---------------------------------------------------------------------------
// Anthropic Messages
// ---------------------------------------------------------------------------

/** An SDK `Message`: text, a server-side web search and its result, two tool_use blocks. */
const message: Anthropic.Messages.Message = {
  id: "msg_01Aq9w938a90dw8q",
  type: "message",
  role: "assistant",
  model: "claude-sonnet-4-5",
  container: null,
  diagnostics: null,
  stop_reason: "tool_use",
  stop_sequence: null,
  stop_details: null,
  usage: {
    cache_creation: null,
    cache_creation_input_tokens: null,
    cache_read_input_tokens: null,
    inference_geo: null,
    input_tokens: 120,
    output_tokens: 60,
    output_tokens_details: null,
    server_tool_use: null,
    service_tier: null,
    speed: null
  },
  content: [
    { type: "text", text: "I'll look it up.", citations: null },
    {
      type: "server_tool_use",
      id: "srvtoolu_01",
      name: "web_search",
      input: { query: "Paris weather" },
      caller: { type: "direct" }
    },
    { type: "web_search_tool_result", tool_use_id: "srvtoolu_01", content: [], caller: { type: "direct" } },
    {
      type: "tool_use",
      id: "toolu_01",
      name: "get_weather",
      input: { location: "Paris, France" },
      caller: { type: "direct" }
    },
    {
      type: "tool_use",
      id: "toolu_02",
      name: "take_screenshot",
      input: { url: "https://example.com" },
      caller: { type: "direct" }
    }
  ]
}

/*
 * Only the SDK's types here, not its client: the client imports
 * `@opentelemetry/api`, which this repo's vitest conditions (`module`)
 * resolve to an ESM build Node cannot load.
 */
describe("Anthropic with the @anthropic-ai/sdk types", () => {
  it("tools and the tool_result message fit MessageCreateParams; the SDK's Message goes into toolCalls", () => {
    const tools: Array<Anthropic.Messages.Tool> = Result.getOrThrow(
      AnthropicTools.toolDefinitionsResult(specs, { strict: "auto", cacheControl: { take_screenshot: { type: "ephemeral" } } })
    )
    const question: Anthropic.Messages.MessageParam = { role: "user", content: "Weather in Paris, and a screenshot?" }

    const { calls, passthrough } = AnthropicTools.toolCalls(message)
    assert.deepStrictEqual(calls.map((call) => [call.id, call.name]), [["toolu_01", "get_weather"], ["toolu_02", "take_screenshot"]])
    assert.deepStrictEqual(inputOf(reg, calls[0]!), { location: "Paris, France" })
    // The passthrough keeps the SDK's block types.
    const serverBlocks: Array<Anthropic.Messages.ContentBlock> = [...passthrough]
    const serverToolUse: (typeof passthrough)[number] | undefined = message.content.find((block) => block.type === "server_tool_use")
    assert.deepStrictEqual(serverBlocks.map((block) => block.type), ["server_tool_use", "web_search_tool_result"])
    assert.strictEqual(serverToolUse, passthrough[0])
    assert.deepStrictEqual(AnthropicTools.toolCalls(message.content).calls, calls)

    const reply: Anthropic.Messages.MessageParam = AnthropicTools.toolMessages(answer(calls))
    const blocks: Array<Anthropic.Messages.ContentBlockParam> = AnthropicTools.toolMessages(answer(calls), {
      after: [{ type: "text", text: "Keep it short." }]
    }).content
    const first: Anthropic.Messages.ContentBlockParam = AnthropicTools.toolMessages(answer(calls)).content[0]!
    const params: Anthropic.Messages.MessageCreateParamsNonStreaming = {
      model: "claude-sonnet-4-5",
      max_tokens: 1024,
      messages: [question, { role: "assistant", content: message.content }, AnthropicTools.toolMessages(answer(calls))],
      tools: [...tools, { type: "web_search_20250305", name: "web_search" }]
    }
    assert.deepStrictEqual(params.messages[2], reply)
    assert.deepStrictEqual(reply, {
      role: "user",
      content: [
        { type: "tool_result", tool_use_id: "toolu_01", content: "14 °C" },
        {
          type: "tool_result",
          tool_use_id: "toolu_02",
          content: [
            { type: "text", text: "example.com home page" },
            { type: "image", source: { type: "base64", media_type: "image/png", data: png } }
          ]
        }
      ]
    })
    assert.strictEqual(first.type === "tool_result" ? first.tool_use_id : undefined, "toolu_01")
    assert.deepStrictEqual(blocks.map((block) => block.type), ["tool_result", "tool_result", "text"])
    assert.deepStrictEqual(tools.map((tool) => [tool.name, tool.strict, tool.cache_control]), [
      ["get_weather", true, undefined],
      ["take_screenshot", true, { type: "ephemeral" }]
    ])
  })

  it("tool search: deferred tools and a tool_result of tool_reference blocks fit MessageCreateParams", () => {
    const tools: Array<Anthropic.Messages.Tool> = Result.getOrThrow(
      AnthropicTools.toolDefinitionsResult([searchSpec, ...specs], { deferLoading: ["get_weather", "take_screenshot"] })
    )
    const searched: ToolCall = { id: "toolu_s1", name: "search_tools", arguments: { query: "weather" } }
    const found = success(searched, "Found 1 tool", { query: "weather", tools: [{ name: "get_weather", description: "w" }] })
    const references = (result: ToolResult.ToolResult) => result.name === "search_tools" ? ["get_weather"] : undefined
    const reply: Anthropic.Messages.MessageParam = AnthropicTools.toolMessages([found], { references })
    const block: Anthropic.Messages.ToolResultBlockParam = AnthropicTools.toolReferences("toolu_s1", ["get_weather"])
    const params: Anthropic.Messages.MessageCreateParamsNonStreaming = {
      model: "claude-sonnet-4-5",
      max_tokens: 1024,
      messages: [
        { role: "user", content: "Weather in Paris?" },
        { role: "assistant", content: [{ type: "tool_use", id: "toolu_s1", name: "search_tools", input: { query: "weather" } }] },
        reply
      ],
      tools
    }
    assert.deepStrictEqual(params.messages[2], { role: "user", content: [block] })
    assert.deepStrictEqual(block, {
      type: "tool_result",
      tool_use_id: "toolu_s1",
      content: [{ type: "tool_reference", tool_name: "get_weather" }]
    })
    assert.deepStrictEqual(tools.map((tool) => [tool.name, tool.defer_loading]), [
      ["search_tools", undefined],
      ["get_weather", true],
      ["take_screenshot", true]
    ])
    // a result the option gives no names for (another tool's, or a search that found nothing) stays as it is
    assert.deepStrictEqual(AnthropicTools.toolMessages([success({ id: "toolu_2", name: "get_weather" }, "14 °C")], { references }).content, [
      { type: "tool_result", tool_use_id: "toolu_2", content: "14 °C" }
    ])
  })
})

// ---------------------------------------------------------------------------
// Gemini
// ---------------------------------------------------------------------------

/** A `GenerateContentResponse` body: code execution Gemini ran, and two calls (one without an id). */
const geminiBody = {
  candidates: [{
    content: {
      role: "model",
      parts: [
        { executableCode: { language: "PYTHON", code: "print(1 + 1)" } },
        { codeExecutionResult: { outcome: "OUTCOME_OK", output: "2\n" } },
        { functionCall: { id: "8f2b1a", name: "get_weather", args: { location: "Paris, France" } } },
        { functionCall: { name: "take_screenshot", args: { url: "https://example.com" } } }
      ]
    },
    finishReason: "STOP",
    index: 0
  }],
  modelVersion: "gemini-2.5-flash"
}

describe("Gemini with the @google/genai SDK", () => {
  it("declarations and functionResponse parts go into generateContent; its response comes back into toolCalls", async () => {
    const http = fakeFetch(geminiBody)
    const ai = new Genai.GoogleGenAI({ apiKey: "test", httpOptions: { fetch: http.fetch } })

    const tools: Array<Genai.Tool> = Result.getOrThrow(Gemini.toolDefinitionsResult(specs))
    const exported = Result.getOrThrow(Gemini.toolDefinitionsResult(specs, { dialect: "openapi" }))
    const openApiTools: Array<Genai.Tool> = exported
    const declaration: Genai.FunctionDeclaration = exported[0]!.functionDeclarations[0]!
    const parameters: Genai.Schema | undefined = declaration.parameters
    assert.strictEqual(parameters?.type, Genai.Type.OBJECT)
    assert.strictEqual(parameters?.properties?.location?.type, Genai.Type.STRING)

    const question: Genai.Content = { role: "user", parts: [{ text: "Weather in Paris, and a screenshot?" }] }
    const response: Genai.GenerateContentResponse = await ai.models.generateContent({
      model: "gemini-2.5-flash",
      contents: [question],
      config: { tools: [...openApiTools, { codeExecution: {} }] }
    })
    assert.instanceOf(response, Genai.GenerateContentResponse)

    const { calls, passthrough } = Gemini.toolCalls(response)
    assert.deepStrictEqual(calls.map((call) => [call.id, call.name]), [
      ["8f2b1a", "get_weather"],
      ["gemini-call:0:3:take_screenshot", "take_screenshot"]
    ])
    assert.deepStrictEqual(inputOf(reg, calls[0]!), { location: "Paris, France" })
    // The passthrough keeps the SDK's `Part` (its `Outcome` and `Language` enums included).
    const serverParts: Array<Genai.Part> = [...passthrough]
    const language: Genai.Language | undefined = passthrough[0]!.executableCode?.language
    assert.strictEqual(language, Genai.Language.PYTHON)
    assert.strictEqual(serverParts[1]!.codeExecutionResult?.outcome, Genai.Outcome.OUTCOME_OK)
    const model: Genai.Content = response.candidates![0]!.content!
    assert.deepStrictEqual(Gemini.toolCalls(model).calls, calls)
    assert.deepStrictEqual(Gemini.toolCalls(model.parts!).calls, calls)

    const reply: Genai.Content = Gemini.toolMessages(answer(calls), { calls })
    const parts: Array<Genai.Part> = Gemini.toolMessages(answer(calls), { calls }).parts
    const functionResponse: Genai.FunctionResponse | undefined = parts[0]!.functionResponse
    await ai.models.generateContent({
      model: "gemini-2.5-flash",
      contents: [question, model, Gemini.toolMessages(answer(calls), { calls })],
      config: { tools }
    })
    assert.deepStrictEqual(http.sent.map((sent) => new URL(sent.url).pathname.split("/").at(-1)), [
      "gemini-2.5-flash:generateContent",
      "gemini-2.5-flash:generateContent"
    ])
    assert.deepStrictEqual(http.sent[1]!.body.contents[2], reply)
    assert.deepStrictEqual(functionResponse, { id: "8f2b1a", name: "get_weather", response: { temperature: 14, unit: "celsius" } })
    assert.deepStrictEqual(parts[1]!.functionResponse?.parts, [{ inlineData: { mimeType: "image/png", data: png } }])
    assert.deepStrictEqual(
      http.sent[1]!.body.tools[0].functionDeclarations.map((d: Genai.FunctionDeclaration) => d.name),
      ["get_weather", "take_screenshot"]
    )
  })

  it("the SDK's Type enum and this module's Type assign to each other; plain strings do not go into either", () => {
    const fromSdk: Gemini.Schema = { type: Genai.Type.OBJECT, properties: { n: { type: Genai.Type.INTEGER } } }
    const toSdk: Genai.Schema = fromSdk
    const asString: string = toSdk.type!
    assert.strictEqual(asString, "OBJECT")
    // @ts-expect-error a string literal is not an enum member: hand-written schemas use the SDK's `Type`
    const literal: Genai.Schema = { type: "OBJECT" }
    assert.strictEqual(literal.type, "OBJECT")
  })
})

// ---------------------------------------------------------------------------
// MCP
// ---------------------------------------------------------------------------

describe("Mcp with the @modelcontextprotocol/sdk SDK", () => {
  it("a low-level Server lists our tools and answers tools/call with our CallToolResult; the SDK Client accepts both", async () => {
    const server = new Server({ name: "weather", version: "1.0.0" }, { capabilities: { tools: {} } })
    const tools: Array<McpTypes.Tool> = Result.getOrThrow(Mcp.toolDefinitionsResult(specs))
    server.setRequestHandler(McpTypes.ListToolsRequestSchema, () => ({ tools: Result.getOrThrow(Mcp.toolDefinitionsResult(specs)) }))
    const received: Array<ToolCall> = []
    server.setRequestHandler(McpTypes.CallToolRequestSchema, (request, extra) => {
      const typed: McpTypes.CallToolRequest = request
      const { calls } = Mcp.toolCalls(typed, { requestId: extra.requestId })
      received.push(...calls)
      const results: Array<McpTypes.CallToolResult> = Mcp.toolMessages(answer(calls), { specs })
      return results[0]!
    })
    const client = new Client({ name: "agent", version: "1.0.0" })
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair()
    await Promise.all([client.connect(clientSide), server.connect(serverSide)])

    const listed = await client.listTools()
    assert.deepStrictEqual(listed.tools, tools)
    const weatherResult = await client.callTool({ name: "get_weather", arguments: { location: "Paris, France" } })
    const shot = await client.callTool({ name: "take_screenshot", arguments: { url: "https://example.com" } })
    await client.close()

    assert.deepStrictEqual(received.map((call) => call.name), ["get_weather", "take_screenshot"])
    assert.deepStrictEqual(received.map((call) => typeof call.id), ["string", "string"])
    assert.deepStrictEqual(weatherResult.structuredContent, { temperature: 14, unit: "celsius" })
    assert.deepStrictEqual(shot.content, [
      { type: "text", text: "example.com home page" },
      { type: "image", data: png, mimeType: "image/png" }
    ])
  })

  it("a JSON-RPC tools/call keeps its own id; an envelope-less one without requestId stays passthrough", () => {
    const request: McpTypes.JSONRPCRequest = {
      jsonrpc: "2.0",
      id: 7,
      method: "tools/call",
      params: { name: "get_weather", arguments: { location: "Oslo" } }
    }
    const bare: McpTypes.CallToolRequest = { method: "tools/call", params: { name: "get_weather", arguments: { location: "Rome" } } }
    assert.deepStrictEqual(Mcp.toolCalls(request).calls, [{ id: "7", name: "get_weather", arguments: { location: "Oslo" } }])
    assert.deepStrictEqual(Mcp.toolCalls(bare, { requestId: "r-1" }).calls, [
      { id: "r-1", name: "get_weather", arguments: { location: "Rome" } }
    ])
    assert.deepStrictEqual(Mcp.toolCalls(bare), { calls: [], passthrough: [bare] })
    assert.deepStrictEqual(McpTypes.CallToolResultSchema.safeParse(Mcp.toolMessages(answer([{ id: "1", name: "get_weather", arguments: {} }]))[0]).success, true)
    // audio and embedded resources (text and blob) as the SDK's own schema reads them
    assert.deepStrictEqual(McpTypes.CallToolResultSchema.safeParse(Mcp.toolMessages([mixed({ id: "2", name: "report" })])[0]).success, true)
  })
})
