/**
 * A step whose reply a missed shard-lock check dropped (issue #25): before storing a reply,
 * effect/cluster confirms the shard's lock under a deadline of one refresh interval; a check that
 * misses it leaves the reply unwritten and the request redelivered, and effect/cluster 4.1 then
 * answers the step `Suspended`, which nothing wakes (bench/clusterStuck.ts). With the workaround
 * (src/durable/internal/activityReplies.ts) the run finishes, the step journaled with the result it
 * had: no tool runs twice, the model is not asked twice, nothing is answered "may or may not have
 * completed". The runner is `Runner.layerSqlite`'s composition with one fault (the cases:
 * support/lockCheck.ts; on Postgres: LockCheckPostgres.test.ts).
 */
import { afterAll, describe } from "@effect/vitest"
import { engineOn, singleRunner } from "../../src/durable/internal/cluster.ts"
import * as SqliteClient from "../../src/stores/SqliteClient.ts"
import * as Core from "./support/core.ts"
import { lockCheckCases } from "./support/lockCheck.ts"

afterAll(Core.cleanup)

describe("a step whose reply a missed shard-lock check dropped", () => {
  lockCheckCases("lock-check", (lockStorage, deadline) =>
    engineOn(
      singleRunner({
        entityMessagePollInterval: "50 millis",
        shardLockRefreshInterval: `${deadline} millis`,
        shardLockExpiration: `${deadline * 3} millis`,
        entityTerminationTimeout: "50 millis"
      }, lockStorage),
      SqliteClient.layer({ filename: Core.tempFile("lock-check") })
    ))
})
