import { assert, describe, it } from "@effect/vitest"
import { Cause, Deferred, Effect, Exit, Fiber, Layer, Schema } from "effect"
import { TestClock } from "effect/testing"
import { Agent, ChatModel, EventSink, Tool, ToolError, ToolRegistry, ToolResult, ToolServices } from "../src/index.ts"
import type { ToolEvent } from "../src/index.ts"

const add = Tool.make("add", {
  description: "Adds two integers.",
  input: Schema.Struct({ a: Schema.Int, b: Schema.Int }),
  safety: { access: "read", idempotent: true },
  handler: ({ a, b }) => Effect.succeed(a + b)
})
const wait = Tool.make("wait", {
  description: "Waits `ms` milliseconds.",
  input: Schema.Struct({ ms: Schema.Int }),
  safety: { access: "read", idempotent: true },
  handler: ({ ms }) => Effect.as(Effect.sleep(ms), `waited ${ms}`)
})
const crash = Tool.make("crash", {
  description: "Dies.",
  input: Schema.Struct({}),
  handler: () => Effect.die(new Error("disk on fire"))
})
const finish = Tool.make("submit", {
  description: "Submits the final answer; ends the run.",
  input: Schema.Struct({ answer: Schema.String }),
  returnDirect: true,
  handler: ({ answer }) => Effect.succeed(answer)
})

const registry = ToolRegistry.makeResult([add, wait, crash, finish]).pipe((r) => {
  if (r._tag === "Failure") throw r.failure
  return r.success
})

const user = (content: string): ChatModel.Message => ({ role: "user", content })
const layer = (turns: ReadonlyArray<ChatModel.ScriptedTurn>) =>
  Layer.merge(ChatModel.scripted(turns), ToolServices.layerTest({ runId: "agent-run" }))
const eventTags = EventSink.EventLog.use((log) => log.all).pipe(
  Effect.map((events) => events.map((e: ToolEvent.Event) => e._tag))
)

/** Every assistant tool call id is answered exactly once, in the next message, in order. */
const assertEveryCallAnswered = (transcript: ReadonlyArray<ChatModel.Message>) => {
  transcript.forEach((message, i) => {
    if (message.role === "assistant" && message.toolCalls.length > 0) {
      const next = transcript[i + 1]
      assert.strictEqual(next?.role, "tool", `message ${i} is answered`)
      if (next?.role === "tool") {
        assert.deepStrictEqual(next.results.map((r) => r.toolCallId), message.toolCalls.map((c) => c.id))
      }
    }
  })
}

describe("Agent.run", () => {
  it.effect("final answer after a tool turn: transcript, results, usage, events", () =>
    Effect.gen(function*() {
      const result = yield* Agent.run({ system: "be brief", messages: [user("2+3?")], tools: registry })
      assert.strictEqual(result.reason, "final_answer")
      assert.strictEqual(result.text, "5")
      assert.strictEqual(result.turns, 2)
      assert.deepStrictEqual(result.transcript.map((m) => m.role), ["system", "user", "assistant", "tool", "assistant"])
      assert.deepStrictEqual(result.results.map((r) => r.value), [5])
      assert.deepStrictEqual(result.usage, { inputTokens: 20, outputTokens: 7 })
      assertEveryCallAnswered(result.transcript)
      assert.deepStrictEqual(yield* eventTags, [
        "agent.turn_started",
        "agent.model_responded",
        "tool.started",
        "tool.completed",
        "agent.turn_started",
        "agent.model_responded",
        "agent.finished"
      ])
    }).pipe(Effect.provide(layer([
      { ...ChatModel.callTools([["c1", "add", "{\"a\":2,\"b\":3}"]]), usage: { inputTokens: 10, outputTokens: 5 } },
      (request) => {
        const last = request.messages.at(-1)
        const text = last?.role === "tool" ? ToolResult.textOf(last.results[0]!) : "?"
        return { text, toolCalls: [], usage: { inputTokens: 10, outputTokens: 2 } }
      }
    ]))))

  it.effect("max turns: stops after maxTurns model turns", () =>
    Effect.gen(function*() {
      const result = yield* Agent.run({ messages: [user("loop")], tools: registry, maxTurns: 2 })
      assert.strictEqual(result.reason, "max_turns")
      assert.strictEqual(result.turns, 2)
      assert.lengthOf(result.results, 2)
    }).pipe(Effect.provide(layer([
      ChatModel.callTools([["c1", "add", { a: 1, b: 1 }]]),
      ChatModel.callTools([["c2", "add", { a: 1, b: 1 }]]),
      ChatModel.answer("never reached")
    ]))))

  it.effect("repair round trip: an invalid call gets an error result; the model fixes it next turn", () =>
    Effect.gen(function*() {
      const result = yield* Agent.run({ messages: [user("add")], tools: registry })
      assert.strictEqual(result.text, "done: 7")
      const [bad, good] = result.results
      assert.isTrue(bad!.isError)
      assert.strictEqual(bad!.error?._tag, "InvalidArguments")
      assert.strictEqual(ToolResult.textOf(bad!), "add: invalid arguments: at \"b\": Expected an integer, got \"4\"")
      assert.deepStrictEqual(good!.value, 7)
      assertEveryCallAnswered(result.transcript)
    }).pipe(Effect.provide(layer([
      ChatModel.callTools([["c1", "add", "{\"a\":3,\"b\":\"4\"}"]]),
      (request) => {
        const last = request.messages.at(-1)
        assert.strictEqual(last?.role, "tool")
        return ChatModel.callTools([["c2", "add", "{\"a\":3,\"b\":4}"]])
      },
      ChatModel.answer("done: 7")
    ]))))

  it.effect("an undeclared failure from untyped code does not end the run: the model reads the tool and the tag, never the message", () =>
    Effect.gen(function*() {
      class NotFound extends Error {
        readonly _tag = "NotFound"
      }
      // untyped code (an imported client, say) failing with an error the tool does not declare
      const untyped = (): Effect.Effect<string> => Effect.fail(new NotFound("row 7 of table secrets_v2")) as never
      const lookup = Tool.make("lookup", {
        description: "Looks a row up.",
        input: Schema.Struct({ id: Schema.Int }),
        safety: { access: "read" },
        handler: untyped
      })
      const tools = yield* ToolRegistry.make([lookup])
      const result = yield* Agent.run({ messages: [user("look up 7")], tools })
      assert.strictEqual(result.reason, "final_answer")
      assert.strictEqual(result.text, "it failed")
      const [failed] = result.results
      assert.strictEqual(failed!.error?._tag, "ToolFailure")
      assert.strictEqual(ToolResult.textOf(failed!), "lookup: failed with an error it does not declare (NotFound)")
      assert.notInclude(JSON.stringify(result.transcript), "secrets_v2")
      assertEveryCallAnswered(result.transcript)
    }).pipe(Effect.provide(layer([
      ChatModel.callTools([["c1", "lookup", "{\"id\":7}"]]),
      ChatModel.answer("it failed")
    ]))))

  it.effect("repair off: the same invalid call ends the run with a typed error, every call answered", () =>
    Effect.gen(function*() {
      const failed = yield* Effect.flip(Agent.run({ messages: [user("add")], tools: registry, repair: false }))
      assert.strictEqual(failed._tag, "AgentFailed")
      assert.strictEqual(failed.reason, "tool")
      assert.strictEqual(failed.error._tag, "InvalidArguments")
      assertEveryCallAnswered(failed.transcript)
    }).pipe(Effect.provide(layer([ChatModel.callTools([["c1", "add", "{\"a\":3,\"b\":\"4\"}"]])]))))

  it.effect("a fatal tool error ends the run with a typed error; siblings still answered", () =>
    Effect.gen(function*() {
      const failed = yield* Effect.flip(Agent.run({ messages: [user("go")], tools: registry }))
      assert.strictEqual(failed.reason, "tool")
      assert.strictEqual(failed.error._tag, "ToolDefect")
      assert.strictEqual(failed.error.message, "internal error in tool crash")
      assertEveryCallAnswered(failed.transcript)
      const tags = yield* eventTags
      assert.strictEqual(tags.at(-1), "agent.finished")
    }).pipe(Effect.provide(layer([ChatModel.callTools([["c1", "add", { a: 1, b: 2 }], ["c2", "crash", {}]])]))))

  it.effect("a model error ends the run with AgentFailed(model)", () =>
    Effect.gen(function*() {
      const failed = yield* Effect.flip(Agent.run({ messages: [user("hi")], tools: registry }))
      assert.strictEqual(failed.reason, "model")
      assert.strictEqual(failed.error._tag, "ChatModelError")
    }).pipe(Effect.provide(layer([]))))

  it.effect("selectTools hides tools per turn; a call to a hidden tool is refused, never run", () =>
    Effect.gen(function*() {
      const seen: Array<ReadonlyArray<string>> = []
      const result = yield* Agent.run({
        messages: [user("go")],
        tools: registry,
        selectTools: ({ turn }) => turn === 0 ? ["add"] : ["add", "submit"]
      })
      assert.strictEqual(result.results[0]!.error?._tag, "ToolNotAllowed")
      assert.include(ToolResult.textOf(result.results[0]!), "available tools: add")
      assert.strictEqual(result.reason, "return_direct")
      assert.strictEqual(result.text, "42")
      void seen
    }).pipe(Effect.provide(layer([
      (request) => {
        assert.deepStrictEqual(request.tools.map((t) => t.name), ["add"])
        return ChatModel.callTools([["c1", "crash", {}]])
      },
      (request) => {
        assert.deepStrictEqual(request.tools.map((t) => t.name), ["add", "submit"])
        return ChatModel.callTools([["c2", "submit", { answer: "42" }]])
      }
    ]))))

  it.effect("selectTools naming a tool the registry lacks: the run dies with UnknownToolNames naming it", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.exit(Agent.run({ messages: [user("go")], tools: registry, selectTools: () => ["ad"] }))
      assert.isTrue(Exit.isFailure(exit))
      if (Exit.isFailure(exit)) {
        const defect = Cause.squash(exit.cause)
        assert.instanceOf(defect, ToolRegistry.UnknownToolNames)
        assert.strictEqual((defect as ToolRegistry.UnknownToolNames).message, "unknown tool name \"ad\"; registered tools: add, wait, crash, submit")
      }
    }).pipe(Effect.provide(layer([]))))

  it.effect("cancellation mid-batch: started calls get their terminal event; the transcript answers every call id", () =>
    Effect.gen(function*() {
      const stop = yield* Deferred.make<void>()
      const fiber = yield* Effect.forkChild(
        Agent.run({ messages: [user("wait")], tools: registry, cancelWhen: Deferred.await(stop), concurrency: 2 })
      )
      for (let i = 0; i < 10; i++) {
        yield* Effect.yieldNow
        yield* TestClock.adjust(100)
      }
      yield* Deferred.succeed(stop, undefined)
      const result = yield* Fiber.join(fiber)
      assert.strictEqual(result.reason, "cancelled")
      assertEveryCallAnswered(result.transcript)
      // w1 finished at 100 ms, w3 then started; w4 never got a slot before the cancel.
      assert.deepStrictEqual(
        result.results.map((r) => [r.toolCallId, r.error === undefined ? "ok" : (r.error as ToolError.ToolCancelled).started]),
        [["w1", "ok"], ["w2", true], ["w3", true], ["w4", false]]
      )
      const events = yield* EventSink.EventLog.use((log) => log.all)
      const started = events.filter((e) => e._tag === "tool.started").map((e) => (e as ToolEvent.ToolStarted).toolCallId)
      const terminal = events.filter((e) => e._tag === "tool.completed" || e._tag === "tool.failed")
        .map((e) => (e as ToolEvent.ToolFailed).toolCallId)
      assert.deepStrictEqual([...started].sort(), [...terminal].sort())
      assert.strictEqual(events.at(-1)?._tag, "agent.finished")
    }).pipe(Effect.provide(layer([
      ChatModel.callTools([
        ["w1", "wait", { ms: 100 }],
        ["w2", "wait", { ms: 60_000 }],
        ["w3", "wait", { ms: 60_000 }],
        ["w4", "wait", { ms: 1 }]
      ]),
      ChatModel.answer("unreachable")
    ]))))
})
