import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { assert, describe, it } from "@effect/vitest"
import { Cause, ConfigProvider, Effect, Layer, Redacted, Result, Schedule } from "effect"
import { Agent, ChatModel, EventSink, ToolRegistry, ToolResult } from "../../src/index.ts"
import { OpenAiChatModel } from "../../src/agent/models/index.ts"
import { OpenAiChat } from "../../src/providers/index.ts"
import { assertNoSecret, captureLogs, straddling, closedPort, type Recorded, type Reply, serve } from "./support/loopback.ts"
import { fixture, registry, services, withKey } from "./support/tools.ts"

const key = "sk-proj-TESTKEY-0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d"
const recorded = fixture("openai-chat-completions.json")
const ok = (name: string): Reply => ({ json: recorded[name] })
const error = (status: number, name: string, headers: Record<string, string> = {}): Reply => ({
  status,
  headers,
  json: withKey(recorded[name], key)
})

const model = (origin: string, options: Partial<OpenAiChatModel.Options> = {}) =>
  OpenAiChatModel.layer({
    apiKey: Redacted.make(key),
    model: "gpt-4o-mini",
    baseUrl: `${origin}/v1`,
    ...options
  }).pipe(Layer.provide(NodeHttpClient.layerUndici))

const specs = ToolRegistry.all(registry).specs
const ask = (content: string): ChatModel.Request => ({
  messages: [{ role: "system", content: "Be brief." }, { role: "user", content }],
  tools: specs
})
const generate = (request: ChatModel.Request) => ChatModel.ChatModel.use((m) => m.generate(request))

interface WireCall {
  readonly id: string
  readonly type: string
  readonly function: { readonly name: string; readonly arguments: string }
}
interface WireMessage {
  readonly role: string
  readonly content?: unknown
  readonly tool_calls?: ReadonlyArray<WireCall>
  readonly tool_call_id?: string
}
interface WireBody {
  readonly model: string
  readonly messages: ReadonlyArray<WireMessage>
  readonly tools?: ReadonlyArray<{ readonly type: string; readonly function: Record<string, unknown> }>
}
const bodyOf = (request: Recorded | undefined): WireBody => request?.json as WireBody

/** Every assistant `tool_calls` entry is answered by the `tool` messages right after it, in call order. */
const assertAnswersEveryCall = (messages: ReadonlyArray<WireMessage>) => {
  messages.forEach((message, i) => {
    const calls = message.tool_calls ?? []
    if (message.role !== "assistant" || calls.length === 0) return
    const answers = messages.slice(i + 1, i + 1 + calls.length)
    assert.deepStrictEqual(answers.map((m) => m.role), calls.map(() => "tool"))
    assert.deepStrictEqual(answers.map((m) => m.tool_call_id), calls.map((c) => c.id))
  })
}

describe("OpenAiChatModel", () => {
  it.live("parallel tool calls: the request speaks the Chat Completions dialect; calls keep ids and argument text", () =>
    Effect.gen(function*() {
      const server = yield* serve([ok("parallelToolCalls")])
      const response = yield* generate(ask("2+3 and 10-4?")).pipe(Effect.provide(model(server.origin)))

      assert.deepStrictEqual(response.toolCalls, [
        { id: "call_abc123", name: "add", arguments: "{\"a\":2,\"b\":3}" },
        { id: "call_def456", name: "add", arguments: "{\"a\":10,\"b\":-4}" }
      ])
      assert.strictEqual(response.text, "")
      assert.deepStrictEqual(response.usage, { inputTokens: 82, outputTokens: 17 })

      const [request] = server.requests
      assert.strictEqual(request?.method, "POST")
      assert.strictEqual(request?.path, "/v1/chat/completions")
      assert.strictEqual(request?.headers.authorization, `Bearer ${key}`)
      assert.strictEqual(request?.headers["content-type"], "application/json")
      const body = bodyOf(request)
      assert.strictEqual(body.model, "gpt-4o-mini")
      assert.deepStrictEqual(body.messages, [
        { role: "system", content: "Be brief." },
        { role: "user", content: "2+3 and 10-4?" }
      ])
      const exported = OpenAiChat.toolDefinitionsResult(specs)
      assert.isTrue(Result.isSuccess(exported))
      assert.deepStrictEqual(body.tools, Result.getOrThrow(exported) as ReadonlyArray<unknown>)
      const [tool] = body.tools ?? []
      assert.strictEqual(tool?.type, "function")
      assert.strictEqual(tool?.function.name, "add")
      assert.strictEqual(tool?.function.description, "Adds two integers.")
      assert.strictEqual(tool?.function.strict, true)
      assert.deepInclude(tool?.function.parameters as object, {
        type: "object",
        required: ["a", "b"],
        additionalProperties: false
      })
    }).pipe(Effect.scoped))

  it.live("end to end: Agent.run calls add twice, answers both call ids, then returns the final answer", () =>
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
      assert.lengthOf(server.requests, 2)

      const second = bodyOf(server.requests[1])
      assertAnswersEveryCall(second.messages)
      assert.deepStrictEqual(second.messages.map((m) => m.role), ["system", "user", "assistant", "tool", "tool"])
      assert.deepStrictEqual(second.messages[2], {
        role: "assistant",
        content: null,
        tool_calls: [
          { id: "call_abc123", type: "function", function: { name: "add", arguments: "{\"a\":2,\"b\":3}" } },
          { id: "call_def456", type: "function", function: { name: "add", arguments: "{\"a\":10,\"b\":-4}" } }
        ]
      })
      assert.deepStrictEqual(second.messages.slice(3), [
        { role: "tool", tool_call_id: "call_abc123", content: "5" },
        { role: "tool", tool_call_id: "call_def456", content: "6" }
      ])
      assert.isDefined(second.tools)
    }).pipe(Effect.scoped))

  it.live("malformed arguments pass through as text and the registry rejects them with MalformedArguments", () =>
    Effect.gen(function*() {
      const server = yield* serve([ok("malformedArguments"), ok("finalAnswer")])
      const layer = Layer.merge(model(server.origin), services)
      const response = yield* generate(ask("add")).pipe(Effect.provide(layer))
      const call = response.toolCalls[0]!
      assert.strictEqual(call.arguments, "{\"a\": 2, \"b\": ")
      const resolved = ToolRegistry.resolve(ToolRegistry.all(registry), call)
      assert.isTrue(Result.isFailure(resolved))
      if (Result.isFailure(resolved)) assert.strictEqual(resolved.failure._tag, "MalformedArguments")

      // The same reply inside an agent run: the model reads the rejection; nothing is defaulted to {}.
      const agentServer = yield* serve([ok("malformedArguments"), ok("finalAnswer")])
      const result = yield* Agent.run({ messages: [{ role: "user", content: "add" }], tools: registry }).pipe(
        Effect.provide(Layer.merge(model(agentServer.origin), services))
      )
      const [rejected] = result.results
      assert.isTrue(rejected!.isError)
      assert.strictEqual(rejected!.error?._tag, "MalformedArguments")
      const second = bodyOf(agentServer.requests[1])
      assertAnswersEveryCall(second.messages)
      assert.strictEqual(second.messages[1]?.tool_calls?.[0]?.function.arguments, "{\"a\": 2, \"b\": ")
      assert.strictEqual(second.messages[2]?.content, ToolResult.textOf(rejected!))
      assert.include(String(second.messages[2]?.content), "malformed arguments")
    }).pipe(Effect.scoped))

  it.live("429 with retry-after: 1 is retried no sooner than a second later, then succeeds", () =>
    Effect.gen(function*() {
      const server = yield* serve([error(429, "rateLimited", { "retry-after": "1" }), ok("finalAnswer")])
      const started = Date.now()
      const response = yield* generate(ask("hi")).pipe(Effect.provide(model(server.origin)))
      const waited = Date.now() - started
      assert.strictEqual(response.text, "2 + 3 = 5 and 10 + -4 = 6.")
      assert.lengthOf(server.requests, 2)
      assert.isAtLeast(waited, 950)
      assert.isBelow(waited, 5000)
    }).pipe(Effect.scoped))

  it.live("429 insufficient_quota is not retried", () =>
    Effect.gen(function*() {
      const server = yield* serve([error(429, "insufficientQuota"), ok("finalAnswer")])
      const failure = yield* Effect.flip(generate(ask("hi")).pipe(Effect.provide(model(server.origin))))
      assert.strictEqual(failure.reason, "rate_limited")
      assert.isFalse(failure.retryable)
      assert.lengthOf(server.requests, 1)
    }).pipe(Effect.scoped))

  it.live("a persistent 500 is retried, then fails with a typed, retryable http error", () =>
    Effect.gen(function*() {
      const server = yield* serve([
        error(500, "serverError"),
        error(500, "serverError"),
        error(500, "serverError"),
        ok("finalAnswer")
      ])
      const failure = yield* Effect.flip(
        generate(ask("hi")).pipe(Effect.provide(model(server.origin, { retry: Schedule.recurs(2) })))
      )
      assert.strictEqual(failure._tag, "ChatModelError")
      assert.strictEqual(failure.reason, "http")
      assert.strictEqual(failure.status, 500)
      assert.isTrue(failure.retryable)
      assert.strictEqual(
        failure.message,
        "openai-chat: HTTP 500 server_error: The server had an error while processing your request. Sorry about that!"
      )
      assert.lengthOf(server.requests, 3)
    }).pipe(Effect.scoped))

  it.live("a 500 then a success: the retry succeeds", () =>
    Effect.gen(function*() {
      const server = yield* serve([error(500, "serverError"), ok("finalAnswer")])
      const response = yield* generate(ask("hi")).pipe(
        Effect.provide(model(server.origin, { retry: Schedule.spaced("10 millis") }))
      )
      assert.strictEqual(response.text, "2 + 3 = 5 and 10 + -4 = 6.")
      assert.lengthOf(server.requests, 2)
    }).pipe(Effect.scoped))

  it.live("timeout: a server that never answers fails each attempt with `timeout`", () =>
    Effect.gen(function*() {
      const server = yield* serve(["hang", "hang"])
      const started = Date.now()
      const failure = yield* Effect.flip(
        generate(ask("hi")).pipe(
          Effect.provide(model(server.origin, { timeout: "200 millis", retry: Schedule.recurs(1) }))
        )
      )
      assert.strictEqual(failure.reason, "timeout")
      assert.isTrue(failure.retryable)
      assert.strictEqual(failure.message, "openai-chat: no answer within 200ms")
      assert.lengthOf(server.requests, 2)
      assert.isBelow(Date.now() - started, 3000)
    }).pipe(Effect.scoped))

  it.live("4xx fails at once with the provider's message, the echoed key scrubbed", () =>
    Effect.gen(function*() {
      const server = yield* serve([error(401, "invalidApiKey"), ok("finalAnswer")])
      const failure = yield* Effect.flip(generate(ask("hi")).pipe(Effect.provide(model(server.origin))))
      assert.strictEqual(failure.reason, "http")
      assert.strictEqual(failure.status, 401)
      assert.isFalse(failure.retryable)
      assert.strictEqual(
        failure.message,
        "openai-chat: HTTP 401 invalid_api_key: Incorrect API key provided: [redacted]. You can find your API key at https://platform.openai.com/account/api-keys."
      )
      assert.lengthOf(server.requests, 1)
    }).pipe(Effect.scoped))

  it.live("a 2xx body that is not JSON, or not a completion, fails with `decode`", () =>
    Effect.gen(function*() {
      const server = yield* serve([{ text: "<html>gateway</html>" }, { json: { choices: "none" } }])
      const layer = model(server.origin, { retry: false })
      const notJson = yield* Effect.flip(generate(ask("hi")).pipe(Effect.provide(layer)))
      assert.strictEqual(notJson.reason, "decode")
      assert.isFalse(notJson.retryable)
      const wrongShape = yield* Effect.flip(generate(ask("hi")).pipe(Effect.provide(layer)))
      assert.strictEqual(wrongShape.reason, "decode")
    }).pipe(Effect.scoped))

  it.live("transport: a closed port fails with a retryable `transport` error", () =>
    Effect.gen(function*() {
      const port = yield* closedPort
      const failure = yield* Effect.flip(
        generate(ask("hi")).pipe(Effect.provide(model(`http://127.0.0.1:${port}`, { retry: false })))
      )
      assert.strictEqual(failure.reason, "transport")
      assert.isTrue(failure.retryable)
    }))

  it.live("the key appears in no log line, event, or error (message, String, JSON)", () =>
    Effect.gen(function*() {
      const logs = captureLogs()
      const server = yield* serve([
        error(429, "rateLimited", { "retry-after": "0" }),
        ok("parallelToolCalls"),
        error(500, "serverError"),
        ok("finalAnswer"),
        error(401, "invalidApiKey")
      ])
      const run = Agent.run({ messages: [{ role: "user", content: "2+3 and 10-4?" }], tools: registry }).pipe(
        Effect.provide(model(server.origin, { retry: Schedule.spaced("10 millis") })),
        Effect.provide(logs.layer)
      )
      const ran = yield* Effect.provide(
        Effect.gen(function*() {
          const result = yield* run
          const events = yield* EventSink.EventLog.use((log) => log.all)
          return { result, events }
        }),
        services
      )
      const failed = yield* Effect.flip(generate(ask("hi")).pipe(Effect.provide(model(server.origin)), Effect.provide(logs.layer)))

      assert.strictEqual(ran.result.text, "2 + 3 = 5 and 10 + -4 = 6.")
      assert.isAbove(ran.events.length, 4)
      assert.strictEqual(failed.status, 401)
      assert.isAbove(logs.lines.length, 0)
      assert.isTrue(logs.lines.some((line) => line.includes("chat model request failed")))
      assert.isTrue(server.requests.every((r) => r.headers.authorization === `Bearer ${key}`))
      assertNoSecret(key, [...logs.lines, ...ran.events, ran.result, failed, failed.message])
    }).pipe(Effect.scoped))

  it.live("layerConfig reads OPENAI_API_KEY (redacted), OPENAI_BASE_URL and OPENAI_MODEL", () =>
    Effect.gen(function*() {
      const server = yield* serve([ok("finalAnswer")])
      const config = ConfigProvider.layer(ConfigProvider.fromEnv({
        env: { OPENAI_API_KEY: key, OPENAI_BASE_URL: `${server.origin}/v1`, OPENAI_MODEL: "gpt-4.1-mini" }
      }))
      const layer = OpenAiChatModel.layerConfig().pipe(
        Layer.provide([NodeHttpClient.layerUndici, config])
      )
      const response = yield* generate(ask("hi")).pipe(Effect.provide(layer))
      assert.strictEqual(response.text, "2 + 3 = 5 and 10 + -4 = 6.")
      assert.strictEqual(bodyOf(server.requests[0]).model, "gpt-4.1-mini")
      assert.strictEqual(server.requests[0]?.headers.authorization, `Bearer ${key}`)
    }).pipe(Effect.scoped))

  it.effect("layerConfig fails with a ModelConfigError naming the variable: missing key, missing model, invalid base URL", () =>
    Effect.gen(function*() {
      const fails = (env: Record<string, string>, options: { readonly model?: string } = {}) =>
        Effect.flip(Layer.build(OpenAiChatModel.layerConfig(options).pipe(
          Layer.provide([NodeHttpClient.layerUndici, ConfigProvider.layer(ConfigProvider.fromEnv({ env }))])
        ))).pipe(Effect.scoped)
      const noKey = yield* fails({}, { model: "gpt-4o-mini" })
      assert.strictEqual(noKey._tag, "ModelConfigError")
      assert.strictEqual(noKey.provider, "openai-chat")
      assert.strictEqual(noKey.variable, "OPENAI_API_KEY")
      assert.strictEqual(noKey.problem, "missing")
      assert.strictEqual(
        noKey.message,
        `missing environment variable OPENAI_API_KEY (set it to your OpenAI API key; see README "Environment variables")`
      )
      assert.instanceOf(noKey, Error)
      assert.notInclude(String(noKey), "[object Object]")
      const noModel = yield* fails({ OPENAI_API_KEY: key })
      assert.strictEqual(noModel.variable, "OPENAI_MODEL")
      assert.strictEqual(noModel.problem, "missing")
      const badUrl = yield* fails({ OPENAI_API_KEY: key, OPENAI_BASE_URL: "ftp://example.com/v1" }, { model: "gpt-4o-mini" })
      assert.strictEqual(badUrl.variable, "OPENAI_BASE_URL")
      assert.strictEqual(badUrl.problem, "invalid")
      assert.include(badUrl.message, `got "ftp://example.com/v1"`)
      assertNoSecret(key, [noKey, noModel, badUrl])
    }))

  it.live("HTTP 404 (a base URL without /v1) names the URL it posted to", () =>
    Effect.gen(function*() {
      const server = yield* serve([{ status: 404, text: "404 page not found" }])
      const failed = yield* Effect.flip(generate(ask("hi")).pipe(Effect.provide(model(server.origin, { baseUrl: server.origin, retry: false })), Effect.provide(captureLogs().layer)))
      assert.strictEqual(failed.status, 404)
      assert.isFalse(failed.retryable)
      assert.strictEqual(failed.message, `openai-chat: HTTP 404: 404 page not found (POST ${server.origin}/chat/completions)`)
      assert.strictEqual(server.requests[0]?.path, "/chat/completions")
    }).pipe(Effect.scoped))

  it.live("a key across the truncation cut leaks no prefix: the body is scrubbed before it is cut (finding 6)", () =>
    Effect.gen(function*() {
      for (const { label, reply } of straddling(key)) {
        const logs = captureLogs()
        const server = yield* serve([reply])
        const failed = yield* Effect.flip(
          generate(ask("hi")).pipe(Effect.provide(model(server.origin, { retry: false })), Effect.provide(logs.layer))
        )
        assert.include(failed.message, "[redacted]", label)
        assert.isAbove(logs.lines.length, 0, label)
        assertNoSecret(key.slice(0, 10), [failed, failed.message, Cause.pretty(Cause.fail(failed)), ...logs.lines])
      }
    }).pipe(Effect.scoped))
})
