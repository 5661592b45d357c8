/**
 * A workaround we carry for effect/cluster 4.1 (`Sharding`'s `confirmShardLock`): before it stores
 * the final reply of a persisted request, the runner confirms it still holds the request's shard
 * with `RunnerStorage.refresh(address, [shard])`, one call per shard with a reply to store. On
 * Postgres each such call is a heartbeat `UPDATE` and a `pg_locks` query on the ONE connection that
 * holds the advisory locks, so under load they queue there: every reply waits for the ones before
 * it, and once the queue is longer than one refresh interval the periodic refresh of all the shards
 * (same connection, same deadline) times out. Sharding then marks lock storage unhealthy, stops
 * every entity and releases every shard ("Shard lock storage is unhealthy", "Could not release
 * shards ... TimeoutError"), and the confirmations that timed out leave their replies unwritten,
 * so the activities run again when the shards come back: the 20–80 s holds of issue #25.
 *
 * `coalesceRefresh` batches the refreshes of one runner: while one is in flight, the shards asked
 * for meanwhile wait for the next, which refreshes them all at once; each caller gets the shards of
 * its own request that the refresh confirmed. A confirmation is still a refresh that started after
 * it was asked for (the guarantee `confirmShardLock` relies on), so nothing is weakened; the
 * refreshes in flight are at most one per runner, whatever the number of replies. The empty refresh
 * (Sharding's health probe, which runs on the shared pool on purpose) is passed through.
 */
import { Deferred, Effect, Layer } from "effect"
import type { ClusterError, RunnerAddress, ShardId } from "effect/cluster"
import { RunnerStorage } from "effect/cluster"

interface Batch {
  readonly address: RunnerAddress.RunnerAddress
  readonly shards: Map<string, ShardId.ShardId>
  readonly done: Deferred.Deferred<Array<ShardId.ShardId>, ClusterError.PersistenceError>
}

/** `RunnerStorage` with its non-empty `refresh` calls batched per runner address (see the module doc). */
export const coalesceRefresh: Layer.Layer<RunnerStorage.RunnerStorage, never, RunnerStorage.RunnerStorage> = Layer.effect(
  RunnerStorage.RunnerStorage,
  Effect.gen(function*() {
    const storage = yield* RunnerStorage.RunnerStorage
    const scope = yield* Effect.scope
    // per address: the batch that waits for the next refresh, and whether one is in flight
    const waiting = new Map<string, Batch>()
    const inFlight = new Set<string>()

    const drain = (key: string): Effect.Effect<void> =>
      Effect.suspend(() => {
        const batch = waiting.get(key)
        if (batch === undefined) {
          inFlight.delete(key)
          return Effect.void
        }
        waiting.delete(key)
        return storage.refresh(batch.address, batch.shards.values()).pipe(
          Effect.exit,
          Effect.flatMap((exit) => Deferred.done(batch.done, exit)),
          Effect.andThen(drain(key))
        )
      })

    const refresh = (
      address: RunnerAddress.RunnerAddress,
      shardIds: Iterable<ShardId.ShardId>
    ): Effect.Effect<Array<ShardId.ShardId>, ClusterError.PersistenceError> =>
      Effect.suspend(() => {
        const asked = Array.from(shardIds)
        if (asked.length === 0) return storage.refresh(address, asked)
        const key = address.toString()
        let batch = waiting.get(key)
        if (batch === undefined) {
          batch = { address, shards: new Map(), done: Deferred.makeUnsafe() }
          waiting.set(key, batch)
        }
        for (const shard of asked) batch.shards.set(shard.toString(), shard)
        const done = batch.done
        const start = inFlight.has(key) ? Effect.void : Effect.suspend(() => {
          inFlight.add(key)
          return Effect.asVoid(Effect.forkIn(drain(key), scope, { startImmediately: true }))
        })
        return Effect.andThen(
          start,
          Effect.map(Deferred.await(done), (confirmed) => {
            const held = new Set(confirmed.map((shard) => shard.toString()))
            return asked.filter((shard) => held.has(shard.toString()))
          })
        )
      })

    return RunnerStorage.RunnerStorage.of({ ...storage, refresh })
  })
)

