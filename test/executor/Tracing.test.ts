/**
 * Default spans through the real OpenTelemetry SDK (`@effect/opentelemetry`'s
 * tracer over an `InMemorySpanExporter`): an `execute_tool {tool}` span per
 * answered call with the GenAI attributes, the agent's `invoke_agent` /
 * `agent_turn` / `chat` spans around them, `error.type` on failures, and no
 * argument or result value anywhere in the span data unless asked.
 */
import "../support/otelResolve.ts"
import { assert, describe, it } from "@effect/vitest"
import type * as OtelTracerModule from "@effect/opentelemetry/OtelTracer"
import type * as ResourceModule from "@effect/opentelemetry/Resource"
import type { ReadableSpan } from "@opentelemetry/sdk-trace-base"
import type * as SdkTraceBase from "@opentelemetry/sdk-trace-base"
import { Effect, Fiber, Layer, Option, Schema, Tracer } from "effect"
import { TestClock } from "effect/testing"
import { createRequire } from "node:module"
import { Agent, ChatModel, Executor, Tool, ToolError, ToolRegistry, ToolServices } from "../../src/index.ts"

const require = createRequire(import.meta.url)
const OtelTracer = require("@effect/opentelemetry/OtelTracer") as typeof OtelTracerModule
const Resource = require("@effect/opentelemetry/Resource") as typeof ResourceModule
const { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } = require(
  "@opentelemetry/sdk-trace-base"
) as typeof SdkTraceBase

// OpenTelemetry's enums (`@opentelemetry/api`): SpanKind.INTERNAL / CLIENT, SpanStatusCode.OK / ERROR.
const INTERNAL = 0
const CLIENT = 2
const OK = 1
const ERROR = 2

/** A fresh exporter and the layer that installs the OpenTelemetry tracer in front of it. */
const otel = () => {
  const exporter = new InMemorySpanExporter()
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
  const layer = OtelTracer.layer.pipe(
    Layer.provide(Layer.succeed(OtelTracer.OtelTracerProvider, provider)),
    Layer.provide(Resource.layer({ serviceName: "tinyagents-test" }))
  )
  return { exporter, layer }
}

const SECRET_ARG = "hunter2-argument"
const SECRET_RESULT = "s3cr3t-result"
const SECRET_ERROR = "s3cr3t-error"

const lookup = Tool.make("lookup", {
  description: "Looks a customer up.",
  input: Schema.Struct({ customer: Schema.String, apiKey: Schema.optionalKey(Schema.String) }),
  output: Schema.Struct({ note: Schema.String }),
  safety: { access: "read", idempotent: true, redact: { keys: ["apiKey"] } },
  handler: ({ customer }) => Effect.succeed({ note: `${customer} owes ${SECRET_RESULT}` })
})
const refuse = Tool.make("refuse", {
  description: "Fails with a user-facing error that quotes its argument.",
  input: Schema.Struct({ key: Schema.String }),
  handler: ({ key }) => Effect.fail(ToolError.repairable(`no note called ${key} (${SECRET_ERROR})`))
})
const crash = Tool.make("crash", {
  description: "Dies with a message that quotes its argument.",
  input: Schema.Struct({ key: Schema.String }),
  handler: ({ key }) => Effect.die(new Error(`disk on fire near ${key} ${SECRET_ERROR}`))
})
const slow = Tool.make("slow", {
  description: "Takes a minute.",
  input: Schema.Struct({}),
  timeout: "1 second",
  handler: () => Effect.as(Effect.sleep("1 minute"), "late")
})

const registry = ToolRegistry.makeResult([lookup, refuse, crash, slow]).pipe((r) => {
  if (r._tag === "Failure") throw r.failure
  return r.success
})
const services = ToolServices.layerTest({ runId: "run-1", threadId: "thread-1" })
const call = (id: string, name: string, args: unknown = {}) => ({ id, name, arguments: args })

const named = (spans: ReadonlyArray<ReadableSpan>, name: string): ReadableSpan => {
  const span = spans.find((s) => s.name === name)
  assert.isDefined(span, `a span named ${name}`)
  return span!
}
const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId
const idOf = (span: ReadableSpan) => span.spanContext().spanId
/** Everything a span exports besides timing: name, attributes, status, events, links. */
const dump = (spans: ReadonlyArray<ReadableSpan>) =>
  JSON.stringify(spans.map((s) => ({ name: s.name, attributes: s.attributes, status: s.status, events: s.events, links: s.links })))

describe("execute_tool spans", () => {
  it.effect("Agent.run: invoke_agent > agent_turn > chat and execute_tool, with the GenAI attributes", () => {
    const { exporter, layer } = otel()
    return Effect.gen(function*() {
      const result = yield* Agent.run({
        name: "support",
        messages: [{ role: "user", content: `look up ${SECRET_ARG}` }],
        tools: registry
      })
      assert.strictEqual(result.reason, "final_answer")
      const spans = exporter.getFinishedSpans()
      assert.deepStrictEqual(
        spans.map((s) => s.name).sort(),
        [
          "agent_turn",
          "agent_turn",
          "chat",
          "chat",
          "execute_tool lookup",
          "execute_tool nope",
          "execute_tool refuse",
          "invoke_agent support"
        ]
      )

      const run = named(spans, "invoke_agent support")
      assert.strictEqual(run.kind, INTERNAL)
      assert.isUndefined(parentOf(run))
      assert.include(run.attributes, {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "support",
        "gen_ai.conversation.id": "thread-1",
        "tinyagents.run.id": "run-1",
        "tinyagents.agent.stop_reason": "final_answer",
        "tinyagents.agent.turns": 2,
        "gen_ai.usage.input_tokens": 30,
        "gen_ai.usage.output_tokens": 12
      })
      const turns = spans.filter((s) => s.name === "agent_turn")
      assert.deepStrictEqual(turns.map(parentOf), [idOf(run), idOf(run)])
      assert.deepStrictEqual(turns.map((t) => t.attributes["tinyagents.agent.turn"]).sort(), [0, 1])
      const first = turns.find((t) => t.attributes["tinyagents.agent.turn"] === 0)!

      const chats = spans.filter((s) => s.name === "chat")
      assert.deepStrictEqual(chats.map((c) => c.kind), [CLIENT, CLIENT])
      assert.deepStrictEqual(chats.map(parentOf).sort(), turns.map(idOf).sort())
      assert.include(chats[0]!.attributes, { "gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": 10 })

      const ok = named(spans, "execute_tool lookup")
      assert.strictEqual(ok.kind, INTERNAL)
      assert.strictEqual(parentOf(ok), idOf(first))
      assert.strictEqual(ok.status.code, OK)
      assert.deepStrictEqual(ok.attributes, {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "lookup",
        "gen_ai.tool.call.id": "call_1",
        "gen_ai.tool.type": "function",
        "gen_ai.tool.description": "Looks a customer up.",
        "tinyagents.tool.attempts": 1
      })

      const failed = named(spans, "execute_tool refuse")
      assert.strictEqual(parentOf(failed), idOf(first))
      assert.strictEqual(failed.status.code, ERROR)
      assert.strictEqual(failed.attributes["error.type"], "ToolFailure")

      const unknown = named(spans, "execute_tool nope")
      assert.strictEqual(parentOf(unknown), idOf(first))
      assert.strictEqual(unknown.status.code, ERROR)
      assert.include(unknown.attributes, {
        "gen_ai.tool.name": "nope",
        "gen_ai.tool.call.id": "call_3",
        "error.type": "ToolNotFound",
        "tinyagents.tool.rejected": true
      })

      const data = dump(spans)
      for (const secret of [SECRET_ARG, SECRET_RESULT, SECRET_ERROR, "sk-live-1"]) assert.notInclude(data, secret)
    }).pipe(Effect.provide([
      services,
      layer,
      ChatModel.scripted([
        {
          text: "",
          toolCalls: [
            call("call_1", "lookup", { customer: SECRET_ARG, apiKey: "sk-live-1" }),
            call("call_2", "refuse", { key: SECRET_ARG }),
            call("call_3", "nope", { key: SECRET_ARG })
          ],
          usage: { inputTokens: 10, outputTokens: 5 }
        },
        { text: "done", toolCalls: [], usage: { inputTokens: 20, outputTokens: 7 } }
      ])
    ]))
  })

  it.effect("a model failure: chat has the ChatModelError reason, the turn and the run its tag", () => {
    const { exporter, layer } = otel()
    return Effect.gen(function*() {
      const failed = yield* Effect.flip(Agent.run({ messages: [{ role: "user", content: "hi" }], tools: registry }))
      assert.strictEqual(failed.reason, "model")
      const spans = exporter.getFinishedSpans()
      assert.strictEqual(named(spans, "chat").attributes["error.type"], "script_exhausted")
      assert.strictEqual(named(spans, "agent_turn").attributes["error.type"], "ChatModelError")
      const run = named(spans, "invoke_agent")
      assert.strictEqual(run.attributes["error.type"], "ChatModelError")
      assert.strictEqual(run.status.code, ERROR)
    }).pipe(Effect.provide([services, layer, ChatModel.scripted([])]))
  })

  it.effect("a defect and a timeout: error.type is the error's tag, the status names only that", () => {
    const { exporter, layer } = otel()
    return Effect.gen(function*() {
      const executor = yield* Executor.make(registry)
      const defect = yield* Effect.flip(executor.run(call("c1", "crash", { key: SECRET_ARG })))
      assert.strictEqual(defect._tag, "ToolDefect")
      const fiber = yield* Effect.forkChild(executor.run(call("c2", "slow")))
      yield* Effect.yieldNow
      yield* TestClock.adjust("2 seconds")
      const timedOut = yield* Fiber.join(fiber)
      assert.strictEqual(timedOut.error?._tag, "ToolTimeout")

      const spans = exporter.getFinishedSpans()
      const crashed = named(spans, "execute_tool crash")
      assert.strictEqual(crashed.status.code, ERROR)
      assert.strictEqual(crashed.status.message, "ToolDefect")
      assert.strictEqual(crashed.attributes["error.type"], "ToolDefect")
      const late = named(spans, "execute_tool slow")
      assert.strictEqual(late.attributes["error.type"], "ToolTimeout")
      assert.strictEqual(late.status.code, ERROR)
      assert.notInclude(dump(spans), SECRET_ARG)
      assert.notInclude(dump(spans), SECRET_ERROR)
    }).pipe(Effect.provide([services, layer]))
  })

  it.effect("recordArguments / recordResults add the values, redacted per the tool's safety.redact", () => {
    const { exporter, layer } = otel()
    return Effect.gen(function*() {
      const executor = yield* Executor.make(registry, { tracing: { recordArguments: true, recordResults: true } })
      yield* executor.run(call("c1", "lookup", { customer: "ada", apiKey: "sk-live-1" }))
      const span = named(exporter.getFinishedSpans(), "execute_tool lookup")
      assert.deepStrictEqual(JSON.parse(span.attributes["gen_ai.tool.call.arguments"] as string), {
        customer: "ada",
        apiKey: "[redacted]"
      })
      assert.include(span.attributes["gen_ai.tool.call.result"] as string, `ada owes ${SECRET_RESULT}`)
      assert.notInclude(dump(exporter.getFinishedSpans()), "sk-live-1")
    }).pipe(Effect.provide([services, layer]))
  })

  it.effect("no tracer installed: no call span is made (the handler runs under its caller's span)", () =>
    Effect.gen(function*() {
      const seen: Array<string> = []
      const probe = Tool.make("probe", {
        description: "Reports the span it runs in.",
        input: Schema.Struct({}),
        handler: () =>
          Effect.map(Effect.option(Effect.currentSpan), (span) => {
            seen.push(Option.match(span, { onNone: () => "none", onSome: (s) => s.name }))
            return "ok"
          })
      })
      const executor = yield* Executor.make(yield* ToolRegistry.make([probe]))
      yield* executor.run(call("c1", "probe")).pipe(Effect.withSpan("caller"))
      const custom = Tracer.make({ span: (options) => new Tracer.NativeSpan(options) })
      yield* executor.run(call("c2", "probe")).pipe(Effect.withSpan("caller"), Effect.provideService(Tracer.Tracer, custom))
      assert.deepStrictEqual(seen, ["caller", "execute_tool probe"])
    }).pipe(Effect.provide(services)))
})
