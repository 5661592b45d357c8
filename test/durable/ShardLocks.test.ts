/**
 * The shard-lock refreshes a runner batches (`coalesceRefresh`, src/durable/internal/shardLocks.ts):
 * effect/cluster confirms the lock of a reply's shard with one refresh per reply; batched, the
 * refreshes asked while one is in flight share the next one, each caller gets the shards of its own
 * request, a confirmation always comes from a refresh started after it was asked for, failures reach
 * every caller of that batch, and the empty refresh (the health probe) is not batched.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Layer } from "effect"
import { ClusterError, RunnerAddress, RunnerStorage, ShardId } from "effect/cluster"
import { coalesceRefresh } from "../../src/durable/internal/shardLocks.ts"

const address = RunnerAddress.make("127.0.0.1", 1)
const shard = (i: number) => ShardId.make("default", i)

/** A storage whose refreshes wait for `gate` and confirm the shards of `held`; `calls` records each refresh's shards. */
const fake = (held: Set<number>, calls: Array<Array<number>>, gate: { current: Deferred.Deferred<void> }, fail: { current: boolean }) =>
  Layer.effect(
    RunnerStorage.RunnerStorage,
    Effect.map(RunnerStorage.makeMemory, (memory) =>
      RunnerStorage.RunnerStorage.of({
        ...memory,
        refresh: (_address, shardIds) =>
          Effect.suspend(() => {
            const ids = Array.from(shardIds)
            calls.push(ids.map((s) => s.id))
            return Effect.andThen(
              Deferred.await(gate.current),
              fail.current
                ? Effect.fail(new ClusterError.PersistenceError({ cause: "down" }))
                : Effect.succeed(ids.filter((s) => held.has(s.id)))
            )
          })
      }))
  )

describe("coalesceRefresh", () => {
  it.effect("refreshes asked while one is in flight share the next; each caller gets its own confirmed shards", () =>
    Effect.gen(function*() {
      const calls: Array<Array<number>> = []
      const gate = { current: Deferred.makeUnsafe<void>() }
      const layer = Layer.provide(coalesceRefresh, fake(new Set([0, 1, 2, 3, 5]), calls, gate, { current: false }))
      yield* Effect.gen(function*() {
        const storage = yield* RunnerStorage.RunnerStorage
        // the first refresh goes at once and waits on the gate
        const first = yield* Effect.forkChild(storage.refresh(address, [shard(0)]), { startImmediately: true })
        // 50 replies' confirmations meanwhile, shards 1..5 ten times each
        const rest = yield* Effect.forEach(
          Array.from({ length: 50 }, (_, i) => 1 + (i % 5)),
          (i) => Effect.forkChild(storage.refresh(address, [shard(i)]), { startImmediately: true })
        )
        assert.deepStrictEqual(calls, [[0]])
        // the in-flight refresh answers only its own caller
        yield* Deferred.succeed(gate.current, undefined)
        assert.deepStrictEqual((yield* Fiber.join(first)).map((s) => s.id), [0])
        const answers = yield* Effect.forEach(rest, Fiber.join)
        // one more refresh, of every shard asked meanwhile
        assert.deepStrictEqual(calls, [[0], [1, 2, 3, 4, 5]])
        answers.forEach((answer, i) => {
          const id = 1 + (i % 5)
          assert.deepStrictEqual(answer.map((s) => s.id), id === 4 ? [] : [id])
        })
      }).pipe(Effect.provide(layer))
    }))

  it.effect("a failed batch fails each of its callers; the next batch refreshes again; the empty probe is not batched", () =>
    Effect.gen(function*() {
      const calls: Array<Array<number>> = []
      const gate = { current: Deferred.makeUnsafe<void>() }
      const fail = { current: true }
      const layer = Layer.provide(coalesceRefresh, fake(new Set([1, 2]), calls, gate, fail))
      yield* Effect.gen(function*() {
        const storage = yield* RunnerStorage.RunnerStorage
        const a = yield* Effect.forkChild(storage.refresh(address, [shard(1)]), { startImmediately: true })
        const b = yield* Effect.forkChild(storage.refresh(address, [shard(2)]), { startImmediately: true })
        const probe = yield* Effect.forkChild(storage.refresh(address, []), { startImmediately: true })
        assert.deepStrictEqual(calls, [[1], []])
        yield* Deferred.succeed(gate.current, undefined)
        assert.isTrue(Exit.isFailure(yield* Fiber.await(a)))
        assert.isTrue(Exit.isFailure(yield* Fiber.await(b)))
        assert.isTrue(Exit.isFailure(yield* Fiber.await(probe)))
        assert.deepStrictEqual(calls, [[1], [], [2]])
        fail.current = false
        gate.current = Deferred.makeUnsafe<void>()
        yield* Deferred.succeed(gate.current, undefined)
        assert.deepStrictEqual((yield* storage.refresh(address, [shard(1), shard(3)])).map((s) => s.id), [1])
      }).pipe(Effect.provide(layer))
    }))
})
