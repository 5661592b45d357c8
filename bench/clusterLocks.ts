/**
 * A minimal reproduction, with effect/cluster alone (no tinyagents code but the workaround), of the
 * stalls of durable runs on Postgres (issue #25): one runner (`NodeClusterSocket`, SQL storage on a
 * real Postgres from test/support/postgres.ts), an entity with one persisted RPC whose handler
 * sleeps 50 ms, `TINYAGENTS_REPRO_REQUESTS` (default 1,000) requests to as many entities at once.
 *
 * Each persisted reply is stored only after `RunnerStorage.refresh(address, [its shard])` confirms the
 * shard's lock (`Sharding`'s `confirmShardLock`); on Postgres that is a heartbeat `UPDATE` and a
 * `pg_locks` query on the one connection holding the advisory locks, so the confirmations queue
 * there, one refresh per reply. Printed per mode: wall time, refreshes made, refreshes slower than
 * the lock deadline (one refresh interval, 1 s here), handler executions beyond one per request (a
 * reply whose confirmation timed out is not stored, and the request runs again later), and the
 * shard-lock warnings logged. Modes: `plain` (effect/cluster as shipped) and `coalesced` (the
 * refreshes batched by `coalesceRefresh`, src/durable/internal/shardLocks.ts).
 *
 * Run: `node --conditions=tinyagents-source bench/clusterLocks.ts` (needs the postgres binaries).
 */
import * as NodeClusterSocket from "@effect/platform-node/NodeClusterSocket"
import * as NodeCrypto from "@effect/platform-node/NodeCrypto"
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Logger, Option, Redacted, Schema } from "effect"
import {
  ClusterSchema,
  Entity,
  RunnerAddress,
  RunnerStorage,
  ShardingConfig,
  SqlMessageStorage,
  SqlRunnerStorage
} from "effect/cluster"
import { Rpc } from "effect/rpc"
import { coalesceRefresh } from "../src/durable/internal/shardLocks.ts"
import { freePort, postgresSkipReason, startPostgres } from "../test/support/postgres.ts"

const requests = Number(process.env["TINYAGENTS_REPRO_REQUESTS"] ?? 1000)

const Work = Rpc.make("Work", { payload: { n: Schema.Int }, success: Schema.Int }).annotate(ClusterSchema.Persisted, true)
const Echo = Entity.make("Echo", [Work])

const counters = { refreshes: 0, slowRefreshes: 0, executions: 0, warnings: 0 }

const Handlers = Echo.toLayer(Effect.succeed(Echo.of({
  Work: ({ payload }) => Effect.as(Effect.andThen(Effect.sync(() => counters.executions++), Effect.sleep(50)), payload.n)
})))

/** Counts the refreshes that reach storage, and those slower than the lock deadline. */
const counted = Layer.effect(
  RunnerStorage.RunnerStorage,
  Effect.map(Effect.service(RunnerStorage.RunnerStorage), (storage) =>
    RunnerStorage.RunnerStorage.of({
      ...storage,
      refresh: (address, shardIds) =>
        Effect.suspend(() => {
          counters.refreshes++
          const t0 = performance.now()
          return Effect.ensuring(
            storage.refresh(address, shardIds),
            Effect.sync(() => {
              if (performance.now() - t0 > 1000) counters.slowRefreshes++
            })
          )
        })
    }))
)

const run = (url: string, port: number, mode: "plain" | "coalesced") => {
  const shardingConfig = {
    runnerAddress: Option.some(RunnerAddress.make("127.0.0.1", port)),
    shardLockRefreshInterval: "1 second",
    shardLockExpiration: "5 seconds",
    entityMessagePollInterval: "500 millis"
  } as const
  const sql = PgClient.layer({ url: Redacted.make(url) })
  const config = ShardingConfig.layerFromEnv(shardingConfig)
  const storage = Layer.orDie(SqlRunnerStorage.layer).pipe(Layer.provide([config, sql]))
  const runnerStorage = mode === "coalesced"
    ? Layer.provide(coalesceRefresh, Layer.provide(counted, storage))
    : Layer.provide(counted, storage)
  const cluster = NodeClusterSocket.layer({ storage: "byo", shardingConfig }).pipe(
    Layer.provideMerge(SqlMessageStorage.layer.pipe(Layer.provide([NodeCrypto.layerDigest, config]))),
    Layer.provide(runnerStorage),
    Layer.provide(sql),
    Layer.orDie
  )
  const logs = Logger.layer([
    Logger.make((options) => {
      if ((options.logLevel === "Warn" || options.logLevel === "Error") && /shard/i.test(String(options.message))) {
        counters.warnings++
      }
    })
  ])
  return Effect.gen(function*() {
    const clientFor = yield* Echo.client
    yield* Effect.sleep("2 seconds") // the runner takes its shards
    Object.assign(counters, { refreshes: 0, slowRefreshes: 0, executions: 0, warnings: 0 })
    const t0 = performance.now()
    yield* Effect.forEach(
      Array.from({ length: requests }, (_, i) => i),
      (i) => clientFor(`e${i}`).Work({ n: i }),
      { concurrency: "unbounded", discard: true }
    )
    const seconds = (performance.now() - t0) / 1000
    return {
      mode,
      requests,
      "s": +seconds.toFixed(2),
      "refreshes": counters.refreshes,
      "refreshes > 1 s": counters.slowRefreshes,
      "executions beyond 1/request": counters.executions - requests,
      "shard-lock warnings": counters.warnings
    }
  }).pipe(Effect.provide(Layer.provideMerge(Handlers, cluster)), Effect.provide(logs))
}

if (postgresSkipReason !== undefined) {
  console.log(`skipped: ${postgresSkipReason}`)
} else {
  const rows = []
  for (const mode of ["plain", "coalesced"] as const) {
    const server = await startPostgres()
    try {
      rows.push(await Effect.runPromise(run(server.url, await freePort(), mode)))
    } finally {
      server.destroy()
    }
  }
  console.table(rows)
}
process.exit(0)
