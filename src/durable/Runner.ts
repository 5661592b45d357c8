/**
 * Where durable runs run: the `effect/workflow` engine on Effect Cluster (`ClusterWorkflowEngine`),
 * journaling in SQL. Each layer provides the `WorkflowEngine` and the `SqlClient` it journals to
 * (the durable agent's event table lives there too).
 *
 * - `layerSqlite`: a single runner (`SingleRunner`) on one SQLite file; one process at a time
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
 * runner's shards, the main cost of an idle runner. Shard locks are refreshed every second and
 * expire after `lockExpiration` (default 5 s here; Effect's 35 s), which bounds how fast a
 * restarted SQLite runner or a surviving Postgres runner takes over the runs of one that died.
 * `@effect/platform-node` is required; `@effect/sql-pg` only by the Postgres layers (loaded on use).
 */
import * as NodeClusterSocket from "@effect/platform-node/NodeClusterSocket"
import * as NodeCrypto from "@effect/platform-node/NodeCrypto"
import { Duration, Effect, Layer, Option, type Redacted } from "effect"
import {
  ClusterWorkflowEngine,
  type MessageStorage,
  RunnerAddress,
  type Sharding,
  type ShardingConfig,
  SingleRunner
} from "effect/cluster"
import type { SqlClient } from "effect/sql"
import { WorkflowEngine } from "effect/workflow"
import * as SqliteClient from "../stores/SqliteClient.ts"

/** Options of the SQLite layers. */
export interface SqliteOptions {
  /** The journal's SQLite file (created when missing). */
  readonly filename: string
  /** How often the runner looks for new work (started runs, approvals). Default 500 ms. */
  readonly pollInterval?: Duration.Input
  /** How long a dead runner's shard locks hold before a restarted runner takes its runs. Default 5 s. */
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
  /** How long a dead runner's shard locks hold before another runner takes its runs. Default 5 s. */
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
): Partial<ShardingConfig.ShardingConfig["Service"]> => {
  const expiration = Duration.fromInputUnsafe(options.lockExpiration ?? "5 seconds")
  return {
    entityMessagePollInterval: options.pollInterval ?? "500 millis",
    shardLockRefreshInterval: Duration.min(Duration.seconds(1), Duration.divideUnsafe(expiration, 3)),
    shardLockExpiration: expiration,
    refreshAssignmentsInterval: "1 second",
    entityTerminationTimeout: options.shutdownTimeout ?? "15 seconds"
  }
}

const engineOn = <E, E2>(
  cluster: Layer.Layer<Sharding.Sharding | MessageStorage.MessageStorage, E, SqlClient.SqlClient>,
  sql: Layer.Layer<SqlClient.SqlClient, E2>
): Layer.Layer<Services> =>
  ClusterWorkflowEngine.layer.pipe(Layer.provide(cluster), Layer.provideMerge(sql), Layer.orDie)

const sqlite = (filename: string) => SqliteClient.layer({ filename })

/** A single runner on one SQLite file (the default; one process at a time owns the runs, others may be clients). */
export const layerSqlite = (options: SqliteOptions): Layer.Layer<Services> =>
  engineOn(
    SingleRunner.layer({ runnerStorage: "sql", shardingConfig: sharding(options) }).pipe(
      Layer.provide(NodeCrypto.layerDigest)
    ),
    sqlite(options.filename)
  )

/** A client of a SQLite journal: starts runs, approves, reads events and results; owns no runs. */
export const layerSqliteClient = (options: SqliteOptions): Layer.Layer<Services> =>
  engineOn(
    SingleRunner.layer({
      runnerStorage: "sql",
      shardingConfig: { ...sharding(options), runnerAddress: Option.none() }
    }).pipe(Layer.provide(NodeCrypto.layerDigest)),
    sqlite(options.filename)
  )

const postgres = (url: Redacted.Redacted): Layer.Layer<SqlClient.SqlClient, unknown> =>
  Layer.unwrap(Effect.map(Effect.promise(() => import("@effect/sql-pg")), ({ PgClient }) => PgClient.layer({ url })))

/** A runner in a cluster sharing Postgres; `address` is this runner's host:port for the others (NodeClusterSocket). */
export const layerPostgres = (
  options: PostgresOptions & { readonly address: { readonly host: string; readonly port: number } }
): Layer.Layer<Services> =>
  engineOn(
    NodeClusterSocket.layer({
      storage: "sql",
      shardingConfig: {
        ...sharding(options),
        runnerAddress: Option.some(RunnerAddress.make(options.address.host, options.address.port))
      }
    }),
    postgres(options.url)
  )

/** A client of a Postgres cluster: starts runs, approves, reads events and results; owns no runs. */
export const layerPostgresClient = (options: PostgresOptions): Layer.Layer<Services> =>
  engineOn(
    NodeClusterSocket.layer({
      storage: "sql",
      clientOnly: true,
      shardingConfig: { ...sharding(options), runnerAddress: Option.none() }
    }),
    postgres(options.url)
  )

/** The engine in memory, with an in-memory SQLite journal for events: tests and demos (nothing survives). */
export const layerMemory: Layer.Layer<Services> = Layer.merge(
  WorkflowEngine.layerMemory,
  Layer.orDie(SqliteClient.layer({ filename: ":memory:" }))
)
