import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import { assert, describe, it } from "@effect/vitest"
import { Cause, Deferred, Effect, Fiber, Layer, Schema, Stream } from "effect"
import { KeyValueStore } from "effect/persistence"
import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import {
  Cancellation,
  EventSink,
  Executor,
  RunContext,
  StoreRegistry,
  Tool,
  ToolRegistry,
  ToolResult,
  ToolServices
} from "../src/index.ts"
import type { ToolEvent } from "../src/index.ts"

const event = (sequence: number): ToolEvent.Event => ({
  _tag: "tool.started",
  runId: "r",
  threadId: "t",
  toolCallId: `c${sequence}`,
  toolName: "x",
  attempt: 1,
  timestamp: 0,
  sequence,
  arguments: {}
})

describe("StoreRegistry", () => {
  it.effect("memory: named stores are separate and shared by every user of the layer", () =>
    Effect.gen(function*() {
      const notes = yield* StoreRegistry.store("notes")
      const cache = yield* StoreRegistry.store("cache")
      yield* notes.set("a", "1")
      assert.strictEqual(yield* (yield* StoreRegistry.store("notes")).get("a"), "1")
      assert.isUndefined(yield* cache.get("a"))
      const bad = yield* Effect.flip(StoreRegistry.store("../escape"))
      assert.strictEqual(bad._tag, "StoreFailed")
    }).pipe(Effect.provide(StoreRegistry.StoreRegistry.layerMemory)))

  it.effect("memory: concurrent first uses get one store", () =>
    Effect.gen(function*() {
      const stores = yield* Effect.forEach([1, 2, 3, 4], () => StoreRegistry.store("same"), { concurrency: 4 })
      yield* stores[0]!.set("k", "v")
      for (const store of stores) assert.strictEqual(yield* store.get("k"), "v")
    }).pipe(Effect.provide(StoreRegistry.StoreRegistry.layerMemory)))

  it.live("file system: one directory, one file per prefixed key, survives a new layer", () => {
    const root = fs.mkdtempSync(nodePath.join(os.tmpdir(), "tinyagents-stores-"))
    const layer = StoreRegistry.StoreRegistry.layerFileSystem(root).pipe(
      Layer.provide([NodeFileSystem.layer, NodePath.layer])
    )
    return Effect.gen(function*() {
      yield* Effect.gen(function*() {
        yield* (yield* StoreRegistry.store("artifacts")).set("call-1", "hello")
      }).pipe(Effect.provide(layer))
      const again = yield* Effect.gen(function*() {
        return yield* (yield* StoreRegistry.store("artifacts")).get("call-1")
      }).pipe(Effect.provide(layer))
      assert.strictEqual(again, "hello")
      assert.deepStrictEqual(fs.readdirSync(root), [encodeURIComponent("artifacts/call-1")])
    }).pipe(Effect.ensuring(Effect.sync(() => fs.rmSync(root, { recursive: true, force: true }))))
  })

  it.live("file system: keys too long for a file name get a fixed-length name; every key round-trips", () => {
    const root = fs.mkdtempSync(nodePath.join(os.tmpdir(), "tinyagents-stores-"))
    const layer = StoreRegistry.StoreRegistry.layerFileSystem(root).pipe(
      Layer.provide([NodeFileSystem.layer, NodePath.layer])
    )
    const long = "x".repeat(300)
    const accents = "é".repeat(120)
    const longer = "x".repeat(301) // same readable start as `long`, another key
    const lone = "a\ud800b" // not well-formed: no percent-encoded form at all
    const fits = "y".repeat(200 - encodeURIComponent("notes/").length) // exactly 200 encoded bytes: kept as is
    const keys = [long, accents, longer, lone, fits]
    return Effect.gen(function*() {
      yield* Effect.gen(function*() {
        const notes = yield* StoreRegistry.store("notes")
        for (const [i, key] of keys.entries()) yield* notes.set(key, `v${i}`)
      }).pipe(Effect.provide(layer))
      yield* Effect.gen(function*() {
        const notes = yield* StoreRegistry.store("notes")
        for (const [i, key] of keys.entries()) {
          assert.strictEqual(yield* notes.get(key), `v${i}`)
          assert.isTrue(yield* notes.has(key))
        }
        assert.strictEqual(yield* notes.modify(long, (v) => `${v}!`), "v0!")
        assert.strictEqual(yield* notes.get(long), "v0!")
        assert.strictEqual(yield* notes.get(longer), "v2")
        yield* notes.remove(accents)
        assert.isFalse(yield* notes.has(accents))
        assert.isUndefined(yield* notes.get(accents))
        assert.isUndefined(yield* notes.get("x".repeat(299)))
      }).pipe(Effect.provide(layer))
      const files = fs.readdirSync(root)
      assert.lengthOf(files, 4)
      for (const file of files) assert.isAtMost(Buffer.byteLength(file), 255, file)
      assert.include(files, encodeURIComponent(`notes/${fits}`))
      for (const file of files.filter((f) => f !== encodeURIComponent(`notes/${fits}`))) {
        assert.isAbove(file.length, 200, file)
        assert.match(file, /^notes%2F.+~[0-9a-f]{64}$/)
      }
    }).pipe(Effect.ensuring(Effect.sync(() => fs.rmSync(root, { recursive: true, force: true }))))
  })

  it.live("file system: a keyed tool whose key is too long for a file name works (runs once, then replays)", () => {
    const root = fs.mkdtempSync(nodePath.join(os.tmpdir(), "tinyagents-stores-"))
    let runs = 0
    const charge = Tool.make("charge", {
      description: "Charges once per id.",
      input: Schema.Struct({ id: Schema.String }),
      safety: { access: "write" },
      idempotency: ({ id }) => id,
      handler: ({ id }) => Effect.sync(() => `charged ${id.length} (${++runs})`)
    })
    const layer = Layer.mergeAll(
      RunContext.layer({ threadId: "t", runId: "r", turn: 1 }),
      EventSink.layerDiscard,
      StoreRegistry.layerFileSystem(root).pipe(Layer.provide([NodeFileSystem.layer, NodePath.layer]))
    )
    return Effect.gen(function*() {
      const executor = yield* Executor.make(yield* ToolRegistry.make([charge]))
      for (const id of ["x".repeat(300), "é".repeat(120), "a\ud800b"]) {
        const first = yield* executor.run({ id: "c1", name: "charge", arguments: { id } })
        assert.isFalse(first.isError, ToolResult.textOf(first))
        assert.deepStrictEqual(first.idempotency, { key: id, replayed: false })
        const again = yield* executor.run({ id: "c2", name: "charge", arguments: { id } })
        assert.deepStrictEqual(again.idempotency, { key: id, replayed: true })
        assert.strictEqual(ToolResult.textOf(again), ToolResult.textOf(first))
      }
      assert.strictEqual(runs, 3)
    }).pipe(
      Effect.provide(layer),
      Effect.ensuring(Effect.sync(() => fs.rmSync(root, { recursive: true, force: true })))
    )
  })

  it.live("file system: a failed open is not remembered; the next use opens the store", () => {
    const parent = fs.mkdtempSync(nodePath.join(os.tmpdir(), "tinyagents-stores-"))
    const blocker = nodePath.join(parent, "data")
    const root = nodePath.join(blocker, "stores")
    fs.writeFileSync(blocker, "a file where a directory should be")
    const layer = StoreRegistry.StoreRegistry.layerFileSystem(root).pipe(
      Layer.provide([NodeFileSystem.layer, NodePath.layer])
    )
    return Effect.gen(function*() {
      const failed = yield* Effect.flip(StoreRegistry.store("notes"))
      assert.strictEqual(failed._tag, "StoreFailed")
      assert.strictEqual(failed.operation, "open")
      fs.rmSync(blocker)
      const notes = yield* StoreRegistry.store("notes")
      yield* notes.set("k", "v")
      assert.strictEqual(yield* (yield* StoreRegistry.store("notes")).get("k"), "v")
      assert.strictEqual(yield* StoreRegistry.store("notes"), notes)
    }).pipe(
      Effect.provide(layer),
      Effect.ensuring(Effect.sync(() => fs.rmSync(parent, { recursive: true, force: true })))
    )
  })

  it.effect("layer: every name is a prefixed view of the one KeyValueStore in context", () =>
    Effect.gen(function*() {
      yield* (yield* StoreRegistry.store("notes")).set("a", "1")
      yield* (yield* StoreRegistry.store("cache")).set("a", "2")
      const kv = yield* KeyValueStore.KeyValueStore
      assert.deepStrictEqual([...(yield* kv.keys)].sort(), ["cache/a", "notes/a"])
      assert.strictEqual(yield* kv.get("notes/a"), "1")
      assert.deepStrictEqual(yield* (yield* StoreRegistry.store("notes")).keys, ["a"])
    }).pipe(Effect.provide(StoreRegistry.layer.pipe(Layer.provideMerge(KeyValueStore.layerMemory)))))
})

describe("EventSink", () => {
  it.effect("memory: collects in emit order", () =>
    Effect.gen(function*() {
      yield* EventSink.emit(event(0))
      yield* EventSink.emit(event(1))
      const all = yield* EventSink.EventLog.use((log) => log.all)
      assert.deepStrictEqual(all.map((e) => e.sequence), [0, 1])
    }).pipe(Effect.provide(EventSink.EventSink.layerMemory)))

  it.effect("pubsub: subscribers see events published after they subscribe", () =>
    Effect.gen(function*() {
      const { stream } = yield* EventSink.EventStream
      const fiber = yield* stream.pipe(Stream.take(2), Stream.runCollect, Effect.forkChild)
      yield* Effect.yieldNow
      yield* EventSink.emit(event(0))
      yield* EventSink.emit(event(1))
      const got = yield* Fiber.join(fiber)
      assert.deepStrictEqual(got.map((e) => e.sequence), [0, 1])
    }).pipe(Effect.provide(EventSink.EventSink.layerPubSub)))

  it.effect("callback: called synchronously per event", () => {
    const seen: Array<number> = []
    return EventSink.emit(event(7)).pipe(
      Effect.provide(EventSink.EventSink.layerCallback((e) => seen.push(e.sequence))),
      Effect.tap(() => Effect.sync(() => assert.deepStrictEqual(seen, [7])))
    )
  })

  it.effect("callback: an Effect the callback returns runs, with the services the layer was given", () => {
    const seen: Array<string> = []
    const sink = EventSink.EventSink.layerCallback((e) =>
      Effect.map(RunContext.RunContext, (run) => void seen.push(`${run.threadId}:${run.turn}:${e.sequence}`))
    )
    return Effect.gen(function*() {
      yield* EventSink.emit(event(1))
      yield* EventSink.emit(event(2))
      assert.deepStrictEqual(seen, ["t-cb:0:1", "t-cb:0:2"]) // RunContext.layer without a turn: turn 0
    }).pipe(Effect.provide(sink.pipe(Layer.provide(RunContext.layer({ threadId: "t-cb", runId: "r" })))))
  })

  it.effect("callback: a failing Effect is a failure of the sink; the executor logs it and the call succeeds", () =>
    Effect.gen(function*() {
      const failed = yield* Effect.exit(EventSink.emit(event(3)))
      assert.isTrue(failed._tag === "Failure" && Cause.hasDies(failed.cause))
      const echo = Tool.make("echo", {
        description: "Echoes.",
        input: Schema.Struct({ text: Schema.String }),
        handler: ({ text }) => Effect.succeed(text)
      })
      const executor = yield* Executor.make(yield* ToolRegistry.make([echo]))
      const result = yield* executor.run({ id: "c1", name: "echo", arguments: { text: "hi" } })
      assert.isFalse(result.isError)
      assert.strictEqual(result.value, "hi")
    }).pipe(Effect.provide(Layer.mergeAll(
      EventSink.EventSink.layerCallback(() => Effect.fail("exporter down")),
      RunContext.layer({ threadId: "t", runId: "r" }),
      StoreRegistry.layerMemory
    ))))
})

describe("Cancellation", () => {
  it.effect("the signal aborts when the handler's fiber is interrupted", () =>
    Effect.gen(function*() {
      const runCancel = yield* Cancellation.makeRunCancel
      const seen = yield* Deferred.make<AbortSignal>()
      const fiber = yield* Effect.gen(function*() {
        const { signal } = yield* Cancellation.Cancellation
        yield* Deferred.succeed(seen, signal)
        return yield* Effect.never
      }).pipe(Cancellation.provide(runCancel), Effect.forkChild)
      const signal = yield* Deferred.await(seen)
      assert.isFalse(signal.aborted)
      yield* Fiber.interrupt(fiber)
      assert.isTrue(signal.aborted)
    }))

  it.effect("cancelRun completes the run's switch with the reason", () =>
    Effect.gen(function*() {
      const runCancel = yield* Cancellation.makeRunCancel
      yield* Effect.gen(function*() {
        const { cancelRun } = yield* Cancellation.Cancellation
        yield* cancelRun("user pressed stop")
      }).pipe(Cancellation.provide(runCancel))
      assert.isTrue(yield* runCancel.isCancelled)
      assert.strictEqual(yield* runCancel.await, "user pressed stop")
    }))
})

describe("ToolServices.layerTest", () => {
  it.effect("provides all four hidden services at once", () =>
    Effect.gen(function*() {
      const run = yield* RunContext.RunContext
      assert.strictEqual(run.runId, "r-1")
      yield* (yield* StoreRegistry.store("notes")).set("k", "v")
      yield* EventSink.emit(event(0))
      assert.lengthOf(yield* EventSink.EventLog.use((l) => l.all), 1)
      const { signal } = yield* Cancellation.Cancellation
      assert.isFalse(signal.aborted)
      const turn = yield* RunContext.RunContext.use((r) => Effect.succeed(r.turn)).pipe(RunContext.withTurn(3))
      assert.strictEqual(turn, 3)
    }).pipe(Effect.provide(ToolServices.layerTest({ runId: "r-1" }))))
})

describe("module-level layers and accessors", () => {
  it.effect("each module's layers are its service's static layers", () =>
    Effect.sync(() => {
      assert.strictEqual(StoreRegistry.layerMemory, StoreRegistry.StoreRegistry.layerMemory)
      assert.strictEqual(StoreRegistry.layerFileSystem, StoreRegistry.StoreRegistry.layerFileSystem)
      assert.strictEqual(StoreRegistry.layer, StoreRegistry.StoreRegistry.layer)
      assert.strictEqual(EventSink.layerMemory, EventSink.EventSink.layerMemory)
      assert.strictEqual(EventSink.layerPubSub, EventSink.EventSink.layerPubSub)
      assert.strictEqual(EventSink.layerCallback, EventSink.EventSink.layerCallback)
      assert.strictEqual(EventSink.layerDiscard, EventSink.EventSink.layerDiscard)
      assert.strictEqual(EventSink.layerJsonl, EventSink.EventSink.layerJsonl)
      assert.strictEqual(Cancellation.layerNever, Cancellation.Cancellation.layerNever)
      assert.strictEqual(RunContext.layer, RunContext.RunContext.layer)
    }))

  it.effect("RunContext.layer provides the run; Cancellation.cancelRun and signal reach the call's service", () =>
    Effect.gen(function*() {
      const reasons: Array<string> = []
      const controller = new AbortController()
      const cancellation = Layer.succeed(Cancellation.Cancellation, {
        signal: controller.signal,
        cancelRun: (reason) => Effect.sync(() => void reasons.push(reason))
      })
      const [info, signal] = yield* Effect.all([RunContext.RunContext, Cancellation.signal]).pipe(
        Effect.tap(() => Cancellation.cancelRun("enough")),
        Effect.provide(Layer.merge(RunContext.layer({ threadId: "t", runId: "r", turn: 2 }), cancellation))
      )
      assert.deepStrictEqual([info.threadId, info.runId, info.turn], ["t", "r", 2])
      assert.strictEqual(signal, controller.signal)
      assert.deepStrictEqual(reasons, ["enough"])
    }))
})
