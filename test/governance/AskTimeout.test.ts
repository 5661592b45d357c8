/**
 * `Ask` and the call's timeout: while a question is open (from its `tool.question` to its
 * `tool.answered`), the attempt's timeout does not run; it resumes with the time it had left when
 * the question ends (answered, or the question's own timeout). Time before and after a question
 * counts; several questions at once pause it while any is open; each retried attempt has the whole
 * budget again. The events stay one `tool.question` / `tool.answered` per question, then one
 * terminal event. All on the `TestClock`.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Schedule, Schema } from "effect"
import { TestClock } from "effect/testing"
import { Ask, EventSink, Executor, Tool, ToolEvent, ToolRegistry, ToolResult, ToolServices } from "../../src/index.ts"

const Ok = Schema.Struct({ ok: Schema.Boolean })
const events = EventSink.EventLog.use((log) => log.all)
const tagsOf = (all: ReadonlyArray<ToolEvent.Event>) => all.map((e) => e._tag)
const terminalOf = (all: ReadonlyArray<ToolEvent.Event>) =>
  all.find((e): e is ToolEvent.ToolCompleted | ToolEvent.ToolFailed =>
    e._tag === "tool.completed" || e._tag === "tool.failed"
  )!

/** An answerer that takes `seconds(message)` of (test) time, then answers `{ ok: true }`. */
const slowAnswerer = (seconds: (message: string) => number) =>
  Ask.layerFunction((request) =>
    Effect.as(Effect.sleep(`${seconds(request.message)} seconds`), Ask.answer({ ok: true }, "person"))
  )

/** A tool with a 1 s timeout running `handler`. */
const asking = (handler: () => Effect.Effect<string, Ask.Declined | Ask.Unanswerable, Ask.Ask>) =>
  Tool.make("asking", {
    description: "Works, asks, works.",
    input: Schema.Struct({}),
    failure: Ask.NotAnswered,
    services: [Ask.Ask],
    timeout: "1 second",
    handler
  })

/** Runs one call of `tool`, answered by `answerer`, moving the test clock by `seconds`; its result and events. */
const runFor = (
  tool: Tool.Any,
  answerer: ReturnType<typeof slowAnswerer>,
  seconds: number
) =>
  Effect.gen(function*() {
    const executor = yield* Executor.make(yield* ToolRegistry.make([tool]))
    const fiber = yield* executor.run({ id: "c1", name: tool.name, arguments: {} }).pipe(
      Effect.provide(answerer),
      Effect.forkChild
    )
    yield* Effect.yieldNow
    yield* TestClock.adjust(`${seconds} seconds`)
    const result = yield* Fiber.join(fiber)
    return { result, all: yield* events }
  })

const test = ToolServices.layerTest({ runId: "ask-timeout-run" })

describe("Ask and the call's timeout", () => {
  it.effect("a question answered after 10 s does not time out a call whose timeout is 1 s", () =>
    Effect.gen(function*() {
      const tool = asking(() => Effect.as(Ask.question({ message: "Go?", answer: Ok }), "went"))
      const { result, all } = yield* runFor(tool, slowAnswerer(() => 10), 20)
      assert.strictEqual(ToolResult.textOf(result), "went")
      assert.deepStrictEqual(tagsOf(all), ["tool.started", "tool.question", "tool.answered", "tool.completed"])
      const answered = all.find((e): e is ToolEvent.ToolAnswered => e._tag === "tool.answered")!
      assert.strictEqual(answered.outcome, "answered")
      assert.strictEqual(answered.elapsed, 10_000)
      assert.strictEqual(terminalOf(all).elapsed, 10_000)
    }).pipe(Effect.provide(test)))

  it.effect("time before and after the question counts: 0.6 s + 0.6 s is past 1 s (ToolTimeout)", () =>
    Effect.gen(function*() {
      const tool = asking(() =>
        Effect.gen(function*() {
          yield* Effect.sleep("600 millis")
          yield* Ask.question({ message: "Go?", answer: Ok })
          yield* Effect.sleep("600 millis")
          return "went"
        })
      )
      const { result, all } = yield* runFor(tool, slowAnswerer(() => 10), 20)
      assert.include(ToolResult.textOf(result), "timed out")
      assert.deepStrictEqual(tagsOf(all), ["tool.started", "tool.question", "tool.answered", "tool.failed"])
      const failed = terminalOf(all) as ToolEvent.ToolFailed
      assert.strictEqual(failed.reason, "timeout")
      assert.strictEqual(failed.error._tag, "ToolTimeout")
      // 0.6 s, then 10 s paused, then the 0.4 s left
      assert.strictEqual(failed.elapsed, 11_000)
      assert.strictEqual(all.filter((e) => e._tag === "tool.answered").length, 1)
    }).pipe(Effect.provide(test)))

  it.effect("two questions at once: the timeout stays paused until the last one is answered", () =>
    Effect.gen(function*() {
      // A is open from 0.2 s to 5.2 s, B from 0.4 s to 6.4 s: 0.2 s before, 0.7 s after, 0.9 s in all
      const tool = asking(() =>
        Effect.gen(function*() {
          yield* Effect.all([
            Effect.andThen(Effect.sleep("200 millis"), Ask.question({ message: "A?", answer: Ok })),
            Effect.andThen(Effect.sleep("400 millis"), Ask.question({ message: "B?", answer: Ok }))
          ], { concurrency: "unbounded" })
          yield* Effect.sleep("700 millis")
          return "both"
        })
      )
      const { result, all } = yield* runFor(tool, slowAnswerer((message) => message === "A?" ? 5 : 6), 20)
      assert.strictEqual(ToolResult.textOf(result), "both")
      assert.deepStrictEqual(tagsOf(all), [
        "tool.started",
        "tool.question",
        "tool.question",
        "tool.answered",
        "tool.answered",
        "tool.completed"
      ])
      assert.strictEqual(terminalOf(all).elapsed, 7_100)
    }).pipe(Effect.provide(test)))

  it.effect("two questions at once, then too long: the timeout runs again after the last answer only", () =>
    Effect.gen(function*() {
      const tool = asking(() =>
        Effect.gen(function*() {
          yield* Effect.all([
            Effect.andThen(Effect.sleep("200 millis"), Ask.question({ message: "A?", answer: Ok })),
            Effect.andThen(Effect.sleep("400 millis"), Ask.question({ message: "B?", answer: Ok }))
          ], { concurrency: "unbounded" })
          yield* Effect.sleep("900 millis")
          return "both"
        })
      )
      const { all } = yield* runFor(tool, slowAnswerer((message) => message === "A?" ? 5 : 6), 20)
      const failed = terminalOf(all) as ToolEvent.ToolFailed
      assert.strictEqual(failed.reason, "timeout")
      // 0.2 s before the first question, the 0.8 s left after the last answer (6.4 s)
      assert.strictEqual(failed.elapsed, 7_200)
    }).pipe(Effect.provide(test)))

  it.effect("a question that times out on its own resumes the call's clock", () =>
    Effect.gen(function*() {
      const tool = asking(() =>
        Effect.gen(function*() {
          yield* Effect.sleep("400 millis")
          const answer = yield* Ask.question({ message: "Go?", answer: Ok, timeout: "5 seconds" }).pipe(
            Effect.catchTag("AskUnanswerable", (e) => Effect.succeed(e.reason))
          )
          yield* Effect.sleep("700 millis")
          return String(answer)
        })
      )
      const never = Ask.layerFunction(() => Effect.never)
      const { result, all } = yield* runFor(tool, never, 20)
      assert.include(ToolResult.textOf(result), "timed out")
      assert.deepStrictEqual(tagsOf(all), ["tool.started", "tool.question", "tool.answered", "tool.failed"])
      const answered = all.find((e): e is ToolEvent.ToolAnswered => e._tag === "tool.answered")!
      assert.strictEqual(answered.outcome, "unanswerable")
      assert.strictEqual(answered.elapsed, 5_000)
      // 0.4 s, 5 s paused, then the 0.6 s left
      assert.strictEqual(terminalOf(all).elapsed, 6_000)
    }).pipe(Effect.provide(test)))

  it.effect("a retried attempt has the whole timeout again, paused by its own questions", () =>
    Effect.gen(function*() {
      let attempts = 0
      const tool = Tool.make("retried", {
        description: "Asks, then works; too long the first time.",
        input: Schema.Struct({}),
        failure: Ask.NotAnswered,
        services: [Ask.Ask],
        safety: { idempotent: true },
        retry: Schedule.recurs(1),
        timeout: "1 second",
        handler: () =>
          Effect.gen(function*() {
            const attempt = ++attempts
            yield* Effect.sleep("500 millis")
            yield* Ask.question({ message: `Go (${attempt})?`, answer: Ok })
            // the first attempt runs past its 1 s; the second, 0.9 s in all, fits only in a fresh budget
            yield* Effect.sleep(attempt === 1 ? "600 millis" : "400 millis")
            return `attempt ${attempt}`
          })
      })
      const { result, all } = yield* runFor(tool, slowAnswerer(() => 10), 40)
      assert.strictEqual(ToolResult.textOf(result), "attempt 2")
      assert.deepStrictEqual(tagsOf(all), [
        "tool.started",
        "tool.question",
        "tool.answered",
        "tool.retrying",
        "tool.question",
        "tool.answered",
        "tool.completed"
      ])
      const questions = all.filter((e): e is ToolEvent.ToolQuestion => e._tag === "tool.question")
      assert.deepStrictEqual(questions.map((q) => q.attempt), [1, 2])
      // attempt 1: 0.5 s + 10 s paused + 0.5 s; attempt 2: 0.5 s + 10 s paused + 0.4 s
      assert.strictEqual(terminalOf(all).elapsed, 21_900)
    }).pipe(Effect.provide(test)))

  it.effect("a question the handler itself gives up on resumes the call's clock", () =>
    Effect.gen(function*() {
      const tool = asking(() =>
        Effect.gen(function*() {
          // the handler's own bound: the question's fiber is interrupted after 2 s
          yield* Effect.timeoutOption(Ask.question({ message: "Go?", answer: Ok }), "2 seconds")
          yield* Effect.sleep("5 seconds")
          return "went"
        })
      )
      const { all } = yield* runFor(tool, Ask.layerFunction(() => Effect.never), 20)
      assert.deepStrictEqual(tagsOf(all), ["tool.started", "tool.question", "tool.answered", "tool.failed"])
      const failed = terminalOf(all) as ToolEvent.ToolFailed
      assert.strictEqual(failed.reason, "timeout")
      // 2 s paused, then the whole 1 s
      assert.strictEqual(failed.elapsed, 3_000)
    }).pipe(Effect.provide(test)))

  it.effect("a call cancelled while its question is open: one tool.answered (unanswerable), then tool.failed (cancelled)", () =>
    Effect.gen(function*() {
      const tool = asking(() => Effect.as(Ask.question({ message: "Go?", answer: Ok }), "went"))
      const executor = yield* Executor.make(yield* ToolRegistry.make([tool]))
      const fiber = yield* executor.run({ id: "c1", name: "asking", arguments: {} }).pipe(
        Effect.provide(Ask.layerFunction(() => Effect.never)),
        Effect.forkChild
      )
      yield* Effect.yieldNow
      // far past the call's timeout: the open question holds it paused
      yield* TestClock.adjust("1 hour")
      assert.deepStrictEqual(tagsOf(yield* events), ["tool.started", "tool.question"])
      yield* Fiber.interrupt(fiber)
      const all = yield* events
      assert.deepStrictEqual(tagsOf(all), ["tool.started", "tool.question", "tool.answered", "tool.failed"])
      const answered = all.find((e): e is ToolEvent.ToolAnswered => e._tag === "tool.answered")!
      assert.strictEqual(answered.outcome, "unanswerable")
      assert.strictEqual((terminalOf(all) as ToolEvent.ToolFailed).reason, "cancelled")
    }).pipe(Effect.provide(test)))

  it.effect("a tool that does not ask keeps its plain timeout", () =>
    Effect.gen(function*() {
      const plain = Tool.make("plain", {
        description: "Works too long.",
        input: Schema.Struct({}),
        timeout: "1 second",
        handler: () => Effect.as(Effect.sleep("2 seconds"), "done")
      })
      const { all } = yield* runFor(plain, slowAnswerer(() => 0), 5)
      const failed = terminalOf(all) as ToolEvent.ToolFailed
      assert.strictEqual(failed.reason, "timeout")
      assert.strictEqual(failed.elapsed, 1_000)
    }).pipe(Effect.provide(test)))
})
