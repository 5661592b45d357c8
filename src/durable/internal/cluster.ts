/**
 * The compositions `Runner`'s layers are made of: the workflow engine on a cluster (with the
 * workarounds we carry, see Runner's module doc), and the single runner of the SQLite layers.
 */
import * as NodeCrypto from "@effect/platform-node/NodeCrypto"
import { Layer } from "effect"
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
 * `Sharding` is given (the batched one): the tests inject lock-check faults there.
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
