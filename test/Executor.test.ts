import { assert, describe, it } from "@effect/vitest"
import { Cause, Context, Data, Effect, Exit, Fiber, Ref, Schema } from "effect"
import { TestClock } from "effect/testing"
import {
  Cancellation,
  EventSink,
  Executor,
  Middleware,
  StoreRegistry,
  Tool,
  ToolError,
  ToolRegistry,
  ToolResult,
  ToolServices
} from "../src/index.ts"
import type { ToolEvent } from "../src/index.ts"

const Text = Schema.Struct({ text: Schema.String })

const echo = Tool.make("echo", {
  description: "Echo text after `delay` ms.",
  input: Schema.Struct({ text: Schema.String, delay: Schema.optionalKey(Schema.Int) }),
  output: Text,
  safety: { access: "read", idempotent: true },
  handler: ({ text, delay }) => Effect.as(delay === undefined ? Effect.void : Effect.sleep(delay), { text })
})

/** Fails with a retryable error `failures` times, then succeeds. */
const flakyTool = (name: string, failures: number, idempotent = true) => {
  let calls = 0
  return Tool.make(name, {
    description: "Flaky.",
    input: Schema.Struct({}),
    safety: { access: idempotent ? "read" : "mutate", idempotent },
    // A retry schedule on a tool that is neither idempotent nor keyed is refused at registration.
    ...(idempotent ? { retry: Executor.backoff({ base: "100 millis", maxAttempts: 3, jitter: false }) } : {}),
    handler: () =>
      Effect.suspend(() => ++calls <= failures ? Effect.fail(ToolError.retryable(`flaky failure ${calls}`)) : Effect.succeed("ok"))
  })
}

const slowTool = (name: string, idempotent: boolean) =>
  Tool.make(name, {
    description: "Sleeps 10 s; times out after 1 s.",
    input: Schema.Struct({}),
    timeout: "1 second",
    safety: { access: idempotent ? "read" : "mutate", idempotent },
    handler: () => Effect.as(Effect.sleep("10 seconds"), "done")
  })

const boom = Tool.make("boom", {
  description: "Throws.",
  input: Schema.Struct({}),
  handler: () =>
    Effect.sync(() => {
      throw new Error("secret stack detail: password=hunter2")
    })
})

const badOutput = Tool.make("bad_output", {
  description: "Returns a value its output schema rejects.",
  input: Schema.Struct({}),
  output: Schema.Struct({ n: Schema.Number }),
  handler: () => Effect.succeed({ n: "x" } as unknown as { n: number })
})

const userFail = Tool.make("lookup", {
  description: "Fails with a user-facing error.",
  input: Schema.Struct({ key: Schema.String }),
  handler: ({ key }) => Effect.fail(ToolError.repairable(`no note called ${key}; try list_notes first`))
})

class NotFound extends Schema.TaggedError<NotFound>()("NotFound", { key: Schema.String }) {}
class Undeclared extends Data.TaggedError("Undeclared")<{ readonly secret: string }> {}
const declared = Tool.make("declared", {
  description: "Fails with a declared error, or an undeclared one.",
  input: Schema.Struct({ key: Schema.String }),
  failure: NotFound,
  handler: ({ key }): Effect.Effect<string, NotFound> =>
    key === "undeclared"
      // untyped code failing with an error the tool does not declare (a compile error when typed)
      ? Effect.fail(new Undeclared({ secret: "s3cr3t" })) as unknown as Effect.Effect<string, NotFound>
      : Effect.fail(new NotFound({ key }))
})

const all = [
  echo,
  flakyTool("flaky", 2),
  flakyTool("always_flaky", 99),
  flakyTool("flaky_mutating", 1, false),
  slowTool("slow_read", true),
  slowTool("slow_write", false),
  boom,
  badOutput,
  userFail,
  declared
] as const

const eventsOf = EventSink.EventLog.use((log) => log.all)
const tags = (events: ReadonlyArray<ToolEvent.Event>) => events.map((e) => e._tag)
const call = (id: string, name: string, args: unknown = {}) => ({ id, name, arguments: args })

/** Advances the test clock in steps so sleeps registered along the way also fire. */
const advance = (millis: number, step = 50) =>
  Effect.gen(function*() {
    for (let t = 0; t < millis; t += step) {
      yield* Effect.yieldNow
      yield* TestClock.adjust(step)
    }
    yield* Effect.yieldNow
  })

const setup = (options: Executor.Options = {}) =>
  Effect.gen(function*() {
    const registry = yield* ToolRegistry.make(all)
    return yield* Executor.make(registry, options)
  })

const test = ToolServices.layerTest({ runId: "run-1", threadId: "thread-1" })

describe("Executor.run", () => {
  it.effect("success: started then completed, with timing from Clock, call id kept", () =>
    Effect.gen(function*() {
      const executor = yield* setup()
      const fiber = yield* Effect.forkChild(executor.run(call("c1", "echo", "{\"text\":\"hi\",\"delay\":250}")))
      yield* advance(300)
      const result = yield* Fiber.join(fiber)
      assert.strictEqual(result.toolCallId, "c1")
      assert.strictEqual(result.name, "echo")
      assert.isFalse(result.isError)
      assert.deepStrictEqual(result.value, { text: "hi" })
      assert.strictEqual(ToolResult.textOf(result), "{\"text\":\"hi\"}")
      assert.strictEqual(result.elapsed, 250)
      const events = yield* eventsOf
      assert.deepStrictEqual(tags(events), ["tool.started", "tool.completed"])
      assert.deepStrictEqual(events.map((e) => e.sequence), [0, 1])
      for (const e of events) {
        assert.strictEqual(e.runId, "run-1")
        assert.strictEqual(e.threadId, "thread-1")
        if (e._tag.startsWith("tool.")) assert.strictEqual((e as ToolEvent.ToolEvent).toolCallId, "c1")
      }
      assert.strictEqual(events[1]!.timestamp - events[0]!.timestamp, 250)
    }).pipe(Effect.provide(test)))

  const rejections: ReadonlyArray<readonly [label: string, name: string, args: unknown, tag: string, text: string]> = [
    ["unknown tool", "rm_rf", "{}", "ToolNotFound", "unknown tool \"rm_rf\"; available tools: echo"],
    ["tool not advertised", "boom", "{}", "ToolNotAllowed", "tool \"boom\" is not available this turn"],
    ["malformed JSON", "echo", "{\"text\":", "MalformedArguments", "echo: malformed arguments"],
    ["invalid arguments", "echo", "{\"text\":1}", "InvalidArguments", "echo: invalid arguments: at \"text\""]
  ]
  for (const [label, name, args, tag, text] of rejections) {
    it.effect(`${label}: rejected before execution, error result keeps the call id`, () =>
      Effect.gen(function*() {
        const executor = yield* setup()
        const advertised = yield* ToolRegistry.advertise(executor.registry, ["echo"])
        const result = yield* executor.run(call("c9", name, args), { advertised })
        assert.strictEqual(result.toolCallId, "c9")
        assert.isTrue(result.isError)
        assert.strictEqual(result.error?._tag, tag)
        assert.include(ToolResult.textOf(result), text)
        const events = yield* eventsOf
        assert.deepStrictEqual(tags(events), ["tool.rejected"])
        assert.strictEqual((events[0] as ToolEvent.ToolRejected).error._tag, tag)
      }).pipe(Effect.provide(test)))
  }

  it.effect("repair off: a repairable error fails the run with its typed error", () =>
    Effect.gen(function*() {
      const executor = yield* setup({ repair: false })
      const error = yield* Effect.flip(executor.run(call("c1", "echo", "{\"text\":1}")))
      assert.strictEqual(error._tag, "InvalidArguments")
    }).pipe(Effect.provide(test)))

  it.effect("limits: per-run in continue mode tells the model to stop; error mode is fatal", () =>
    Effect.gen(function*() {
      const executor = yield* setup({ limits: { run: { max: 2 }, perTool: { lookup: { max: 1, mode: "error" } } } })
      yield* executor.run(call("c1", "echo", { text: "a" }))
      yield* executor.run(call("c2", "echo", { text: "b" }))
      const third = yield* executor.run(call("c3", "echo", { text: "c" }))
      assert.strictEqual(third.error?._tag, "ToolCallLimitExceeded")
      assert.strictEqual(third.error?.disposition, "repair")
      assert.include(ToolResult.textOf(third), "limit of 2 tool calls is reached")

      const perTool = yield* setup({ limits: { perTool: { lookup: { max: 1, mode: "error" } } } })
      yield* perTool.run(call("d1", "lookup", { key: "a" }))
      const fatal = yield* Effect.flip(perTool.run(call("d2", "lookup", { key: "b" })))
      assert.strictEqual(fatal._tag, "ToolCallLimitExceeded")
      assert.strictEqual(fatal.disposition, "fatal")
      const events = yield* eventsOf
      assert.strictEqual(tags(events).filter((t) => t === "tool.rejected").length, 2)
    }).pipe(Effect.provide(test)))

  it.effect("countReplayed: a call admitted elsewhere counts against the limits, emitting and running nothing", () =>
    Effect.gen(function*() {
      const executor = yield* setup({ limits: { run: { max: 2 }, perTool: { lookup: { max: 1 } } } })
      yield* executor.countReplayed("lookup")
      const perTool = yield* executor.run(call("c1", "lookup", { key: "a" }))
      assert.strictEqual(perTool.error?._tag, "ToolCallLimitExceeded")
      yield* executor.run(call("c2", "echo", { text: "a" }))
      const perRun = yield* executor.run(call("c3", "echo", { text: "b" }))
      assert.include(ToolResult.textOf(perRun), "limit of 2 tool calls is reached")
      assert.deepStrictEqual(tags(yield* eventsOf), ["tool.rejected", "tool.started", "tool.completed", "tool.rejected"])
    }).pipe(Effect.provide(test)))

  it.effect("retry then success: tool.retrying with attempt and delay from the schedule", () =>
    Effect.gen(function*() {
      const executor = yield* setup()
      const fiber = yield* Effect.forkChild(executor.run(call("c1", "flaky")))
      yield* advance(400)
      const result = yield* Fiber.join(fiber)
      assert.isFalse(result.isError)
      assert.strictEqual(result.value, "ok")
      const events = yield* eventsOf
      assert.deepStrictEqual(tags(events), ["tool.started", "tool.retrying", "tool.retrying", "tool.completed"])
      const retries = events.filter((e): e is ToolEvent.ToolRetrying => e._tag === "tool.retrying")
      assert.deepStrictEqual(retries.map((e) => [e.attempt, e.delay]), [[2, 100], [3, 200]])
      assert.strictEqual((events[3] as ToolEvent.ToolCompleted).attempt, 3)
    }).pipe(Effect.provide(test)))

  it.effect("retry exhausted: the last error is reported once, as a result the model can read", () =>
    Effect.gen(function*() {
      const executor = yield* setup()
      const fiber = yield* Effect.forkChild(executor.run(call("c1", "always_flaky")))
      yield* advance(400)
      const result = yield* Fiber.join(fiber)
      assert.isTrue(result.isError)
      assert.strictEqual(result.error?._tag, "ToolTransient")
      assert.strictEqual(ToolResult.textOf(result), "flaky failure 3")
      const events = yield* eventsOf
      assert.deepStrictEqual(tags(events), ["tool.started", "tool.retrying", "tool.retrying", "tool.failed"])
      const failed = events[3] as ToolEvent.ToolFailed
      assert.strictEqual(failed.disposition, "retry")
      assert.strictEqual(failed.attempt, 3)
    }).pipe(Effect.provide(test)))

  it.effect("a non-idempotent tool is never retried (it cannot declare retry); its transient failure is reported once", () =>
    Effect.gen(function*() {
      const refused = yield* Effect.flip(ToolRegistry.make([
        Tool.make("charge", {
          description: "Not idempotent.",
          input: Schema.Struct({}),
          retry: Executor.backoff({ maxAttempts: 3 }),
          handler: () => Effect.succeed("charged")
        })
      ]))
      assert.strictEqual(refused.violations[0]?._tag, "UnsafeRetry")
      const executor = yield* setup()
      const result = yield* executor.run(call("c1", "flaky_mutating"))
      assert.isTrue(result.isError)
      assert.deepStrictEqual(tags(yield* eventsOf), ["tool.started", "tool.failed"])
    }).pipe(Effect.provide(test)))

  it.effect("timeout of an idempotent tool is retryable; of a non-idempotent one, 'may or may not have completed'", () =>
    Effect.gen(function*() {
      const executor = yield* setup()
      const reads = yield* Effect.forkChild(executor.run(call("c1", "slow_read")))
      const writes = yield* Effect.forkChild(executor.run(call("c2", "slow_write")))
      yield* advance(1100)
      const read = yield* Fiber.join(reads)
      const write = yield* Fiber.join(writes)
      assert.strictEqual(read.error?._tag, "ToolTimeout")
      assert.strictEqual(read.error?.disposition, "retry")
      assert.strictEqual(ToolResult.textOf(read), "slow_read: timed out after 1000 ms")
      assert.strictEqual(write.error?.disposition, "repair")
      assert.strictEqual(ToolResult.textOf(write), "slow_write: timed out after 1000 ms; it may or may not have completed")
      const failed = (yield* eventsOf).filter((e): e is ToolEvent.ToolFailed => e._tag === "tool.failed")
      assert.deepStrictEqual(failed.map((e) => [e.toolCallId, e.reason, e.elapsed]), [["c1", "timeout", 1000], [
        "c2",
        "timeout",
        1000
      ]])
    }).pipe(Effect.provide(test)))

  it.effect("the timeout interrupts the handler", () =>
    Effect.gen(function*() {
      const interrupted = yield* Ref.make(false)
      const hang = Tool.make("hang", {
        description: "Hangs.",
        input: Schema.Struct({}),
        timeout: "1 second",
        handler: () => Effect.never.pipe(Effect.onInterrupt(() => Ref.set(interrupted, true)))
      })
      const executor = yield* Executor.make(yield* ToolRegistry.make([hang]))
      const fiber = yield* Effect.forkChild(executor.run(call("c1", "hang")))
      yield* advance(1100)
      yield* Fiber.join(fiber)
      assert.isTrue(yield* Ref.get(interrupted))
    }).pipe(Effect.provide(test)))

  it.effect("a defect is fatal; the model never sees its message, the event carries the full cause", () =>
    Effect.gen(function*() {
      const executor = yield* setup()
      const error = yield* Effect.flip(executor.run(call("c1", "boom")))
      assert.strictEqual(error._tag, "ToolDefect")
      assert.strictEqual(error.message, "internal error in tool boom")
      const events = yield* eventsOf
      assert.deepStrictEqual(tags(events), ["tool.started", "tool.failed"])
      const failed = events[1] as ToolEvent.ToolFailed
      assert.strictEqual(failed.disposition, "fatal")
      assert.include(Cause.pretty(failed.cause!), "secret stack detail")
      const batch = yield* Effect.flip(executor.runBatch([call("c2", "boom")]))
      assert.strictEqual(ToolResult.textOf(batch.results[0]!), "internal error in tool boom")
      assert.notInclude(JSON.stringify(batch.results), "hunter2")
    }).pipe(Effect.provide(test)))

  it.effect("output that fails its schema is a fatal InvalidOutput", () =>
    Effect.gen(function*() {
      const executor = yield* setup()
      const error = yield* Effect.flip(executor.run(call("c1", "bad_output")))
      assert.strictEqual(error._tag, "InvalidOutput")
      assert.include(error.message, "bad_output: output does not match its schema: at \"n\"")
    }).pipe(Effect.provide(test)))

  it.effect("a non-finite number is not valid output: it is never sent to the model as the string \"NaN\"", () =>
    Effect.gen(function*() {
      const nan = Tool.make("nan_output", {
        description: "Returns NaN where its schema says number.",
        input: Schema.Struct({}),
        output: Schema.Struct({ n: Schema.Number }),
        handler: () => Effect.succeed({ n: Number.NaN })
      })
      const executor = yield* Executor.make(yield* ToolRegistry.make([nan]))
      const error = yield* Effect.flip(executor.run(call("c1", "nan_output")))
      assert.strictEqual(error._tag, "InvalidOutput")
      assert.include(error.message, "nan_output: output does not match its schema: at \"n\"")
    }).pipe(Effect.provide(test)))

  it.effect("a handler's user-facing failure is repairable; declared failures render, undeclared ones are named by tag only", () =>
    Effect.gen(function*() {
      const executor = yield* setup()
      const user = yield* executor.run(call("c1", "lookup", { key: "x" }))
      assert.strictEqual(ToolResult.textOf(user), "no note called x; try list_notes first")
      const known = yield* executor.run(call("c2", "declared", { key: "k" }))
      assert.strictEqual(known.error?._tag, "ToolFailure")
      assert.deepStrictEqual((known.error as ToolError.ToolFailure).detail, { _tag: "NotFound", key: "k" })
      // an undeclared failure at run time does not end the run: a repairable result naming the tool and the tag
      const unknown = yield* executor.run(call("c3", "declared", { key: "undeclared" }))
      assert.isTrue(unknown.isError)
      assert.strictEqual(unknown.error?._tag, "ToolFailure")
      assert.strictEqual(unknown.error?.disposition, "repair")
      assert.strictEqual(ToolResult.textOf(unknown), "declared: failed with an error it does not declare (Undeclared)")
      assert.notInclude(JSON.stringify(unknown), "s3cr3t")
      // the event carries the full cause, for the application
      const failed = (yield* eventsOf).filter((e): e is ToolEvent.ToolFailed => e._tag === "tool.failed")
      assert.strictEqual(failed.at(-1)!.toolCallId, "c3")
      assert.strictEqual(failed.at(-1)!.disposition, "repair")
      const original = Cause.findErrorOption(failed.at(-1)!.cause!)
      assert.isTrue(original._tag === "Some" && original.value instanceof Undeclared)
      // with repair off it is raised, like any repairable error
      const strict = yield* setup({ repair: false })
      const raised = yield* Effect.flip(strict.run(call("c4", "declared", { key: "undeclared" })))
      assert.strictEqual(raised._tag, "ToolFailure")
    }).pipe(Effect.provide(test)))
})

describe("Executor.runBatch", () => {
  it.effect("settle: every call gets a result in call order; fatal errors raised after the batch", () =>
    Effect.gen(function*() {
      const executor = yield* setup()
      const calls = [call("a", "echo", { text: "1", delay: 30 }), call("b", "boom"), call("c", "echo", { text: "3" })]
      const fiber = yield* Effect.forkChild(Effect.flip(executor.runBatch(calls, { concurrency: 3 })))
      yield* advance(100, 10)
      const failed = yield* Fiber.join(fiber)
      assert.deepStrictEqual(failed.results.map((r) => [r.toolCallId, r.isError]), [["a", false], ["b", true], [
        "c",
        false
      ]])
      assert.deepStrictEqual(failed.errors.map((e) => e._tag), ["ToolDefect"])
    }).pipe(Effect.provide(test)))

  it.effect("fail-fast: the first fatal error interrupts the rest, which still get terminal events", () =>
    Effect.gen(function*() {
      const executor = yield* setup()
      // `boom` fails at once, so `c` (after it in call order) is never started.
      const calls = [call("a", "slow_read"), call("b", "boom"), call("c", "slow_write")]
      const failed = yield* Effect.flip(executor.runBatch(calls, { concurrency: 3, failurePolicy: "fail-fast" }))
      assert.deepStrictEqual(failed.results.map((r) => r.error?._tag), ["ToolCancelled", "ToolDefect", "ToolCancelled"])
      assert.deepStrictEqual(
        [failed.results[0]!, failed.results[2]!].map((r) => (r.error as ToolError.ToolCancelled).started),
        [true, false]
      )
      const events = yield* eventsOf
      const terminal = events.filter((e) => e._tag === "tool.failed") as Array<ToolEvent.ToolFailed>
      assert.deepStrictEqual(terminal.map((e) => [e.toolCallId, e.reason]).sort(), [["a", "cancelled"], [
        "b",
        "error"
      ]])
      assert.isFalse(events.some((e) => "toolCallId" in e && e.toolCallId === "c"))
    }).pipe(Effect.provide(test)))

  it.effect("cancellation mid-batch: started calls get tool.failed (cancelled) and a result; unstarted are cancelled without running", () =>
    Effect.gen(function*() {
      const aborted: Array<boolean> = []
      const watch = Tool.make("watch", {
        description: "Runs until cancelled, watching its AbortSignal.",
        input: Schema.Struct({}),
        services: [Cancellation.Cancellation],
        handler: () =>
          Effect.gen(function*() {
            const { signal } = yield* Cancellation.Cancellation
            signal.addEventListener("abort", () => aborted.push(true))
            return yield* Effect.never
          })
      })
      const executor = yield* Executor.make(yield* ToolRegistry.make([watch]))
      const fiber = yield* Effect.forkChild(
        executor.runBatch([call("a", "watch"), call("b", "watch"), call("c", "watch")], { concurrency: 2 })
      )
      yield* advance(100)
      yield* executor.runCancel.cancel("user pressed stop")
      const results = yield* Fiber.join(fiber)
      assert.deepStrictEqual(results.map((r) => [r.toolCallId, r.error?._tag]), [["a", "ToolCancelled"], [
        "b",
        "ToolCancelled"
      ], ["c", "ToolCancelled"]])
      assert.deepStrictEqual(results.map((r) => (r.error as ToolError.ToolCancelled).started), [true, true, false])
      assert.include(ToolResult.textOf(results[2]!), "cancelled before it started")
      const events = yield* eventsOf
      assert.deepStrictEqual(tags(events).sort(), ["tool.failed", "tool.failed", "tool.started", "tool.started"])
      assert.deepStrictEqual(aborted, [true, true])
    }).pipe(Effect.provide(test)))

  it.effect("a long batch of synchronous calls lets other fibers run: a cancellation from one lands before the batch ends", () =>
    Effect.gen(function*() {
      const executor = yield* setup()
      const calls = Array.from({ length: 5_000 }, (_, i) => call(`c${i}`, "echo", { text: "x" }))
      // Forked, not started: it first runs when the batch's workers let the scheduler go.
      yield* Effect.forkChild(executor.runCancel.cancel("enough"))
      const results = yield* executor.runBatch(calls, { concurrency: 2 })
      const ran = results.filter((r) => !r.isError).length
      assert.isAbove(ran, 0)
      assert.isBelow(ran, 1_000, "the workers yield between calls, not only at the end of the batch")
      const notStarted = results.filter((r) => r.error?._tag === "ToolCancelled" && !r.error.started)
      assert.strictEqual(ran + notStarted.length, calls.length)
    }).pipe(Effect.provide(test)))

  it.effect("interrupting the batch fiber interrupts every handler; started calls still get their terminal event", () =>
    Effect.gen(function*() {
      const executor = yield* setup()
      const fiber = yield* Effect.forkChild(
        executor.runBatch([call("a", "echo", { text: "x", delay: 5000 }), call("b", "echo", { text: "y", delay: 5000 })])
      )
      yield* advance(100)
      yield* Fiber.interrupt(fiber)
      const exit = yield* Fiber.await(fiber)
      assert.isTrue(Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause))
      const failed = (yield* eventsOf).filter((e): e is ToolEvent.ToolFailed => e._tag === "tool.failed")
      assert.deepStrictEqual(failed.map((e) => e.reason), ["cancelled", "cancelled"])
    }).pipe(Effect.provide(test)))

  it.effect("exclusive tools never overlap", () =>
    Effect.gen(function*() {
      let running = 0
      let peak = 0
      const exclusive = Tool.make("mutate", {
        description: "Exclusive.",
        input: Schema.Struct({}),
        exclusive: true,
        handler: () =>
          Effect.acquireUseRelease(
            Effect.sync(() => {
              running++
              peak = Math.max(peak, running)
            }),
            () => Effect.sleep(10),
            () => Effect.sync(() => void running--)
          )
      })
      const executor = yield* Executor.make(yield* ToolRegistry.make([exclusive]))
      const fiber = yield* Effect.forkChild(
        executor.runBatch(Array.from({ length: 5 }, (_, i) => call(`m${i}`, "mutate")), { concurrency: 5 })
      )
      yield* advance(100, 5)
      const results = yield* Fiber.join(fiber)
      assert.lengthOf(results, 5)
      assert.strictEqual(peak, 1)
    }).pipe(Effect.provide(test)))
})

describe("Executor middleware", () => {
  it.effect("ordering: first listed is outermost; before, around and after run in onion order", () =>
    Effect.gen(function*() {
      const log: Array<string> = []
      const named = (name: string) =>
        Middleware.make({
          name,
          before: (inv) => Effect.sync(() => (log.push(`${name}.before`), inv)),
          around: (inv, next) =>
            Effect.sync(() => log.push(`${name}.around>`)).pipe(
              Effect.andThen(next(inv)),
              Effect.tap(() => Effect.sync(() => log.push(`${name}.around<`)))
            ),
          after: (_, result) => Effect.sync(() => (log.push(`${name}.after`), result))
        })
      const executor = yield* setup({ middleware: [named("outer"), named("inner")] })
      yield* executor.run(call("c1", "echo", { text: "x" }))
      assert.deepStrictEqual(log, [
        "outer.before",
        "outer.around>",
        "inner.before",
        "inner.around>",
        "inner.around<",
        "inner.after",
        "outer.around<",
        "outer.after"
      ])
    }).pipe(Effect.provide(test)))

  it.effect("short-circuit: before returns a result and the handler never runs (one middleware, or a list)", () =>
    Effect.gen(function*() {
      let handled = 0
      const counted = Tool.make("counted", {
        description: "Counts calls.",
        input: Schema.Struct({}),
        handler: () => Effect.sync(() => ++handled)
      })
      const deny = Middleware.make({
        name: "deny",
        before: (inv) =>
          Effect.succeed(ToolResult.fromError(inv.call, new ToolError.ApprovalDenied({ toolName: inv.spec.name, reason: "no" })))
      })
      for (const middleware of [deny, [deny]]) {
        const executor = yield* Executor.make(yield* ToolRegistry.make([counted]), { middleware })
        const result = yield* executor.run(call("c1", "counted"))
        assert.strictEqual(handled, 0)
        assert.isTrue(result.isError)
        assert.include(ToolResult.textOf(result), "not approved: no")
      }
    }).pipe(Effect.provide(test)))

  it.effect("argument rewriting reaches the handler; around may call next many times", () =>
    Effect.gen(function*() {
      const upper = Middleware.make({
        name: "upper",
        before: (inv) =>
          Effect.succeed({ ...inv, input: { text: String((inv.input as { text: string }).text).toUpperCase() } })
      })
      const twice = Middleware.make({
        name: "twice",
        around: (inv, next) => Effect.andThen(next(inv), next(inv))
      })
      let runs = 0
      const counting = Middleware.make({
        name: "counting",
        around: (inv, next) => Effect.andThen(Effect.sync(() => runs++), next(inv))
      })
      const executor = yield* setup({ middleware: [upper, twice, counting] })
      const result = yield* executor.run(call("c1", "echo", { text: "shout" }))
      assert.deepStrictEqual(result.value, { text: "SHOUT" })
      assert.strictEqual(runs, 2)
    }).pipe(Effect.provide(test)))

  it.effect("a middleware's own failure is a fatal MiddlewareFailed naming it; tool errors pass through", () =>
    Effect.gen(function*() {
      const broken = Middleware.make({
        name: "broken_audit",
        after: () => Effect.die(new Error("audit sink unreachable"))
      })
      const passthrough = Middleware.make({ name: "passthrough", around: (inv, next) => next(inv) })
      const executor = yield* setup({ middleware: [passthrough, broken] })
      const error = yield* Effect.flip(executor.run(call("c1", "echo", { text: "x" })))
      assert.strictEqual(error._tag, "MiddlewareFailed")
      assert.strictEqual((error as ToolError.MiddlewareFailed).middleware, "broken_audit")
      assert.strictEqual(error.disposition, "fatal")
      const clean = yield* setup({ middleware: [passthrough] })
      const user = yield* clean.run(call("c2", "lookup", { key: "x" }))
      assert.strictEqual(user.error?._tag, "ToolFailure")
    }).pipe(Effect.provide(test)))
})

describe("Executor artifacts and redaction", () => {
  it.effect("a 1 MB output is stored whole; the model sees at most the bound; key in result and event; redacted keys nowhere", () =>
    Effect.gen(function*() {
      const big = Tool.make("dump", {
        description: "Returns a large blob.",
        input: Schema.Struct({ apiKey: Schema.String, size: Schema.Int }),
        safety: { access: "read", idempotent: true, redact: { keys: ["apiKey", "token"], patterns: [/sk-[a-z0-9]+/] } },
        handler: ({ size }) => Effect.succeed({ token: "tok-SECRET", note: "key sk-abc123 inside", blob: "x".repeat(size) })
      })
      const executor = yield* Executor.make(yield* ToolRegistry.make([big]))
      const result = yield* executor.run(call("c1", "dump", { apiKey: "k-SECRET", size: 1_000_000 }))
      const text = ToolResult.textOf(result)
      assert.isAtMost(text.length, 16_000)
      assert.lengthOf(result.artifacts, 1)
      const artifact = result.artifacts[0]!
      assert.strictEqual(artifact.key, "run-1/c1")
      assert.include(text, "is stored as artifact \"run-1/c1\"")
      assert.include(text, "characters omitted")
      assert.notInclude(text, "tok-SECRET")
      assert.notInclude(text, "sk-abc123")
      const stored = yield* (yield* StoreRegistry.store("artifacts")).get(artifact.key)
      assert.strictEqual(stored!.length, artifact.bytes)
      assert.isAbove(stored!.length, 1_000_000)
      assert.include(stored!, "tok-SECRET")
      const events = yield* eventsOf
      assert.deepStrictEqual(tags(events), ["tool.started", "tool.artifact_stored", "tool.completed"])
      assert.strictEqual((events[1] as ToolEvent.ToolArtifactStored).artifact.key, "run-1/c1")
      assert.deepStrictEqual((events[2] as ToolEvent.ToolCompleted).artifacts.map((a) => a.key), ["run-1/c1"])
      const serialised = JSON.stringify(events)
      for (const secret of ["k-SECRET", "tok-SECRET", "sk-abc123"]) assert.notInclude(serialised, secret)
    }).pipe(Effect.provide(test)))

  it.effect("small outputs stay inline; redaction still applies to model text and value", () =>
    Effect.gen(function*() {
      const small = Tool.make("whoami", {
        description: "Returns the user and a token.",
        input: Schema.Struct({}),
        safety: { access: "read", redact: { keys: ["token"] } },
        handler: () => Effect.succeed({ user: "ada", token: "t-1" })
      })
      const executor = yield* Executor.make(yield* ToolRegistry.make([small]))
      const result = yield* executor.run(call("c1", "whoami"))
      assert.lengthOf(result.artifacts, 0)
      assert.deepStrictEqual(result.value, { user: "ada", token: "[redacted]" })
      assert.notInclude(ToolResult.textOf(result), "t-1")
    }).pipe(Effect.provide(test)))
})

// ---------------------------------------------------------------------------
// invariant: random batches of succeeding, failing, slow and hanging tools
// ---------------------------------------------------------------------------

const Kind = Schema.Literals(["ok", "fail", "defect", "slow", "hang", "invalid"])
const Plan = Schema.Struct({
  kinds: Schema.Array(Kind).check(Schema.isMinLength(1), Schema.isMaxLength(12)),
  concurrency: Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 6 })),
  interruptAfter: Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 400 })),
  cancel: Schema.Boolean
})

describe("Executor invariants", () => {
  it.effect.prop("every call: exactly one result in order, one terminal event if started; concurrency never exceeds the bound", [
    Plan
  ], ([plan]) =>
    Effect.gen(function*() {
      let running = 0
      let peak = 0
      const track = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
        Effect.acquireUseRelease(
          Effect.sync(() => {
            running++
            peak = Math.max(peak, running)
          }),
          () => effect,
          () => Effect.sync(() => void running--)
        )
      const work = Tool.make("work", {
        description: "Behaves as told.",
        input: Schema.Struct({ kind: Kind }),
        timeout: "10 seconds",
        handler: ({ kind }) =>
          track(
            kind === "ok"
              ? Effect.succeed("done")
              : kind === "fail"
              ? Effect.fail(ToolError.repairable("nope"))
              : kind === "defect"
              ? Effect.die("kaboom")
              : kind === "slow"
              ? Effect.as(Effect.sleep(150), "slow")
              : Effect.never
          )
      })
      const executor = yield* Executor.make(yield* ToolRegistry.make([work]))
      const calls = plan.kinds.map((kind, i) => call(`c${i}`, "work", kind === "invalid" ? { kind: 1 } : { kind }))
      let finished = false
      const fiber = yield* Effect.forkChild(
        Effect.exit(executor.runBatch(calls, { concurrency: plan.concurrency })).pipe(
          Effect.ensuring(Effect.sync(() => void (finished = true)))
        )
      )
      yield* advance(plan.interruptAfter, 25)
      if (plan.cancel) yield* executor.runCancel.cancel("stop")
      // Hanging calls time out after 10 s each; with concurrency 1 they run one after another.
      for (let i = 0; i < 400 && !finished; i++) yield* advance(500, 500)
      assert.isTrue(finished, "the batch finished")
      const exit = yield* Fiber.join(fiber)
      const results = Exit.isSuccess(exit)
        ? exit.value
        : Cause.findErrorOption(exit.cause).pipe((o) => o._tag === "Some" ? o.value.results : [])
      assert.deepStrictEqual(results.map((r) => r.toolCallId), calls.map((c) => c.id))
      const events = yield* eventsOf
      yield* EventSink.EventLog.use((log) => log.clear)
      for (const c of calls) {
        const mine = events.filter((e) => "toolCallId" in e && e.toolCallId === c.id).map((e) => e._tag)
        const started = mine.filter((t) => t === "tool.started").length
        const terminal = mine.filter((t) => t === "tool.completed" || t === "tool.failed" || t === "tool.rejected").length
        assert.isAtMost(started, 1)
        if (started === 1) assert.strictEqual(terminal, 1, `${c.id}: ${mine.join(",")}`)
        else assert.isAtMost(terminal, 1)
      }
      assert.isAtMost(peak, plan.concurrency)
      assert.strictEqual(running, 0)
    }).pipe(Effect.provide(test)), { timeout: 60_000, arbitrary: { runs: 100 } })
})

describe("Executor middleware context", () => {
  it.effect("services a middleware provides around next reach inner layers and the handler", () =>
    Effect.gen(function*() {
      const Stage = Context.Reference<string>("test/Stage", { defaultValue: () => "outer" })
      let seenByInner = ""
      let seenByHandler = ""
      const probe = Tool.make("probe", {
        description: "Reads the stage.",
        input: Schema.Struct({}),
        handler: () => Effect.map(Stage, (stage) => void (seenByHandler = stage))
      })
      const narrow = Middleware.make({
        name: "narrow",
        around: (inv, next) => Effect.provideService(next(inv), Stage, "research")
      })
      const inner = Middleware.make({
        name: "inner",
        before: (inv) => Effect.map(Stage, (stage) => (seenByInner = stage, inv))
      })
      const executor = yield* Executor.make(yield* ToolRegistry.make([probe]), { middleware: [narrow, inner] })
      // The ambient value is in the context every layer starts with; `narrow` replaces it for `next`.
      yield* Effect.provideService(executor.run(call("c1", "probe")), Stage, "ambient")
      assert.strictEqual(seenByInner, "research")
      assert.strictEqual(seenByHandler, "research")
    }).pipe(Effect.provide(test)))
})

describe("Executor handler invocation", () => {
  it.effect("a handler that throws synchronously is a ToolDefect, not a crash", () =>
    Effect.gen(function*() {
      const thrower = Tool.make("thrower", {
        description: "Throws before returning an Effect.",
        input: Schema.Struct({}),
        handler: (): Effect.Effect<string> => {
          throw new Error("sync boom")
        }
      })
      const executor = yield* Executor.make(yield* ToolRegistry.make([thrower]))
      const error = yield* Effect.flip(executor.run(call("c1", "thrower")))
      assert.strictEqual(error._tag, "ToolDefect")
      assert.strictEqual(error.message, "internal error in tool thrower")
    }).pipe(Effect.provide(test)))

  it.effect("each retry invokes the handler again (work outside the returned Effect is repeated)", () =>
    Effect.gen(function*() {
      let invocations = 0
      const eager = Tool.make("eager", {
        description: "Decides eagerly, outside Effect.",
        input: Schema.Struct({}),
        safety: { idempotent: true },
        retry: Executor.backoff({ base: "10 millis", maxAttempts: 3, jitter: false }),
        handler: () => ++invocations < 3 ? Effect.fail(ToolError.retryable("not yet")) : Effect.succeed("ready")
      })
      const executor = yield* Executor.make(yield* ToolRegistry.make([eager]))
      const fiber = yield* Effect.forkChild(executor.run(call("c1", "eager")))
      yield* advance(100, 10)
      const result = yield* Fiber.join(fiber)
      assert.strictEqual(result.value, "ready")
      assert.strictEqual(invocations, 3)
    }).pipe(Effect.provide(test)))
})
