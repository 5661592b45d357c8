/**
 * Where durable runs run: the `effect/workflow` engine on Effect Cluster (`ClusterWorkflowEngine`),
 * journaling in SQL. Each layer provides the `WorkflowEngine` and the `SqlClient` it journals to
 * (the durable agent's event table lives there too).
 *
 * - `layerSqlite`: a single runner (as `SingleRunner`) on one SQLite file; one process at a time
 *   should run it (a second runner on the same file would own the same shards). Other processes
 *   use `layerSqliteClient` (start runs, approve, read events; they own no runs).
 * - `layerPostgres`: a runner in a cluster sharing a Postgres database (`NodeClusterSocket`, SQL
 *   storage): runs are split between the runners by shard, and a runner's runs move to the others
 *   when it stops renewing its shard locks (`lockExpiration`). `address` is this runner's host and
 *   port, which the others connect to; give each runner its own. `layerPostgresClient` is a client.
 *
 * - `layerMemory`: the engine in this process's memory (`WorkflowEngine.layerMemory`) with an
 *   in-memory SQLite for the event journal: tests and demos; nothing survives the process.
 *
 * On SQLite nothing is pushed between processes: the runner polls storage for new work every
 * `pollInterval` (default 500 ms here, against Effect's 10 s), which bounds how fast a run started,
 * approved or cancelled by a client process is picked up. On Postgres the sender saves the message
 * and then tells the owning runner over its socket (`address`), so `pollInterval` is a fallback
 * (a message saved while its owner was unknown or unreachable); each poll is a query over the
 * runner's shards, the main cost of an idle runner.
 *
 * Shard locks are refreshed every `lockExpiration / 3` and expire after `lockExpiration` (default
 * 5 s here; Effect's 35 s). The refresh interval is also the deadline of every lock operation in
 * effect/cluster: a refresh that misses it marks lock storage unhealthy, and the runner stops all
 * its runs until a probe succeeds ("Shard lock storage is unhealthy"). A SQLite runner restarted
 * in place has the same address (`SingleRunner`'s) and takes its locks back at once; a surviving
 * Postgres runner takes a dead one's runs once its heartbeat is older than `lockExpiration` (its
 * advisory locks end with its database session). Four things are wired here (and in
 * internal/cluster.ts) rather than taken as shipped: the lock refreshes effect/cluster makes before
 * storing each reply are batched per runner (internal/shardLocks.ts); an activity whose reply such
 * a check dropped (it failed or missed its deadline) is stored again with the result it had, where
 * effect/cluster would leave its run suspended for good (internal/activityReplies.ts); on Postgres
 * the shard locks have a pool of their own; and on Postgres a final reply is saved in one statement
 * instead of a transaction of four (internal/messageStorage.ts: between two activities of a run the
 * statements run one after the other, so each round trip saved shortens the gap; docs/durable.md,
 * "Between two activities").
 *
 * The other `ShardingConfig` knobs stay Effect's defaults: `entityMessagePollInterval` (our
 * `pollInterval`) and `sendRetryInterval` are not on the path of a step on a healthy runner (a
 * persisted message to a local entity is saved and the storage loop woken at once, a reply reaches
 * the waiting workflow in memory), and `refreshAssignmentsInterval` is 1 s here (assignments move
 * only when runners come and go). A shorter poll only adds idle queries.
 * `@effect/platform-node` is required; `@effect/sql-pg` only by the Postgres layers (loaded on use).
 */
import { Duration, Layer, Option, type Redacted } from "effect"
import { RunnerAddress, type ShardingConfig as ShardingConfigLayer } from "effect/cluster"
import type { SqlClient } from "effect/sql"
import { WorkflowEngine } from "effect/workflow"
import * as SqliteClient from "../stores/SqliteClient.ts"
import { engineOn, postgres, postgresCluster, singleRunner } from "./internal/cluster.ts"

/** Options of the SQLite layers. */
export interface SqliteOptions {
  /** The journal's SQLite file (created when missing). */
  readonly filename: string
  /** How often the runner looks for new work (started runs, approvals). Default 500 ms. */
  readonly pollInterval?: Duration.Input
  /**
   * How long shard locks last unrefreshed. Default 5 s. A runner restarted on the same file takes its
   * locks back at once; the locks are refreshed every third of this, which is also each lock
   * operation's deadline (raise it where a refresh can take longer).
   */
  readonly lockExpiration?: Duration.Input
  /** How long a stopping runner waits for its runs' calls in flight before interrupting them. Default 15 s. */
  readonly shutdownTimeout?: Duration.Input
}

/** Options of the Postgres layers. */
export interface PostgresOptions {
  /** The database URL (`postgres://user:password@host:port/db`). */
  readonly url: Redacted.Redacted
  /** How often the runner looks for new work. Default 500 ms. */
  readonly pollInterval?: Duration.Input
  /**
   * How long a dead runner's shard locks hold before another runner takes its runs. Default 5 s.
   * The locks are refreshed every third of this, which is also each lock operation's deadline
   * (raise it where a refresh can take longer: a missed deadline stops all of a runner's runs).
   */
  readonly lockExpiration?: Duration.Input
  /** How long a stopping runner waits for its runs' calls in flight before interrupting them. Default 15 s. */
  readonly shutdownTimeout?: Duration.Input
}

/** The services every runner and client layer provides. */
export type Services = WorkflowEngine.WorkflowEngine | SqlClient.SqlClient

const sharding = (
  options: {
    readonly pollInterval?: Duration.Input
    readonly lockExpiration?: Duration.Input
    readonly shutdownTimeout?: Duration.Input
  }
): Partial<ShardingConfigLayer.ShardingConfig["Service"]> => {
  const expiration = Duration.fromInputUnsafe(options.lockExpiration ?? "5 seconds")
  return {
    entityMessagePollInterval: options.pollInterval ?? "500 millis",
    // the refresh interval is also the deadline of every lock operation (effect/cluster's
    // `effectiveInterval`): as long as the expiration allows (a third of it), not a fixed second
    shardLockRefreshInterval: Duration.divideUnsafe(expiration, 3),
    shardLockExpiration: expiration,
    refreshAssignmentsInterval: "1 second",
    entityTerminationTimeout: options.shutdownTimeout ?? "15 seconds"
  }
}

const sqlite = (filename: string) => SqliteClient.layer({ filename })

/** A single runner on one SQLite file (the default; one process at a time owns the runs, others may be clients). */
export const layerSqlite = (options: SqliteOptions): Layer.Layer<Services> =>
  engineOn(singleRunner(sharding(options)), sqlite(options.filename))

/** A client of a SQLite journal: starts runs, approves, reads events and results; owns no runs. */
export const layerSqliteClient = (options: SqliteOptions): Layer.Layer<Services> =>
  engineOn(singleRunner({ ...sharding(options), runnerAddress: Option.none() }), sqlite(options.filename))

/** A runner in a cluster sharing Postgres; `address` is this runner's host:port for the others (NodeClusterSocket). */
export const layerPostgres = (
  options: PostgresOptions & { readonly address: { readonly host: string; readonly port: number } }
): Layer.Layer<Services> =>
  engineOn(
    postgresCluster(options.url, {
      ...sharding(options),
      runnerAddress: Option.some(RunnerAddress.make(options.address.host, options.address.port))
    }, false),
    postgres(options.url)
  )

/** A client of a Postgres cluster: starts runs, approves, reads events and results; owns no runs. */
export const layerPostgresClient = (options: PostgresOptions): Layer.Layer<Services> =>
  engineOn(
    postgresCluster(options.url, { ...sharding(options), runnerAddress: Option.none() }, true),
    postgres(options.url)
  )

/** The engine in memory, with an in-memory SQLite journal for events: tests and demos (nothing survives). */
export const layerMemory: Layer.Layer<Services> = Layer.merge(
  WorkflowEngine.layerMemory,
  Layer.orDie(SqliteClient.layer({ filename: ":memory:" }))
)
