/**
 * `node --conditions=tinyagents-source --cpu-prof bench/profile.ts [N] [rounds]`: the
 * benchmark's target batch (lazy handler, armed timeout, validation, two events, one
 * middleware; concurrency 16) in a loop, for a CPU or heap profile.
 */
import { Effect, Layer, Result, Schema } from "effect"
import { EventSink, Executor, Middleware, RunContext, StoreRegistry, Tool, ToolRegistry } from "../src/index.ts"

const Input = Schema.Struct({ a: Schema.Number, b: Schema.Number, label: Schema.optionalKey(Schema.String) })
const tool = Tool.make("add_lazy", {
  description: "Adds two numbers.",
  input: Input,
  output: Schema.Struct({ sum: Schema.Number }),
  safety: { access: "read", idempotent: true },
  timeout: "30 seconds",
  handler: ({ a, b }) => Effect.sync(() => ({ sum: a + b }))
})
const registry = Result.getOrThrow(ToolRegistry.makeResult([tool]))
const middleware = [Middleware.make({ name: "pass-through", around: (invocation, next) => next(invocation) })]
const n = Number(process.argv[2] ?? 10_000)
const rounds = Number(process.argv[3] ?? 30)
const calls = Array.from({ length: n }, (_, i) => ({ id: `call_${i}`, name: "add_lazy", arguments: `{"a":${i},"b":2,"label":"x"}` }))
const layer = Layer.mergeAll(
  RunContext.RunContext.layer({ threadId: "bench", runId: "bench", turn: 0 }),
  StoreRegistry.StoreRegistry.layerMemory,
  EventSink.EventSink.layerMemory
)
const times: Array<number> = []
for (let r = 0; r < rounds; r++) {
  times.push(
    await Effect.runPromise(
      Effect.gen(function*() {
        const executor = yield* Executor.make(registry, { middleware, concurrency: 16 })
        const start = performance.now()
        yield* executor.runBatch(calls)
        return performance.now() - start
      }).pipe(Effect.provide(layer))
    )
  )
}
times.sort((a, b) => a - b)
console.log(`median ${(times[Math.floor(times.length / 2)]! * 1000 / n).toFixed(2)} µs/call`)
