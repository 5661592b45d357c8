/**
 * A step whose reply a missed shard-lock check dropped (issue #25), on a runner of
 * `Runner.layerPostgres`'s composition (internal/cluster.ts `postgresCluster`, its lock storage
 * wrapped by the fault) on a real Postgres server started for this file (full tier). The cases and
 * the fault are LockCheck.test.ts's (support/lockCheck.ts): the run finishes, no tool runs twice,
 * the model is not asked twice. Without a `postgres` on the machine: "skipped: no postgres".
 */
import { afterAll, beforeAll, describe } from "@effect/vitest"
import { Option, Redacted } from "effect"
import { RunnerAddress } from "effect/cluster"
import { engineOn, postgres, postgresCluster } from "../../src/durable/internal/cluster.ts"
import { freePort, type PostgresServer, postgresSkipReason, startPostgres } from "../support/postgres.ts"
import { lockCheckCases } from "./support/lockCheck.ts"

let pg: PostgresServer | undefined
let ports: Array<number> = []
beforeAll(async () => {
  if (postgresSkipReason !== undefined) return
  pg = await startPostgres()
  // one runner address per case
  ports = [await freePort(), await freePort()]
}, 60_000)
afterAll(() => pg?.destroy())

describe.skipIf(postgresSkipReason !== undefined)(
  `a step whose reply a missed shard-lock check dropped, on Postgres${
    postgresSkipReason === undefined ? "" : ` (skipped: ${postgresSkipReason})`
  }`,
  () => {
    lockCheckCases("pg-lock-check", (lockStorage, deadline) => {
      const url = Redacted.make(pg!.url)
      const port = ports.shift()!
      return engineOn(
        postgresCluster(url, {
          runnerAddress: Option.some(RunnerAddress.make("127.0.0.1", port)),
          entityMessagePollInterval: "50 millis",
          shardLockRefreshInterval: `${deadline} millis`,
          shardLockExpiration: `${deadline * 3} millis`,
          refreshAssignmentsInterval: "1 second",
          entityTerminationTimeout: "50 millis"
        }, false, lockStorage),
        postgres(url)
      )
    })
  }
)
