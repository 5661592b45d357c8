import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Redacted } from "effect"
import type OpenAI from "openai"
import { OpenAiResponsesModel } from "../../src/agent/models/index.ts"
import { ToolResult } from "../../src/index.ts"
import { serve } from "./support/loopback.ts"
import { type SseEvent, serveSse } from "./support/sseServer.ts"
import {
  argumentsOf,
  ask,
  assertInterruptCloses,
  finished,
  generate,
  specs,
  streamAll,
  streamFailure,
  textOf,
  trace
} from "./support/streaming.ts"

const key = "sk-proj-TESTKEY-responses-0a1b2c3d4e5f6a7b8c9d"

const model = (origin: string, options: Partial<OpenAiResponsesModel.Options> = {}) =>
  OpenAiResponsesModel.layer({ apiKey: Redacted.make(key), model: "gpt-4.1-mini", baseUrl: `${origin}/v1`, ...options }).pipe(
    Layer.provide(NodeHttpClient.layerUndici)
  )

const fc = (n: number, args: string): OpenAI.Responses.ResponseFunctionToolCall => ({
  type: "function_call",
  id: `fc_${n}`,
  call_id: `call_${n}`,
  name: "add",
  arguments: args,
  status: "completed"
})
const message = (text: string): OpenAI.Responses.ResponseOutputMessage => ({
  type: "message",
  id: "msg_67ccd3acc8d48190a77525dc6de64b4104becb25c6d4a8c9",
  status: "completed",
  role: "assistant",
  content: [{ type: "output_text", text, annotations: [], logprobs: [] }]
})

/** A Responses API `Response` object (the documented example's fields). */
const responseBody = (
  output: ReadonlyArray<unknown>,
  status = "completed",
  extra: Record<string, unknown> = {}
) => ({
  id: "resp_67ccd2bed1ec8190b14f964abc054267",
  object: "response",
  created_at: 1741476542,
  status,
  error: null,
  incomplete_details: null,
  instructions: null,
  max_output_tokens: null,
  model: "gpt-4.1-mini-2025-04-14",
  output,
  parallel_tool_calls: true,
  previous_response_id: null,
  store: true,
  temperature: 1,
  text: { format: { type: "text" } },
  tool_choice: "auto",
  tools: [],
  top_p: 1,
  truncation: "disabled",
  usage: {
    input_tokens: 36,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: 87,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: 123
  },
  user: null,
  metadata: {},
  ...extra
})

const toolOutput = [message("Adding both."), fc(1, "{\"a\":2,\"b\":3}"), fc(2, "{\"a\":10,\"b\":-4}")]

let seq = 0
const ev = (value: { readonly type: string; readonly [field: string]: unknown }): SseEvent => ({
  event: value.type,
  json: { ...value, sequence_number: seq++ }
})
const textDelta = (delta: string): SseEvent =>
  ev({
    type: "response.output_text.delta",
    item_id: "msg_67ccd3acc8d48190a77525dc6de64b4104becb25c6d4a8c9",
    output_index: 0,
    content_index: 0,
    delta,
    logprobs: [],
    sequence_number: 0
  } satisfies OpenAI.Responses.ResponseTextDeltaEvent)
const argsDelta = (n: number, index: number, delta: string): SseEvent =>
  ev({
    type: "response.function_call_arguments.delta",
    item_id: `fc_${n}`,
    output_index: index,
    delta,
    sequence_number: 0
  } satisfies OpenAI.Responses.ResponseFunctionCallArgumentsDeltaEvent)
const argsDone = (n: number, index: number, args: string): SseEvent =>
  ev({
    type: "response.function_call_arguments.done",
    item_id: `fc_${n}`,
    output_index: index,
    name: "add",
    arguments: args,
    sequence_number: 0
  } satisfies OpenAI.Responses.ResponseFunctionCallArgumentsDoneEvent)
const itemAdded = (index: number, item: OpenAI.Responses.ResponseOutputItem): SseEvent =>
  ev({ type: "response.output_item.added", output_index: index, item, sequence_number: 0 } satisfies OpenAI.Responses.ResponseOutputItemAddedEvent)
const itemDone = (index: number, item: OpenAI.Responses.ResponseOutputItem): SseEvent =>
  ev({ type: "response.output_item.done", output_index: index, item, sequence_number: 0 } satisfies OpenAI.Responses.ResponseOutputItemDoneEvent)

const toolEvents = (then: ReadonlyArray<SseEvent> = [ev({ type: "response.completed", response: responseBody(toolOutput) })]) => [
  ev({ type: "response.created", response: responseBody([], "in_progress") }),
  itemAdded(0, { ...message(""), status: "in_progress", content: [] }),
  textDelta("Adding "),
  textDelta("both."),
  itemDone(0, message("Adding both.")),
  itemAdded(1, { ...fc(1, ""), status: "in_progress" }),
  argsDelta(1, 1, "{\"a\":2,\"b"),
  argsDelta(1, 1, "\":3}"),
  argsDone(1, 1, "{\"a\":2,\"b\":3}"),
  itemDone(1, fc(1, "{\"a\":2,\"b\":3}")),
  itemAdded(2, { ...fc(2, ""), status: "in_progress" }),
  argsDelta(2, 2, "{\"a\":10,"),
  argsDelta(2, 2, "\"b\":-4}"),
  argsDone(2, 2, "{\"a\":10,\"b\":-4}"),
  itemDone(2, fc(2, "{\"a\":10,\"b\":-4}")),
  ...then
]

describe("OpenAiResponsesModel", () => {
  it.live("generate: POST /v1/responses with input items (function_call + function_call_output replay history)", () =>
    Effect.gen(function*() {
      const server = yield* serve([{ json: responseBody(toolOutput) }])
      const request = {
        messages: [
          { role: "system" as const, content: "Be brief." },
          { role: "user" as const, content: "2+3?" },
          { role: "assistant" as const, content: "", toolCalls: [{ id: "call_0", name: "add", arguments: "{\"a\":2,\"b\":3}" }] },
          {
            role: "tool" as const,
            results: [{ toolCallId: "call_0", name: "add", content: [ToolResult.text("5")], artifacts: [], isError: false, elapsed: 1 }]
          },
          { role: "user" as const, content: "and 10-4?" }
        ],
        tools: specs
      }
      const response = yield* generate(request).pipe(Effect.provide(model(server.origin)))
      assert.deepStrictEqual(response, {
        text: "Adding both.",
        toolCalls: [
          { id: "call_1", name: "add", arguments: "{\"a\":2,\"b\":3}" },
          { id: "call_2", name: "add", arguments: "{\"a\":10,\"b\":-4}" }
        ],
        usage: { inputTokens: 36, outputTokens: 87 },
        finishReason: "tool_calls"
      })
      const [sent] = server.requests
      assert.strictEqual(sent?.path, "/v1/responses")
      assert.strictEqual(sent?.headers.authorization, `Bearer ${key}`)
      const body = sent?.json as { input: ReadonlyArray<unknown>; tools: ReadonlyArray<Record<string, unknown>>; model: string }
      assert.strictEqual(body.model, "gpt-4.1-mini")
      assert.deepStrictEqual(body.input, [
        { role: "system", content: "Be brief." },
        { role: "user", content: "2+3?" },
        { type: "function_call", call_id: "call_0", name: "add", arguments: "{\"a\":2,\"b\":3}" },
        { type: "function_call_output", call_id: "call_0", output: "5" },
        { role: "user", content: "and 10-4?" }
      ])
      assert.deepInclude(body.tools[0]!, { type: "function", name: "add", strict: true })
    }).pipe(Effect.scoped))

  it.live("generate: incomplete (max_output_tokens) is length; failed is a provider error", () =>
    Effect.gen(function*() {
      const server = yield* serve([
        { json: responseBody([message("cut sho")], "incomplete", { incomplete_details: { reason: "max_output_tokens" } }) },
        { json: responseBody([], "failed", { error: { code: "server_error", message: "The model failed." } }) }
      ])
      const short = yield* generate(ask("x")).pipe(Effect.provide(model(server.origin)))
      assert.strictEqual(short.finishReason, "length")
      assert.strictEqual(short.text, "cut sho")
      const error = yield* generate(ask("x")).pipe(Effect.provide(model(server.origin, { retry: false })), Effect.flip)
      assert.strictEqual(error.reason, "provider")
      assert.isTrue(error.retryable)
      assert.include(error.message, "The model failed.")
    }).pipe(Effect.scoped))

  it.live("stream: text deltas, calls assembled from split argument deltas; Finished equals generate's Response", () =>
    Effect.gen(function*() {
      const sse = yield* serveSse([{ events: toolEvents() }])
      const parts = yield* streamAll(ask("2+3 and 10-4?")).pipe(Effect.provide(model(sse.origin)))
      const whole = yield* generate(ask("2+3 and 10-4?")).pipe(
        Effect.provide(model((yield* serve([{ json: responseBody(toolOutput) }])).origin))
      )
      assert.deepStrictEqual(finished(parts), whole)
      assert.deepStrictEqual(trace(parts), [
        "text",
        "start:call_1",
        "delta:call_1",
        "call:call_1",
        "start:call_2",
        "delta:call_2",
        "call:call_2",
        "finished"
      ])
      assert.strictEqual(textOf(parts), "Adding both.")
      assert.strictEqual(argumentsOf(parts, "call_2"), "{\"a\":10,\"b\":-4}")
      assert.deepStrictEqual(parts.flatMap((p) => p._tag === "ToolCall" ? [p.call] : []), whole.toolCalls)
      assert.deepInclude(sse.requests[0]?.json as object, { stream: true })
    }).pipe(Effect.scoped))

  it.live("stream: response.failed and error events are provider errors; a cut stream is a transport error", () =>
    Effect.gen(function*() {
      const sse = yield* serveSse([
        { events: toolEvents([ev({ type: "response.failed", response: responseBody([], "failed", { error: { code: "rate_limit_exceeded", message: "slow down" } }) })]) },
        { events: toolEvents([ev({ type: "error", code: "invalid_prompt", message: "no", param: null })]) },
        { events: toolEvents([]).slice(0, 8), then: "cut" }
      ])
      const failed = yield* streamFailure(ask("x")).pipe(Effect.provide(model(sse.origin)))
      assert.strictEqual(failed.error.reason, "provider")
      assert.isTrue(failed.error.retryable)
      assert.strictEqual(trace(failed.parts).at(-1), "call:call_2")
      const errored = yield* streamFailure(ask("x")).pipe(Effect.provide(model(sse.origin)))
      assert.strictEqual(errored.error.reason, "provider")
      assert.isFalse(errored.error.retryable)
      const cut = yield* streamFailure(ask("x")).pipe(Effect.provide(model(sse.origin)))
      assert.strictEqual(cut.error.reason, "transport")
      assert.isFalse(cut.parts.some((p) => p._tag === "ToolCall"))
      assert.lengthOf(sse.requests, 3)
    }).pipe(Effect.scoped))

  it.live("stream: an empty arguments delta after a call is complete is accepted; more text is a decode error", () =>
    Effect.gen(function*() {
      const events = toolEvents()
      const afterDone = (delta: string) => [...events.slice(0, 9), argsDelta(1, 1, delta), ...events.slice(9)]
      const sse = yield* serveSse([{ events: afterDone("") }, { events: afterDone("}") }])
      const parts = yield* streamAll(ask("x")).pipe(Effect.provide(model(sse.origin)))
      assert.deepStrictEqual(finished(parts).toolCalls.map((call) => call.arguments), ["{\"a\":2,\"b\":3}", "{\"a\":10,\"b\":-4}"])
      const { error } = yield* streamFailure(ask("x")).pipe(Effect.provide(model(sse.origin)))
      assert.strictEqual(error.reason, "decode")
      assert.include(error.message, "arguments for a function call after it was complete")
    }).pipe(Effect.scoped))

  it.live("stream: interrupting a slow stream closes the HTTP response", () =>
    Effect.gen(function*() {
      const sse = yield* serveSse([{ events: toolEvents([]).slice(0, 4), then: "hang" }])
      yield* assertInterruptCloses(sse, ask("x"), 2).pipe(Effect.provide(model(sse.origin)))
    }).pipe(Effect.scoped))
})
