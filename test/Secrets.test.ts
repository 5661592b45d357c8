/**
 * A secret planted in every position text can leave from is found nowhere:
 * an argument under a redacted key, a wrong-typed value of a redacted key, an
 * undeclared (redacted) key's value, a handler failure matching the tool's
 * patterns, a retried transient error, an undeclared error's message, a defect,
 * a tool output under a redacted key, and a model adapter's error body whose
 * key straddles the truncation cut. Searched: every event (encoded as JSON by
 * the event schema), every result's model-facing text and encoded error, the
 * five provider message formats, audit receipts, log lines, span attributes,
 * events and exits, the requests sent to the model, the transcript, and the
 * `AgentFailed` that ends each run.
 */
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit, Layer, Redacted, Schema, Tracer } from "effect"
import {
  Agent,
  ChatModel,
  EventSink,
  Executor,
  Tool,
  ToolError,
  ToolEvent,
  ToolRegistry,
  ToolResult,
  ToolServices
} from "../src/index.ts"
import { OpenAiChatModel } from "../src/agent/models/index.ts"
import { auditLog, type AuditLog } from "../src/governance/middleware/index.ts"
import { Anthropic, Gemini, Mcp, OpenAiChat, OpenAiResponses } from "../src/providers/index.ts"
import { assertNoSecret, captureLogs, type Reply, serve } from "./models/support/loopback.ts"

const KEY = "sk-proj-MODELKEY-Z9y8X7w6V5u4T3s2R1q0P9o8"

const planted = {
  argument: "arg-SECRET-hunter2",
  wrongType: "wrongtype-SECRET-hunter3",
  undeclared: "undeclared-SECRET-hunter4",
  failure: "sk-live-FAILURE4secret",
  transient: "sk-live-TRANSIENT5secret",
  undeclaredError: "sk-live-UNDECLARED6secret",
  output: "output-SECRET-hunter7",
  defect: "sk-live-DEFECT8secret"
} as const

class DbError extends Error {
  readonly password: string
  constructor(message: string, password: string) {
    super(message)
    this.password = password
  }
}

const Mode = Schema.Literals(["ok", "fail", "transient", "undeclared", "defect"])

const makeLogin = () => {
  let transientAttempts = 0
  const tool = Tool.make("login", {
    description: "Logs a user in.",
    input: Schema.Struct({ user: Schema.String, password: Schema.String, mode: Mode }),
    safety: {
      access: "read",
      idempotent: true,
      redact: { keys: ["password", "token"], patterns: [/sk-live-[A-Za-z0-9]+/] }
    },
    retry: Executor.backoff({ base: "1 millis", maxAttempts: 2, jitter: false }),
    handler: ({ mode, user }): Effect.Effect<unknown, ToolError.ToolError> => {
      switch (mode) {
        case "ok":
          return Effect.succeed({ user, token: planted.output, note: "welcome" })
        case "fail":
          return Effect.fail(ToolError.repairable(`login refused: key ${planted.failure} revoked`, { key: planted.failure }))
        case "transient":
          transientAttempts++
          return Effect.fail(ToolError.retryable(`upstream busy for ${planted.transient}`, new Error(planted.transient)))
        case "undeclared":
          // untyped code failing with an error the tool does not declare
          return Effect.fail(new DbError(`db said ${planted.undeclaredError}`, planted.argument)) as never
        case "defect":
          return Effect.die(new Error(`crash with ${planted.defect}`))
      }
    }
  })
  return { tool, attempts: () => transientAttempts }
}

/** An OpenAI Chat Completions answer calling `login` with each arguments object. */
const toolCallsReply = (calls: ReadonlyArray<readonly [string, unknown]>): Reply => ({
  json: {
    id: "chatcmpl-secrets",
    object: "chat.completion",
    created: 1,
    model: "gpt-4o-mini",
    choices: [{
      index: 0,
      message: {
        role: "assistant",
        content: null,
        tool_calls: calls.map(([id, args]) => ({
          id,
          type: "function",
          function: { name: "login", arguments: JSON.stringify(args) }
        }))
      },
      finish_reason: "tool_calls"
    }],
    usage: { prompt_tokens: 10, completion_tokens: 10, total_tokens: 20 }
  }
})

/** A 401 whose message puts the key across the 1,000-character cut. */
const straddling: Reply = {
  status: 401,
  json: {
    error: {
      message: `${"x".repeat(1000 - 12)}${KEY} is not a valid key.`,
      type: "invalid_request_error",
      code: "invalid_api_key"
    }
  }
}

/** A tracer that keeps every span. */
const recordingTracer = () => {
  const spans: Array<Tracer.NativeSpan> = []
  const tracer = Tracer.make({
    span: (options) => {
      const span = new Tracer.NativeSpan(options)
      spans.push(span)
      return span
    }
  })
  const texts = () =>
    spans.map((span) => {
      const exit = span.status._tag === "Ended" ? span.status.exit : undefined
      return JSON.stringify({
        name: span.name,
        attributes: Object.fromEntries(span.attributes),
        events: span.events.map(([name, , attributes]) => ({ name, attributes })),
        exit: exit === undefined || Exit.isSuccess(exit) ? "ok" : Cause.pretty(exit.cause)
      })
    })
  return { layer: Layer.succeed(Tracer.Tracer, tracer), texts }
}

const encodeEvent = Schema.encodeUnknownSync(ToolEvent.EventJson)
const encodeError = Schema.encodeUnknownSync(ToolError.ToolError)

/** Every rendering of a run's output that leaves the runtime. */
const everything = (
  events: ReadonlyArray<ToolEvent.Event>,
  results: ReadonlyArray<ToolResult.ToolResult>,
  receipts: ReadonlyArray<AuditLog.Receipt>,
  failed: Agent.AgentFailed,
  specs: ReadonlyArray<Tool.ToolSpec>
): ReadonlyArray<unknown> => [
  ...events.map((event) => JSON.stringify(encodeEvent(event))),
  ...events,
  ...results.map(ToolResult.textOf),
  ...results.flatMap((result) => result.error === undefined ? [] : [JSON.stringify(encodeError(result.error))]),
  ...results,
  OpenAiChat.toolMessages(results),
  OpenAiResponses.toolMessages(results),
  Anthropic.toolMessages(results),
  Gemini.toolMessages(results),
  Mcp.toolMessages(results, { specs }),
  ...receipts,
  failed,
  failed.message,
  String(failed),
  Cause.pretty(Cause.fail(failed)),
  failed.transcript,
  failed.results,
  ToolError.isToolError(failed.error) ? JSON.stringify(encodeError(failed.error)) : failed.error
]

const assertNowhere = (label: string, values: ReadonlyArray<unknown>, secrets: ReadonlyArray<string>) => {
  for (const secret of secrets) {
    try {
      assertNoSecret(secret, values)
    } catch (error) {
      throw new Error(`${label}: ${secret} leaked: ${(error as Error).message.slice(0, 600)}`)
    }
  }
}

describe("secrets", () => {
  it.live("a secret planted in every position is found nowhere", () =>
    Effect.gen(function*() {
      const login = makeLogin()
      const registry = yield* ToolRegistry.make([login.tool])
      const specs = ToolRegistry.all(registry).specs
      const receipts: Array<AuditLog.Receipt> = []
      const logs = captureLogs()
      const tracing = recordingTracer()
      const server = yield* serve([
        toolCallsReply([
          ["c1", { user: "ann", password: planted.argument, mode: "ok" }],
          ["c2", { user: "ann", password: [planted.wrongType], mode: "ok" }],
          ["c3", { user: "ann", password: "pw", mode: "ok", token: planted.undeclared }],
          ["c4", { user: "ann", password: "pw", mode: "fail" }],
          ["c5", { user: "ann", password: "pw", mode: "transient" }],
          ["c6", { user: "ann", password: "pw", mode: "undeclared" }]
        ]),
        straddling
      ])
      const model = OpenAiChatModel.layer({
        apiKey: Redacted.make(KEY),
        model: "gpt-4o-mini",
        baseUrl: `${server.origin}/v1`,
        retry: false
      }).pipe(Layer.provide(NodeHttpClient.layerUndici))
      const options = {
        messages: [{ role: "user" as const, content: "log ann in" }],
        tools: registry,
        middleware: [auditLog((receipt) => void receipts.push(receipt))],
        tracing: { recordArguments: true, recordResults: true }
      }

      // Run A: the tool calls, then the model fails with the key across the cut.
      const runA = yield* Effect.gen(function*() {
        const failed = yield* Effect.flip(Agent.run(options))
        const events = yield* EventSink.EventLog.use((log) => log.all)
        return { failed, events }
      }).pipe(
        Effect.provide(Layer.mergeAll(model, ToolServices.layerTest({ runId: "secrets-a" }), logs.layer, tracing.layer))
      )
      // Run B: a defect ends the run.
      const runB = yield* Effect.gen(function*() {
        const failed = yield* Effect.flip(Agent.run(options))
        const events = yield* EventSink.EventLog.use((log) => log.all)
        return { failed, events }
      }).pipe(
        Effect.provide(Layer.mergeAll(
          ChatModel.scripted([ChatModel.callTools([["c7", "login", { user: "ann", password: "pw", mode: "defect" }]])]),
          ToolServices.layerTest({ runId: "secrets-b" }),
          logs.layer,
          tracing.layer
        ))
      )

      // Every position was exercised.
      assert.strictEqual(runA.failed.reason, "model")
      assert.strictEqual(runB.failed.reason, "tool")
      assert.strictEqual(runB.failed.error._tag, "ToolDefect")
      assert.strictEqual(login.attempts(), 2)
      const results = [...runA.failed.results, ...runB.failed.results]
      assert.deepStrictEqual(
        results.map((r) => r.isError ? r.error?._tag : "ok"),
        ["ok", "InvalidArguments", "InvalidArguments", "ToolFailure", "ToolTransient", "ToolFailure", "ToolDefect"]
      )
      const tags = runA.events.map((e) => e._tag)
      assert.include(tags, "tool.retrying")
      assert.include(tags, "tool.rejected")
      assert.include(tags, "tool.failed")
      assert.isAbove(receipts.length, 3)
      assert.isTrue(receipts.some((r) => r.error !== undefined))
      assert.isTrue(logs.lines.some((line) => line.includes("chat model request failed")))
      assert.strictEqual(server.requests.length, 2)
      // What the model is still told: the rejection says what was expected, the failure what happened.
      assert.include(ToolResult.textOf(results[1]!), "password")
      assert.include(ToolResult.textOf(results[1]!), "[redacted]")
      assert.include(ToolResult.textOf(results[3]!), "login refused: key [redacted] revoked")

      const all = [
        ...everything(runA.events, runA.failed.results, receipts, runA.failed, specs),
        ...everything(runB.events, runB.failed.results, receipts, runB.failed, specs),
        ...logs.lines,
        ...tracing.texts(),
        ...server.requests.slice(1).map((request) => request.body)
      ]
      assertNowhere("run", all, Object.values(planted))
      assertNowhere("run", all, [KEY, KEY.slice(0, 12)])
      // The key's own prefix is not even in the model's error, where the cut fell.
      assert.include(runA.failed.error.message, "[redacted]")
    }).pipe(Effect.scoped))
})
