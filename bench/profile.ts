/**
 * `node --conditions=tinyagents-source --cpu-prof bench/profile.ts [N] [rounds]`: the
 * benchmark's target batch (lazy Effect.sync handler under a timeout, validation, two events, one
 * middleware; concurrency 16) in a loop, for a CPU or heap profile. It prints the median
 * wall and CPU time per call.
 *
 * `... bench/profile.ts [N] [rounds] --alloc`: instead, where the bytes go: V8's sampling heap
 * profiler (through `node:inspector`, counting objects the collector has freed too) around the
 * rounds after a warm-up, as bytes allocated per call by the function that allocated them
 * (inlined functions count in their caller), largest first.
 *
 * `--keyed`: the same tool with an idempotency key, a fresh key per call on a fresh memory store per
 * round (the benchmark's keyed row: look up, claim, run, store, release).
 *
 * `--one`: instead of one batch of N calls, N one-call batches on one executor (the benchmark's
 * one-call batch row: what a batch costs beyond its call).
 *
 * `--sqlite` (with `--keyed`): the store is SQLite (`Stores.layerSqlite`, a fresh file per round in a
 * temporary directory) instead of memory (the stores bench's SQLite row). `--replay`: each round
 * applies the N keys first, untimed, then times their replay (the stores bench's replay column).
 */
import { Effect, Layer, Result, Schema } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import * as inspector from "node:inspector/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { EventSink, Executor, Middleware, RunContext, StoreRegistry, Tool, ToolRegistry } from "../src/index.ts"
import { Stores } from "../src/stores/index.ts"

const Input = Schema.Struct({ a: Schema.Number, b: Schema.Number, label: Schema.optionalKey(Schema.String) })
const tool = Tool.make("add_lazy", {
  description: "Adds two numbers.",
  input: Input,
  output: Schema.Struct({ sum: Schema.Number }),
  safety: { access: "read", idempotent: true },
  timeout: "30 seconds",
  handler: ({ a, b }) => Effect.sync(() => ({ sum: a + b })),
  ...(process.argv.includes("--keyed") ? { idempotency: ({ a }: { readonly a: number }) => `k${a}` } : {})
})
const registry = Result.getOrThrow(ToolRegistry.makeResult([tool]))
const middleware = [Middleware.make({ name: "pass-through", around: (invocation, next) => next(invocation) })]
const args = process.argv.slice(2).filter((a) => !a.startsWith("--"))
const alloc = process.argv.includes("--alloc")
const one = process.argv.includes("--one")
const n = Number(args[0] ?? 10_000)
const rounds = Number(args[1] ?? 30)
const calls = Array.from({ length: n }, (_, i) => ({ id: `call_${i}`, name: "add_lazy", arguments: `{"a":${i},"b":2,"label":"x"}` }))
const replay = process.argv.includes("--replay")
const dir = process.argv.includes("--sqlite") ? mkdtempSync(join(tmpdir(), "tinyagents-profile-")) : undefined
process.on("exit", () => dir !== undefined && rmSync(dir, { recursive: true, force: true }))
let files = 0
const layer = () =>
  Layer.mergeAll(
    RunContext.RunContext.layer({ threadId: "bench", runId: "bench", turn: 0 }),
    dir === undefined ? StoreRegistry.StoreRegistry.layerMemory : Stores.layerSqlite({ filename: join(dir, `${files++}.db`) }),
    EventSink.EventSink.layerMemory
  )

/** One round: wall and CPU milliseconds of one `runBatch` of the N calls. */
const round = () =>
  Effect.runPromise(
    Effect.gen(function*() {
      const executor = yield* Executor.make(registry, { middleware, concurrency: 16 })
      if (replay) yield* executor.runBatch(calls)
      const wall = performance.now()
      const cpu = process.cpuUsage()
      if (one) for (const call of calls) yield* executor.runBatch([call])
      else yield* executor.runBatch(calls)
      const used = process.cpuUsage(cpu)
      return { wall: performance.now() - wall, cpu: (used.user + used.system) / 1000 }
    }).pipe(Effect.provide(layer()))
  )

interface Node {
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number }
  readonly selfSize: number
  readonly children: ReadonlyArray<Node>
}

if (alloc) {
  for (let r = 0; r < 3; r++) await round()
  const session = new inspector.Session()
  session.connect()
  await session.post("HeapProfiler.enable")
  await session.post("HeapProfiler.startSampling", {
    samplingInterval: 256,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true
  })
  for (let r = 0; r < rounds; r++) await round()
  const { profile } = await session.post("HeapProfiler.stopSampling")
  const bytes = new Map<string, number>()
  let total = 0
  const walk = (node: Node) => {
    const { functionName, lineNumber, url } = node.callFrame
    const at = `${functionName || "(anonymous)"} ${url.split("/").slice(-2).join("/")}:${lineNumber + 1}`
    bytes.set(at, (bytes.get(at) ?? 0) + node.selfSize)
    total += node.selfSize
    node.children.forEach(walk)
  }
  walk(profile.head as Node)
  const perCall = (b: number) => b / (rounds * n)
  console.log(`${(perCall(total) / 1024).toFixed(2)} KB allocated per call (sampled), by allocating function:`)
  for (const [at, b] of [...bytes].sort((x, y) => y[1] - x[1]).slice(0, 25)) {
    if (perCall(b) >= 8) console.log(`${perCall(b).toFixed(0).padStart(6)} B  ${at}`)
  }
} else {
  const times: Array<{ wall: number; cpu: number }> = []
  for (let r = 0; r < rounds; r++) times.push(await round())
  const median = (xs: Array<number>) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
  console.log(
    `median ${(median(times.map((t) => t.wall)) * 1000 / n).toFixed(2)} µs/call wall, ${
      (median(times.map((t) => t.cpu)) * 1000 / n).toFixed(2)
    } µs/call CPU`
  )
}
