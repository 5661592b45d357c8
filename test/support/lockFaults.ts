/**
 * A lock-storage fault for effect/cluster (issue #25): the check `Sharding` makes before storing a
 * persisted reply (`RunnerStorage.refresh(address, [its shard])`) outlasting its deadline once, as
 * one queued on a loaded database does, while the periodic refresh of every shard goes on as usual.
 * Used by test/durable/LockCheck.test.ts and LockCheckPostgres.test.ts (test/durable/support/lockCheck.ts) and
 * bench/clusterStuck.ts.
 */
import { Effect, Layer } from "effect"
import { RunnerStorage } from "effect/cluster"

/** A wrapper of the lock storage whose first one-shard refresh after `fault.armed` is set sleeps `millis` first. */
export const slowLockCheck = (millis: number) => {
  const fault = { armed: false, fired: 0 }
  const layer: Layer.Layer<RunnerStorage.RunnerStorage, never, RunnerStorage.RunnerStorage> = Layer.effect(
    RunnerStorage.RunnerStorage,
    Effect.map(Effect.service(RunnerStorage.RunnerStorage), (storage) =>
      RunnerStorage.RunnerStorage.of({
        ...storage,
        refresh: (address, shardIds) =>
          Effect.suspend(() => {
            const shards = Array.from(shardIds)
            // a one-shard refresh is `confirmShardLock`'s check before storing a reply
            if (!fault.armed || shards.length !== 1) return storage.refresh(address, shards)
            fault.armed = false
            fault.fired++
            return Effect.andThen(Effect.sleep(millis), storage.refresh(address, shards))
          })
      }))
  )
  return { fault, layer }
}
