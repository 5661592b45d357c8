/**
 * A minimal reproduction, with effect/cluster alone (no tinyagents code), of durable runs that never
 * resume after one missed shard-lock check (issue #25, docs/durable.md "Shard locks").
 *
 * One runner (`Sharding` on the in-memory storage of `TestRunner`, composed here so that its
 * `RunnerStorage` can be wrapped), a workflow of two activities. Before storing a persisted reply,
 * `Sharding` confirms the shard's lock with `RunnerStorage.refresh(address, [shard])` under a
 * deadline of one refresh interval (`confirmShardLock`). The fault: the first such check after the
 * first activity's body has ended is slower than that deadline (as a heartbeat `UPDATE` queued on a
 * loaded Postgres was). Then, in effect/cluster 4.1:
 *
 * 1. the entity manager treats the reply as fenced: it drops it, releases the request for
 *    redelivery (`resetRequests`) and resumes the waiting client with `EntityNotAssignedToRunner`,
 *    which falls back to reading the reply from storage;
 * 2. the storage loop delivers the request again; `ClusterWorkflowEngine`'s `activity` handler finds
 *    no registered activity (the first execution's `ensuring` removed it) and answers `Suspended`;
 * 3. `activityExecute` re-executes a `Suspended` activity only while it is still registered, so it
 *    returns `Suspended` to the workflow, whose run suspends; nothing is pending that would wake it.
 *
 * Printed: the run's reply after `TINYAGENTS_REPRO_WAIT_MS` (default 5,000 ms): `Suspended` where
 * it should be `Complete`; then `WorkflowEngine.resume` is called once, which completes it, with the
 * first activity's body run a second time. Exit code 1 while the bug is present.
 *
 * The fault is test/support/lockFaults.ts's (effect/cluster alone too).
 *
 * Run: `node --conditions=tinyagents-source bench/clusterStuck.ts`.
 */
import { Effect, Layer, Option, Schema } from "effect"
import {
  ClusterWorkflowEngine,
  MessageStorage,
  RunnerHealth,
  Runners,
  RunnerStorage,
  Sharding,
  ShardingConfig
} from "effect/cluster"
import { Activity, Workflow } from "effect/workflow"
import { slowLockCheck } from "../test/support/lockFaults.ts"

const waitMs = Number(process.env["TINYAGENTS_REPRO_WAIT_MS"] ?? 5000)
const refreshInterval = 300

/** How many times each activity body ran. */
const bodies = { first: 0, second: 0 }
// the first one-shard refresh after `fault.armed` (the check before storing a reply) sleeps past its deadline
const { fault, layer: slowCheckOnce } = slowLockCheck(refreshInterval * 2)

const Repro = Workflow.make("Repro", {
  payload: { id: Schema.String },
  success: Schema.String,
  idempotencyKey: (payload) => payload.id
})

const ReproLive = Repro.toLayer(Effect.fnUntraced(function*() {
  const first = yield* Activity.make({
    name: "first",
    success: Schema.String,
    execute: Effect.sync(() => {
      // the check before storing this body's first reply misses its deadline
      if (bodies.first++ === 0) fault.armed = true
      return "a"
    })
  })
  const second = yield* Activity.make({
    name: "second",
    success: Schema.String,
    execute: Effect.sync(() => (bodies.second++, "b"))
  })
  return first + second
}))

const cluster = Sharding.layer.pipe(
  Layer.provideMerge(Runners.layerNoop),
  Layer.provideMerge(MessageStorage.layerMemory),
  Layer.provide([Layer.provide(slowCheckOnce, RunnerStorage.layerMemory), RunnerHealth.layerNoop]),
  Layer.provide(ShardingConfig.layer({
    shardLockRefreshInterval: `${refreshInterval} millis`,
    shardLockExpiration: `${refreshInterval * 3} millis`,
    entityMessagePollInterval: "100 millis"
  }))
)

/** The run's stored reply: `Complete`, `Suspended`, or `none` before its first. */
const reply = (executionId: string) =>
  Effect.map(Repro.poll(executionId), Option.match({ onNone: () => "none", onSome: (result) => result._tag }))

const main = Effect.gen(function*() {
  const executionId = yield* Repro.execute({ id: "run-1" }, { discard: true })
  yield* Effect.sleep(waitMs)
  const before = yield* reply(executionId)
  const stuck = { ...bodies, slowChecks: fault.fired, reply: before }
  yield* Repro.resume(executionId)
  yield* Effect.sleep(1000)
  const after = { ...bodies, reply: yield* reply(executionId) }
  return { stuck, after }
}).pipe(
  Effect.provide(ReproLive),
  Effect.provide(ClusterWorkflowEngine.layer.pipe(Layer.provideMerge(cluster)))
)

const { after, stuck } = await Effect.runPromise(main)
console.log(`after ${waitMs} ms: run reply ${stuck.reply}, slow lock checks ${stuck.slowChecks}, bodies run: first ${stuck.first}, second ${stuck.second}`)
console.log(`after WorkflowEngine.resume: run reply ${after.reply}, bodies run: first ${after.first}, second ${after.second}`)
process.exit(stuck.reply === "Complete" ? 0 : 1)
