/**
 * The executor's exactness guarantees as a property over random batches on
 * `TestClock`: sizes, concurrency, outcomes (ok, failing, defects, synchronous
 * throws, sleeps, hangs past the timeout, retries, exclusive tools, rejected
 * calls, bare `Effect.sync` handlers that return or throw), every kind of
 * sink (synchronous, asynchronous, slow, dying, throwing, self-interrupting), both failure policies, `run` and `runBatch`, and
 * interruption or run cancellation at random points (or before the batch).
 * Some calls report progress (and leave a fiber reporting after they end):
 * their `tool.progress` events fall between start and terminal event.
 * Keyed calls (`charge`, a few keys per batch, at once or in turn) are applied
 * at most once per key, answer with one value per key, and carry their key in
 * every lifecycle event. Half the plans run under a pass-through middleware.
 *
 * Every plan runs twice: with the executor's plain-call path (a call whose steps all
 * complete is answered by plain function calls, `Now`) and with every step run as an
 * effect; both must hold every guarantee, plans nobody stops must end the same on
 * both, and the test checks that calls took each path.
 *
 * `TINYAGENTS_PROPERTY_RUNS` sets the number of batches (300 under `npm test`, 5,000 under `npm run test:full`; 1,000 take about a
 * second); `TINYAGENTS_PROPERTY_SEED` the first seed. A failure names its seed
 * and plan, and `TINYAGENTS_PROPERTY_RUNS=1 TINYAGENTS_PROPERTY_SEED=<seed>`
 * replays it.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit, Fiber, Logger } from "effect"
import { TestClock } from "effect/testing"
import { Executor, Middleware, ToolError, ToolRegistry, ToolResult } from "../../src/index.ts"
import type { ToolCall, ToolEvent } from "../../src/index.ts"
import { random } from "../support/random.ts"
import { call, makeProbe, makeSink, services, type SinkKind, snapshot, tools, violation } from "./support.ts"
import { count } from "../support/tier.ts"
import * as Now from "../../src/runtime/internal/executor/Now.ts"

const runs = count("TINYAGENTS_PROPERTY_RUNS", 300, 5_000)
const firstSeed = Number(process.env["TINYAGENTS_PROPERTY_SEED"] ?? 1)


interface Plan {
  readonly seed: number
  readonly calls: ReadonlyArray<ToolCall.ToolCall>
  readonly concurrency: number
  readonly policy: Executor.FailurePolicy
  readonly sink: SinkKind
  readonly mode: "batch" | "run"
  /** A pass-through `around` middleware (the executor may start what it hands back: `Now`). */
  readonly middleware: boolean
  /** What happens at `at` ms plus `yields` scheduler turns. */
  readonly stop: "none" | "interrupt" | "cancel" | "cancel-before"
  readonly at: number
  readonly yields: number
}

const plan = (seed: number): Plan => {
  const r = random(seed)
  const size = r.int(0, 12)
  const calls = Array.from({ length: size }, (_, i): ToolCall.ToolCall => {
    const id = `c${i}`
    const roll = r.next()
    const tool = roll < 0.15 ? "mutate" : roll < 0.35 ? "charge" : roll < 0.6 ? "plain" : "work"
    const kind = r.pick(["ok", "ok", "fail", "defect", "throw", "sleep", "sleep", "sleep", "hang", "flaky", "invalid", "unknown", "report", "sync", "syncThrow"])
    if (kind === "invalid") return call(id, tool, { kind: 42 })
    if (kind === "unknown") return call(id, "no_such_tool")
    // keyed calls share a few keys, so repeats run at once and in turn
    if (tool === "charge") {
      const key = `k${r.int(0, 2)}`
      return call(id, tool, kind === "sleep" || kind === "flaky" ? { kind, ms: r.int(0, kind === "sleep" ? 300 : 3), key } : { kind, key })
    }
    if (kind === "sleep") return call(id, tool, { kind, ms: r.int(1, 300) })
    if (kind === "report") return call(id, tool, { kind, ms: r.int(0, 120) })
    if (kind === "flaky") return call(id, tool, { kind, ms: r.int(0, 3), key: `${seed}/${id}` })
    return call(id, tool, { kind })
  })
  return {
    seed,
    calls,
    concurrency: r.int(1, 16),
    policy: r.pick(["settle", "fail-fast"]),
    sink: r.pick(["now", "now", "sync", "async", "async", "slow", "dies", "throws", "interrupts"]),
    mode: r.next() < 0.2 ? "run" : "batch",
    stop: r.pick(["none", "none", "interrupt", "cancel", "cancel-before"]),
    at: r.pick([0, 0, r.int(0, 50), r.int(0, 400)]),
    yields: r.int(0, 12),
    middleware: r.next() < 0.5
  }
}

const passThrough = Middleware.make({ name: "pass-through", around: (invocation, next) => next(invocation) })

const stats = {
  runs: 0,
  calls: 0,
  events: 0,
  started: 0,
  cancelledRunning: 0,
  cancelledBeforeStart: 0,
  batchFailed: 0,
  interrupted: 0,
  replayed: 0,
  progress: 0
}

/** What a plan ended with, compared across the two paths: results, and each call's events (tags, in order). */
interface Ending {
  readonly problems: ReadonlyArray<string>
  readonly results: string
  readonly events: string
}

/** One plan: runs it, stops it as planned, and returns every broken guarantee. */
const check = (p: Plan) =>
  Effect.gen(function*() {
    const problems: Array<string> = []
    const probe = makeProbe()
    const { offered, sink } = makeSink(p.sink)
    const executor = yield* Executor.make(yield* ToolRegistry.make(tools(probe)), p.middleware ? { middleware: passThrough } : {})
    let finished = false
    let atReturn = { running: -1, invocations: -1, events: -1 }
    const body: Effect.Effect<ReadonlyArray<ToolResult.ToolResult>, Executor.BatchFailed, Executor.Requirements<never>> = p.mode === "batch"
      ? executor.runBatch(p.calls, { concurrency: p.concurrency, failurePolicy: p.policy })
      : Effect.forEach(p.calls, (c) =>
        executor.run(c).pipe(
          Effect.catch((error) => Effect.succeed(ToolResult.fromError(c, error)))
        ), { concurrency: p.concurrency })
    if (p.stop === "cancel-before") yield* executor.runCancel.cancel("before")
    const fiber = yield* Effect.forkChild(
      Effect.exit(body).pipe(
        Effect.ensuring(Effect.sync(() => {
          finished = true
          atReturn = { running: probe.running, invocations: probe.invocations, events: offered.length }
        })),
        Effect.provide(services(sink))
      )
    )
    for (let t = 0; t < p.at && !finished; t += 10) {
      yield* Effect.yieldNow
      yield* TestClock.adjust(10)
    }
    for (let i = 0; i < p.yields; i++) yield* Effect.yieldNow
    // Forked: the interruption waits for the calls' terminal events, which may wait for the clock.
    if (p.stop === "interrupt") yield* Effect.forkChild(Fiber.interrupt(fiber))
    if (p.stop === "cancel") yield* executor.runCancel.cancel("stop")
    for (let i = 0; i < 2000 && !finished; i++) {
      yield* Effect.yieldNow
      yield* TestClock.adjust(50)
    }
    if (!finished) return { problems: ["the batch never finished"], results: "", events: "" } satisfies Ending
    const exit = yield* Fiber.await(fiber)
    let results: ReadonlyArray<ToolResult.ToolResult> | undefined
    if (Exit.isSuccess(exit)) {
      const inner = exit.value
      if (Exit.isSuccess(inner)) results = inner.value
      else {
        const failure = Cause.findErrorOption(inner.cause)
        if (failure._tag === "Some") {
          results = failure.value.results
          stats.batchFailed++
        } else problems.push(`the batch died: ${Cause.pretty(inner.cause).split("\n")[0]}`)
      }
    } else {
      stats.interrupted++
    }
    if (atReturn.running !== 0) problems.push(`handlers still running when the batch returned: ${atReturn.running}`)
    const broken = violation(p.calls, offered, results)
    if (broken !== undefined) problems.push(broken)
    if (probe.peak > p.concurrency) problems.push(`peak concurrency above the bound: ${probe.peak} > ${p.concurrency}`)
    if (probe.exclusivePeak > 1) problems.push(`exclusive tools overlapped: ${probe.exclusivePeak}`)
    if (p.stop === "cancel-before" && probe.invocations > 0) problems.push("a handler ran on a cancelled executor")
    // idempotency: at most one application per key; one value per key; the key in every lifecycle event
    for (const [key, n] of probe.applied) if (n > 1) problems.push(`key ${key} applied ${n} times`)
    const valueOf = new Map<string, unknown>()
    for (const [i, c] of p.calls.entries()) {
      if (c.name !== "charge") continue
      const key = (c.arguments as { key?: string }).key
      for (const e of offered) {
        if (!("toolCallId" in e) || e.toolCallId !== c.id) continue
        if (["tool.started", "tool.retrying", "tool.completed", "tool.failed"].includes(e._tag)) {
          if ((e as ToolEvent.ToolStarted).idempotencyKey !== key) problems.push(`${e._tag} of ${c.id} without its key`)
        }
      }
      const result = results?.[i]
      if (result === undefined || result.isError || key === undefined) continue
      if (result.idempotency?.replayed === true) stats.replayed++
      const seen = valueOf.get(key)
      if (seen === undefined) valueOf.set(key, result.value)
      else if (seen !== result.value) problems.push(`key ${key} answered ${String(seen)} and ${String(result.value)}`)
    }
    if (p.stop === "none" && p.policy === "settle" && results?.some((r) => r.error?._tag === "ToolCancelled")) {
      problems.push("settle without a stop cancelled a call")
    }
    // later: nothing starts, nothing is emitted, the results stay as they were
    const before = results === undefined ? "" : snapshot(results)
    for (let i = 0; i < 20; i++) {
      yield* Effect.yieldNow
      yield* TestClock.adjust(100)
    }
    if (probe.invocations !== atReturn.invocations) problems.push("a handler started after the batch returned")
    if (offered.length !== atReturn.events) problems.push("an event was emitted after the batch returned")
    if (results !== undefined && snapshot(results) !== before) problems.push("the results changed after the batch returned")
    if (results !== undefined && p.mode === "batch" && !Object.isFrozen(results)) problems.push("the results are not frozen")
    stats.runs++
    stats.calls += p.calls.length
    stats.events += offered.length
    stats.started += offered.filter((e) => e._tag === "tool.started").length
    stats.progress += offered.filter((e) => e._tag === "tool.progress").length
    for (const r of results ?? []) {
      if (r.error?._tag === "ToolCancelled") {
        if ((r.error as ToolError.ToolCancelled).started) stats.cancelledRunning++
        else stats.cancelledBeforeStart++
      }
    }
    const perCall = p.calls.map((c) =>
      offered.filter((e) => "toolCallId" in e && e.toolCallId === c.id).map((e) => e._tag).join(",")
    )
    return { problems, results: results === undefined ? "interrupted" : before, events: perCall.join(" | ") } satisfies Ending
  })

/** The plan on one path: `eager` (steps that complete run as plain calls, `Now`) or every step as an effect. */
const checkOn = (p: Plan, eager: boolean) =>
  Effect.suspend(() => {
    Now.mode.eager = eager
    return check(p)
  }).pipe(Effect.ensuring(Effect.sync(() => void (Now.mode.eager = true))))

/** The kind of a broken guarantee: the message up to its first colon or digit-free prefix. */
const category = (message: string) => message.replace(/c\d+/g, "c#").replace(/\d+/g, "#").split(":")[0]!

describe("Executor exactness", () => {
  it.effect(`${runs} random batches: one terminal event per started call, gap-free sequences, final results`, () =>
    Effect.gen(function*() {
      const broken = new Map<string, { count: number; example: string }>()
      let failed = 0
      // Every plan runs twice: with the executor's plain-call path (steps that complete are answered
      // as completed Exits, `Now`) and with every step run as an effect. Both must hold every guarantee,
      // and a plan nobody stops (no clock-dependent interruption) must end the same on both:
      // the same results and, per call, the same events.
      let compared = 0
      const before = { ...Now.calls }
      let effectOnly = 0
      for (let seed = firstSeed; seed < firstSeed + runs; seed++) {
        const p = plan(seed)
        const fast = yield* checkOn(p, true)
        const nowBefore = Now.calls.now
        const slow = yield* checkOn(p, false)
        effectOnly += Now.calls.now - nowBefore
        const problems = [...fast.problems, ...slow.problems.map((problem) => `effect path: ${problem}`)]
        if (p.stop === "none" || p.stop === "cancel-before") {
          compared++
          if (fast.results !== slow.results) problems.push(`the paths told apart: results ${fast.results} vs ${slow.results}`)
          if (fast.events !== slow.events) problems.push(`the paths told apart: events ${fast.events} vs ${slow.events}`)
        }
        if (problems.length > 0) failed++
        for (const problem of problems) {
          const key = category(problem)
          const seen = broken.get(key)
          if (seen === undefined) broken.set(key, { count: 1, example: `seed ${seed}: ${problem}\nplan: ${JSON.stringify(p)}` })
          else seen.count++
        }
      }
      if (broken.size > 0) {
        assert.fail(
          `${failed} of ${runs} batches broke a guarantee:\n${
            [...broken].map(([key, { count, example }]) => `- ${count}× ${key}\n  first: ${example}`).join("\n")
          }`
        )
      }
      assert.strictEqual(stats.runs, 2 * runs)
      // both paths were taken: calls answered by plain calls, and calls that fell back to effects
      const plain = Now.calls.now - before.now
      const effects = Now.calls.effect - before.effect
      assert.strictEqual(effectOnly, 0, "with eager off, no call is answered as an Exit")
      if (runs >= 100) {
        assert.isAbove(plain, runs / 20)
        assert.isAbove(effects, runs / 4)
        assert.isAbove(compared, runs / 4)
      }
      if (runs >= 100) {
        // Something of each kind happened.
        assert.isAbove(stats.cancelledRunning, 0)
        assert.isAbove(stats.cancelledBeforeStart, 0)
        assert.isAbove(stats.replayed, 0)
        assert.isAbove(stats.progress, 0)
      }
      console.log(`executor exactness: ${JSON.stringify({ ...stats, compared, plain, effects })}`)
    }).pipe(Effect.provide(Logger.layer([]))), { timeout: 600_000 })
})
