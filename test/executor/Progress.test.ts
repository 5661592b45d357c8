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
import { scrubberOf } from "../../src/internal/redact/policy.ts"
import { random } from "../support/random.ts"
import { count } from "../support/tier.ts"

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
      const runs = count("TINYAGENTS_PROGRESS_RUNS", 25, 250)
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

  /**
   * A tool that makes the given reports (`message` and/or `chunk`), each followed by a sleep of `gap` ms,
   * under the given redaction policy; its arguments hold the secret under `password`.
   */
  const reporterOf = (redact: { readonly keys?: ReadonlyArray<string>; readonly patterns?: ReadonlyArray<RegExp> }) =>
    Tool.make("reporter", {
      description: "Makes the reports it is given.",
      input: Schema.Struct({
        password: Schema.Unknown,
        reports: Schema.Array(Schema.Struct({
          message: Schema.optionalKey(Schema.String),
          chunk: Schema.optionalKey(Schema.String),
          gap: Schema.optionalKey(Schema.Int)
        }))
      }),
      safety: { redact },
      services: [ToolProgress.ToolProgress],
      handler: ({ reports }) =>
        Effect.gen(function*() {
          for (const { gap, ...update } of reports) {
            yield* ToolProgress.report(update)
            if ((gap ?? 0) > 0) yield* Effect.sleep(gap!)
          }
          return "ok"
        })
    })
  type Report = { readonly message?: string; readonly chunk?: string; readonly gap?: number }
  /** The progress events of one call of {@link reporterOf}'s tool. */
  const reported = (
    redact: { readonly keys?: ReadonlyArray<string>; readonly patterns?: ReadonlyArray<RegExp> },
    password: unknown,
    reports: ReadonlyArray<Report>
  ) =>
    Effect.gen(function*() {
      const executor = yield* Executor.make(yield* ToolRegistry.make([reporterOf(redact)]))
      const result = yield* driven(executor.run(call("c1", "reporter", { password, reports })))
      assert.strictEqual(result.value, "ok")
      const all = yield* events
      assert.strictEqual(tagsOf(all).at(-1), "tool.completed")
      return progressOf(all)
    })
  /** Every run of `size` characters of `secret` (the fragments no event may carry). */
  const fragments = (secret: string, size: number) =>
    Array.from({ length: secret.length - size + 1 }, (_, i) => secret.slice(i, i + size))
  const wellFormed = (text: string) => !/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(text)

  it.effect("a long message is redacted whole before it is cut: no start of a secret at the cut", () =>
    run(Effect.gen(function*() {
      const password = `P${"w".repeat(49)}`
      const [event, ...rest] = yield* reported({ keys: ["password"] }, password, [
        { message: Array(120).fill(password).join(" ") }
      ])
      assert.lengthOf(rest, 0)
      const redacted = Array(120).fill("[redacted]").join(" ")
      assert.strictEqual(event!.message, `${redacted.slice(0, ToolProgress.limits.messageChars - 1)}…`)
      assert.notInclude(event!.message!, "Pww")
    })))

  it.effect("partial output cut at its front while pending: no end of a secret at the cut", () =>
    run(Effect.gen(function*() {
      const password = `${"q".repeat(99)}Z`
      // 20,199 characters at once: more than is kept raw while pending (twice chunkChars).
      const progress = yield* reported({ keys: ["password"] }, password, [{ chunk: Array(200).fill(password).join(" ") }])
      const joined = progress.map((e) => e.chunk ?? "").join("")
      for (const fragment of fragments(password, 2)) assert.notInclude(joined, fragment)
      // Redacted before it was cut: what is left fits, and nothing is dropped.
      assert.strictEqual(joined, Array(200).fill("[redacted]").join(" "))
      assert.isTrue(progress.every((e) => e.chunkDropped === undefined))
    })))

  it.effect("partial output cut at its front while pending: no end of a pattern match at the cut", () =>
    run(Effect.gen(function*() {
      const key = `sk-${"ABCDEFGHIJKLMNOPQRSTUVWXYZABCD"}`
      // 600 keys and 33 more characters: the text kept raw while pending (its last 16,000 characters)
      // would start inside a key, after its 12th character.
      const text = `${Array(600).fill(key).join(" ")}${"y".repeat(33)}`
      assert.strictEqual((text.length - 2 * ToolProgress.limits.chunkChars) % (key.length + 1), 12)
      const progress = yield* reported({ patterns: [/sk-[A-Z]{30}/g] }, "none", [{ chunk: text }])
      const joined = progress.map((e) => e.chunk ?? "").join("")
      for (const fragment of fragments(key.slice(12), 6)) assert.notInclude(joined, fragment)
      assert.strictEqual(joined, `${Array(600).fill("[redacted]").join(" ")}${"y".repeat(33)}`)
    })))

  it.effect("the hold covers the JSON-escaped form of a secret (a secret with a quote, split across reports)", () =>
    run(Effect.gen(function*() {
      const password = `correct"horse-battery`
      const escaped = JSON.stringify(password).slice(1, -1)
      const progress = yield* reported({ keys: ["password"] }, password, [
        { chunk: `POST body={"password":"${escaped.slice(0, -1)}`, gap: 150 },
        { chunk: `${escaped.slice(-1)}"}` }
      ])
      const joined = progress.map((e) => e.chunk ?? "").join("")
      assert.strictEqual(joined, `POST body={"password":"[redacted]"}`)
    })))

  it.effect("the hold covers the escaped form of a control character or a lone surrogate in a secret", () =>
    run(Effect.gen(function*() {
      for (const password of ["ab\u0001\u0002cd", "\uD800xy\uDFFF"]) {
        const escaped = JSON.stringify(password).slice(1, -1)
        const pieces = [`{"pw":"${escaped.slice(0, 4)}`, `${escaped.slice(4, -2)}`, `${escaped.slice(-2)}"}`]
        const progress = yield* reported(
          { keys: ["password"] },
          password,
          pieces.map((chunk) => ({ chunk, gap: 150 }))
        )
        assert.strictEqual(progress.map((e) => e.chunk ?? "").join(""), `{"pw":"[redacted]"}`, JSON.stringify(password))
        yield* EventSink.EventLog.use((log) => log.clear)
      }
    })))

  it.effect("a secret that holds another (or overlaps it) is redacted whole, in a message and in partial output", () =>
    run(Effect.gen(function*() {
      const secrets = { short: "hunter", long: "hunter22-and-more", other: "more-tail" }
      const text = "a hunter22-and-more-tail b"
      const progress = yield* reported({ keys: ["password"] }, secrets, [{ message: text, chunk: text }])
      for (const e of progress) {
        for (const secret of Object.values(secrets)) {
          for (const fragment of fragments(secret, 3)) {
            assert.notInclude(e.message ?? "", fragment)
            assert.notInclude(e.chunk ?? "", fragment)
          }
        }
      }
      assert.strictEqual(progress[0]!.message, "a [redacted] b")
    })))

  it.effect("a secret split by a cut that waited too long for a pattern is still redacted", () =>
    run(Effect.gen(function*() {
      // A pattern for long tokens: no cut inside a long run of them keeps the stream's redaction, so the
      // text waits until the text kept is full and is then cut where no secret crosses.
      const password = "open sesame 1234"
      const run1 = "A".repeat(1_000)
      const run2 = "A".repeat(2 * ToolProgress.limits.chunkChars - 1_000)
      const progress = yield* reported({ keys: ["password"], patterns: [/\S{300,}/g] }, password, [
        { chunk: run1, gap: 150 },
        { chunk: `${run2}${password}${" ".repeat(248)}`, gap: 150 },
        { chunk: "end" }
      ])
      const joined = progress.map((e) => e.chunk ?? "").join("")
      for (const fragment of fragments(password, 4)) assert.notInclude(joined, fragment)
      // The cut went through the password: each side of it is redacted.
      assert.strictEqual(joined, `[redacted][redacted]${" ".repeat(248)}end`)
    })))

  it.effect("caps never split a surrogate pair (message and partial output)", () =>
    run(Effect.gen(function*() {
      const cap = ToolProgress.limits.messageChars
      const message = `${"a".repeat(cap - 2)}${"😀".repeat(10)}`
      const chunk = `${"😀".repeat(ToolProgress.limits.chunkChars / 2 + 1)}a`
      const [event] = yield* reported({}, "none", [{ message, chunk }])
      assert.isTrue(wellFormed(event!.message!), "message")
      assert.isTrue(event!.message!.endsWith("…"))
      assert.isTrue(wellFormed(event!.chunk!), "chunk")
      assert.isAtMost(event!.chunk!.length, ToolProgress.limits.chunkChars)
      assert.strictEqual(event!.chunk!.length + event!.chunkDropped!, chunk.length)
      yield* EventSink.EventLog.use((log) => log.clear)
      // Cut while pending (more than twice the cap at once), with a redaction policy.
      const long = `${"😀".repeat(ToolProgress.limits.chunkChars + 1)}a`
      const progress = yield* reported({ keys: ["password"] }, "hunter2", [{ chunk: long }])
      for (const e of progress) assert.isTrue(wellFormed(e.chunk ?? ""), "pending chunk")
      yield* EventSink.EventLog.use((log) => log.clear)
      // A pair split across two reports (no redaction policy): its high half waits for the low one.
      const split = yield* reported({}, "none", [{ chunk: "a\uD83D", gap: 150 }, { chunk: "\uDE00b" }])
      assert.deepStrictEqual(split.map((e) => e.chunk), ["a", "😀b"])
    })))

  it.effect("a secret that is part of the marker: redacted, split across reports or not", () =>
    run(Effect.gen(function*() {
      const progress = yield* reported({ keys: ["password"] }, "dacted", [
        { message: "pw dacted, and [redacted] as text", chunk: "x dac", gap: 150 },
        { chunk: "ted y" }
      ])
      assert.strictEqual(progress[0]!.message, "pw [redacted], and [re[redacted]] as text")
      assert.strictEqual(progress.map((e) => e.chunk ?? "").join(""), "x [redacted] y")
    })))

  it.effect("rate: a report pending when the call ends is sent before its terminal event, sooner than the interval", () =>
    run(Effect.gen(function*() {
      // Report, 10 ms, report, 10 ms, return: the second report does not wait for the interval (the call
      // has ended); the events are 20 ms apart. At most one event per interval, plus this last one.
      const progress = yield* reported({}, "none", [{ message: "one", gap: 10 }, { message: "two", gap: 10 }])
      const started = (yield* events)[0]!.timestamp
      assert.deepStrictEqual(progress.map((e) => [e.message, e.timestamp - started]), [["one", 0], ["two", 20]])
    })))

  it.effect("no character of a secret or a match reaches an event (seeded): overlapping secrets, escaped forms, split pairs, caps", () =>
    run(Effect.gen(function*() {
      const seed = Number(process.env["TINYAGENTS_PROGRESS_SEED"] ?? 2718)
      const runs = count("TINYAGENTS_PROGRESS_RUNS", 40, 400)
      const rng = random(seed)
      // Secrets and matches are made of characters that filler text and the marker never hold, so any of
      // them in an event is a leak.
      const secretUnits = [..."ABCFGHKQ0123456789\"\\", "\u0001", "😀"]
      const filler = [..."xyz .,\n"]
      const allowed = new Set([...filler, ..."[redacted]", "…"])
      // Two patterns: a short match, and a long one (reported whole, in one report: a longer match split
      // across reports can be cut, see the module comment).
      const policy = { keys: ["password"], patterns: [/K[0-9]{20}K/g, /Z[0-9A-Q"\\\u0001\uD83D\uDE00]{300,}Z/g] }
      const executor = yield* Executor.make(yield* ToolRegistry.make([reporterOf(policy)]))
      for (let n = 0; n < runs; n++) {
        const secrets: Array<string> = []
        for (let i = rng.int(1, 3); i > 0; i--) {
          const unit = () => rng.pick(secretUnits)
          const kind = rng.int(0, 2)
          const secret = kind === 0 || secrets.length === 0
            ? Array.from({ length: rng.int(3, 30) }, unit).join("")
            : kind === 1
            ? Array.from({ length: rng.int(2, 12) }, () => "").fill(Array.from({ length: rng.int(1, 3) }, unit).join("")).join("")
            : secrets[0]!.slice(0, rng.int(3, Math.max(3, secrets[0]!.length - 1)))
          if (secret.length >= 3) secrets.push(secret)
        }
        if (secrets.length === 0) secrets.push("QQQ")
        const escaped = (secret: string) => JSON.stringify(secret).slice(1, -1)
        const items = Array.from({ length: rng.int(1, 40) }, () => {
          switch (rng.int(0, 4)) {
            case 0:
            case 1:
              return Array.from({ length: rng.int(0, 30) }, () => rng.pick(filler)).join("")
            case 2:
              return rng.chance(0.5) ? rng.pick(secrets) : escaped(rng.pick(secrets))
            case 3:
              return `K${Array.from({ length: 20 }, () => rng.int(0, 9)).join("")}K`
            default:
              return rng.chance(0.1)
                ? "x".repeat(rng.int(1, 3) * ToolProgress.limits.chunkChars)
                : rng.chance(0.2)
                ? `Z${Array.from({ length: rng.pick([300, 1_000, 17_000]) }, () => rng.pick(secretUnits)).join("")}Z`
                : rng.pick(secrets)
          }
        })
        const text = items.join("")
        // No report ends inside a long match.
        const long = items.flatMap((item, i) => {
          const start = items.slice(0, i).join("").length
          return item.startsWith("Z") ? [[start, start + item.length] as const] : []
        })
        const cuts = Array.from({ length: rng.int(0, 12) }, () => rng.int(0, text.length))
          .filter((cut) => !long.some(([start, end]) => start < cut && cut < end))
          .sort((a, b) => a - b)
        const bounds = [0, ...cuts, text.length]
        const pieces = bounds.slice(1).map((end, i) => text.slice(bounds[i], end)).filter((p) => p !== "")
        const reports = pieces.map((chunk): Report => ({
          chunk,
          gap: rng.pick([0, 0, 50, 150]),
          // A message is whole: some of the items, or all of the text.
          ...(rng.chance(0.3) ? { message: rng.chance(0.2) ? text : items.slice(rng.int(0, items.length - 1)).join("") } : {})
        }))
        const id = `f${n}`
        yield* driven(executor.run(call(id, "reporter", { password: secrets, reports })))
        const progress = progressOf(yield* events).filter((e) => e.toolCallId === id)
        const context = `seed ${seed} run ${n}: ${JSON.stringify({ secrets, pieces })}`.slice(0, 2_000)
        for (const e of progress) {
          for (const out of [e.message ?? "", e.chunk ?? ""]) {
            const leaked = [...out].findIndex((c) => !allowed.has(c))
            if (leaked >= 0) {
              const at = [...out].slice(0, leaked).join("").length
              assert.fail(`${context.slice(0, 300)}\nleaked in ${out === e.chunk ? "chunk" : "message"} (${out.length}, dropped ${e.chunkDropped}) at ${at}: ${JSON.stringify(out.slice(Math.max(0, at - 60), at + 60))}`)
            }
          }
        }
        const joined = progress.map((e) => e.chunk ?? "").join("")
        if (progress.every((e) => e.chunkDropped === undefined) && text.length <= 2 * ToolProgress.limits.chunkChars) {
          // Nothing was cut: the joined chunks are the text redacted whole.
          const whole = scrubberOf(policy, { password: secrets })!.text(text)
          assert.strictEqual(joined, whole, context)
        }
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
