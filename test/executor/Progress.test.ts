/**
 * `ToolProgress`: each report becomes a `tool.progress` event of its call,
 * between `tool.started` and the terminal event (never after, even from a fiber
 * the handler left behind or after a cancellation); at most one per interval of
 * `Clock` time (coalesced, the latest values winning, partial output
 * concatenated, the last report never lost); messages and partial output capped
 * and redacted; a tool that does not list the service gets none.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Schema } from "effect"
import { TestClock } from "effect/testing"
import { EventSink, Executor, Tool, ToolProgress, ToolRegistry, ToolServices } from "../../src/index.ts"
import type { ToolEvent } from "../../src/index.ts"
import { random } from "../support/random.ts"

const call = (id: string, name: string, args: unknown = {}) => ({ id, name, arguments: args })
const events = EventSink.EventLog.use((log) => log.all)
const progressOf = (all: ReadonlyArray<ToolEvent.Event>) =>
  all.filter((e): e is ToolEvent.ToolProgress => e._tag === "tool.progress")
const tagsOf = (all: ReadonlyArray<ToolEvent.Event>) => all.map((e) => e._tag)

/** Reports `steps` times, `gap` ms apart (no sleep for 0), then answers. */
const stepper = Tool.make("stepper", {
  description: "Reports progress.",
  input: Schema.Struct({ steps: Schema.Int, gap: Schema.Int }),
  services: [ToolProgress.ToolProgress],
  handler: ({ gap, steps }) =>
    Effect.gen(function*() {
      for (let i = 1; i <= steps; i++) {
        yield* ToolProgress.report({ message: `step ${i}`, count: i, total: steps, chunk: `${i};` })
        if (gap > 0) yield* Effect.sleep(gap)
      }
      return "done"
    })
})

const run = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  effect.pipe(Effect.provide(ToolServices.layerTest({ runId: "progress-run" })))

/** Forks `effect`, then moves the clock until it is done. */
const driven = <A, E, R>(effect: Effect.Effect<A, E, R>, step = 10, limit = 10_000) =>
  Effect.gen(function*() {
    const fiber = yield* Effect.forkChild(effect)
    for (let t = 0; t < limit && fiber.pollUnsafe() === undefined; t += step) {
      yield* Effect.yieldNow
      yield* TestClock.adjust(step)
    }
    return yield* Fiber.join(fiber)
  })

describe("ToolProgress", () => {
  it.effect("reports far enough apart: one event each, between started and completed, in order", () =>
    run(Effect.gen(function*() {
      const executor = yield* Executor.make(yield* ToolRegistry.make([stepper]))
      const result = yield* driven(executor.run(call("c1", "stepper", { steps: 3, gap: 200 })))
      assert.strictEqual(result.value, "done")
      const all = yield* events
      assert.deepStrictEqual(tagsOf(all), ["tool.started", "tool.progress", "tool.progress", "tool.progress", "tool.completed"])
      assert.deepStrictEqual(all.map((e) => e.sequence), [0, 1, 2, 3, 4])
      const progress = progressOf(all)
      assert.deepStrictEqual(progress.map((e) => [e.message, e.count, e.total, e.chunk, e.reports]), [
        ["step 1", 1, 3, "1;", 1],
        ["step 2", 2, 3, "2;", 1],
        ["step 3", 3, 3, "3;", 1]
      ])
      assert.deepStrictEqual(progress.map((e) => e.timestamp - all[0]!.timestamp), [0, 200, 400])
      for (const e of progress) {
        assert.strictEqual(e.toolCallId, "c1")
        assert.strictEqual(e.toolName, "stepper")
        assert.strictEqual(e.attempt, 1)
        assert.strictEqual(e.runId, "progress-run")
      }
    })))

  it.effect("a burst is coalesced: the first report at once, the rest in one event before the terminal one", () =>
    run(Effect.gen(function*() {
      const executor = yield* Executor.make(yield* ToolRegistry.make([stepper]))
      yield* executor.run(call("c1", "stepper", { steps: 50, gap: 0 }))
      const all = yield* events
      assert.deepStrictEqual(tagsOf(all), ["tool.started", "tool.progress", "tool.progress", "tool.completed"])
      const [first, last] = progressOf(all)
      assert.deepStrictEqual([first!.message, first!.reports, first!.chunk], ["step 1", 1, "1;"])
      // The latest values win; partial output is concatenated; nothing is lost.
      assert.deepStrictEqual([last!.message, last!.count, last!.reports], ["step 50", 50, 49])
      assert.strictEqual(last!.chunk, Array.from({ length: 49 }, (_, i) => `${i + 2};`).join(""))
    })))

  it.effect("rate bound: at most one event per interval; a pending report goes out when the interval ends", () =>
    run(Effect.gen(function*() {
      const executor = yield* Executor.make(yield* ToolRegistry.make([stepper]), { progress: { interval: "100 millis" } })
      // 40 reports 10 ms apart: 400 ms of work.
      yield* driven(executor.run(call("c1", "stepper", { steps: 40, gap: 10 })), 5)
      const all = yield* events
      const start = all[0]!.timestamp
      const progress = progressOf(all)
      const times = progress.map((e) => e.timestamp - start)
      for (let i = 1; i < times.length; i++) assert.isAtLeast(times[i]! - times[i - 1]!, 100, `events ${times.join(",")}`)
      assert.isAtMost(progress.length, 5)
      assert.strictEqual(progress.reduce((n, e) => n + e.reports, 0), 40)
      assert.strictEqual(progress.at(-1)!.message, "step 40")
      assert.strictEqual(all.at(-1)!._tag, "tool.completed")
    })))

  it.effect("a report made just after an event waits for the interval, not for the end of the call", () =>
    run(Effect.gen(function*() {
      const slow = Tool.make("slow", {
        description: "Reports twice, then works for a second.",
        input: Schema.Struct({}),
        services: [ToolProgress.ToolProgress],
        handler: () =>
          Effect.gen(function*() {
            yield* ToolProgress.message("starting", 0)
            yield* Effect.sleep(10)
            yield* ToolProgress.message("warming up", 0.1)
            yield* Effect.sleep(1_000)
            return "ok"
          })
      })
      const executor = yield* Executor.make(yield* ToolRegistry.make([slow]))
      yield* driven(executor.run(call("c1", "slow")))
      const all = yield* events
      const start = all[0]!.timestamp
      assert.deepStrictEqual(
        progressOf(all).map((e) => [e.message, e.fraction, e.timestamp - start]),
        [["starting", 0, 0], ["warming up", 0.1, 100]]
      )
      assert.strictEqual(all.at(-1)!._tag, "tool.completed")
    })))

  it.effect("reports from a fiber the handler left behind, after the call ended, are dropped", () =>
    run(Effect.gen(function*() {
      const leaky = Tool.make("leaky", {
        description: "Leaves a fiber reporting for a second.",
        input: Schema.Struct({}),
        services: [ToolProgress.ToolProgress],
        handler: () =>
          Effect.gen(function*() {
            yield* Effect.forkDetach(
              Effect.forEach(Array.from({ length: 100 }, (_, i) => i), (i) =>
                Effect.andThen(Effect.sleep(10), ToolProgress.report({ count: i })), { discard: true })
            )
            yield* ToolProgress.message("started the work")
            yield* Effect.sleep(55)
            return "returned"
          })
      })
      const executor = yield* Executor.make(yield* ToolRegistry.make([leaky]))
      yield* driven(executor.run(call("c1", "leaky")))
      const atReturn = (yield* events).length
      for (let i = 0; i < 150; i++) {
        yield* Effect.yieldNow
        yield* TestClock.adjust(10)
      }
      const all = yield* events
      assert.strictEqual(all.length, atReturn, "no event after the call returned")
      assert.strictEqual(all.at(-1)!._tag, "tool.completed")
      // The stray fiber's reports made while the call ran did count (coalesced with the handler's).
      const progress = progressOf(all)
      assert.isAbove(progress.length, 0)
      assert.isTrue(progress.some((e) => e.count !== undefined))
    })))

  it.effect("a cancelled call: what was pending goes out before tool.failed (cancelled); nothing after it", () =>
    run(Effect.gen(function*() {
      const hangs = Tool.make("hangs", {
        description: "Reports, then hangs; a fiber it started keeps reporting.",
        input: Schema.Struct({}),
        services: [ToolProgress.ToolProgress],
        handler: () =>
          Effect.gen(function*() {
            yield* Effect.forkDetach(
              Effect.forEach(Array.from({ length: 100 }, (_, i) => i), (i) =>
                Effect.andThen(Effect.sleep(3), ToolProgress.report({ count: i })), { discard: true })
            )
            yield* ToolProgress.message("first")
            yield* ToolProgress.message("second (pending)")
            return yield* Effect.never
          })
      })
      const executor = yield* Executor.make(yield* ToolRegistry.make([hangs]))
      const fiber = yield* Effect.forkChild(executor.run(call("c1", "hangs")))
      for (let i = 0; i < 5; i++) yield* Effect.yieldNow
      yield* TestClock.adjust(50)
      yield* Fiber.interrupt(fiber)
      const atEnd = (yield* events).length
      for (let i = 0; i < 100; i++) {
        yield* Effect.yieldNow
        yield* TestClock.adjust(10)
      }
      const all = yield* events
      assert.strictEqual(all.length, atEnd)
      const last = all.at(-1)!
      assert.strictEqual(last._tag, "tool.failed")
      assert.strictEqual((last as ToolEvent.ToolFailed).reason, "cancelled")
      const progress = progressOf(all)
      assert.strictEqual(progress[0]!.message, "first")
      assert.strictEqual(progress.at(-1)!.message, "second (pending)")
      assert.deepStrictEqual(all.map((e) => e.sequence), all.map((_, i) => i))
    })))

  it.effect("size caps: a long message keeps its start; partial output keeps its end and counts the rest", () =>
    run(Effect.gen(function*() {
      const big = Tool.make("big", {
        description: "Reports a lot at once.",
        input: Schema.Struct({}),
        services: [ToolProgress.ToolProgress],
        handler: () =>
          Effect.andThen(
            ToolProgress.report({ message: "m".repeat(5_000), chunk: "a".repeat(3_000) + "z".repeat(ToolProgress.limits.chunkChars) }),
            Effect.succeed("ok")
          )
      })
      const executor = yield* Executor.make(yield* ToolRegistry.make([big]))
      yield* executor.run(call("c1", "big"))
      const [event] = progressOf(yield* events)
      assert.strictEqual(event!.message!.length, ToolProgress.limits.messageChars)
      assert.isTrue(event!.message!.endsWith("…"))
      assert.strictEqual(event!.chunk, "z".repeat(ToolProgress.limits.chunkChars))
      assert.strictEqual(event!.chunkDropped, 3_000)
    })))

  it.effect("redacted: the tool's patterns, and the values its arguments hold under a redacted key", () =>
    run(Effect.gen(function*() {
      const login = Tool.make("login", {
        description: "Logs in.",
        input: Schema.Struct({ user: Schema.String, password: Schema.String }),
        safety: { redact: { keys: ["password"], patterns: [/sk-[a-z0-9]+/] } },
        services: [ToolProgress.ToolProgress],
        handler: ({ password, user }) =>
          Effect.gen(function*() {
            yield* ToolProgress.report({ message: `logging in ${user} with ${password}`, chunk: `token sk-abc123 for ${password}` })
            return "ok"
          })
      })
      const executor = yield* Executor.make(yield* ToolRegistry.make([login]))
      yield* executor.run(call("c1", "login", { user: "ada", password: "hunter22" }))
      const progress = progressOf(yield* events)
      assert.strictEqual(progress[0]!.message, "logging in ada with [redacted]")
      assert.strictEqual(progress.map((e) => e.chunk ?? "").join(""), "token [redacted] for [redacted]")
      assert.notInclude(JSON.stringify(yield* events), "hunter22")
    })))

  /** Reports `pieces` as chunks, each followed by a sleep of `gaps[i]` ms; its password is redacted. */
  const splitter = Tool.make("splitter", {
    description: "Reports partial output in pieces.",
    input: Schema.Struct({
      password: Schema.String,
      pieces: Schema.Array(Schema.String),
      gaps: Schema.Array(Schema.Int)
    }),
    safety: { redact: { keys: ["password"], patterns: [/sk-[A-Za-z0-9]{16}/g] } },
    services: [ToolProgress.ToolProgress],
    handler: ({ gaps, pieces }) =>
      Effect.gen(function*() {
        for (const [i, piece] of pieces.entries()) {
          yield* ToolProgress.chunk(piece)
          if ((gaps[i] ?? 0) > 0) yield* Effect.sleep(gaps[i]!)
        }
        return "ok"
      })
  })
  const joinedChunks = (all: ReadonlyArray<ToolEvent.Event>) => progressOf(all).map((e) => e.chunk ?? "").join("")

  it.effect("redacted as one stream: a secret or a pattern match split across events never appears in the joined chunks", () =>
    run(Effect.gen(function*() {
      const pw = "hunter2-SECRET-value"
      const executor = yield* Executor.make(yield* ToolRegistry.make([splitter]))
      const pieces = [`using pw=${pw.slice(0, 6)}`, `${pw.slice(6)} key=sk-ABCDEFGH`, "IJKLMNOP done"]
      const result = yield* driven(executor.run(call("c1", "splitter", { password: pw, pieces, gaps: [150, 150, 0] })))
      assert.strictEqual(result.value, "ok")
      const all = yield* events
      const joined = joinedChunks(all)
      assert.strictEqual(joined, "using pw=[redacted] key=[redacted] done")
      // (the arguments, in tool.started, hold the pieces: only the progress events are checked)
      assert.notInclude(JSON.stringify(progressOf(all)), "hunter2")
      assert.notInclude(JSON.stringify(progressOf(all)), "IJKLMNOP")
      assert.isAtLeast(progressOf(all).length, 1)
      assert.strictEqual(tagsOf(all).at(-1), "tool.completed", "the held text is sent before the terminal event")
    })))

  it.effect("redacted as one stream: random split points and timings (seeded)", () =>
    run(Effect.gen(function*() {
      const seed = Number(process.env["TINYAGENTS_PROGRESS_SEED"] ?? 1315)
      const runs = Number(process.env["TINYAGENTS_PROGRESS_RUNS"] ?? 25)
      const rng = random(seed)
      const executor = yield* Executor.make(yield* ToolRegistry.make([splitter]))
      for (let n = 0; n < runs; n++) {
        const pw = `pw-${n}-${"Zq".repeat(rng.int(2, 40))}`
        const key = `sk-${Array.from({ length: 16 }, () => rng.pick([..."ABCDEFGHijklmnop0123456789"])).join("")}`
        const filler = () => "lorem ipsum ".repeat(rng.int(0, 40))
        const text = `${filler()}pw=${pw} ${filler()}key=${key}${filler()}${pw}${pw}${filler()}`
        const cuts = Array.from({ length: rng.int(1, 12) }, () => rng.int(0, text.length)).sort((a, b) => a - b)
        const bounds = [0, ...cuts, text.length]
        const pieces = bounds.slice(1).map((end, i) => text.slice(bounds[i], end)).filter((p) => p !== "")
        const gaps = pieces.map(() => rng.pick([0, 0, 50, 150]))
        yield* driven(executor.run(call(`r${n}`, "splitter", { password: pw, pieces, gaps })))
        const joined = joinedChunks((yield* events).filter((e) => "toolCallId" in e && e.toolCallId === `r${n}`))
        const expected = text.replaceAll(pw, "[redacted]").replaceAll(key, "[redacted]")
        assert.strictEqual(joined, expected, `seed ${seed} run ${n}: ${JSON.stringify(pieces)}`)
      }
    })))

  it.effect("out-of-range values are clamped or ignored; an empty report is no event", () =>
    run(Effect.gen(function*() {
      const odd = Tool.make("odd", {
        description: "Reports odd values.",
        input: Schema.Struct({}),
        services: [ToolProgress.ToolProgress],
        handler: () =>
          Effect.gen(function*() {
            yield* ToolProgress.report({})
            yield* ToolProgress.report({ fraction: 7, count: -1, total: Number.NaN })
            return "ok"
          })
      })
      const executor = yield* Executor.make(yield* ToolRegistry.make([odd]))
      yield* executor.run(call("c1", "odd"))
      const progress = progressOf(yield* events)
      assert.lengthOf(progress, 1)
      assert.strictEqual(progress[0]!.fraction, 1)
      assert.isUndefined(progress[0]!.count)
      assert.isUndefined(progress[0]!.total)
    })))

  it.effect("called directly (outside an executor), a reporting handler runs with the test layer's discarding service", () =>
    Effect.gen(function*() {
      const output = yield* stepper.handler({ steps: 2, gap: 0 })
      assert.strictEqual(output, "done")
      const seen: Array<ToolProgress.Update> = []
      yield* stepper.handler({ steps: 2, gap: 0 }).pipe(Effect.provide(ToolProgress.layerCallback((u) => seen.push(u))))
      assert.deepStrictEqual(seen.map((u) => u.message), ["step 1", "step 2"])
    }).pipe(Effect.provide(ToolServices.layerTest())))
})
