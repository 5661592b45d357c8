/**
 * The call in flight when a runner stops: an idempotent tool (keyed or not) runs again, a keyed or
 * plain (non-idempotent, unkeyed) tool is not run again and is answered "may or may not have
 * completed": the rule of automatic retries after a timeout (`Tool.mayRunAgain`).
 * The runner is stopped by closing its scope while the tool's handler is inside its side effect
 * (after it applied it, before the activity's result is journaled), then a new runner is started
 * on the same SQLite file, as a restarted process would.
 */
import { afterAll, assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Layer, Scope, Stream } from "effect"
import { TestClock } from "effect/testing"
import { DurableAgent, Runner } from "../../src/durable/index.ts"
import { EventSink, Executor, StoreRegistry, ToolServices } from "../../src/index.ts"
import * as Idempotency from "../../src/runtime/internal/executor/Idempotency.ts"
import * as Stores from "../../src/stores/Stores.ts"
import * as Core from "./support/core.ts"

afterAll(Core.cleanup)

const user = (content: string) => [{ role: "user" as const, content }]

/** Runs `plan` as run `runId`, stops the runner inside `tool`'s side effect, then finishes it on a new runner. */
const interruptedRun = (plan: string, tool: string) =>
  Effect.gen(function*() {
    const counters = Core.makeCounters()
    const applied = yield* Deferred.make<void>()
    const hooks: Core.Hooks = {
      afterApply: (name) => name === tool ? Effect.andThen(Deferred.succeed(applied, undefined), Effect.never) : Effect.void
    }
    const agent = DurableAgent.make({ name: "semantics", tools: Core.makeTools(counters, hooks), pollInterval: "20 millis" })
    const filename = Core.tempFile("semantics")
    const stores = Stores.layerSqlite({ filename: `${filename}.stores` })
    const engine = () => Runner.layerSqlite({ filename, pollInterval: "50 millis", lockExpiration: "2 seconds", shutdownTimeout: "50 millis" })

    // first process: stopped inside the side effect
    const first = yield* Scope.make()
    const context = yield* Layer.buildWithScope(Core.runner(agent, engine(), counters, stores), first)
    yield* Effect.provide(agent.start("run", user(plan)), context)
    yield* Deferred.await(applied)
    const modelBefore = counters.get("model")
    yield* Scope.close(first, Exit.void)
    hooks.afterApply = undefined

    // second process: resumes the run by itself
    const result = yield* Effect.provide(
      Effect.gen(function*() {
        const result = yield* agent.result("run")
        const events = Array.from(yield* Stream.runCollect(agent.events("run")))
        return { result, events }
      }),
      Core.runner(agent, engine(), counters, stores)
    )
    return { ...result, counters, modelBefore }
  }).pipe(Effect.scoped)

const textOf = (result: { readonly content: ReadonlyArray<{ readonly type: string; readonly text?: string }> }) =>
  result.content.map((b) => b.text ?? "").join("")

describe("the call in flight when the runner stops", () => {
  it.live("a plain (non-idempotent, unkeyed) tool is not run again: the model reads 'may or may not have completed'", () =>
    Effect.gen(function*() {
      const { counters, events, modelBefore, result } = yield* interruptedRun("plan: read_value,plain_write", "plain_write")
      assert.strictEqual(counters.get("plain_write:0-1"), 1, "applied once")
      assert.strictEqual(counters.get("read_value"), 1, "the completed sibling call is not run again")
      assert.strictEqual(modelBefore, 1)
      assert.strictEqual(counters.get("model"), 2, "turn 0 is not asked again")
      const answer = result.results.find((r) => r.toolCallId === "0-1")!
      assert.isTrue(answer.isError)
      assert.strictEqual(answer.error?._tag, "OutcomeUnknown")
      assert.match(textOf(answer), /may or may not have completed/)
      const failed = events.find((e) => e._tag === "tool.failed")
      assert.strictEqual(failed?._tag === "tool.failed" ? failed.outcome : undefined, "unknown")
      assert.strictEqual(result.reason, "final_answer")
    }), 30_000)

  it.live("a keyed tool is not run again without a stored result: outcome unknown", () =>
    Effect.gen(function*() {
      const { counters, events, result } = yield* interruptedRun("plan: keyed_write", "keyed_write")
      assert.strictEqual(counters.get("keyed_write:k0"), 1, "applied once")
      const answer = result.results[0]!
      assert.isTrue(answer.isError)
      assert.strictEqual(answer.error?._tag, "OutcomeUnknown")
      assert.match(textOf(answer), /may or may not have completed/)
      const failed = events.find((e) => e._tag === "tool.failed")
      assert.strictEqual(failed?._tag === "tool.failed" ? failed.outcome : undefined, "unknown")
    }), 30_000)

  it.live("an idempotent tool simply runs again", () =>
    Effect.gen(function*() {
      const { counters, result } = yield* interruptedRun("plan: read_value", "read_value")
      assert.strictEqual(counters.get("read_value"), 2)
      assert.isFalse(result.results[0]!.isError)
      assert.strictEqual(result.text, "done: value of 0-0")
    }), 30_000)

  it.live("an idempotent keyed tool runs again too (idempotent wins, as for retries), under the activity's claim", () =>
    Effect.gen(function*() {
      const { counters, result } = yield* interruptedRun("plan: keyed_read", "keyed_read")
      assert.strictEqual(counters.get("keyed_read:k0"), 2)
      assert.isFalse(result.results[0]!.isError)
      assert.strictEqual(result.text, "done: read k0")
    }), 30_000)
})


describe("Idempotency under a durable claim (the keyed rule, unit level)", () => {
  const keyed = (counters: Core.Counters) => Core.makeTools(counters)
  const call = { id: "c1", name: "keyed_write", arguments: { id: "k0" } }
  const claimKey = Idempotency.storageKey("keyed_write", "k0")

  it.effect("a re-run that finds its own claim and no result answers 'outcome unknown' at once (no lease wait)", () =>
    Effect.gen(function*() {
      const counters = Core.makeCounters()
      const executor = yield* Executor.make(keyed(counters))
      // the dead first run's claim, still within its 30 s lease
      const claims = yield* StoreRegistry.StoreRegistry.use((s) => s.claims("idempotency"))
      assert.isTrue(yield* claims.acquire(claimKey, "activity-key", 30_000))
      const fiber = yield* Effect.forkChild(
        executor.run(call, { durable: { owner: "activity-key", resumed: true } })
      )
      yield* TestClock.adjust("1 second")
      const done = fiber.pollUnsafe()
      assert.isDefined(done, "answered without waiting out the lease")
      const result = yield* Fiber.join(fiber)
      assert.isTrue(result.isError)
      assert.strictEqual(result.error?._tag, "OutcomeUnknown")
      assert.strictEqual(result.error?.message, "keyed_write: the process running this call stopped before its result was recorded; it may or may not have completed")
      assert.strictEqual(counters.get("keyed_write:k0"), 0)
      // the executor's own tool.failed says so (no durable run patches it)
      const failed = (yield* EventSink.EventLog.use((log) => log.all)).find((e) => e._tag === "tool.failed")
      assert.strictEqual(failed?._tag === "tool.failed" ? failed.outcome : undefined, "unknown")
    }).pipe(Effect.provide(ToolServices.layerTest())))

  it.effect("a re-run that finds the key's stored result replays it without running", () =>
    Effect.gen(function*() {
      const counters = Core.makeCounters()
      const executor = yield* Executor.make(keyed(counters))
      const first = yield* executor.run(call)
      assert.isFalse(first.isError)
      const again = yield* executor.run({ ...call, id: "c2" }, { durable: { owner: "activity-key", resumed: true } })
      assert.deepStrictEqual(again.idempotency, { key: "k0", replayed: true })
      assert.strictEqual(counters.get("keyed_write:k0"), 1)
    }).pipe(Effect.provide(ToolServices.layerTest())))

  it.effect("a first run under a durable claim runs the handler and stores the result", () =>
    Effect.gen(function*() {
      const counters = Core.makeCounters()
      const executor = yield* Executor.make(keyed(counters))
      const result = yield* executor.run(call, { durable: { owner: "activity-key", resumed: false } })
      assert.deepStrictEqual(result.idempotency, { key: "k0", replayed: false })
      assert.strictEqual(counters.get("keyed_write:k0"), 1)
    }).pipe(Effect.provide(ToolServices.layerTest())))
})
