/**
 * The compositions `Runner`'s layers are made of: the workflow engine on a cluster (with the
 * workarounds we carry, see Runner's module doc), the single runner of the SQLite layers and the
 * cluster of the Postgres layers. Each cluster takes a wrapper of its lock storage: the tests
 * inject lock-check faults there (test/support/lockFaults.ts).
 */
import * as NodeClusterSocket from "@effect/platform-node/NodeClusterSocket"
import * as NodeCrypto from "@effect/platform-node/NodeCrypto"
import { Effect, Layer, type Redacted } from "effect"
import {
  ClusterWorkflowEngine,
  type MessageStorage,
  RunnerHealth,
  Runners,
  type RunnerStorage,
  Sharding,
  ShardingConfig,
  SqlMessageStorage,
  SqlRunnerStorage
} from "effect/cluster"
import type { SqlClient } from "effect/sql"
import type { WorkflowEngine } from "effect/workflow"
import * as ActivityReplies from "./activityReplies.ts"
import * as PgMessageStorage from "./messageStorage.ts"
import { coalesceRefresh } from "./shardLocks.ts"

/**
 * `ClusterWorkflowEngine` on `cluster`, journaling to `sql` (provided too), its dropped activity
 * replies stored again (internal/activityReplies.ts).
 */
export const engineOn = <E, E2>(
  cluster: Layer.Layer<Sharding.Sharding | MessageStorage.MessageStorage, E, SqlClient.SqlClient>,
  sql: Layer.Layer<SqlClient.SqlClient, E2>
): Layer.Layer<WorkflowEngine.WorkflowEngine | SqlClient.SqlClient> =>
  Layer.provide(ActivityReplies.layer, ClusterWorkflowEngine.layer).pipe(
    Layer.provide(cluster),
    Layer.provideMerge(sql),
    Layer.orDie
  )

/**
 * `SingleRunner.layer({ runnerStorage: "sql" })`, composed here so that the shard locks' refreshes
 * are batched (`coalesceRefresh`, see internal/shardLocks.ts): on SQLite each is a write on the one
 * connection every other statement uses too. `lockStorage`, when given, wraps the lock storage
 * `Sharding` is given (the batched one).
 */
export const singleRunner = (
  shardingConfig: Partial<ShardingConfig.ShardingConfig["Service"]>,
  lockStorage?: Layer.Layer<RunnerStorage.RunnerStorage, never, RunnerStorage.RunnerStorage>
) => {
  const batched = Layer.provide(coalesceRefresh, Layer.orDie(SqlRunnerStorage.layer))
  const locks = lockStorage === undefined ? batched : Layer.provide(lockStorage, batched)
  return Sharding.layer.pipe(
    Layer.provideMerge(Runners.layerNoop),
    Layer.provideMerge(SqlMessageStorage.layer),
    Layer.provide([locks, RunnerHealth.layerNoop]),
    Layer.provide(ShardingConfig.layerFromEnv(shardingConfig)),
    Layer.provide(NodeCrypto.layerDigest),
    Layer.orDie
  )
}

/** A Postgres pool (`@effect/sql-pg`, loaded on use: only the Postgres layers require it). */
export const postgres = (url: Redacted.Redacted, maxConnections?: number): Layer.Layer<SqlClient.SqlClient, unknown> =>
  Layer.unwrap(
    Effect.map(
      Effect.promise(() => import("@effect/sql-pg")),
      ({ PgClient }) => PgClient.layer(maxConnections === undefined ? { url } : { url, maxConnections })
    )
  )

/**
 * The shard-lock pool: one connection `SqlRunnerStorage` reserves for its advisory locks, one for
 * its other statements (membership, heartbeat probe) and one for a lock connection being replaced.
 */
const lockConnections = 3

/**
 * The cluster on Postgres, its storage wired here ("byo") rather than by `NodeClusterSocket`: the
 * messages (`SqlMessageStorage`) on the runs' pool, the shard locks and runner membership
 * (`SqlRunnerStorage`) on a pool of their own, so that a lock refresh, release or health probe never
 * queues behind the runs' queries (each has a deadline of one refresh interval; see Runner's module
 * doc). `lockStorage`, when given, wraps the lock storage `Sharding` is given (the batched one), as
 * in `singleRunner`.
 */
export const postgresCluster = (
  url: Redacted.Redacted,
  shardingConfig: Partial<ShardingConfig.ShardingConfig["Service"]>,
  clientOnly: boolean,
  lockStorage?: Layer.Layer<RunnerStorage.RunnerStorage, never, RunnerStorage.RunnerStorage>
) => {
  const config = ShardingConfig.layerFromEnv(shardingConfig)
  const messages = PgMessageStorage.layer.pipe(Layer.provide([NodeCrypto.layerDigest, config]))
  const pool = Layer.orDie(SqlRunnerStorage.layer).pipe(
    Layer.provide(config),
    Layer.provide(Layer.orDie(postgres(url, lockConnections)))
  )
  const batched = Layer.provide(coalesceRefresh, pool)
  const locks = lockStorage === undefined ? batched : Layer.provide(lockStorage, batched)
  return NodeClusterSocket.layer({ storage: "byo", clientOnly, shardingConfig }).pipe(
    Layer.provideMerge(messages),
    Layer.provide(locks),
    Layer.orDie
  )
}
