/**
 * `Agent.stream`: the run's events as a `Stream` (the sink's events, in the
 * same order, plus text deltas and decided calls), ending with
 * `agent.finished` (text and usage) or failing with `AgentFailed`; a slow
 * consumer slows the loop and loses nothing; ending the stream early closes
 * the model's stream and cancels running tools, each with its terminal event.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Layer, Schema, Stream } from "effect"
import { TestClock } from "effect/testing"
import { Agent, ChatModel, EventSink, Tool, ToolProgress, ToolRegistry, ToolServices } from "../../src/index.ts"
import type { ToolEvent } from "../../src/index.ts"

const add = Tool.make("add", {
  description: "Adds two integers.",
  input: Schema.Struct({ a: Schema.Int, b: Schema.Int }),
  safety: { access: "read", idempotent: true },
  handler: ({ a, b }) => Effect.succeed(a + b)
})

const index = Tool.make("index", {
  description: "Indexes `n` documents, 100 ms each, reporting progress.",
  input: Schema.Struct({ n: Schema.Int }),
  services: [ToolProgress.ToolProgress],
  handler: ({ n }) =>
    Effect.gen(function*() {
      for (let i = 1; i <= n; i++) {
        yield* Effect.sleep(100)
        yield* ToolProgress.report({ message: `doc ${i}`, count: i, total: n })
      }
      return `indexed ${n}`
    })
})

/** A probe for the tool that never ends: how many run, and whether each one's finalizer ran. */
const probe = { running: 0, finalized: 0 }
const hang = Tool.make("hang", {
  description: "Never ends.",
  input: Schema.Struct({}),
  services: [ToolProgress.ToolProgress],
  handler: () =>
    Effect.acquireUseRelease(
      Effect.sync(() => void probe.running++),
      () => Effect.andThen(ToolProgress.message("working"), Effect.never),
      () =>
        Effect.sync(() => {
          probe.running--
          probe.finalized++
        })
    )
})

const registry = ToolRegistry.makeResult([add, index, hang]).pipe((r) => {
  if (r._tag === "Failure") throw r.failure
  return r.success
})

const user = (content: string): ChatModel.Message => ({ role: "user", content })
const services = ToolServices.layerTest({ runId: "stream-run", threadId: "t" })
const sinkEvents = EventSink.EventLog.use((log) => log.all)
const tags = (events: ReadonlyArray<ToolEvent.Event>) => events.map((e) => e._tag)

/** A model that streams `text` word by word, then calls `calls`; the next turn answers `answer`. */
const wordByWord = (turns: ReadonlyArray<ChatModel.Response>): Layer.Layer<ChatModel.ChatModel> =>
  Layer.sync(ChatModel.ChatModel, () => {
    let next = 0
    return ChatModel.make({
      stream: () =>
        Stream.suspend(() => {
          const response = turns[next++]!
          const words = response.text.split(/(?<= )/).filter((w) => w !== "")
          const parts: Array<ChatModel.StreamPart> = words.map((text) => ({ _tag: "TextDelta", text }))
          const calls = ChatModel.partsOf(response).filter((part) => part._tag !== "TextDelta")
          return Stream.fromIterable([...parts, ...calls])
        })
    })
  })

describe("Agent.stream", () => {
  it.effect("the run's events: text as it arrives, decided calls, tool events with progress, then agent.finished", () =>
    Effect.gen(function*() {
      const fiber = yield* Effect.forkChild(Stream.runCollect(Agent.stream({ messages: [user("index 3")], tools: registry })))
      yield* TestClock.adjust(1_000)
      const streamed = yield* Fiber.join(fiber)
      assert.deepStrictEqual(tags(streamed), [
        "agent.turn_started",
        "agent.text_delta",
        "agent.text_delta",
        "agent.tool_call",
        "agent.model_responded",
        "tool.started",
        "tool.progress",
        "tool.progress",
        "tool.progress",
        "tool.completed",
        "agent.turn_started",
        "agent.text_delta",
        "agent.text_delta",
        "agent.model_responded",
        "agent.finished"
      ])
      const deltas = streamed.filter((e): e is ToolEvent.AgentTextDelta => e._tag === "agent.text_delta")
      assert.deepStrictEqual(deltas.map((e) => [e.turn, e.text]), [[0, "Indexing "], [0, "now."], [1, "Indexed "], [1, "3."]])
      const decided = streamed.find((e): e is ToolEvent.AgentToolCall => e._tag === "agent.tool_call")!
      assert.deepStrictEqual([decided.toolCallId, decided.toolName, decided.arguments], ["c1", "index", { n: 3 }])
      const finished = streamed.at(-1) as ToolEvent.AgentFinished
      assert.deepStrictEqual([finished.reason, finished.text, finished.turns], ["final_answer", "Indexed 3.", 2])
      assert.deepStrictEqual(finished.usage, { inputTokens: 7, outputTokens: 5 })
      // The sink received the very same events, in the same order; sequences are gap-free.
      assert.deepStrictEqual(yield* sinkEvents, streamed)
      assert.deepStrictEqual(streamed.map((e) => e.sequence), streamed.map((_, i) => i))
    }).pipe(Effect.provide(Layer.merge(
      wordByWord([
        { ...ChatModel.callTools([["c1", "index", { n: 3 }]], "Indexing now."), usage: { inputTokens: 4, outputTokens: 3 } },
        { ...ChatModel.answer("Indexed 3."), usage: { inputTokens: 3, outputTokens: 2 } }
      ]),
      services
    ))))

  it.effect("Agent.run is the same loop: same result, and the sink gets the lifecycle events only", () =>
    Effect.gen(function*() {
      const fiber = yield* Effect.forkChild(Agent.run({ messages: [user("index 2")], tools: registry }))
      yield* TestClock.adjust(1_000)
      const result = yield* Fiber.join(fiber)
      assert.strictEqual(result.text, "Indexed 2.")
      assert.deepStrictEqual(result.results.map((r) => r.value), ["indexed 2"])
      assert.deepStrictEqual(tags(yield* sinkEvents), [
        "agent.turn_started",
        "agent.model_responded",
        "tool.started",
        "tool.progress",
        "tool.progress",
        "tool.completed",
        "agent.turn_started",
        "agent.model_responded",
        "agent.finished"
      ])
    }).pipe(Effect.provide(Layer.merge(
      wordByWord([ChatModel.callTools([["c1", "index", { n: 2 }]], "Indexing now."), ChatModel.answer("Indexed 2.")]),
      services
    ))))

  it.effect("a slow consumer (one event per 500 ms) gets every event in sequence order; the loop waits for it", () =>
    Effect.gen(function*() {
      const bufferSize = 2
      /** At each event the consumer takes: how far ahead of it the sink was. */
      const ahead: Array<number> = []
      let consumed = 0
      const slow = Agent.stream({ messages: [user("index 5")], tools: registry, bufferSize }).pipe(
        Stream.tap(() =>
          Effect.gen(function*() {
            const inSink = (yield* sinkEvents).length
            ahead.push(inSink - consumed)
            consumed++
            yield* Effect.sleep(500)
          })
        ),
        Stream.runCollect
      )
      const fiber = yield* Effect.forkChild(slow)
      for (let i = 0; i < 1_000 && fiber.pollUnsafe() === undefined; i++) {
        yield* Effect.yieldNow
        yield* TestClock.adjust(50)
      }
      const received = yield* Fiber.join(fiber)
      const logged = yield* sinkEvents
      assert.deepStrictEqual(received, logged)
      assert.deepStrictEqual(received.map((e) => e.sequence), logged.map((_, i) => i))
      assert.strictEqual(received.filter((e) => e._tag === "tool.progress").length, 5)
      assert.strictEqual(received.at(-1)!._tag, "agent.finished")
      // Backpressure: the loop never got further ahead than the buffer, the chunk the consumer took
      // from it, and the one event being offered.
      assert.isAtMost(Math.max(...ahead), 2 * bufferSize + 1)
    }).pipe(Effect.provide(Layer.merge(
      ChatModel.scripted([ChatModel.callTools([["c1", "index", { n: 5 }]]), ChatModel.answer("done")]),
      services
    ))))

  it.effect("interrupting the stream mid-tool cancels the tool: tool.failed (cancelled) in the sink, no handler left running", () =>
    Effect.gen(function*() {
      probe.running = 0
      probe.finalized = 0
      const seen: Array<ToolEvent.Event> = []
      const consumer = yield* Effect.forkChild(
        Stream.runForEach(Agent.stream({ messages: [user("hang")], tools: registry }), (e) => Effect.sync(() => seen.push(e)))
      )
      for (let i = 0; i < 20 && seen.filter((e) => e._tag === "tool.progress").length < 2; i++) {
        yield* Effect.yieldNow
        yield* TestClock.adjust(10)
      }
      assert.strictEqual(probe.running, 2)
      yield* Fiber.interrupt(consumer)
      assert.strictEqual(probe.running, 0)
      assert.strictEqual(probe.finalized, 2)
      const logged = yield* sinkEvents
      const failed = logged.filter((e): e is ToolEvent.ToolFailed => e._tag === "tool.failed")
      assert.deepStrictEqual(failed.map((e) => [e.toolCallId, e.reason]), [["h1", "cancelled"], ["h2", "cancelled"]])
      assert.deepStrictEqual(logged.map((e) => e.sequence), logged.map((_, i) => i))
      // Nothing more happens afterwards.
      yield* TestClock.adjust(10_000)
      assert.strictEqual((yield* sinkEvents).length, logged.length)
    }).pipe(Effect.provide(Layer.merge(
      ChatModel.scripted([ChatModel.callTools([["h1", "hang", {}], ["h2", "hang", {}]]), ChatModel.answer("never")]),
      services
    ))))

  it.effect("taking only the first text delta closes the model's stream", () =>
    Effect.gen(function*() {
      let closed = false
      const endless = Layer.succeed(
        ChatModel.ChatModel,
        ChatModel.make({
          stream: () =>
            Stream.concat(
              Stream.make<Array<ChatModel.StreamPart>>({ _tag: "TextDelta", text: "Once upon a time" }),
              Stream.never
            ).pipe(Stream.ensuring(Effect.sync(() => void (closed = true))))
        })
      )
      const first = yield* Agent.stream({ messages: [user("tell me a story")], tools: registry }).pipe(
        Stream.filter((e) => e._tag === "agent.text_delta"),
        Stream.take(1),
        Stream.runCollect,
        Effect.provide(endless)
      )
      assert.deepStrictEqual(first.map((e) => (e as ToolEvent.AgentTextDelta).text), ["Once upon a time"])
      assert.isTrue(closed)
    }).pipe(Effect.provide(services)))

  it.effect("a fatal error: agent.finished (failed), then the stream fails with AgentFailed", () =>
    Effect.gen(function*() {
      const events: Array<ToolEvent.Event> = []
      const exit = yield* Agent.stream({ messages: [user("hi")], tools: registry }).pipe(
        Stream.runForEach((e) => Effect.sync(() => events.push(e))),
        Effect.exit
      )
      assert.isTrue(Exit.isFailure(exit))
      if (Exit.isFailure(exit)) {
        const error = exit.cause.reasons.find((r) => r._tag === "Fail")
        assert.strictEqual(error?._tag === "Fail" ? (error.error as Agent.AgentFailed).reason : undefined, "model")
      }
      assert.deepStrictEqual(tags(events), ["agent.turn_started", "agent.finished"])
      assert.strictEqual((events[1] as ToolEvent.AgentFinished).reason, "failed")
    }).pipe(Effect.provide(Layer.merge(ChatModel.scripted([]), services))))

  it.effect("a model stream that ends without Finished is a transport error", () =>
    Effect.gen(function*() {
      const cut = Layer.succeed(
        ChatModel.ChatModel,
        ChatModel.make({ stream: () => Stream.make<Array<ChatModel.StreamPart>>({ _tag: "TextDelta", text: "partial" }) })
      )
      const error = yield* Effect.flip(Agent.run({ messages: [user("hi")], tools: registry }).pipe(Effect.provide(cut)))
      assert.strictEqual(error.reason, "model")
      assert.strictEqual((error.error as ChatModel.ChatModelError).reason, "transport")
    }).pipe(Effect.provide(services)))

  it.effect("a sink that dies loses nothing on the stream (the executor logs the sink's failure)", () =>
    Effect.gen(function*() {
      const dying = Layer.succeed(EventSink.EventSink, EventSink.EventSink.of({ emit: () => Effect.die("sink down") }))
      const events = yield* Agent.stream({ messages: [user("2+3")], tools: registry }).pipe(
        Stream.runCollect,
        Effect.provide(dying)
      )
      assert.deepStrictEqual(events.map((e) => e.sequence), events.map((_, i) => i))
      assert.strictEqual(events.at(-1)!._tag, "agent.finished")
      assert.strictEqual((events.at(-1) as ToolEvent.AgentFinished).text, "5")
    }).pipe(Effect.provide(Layer.merge(
      ChatModel.scripted([ChatModel.callTools([["c1", "add", { a: 2, b: 3 }]]), ChatModel.answer("5")]),
      services
    ))))

  it.effect("tool call arguments in agent.tool_call are redacted per the tool's policy", () =>
    Effect.gen(function*() {
      const login = Tool.make("login", {
        description: "Logs in.",
        input: Schema.Struct({ user: Schema.String, password: Schema.String }),
        safety: { redact: { keys: ["password"] } },
        handler: () => Effect.succeed("ok")
      })
      const tools = yield* ToolRegistry.make([login])
      const events = yield* Stream.runCollect(Agent.stream({ messages: [user("log in")], tools }))
      const decided = events.find((e): e is ToolEvent.AgentToolCall => e._tag === "agent.tool_call")!
      assert.strictEqual(decided.arguments, "{\"user\":\"ada\",\"password\":\"[redacted]\"}")
      assert.notInclude(JSON.stringify(events), "hunter22")
    }).pipe(Effect.provide(Layer.merge(
      ChatModel.scripted([
        ChatModel.callTools([["c1", "login", "{\"user\":\"ada\",\"password\":\"hunter22\"}"]]),
        ChatModel.answer("in")
      ]),
      services
    ))))
})
