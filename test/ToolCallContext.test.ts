/**
 * The handler context: a handler reads its call (id, canonical name, attempt,
 * idempotency key, turn) and the attempt's abort signal from a hidden service,
 * which never reaches a schema; `ToolServices.layerTest` gives a fixed one for
 * direct handler tests; middleware sees the same call.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Result, Schema } from "effect"
import { TestClock } from "effect/testing"
import {
  Executor,
  Middleware,
  RunContext,
  Tool,
  ToolCallContext,
  ToolError,
  ToolRegistry,
  ToolServices
} from "../src/index.ts"

const call = (id: string, name: string, args: unknown = {}) => ({ id, name, arguments: args })
const test = ToolServices.layerTest({ runId: "run-1", threadId: "thread-1" })

type Seen = Omit<ToolCallContext.ToolCallInfo, "abortSignal">
const snapshot = (ctx: ToolCallContext.ToolCallInfo): Seen => ({
  toolCallId: ctx.toolCallId,
  toolName: ctx.toolName,
  attempt: ctx.attempt,
  idempotencyKey: ctx.idempotencyKey,
  turn: ctx.turn
})

describe("ToolCallContext", () => {
  it.effect("a handler reads its call id, canonical name, attempt, key and turn; retries see the next attempt", () =>
    Effect.gen(function*() {
      const seen: Array<Seen> = []
      const send = Tool.make("send_email", {
        description: "Sends an email once per message id.",
        input: Schema.Struct({ messageId: Schema.String }),
        safety: { access: "network" },
        idempotency: ({ messageId }) => `msg:${messageId}`,
        retry: Executor.backoff({ base: "10 millis", maxAttempts: 3, jitter: false }),
        services: [ToolCallContext.ToolCallContext],
        handler: () =>
          Effect.gen(function*() {
            const ctx = yield* ToolCallContext.ToolCallContext
            seen.push(snapshot(ctx))
            return ctx.attempt < 2 ? yield* ToolError.retryable("smtp busy") : "sent"
          })
      })
      const executor = yield* Executor.make(yield* ToolRegistry.make([send]))
      const fiber = yield* Effect.forkChild(
        executor.run(call("call_7", "send_email", { messageId: "m1" })).pipe(RunContext.withTurn(3))
      )
      for (let i = 0; i < 10; i++) {
        yield* Effect.yieldNow
        yield* TestClock.adjust(10)
      }
      const result = yield* Fiber.join(fiber)
      assert.strictEqual(result.value, "sent")
      assert.deepStrictEqual(seen, [
        { toolCallId: "call_7", toolName: "send_email", attempt: 1, idempotencyKey: "msg:m1", turn: 3 },
        { toolCallId: "call_7", toolName: "send_email", attempt: 2, idempotencyKey: "msg:m1", turn: 3 }
      ])
    }).pipe(Effect.provide(test)))

  it.effect("an imported tool with a foreign name sees its canonical name", () =>
    Effect.gen(function*() {
      const imported = Result.getOrThrow(Tool.fromJsonSchema("math.factorial", {
        description: "n!",
        inputSchema: { type: "object", properties: { n: { type: "integer" } }, required: ["n"] },
        services: [ToolCallContext.ToolCallContext],
        handler: () => Effect.map(ToolCallContext.current, (ctx) => ctx.toolName)
      }))
      const executor = yield* Executor.make(yield* ToolRegistry.make([imported]))
      const result = yield* executor.run(call("c1", "math_factorial", { n: 3 }))
      assert.strictEqual(result.value, "math_factorial")
    }).pipe(Effect.provide(test)))

  it.effect("the abort signal aborts when the attempt times out; the next attempt gets a fresh one", () =>
    Effect.gen(function*() {
      const signals: Array<AbortSignal> = []
      const fetchy = Tool.make("fetch_page", {
        description: "Hangs on the first attempt.",
        input: Schema.Struct({}),
        timeout: "1 second",
        safety: { access: "network", idempotent: true },
        retry: Executor.backoff({ base: "10 millis", maxAttempts: 2, jitter: false }),
        services: [ToolCallContext.ToolCallContext],
        handler: () =>
          Effect.gen(function*() {
            const { abortSignal, attempt } = yield* ToolCallContext.ToolCallContext
            signals.push(abortSignal)
            if (attempt === 1) return yield* Effect.never
            return "page"
          })
      })
      const executor = yield* Executor.make(yield* ToolRegistry.make([fetchy]))
      const fiber = yield* Effect.forkChild(executor.run(call("c1", "fetch_page")))
      for (let i = 0; i < 30; i++) {
        yield* Effect.yieldNow
        yield* TestClock.adjust(100)
      }
      const result = yield* Fiber.join(fiber)
      assert.strictEqual(result.value, "page")
      assert.lengthOf(signals, 2)
      assert.isTrue(signals[0]!.aborted)
      assert.isFalse(signals[1]!.aborted)
      assert.notStrictEqual(signals[0], signals[1])
    }).pipe(Effect.provide(test)))

  it.effect("it never reaches a schema: the spec lists it as injected, the input schema is unchanged", () =>
    Effect.gen(function*() {
      const Input = Schema.Struct({ q: Schema.String })
      const withContext = Tool.make("search", {
        description: "Searches.",
        input: Input,
        services: [ToolCallContext.ToolCallContext],
        handler: () => Effect.map(ToolCallContext.current, (ctx) => ctx.toolCallId)
      })
      const without = Tool.make("search", { description: "Searches.", input: Input, handler: () => Effect.succeed("") })
      const a = Result.getOrThrow(Tool.spec(withContext))
      const b = Result.getOrThrow(Tool.spec(without))
      assert.deepStrictEqual(a.inputSchema, b.inputSchema)
      assert.deepStrictEqual(a.injected, ["tinyagents/ToolCallContext"])
      assert.notInclude(JSON.stringify(a.inputSchema), "ToolCallContext")
    }))

  it.effect("ToolServices.layerTest provides a fixed one for calling a handler directly", () =>
    Effect.gen(function*() {
      const tool = Tool.make("who", {
        description: "Says which call it is.",
        input: Schema.Struct({}),
        services: [ToolCallContext.ToolCallContext],
        handler: () => Effect.map(ToolCallContext.current, snapshot)
      })
      const direct = yield* tool.handler({}).pipe(
        Effect.provide(ToolServices.layerTest({ turn: 2 }, { toolCallId: "fixed", idempotencyKey: "k" }))
      )
      assert.deepStrictEqual(direct, { toolCallId: "fixed", toolName: "test_tool", attempt: 1, idempotencyKey: "k", turn: 2 })
    }))

  it.effect("middleware sees the same call (the context spans the whole call)", () =>
    Effect.gen(function*() {
      const seen: Array<string> = []
      const watch = Middleware.make({
        name: "watch",
        before: (inv) => Effect.map(ToolCallContext.current, (ctx) => (seen.push(`${ctx.toolCallId}/${ctx.toolName}`), inv))
      })
      const tool = Tool.make("noop", { description: "Nothing.", input: Schema.Struct({}), handler: () => Effect.void })
      const executor = yield* Executor.make(yield* ToolRegistry.make([tool]), { middleware: [watch] })
      yield* executor.runBatch([call("a", "noop"), call("b", "noop")])
      assert.deepStrictEqual(seen, ["a/noop", "b/noop"])
    }).pipe(Effect.provide(test)))
})
