/**
 * A step whose reply a missed shard-lock check dropped (issue #25), as cases for a runner
 * composition: test/durable/LockCheck.test.ts runs them on `Runner.layerSqlite`'s,
 * test/durable/LockCheckPostgres.test.ts on `Runner.layerPostgres`'s. The runner is given one fault
 * in its lock storage (test/support/lockFaults.ts): the first check after the fault is armed sleeps
 * past its deadline (as a check queued on a loaded database does), while the periodic refresh of
 * every shard goes on as usual, so the runner logs nothing about shard locks. The run must finish,
 * each step journaled with the result it had: no tool runs twice, the model is not asked twice.
 */
import { assert, it } from "@effect/vitest"
import { Effect, Layer, Stream } from "effect"
import { DurableAgent, type Runner } from "../../../src/durable/index.ts"
import { ChatModel } from "../../../src/index.ts"
import * as Stores from "../../../src/stores/Stores.ts"
import { slowLockCheck } from "../../support/lockFaults.ts"
import * as Core from "./core.ts"

/** A runner whose lock storage `lockStorage` wraps, its lock operations' deadline (the refresh interval) `deadline` ms. */
export type FaultedRunner = (
  lockStorage: ReturnType<typeof slowLockCheck>["layer"],
  deadline: number
) => Layer.Layer<Runner.Services>

const user = (content: string) => [{ role: "user" as const, content }]

/**
 * Runs `plan` on `makeRunner`'s runner whose lock check after the `nth` (from 1) model answer or
 * application of tool `step` misses its deadline; the run must finish.
 */
const faultedRun = (makeRunner: FaultedRunner, name: string, plan: string, step: string, nth = 1) =>
  Effect.gen(function*() {
    const counters = Core.makeCounters()
    const deadline = 500
    const { fault, layer } = slowLockCheck(deadline * 3)
    let seen = 0
    // the next one-shard refresh is the check before storing this step's reply (or a sibling call's)
    const arm = (name: string) => {
      if (name === step && ++seen === nth) fault.armed = true
    }
    const agent = DurableAgent.make({
      name,
      tools: Core.makeTools(counters, { afterApply: (tool) => Effect.sync(() => arm(tool)) }),
      pollInterval: "20 millis"
    })
    const model = Layer.effect(
      ChatModel.ChatModel,
      Effect.map(Effect.service(ChatModel.ChatModel), (inner) =>
        ChatModel.ChatModel.of({
          ...inner,
          stream: (request) => Stream.ensuring(inner.stream(request), Effect.sync(() => arm("model")))
        }))
    ).pipe(Layer.provide(Core.model(counters)))
    const result = yield* Effect.gen(function*() {
      yield* agent.start("run", user(plan))
      // a guard against a hang, not a timing: the run takes a second or two
      return yield* Effect.timeoutOrElse(agent.result("run"), {
        duration: "20 seconds",
        orElse: () => Effect.die(new Error("the run never finished: a step's reply was dropped and nothing resumed it"))
      })
    }).pipe(
      Effect.provide(agent.layer.pipe(Layer.provide([model, Stores.layerMemory]), Layer.provideMerge(makeRunner(layer, deadline))))
    )
    return { result, counters, fired: fault.fired }
  })

/** The cases, on `makeRunner`'s runner; `name` names the agents (one per case, so that runners sharing a database do not meet). */
export const lockCheckCases = (name: string, makeRunner: FaultedRunner) => {
  it.live("a tool call's: the run finishes, each call of the turn journaled with its result, none run twice", () =>
    Effect.gen(function*() {
      const { counters, fired, result } = yield* faultedRun(
        makeRunner,
        `${name}-tool`,
        "plan: plain_write,keyed_write;read_value",
        "plain_write"
      )
      assert.strictEqual(fired, 1)
      assert.strictEqual(result.text, "done: value of 1-0")
      assert.deepStrictEqual(result.results.map((r) => [r.toolCallId, r.error?._tag]), [
        ["0-0", undefined],
        ["0-1", undefined],
        ["1-0", undefined]
      ])
      assert.strictEqual(counters.get("plain_write:0-0"), 1)
      assert.strictEqual(counters.get("keyed_write:k0"), 1)
      assert.strictEqual(counters.get("read_value"), 1)
      assert.strictEqual(counters.get("model"), 3)
    }), 60_000)

  it.live("a model turn's: the run finishes and the model is not asked for that turn again", () =>
    Effect.gen(function*() {
      const { counters, fired, result } = yield* faultedRun(makeRunner, `${name}-model`, "plan: read_value", "model")
      assert.strictEqual(fired, 1)
      assert.strictEqual(result.text, "done: value of 0-0")
      assert.strictEqual(counters.get("model"), 2)
      assert.strictEqual(counters.get("read_value"), 1)
    }), 60_000)
}
