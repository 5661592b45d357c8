/**
 * `Agent.stream` over a real HTTP model (the OpenAI Chat Completions adapter
 * against a loopback SSE server): interrupting the stream mid-answer closes
 * the HTTP response, and interrupting it mid-tool cancels the tool (its
 * terminal event reaches the sink) with no request left open.
 */
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Redacted, Schema, Stream } from "effect"
import { Agent, EventSink, Tool, ToolRegistry, ToolServices } from "../../src/index.ts"
import type { ToolEvent } from "../../src/index.ts"
import { OpenAiChatModel } from "../../src/agent/models/index.ts"
import { type SseEvent, serveSse } from "../models/support/sseServer.ts"

const model = (origin: string) =>
  OpenAiChatModel.layer({ apiKey: Redacted.make("sk-test-key-0000"), model: "gpt-4o-mini", baseUrl: `${origin}/v1` }).pipe(
    Layer.provide(NodeHttpClient.layerUndici)
  )

const chunk = (delta: unknown, finish: string | null = null): SseEvent => ({
  json: {
    id: "chatcmpl-1",
    object: "chat.completion.chunk",
    created: 1699896916,
    model: "gpt-4o-mini",
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }]
  }
})
const done: SseEvent = { text: "[DONE]" }

/** A tool that waits until cancelled, counting the handlers still running. */
const makeSlow = () => {
  const probe = { running: 0, started: 0 }
  const slow = Tool.make("slow", {
    description: "Waits a long time.",
    input: Schema.Struct({}),
    safety: { access: "read", idempotent: true },
    handler: () =>
      Effect.acquireUseRelease(
        Effect.sync(() => {
          probe.running++
          probe.started++
        }),
        () => Effect.as(Effect.never, "never"),
        () => Effect.sync(() => void probe.running--)
      )
  })
  return { slow, probe }
}

/** Runs `Agent.stream`, interrupting it once `stop` holds for a received event; returns the events received. */
const streamUntil = (tools: ToolRegistry.ToolRegistry<never>, stop: (event: ToolEvent.Event) => boolean) =>
  Effect.gen(function*() {
    const received: Array<ToolEvent.Event> = []
    let reached!: () => void
    const enough = new Promise<void>((resolve) => (reached = resolve))
    const fiber = yield* Agent.stream({ messages: [{ role: "user", content: "go" }], tools }).pipe(
      Stream.runForEach((event) =>
        Effect.sync(() => {
          received.push(event)
          if (stop(event)) reached()
        })
      ),
      Effect.forkChild
    )
    yield* Effect.promise(() => enough).pipe(Effect.timeout("10 seconds"))
    yield* Fiber.interrupt(fiber)
    return received
  })

describe("Agent.stream over HTTP", () => {
  it.live("interrupted mid-answer: the model's HTTP response is closed, none left open", () =>
    Effect.gen(function*() {
      const sse = yield* serveSse([{
        events: [chunk({ role: "assistant", content: "" }), chunk({ content: "Thinking" }), chunk({ content: " hard" })],
        then: "hang"
      }])
      const tools = yield* ToolRegistry.make([makeSlow().slow])
      const received = yield* streamUntil(tools, (e) => e._tag === "agent.text_delta" && e.text === " hard").pipe(
        Effect.provide(Layer.mergeAll(model(sse.origin), ToolServices.layerTest()))
      )
      assert.deepStrictEqual(received.filter((e) => e._tag === "agent.text_delta").map((e) => e._tag === "agent.text_delta" ? e.text : ""), ["Thinking", " hard"])
      const early = yield* Effect.promise(() => sse.closed(0)).pipe(Effect.timeout("10 seconds"))
      assert.isTrue(early, "the server saw the response closed before it finished")
      assert.strictEqual(sse.open(), 0)
    }).pipe(Effect.scoped))

  it.live("interrupted mid-tool: the tool is cancelled with its terminal event, no handler running, no request open", () =>
    Effect.gen(function*() {
      const sse = yield* serveSse([{
        events: [
          chunk({ role: "assistant", content: null }),
          chunk({ tool_calls: [{ index: 0, id: "call_1", type: "function", function: { name: "slow", arguments: "{}" } }] }),
          chunk({}, "tool_calls"),
          done
        ]
      }])
      const { slow, probe } = makeSlow()
      const tools = yield* ToolRegistry.make([slow])
      const { received, sink } = yield* Effect.gen(function*() {
        const received = yield* streamUntil(tools, (e) => e._tag === "tool.started")
        return { received, sink: yield* EventSink.EventLog.use((log) => log.all) }
      }).pipe(Effect.provide(Layer.mergeAll(model(sse.origin), ToolServices.layerTest())))
      assert.isTrue(received.some((e) => e._tag === "agent.tool_call"))
      assert.strictEqual(probe.started, 1)
      assert.strictEqual(probe.running, 0, "no handler left running")
      const terminal = sink.filter((e) => (e._tag === "tool.failed" || e._tag === "tool.completed") && e.toolCallId === "call_1")
      assert.strictEqual(terminal.length, 1)
      assert.strictEqual(terminal[0]!._tag, "tool.failed")
      assert.strictEqual(sse.open(), 0)
    }).pipe(Effect.scoped))
})
