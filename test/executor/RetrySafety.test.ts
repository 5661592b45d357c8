/**
 * What a retry schedule may run again, by what the tool declares (`Tool.retrySafety`):
 * an idempotent tool retries every retryable failure, a timeout too; a keyed tool that is not
 * idempotent retries only a `ToolTransient` its handler declares (it says the effect did not
 * happen), never a timeout (its attempt may have applied the effect downstream): the timeout is
 * reported "may or may not have completed", repairable, and the handler ran once.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Schema } from "effect"
import { TestClock } from "effect/testing"
import {
  EventSink,
  Executor,
  Tool,
  ToolCallContext,
  ToolError,
  ToolRegistry,
  ToolResult,
  ToolServices
} from "../../src/index.ts"
import type { Safety, ToolEvent } from "../../src/index.ts"

const call = (id: string, name: string, args: unknown = {}) => ({ id, name, arguments: args })
const test = ToolServices.layerTest({ runId: "run-1", threadId: "thread-1" })

/** A write with a 1 s timeout and 3 attempts; its handler does `behave(attempt)` and records the key it saw. */
const makeWrite = (
  options: {
    readonly safety: Safety.Safety
    readonly keyed: boolean
    readonly behave: (attempt: number) => Effect.Effect<string, ToolError.ToolError>
  }
) => {
  const probe = { runs: 0, keys: [] as Array<string | undefined> }
  const tool = Tool.make("write", {
    description: "Writes.",
    input: Schema.Struct({ id: Schema.String }),
    safety: options.safety,
    ...(options.keyed ? { idempotency: ({ id }: { readonly id: string }) => id } : {}),
    timeout: "1 second",
    retry: Executor.backoff({ base: "10 millis", maxAttempts: 3, jitter: false }),
    services: [ToolCallContext.ToolCallContext],
    handler: () =>
      Effect.flatMap(ToolCallContext.ToolCallContext, (ctx) => {
        probe.keys.push(ctx.idempotencyKey)
        return options.behave(++probe.runs)
      })
  })
  return { tool, probe }
}

/** Runs one call of `tool` to its end on the test clock: its result and its events' tags. */
const runOnce = (tool: Tool.Any) =>
  Effect.gen(function*() {
    const executor = yield* Executor.make(yield* ToolRegistry.make([tool]))
    const fiber = yield* Effect.forkChild(executor.run(call("c1", "write", { id: "order-1" })))
    for (let i = 0; i < 50; i++) yield* TestClock.adjust(100)
    const result = yield* Fiber.join(fiber)
    const events = yield* EventSink.EventLog.use((log) => log.all)
    return { result, events }
  })

const failedOf = (events: ReadonlyArray<ToolEvent.Event>) =>
  events.find((e): e is ToolEvent.ToolFailed => e._tag === "tool.failed")

describe("retry safety", () => {
  it.effect("a keyed non-idempotent tool's timeout is not retried: the handler ran once, 'may or may not have completed'", () =>
    Effect.gen(function*() {
      const { probe, tool } = makeWrite({ safety: { access: "write" }, keyed: true, behave: () => Effect.never })
      assert.strictEqual(Tool.retrySafety(tool), "keyed")
      const { events, result } = yield* runOnce(tool)
      assert.strictEqual(probe.runs, 1)
      assert.deepStrictEqual(probe.keys, ["order-1"])
      assert.strictEqual(result.error?._tag, "ToolTimeout")
      assert.strictEqual(result.error?.disposition, "repair")
      assert.include(ToolResult.textOf(result), "may or may not have completed")
      assert.deepStrictEqual(events.map((e) => e._tag), ["tool.started", "tool.failed"])
      assert.strictEqual(failedOf(events)?.reason, "timeout")
      assert.strictEqual(failedOf(events)?.idempotencyKey, "order-1")
    }).pipe(Effect.provide(test)))

  it.effect("a keyed tool's declared ToolTransient is retried: it says the effect did not happen", () =>
    Effect.gen(function*() {
      const { probe, tool } = makeWrite({
        safety: { access: "write" },
        keyed: true,
        behave: (attempt) => attempt < 3 ? Effect.fail(ToolError.retryable("busy, nothing charged")) : Effect.succeed("done")
      })
      const { events, result } = yield* runOnce(tool)
      assert.strictEqual(probe.runs, 3)
      assert.deepStrictEqual(probe.keys, ["order-1", "order-1", "order-1"])
      assert.strictEqual(result.isError, false)
      assert.deepStrictEqual(result.idempotency, { key: "order-1", replayed: false })
      assert.deepStrictEqual(events.map((e) => e._tag), ["tool.started", "tool.retrying", "tool.retrying", "tool.completed"])
    }).pipe(Effect.provide(test)))

  it.effect("a keyed tool's other retryable failure (a StoreFailed its handler raises) is not retried: it may follow the effect", () =>
    Effect.gen(function*() {
      const { probe, tool } = makeWrite({
        safety: { access: "write" },
        keyed: true,
        behave: () => Effect.fail(new ToolError.StoreFailed({ store: "ledger", operation: "write", cause: "busy", retryable: true }))
      })
      const { events, result } = yield* runOnce(tool)
      assert.strictEqual(probe.runs, 1)
      assert.strictEqual(result.error?._tag, "StoreFailed")
      assert.deepStrictEqual(events.map((e) => e._tag), ["tool.started", "tool.failed"])
    }).pipe(Effect.provide(test)))

  for (const keyed of [false, true]) {
    it.effect(`an idempotent${keyed ? ", keyed" : ""} tool's timeout is retried`, () =>
      Effect.gen(function*() {
        const { probe, tool } = makeWrite({
          safety: { access: "write", idempotent: true },
          keyed,
          behave: (attempt) => attempt < 3 ? Effect.never : Effect.succeed("done")
        })
        assert.strictEqual(Tool.retrySafety(tool), "idempotent")
        const { events, result } = yield* runOnce(tool)
        assert.strictEqual(probe.runs, 3)
        assert.strictEqual(result.isError, false)
        const retrying = events.filter((e): e is ToolEvent.ToolRetrying => e._tag === "tool.retrying")
        assert.deepStrictEqual(retrying.map((e) => [e.error._tag, e.error.disposition]), [
          ["ToolTimeout", "retry"],
          ["ToolTimeout", "retry"]
        ])
      }).pipe(Effect.provide(test)))
  }

  it("one rule decides: registration, the spec and the executor agree", () => {
    const timeout = new ToolError.ToolTimeout({ toolName: "write", timeoutMillis: 1, idempotent: true })
    const transient = ToolError.retryable("busy")
    const failure = ToolError.repairable("no")
    const store = new ToolError.StoreFailed({ store: "ledger", operation: "write", cause: "busy", retryable: true })
    const cases = [
      ["idempotent", [true, true, false, true]],
      ["keyed", [false, true, false, false]],
      ["none", [false, false, false, false]]
    ] as const
    for (const [safety, expected] of cases) {
      assert.deepStrictEqual([timeout, transient, failure, store].map((e) => Tool.mayRetry(safety, e)), [...expected], safety)
    }
    const { tool: keyedWrite } = makeWrite({ safety: { access: "write" }, keyed: true, behave: () => Effect.never })
    const { tool: both } = makeWrite({ safety: { access: "write", idempotent: true }, keyed: true, behave: () => Effect.never })
    const { tool: plain } = makeWrite({ safety: { access: "write" }, keyed: false, behave: () => Effect.never })
    assert.deepStrictEqual(
      [keyedWrite, both, plain].map((t) => {
        const spec = Tool.spec(t)
        return spec._tag === "Success" ? spec.success.idempotency : undefined
      }),
      ["keyed", "idempotent", "none"]
    )
    // a schedule on a tool that could never retry anything is refused at registration
    const refused = ToolRegistry.makeResult([plain])
    assert.deepStrictEqual(refused._tag === "Failure" ? refused.failure.violations.map((v) => v._tag) : [], ["UnsafeRetry"])
  })
})
