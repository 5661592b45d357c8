/**
 * The store case of `npm run bench`: N idempotent keyed calls through the
 * executor per `StoreRegistry` backend, in the same run: memory, file system,
 * SQLite (a file in a temporary directory) and Redis (a `redis-server` started
 * on a free loopback port, when one is on PATH; otherwise the row says why not).
 *
 * Rows per backend:
 * - `apply`: N calls with N distinct keys (each key's first call: look up, take
 *   the claim, look up again, run, store the result, release the claim);
 * - `replay`: the same N calls again (each answered from the store).
 * Next to them, `no key`: the same tool without an idempotency key, on memory
 * (what the keyed path costs on top of a plain call).
 *
 * Time: the median wall time of `runs` samples per row (concurrency 16), measured
 * around `runBatch` only: the backend is opened (connection, tables) before the
 * clock starts. N defaults to 10,000 (`TINYAGENTS_BENCH_STORE_CALLS`).
 *
 * Postgres, opt-in (`TINYAGENTS_BENCH_PGLITE=1`, slow): PGlite (Postgres in WASM)
 * served on a loopback socket in this same process, through `@effect/sql-pg`;
 * its server work shares this process's CPU, so its row is not a real server's.
 */
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import { Effect, Layer, Redacted, Result, Schema } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { EventSink, Executor, RunContext, StoreRegistry, Tool, ToolRegistry } from "../src/index.ts"
import type { ToolCall } from "../src/index.ts"
import { Stores } from "../src/stores/index.ts"
import * as PostgresStores from "../src/stores/Postgres.ts"
import * as RedisStores from "../src/stores/Redis.ts"
import { startPglite } from "../test/support/postgres.ts"
import { redisSkip, startRedis } from "../test/support/redis.ts"

const n = Number(process.env["TINYAGENTS_BENCH_STORE_CALLS"] ?? 10_000)
const runs = 3

const Input = Schema.Struct({ key: Schema.String, a: Schema.Number, b: Schema.Number })
const Output = Schema.Struct({ sum: Schema.Number })
const handler = ({ a, b }: { readonly a: number; readonly b: number }) => Effect.sync(() => ({ sum: a + b }))

const keyed = Tool.make("add_keyed", {
  description: "Adds two numbers, once per key.",
  input: Input,
  output: Output,
  safety: { access: "write" },
  timeout: "30 seconds",
  idempotency: ({ key }) => key,
  handler
})
const unkeyed = Tool.make("add_unkeyed", {
  description: "Adds two numbers.",
  input: Input,
  output: Output,
  safety: { access: "write" },
  timeout: "30 seconds",
  handler
})
const registry = Result.getOrThrow(ToolRegistry.makeResult([keyed, unkeyed]))

const callsOf = (name: string, prefix: string): ReadonlyArray<ToolCall.ToolCall> =>
  Array.from({ length: n }, (_, i) => ({ id: `c${i}`, name, arguments: { key: `${prefix}-${i}`, a: i, b: 2 } }))

const median = (xs: Array<number>) => xs.sort((x, y) => x - y)[Math.floor(xs.length / 2)]!

/** Median µs per call of `runs` samples: `apply` (fresh keys) then `replay` (the same keys again). */
const measure = (name: string) =>
  Effect.gen(function*() {
    // open the backend (connection, tables) before timing
    yield* StoreRegistry.store("idempotency")
    yield* StoreRegistry.StoreRegistry.use((r) => r.claims("idempotency"))
    const apply: Array<number> = []
    const replay: Array<number> = []
    for (let run = 0; run <= runs; run++) {
      const calls = callsOf(name, `${Date.now().toString(36)}-${run}`)
      const executor = yield* Executor.make(registry, { concurrency: 16 })
      const t0 = performance.now()
      const first = yield* executor.runBatch(calls)
      const t1 = performance.now()
      const again = yield* executor.runBatch(calls)
      const t2 = performance.now()
      if ([...first, ...again].some((r) => r.isError)) throw new Error(`bench: errors on ${name}`)
      if (name === "add_keyed" && !again.every((r) => r.idempotency?.replayed === true)) throw new Error("bench: not replayed")
      if (run === 0) continue // warm-up
      apply.push((t1 - t0) * 1000 / n)
      replay.push((t2 - t1) * 1000 / n)
    }
    return { apply: median(apply), replay: median(replay) }
  })

const services = Layer.mergeAll(
  RunContext.RunContext.layer({ threadId: "bench", runId: "bench", turn: 0 }),
  EventSink.EventSink.layerMemory
)

const runOn = (stores: Layer.Layer<StoreRegistry.StoreRegistry, unknown>, name = "add_keyed") =>
  Effect.runPromise(Effect.scoped(measure(name).pipe(Effect.provide(Layer.merge(services, stores)))))

/** The store rows of the bench (see the module comment). */
export const storeRows = async (): Promise<ReadonlyArray<Record<string, string | number>>> => {
  const dir = mkdtempSync(join(tmpdir(), "tinyagents-bench-stores-"))
  const rows: Array<Record<string, string | number>> = []
  const row = (backend: string, time: { readonly apply: number; readonly replay: number }, memory: number) =>
    rows.push({
      backend,
      N: n,
      "apply µs/call": +time.apply.toFixed(1),
      "replay µs/call": +time.replay.toFixed(1),
      "apply × memory": +(time.apply / memory).toFixed(1)
    })
  try {
    const plain = await runOn(StoreRegistry.layerMemory, "add_unkeyed")
    rows.push({ backend: "memory, no key", N: n, "apply µs/call": +plain.apply.toFixed(1), "replay µs/call": "-", "apply × memory": "-" })
    const memory = await runOn(StoreRegistry.layerMemory)
    row("memory", memory, memory.apply)
    row(
      "file system",
      await runOn(StoreRegistry.layerFileSystem(join(dir, "fs")).pipe(Layer.provide([NodeFileSystem.layer, NodePath.layer]))),
      memory.apply
    )
    row("SQLite (file)", await runOn(Stores.layerSqlite({ filename: join(dir, "bench.db") })), memory.apply)
    if (redisSkip !== undefined) {
      rows.push({ backend: `Redis (skipped: ${redisSkip})`, N: n, "apply µs/call": "-", "replay µs/call": "-", "apply × memory": "-" })
    } else {
      const server = await startRedis()
      try {
        row("Redis (loopback)", await runOn(RedisStores.layer({ port: server.port })), memory.apply)
      } finally {
        await server.close()
      }
    }
    if (process.env["TINYAGENTS_BENCH_PGLITE"] === "1") {
      const pglite = await startPglite()
      try {
        row("Postgres (PGlite, in-process)", await runOn(PostgresStores.layer({ url: Redacted.make(pglite.url), maxConnections: 8 })), memory.apply)
      } finally {
        await pglite.stop()
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
  return rows
}
