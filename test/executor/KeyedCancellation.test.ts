/**
 * A keyed call that waits for a same-key call (same-key calls never overlap in a process) is a call
 * in flight like any other: cancelling the run or interrupting the batch stops it at once, and it
 * reports `tool.failed` with reason `cancelled` (one terminal event), never waiting out its own
 * timeout or retry schedule.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Schema } from "effect"
import { TestClock } from "effect/testing"
import {
  Cancellation,
  EventSink,
  Executor,
  Tool,
  ToolRegistry,
  ToolError,
  ToolResult,
  ToolServices
} from "../../src/index.ts"
import type { ToolEvent } from "../../src/index.ts"
import { violation } from "./support.ts"

const call = (id: string, name: string, args: unknown = {}) => ({ id, name, arguments: args })
const test = ToolServices.layerTest({ runId: "run-1", threadId: "thread-1" })

const How = ["runCancel.cancel", "Cancellation.cancelRun", "batch interrupted"] as const

/** A keyed write that hangs (1 s timeout, 3 attempts), and a tool that cancels the run after 10 ms. */
const makeTools = () => {
  const probe = { handlerRuns: 0 }
  const hang = Tool.make("hang", {
    description: "Hangs, once per key.",
    input: Schema.Struct({ key: Schema.String }),
    safety: { access: "write" },
    idempotency: ({ key }) => key,
    timeout: "1 second",
    retry: Executor.backoff({ base: "10 millis", maxAttempts: 3, jitter: false }),
    handler: () => Effect.suspend(() => (probe.handlerRuns++, Effect.never))
  })
  const stop = Tool.make("stop", {
    description: "Cancels the run.",
    input: Schema.Struct({}),
    services: [Cancellation.Cancellation],
    handler: () => Effect.andThen(Effect.sleep(10), Cancellation.cancelRun("stopped by a tool"))
  })
  return { probe, tools: [hang, stop] as const }
}

describe("a keyed call waiting for its key", () => {
  for (const how of How) {
    it.effect(`${how}: the waiting call is cancelled at once, reason cancelled, one terminal event`, () =>
      Effect.gen(function*() {
        const { probe, tools } = makeTools()
        const executor = yield* Executor.make(yield* ToolRegistry.make(tools))
        const calls = [
          call("a", "hang", { key: "k" }),
          call("b", "hang", { key: "k" }),
          ...(how === "Cancellation.cancelRun" ? [call("s", "stop")] : [])
        ]
        // detached: a failing run must not hold the test up while its scope closes
        const fiber = yield* Effect.forkDetach(Effect.exit(executor.runBatch(calls, { concurrency: 3 })))
        yield* TestClock.adjust(5)
        if (how === "runCancel.cancel") yield* executor.runCancel.cancel("stopped")
        const interrupting = how === "batch interrupted" ? yield* Effect.forkDetach(Fiber.interrupt(fiber)) : undefined
        // well before the 1 s timeout: everything has ended
        yield* TestClock.adjust(20)
        assert.isDefined(fiber.pollUnsafe(), "the batch is still running")
        if (interrupting !== undefined) yield* Fiber.join(interrupting)
        // the first call ran its handler; the waiting one never did
        assert.strictEqual(probe.handlerRuns, 1)
        const events = yield* EventSink.EventLog.use((log) => log.all)
        const terminal = (id: string) =>
          events.filter((e): e is ToolEvent.ToolFailed => e._tag === "tool.failed" && e.toolCallId === id)
        for (const id of ["a", "b"]) {
          assert.deepStrictEqual(terminal(id).map((e) => [e.reason, e.error._tag]), [["cancelled", "ToolCancelled"]], id)
        }
        const exit = yield* Fiber.await(fiber)
        if (how !== "batch interrupted") {
          assert.strictEqual(exit._tag, "Success")
          const results = exit._tag === "Success" && exit.value._tag === "Success" ? exit.value.value : []
          assert.deepStrictEqual(results.slice(0, 2).map((r) => [r.error?._tag, ToolResult.textOf(r)]), [
            ["ToolCancelled", "hang: cancelled while running"],
            ["ToolCancelled", "hang: cancelled while running"]
          ])
          assert.strictEqual(violation(calls, events, results), undefined)
        } else {
          assert.strictEqual(violation(calls, events, undefined), undefined)
        }
        // nothing more happens later
        yield* TestClock.adjust(10_000)
        assert.strictEqual(probe.handlerRuns, 1)
        assert.strictEqual((yield* EventSink.EventLog.use((log) => log.all)).length, events.length)
      }).pipe(Effect.provide(test)))
  }

  it.effect("a waiter that took the key after the holder failed runs the handler cancellably: cancel ends it at once", () =>
    Effect.gen(function*() {
      const probe = { handlerRuns: 0 }
      const charge = Tool.make("charge", {
        description: "Fails the first time after 50 ms, then hangs.",
        input: Schema.Struct({ key: Schema.String }),
        safety: { access: "write" },
        idempotency: ({ key }) => key,
        timeout: "1 second",
        retry: Executor.backoff({ base: "10 millis", maxAttempts: 3, jitter: false }),
        handler: () =>
          Effect.suspend(() =>
            ++probe.handlerRuns === 1
              ? Effect.andThen(Effect.sleep(50), Effect.fail(ToolError.repairable("declined")))
              : Effect.never
          )
      })
      const registry = yield* ToolRegistry.make([charge])
      // two runs sharing the StoreRegistry: the holder's, never cancelled, and the waiter's
      const holder = yield* Executor.make(registry)
      const waiter = yield* Executor.make(registry)
      const first = yield* Effect.forkDetach(holder.run(call("a", "charge", { key: "k" })))
      yield* TestClock.adjust(5)
      const second = yield* Effect.forkDetach(Effect.flip(waiter.run(call("b", "charge", { key: "k" }))))
      yield* TestClock.adjust(60)
      assert.strictEqual((yield* Fiber.join(first)).isError, true)
      assert.strictEqual(probe.handlerRuns, 2)
      yield* waiter.runCancel.cancel("stopped")
      yield* TestClock.adjust(5)
      const exit = second.pollUnsafe()
      assert.isDefined(exit, "the cancelled call is still running")
      assert.strictEqual((yield* Fiber.join(second))._tag, "ToolCancelled")
      const failed = (yield* EventSink.EventLog.use((log) => log.all)).filter((e): e is ToolEvent.ToolFailed =>
        e._tag === "tool.failed" && e.toolCallId === "b"
      )
      assert.deepStrictEqual(failed.map((e) => e.reason), ["cancelled"])
      assert.strictEqual(probe.handlerRuns, 2)
    }).pipe(Effect.provide(test)))
})
