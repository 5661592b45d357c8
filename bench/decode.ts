/**
 * `TINYAGENTS_BENCH=decode npm run bench`: argument decoding alone, per call, for
 * JSON text as a model sends it. Rows per schema, measured interleaved in one run:
 * - `JSON.parse`: the text parsed, nothing checked (what any decoder pays);
 * - `floor`: `JSON.parse`, then `Schema.decodeUnknownResult` of the input schema
 *   (`errors: "all"`, `onExcessProperty: "error"`): the executor bench's floor;
 * - `decoder`: `ToolInput.decoder` as the executor builds it (secure parse, the
 *   compiled validator of src/internal/fastDecode.ts, the strict decode
 *   when it says invalid);
 * - `decoder, no validator`: the same decoder built without the validator (the
 *   default-options decode of plain schemas, then the strict one): the decoder
 *   before it.
 * Schemas: the executor bench's `{ a, b, label? }`; a nested one (a literal union,
 * an optional struct holding an array of structs with checked integers); and the
 * flat one given arguments with one wrong type (the validator says invalid, then
 * the strict decode reports the issue).
 *
 * ns: median of 9 interleaved samples of 20,000 calls (CPU time of this process,
 * steadier than wall time on a shared machine); KB: bytes allocated per call
 * (`v8.GCProfiler`: used-heap growth plus what each collection freed), median of 3.
 */
import { Result, Schema } from "effect"
import * as v8 from "node:v8"
import * as vm from "node:vm"
import { ToolInput } from "../src/index.ts"
import * as FastDecode from "../src/internal/fastDecode.ts"

v8.setFlagsFromString("--expose-gc")
const gc = vm.runInNewContext("gc") as () => void

const calls = 20_000
const samples = 9

const Flat = Schema.Struct({ a: Schema.Number, b: Schema.Number, label: Schema.optionalKey(Schema.String) })
const Nested = Schema.Struct({
  path: Schema.String,
  mode: Schema.Literals(["read", "write", "append"]),
  limit: Schema.optionalKey(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 1000 }))),
  options: Schema.optionalKey(Schema.Struct({
    encoding: Schema.Literals(["utf8", "base64"]),
    ranges: Schema.Array(Schema.Struct({ start: Schema.Int, end: Schema.Int }))
  }))
})

interface Case {
  readonly name: string
  readonly schema: Schema.Codec<unknown, unknown>
  readonly texts: ReadonlyArray<string>
  readonly valid: boolean
}

const cases: ReadonlyArray<Case> = [
  {
    name: "{ a, b, label? }",
    schema: Flat as unknown as Schema.Codec<unknown, unknown>,
    texts: Array.from({ length: calls }, (_, i) => `{"a":${i},"b":2,"label":"x"}`),
    valid: true
  },
  {
    name: "nested (union, optional struct, array of structs)",
    schema: Nested as unknown as Schema.Codec<unknown, unknown>,
    texts: Array.from(
      { length: calls },
      (_, i) =>
        `{"path":"src/f${i}.ts","mode":"read","limit":${1 + (i % 999)},"options":{"encoding":"utf8","ranges":[{"start":1,"end":${i}},{"start":${i},"end":${i + 5}}]}}`
    ),
    valid: true
  },
  {
    name: "{ a, b, label? }, one wrong type",
    schema: Flat as unknown as Schema.Codec<unknown, unknown>,
    texts: Array.from({ length: calls }, (_, i) => `{"a":${i},"b":"2","label":"x"}`),
    valid: false
  }
]

type Run = (text: string) => boolean

const runnersOf = (c: Case): ReadonlyArray<readonly [string, Run]> => {
  const strict = Schema.decodeUnknownResult(c.schema, { errors: "all", onExcessProperty: "error" })
  const decoder = ToolInput.decoder("bench", c.schema)
  FastDecode.compiling.enabled = false
  const before = ToolInput.decoder("bench", c.schema)
  FastDecode.compiling.enabled = true
  return [
    ["JSON.parse", (text) => JSON.parse(text) !== null],
    ["floor", (text) => Result.isSuccess(strict(JSON.parse(text)))],
    ["decoder", (text) => Result.isSuccess(decoder(text))],
    ["decoder, no validator", (text) => Result.isSuccess(before(text))]
  ]
}

/** CPU milliseconds of one pass over the texts; throws if a decoder answers otherwise than expected. */
const pass = (c: Case, name: string, run: Run): number => {
  const start = process.cpuUsage()
  let ok = 0
  for (let i = 0; i < c.texts.length; i++) if (run(c.texts[i]!)) ok++
  const used = process.cpuUsage(start)
  if (name !== "JSON.parse" && ok !== (c.valid ? c.texts.length : 0)) throw new Error(`bench: ${name} answered wrongly`)
  return (used.user + used.system) / 1000
}

const bytes = (c: Case, name: string, run: Run): number => {
  gc()
  const profiler = new v8.GCProfiler()
  const before = v8.getHeapStatistics().used_heap_size
  profiler.start()
  pass(c, name, run)
  const report = profiler.stop()
  let freed = 0
  for (const s of report.statistics) freed += s.beforeGC.heapStatistics.usedHeapSize - s.afterGC.heapStatistics.usedHeapSize
  return v8.getHeapStatistics().used_heap_size - before + freed
}

const median = (xs: Array<number>): number => xs.sort((x, y) => x - y)[Math.floor(xs.length / 2)]!

/** One table row per schema and decoder: ns and KB per call, and the ratios to the floor. */
export const decodeRows = (): ReadonlyArray<Record<string, string | number>> =>
  cases.flatMap((c) => {
    const runners = runnersOf(c)
    for (let w = 0; w < 2; w++) for (const [name, run] of runners) pass(c, name, run)
    const times = runners.map(() => [] as Array<number>)
    for (let s = 0; s < samples; s++) runners.forEach(([name, run], i) => times[i]!.push(pass(c, name, run)))
    const ns = times.map((t) => median(t) * 1e6 / calls)
    const kb = runners.map(([name, run]) => median([0, 1, 2].map(() => bytes(c, name, run))) / 1024 / calls)
    return runners.map(([name], i) => ({
      schema: c.name,
      decoder: name,
      "ns/call": Math.round(ns[i]!),
      "× floor": +(ns[i]! / ns[1]!).toFixed(2),
      "KB/call": +kb[i]!.toFixed(3),
      "KB × floor": +(kb[i]! / kb[1]!).toFixed(2)
    }))
  })
