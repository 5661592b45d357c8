/**
 * The executor under faults, one scenario per defect of issue "Executor 2":
 * fail-fast leaking calls past `runBatch`, asynchronous and failing sinks,
 * run cancellation of `run` and of an already-cancelled executor, retry
 * declared on an unsafe tool, and the exclusive permit during backoff.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit, Fiber, Logger, Schema } from "effect"
import { TestClock } from "effect/testing"
import { Executor, Tool, ToolError, ToolRegistry, ToolResult } from "../../src/index.ts"
import type { ToolEvent } from "../../src/index.ts"
import { call, makeProbe, makeSink, services, snapshot, tools, violation } from "./support.ts"

const work = (id: string, args: Record<string, unknown>) => call(id, "work", args)
const sleep = (id: string, ms: number) => work(id, { kind: "sleep", ms })

/** Advances the test clock in steps so sleeps registered along the way also fire. */
const advance = (millis: number, step = 10) =>
  Effect.gen(function*() {
    for (let t = 0; t < millis; t += step) {
      for (let i = 0; i < 5; i++) yield* Effect.yieldNow
      yield* TestClock.adjust(step)
    }
    for (let i = 0; i < 5; i++) yield* Effect.yieldNow
  })

describe("fail-fast (real clock)", () => {
  it.live("runBatch returns only when no call of the batch runs or will start; results never change", () =>
    Effect.gen(function*() {
      const probe = makeProbe()
      const { offered, sink } = makeSink("sync")
      const executor = yield* Executor.make(yield* ToolRegistry.make(tools(probe)))
      const calls = [
        sleep("a", 10),
        sleep("b", 200),
        sleep("c", 200),
        work("d", { kind: "throw" }),
        sleep("e", 50),
        sleep("f", 50),
        sleep("g", 50)
      ]
      const exit = yield* Effect.exit(
        executor.runBatch(calls, { concurrency: 3, failurePolicy: "fail-fast" }).pipe(Effect.provide(services(sink)))
      )
      assert.isTrue(Exit.isFailure(exit))
      const failed = Cause.findErrorOption((exit as Exit.Failure<never, Executor.BatchFailed>).cause)
      assert.strictEqual(failed._tag, "Some")
      const { errors, results } = (failed as { value: Executor.BatchFailed }).value
      assert.deepStrictEqual(errors.map((e) => e._tag), ["ToolDefect"])
      // at return: nothing running, and the unstarted calls say so
      assert.strictEqual(probe.running, 0)
      const invocations = probe.invocations
      const before = snapshot(results)
      const events = offered.length
      assert.deepStrictEqual(results.map((r) => [r.toolCallId, r.error?._tag]), [
        ["a", undefined],
        ["b", "ToolCancelled"],
        ["c", "ToolCancelled"],
        ["d", "ToolDefect"],
        ["e", "ToolCancelled"],
        ["f", "ToolCancelled"],
        ["g", "ToolCancelled"]
      ])
      assert.deepStrictEqual(
        results.map((r) => r.error?._tag === "ToolCancelled" ? (r.error as ToolError.ToolCancelled).started : null),
        [null, true, true, null, false, false, false]
      )
      assert.isUndefined(violation(calls, offered, results))
      // later: no handler started, no event emitted, the results are the same
      yield* Effect.sleep("400 millis")
      assert.strictEqual(probe.invocations, invocations)
      assert.strictEqual(offered.length, events)
      assert.strictEqual(snapshot(results), before)
      assert.isTrue(Object.isFrozen(results))
      assert.isTrue(Object.isFrozen(errors))
    }))
})

describe("asynchronous and failing sinks", () => {
  it.effect("an emit that suspends loses and reorders nothing (fail-fast, concurrency 16)", () =>
    Effect.gen(function*() {
      const probe = makeProbe()
      const { offered, sink } = makeSink("async")
      const executor = yield* Executor.make(yield* ToolRegistry.make(tools(probe)))
      const calls = [
        sleep("a", 300),
        work("b", { kind: "fail" }),
        work("c", { kind: "throw" }),
        work("d", { kind: "throw" }),
        work("e", { kind: "ok" }),
        sleep("f", 300)
      ]
      const fiber = yield* Effect.forkChild(Effect.exit(
        executor.runBatch(calls, { concurrency: 16, failurePolicy: "fail-fast" }).pipe(Effect.provide(services(sink)))
      ))
      yield* advance(400)
      const exit = yield* Fiber.join(fiber)
      assert.isTrue(Exit.isFailure(exit))
      const { results } = (Cause.findErrorOption((exit as Exit.Failure<never, Executor.BatchFailed>).cause) as {
        value: Executor.BatchFailed
      }).value
      assert.isUndefined(violation(calls, offered, results))
      assert.deepStrictEqual(offered.map((e) => e.sequence), offered.map((_, i) => i))
      assert.strictEqual(probe.running, 0)
    }))

  it.effect("a sink that dies, throws or interrupts itself: calls complete, every event is offered once, the failure is logged", () =>
    Effect.gen(function*() {
      for (const kind of ["dies", "throws", "interrupts"] as const) {
        const probe = makeProbe()
        const { offered, sink } = makeSink(kind)
        const logged: Array<string> = []
        const logger = Logger.make((options) => void logged.push(`${options.logLevel}: ${String(options.message)}`))
        const executor = yield* Executor.make(yield* ToolRegistry.make(tools(probe)))
        const calls = Array.from({ length: 6 }, (_, i) => work(`c${i}`, { kind: i % 2 === 0 ? "ok" : "fail" }))
        const results = yield* executor.runBatch(calls, { concurrency: 3 }).pipe(
          Effect.provide(services(sink)),
          Effect.provide(Logger.layer([logger]))
        )
        assert.deepStrictEqual(results.map((r) => r.isError), [false, true, false, true, false, true], kind)
        assert.lengthOf(offered, 12, kind)
        assert.isUndefined(violation(calls, offered, results), kind)
        assert.isAbove(logged.length, 0, kind)
        assert.include(logged[0]!, "the event sink failed", kind)
      }
    }))
})

describe("run cancellation", () => {
  it.effect("runCancel.cancel interrupts a call started with executor.run", () =>
    Effect.gen(function*() {
      const probe = makeProbe()
      const { offered, sink } = makeSink("sync")
      const executor = yield* Executor.make(yield* ToolRegistry.make(tools(probe, "60 seconds")))
      const fiber = yield* Effect.forkChild(
        Effect.flip(executor.run(work("c1", { kind: "hang" }))).pipe(Effect.provide(services(sink)))
      )
      yield* advance(100)
      assert.strictEqual(probe.running, 1)
      yield* executor.runCancel.cancel("user pressed stop")
      yield* advance(20)
      assert.isTrue(fiber.pollUnsafe() !== undefined, "run returned after the cancel")
      const error = yield* Fiber.join(fiber)
      assert.strictEqual(error._tag, "ToolCancelled")
      assert.isTrue((error as ToolError.ToolCancelled).started)
      assert.strictEqual(probe.running, 0)
      assert.deepStrictEqual(offered.map((e) => [e._tag, (e as ToolEvent.ToolFailed).reason]), [
        ["tool.started", undefined],
        ["tool.failed", "cancelled"]
      ])
    }))

  it.effect("a batch or a run on an already-cancelled executor starts no handler", () =>
    Effect.gen(function*() {
      const probe = makeProbe()
      const { offered, sink } = makeSink("sync")
      const executor = yield* Executor.make(yield* ToolRegistry.make(tools(probe)))
      yield* executor.runCancel.cancel("stopped before the batch")
      const calls = Array.from({ length: 6 }, (_, i) => sleep(`c${i}`, 10))
      const fiber = yield* Effect.forkChild(
        executor.runBatch(calls, { concurrency: 3 }).pipe(Effect.provide(services(sink)))
      )
      yield* advance(50)
      const results = yield* Fiber.join(fiber)
      assert.strictEqual(probe.invocations, 0)
      assert.lengthOf(offered, 0)
      assert.deepStrictEqual(
        results.map((r): [string | undefined, boolean] => [r.error?._tag, (r.error as ToolError.ToolCancelled).started]),
        calls.map((): [string | undefined, boolean] => ["ToolCancelled", false])
      )
      assert.include(ToolResult.textOf(results[0]!), "cancelled before it started")
      const single = yield* Effect.flip(executor.run(sleep("c9", 10)).pipe(Effect.provide(services(sink))))
      assert.strictEqual(single._tag, "ToolCancelled")
      assert.strictEqual(probe.invocations, 0)
    }))
})

describe("retry safety", () => {
  it.effect("registration refuses retry on a tool that is neither idempotent nor keyed", () =>
    Effect.gen(function*() {
      const retry = Executor.backoff({ maxAttempts: 3 })
      const unsafe = Tool.make("charge_card", {
        description: "Charges a card.",
        input: Schema.Struct({ cents: Schema.Int }),
        safety: { access: "mutate" },
        retry,
        handler: () => Effect.succeed("charged")
      })
      const error = yield* Effect.flip(ToolRegistry.make([unsafe]))
      assert.deepStrictEqual(error.violations.map((v) => v._tag), ["UnsafeRetry"])
      assert.include(error.message, "charge_card")
      assert.include(error.message, "neither idempotent")
      const keyed = Tool.make("charge_card", {
        description: "Charges a card once per key.",
        input: Schema.Struct({ cents: Schema.Int, key: Schema.String }),
        safety: { access: "mutate" },
        idempotency: ({ key }) => key,
        retry,
        handler: () => Effect.succeed("charged")
      })
      const registry = yield* ToolRegistry.make([keyed])
      assert.deepStrictEqual(registry.names as ReadonlyArray<string>, ["charge_card"])
    }))

  it.effect("the exclusive permit is released during the retry backoff", () =>
    Effect.gen(function*() {
      let attempts = 0
      const flakyExclusive = Tool.make("sync_index", {
        description: "Exclusive, idempotent, fails once.",
        input: Schema.Struct({}),
        exclusive: true,
        safety: { access: "write", idempotent: true },
        retry: Executor.backoff({ base: "1 second", maxAttempts: 2, jitter: false }),
        handler: () =>
          Effect.suspend(() => ++attempts === 1 ? Effect.fail(ToolError.retryable("busy")) : Effect.succeed("indexed"))
      })
      const quick = Tool.make("touch", {
        description: "Exclusive and quick.",
        input: Schema.Struct({}),
        exclusive: true,
        safety: { access: "write", idempotent: true },
        handler: () => Effect.as(Effect.sleep(10), "touched")
      })
      const { offered, sink } = makeSink("sync")
      const executor = yield* Executor.make(yield* ToolRegistry.make([flakyExclusive, quick]))
      const fiber = yield* Effect.forkChild(
        executor.runBatch([call("a", "sync_index"), call("b", "touch")], { concurrency: 2 }).pipe(
          Effect.provide(services(sink))
        )
      )
      yield* advance(100)
      const touched = offered.find((e) => e._tag === "tool.completed" && e.toolCallId === "b")
      assert.isDefined(touched, "the quick exclusive call ran while the other one waited to retry")
      yield* advance(1000, 50)
      const results = yield* Fiber.join(fiber)
      assert.deepStrictEqual(results.map((r) => r.value), ["indexed", "touched"])
    }))
})
