import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Redacted, Result, Schedule } from "effect"
import { Agent, ChatModel, EventSink, ToolRegistry, ToolResult } from "../../src/index.ts"
import { LanguageModelBridge } from "../../src/agent/models/index.ts"
import { assertNoSecret, captureLogs, type Recorded, type Reply, serve } from "./support/loopback.ts"
import * as TestOpenAi from "./support/openAiLanguageModel.ts"
import { fixture, registry, services } from "./support/tools.ts"

const key = "sk-proj-BRIDGEKEY-5f4e3d2c1b0a99887766554433221100"
const recorded = fixture("openai-chat-completions.json")
const ok = (name: string): Reply => ({ json: recorded[name] })
const status = (code: number, name: string, headers: Record<string, string> = {}): Reply => ({
  status: code,
  headers,
  json: recorded[name]
})

const model = (origin: string, options: LanguageModelBridge.Options = {}) =>
  LanguageModelBridge.layer({ secrets: [Redacted.make(key)], ...options }).pipe(
    Layer.provide(TestOpenAi.layer(origin, Redacted.make(key))),
    Layer.provide(NodeHttpClient.layerUndici)
  )

const specs = ToolRegistry.all(registry).specs
const ask = (content: string): ChatModel.Request => ({
  messages: [{ role: "system", content: "Be brief." }, { role: "user", content }],
  tools: specs
})
const generate = (request: ChatModel.Request) => ChatModel.ChatModel.use((m) => m.generate(request))

interface WireMessage {
  readonly role: string
  readonly content?: unknown
  readonly tool_calls?: ReadonlyArray<{ readonly id: string; readonly function: { readonly arguments: string } }>
  readonly tool_call_id?: string
}
interface WireBody {
  readonly messages: ReadonlyArray<WireMessage>
  readonly tools?: ReadonlyArray<{ readonly type: string; readonly function: Record<string, unknown> }>
}
const bodyOf = (request: Recorded | undefined): WireBody => request?.json as WireBody

describe("LanguageModelBridge", () => {
  it.live("advertises the specs as handler-less tools and returns the model's calls unexecuted", () =>
    Effect.gen(function*() {
      const server = yield* serve([ok("parallelToolCalls")])
      const response = yield* generate(ask("2+3 and 10-4?")).pipe(Effect.provide(model(server.origin)))

      assert.deepStrictEqual(response.toolCalls, [
        { id: "call_abc123", name: "add", arguments: { a: 2, b: 3 } },
        { id: "call_def456", name: "add", arguments: { a: 10, b: -4 } }
      ])
      assert.deepStrictEqual(response.usage, { inputTokens: 82, outputTokens: 17 })
      assert.lengthOf(server.requests, 1)
      const body = bodyOf(server.requests[0])
      assert.deepStrictEqual(body.tools, [{
        type: "function",
        function: { name: "add", description: "Adds two integers.", parameters: specs[0]!.inputSchema }
      }])
      assert.deepStrictEqual(body.messages, [
        { role: "system", content: "Be brief." },
        { role: "user", content: "2+3 and 10-4?" }
      ])
    }).pipe(Effect.scoped))

  it.live("end to end: Agent.run over a LanguageModel answers both call ids, then returns the final answer", () =>
    Effect.gen(function*() {
      const server = yield* serve([ok("parallelToolCalls"), ok("finalAnswer")])
      const result = yield* Agent.run({
        system: "Be brief.",
        messages: [{ role: "user", content: "2+3 and 10-4?" }],
        tools: registry
      }).pipe(Effect.provide(Layer.merge(model(server.origin), services)))

      assert.strictEqual(result.reason, "final_answer")
      assert.strictEqual(result.text, "2 + 3 = 5 and 10 + -4 = 6.")
      assert.deepStrictEqual(result.results.map((r) => r.value), [5, 6])
      assert.deepStrictEqual(result.usage, { inputTokens: 202, outputTokens: 29 })
      const second = bodyOf(server.requests[1])
      assert.deepStrictEqual(second.messages.map((m) => m.role), ["system", "user", "assistant", "tool", "tool"])
      assert.deepStrictEqual(
        second.messages[2]?.tool_calls?.map((c) => c.id),
        ["call_abc123", "call_def456"]
      )
      assert.deepStrictEqual(second.messages.slice(3), [
        { role: "tool", tool_call_id: "call_abc123", content: "5" },
        { role: "tool", tool_call_id: "call_def456", content: "6" }
      ])
    }).pipe(Effect.scoped))

  it.live("malformed arguments (and undeclared tools) reach the registry as sent and are rejected there", () =>
    Effect.gen(function*() {
      const undeclared: Reply = {
        json: {
          choices: [{
            message: {
              role: "assistant",
              content: null,
              tool_calls: [{ id: "call_x", type: "function", function: { name: "multiply", arguments: "{}" } }]
            }
          }]
        }
      }
      const server = yield* serve([ok("malformedArguments"), undeclared])
      const layer = model(server.origin)
      const malformed = (yield* generate(ask("add")).pipe(Effect.provide(layer))).toolCalls[0]!
      assert.strictEqual(malformed.arguments, "{\"a\": 2, \"b\": ")
      const rejected = ToolRegistry.resolve(ToolRegistry.all(registry), malformed)
      assert.isTrue(Result.isFailure(rejected) && rejected.failure._tag === "MalformedArguments")

      const unknown = (yield* generate(ask("multiply")).pipe(Effect.provide(layer))).toolCalls[0]!
      assert.deepStrictEqual(unknown, { id: "call_x", name: "multiply", arguments: {} })
      const notFound = ToolRegistry.resolve(ToolRegistry.all(registry), unknown)
      assert.isTrue(Result.isFailure(notFound) && notFound.failure._tag === "ToolNotFound")

      const agentServer = yield* serve([ok("malformedArguments"), ok("finalAnswer")])
      const result = yield* Agent.run({ messages: [{ role: "user", content: "add" }], tools: registry }).pipe(
        Effect.provide(Layer.merge(model(agentServer.origin), services))
      )
      assert.strictEqual(result.results[0]?.error?._tag, "MalformedArguments")
      const second = bodyOf(agentServer.requests[1])
      assert.strictEqual(second.messages[1]?.tool_calls?.[0]?.function.arguments, "{\"a\": 2, \"b\": ")
      assert.strictEqual(second.messages[2]?.tool_call_id, "call_bad789")
      assert.include(String(second.messages[2]?.content), "malformed arguments")
    }).pipe(Effect.scoped))

  it.live("a RateLimitError with retryAfter 1s is retried no sooner than a second later, then succeeds", () =>
    Effect.gen(function*() {
      const server = yield* serve([status(429, "rateLimited", { "retry-after": "1" }), ok("finalAnswer")])
      const started = Date.now()
      const response = yield* generate(ask("hi")).pipe(
        Effect.provide(model(server.origin, { retry: Schedule.recurs(2) }))
      )
      assert.strictEqual(response.text, "2 + 3 = 5 and 10 + -4 = 6.")
      assert.lengthOf(server.requests, 2)
      assert.isAtLeast(Date.now() - started, 950)
    }).pipe(Effect.scoped))

  it.live("without a retry policy an AiError maps to a typed ChatModelError at once", () =>
    Effect.gen(function*() {
      const server = yield* serve([status(429, "rateLimited", { "retry-after": "1" }), status(500, "serverError")])
      const layer = model(server.origin)
      const limited = yield* Effect.flip(generate(ask("hi")).pipe(Effect.provide(layer)))
      assert.strictEqual(limited.reason, "rate_limited")
      assert.isTrue(limited.retryable)
      const internal = yield* Effect.flip(generate(ask("hi")).pipe(Effect.provide(layer)))
      assert.strictEqual(internal.reason, "http")
      assert.isTrue(internal.retryable)
      assert.lengthOf(server.requests, 2)
    }).pipe(Effect.scoped))

  it.live("a persistent 500 is retried, then fails with a typed, retryable error", () =>
    Effect.gen(function*() {
      const server = yield* serve([status(500, "serverError"), status(500, "serverError"), status(500, "serverError")])
      const failure = yield* Effect.flip(
        generate(ask("hi")).pipe(Effect.provide(model(server.origin, { retry: Schedule.recurs(2) })))
      )
      assert.strictEqual(failure._tag, "ChatModelError")
      assert.strictEqual(failure.reason, "http")
      assert.isTrue(failure.retryable)
      assert.lengthOf(server.requests, 3)
    }).pipe(Effect.scoped))

  it.live("timeout: a LanguageModel that never answers fails with `timeout`", () =>
    Effect.gen(function*() {
      const server = yield* serve(["hang"])
      const failure = yield* Effect.flip(
        generate(ask("hi")).pipe(Effect.provide(model(server.origin, { timeout: "200 millis" })))
      )
      assert.strictEqual(failure.reason, "timeout")
      assert.lengthOf(server.requests, 1)
    }).pipe(Effect.scoped))

  it.live("the key appears in no log line, event, or error, even when the provider's message quotes it", () =>
    Effect.gen(function*() {
      const logs = captureLogs()
      const server = yield* serve([
        status(500, "serverError"),
        ok("parallelToolCalls"),
        ok("finalAnswer"),
        status(401, "invalidApiKey")
      ])
      const ran = yield* Effect.provide(
        Effect.gen(function*() {
          const result = yield* Agent.run({ messages: [{ role: "user", content: "2+3 and 10-4?" }], tools: registry }).pipe(
            Effect.provide(model(server.origin, { retry: Schedule.recurs(1) })),
            Effect.provide(logs.layer)
          )
          const events = yield* EventSink.EventLog.use((log) => log.all)
          return { result, events }
        }),
        services
      )
      const failed = yield* Effect.flip(
        generate(ask("hi")).pipe(Effect.provide(model(server.origin)), Effect.provide(logs.layer))
      )
      assert.strictEqual(ran.result.text, "2 + 3 = 5 and 10 + -4 = 6.")
      assert.isAbove(ran.events.length, 4)
      assert.strictEqual(failed.reason, "http")
      assert.isFalse(failed.retryable)
      assert.include(failed.message, "[redacted]")
      assert.isTrue(logs.lines.some((line) => line.includes("chat model request failed")))
      assertNoSecret(key, [...logs.lines, ...ran.events, ran.result, failed, failed.message])
    }).pipe(Effect.scoped))

  it("toPrompt: a result's audio and binary resources become file parts of its modelOutput, in order; a text resource text", () => {
    const result: ToolResult.ToolResult = {
      toolCallId: "call_r",
      name: "recording",
      content: [
        ToolResult.text("recorded"),
        ToolResult.audio("UklG", "audio/wav"),
        ToolResult.resource({ uri: "rec://1/notes.txt", mimeType: "text/plain", text: "hello" }),
        ToolResult.resource({ uri: "rec://1/take.pdf", mimeType: "application/pdf", blob: "JVBE" })
      ],
      value: "hello",
      artifacts: [],
      isError: false,
      elapsed: 1
    }
    const [, tool] = LanguageModelBridge.toPrompt([
      { role: "assistant", content: "", toolCalls: [{ id: "call_r", name: "recording", arguments: {} }] },
      { role: "tool", results: [result] }
    ])
    const part = (tool!.content as ReadonlyArray<{ readonly modelOutput?: unknown }>)[0]!
    assert.deepStrictEqual(part.modelOutput, [
      { type: "text", text: "recorded" },
      { type: "file", mediaType: "audio/wav", data: "UklG" },
      { type: "text", text: "[resource: rec://1/notes.txt, text/plain]\nhello" },
      { type: "file", mediaType: "application/pdf", fileName: "take.pdf", data: "JVBE" }
    ])
  })
})
