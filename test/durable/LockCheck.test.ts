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
import { afterAll, assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"
import { Activity, DurableDeferred, Workflow } from "effect/workflow"
import { engineOn, singleRunner } from "../../src/durable/internal/cluster.ts"
import * as SqliteClient from "../../src/stores/SqliteClient.ts"
import { slowLockCheck } from "../support/lockFaults.ts"
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

// An activity that ends with a result while its workflow instance is marked suspended: a durable
// wait inside it lost a race to its result (`Workflow.suspend` interrupted that side only). The
// engine stores the result (`Workflow.intoResult` reads a success as `Complete` whatever the
// instance's mark), so a dropped reply of it is stored again too.
const Raced = Workflow.make("LockCheckRaced", {
  payload: { id: Schema.String },
  success: Schema.String,
  idempotencyKey: (payload) => payload.id
})

describe("an activity whose durable wait lost a race to its result", () => {
  it.live("its dropped reply is stored again: the run completes, the body run once", () =>
    Effect.gen(function*() {
      const deadline = 500
      const { fault, layer } = slowLockCheck(deadline * 3)
      let bodies = 0
      const workflow = Raced.toLayer(Effect.fnUntraced(function*() {
        const first = yield* Activity.make({
          name: "first",
          success: Schema.String,
          execute: Effect.race(
            Effect.as(DurableDeferred.await(DurableDeferred.make("never")), "waited"),
            Effect.as(Effect.sleep("20 millis"), "raced")
          ).pipe(Effect.ensuring(Effect.sync(() => {
            bodies++
            fault.armed = true
          })))
        })
        const second = yield* Activity.make({ name: "second", success: Schema.String, execute: Effect.succeed("b") })
        return `${first}+${second}`
      }))
      const runner = engineOn(
        singleRunner({
          entityMessagePollInterval: "50 millis",
          shardLockRefreshInterval: `${deadline} millis`,
          shardLockExpiration: `${deadline * 3} millis`,
          entityTerminationTimeout: "50 millis"
        }, layer),
        SqliteClient.layer({ filename: Core.tempFile("lock-check-raced") })
      )
      const result = yield* Raced.execute({ id: "raced" }).pipe(
        // a guard against a hang, not a timing: the run takes a second or two
        Effect.timeoutOrElse({
          duration: "20 seconds",
          orElse: () => Effect.die(new Error("the run never finished: a step's reply was dropped and nothing resumed it"))
        }),
        Effect.provide(Layer.provideMerge(workflow, runner))
      )
      assert.strictEqual(result, "raced+b")
      assert.strictEqual(fault.fired, 1)
      assert.strictEqual(bodies, 1)
    }), 60_000)
})
