import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { assert, describe, it } from "@effect/vitest"
import { Cause, ConfigProvider, Duration, Effect, Layer, Redacted, Result, Schedule } from "effect"
import { Agent, ChatModel, EventSink, ToolRegistry } from "../../src/index.ts"
import { AnthropicModel } from "../../src/agent/models/index.ts"
import { Anthropic } from "../../src/providers/index.ts"
import { assertNoSecret, captureLogs, straddling, type Recorded, type Reply, serve } from "./support/loopback.ts"
import { fixture, registry, services, withKey } from "./support/tools.ts"

const key = "sk-ant-api03-TESTKEY-0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d"
const recorded = fixture("anthropic-messages.json")
const ok = (name: string): Reply => ({ json: recorded[name] })
const error = (status: number, name: string, headers: Record<string, string> = {}): Reply => ({
  status,
  headers,
  json: withKey(recorded[name], key)
})

const model = (origin: string, options: Partial<AnthropicModel.Options> = {}) =>
  AnthropicModel.layer({
    apiKey: Redacted.make(key),
    model: "claude-sonnet-4-5",
    baseUrl: `${origin}/v1`,
    ...options
  }).pipe(Layer.provide(NodeHttpClient.layerUndici))

const specs = ToolRegistry.all(registry).specs
const ask = (content: string): ChatModel.Request => ({
  messages: [{ role: "system", content: "Be brief." }, { role: "user", content }],
  tools: specs
})
const generate = (request: ChatModel.Request) => ChatModel.ChatModel.use((m) => m.generate(request))

interface Block {
  readonly type: string
  readonly id?: string
  readonly name?: string
  readonly tool_use_id?: string
  readonly input?: unknown
  readonly content?: unknown
  readonly is_error?: boolean
  readonly text?: string
}
interface WireMessage {
  readonly role: string
  readonly content: string | ReadonlyArray<Block>
}
interface WireBody {
  readonly model: string
  readonly max_tokens: number
  readonly system?: string
  readonly messages: ReadonlyArray<WireMessage>
  readonly tools?: ReadonlyArray<Record<string, unknown>>
}
const bodyOf = (request: Recorded | undefined): WireBody => request?.json as WireBody
const blocks = (message: WireMessage | undefined): ReadonlyArray<Block> =>
  message === undefined || typeof message.content === "string" ? [] : message.content

/** Every assistant `tool_use` is answered by a `tool_result` in the next (user) message, results first, in call order. */
const assertAnswersEveryCall = (messages: ReadonlyArray<WireMessage>) => {
  messages.forEach((message, i) => {
    const uses = blocks(message).filter((b) => b.type === "tool_use")
    if (message.role !== "assistant" || uses.length === 0) return
    const next = messages[i + 1]
    assert.strictEqual(next?.role, "user")
    const answers = blocks(next).slice(0, uses.length)
    assert.deepStrictEqual(answers.map((b) => b.type), uses.map(() => "tool_result"))
    assert.deepStrictEqual(answers.map((b) => b.tool_use_id), uses.map((b) => b.id))
  })
}

describe("AnthropicModel", () => {
  it.live("parallel tool use: the request speaks the Messages dialect; calls keep ids and input objects", () =>
    Effect.gen(function*() {
      const server = yield* serve([ok("parallelToolUse")])
      const response = yield* generate(ask("2+3 and 10-4?")).pipe(Effect.provide(model(server.origin)))

      assert.strictEqual(response.text, "I'll add both pairs.")
      assert.deepStrictEqual(response.toolCalls, [
        { id: "toolu_01A09q90qw90lq917835lq9", name: "add", arguments: { a: 2, b: 3 } },
        { id: "toolu_01D7FLrfh4GYq7yT1ULFeyMV", name: "add", arguments: { a: 10, b: -4 } }
      ])
      assert.deepStrictEqual(response.usage, { inputTokens: 480, outputTokens: 91 })

      const [request] = server.requests
      assert.strictEqual(request?.method, "POST")
      assert.strictEqual(request?.path, "/v1/messages")
      assert.strictEqual(request?.headers["x-api-key"], key)
      assert.strictEqual(request?.headers["anthropic-version"], "2023-06-01")
      assert.isUndefined(request?.headers.authorization)
      const body = bodyOf(request)
      assert.strictEqual(body.model, "claude-sonnet-4-5")
      assert.strictEqual(body.max_tokens, 4096)
      assert.strictEqual(body.system, "Be brief.")
      assert.deepStrictEqual(body.messages, [{ role: "user", content: "2+3 and 10-4?" }])
      assert.deepStrictEqual(body.tools, Result.getOrThrow(Anthropic.toolDefinitionsResult(specs)) as ReadonlyArray<unknown>)
      const [tool] = body.tools ?? []
      assert.strictEqual(tool?.name, "add")
      assert.strictEqual(tool?.description, "Adds two integers.")
      assert.deepInclude(tool?.input_schema as object, { type: "object", required: ["a", "b"] })
      assert.notProperty(tool, "function")
      assert.notProperty(tool, "parameters")
    }).pipe(Effect.scoped))

  it.live("end to end: Agent.run calls add twice, answers both ids in one user message, then returns the answer", () =>
    Effect.gen(function*() {
      const server = yield* serve([ok("parallelToolUse"), ok("finalAnswer")])
      const result = yield* Agent.run({
        system: "Be brief.",
        messages: [{ role: "user", content: "2+3 and 10-4?" }],
        tools: registry
      }).pipe(Effect.provide(Layer.merge(model(server.origin), services)))

      assert.strictEqual(result.reason, "final_answer")
      assert.strictEqual(result.text, "2 + 3 = 5 and 10 + -4 = 6.")
      assert.deepStrictEqual(result.results.map((r) => r.value), [5, 6])
      assert.deepStrictEqual(result.usage, { inputTokens: 1090, outputTokens: 109 })

      const second = bodyOf(server.requests[1])
      assert.strictEqual(second.system, "Be brief.")
      assert.deepStrictEqual(second.messages.map((m) => m.role), ["user", "assistant", "user"])
      assertAnswersEveryCall(second.messages)
      assert.deepStrictEqual(second.messages[1], {
        role: "assistant",
        content: [
          { type: "text", text: "I'll add both pairs." },
          { type: "tool_use", id: "toolu_01A09q90qw90lq917835lq9", name: "add", input: { a: 2, b: 3 } },
          { type: "tool_use", id: "toolu_01D7FLrfh4GYq7yT1ULFeyMV", name: "add", input: { a: 10, b: -4 } }
        ]
      })
      assert.deepStrictEqual(second.messages[2], {
        role: "user",
        content: [
          { type: "tool_result", tool_use_id: "toolu_01A09q90qw90lq917835lq9", content: "5" },
          { type: "tool_result", tool_use_id: "toolu_01D7FLrfh4GYq7yT1ULFeyMV", content: "6" }
        ]
      })
    }).pipe(Effect.scoped))

  it.live("non-object input passes through untouched and the registry rejects it with MalformedArguments", () =>
    Effect.gen(function*() {
      const server = yield* serve([ok("stringInput")])
      const response = yield* generate(ask("add")).pipe(Effect.provide(model(server.origin)))
      const call = response.toolCalls[0]!
      assert.strictEqual(call.arguments, "{\"a\": 2, \"b\": ")
      const resolved = ToolRegistry.resolve(ToolRegistry.all(registry), call)
      assert.isTrue(Result.isFailure(resolved))
      if (Result.isFailure(resolved)) assert.strictEqual(resolved.failure._tag, "MalformedArguments")

      const agentServer = yield* serve([ok("stringInput"), ok("finalAnswer")])
      const result = yield* Agent.run({ messages: [{ role: "user", content: "add" }], tools: registry }).pipe(
        Effect.provide(Layer.merge(model(agentServer.origin), services))
      )
      assert.strictEqual(result.results[0]?.error?._tag, "MalformedArguments")
      const second = bodyOf(agentServer.requests[1])
      assertAnswersEveryCall(second.messages)
      // Replayed verbatim under `_raw` (tool_use.input must be an object), never defaulted to {}.
      assert.deepStrictEqual(blocks(second.messages[1])[0]?.input, { _raw: "{\"a\": 2, \"b\": " })
      const answer = blocks(second.messages[2])[0]
      assert.isTrue(answer?.is_error)
      assert.include(String(answer?.content), "malformed arguments")
    }).pipe(Effect.scoped))

  it.live("a user message after tool results joins their user message, after the tool_result blocks", () =>
    Effect.gen(function*() {
      const server = yield* serve([ok("finalAnswer")])
      yield* generate({
        messages: [
          { role: "user", content: "add" },
          { role: "assistant", content: "", toolCalls: [{ id: "toolu_1", name: "add", arguments: { a: 1, b: 1 } }] },
          {
            role: "tool",
            results: [{ toolCallId: "toolu_1", name: "add", content: [{ type: "text", text: "2" }], artifacts: [], isError: false, elapsed: 0 }]
          },
          { role: "user", content: "thanks; now stop" }
        ],
        tools: specs
      }).pipe(Effect.provide(model(server.origin)))
      const body = bodyOf(server.requests[0])
      assert.deepStrictEqual(body.messages.map((m) => m.role), ["user", "assistant", "user"])
      assert.deepStrictEqual(body.messages[2]?.content, [
        { type: "tool_result", tool_use_id: "toolu_1", content: "2" },
        { type: "text", text: "thanks; now stop" }
      ])
      assert.notProperty(body, "system")
    }).pipe(Effect.scoped))

  it("a tool result's text and PDF resources go as documents, its audio as a note (wireMessages)", () => {
    const { messages } = AnthropicModel.wireMessages([
      { role: "user", content: "play it" },
      { role: "assistant", content: "", toolCalls: [{ id: "toolu_m", name: "media", arguments: {} }] },
      {
        role: "tool",
        results: [{
          toolCallId: "toolu_m",
          name: "media",
          content: [
            { type: "audio", data: "UklG", mimeType: "audio/wav" },
            { type: "resource", resource: { uri: "file:///n.txt", text: "notes" } },
            { type: "resource", resource: { uri: "file:///a.pdf", mimeType: "application/pdf", blob: "JVBE" } }
          ],
          artifacts: [],
          isError: false,
          elapsed: 0
        }]
      }
    ])
    assert.deepStrictEqual(messages[2]?.content, [{
      type: "tool_result",
      tool_use_id: "toolu_m",
      content: [
        { type: "text", text: "[audio: audio/wav, 3 bytes; not sent: an Anthropic tool result carries no audio]" },
        { type: "document", source: { type: "text", media_type: "text/plain", data: "notes" }, title: "file:///n.txt" },
        { type: "document", source: { type: "base64", media_type: "application/pdf", data: "JVBE" }, title: "file:///a.pdf" }
      ]
    }])
  })

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

  it.live("a retry-after beyond maxRetryAfter fails at once with `rate_limited`", () =>
    Effect.gen(function*() {
      const server = yield* serve([error(429, "rateLimited", { "retry-after": "120" }), ok("finalAnswer")])
      const failure = yield* Effect.flip(generate(ask("hi")).pipe(Effect.provide(model(server.origin))))
      assert.strictEqual(failure.reason, "rate_limited")
      assert.isTrue(failure.retryable)
      assert.strictEqual(failure.status, 429)
      const wait = AnthropicModel.retryAfter(failure)
      assert.strictEqual(wait === undefined ? undefined : Duration.toMillis(wait), 120_000)
      assert.lengthOf(server.requests, 1)
    }).pipe(Effect.scoped))

  it.live("persistent 500 / 529 are retried, then fail with a typed, retryable http error", () =>
    Effect.gen(function*() {
      const server = yield* serve([
        error(500, "apiError"),
        error(529, "overloaded"),
        error(529, "overloaded"),
        ok("finalAnswer")
      ])
      const failure = yield* Effect.flip(
        generate(ask("hi")).pipe(Effect.provide(model(server.origin, { retry: Schedule.recurs(2) })))
      )
      assert.strictEqual(failure._tag, "ChatModelError")
      assert.strictEqual(failure.reason, "http")
      assert.strictEqual(failure.status, 529)
      assert.isTrue(failure.retryable)
      assert.strictEqual(failure.message, "anthropic: HTTP 529 overloaded_error: Overloaded")
      assert.lengthOf(server.requests, 3)
    }).pipe(Effect.scoped))

  it.live("timeout: a server that never answers fails each attempt with `timeout`", () =>
    Effect.gen(function*() {
      const server = yield* serve(["hang", "hang"])
      const failure = yield* Effect.flip(
        generate(ask("hi")).pipe(
          Effect.provide(model(server.origin, { timeout: "200 millis", retry: Schedule.recurs(1) }))
        )
      )
      assert.strictEqual(failure.reason, "timeout")
      assert.isTrue(failure.retryable)
      assert.lengthOf(server.requests, 2)
    }).pipe(Effect.scoped))

  it.live("4xx fails at once with the provider's message, the echoed key scrubbed", () =>
    Effect.gen(function*() {
      const server = yield* serve([error(401, "authenticationError"), ok("finalAnswer")])
      const failure = yield* Effect.flip(generate(ask("hi")).pipe(Effect.provide(model(server.origin))))
      assert.strictEqual(failure.reason, "http")
      assert.strictEqual(failure.status, 401)
      assert.isFalse(failure.retryable)
      assert.strictEqual(failure.message, "anthropic: HTTP 401 authentication_error: invalid x-api-key: [redacted]")
      assert.lengthOf(server.requests, 1)
    }).pipe(Effect.scoped))

  it.live("a 2xx body that is not a Message fails with `decode`", () =>
    Effect.gen(function*() {
      const server = yield* serve([
        { text: "not json" },
        { json: { content: [{ type: "tool_use", name: "add", input: {} }] } }
      ])
      const layer = model(server.origin, { retry: false })
      const notJson = yield* Effect.flip(generate(ask("hi")).pipe(Effect.provide(layer)))
      assert.strictEqual(notJson.reason, "decode")
      const noId = yield* Effect.flip(generate(ask("hi")).pipe(Effect.provide(layer)))
      assert.strictEqual(noId.reason, "decode")
      assert.include(noId.message, "content[0]")
    }).pipe(Effect.scoped))

  it.live("the key appears in no log line, event, or error (message, String, JSON)", () =>
    Effect.gen(function*() {
      const logs = captureLogs()
      const server = yield* serve([
        error(429, "rateLimited", { "retry-after": "0" }),
        ok("parallelToolUse"),
        error(529, "overloaded"),
        ok("finalAnswer"),
        error(401, "authenticationError")
      ])
      const ran = yield* Effect.provide(
        Effect.gen(function*() {
          const result = yield* Agent.run({ messages: [{ role: "user", content: "2+3 and 10-4?" }], tools: registry }).pipe(
            Effect.provide(model(server.origin, { retry: Schedule.spaced("10 millis") })),
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
      assert.strictEqual(failed.status, 401)
      assert.isTrue(logs.lines.some((line) => line.includes("chat model request failed")))
      assert.isTrue(server.requests.every((r) => r.headers["x-api-key"] === key))
      assertNoSecret(key, [...logs.lines, ...ran.events, ran.result, failed, failed.message])
    }).pipe(Effect.scoped))

  it.live("layerConfig reads ANTHROPIC_API_KEY (redacted), ANTHROPIC_BASE_URL and ANTHROPIC_MODEL", () =>
    Effect.gen(function*() {
      const server = yield* serve([ok("finalAnswer")])
      const config = ConfigProvider.layer(ConfigProvider.fromEnv({
        env: { ANTHROPIC_API_KEY: key, ANTHROPIC_BASE_URL: `${server.origin}/v1` }
      }))
      const layer = AnthropicModel.layerConfig({ model: "claude-haiku-4-5", maxTokens: 256 }).pipe(
        Layer.provide([NodeHttpClient.layerUndici, config])
      )
      const response = yield* generate(ask("hi")).pipe(Effect.provide(layer))
      assert.strictEqual(response.text, "2 + 3 = 5 and 10 + -4 = 6.")
      assert.strictEqual(bodyOf(server.requests[0]).model, "claude-haiku-4-5")
      assert.strictEqual(bodyOf(server.requests[0]).max_tokens, 256)
      assert.strictEqual(server.requests[0]?.headers["x-api-key"], key)
    }).pipe(Effect.scoped))

  it.live("ANTHROPIC_BASE_URL with or without /v1 (and a trailing slash) reaches /v1/messages, as the official SDK does", () =>
    Effect.gen(function*() {
      const server = yield* serve([ok("finalAnswer"), ok("finalAnswer"), ok("finalAnswer"), ok("finalAnswer")])
      for (const baseUrl of [server.origin, `${server.origin}/v1`, `${server.origin}/`, `${server.origin}/v1/`]) {
        const config = ConfigProvider.layer(ConfigProvider.fromEnv({
          env: { ANTHROPIC_API_KEY: key, ANTHROPIC_BASE_URL: baseUrl, ANTHROPIC_MODEL: "claude-haiku-4-5" }
        }))
        const layer = AnthropicModel.layerConfig().pipe(Layer.provide([NodeHttpClient.layerUndici, config]))
        const response = yield* generate(ask("hi")).pipe(Effect.provide(layer))
        assert.strictEqual(response.text, "2 + 3 = 5 and 10 + -4 = 6.")
      }
      assert.deepStrictEqual(server.requests.map((r) => `${r.method} ${r.path}`), Array(4).fill("POST /v1/messages"))
      // The same rule for `layer`'s `baseUrl`, and a proxy prefix keeps its path.
      assert.strictEqual(AnthropicModel.messagesUrl(), "https://api.anthropic.com/v1/messages")
      assert.strictEqual(AnthropicModel.messagesUrl("https://api.anthropic.com"), "https://api.anthropic.com/v1/messages")
      assert.strictEqual(AnthropicModel.messagesUrl("https://api.anthropic.com/v1"), "https://api.anthropic.com/v1/messages")
      assert.strictEqual(AnthropicModel.messagesUrl("https://proxy.example/anthropic/"), "https://proxy.example/anthropic/v1/messages")
    }).pipe(Effect.scoped))

  it.effect("layerConfig fails with a ModelConfigError naming the variable: missing key, missing model, invalid base URL", () =>
    Effect.gen(function*() {
      const fails = (env: Record<string, string>, options: { readonly model?: string } = {}) =>
        Effect.flip(Layer.build(AnthropicModel.layerConfig(options).pipe(
          Layer.provide([NodeHttpClient.layerUndici, ConfigProvider.layer(ConfigProvider.fromEnv({ env }))])
        ))).pipe(Effect.scoped)
      const noKey = yield* fails({ ANTHROPIC_MODEL: "claude-haiku-4-5" })
      assert.strictEqual(noKey._tag, "ModelConfigError")
      assert.strictEqual(noKey.variable, "ANTHROPIC_API_KEY")
      assert.strictEqual(noKey.problem, "missing")
      assert.strictEqual(
        noKey.message,
        `missing environment variable ANTHROPIC_API_KEY (set it to your Anthropic API key; see README "Environment variables")`
      )
      assert.instanceOf(noKey, Error)
      const emptyKey = yield* fails({ ANTHROPIC_API_KEY: "", ANTHROPIC_MODEL: "claude-haiku-4-5" })
      assert.strictEqual(emptyKey.variable, "ANTHROPIC_API_KEY")
      const noModel = yield* fails({ ANTHROPIC_API_KEY: key })
      assert.strictEqual(noModel.variable, "ANTHROPIC_MODEL")
      assert.strictEqual(noModel.problem, "missing")
      const badUrl = yield* fails({ ANTHROPIC_API_KEY: key, ANTHROPIC_BASE_URL: "api.anthropic.com" }, { model: "claude-haiku-4-5" })
      assert.strictEqual(badUrl.variable, "ANTHROPIC_BASE_URL")
      assert.strictEqual(badUrl.problem, "invalid")
      assert.notInclude(badUrl.message, "\n")
      assertNoSecret(key, [noKey, emptyKey, noModel, badUrl])
    }))

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
