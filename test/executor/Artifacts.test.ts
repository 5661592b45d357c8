/**
 * Large outputs and the artifact store, when the store does not keep them whole. A write that
 * fails after the handler succeeded does not fail the call (it cannot be undone, and asking the
 * model to retry would repeat it): the result is a success with the bounded head and tail and a
 * note that the full output could not be stored, the failure is logged, `tool.completed` is
 * emitted, and a keyed call's result is still stored. A store that keeps a text cut to its size
 * cap (`artifacts.maxBytes`) gives a result that says so: the `ArtifactRef` has the stored size,
 * and the note says where the stored copy is cut.
 */
import { afterAll, assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Logger, References, Schema } from "effect"
import { KeyValueStore } from "effect/persistence"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { EventSink, Executor, RunContext, StoreRegistry, Tool, ToolRegistry, ToolResult } from "../../src/index.ts"
import type { ToolEvent } from "../../src/index.ts"
import { Stores } from "../../src/stores/index.ts"

const dir = mkdtempSync(join(tmpdir(), "tinyagents-artifacts-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const call = (id: string, name: string, args: unknown = {}) => ({ id, name, arguments: args })
const eventsOf = EventSink.EventLog.use((log) => log.all)
const tagsOf = (events: ReadonlyArray<ToolEvent.Event>, id: string) =>
  events.filter((e) => "toolCallId" in e && e.toolCallId === id).map((e) => e._tag)

/** A 27 KB delivery report: distinct head and tail. */
const report = `HEAD-of-delivery-report ${"x".repeat(27_000)} TAIL-of-delivery-report`

/**
 * A registry whose `artifacts` store refuses every write the way a locked SQLite database does
 * (`SQLITE_BUSY`: a transient cause, so a `StoreFailed` made from it says "retry later"); every
 * other store (the idempotency store) is in memory.
 */
const lockedArtifacts = () => {
  const writes = { attempted: 0 }
  const locked = KeyValueStore.make({
    get: () => Effect.succeed(undefined),
    getUint8Array: () => Effect.succeed(undefined),
    set: (key) =>
      Effect.suspend(() => {
        writes.attempted++
        return Effect.fail(
          new KeyValueStore.KeyValueStoreError({
            method: "set",
            key,
            message: "database is locked",
            cause: Object.assign(new Error("database is locked"), { code: "SQLITE_BUSY" })
          })
        )
      }),
    remove: () => Effect.void,
    clear: Effect.void,
    size: Effect.succeed(0),
    keys: Effect.succeed([])
  })
  const layer = StoreRegistry.layerBackend(
    Effect.map(Effect.provide(Effect.service(KeyValueStore.KeyValueStore), KeyValueStore.layerMemory), (memory) => ({
      store: memory,
      claims: () => StoreRegistry.memoryClaims(),
      view: (name: string) => name === "artifacts" ? locked : undefined
    }))
  )
  return { writes, layer }
}

const runLayer = Layer.mergeAll(
  RunContext.RunContext.layer({ threadId: "thread-1", runId: "run-1", turn: 0 }),
  EventSink.EventSink.layerMemory
)

/** Log lines (level and message, with annotations) of the effect it provides. */
const captureLogs = () => {
  const lines: Array<string> = []
  const logger = Logger.make((options) => void lines.push(Logger.formatJson.log(options)))
  return { lines, layer: Layer.mergeAll(Logger.layer([logger]), Layer.succeed(References.MinimumLogLevel, "All")) }
}

describe("artifact store failures", () => {
  it.effect("a non-idempotent tool that succeeded: its result is a success with head and tail; tool.completed; a warning", () => {
    const logs = captureLogs()
    const artifacts = lockedArtifacts()
    return Effect.gen(function*() {
      let sent = 0
      const sendEmail = Tool.make("send_email", {
        description: "Sends an email and returns the delivery report.",
        input: Schema.Struct({ to: Schema.String }),
        safety: { access: "network" },
        handler: () => Effect.sync(() => (sent++, report))
      })
      const executor = yield* Executor.make(yield* ToolRegistry.make([sendEmail]))
      const result = yield* executor.run(call("e1", "send_email", { to: "a@example.com" }))
      const text = ToolResult.textOf(result)
      assert.strictEqual(sent, 1)
      assert.isFalse(result.isError, text)
      assert.isUndefined(result.error)
      assert.deepStrictEqual(result.artifacts, [])
      assert.isTrue(text.startsWith("HEAD-of-delivery-report"), text.slice(0, 80))
      assert.isTrue(text.endsWith("TAIL-of-delivery-report"), text.slice(-80))
      assert.isBelow(text.length, 16_000)
      assert.include(text, `the full output (${report.length} characters) could not be stored`)
      assert.notMatch(text, /retry|unavailable for now/i)
      assert.strictEqual(artifacts.writes.attempted, 1)

      const events = yield* eventsOf
      assert.deepStrictEqual(tagsOf(events, "e1"), ["tool.started", "tool.completed"])
      const completed = events.find((e) => e._tag === "tool.completed") as ToolEvent.ToolCompleted
      assert.isFalse(completed.isError)
      assert.strictEqual(completed.output, text)
      assert.deepStrictEqual(completed.artifacts, [])

      const warnings = logs.lines.map((line) => JSON.parse(line) as Record<string, unknown>).filter((l) =>
        l["level"] === "WARN"
      )
      assert.strictEqual(warnings.length, 1, logs.lines.join("\n"))
      const warning = JSON.stringify(warnings[0])
      assert.match(warning, /artifact/)
      assert.include(warning, "send_email")
      assert.include(warning, "e1")
      assert.include(warning, "database is locked")
      assert.notInclude(warning, "x".repeat(100), "the output is not logged")
    }).pipe(Effect.provide(Layer.mergeAll(runLayer, artifacts.layer, logs.layer)))
  })

  it.effect("a keyed tool: tool.completed, and its result is stored, so a repeat replays instead of running again", () =>
    Effect.gen(function*() {
      let sent = 0
      const sendEmail = Tool.make("send_email", {
        description: "Sends an email once per message id.",
        input: Schema.Struct({ messageId: Schema.String }),
        safety: { access: "network" },
        idempotency: ({ messageId }) => messageId,
        handler: () => Effect.sync(() => (sent++, report))
      })
      const executor = yield* Executor.make(yield* ToolRegistry.make([sendEmail]))
      const first = yield* executor.run(call("k1", "send_email", { messageId: "m-1" }))
      const again = yield* executor.run(call("k2", "send_email", { messageId: "m-1" }))
      assert.strictEqual(sent, 1, "applied once")
      for (const result of [first, again]) {
        assert.isFalse(result.isError, ToolResult.textOf(result))
        assert.match(ToolResult.textOf(result), /could not be stored/)
      }
      assert.deepStrictEqual(first.idempotency, { key: "m-1", replayed: false })
      assert.deepStrictEqual(again.idempotency, { key: "m-1", replayed: true })
      const events = yield* eventsOf
      assert.deepStrictEqual(tagsOf(events, "k1"), ["tool.started", "tool.completed"])
      assert.deepStrictEqual(tagsOf(events, "k2"), ["tool.started", "tool.completed"])
    }).pipe(Effect.provide(Layer.mergeAll(runLayer, lockedArtifacts().layer, Logger.layer([])))))
})

describe("artifacts cut by the store's size cap", () => {
  it.effect("SQLite with maxBytes 4096: the ref has the stored size and the note says the stored copy is cut", () =>
    Effect.gen(function*() {
      const big = `${"a".repeat(25_000)}${"b".repeat(25_000)}`
      const rows = Array.from({ length: 500 }, (_, i) => `row ${i} ${"r".repeat(80)}`)
      const tools = [
        Tool.make("dump", {
          description: "Dumps 50,000 bytes.",
          input: Schema.Struct({}),
          safety: { access: "read" },
          handler: () => Effect.succeed(big)
        }),
        Tool.make("rows", {
          description: "Lists rows as JSON.",
          input: Schema.Struct({}),
          output: Schema.Struct({ rows: Schema.Array(Schema.String) }),
          safety: { access: "read" },
          handler: () => Effect.succeed({ rows })
        }),
        Tool.make("small", {
          description: "3,000 bytes, over its own threshold, under the cap.",
          input: Schema.Struct({}),
          safety: { access: "read" },
          artifactThreshold: 1_000,
          handler: () => Effect.succeed("s".repeat(3_000))
        })
      ]
      const executor = yield* Executor.make(yield* ToolRegistry.make(tools))
      const dump = yield* executor.run(call("d1", "dump"))
      const store = yield* StoreRegistry.store("artifacts")
      const stored = (yield* store.get("run-1/d1"))!
      assert.strictEqual(Buffer.byteLength(stored), 4_096, "the store keeps 4096 bytes")
      assert.isFalse(dump.isError)
      assert.deepStrictEqual(dump.artifacts, [{ store: "artifacts", key: "run-1/d1", bytes: 4_096, mimeType: "text/plain" }])
      const text = ToolResult.textOf(dump)
      assert.notMatch(text, /the full output \(50000 characters\) is stored/)
      assert.match(text, /the full output has 50000 characters/)
      assert.match(text, /artifact "run-1\/d1" keeps only its start, cut at 4096 bytes/)
      const events = yield* eventsOf
      const storedEvent = events.find((e) => e._tag === "tool.artifact_stored" && e.toolCallId === "d1") as
        | ToolEvent.ToolArtifactStored
        | undefined
      assert.strictEqual(storedEvent?.artifact.bytes, 4_096)

      // cut JSON is no longer JSON
      const json = yield* executor.run(call("j1", "rows"))
      assert.deepStrictEqual(json.artifacts.map((a) => [a.bytes, a.mimeType]), [[4_096, "text/plain"]])
      assert.match(ToolResult.textOf(json), /cut at 4096 bytes/)

      // under the cap: stored whole, said as before
      const small = yield* executor.run(call("s1", "small"))
      assert.deepStrictEqual(small.artifacts, [{ store: "artifacts", key: "run-1/s1", bytes: 3_000, mimeType: "text/plain" }])
      assert.match(ToolResult.textOf(small), /the full output \(3000 characters\) is stored as artifact "run-1\/s1"/)
      assert.strictEqual(yield* store.get("run-1/s1"), "s".repeat(3_000))
    }).pipe(
      Effect.provide(Layer.mergeAll(
        runLayer,
        Stores.layerSqlite({ filename: join(dir, "capped.db"), artifacts: { maxBytes: 4_096 } })
      ))
    ))
})

describe("artifact keys", () => {
  it.effect("a call id reused in a later turn (Gemini numbers its ids per turn) gets its own artifact", () =>
    Effect.gen(function*() {
      let n = 0
      const big = Tool.make("big", {
        description: "3,000 characters, different each call.",
        input: Schema.Struct({}),
        safety: { access: "read" },
        handler: () => Effect.sync(() => `${++n}`.repeat(3_000))
      })
      const executor = yield* Executor.make(yield* ToolRegistry.make([big]), { artifacts: { threshold: 1_000 } })
      const inTurn = (turn: number) =>
        Effect.provideService(
          executor.run(call("call_0", "big")),
          RunContext.RunContext,
          { threadId: "thread-1", runId: "run-1", turn }
        )
      const first = yield* inTurn(0)
      const second = yield* inTurn(1)
      assert.deepStrictEqual([first.artifacts[0]?.key, second.artifacts[0]?.key], ["run-1/call_0", "run-1/1/call_0"])
      const store = yield* StoreRegistry.store("artifacts")
      assert.strictEqual(yield* store.get("run-1/call_0"), "1".repeat(3_000))
      assert.strictEqual(yield* store.get("run-1/1/call_0"), "2".repeat(3_000))
    }).pipe(Effect.provide(Layer.mergeAll(runLayer, StoreRegistry.layerMemory))))
})

describe("the head and tail of offloaded text", () => {
  it.effect("are bounded by the threshold that applies: a tool's own artifactThreshold, not the executor's", () =>
    Effect.gen(function*() {
      const roomy = Tool.make("roomy", {
        description: "30,000 characters, over its own threshold of 10,000.",
        input: Schema.Struct({}),
        safety: { access: "read" },
        artifactThreshold: 10_000,
        handler: () => Effect.succeed(`${"h".repeat(3_000)}${"m".repeat(24_000)}${"t".repeat(3_000)}`)
      })
      const plain = Tool.make("plain", {
        description: "3,000 characters, over the executor's threshold of 1,000.",
        input: Schema.Struct({}),
        safety: { access: "read" },
        handler: () => Effect.succeed(`${"h".repeat(1_000)}${"m".repeat(1_000)}${"t".repeat(1_000)}`)
      })
      const executor = yield* Executor.make(yield* ToolRegistry.make([roomy, plain]), {
        artifacts: { threshold: 1_000, head: 2_000, tail: 500 }
      })
      const kept = (result: ToolResult.ToolResult) => {
        const text = ToolResult.textOf(result)
        return { head: /^h*/.exec(text)![0].length, tail: /t*$/.exec(text)![0].length }
      }
      // 2,000 and 500 fit in 60% and 20% of the tool's 10,000
      assert.deepStrictEqual(kept(yield* executor.run(call("r1", "roomy"))), { head: 2_000, tail: 500 })
      // the executor's 1,000 allows 600 and 200
      assert.deepStrictEqual(kept(yield* executor.run(call("p1", "plain"))), { head: 600, tail: 200 })
    }).pipe(Effect.provide(Layer.mergeAll(runLayer, StoreRegistry.layerMemory))))
})
