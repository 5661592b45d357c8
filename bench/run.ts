/**
 * `npm run bench`: the executor's full lifecycle against a floor measured in the
 * same run, interleaved. Ratios to the floor, not absolute times, are what to
 * compare across machines (and across runs on a shared machine).
 *
 * The measured call (issue "Executor 2", Performance):
 * - a lazy handler (`Effect.sync`) under a timeout the tool declares (the executor calls
 *   an `Effect.sync`'s thunk on the calling fiber: a timer is armed, a `Cancellation` made
 *   and a fiber forked only for a handler that needs them; the `Effect.gen` row forks one);
 * - argument validation (JSON text decoded with the tool's input schema, unknown
 *   keys refused, every issue collected on failure);
 * - two events (`tool.started`, `tool.completed`) into the in-memory sink
 *   (`EventSink.layerMemory`, which keeps them: their memory counts);
 * - one `around` middleware that calls `next`.
 *
 * The floor: `JSON.parse`, then `Schema.decodeUnknownResult` of the same input
 * schema (`errors: "all"`, `onExcessProperty: "error"`), then the function.
 *
 * Rows:
 * - `batch`: `runBatch` of N calls on a fresh executor (one executor per run),
 *   concurrency 16, N = 10,000 and N = 100,000 (linearity: µs/call should not grow);
 * - `one call`: a one-call `runBatch`, repeated inside one program, on an
 *   executor made once (an agent turn) and with `Executor.make` each time;
 * - `keyed (memory store)`: the lazy tool with an idempotency key (`Tool.make({ idempotency })`),
 *   a fresh key per call on a fresh memory store (look up, claim, run, store, release);
 * - `Effect.succeed` handler: a handler that answers a completed `Exit` (no fiber, timer or signal);
 * - `Effect.gen` handler: the lazy tool's work in `Effect.gen`, which runs in a fiber of its own
 *   (forked and completed synchronously, the call's context and `Cancellation` provided to it).
 *
 * After the table, each executor target of issue #25 beside its measured value and whether it is met,
 * judged on the median wall time (as the issue measured) and on CPU time (which a shared machine
 * disturbs less, but which counts the collectors' helper threads too).
 *
 * Time: the median of interleaved samples (floor, full, floor, full, ...),
 * measured around `runBatch` only (layers are built outside the timed region),
 * as wall time and as this process's CPU time (`process.cpuUsage`, user +
 * system, all threads: it includes the collectors' helper threads), which other
 * processes on a shared machine disturb less than wall time.
 * Memory: `v8.GCProfiler` around one more sample of each side: bytes allocated
 * = growth of the used heap + everything each garbage collection freed; per
 * call, median of 3 samples; `gc %` is the collectors' main-thread time as a
 * share of that sample's wall time. Objects still alive afterwards (the sink's
 * events, the results) count as allocated.
 *
 * Then the store case (bench/stores.ts): 10,000 idempotent keyed calls through
 * the executor per `StoreRegistry` backend (memory, file system, SQLite, Redis
 * when `redis-server` is on PATH), µs per call next to memory.
 * `TINYAGENTS_BENCH=stores` runs only that case, `TINYAGENTS_BENCH=executor` only the first.
 *
 * `TINYAGENTS_BENCH=durable` runs only the durable-agents simulation (bench/durable.ts: 1,000
 * concurrent durable agents on SQLite, then on Postgres with 1, 2 and 4 runner processes when the
 * machine has Postgres, then a SQLite runner restarted after SIGKILL), ending with the goals of issue
 * #25 for durable runs, each with its target and met or not; it is not part of the default run,
 * which stays short.
 *
 * `TINYAGENTS_BENCH=toolsearch` runs only the tool-search measurements (bench/toolsearch.ts: recall
 * of the search index against `Selection.rank` on 400 BFCL questions over a 1,295-tool catalogue,
 * search and build time at 1,295 and 10,360 tools, prompt size per provider dialect with every tool
 * advertised vs deferred); about 10 s of CPU, so not part of the default run either.
 *
 * `TINYAGENTS_BENCH=decode` runs only argument decoding (bench/decode.ts: `JSON.parse`, the floor's
 * decode, `ToolInput.decoder` with and without its compiled validator, ns and KB per call).
 *
 * `TINYAGENTS_BENCH=inspect` runs only the inspector's page loads on a 10,000-call run
 * (bench/inspect.ts), in chromium too when `/usr/bin/chromium` is there.
 */
import { Effect, Layer, Result, Schema } from "effect"
import * as v8 from "node:v8"
import * as vm from "node:vm"
import { EventSink, Executor, Middleware, RunContext, StoreRegistry, Tool, ToolRegistry } from "../src/index.ts"
import type { ToolCall } from "../src/index.ts"
import { storeRows } from "./stores.ts"

v8.setFlagsFromString("--expose-gc")
const gc = vm.runInNewContext("gc") as () => void

const Input = Schema.Struct({ a: Schema.Number, b: Schema.Number, label: Schema.optionalKey(Schema.String) })
const Output = Schema.Struct({ sum: Schema.Number })
const add = ({ a, b }: { readonly a: number; readonly b: number }) => ({ sum: a + b })

/** The target: a lazy handler under an armed timeout. */
const lazyTool = Tool.make("add_lazy", {
  description: "Adds two numbers.",
  input: Input,
  output: Output,
  safety: { access: "read", idempotent: true },
  timeout: "30 seconds",
  handler: (input) => Effect.sync(() => add(input))
})

/** A handler that returns a completed `Exit`: the executor runs it without timer or signal. */
const eagerTool = Tool.make("add_eager", {
  description: "Adds two numbers.",
  input: Input,
  output: Output,
  safety: { access: "read", idempotent: true },
  handler: (input) => Effect.succeed(add(input))
})

/** The lazy tool's work in `Effect.gen`: a handler the executor runs in a fiber of its own. */
const genTool = Tool.make("add_gen", {
  description: "Adds two numbers.",
  input: Input,
  output: Output,
  safety: { access: "read", idempotent: true },
  timeout: "30 seconds",
  handler: (input) =>
    Effect.gen(function*() {
      return add(input)
    })
})

/** The lazy tool with an idempotency key (`Tool.make({ idempotency })`), on the memory store: the keyed path. */
const keyedTool = Tool.make("add_keyed", {
  description: "Adds two numbers, once per key.",
  input: Input,
  output: Output,
  safety: { access: "write" },
  timeout: "30 seconds",
  idempotency: ({ a }) => `k${a}`,
  handler: (input) => Effect.sync(() => add(input))
})

const passThrough = Middleware.make({ name: "pass-through", around: (invocation, next) => next(invocation) })

const registry = Result.getOrThrow(ToolRegistry.makeResult([lazyTool, eagerTool, genTool, keyedTool]))
const executorOptions = { middleware: [passThrough], concurrency: 16 }

const callsOf = (n: number, name: string): ReadonlyArray<ToolCall.ToolCall> =>
  Array.from({ length: n }, (_, i) => ({ id: `call_${i}`, name, arguments: `{"a":${i},"b":2,"label":"x"}` }))

const layer = Layer.mergeAll(
  RunContext.RunContext.layer({ threadId: "bench", runId: "bench", turn: 0 }),
  StoreRegistry.StoreRegistry.layerMemory,
  EventSink.EventSink.layerMemory
)

const check = (results: ReadonlyArray<{ readonly isError: boolean }>, n: number) => {
  if (results.length !== n || results.some((r) => r.isError)) throw new Error("bench: bad results")
}

/** Milliseconds spent in the timed region: wall clock and this process's CPU time (user + system). */
interface Timing {
  readonly wall: number
  readonly cpu: number
}

/** One sample. */
type Sample = () => Promise<Timing>

/** Starts a timed region; calling the result ends it. */
const startTiming = (): () => Timing => {
  const wall = performance.now()
  const cpu = process.cpuUsage()
  return () => {
    const used = process.cpuUsage(cpu)
    return { wall: performance.now() - wall, cpu: (used.user + used.system) / 1000 }
  }
}

const floor = (calls: ReadonlyArray<ToolCall.ToolCall>, repeat = 1): Sample => {
  const decode = Schema.decodeUnknownResult(Input, { errors: "all", onExcessProperty: "error" })
  return async () => {
    let sink = 0
    const stop = startTiming()
    for (let r = 0; r < repeat; r++) {
      for (const call of calls) {
        const input = Result.getOrThrow(decode(JSON.parse(call.arguments as string)))
        sink += add(input).sum
      }
    }
    const timing = stop()
    if (sink < 0) throw new Error("unreachable")
    return timing
  }
}

/** `runBatch(calls)` on a fresh executor; the layers and the executor are built before the clock starts. */
const batch = (calls: ReadonlyArray<ToolCall.ToolCall>): Sample => () =>
  Effect.runPromise(
    Effect.gen(function*() {
      const executor = yield* Executor.make(registry, executorOptions)
      const stop = startTiming()
      const results = yield* executor.runBatch(calls)
      const timing = stop()
      check(results, calls.length)
      return timing
    }).pipe(Effect.provide(layer))
  )

/** `repeat` one-call batches in one program, on one executor or (`make`) a new executor each time. */
const oneCall = (call: ToolCall.ToolCall, repeat: number, make: boolean): Sample => () =>
  Effect.runPromise(
    Effect.gen(function*() {
      const calls = [call]
      let executor = yield* Executor.make(registry, executorOptions)
      const stop = startTiming()
      for (let i = 0; i < repeat; i++) {
        if (make) executor = yield* Executor.make(registry, executorOptions)
        check(yield* executor.runBatch(calls), 1)
      }
      return stop()
    }).pipe(Effect.provide(layer))
  )

const median = (samples: Array<number>): number => {
  samples.sort((x, y) => x - y)
  return samples[Math.floor(samples.length / 2)]!
}

/** Medians (wall and CPU) of `runs` interleaved samples of `a` and `b`, after `warmup` of each. */
const timePair = async (runs: number, warmup: number, a: Sample, b: Sample): Promise<readonly [Timing, Timing]> => {
  for (let i = 0; i < warmup; i++) {
    await a()
    await b()
  }
  const as: Array<Timing> = []
  const bs: Array<Timing> = []
  for (let i = 0; i < runs; i++) {
    as.push(await a())
    bs.push(await b())
  }
  const medians = (ts: Array<Timing>): Timing => ({ wall: median(ts.map((t) => t.wall)), cpu: median(ts.map((t) => t.cpu)) })
  return [medians(as), medians(bs)]
}

/** Bytes allocated by one sample (used-heap growth plus what every collection freed) and the collectors' time. */
const allocation = async (sample: Sample): Promise<{ readonly bytes: number; readonly gcShare: number }> => {
  gc()
  const profiler = new v8.GCProfiler()
  const before = v8.getHeapStatistics().used_heap_size
  profiler.start()
  const { wall } = await sample()
  const report = profiler.stop()
  const after = v8.getHeapStatistics().used_heap_size
  let freed = 0
  let gcMicros = 0
  for (const s of report.statistics) {
    freed += s.beforeGC.heapStatistics.usedHeapSize - s.afterGC.heapStatistics.usedHeapSize
    gcMicros += s.cost
  }
  return { bytes: after - before + freed, gcShare: gcMicros / 1000 / wall }
}

const allocationMedian = async (sample: Sample) => {
  const runs = [await allocation(sample), await allocation(sample), await allocation(sample)]
  return { bytes: median(runs.map((r) => r.bytes)), gcShare: median(runs.map((r) => r.gcShare)) }
}

interface Case {
  readonly name: string
  /** Calls per sample. */
  readonly calls: number
  readonly runs: number
  readonly warmup: number
  readonly floor: Sample
  readonly full: Sample
}

const target10k = callsOf(10_000, "add_lazy")
const target100k = callsOf(100_000, "add_lazy")
const one = callsOf(1, "add_lazy")[0]!
const oneRepeat = 2_000

const cases: ReadonlyArray<Case> = [
  { name: "batch, lazy handler", calls: 10_000, runs: 11, warmup: 3, floor: floor(target10k), full: batch(target10k) },
  { name: "batch, lazy handler", calls: 100_000, runs: 3, warmup: 1, floor: floor(target100k), full: batch(target100k) },
  {
    name: "one-call batch",
    calls: oneRepeat,
    runs: 7,
    warmup: 2,
    floor: floor([one], oneRepeat),
    full: oneCall(one, oneRepeat, false)
  },
  {
    name: "one-call batch + Executor.make",
    calls: oneRepeat,
    runs: 7,
    warmup: 2,
    floor: floor([one], oneRepeat),
    full: oneCall(one, oneRepeat, true)
  },
  {
    // a fresh executor and a fresh memory store per sample, so every key is applied (not replayed)
    name: "batch, keyed (memory store)",
    calls: 10_000,
    runs: 7,
    warmup: 2,
    floor: floor(callsOf(10_000, "add_keyed")),
    full: batch(callsOf(10_000, "add_keyed"))
  },
  {
    name: "batch, Effect.succeed handler",
    calls: 10_000,
    runs: 7,
    warmup: 2,
    floor: floor(callsOf(10_000, "add_eager")),
    full: batch(callsOf(10_000, "add_eager"))
  },
  {
    name: "batch, Effect.gen handler (own fiber)",
    calls: 10_000,
    runs: 7,
    warmup: 2,
    floor: floor(callsOf(10_000, "add_gen")),
    full: batch(callsOf(10_000, "add_gen"))
  }
]

/** Each #25 executor target next to the measured value, and whether it is met. */
const targets = (rows: ReadonlyArray<Record<string, string | number>>) => {
  const row = (name: string, n?: number) => rows.find((r) => r["case"] === name && (n === undefined || r["N"] === n))!
  const num = (r: Record<string, string | number>, column: string) => Number(r[column])
  const full10k = row("batch, lazy handler", 10_000)
  const full100k = row("batch, lazy handler", 100_000)
  const one = row("one-call batch")
  const keyed = row("batch, keyed (memory store)")
  const gen = row("batch, Effect.gen handler (own fiber)")
  const cpuRatio = (r: Record<string, string | number>) => num(r, "cpu × floor")
  const verdict = (ok: boolean) => ok ? "met" : "not met"
  return [
    {
      target: "full lifecycle, 10,000 calls: ≤ 3 µs/call",
      measured: `${num(full10k, "cpu µs/call")} cpu µs (wall ${num(full10k, "µs/call")}); ${cpuRatio(full10k)}× floor; gc ${
        full10k["gc %"]
      }% (a handler in its own fiber, Effect.gen: ${num(gen, "cpu µs/call")} cpu µs)`,
      "met (wall)": verdict(num(full10k, "µs/call") <= 3),
      "met (cpu)": verdict(num(full10k, "cpu µs/call") <= 3)
    },
    {
      target: "full lifecycle, 10,000 calls: ≤ 2 KB/call",
      measured: `${num(full10k, "KB/call")} KB (of which the floor's decode ${num(full10k, "floor KB")} KB)`,
      "met (wall)": verdict(num(full10k, "KB/call") <= 2),
      "met (cpu)": "-"
    },
    {
      target: "linear to 100,000 calls (µs/call at 100,000 ≤ 1.25 × at 10,000)",
      measured: `${num(full100k, "µs/call")} vs ${num(full10k, "µs/call")} µs/call (cpu ${num(full100k, "cpu µs/call")} vs ${
        num(full10k, "cpu µs/call")
      }); gc ${full100k["gc %"]}% (the sink keeps 200,000 events)`,
      "met (wall)": verdict(num(full100k, "µs/call") <= 1.25 * num(full10k, "µs/call")),
      "met (cpu)": verdict(num(full100k, "cpu µs/call") <= 1.25 * num(full10k, "cpu µs/call"))
    },
    {
      target: "one-call batch: ≤ 8 µs",
      measured: `${num(one, "cpu µs/call")} cpu µs (wall ${num(one, "µs/call")}); ${cpuRatio(one)}× floor; ${num(one, "KB/call")} KB`,
      "met (wall)": verdict(num(one, "µs/call") <= 8),
      "met (cpu)": verdict(num(one, "cpu µs/call") <= 8)
    },
    {
      target: "keyed call (memory store): ≤ 2 × an unkeyed one",
      measured: `${(num(keyed, "µs/call") / num(full10k, "µs/call")).toFixed(2)}× wall, ${
        (num(keyed, "cpu µs/call") / num(full10k, "cpu µs/call")).toFixed(2)
      }× cpu (${num(keyed, "µs/call")} vs ${num(full10k, "µs/call")} µs/call); ${num(keyed, "KB/call")} KB/call`,
      "met (wall)": verdict(num(keyed, "µs/call") <= 2 * num(full10k, "µs/call")),
      "met (cpu)": verdict(num(keyed, "cpu µs/call") <= 2 * num(full10k, "cpu µs/call"))
    }
  ]
}

const only = process.env["TINYAGENTS_BENCH"]
if (only === "toolsearch") {
  const { report } = await import("./toolsearch.ts")
  await report()
  process.exit(0)
}
if (only === "decode") {
  const { decodeRows } = await import("./decode.ts")
  console.log("Argument decoding alone (JSON text in, typed input out); CPU ns and KB allocated per call.")
  console.table(decodeRows())
  process.exit(0)
}
if (only === "inspect") {
  const { inspectRows } = await import("./inspect.ts")
  console.log("The inspector on a run of 10,000 tool calls (JSONL, served on loopback).")
  console.table(await inspectRows())
  process.exit(0)
}
if (only === "durable") {
  const { durableRows, durableTargets, restartCase } = await import("./durable.ts")
  console.log(
    "Durable agents: each 2 model turns (scripted) and 2 tool calls of 50 ms; all started at once.",
    "journal rows/call: cluster_messages + cluster_replies + durable events and markers, per tool call."
  )
  const durable = await durableRows()
  console.table(durable)
  const restart = process.env["TINYAGENTS_BENCH_SQLITE"] === "0" ? undefined : await restartCase()
  console.log("Goals (issue #25, durable runs):")
  console.table(durableTargets(durable, restart))
  process.exit(0)
}
const rows: Array<Record<string, string | number>> = []
for (const c of only === "stores" ? [] : cases) {
  const [floorTime, time] = await timePair(c.runs, c.warmup, c.floor, c.full)
  const memory = await allocationMedian(c.full)
  const floorMemory = await allocationMedian(c.floor)
  const perCall = (ms: number) => +(ms * 1000 / c.calls).toFixed(2)
  rows.push({
    case: c.name,
    N: c.name.startsWith("one") ? 1 : c.calls,
    "µs/call": perCall(time.wall),
    "floor µs": perCall(floorTime.wall),
    "× floor": +(time.wall / floorTime.wall).toFixed(1),
    "cpu µs/call": perCall(time.cpu),
    "cpu × floor": +(time.cpu / floorTime.cpu).toFixed(1),
    "KB/call": +(memory.bytes / 1024 / c.calls).toFixed(2),
    "floor KB": +(floorMemory.bytes / 1024 / c.calls).toFixed(2),
    "gc %": Math.round(memory.gcShare * 100)
  })
}
if (only !== "stores") {
  console.log(
    "Concurrency 16. µs: median wall time; cpu µs: median CPU time of this process (steadier on a busy machine);",
    "KB: bytes allocated (median of 3). A one-call batch is repeated 2,000 times in one program."
  )
  console.table(rows)
  console.log(
    "Issue #25 executor targets (set on a quiet 16-core machine, on wall time; 'cpu' counts every thread of",
    "this process, the collectors' helpers too). On a shared or slower machine compare the '× floor' ratios and the KB."
  )
  console.table(targets(rows))
}
if (only !== "executor") {
  console.log(
    "Stores: idempotent keyed calls through the executor (concurrency 16), median of 5 rounds after a warm-up;",
    "apply: a fresh key each call (look up, claim, run, store, release); replay: the same keys again."
  )
  console.table(await storeRows())
}
