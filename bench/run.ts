/**
 * `npm run bench`: a batch of N calls of a trivial validated tool through the
 * full executor lifecycle (in-memory event sink), against a floor measured in the
 * same run: decode with `Schema` and call the function directly. Reports µs per
 * call, calls per second, and the ratio to the floor. Ratios, not absolute times,
 * are what to compare across machines.
 */
import { Effect, Layer, Result, Schema } from "effect"
import { EventSink, Executor, RunContext, StoreRegistry, Tool, ToolRegistry } from "../src/index.ts"
import type { ToolCall } from "../src/index.ts"

const Input = Schema.Struct({ a: Schema.Number, b: Schema.Number, label: Schema.optionalKey(Schema.String) })
const add = ({ a, b }: { readonly a: number; readonly b: number }) => ({ sum: a + b })
const addTool = Tool.make("add", {
  description: "Adds two numbers.",
  input: Input,
  output: Schema.Struct({ sum: Schema.Number }),
  safety: { effect: "read", idempotent: true },
  handler: (input) => Effect.succeed(add(input))
})

/** The same tool with an `Effect.gen` handler: it cannot take the executor's completed-Exit fast path. */
const addGenTool = Tool.make("add_gen", {
  description: "Adds two numbers.",
  input: Input,
  output: Schema.Struct({ sum: Schema.Number }),
  safety: { effect: "read", idempotent: true },
  handler: (input) =>
    Effect.gen(function*() {
      return add(input)
    })
})

const callsOf = (n: number, name: string): ReadonlyArray<ToolCall.ToolCall> =>
  Array.from({ length: n }, (_, i) => ({ id: `call_${i}`, name, arguments: `{"a":${i},"b":2,"label":"x"}` }))

const layer = Layer.mergeAll(
  RunContext.RunContext.layer({ threadId: "bench", runId: "bench", turn: 0 }),
  StoreRegistry.StoreRegistry.layerMemory,
  EventSink.EventSink.layerMemory
)

const registry = Result.getOrThrow(ToolRegistry.makeResult([addTool, addGenTool]))

const median = (samples: Array<number>): number => {
  samples.sort((x, y) => x - y)
  return samples[Math.floor(samples.length / 2)]!
}

/**
 * Times `a` and `b` alternately, `runs` times each, and returns both medians in
 * milliseconds. Interleaving makes machine noise (other processes on a shared
 * box) hit both sides alike, so their ratio stays meaningful.
 */
const timePair = async (
  runs: number,
  a: () => Promise<void>,
  b: () => Promise<void>
): Promise<readonly [number, number]> => {
  const as: Array<number> = []
  const bs: Array<number> = []
  for (let i = 0; i < runs; i++) {
    let start = performance.now()
    await a()
    as.push(performance.now() - start)
    start = performance.now()
    await b()
    bs.push(performance.now() - start)
  }
  return [median(as), median(bs)]
}

const floor = (calls: ReadonlyArray<ToolCall.ToolCall>) => {
  const decode = Schema.decodeUnknownResult(Input, { errors: "all", onExcessProperty: "error" })
  return async () => {
    let sink = 0
    for (const call of calls) {
      const input = Result.getOrThrow(decode(JSON.parse(call.arguments as string)))
      sink += add(input).sum
    }
    if (sink < 0) throw new Error("unreachable")
  }
}

const full = (calls: ReadonlyArray<ToolCall.ToolCall>, concurrency: number) => () =>
  Effect.runPromise(
    Effect.gen(function*() {
      const executor = yield* Executor.make(registry)
      const results = yield* executor.runBatch(calls, { concurrency })
      if (results.length !== calls.length || results.some((r) => r.isError)) throw new Error("bench: bad results")
    }).pipe(Effect.provide(layer))
  )

const rows: Array<Record<string, string | number>> = []
const cases = [
  ...[1, 100, 10_000].flatMap((n) => [1, 16].map((concurrency) => ({ n, concurrency, tool: "add" }))),
  { n: 10_000, concurrency: 16, tool: "add_gen" }
]
for (const { concurrency, n, tool } of cases) {
  const calls = callsOf(n, tool)
  const runs = n === 10_000 ? 9 : n === 100 ? 51 : 501
  {
    await timePair(3, floor(calls), full(calls, concurrency)) // warm-up
    const [floorMs, ms] = await timePair(runs, floor(calls), full(calls, concurrency))
    rows.push({
      handler: tool === "add" ? "Effect.succeed" : "Effect.gen",
      N: n,
      concurrency,
      "µs/call": +(ms * 1000 / n).toFixed(2),
      "calls/s": Math.round(n / (ms / 1000)),
      "floor µs/call": +(floorMs * 1000 / n).toFixed(3),
      "× floor": +(ms / floorMs).toFixed(1)
    })
  }
}
console.table(rows)
