/**
 * Typed final output through each HTTP adapter, on loopback: the request carries the output schema
 * in the provider's dialect (Chat `response_format` json_schema strict, Responses `text.format`,
 * Gemini `generationConfig.responseJsonSchema`, Anthropic `output_config.format`), the answer's
 * JSON text is decoded into `AgentResult.output` (OpenAI strict-mode nulls made absent keys), and a
 * streamed answer arrives as `agent.output_delta`s. The exported formats assign to the official
 * SDKs' request types (checked at compile time).
 */
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import type Anthropic from "@anthropic-ai/sdk"
import { assert, describe, it } from "@effect/vitest"
import type * as Genai from "@google/genai"
import { Effect, Layer, Redacted, Result, Schema, Stream } from "effect"
import type OpenAI from "openai"
import { Agent, type ChatModel, type ToolEvent } from "../../src/index.ts"
import {
  AnthropicModel,
  GeminiModel,
  LanguageModelBridge,
  OpenAiChatModel,
  OpenAiResponsesModel
} from "../../src/agent/models/index.ts"
import { Anthropic as AnthropicTools, Gemini, OpenAiChat, OpenAiResponses } from "../../src/providers/index.ts"
import { serve } from "./support/loopback.ts"
import { type SseEvent, serveSse } from "./support/sseServer.ts"
import * as TestOpenAi from "./support/openAiLanguageModel.ts"
import { registry, services } from "./support/tools.ts"

const key = Redacted.make("sk-test-structured-output")
const Sum = Schema.Struct({
  sum: Schema.Int,
  note: Schema.optionalKey(Schema.String)
}).annotate({ description: "The sum and an optional note." })
const answer = { sum: 5 }
const user = (content: string): ChatModel.Message => ({ role: "user", content })
const run = Agent.run({ messages: [user("2+3?")], tools: registry, output: Sum, outputName: "sum_answer" })
const http = <A, E, R>(layer: Layer.Layer<A, E, R>) => Layer.merge(layer.pipe(Layer.provide(NodeHttpClient.layerUndici)), services)

describe("structured output over each adapter's wire", () => {
  it.live("OpenAI Chat: response_format json_schema strict; a strict-mode null becomes an absent key", () =>
    Effect.gen(function*() {
      const completion: OpenAI.Chat.Completions.ChatCompletion = {
        id: "chatcmpl-1",
        object: "chat.completion",
        created: 1,
        model: "gpt-4o-mini",
        choices: [{
          index: 0,
          message: { role: "assistant", content: JSON.stringify({ sum: 5, note: null }), refusal: null },
          logprobs: null,
          finish_reason: "stop"
        }],
        usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 }
      }
      const server = yield* serve([{ json: completion }])
      const result = yield* run.pipe(
        Effect.provide(http(OpenAiChatModel.layer({ apiKey: key, model: "gpt-4o-mini", baseUrl: `${server.origin}/v1` })))
      )
      assert.deepStrictEqual(result.output, answer)
      const body = server.requests[0]!.json as { readonly response_format: OpenAI.ResponseFormatJSONSchema; readonly tools: ReadonlyArray<unknown> }
      assert.strictEqual(body.response_format.type, "json_schema")
      assert.strictEqual(body.response_format.json_schema.name, "sum_answer")
      assert.strictEqual(body.response_format.json_schema.strict, true)
      assert.strictEqual(body.response_format.json_schema.description, "The sum and an optional note.")
      // strict mode: every property required, the optional one nullable
      assert.deepStrictEqual(body.response_format.json_schema.schema?.["required"], ["sum", "note"])
      // no final-answer tool: the registry's tools only
      assert.strictEqual(body.tools.length, 1)
    }).pipe(Effect.scoped))

  it.live("OpenAI Chat, streamed: the answer's text deltas are agent.output_delta events, then agent.output once", () =>
    Effect.gen(function*() {
      const chunk = (content: string | undefined, finish: "stop" | null = null): OpenAI.Chat.Completions.ChatCompletionChunk => ({
        id: "chatcmpl-2",
        object: "chat.completion.chunk",
        created: 1,
        model: "gpt-4o-mini",
        choices: [{ index: 0, delta: content === undefined ? {} : { content }, logprobs: null, finish_reason: finish }]
      })
      const events: ReadonlyArray<SseEvent> = [
        ...["{\"sum\"", ":5,", "\"note\":\"fi", "ve\"}"].map((piece) => ({ json: chunk(piece) })),
        { json: chunk(undefined, "stop") },
        { text: "[DONE]" }
      ]
      const server = yield* serveSse([{ events }])
      const out: ReadonlyArray<ToolEvent.Event> = yield* Stream.runCollect(
        Agent.stream({ messages: [user("2+3?")], tools: registry, output: Sum })
      ).pipe(Effect.provide(http(OpenAiChatModel.layer({ apiKey: key, model: "gpt-4o-mini", baseUrl: `${server.origin}/v1` }))))
      const partials = out.flatMap((e) => e._tag === "agent.output_delta" ? [e.partial] : [])
      assert.deepStrictEqual(partials.at(0), {})
      assert.deepStrictEqual(partials.at(-1), { sum: 5, note: "five" })
      assert.deepStrictEqual(out.flatMap((e) => e._tag === "agent.output" ? [e.output] : []), [{ sum: 5, note: "five" }])
    }).pipe(Effect.scoped))

  it.live("OpenAI Responses: text.format json_schema", () =>
    Effect.gen(function*() {
      const response = {
        id: "resp_1",
        object: "response",
        status: "completed",
        output: [{
          type: "message",
          id: "msg_1",
          role: "assistant",
          status: "completed",
          content: [{ type: "output_text", text: JSON.stringify({ sum: 5, note: null }), annotations: [] }]
        }],
        usage: { input_tokens: 10, output_tokens: 5 }
      }
      const server = yield* serve([{ json: response }])
      const result = yield* run.pipe(
        Effect.provide(http(OpenAiResponsesModel.layer({ apiKey: key, model: "gpt-4.1", baseUrl: `${server.origin}/v1` })))
      )
      assert.deepStrictEqual(result.output, answer)
      const body = server.requests[0]!.json as { readonly text: { readonly format: OpenAI.Responses.ResponseFormatTextJSONSchemaConfig } }
      assert.strictEqual(body.text.format.type, "json_schema")
      assert.strictEqual(body.text.format.name, "sum_answer")
      assert.strictEqual(body.text.format.strict, true)
      assert.strictEqual(body.text.format.schema["additionalProperties"], false)
    }).pipe(Effect.scoped))

  it.live("Gemini: generationConfig responseMimeType and responseJsonSchema (merged with the caller's generationConfig)", () =>
    Effect.gen(function*() {
      const response: Genai.GenerateContentResponse = {
        candidates: [{ content: { role: "model", parts: [{ text: JSON.stringify(answer) }] }, finishReason: "STOP" as Genai.FinishReason }],
        usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 5 }
      } as Genai.GenerateContentResponse
      const server = yield* serve([{ json: response }])
      const result = yield* run.pipe(Effect.provide(http(GeminiModel.layer({
        apiKey: key,
        model: "gemini-3-flash",
        baseUrl: server.origin,
        parameters: { generationConfig: { temperature: 0 } }
      }))))
      assert.deepStrictEqual(result.output, answer)
      const body = server.requests[0]!.json as { readonly generationConfig: Genai.GenerationConfig }
      assert.strictEqual(body.generationConfig.temperature, 0)
      assert.strictEqual(body.generationConfig.responseMimeType, "application/json")
      const schema = body.generationConfig.responseJsonSchema as Record<string, unknown>
      assert.deepStrictEqual(schema["required"], ["sum"])
      assert.strictEqual(schema["description"], "The sum and an optional note.")
      assert.isUndefined((server.requests[0]!.json as { readonly toolConfig?: unknown }).toolConfig)

      // without structured output: the final-answer function, and a function call forced every turn
      const called = {
        candidates: [{ content: { role: "model", parts: [{ functionCall: { id: "fc1", name: "sum_answer", args: answer } }] } }]
      }
      const tooled = yield* serve([{ json: called }])
      const viaTool = yield* run.pipe(Effect.provide(http(
        GeminiModel.layer({ apiKey: key, model: "gemini-2.5-flash", baseUrl: tooled.origin, structuredOutput: false })
      )))
      assert.deepStrictEqual(viaTool.output, answer)
      const toolBody = tooled.requests[0]!.json as { readonly toolConfig: Genai.ToolConfig; readonly generationConfig?: unknown }
      assert.strictEqual(toolBody.toolConfig.functionCallingConfig?.mode, "ANY")
      assert.isUndefined(toolBody.generationConfig)
    }).pipe(Effect.scoped))

  it.live("Anthropic: output_config.format json_schema; structuredOutput: false gives the final-answer tool instead", () =>
    Effect.gen(function*() {
      const message = (content: Array<Anthropic.ContentBlock>): Anthropic.Message => ({
        id: "msg_1",
        type: "message",
        role: "assistant",
        model: "claude-sonnet-4-5",
        content,
        stop_reason: "end_turn",
        stop_sequence: null,
        usage: { input_tokens: 10, output_tokens: 5 } as Anthropic.Usage
      } as Anthropic.Message)
      const server = yield* serve([{ json: message([{ type: "text", text: JSON.stringify(answer), citations: null }]) }])
      const result = yield* run.pipe(
        Effect.provide(http(AnthropicModel.layer({ apiKey: key, model: "claude-sonnet-4-5", baseUrl: server.origin })))
      )
      assert.deepStrictEqual(result.output, answer)
      const body = server.requests[0]!.json as { readonly output_config: Anthropic.OutputConfig; readonly tools: ReadonlyArray<{ readonly name: string }> }
      assert.strictEqual(body.output_config.format?.type, "json_schema")
      assert.strictEqual(body.output_config.format?.schema["additionalProperties"], false)
      assert.deepStrictEqual(body.tools.map((t) => t.name), ["add"])

      const called = message([{ type: "tool_use", id: "toolu_1", name: "sum_answer", input: answer } as Anthropic.ToolUseBlock])
      const tooled = yield* serve([{ json: called }])
      const viaTool = yield* run.pipe(Effect.provide(http(
        AnthropicModel.layer({ apiKey: key, model: "claude-3-5-haiku", baseUrl: tooled.origin, structuredOutput: false })
      )))
      assert.deepStrictEqual(viaTool.output, answer)
      const toolBody = tooled.requests[0]!.json as {
        readonly output_config?: unknown
        readonly tools: ReadonlyArray<{ readonly name: string }>
        readonly tool_choice: Anthropic.ToolChoice
      }
      assert.isUndefined(toolBody.output_config)
      assert.deepStrictEqual(toolBody.tools.map((t) => t.name), ["add", "sum_answer"])
      // the answer is a tool call: a tool call is forced every turn
      assert.deepStrictEqual(toolBody.tool_choice, { type: "any" })
    }).pipe(Effect.scoped))

  it.live("effect/ai bridge (no structured output): the final-answer tool goes out as a toolkit tool and its call is the answer", () =>
    Effect.gen(function*() {
      const completion: OpenAI.Chat.Completions.ChatCompletion = {
        id: "chatcmpl-3",
        object: "chat.completion",
        created: 1,
        model: "gpt-4o-mini",
        choices: [{
          index: 0,
          message: {
            role: "assistant",
            content: null,
            refusal: null,
            tool_calls: [{ id: "call_1", type: "function", function: { name: "sum_answer", arguments: JSON.stringify(answer) } }]
          },
          logprobs: null,
          finish_reason: "tool_calls"
        }]
      }
      const server = yield* serve([{ json: completion }])
      const bridge = LanguageModelBridge.layer().pipe(
        Layer.provide(TestOpenAi.layer(server.origin, key)),
        Layer.provide(NodeHttpClient.layerUndici)
      )
      const result = yield* run.pipe(Effect.provide(Layer.merge(bridge, services)))
      assert.deepStrictEqual(result.output, answer)
      const body = server.requests[0]!.json as { readonly tools: ReadonlyArray<{ readonly function: { readonly name: string } }> }
      assert.deepStrictEqual(body.tools.map((t) => t.function.name), ["add", "sum_answer"])
    }).pipe(Effect.scoped))
})

describe("structured output formats", () => {
  const output = { name: "sum_answer", description: "The sum.", schema: { type: "object", properties: { sum: { type: "integer" } }, required: ["sum"], additionalProperties: false } }

  it("assign to the official SDKs' request types", () => {
    const chat: OpenAI.ResponseFormatJSONSchema = Result.getOrThrow(OpenAiChat.responseFormatResult(output))
    const responses: OpenAI.Responses.ResponseFormatTextJSONSchemaConfig = Result.getOrThrow(OpenAiResponses.textFormatResult(output))
    const anthropic: Anthropic.JSONOutputFormat = Result.getOrThrow(AnthropicTools.outputFormatResult(output))
    const gemini: Pick<Genai.GenerationConfig, "responseMimeType" | "responseJsonSchema"> = Result.getOrThrow(
      Gemini.responseFormatResult(output)
    )
    assert.strictEqual(chat.json_schema.strict, true)
    assert.strictEqual(responses.strict, true)
    assert.strictEqual(anthropic.type, "json_schema")
    assert.strictEqual(gemini.responseMimeType, "application/json")
  })

  it("a name the provider refuses, or a schema strict mode cannot express under \"require\", is a ProviderExportError", () => {
    const badName = OpenAiChat.responseFormatResult({ ...output, name: "sum answer" })
    assert.isTrue(Result.isFailure(badName) && badName.failure.reason === "invalid_name")
    const open = { ...output, schema: { type: "object", properties: {}, additionalProperties: { type: "string" } } }
    const refused = OpenAiChat.responseFormatResult(open, { strict: "require" })
    assert.isTrue(Result.isFailure(refused) && refused.failure.reason === "unsupported_schema")
    const fallback = OpenAiChat.responseFormatResult(open)
    assert.isTrue(Result.isSuccess(fallback) && fallback.success.json_schema.strict === false)
  })
})
