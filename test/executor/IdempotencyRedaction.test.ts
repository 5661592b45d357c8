/**
 * An idempotency key is text that leaves a call: events (`tool.started`, `tool.retrying`,
 * `tool.completed`, `tool.failed`), the result's `idempotency.key` and audit receipts (JSONL and
 * SQL rows) show it through the call's scrubber, exactly like the arguments it comes from: the
 * tool's patterns, and the values its arguments hold under redacted keys. The key the store is
 * claimed and looked up by, and the key the handler reads, stay the key itself: a repeat still
 * replays, and two keys that look alike once redacted are still two keys.
 */
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import { afterAll, assert, describe, it } from "@effect/vitest"
import { Effect, FileSystem, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import {
  EventSink,
  Executor,
  RunContext,
  Tool,
  ToolCallContext,
  ToolError,
  ToolEvent,
  ToolRegistry,
  ToolProgress,
  ToolResult,
  ToolServices
} from "../../src/index.ts"
import { AuditLog, auditLog } from "../../src/governance/middleware/index.ts"
import { SqlAudit, SqliteClient, Stores } from "../../src/stores/index.ts"

const dir = mkdtempSync(join(tmpdir(), "tinyagents-key-redaction-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const call = (id: string, name: string, args: unknown = {}) => ({ id, name, arguments: args })
const encodeEvent = Schema.encodeUnknownSync(ToolEvent.Event)
const encodeResult = Schema.encodeUnknownSync(ToolResult.ToolResult)
const keyOf = (event: ToolEvent.Event) => "idempotencyKey" in event ? event.idempotencyKey : undefined

/** A keyed order tool whose key is its `requestId`; the first attempt of each key fails transiently. */
const makeOrder = () => {
  const probe = { runs: 0, keysSeen: [] as Array<string | undefined>, failedOnce: new Set<string>() }
  const tool = Tool.make("place_order", {
    description: "Places an order once per request id.",
    input: Schema.Struct({ requestId: Schema.String, cents: Schema.Int }),
    output: Schema.Struct({ orderId: Schema.String }),
    safety: { access: "write", redact: { patterns: [/sk-live-\w+/] } },
    idempotency: ({ requestId }) => requestId,
    retry: Executor.backoff({ base: "1 millis", maxAttempts: 3, jitter: false }),
    services: [ToolCallContext.ToolCallContext],
    handler: ({ requestId }) =>
      Effect.gen(function*() {
        const ctx = yield* ToolCallContext.ToolCallContext
        probe.keysSeen.push(ctx.idempotencyKey)
        if (!probe.failedOnce.has(requestId)) {
          probe.failedOnce.add(requestId)
          return yield* ToolError.retryable("order service busy")
        }
        probe.runs++
        return { orderId: `order-${probe.runs}` }
      })
  })
  return { tool, probe }
}

describe("idempotency keys are redacted wherever they leave a call", () => {
  it.live("pattern: no event, result, JSONL receipt or SQL receipt row holds the secret; a repeat still replays", () => {
    const filename = join(dir, "orders.db")
    const receipts = join(dir, "receipts")
    return Effect.gen(function*() {
      const { probe, tool } = makeOrder()
      const registry = yield* ToolRegistry.make([tool])
      const executor = yield* Executor.make(registry, {
        middleware: [auditLog(AuditLog.all<FileSystem.FileSystem | SqlClient.SqlClient>([AuditLog.jsonl(receipts), SqlAudit.sink()]))]
      })
      const first = yield* executor.run(call("c1", "place_order", { requestId: "order-sk-live-SECRET123", cents: 500 }))
      assert.isFalse(first.isError, ToolResult.textOf(first))
      assert.deepStrictEqual(first.value, { orderId: "order-1" })
      // the repeat is answered from the store: the claim and the lookup use the key itself
      const again = yield* executor.run(call("c2", "place_order", { requestId: "order-sk-live-SECRET123", cents: 500 }))
      assert.deepStrictEqual(again.value, { orderId: "order-1" })
      assert.strictEqual(again.idempotency?.replayed, true)
      // another secret redacts to the same text, but it is another key: it runs
      const other = yield* executor.run(call("c3", "place_order", { requestId: "order-sk-live-OTHER456", cents: 100 }))
      assert.deepStrictEqual(other.value, { orderId: "order-2" })
      assert.strictEqual(other.idempotency?.replayed, false)
      assert.strictEqual(probe.runs, 2)
      // the handler reads the key itself (to pass downstream)
      assert.deepStrictEqual(probe.keysSeen, [
        "order-sk-live-SECRET123",
        "order-sk-live-SECRET123",
        "order-sk-live-OTHER456",
        "order-sk-live-OTHER456"
      ])

      const events = yield* EventSink.EventLog.use((log) => log.all)
      const keysOf = (id: string) =>
        events.filter((e) => "toolCallId" in e && e.toolCallId === id).map((e) => [e._tag, keyOf(e)])
      assert.deepStrictEqual(keysOf("c1"), [
        ["tool.started", "order-[redacted]"],
        ["tool.retrying", "order-[redacted]"],
        ["tool.audit", "order-[redacted]"],
        ["tool.completed", "order-[redacted]"]
      ])
      assert.deepStrictEqual(first.idempotency, { key: "order-[redacted]", replayed: false })
      assert.deepStrictEqual(again.idempotency, { key: "order-[redacted]", replayed: true })

      const jsonl = readFileSync(AuditLog.receiptPath(receipts, "run-1"), "utf8")
      const lines = jsonl.trim().split("\n").map((line) => JSON.parse(line) as AuditLog.Receipt)
      assert.deepStrictEqual(lines.map((r) => [r.callId, r.idempotencyKey]), [
        ["c1", "order-[redacted]"],
        ["c2", "order-[redacted]"],
        ["c3", "order-[redacted]"]
      ])
      const sql = yield* SqlClient.SqlClient
      const rows = yield* sql<Record<string, unknown>>`SELECT * FROM tinyagents_receipts ORDER BY emit_order`
      assert.deepStrictEqual(rows.map((r) => r["idempotency_key"]), ["order-[redacted]", "order-[redacted]", "order-[redacted]"])

      const searched = [
        ...events.map((e) => JSON.stringify(encodeEvent(e))),
        ...[first, again, other].map((r) => JSON.stringify(encodeResult(r))),
        jsonl,
        JSON.stringify(rows)
      ]
      for (const text of searched) {
        assert.notInclude(text, "SECRET123")
        assert.notInclude(text, "OTHER456")
        assert.notInclude(text, "sk-live")
      }
    }).pipe(
      Effect.provide(Layer.mergeAll(
        Stores.layerSqlite({ filename }),
        SqliteClient.layer({ filename }),
        RunContext.RunContext.layer({ threadId: "thread-1", runId: "run-1", turn: 0 }),
        EventSink.EventSink.layerMemory,
        NodeFileSystem.layer
      ))
    )
  })

  it.effect("redacted keys: a key built from an argument under a redacted key shows the marker; failures too", () =>
    Effect.gen(function*() {
      const receipts: Array<AuditLog.Receipt> = []
      let runs = 0
      const tool = Tool.make("sync_account", {
        description: "Syncs an account once per token and day.",
        input: Schema.Struct({ token: Schema.String, day: Schema.String, fail: Schema.Boolean }),
        safety: { access: "write", redact: { keys: ["token"] } },
        idempotency: ({ day, token }) => `${token}:${day}`,
        handler: ({ fail }) =>
          fail ? Effect.fail(ToolError.repairable("account locked")) : Effect.sync(() => `synced ${++runs}`)
      })
      const executor = yield* Executor.make(yield* ToolRegistry.make([tool]), { middleware: [auditLog((r) => receipts.push(r))] })
      const ok = yield* executor.run(call("a", "sync_account", { token: "tok-PLANTED-7781", day: "mon", fail: false }))
      const replay = yield* executor.run(call("b", "sync_account", { token: "tok-PLANTED-7781", day: "mon", fail: false }))
      const failed = yield* executor.run(call("c", "sync_account", { token: "tok-PLANTED-7781", day: "tue", fail: true }))
      assert.strictEqual(ToolResult.textOf(ok), "synced 1")
      assert.strictEqual(ToolResult.textOf(replay), "synced 1")
      assert.isTrue(failed.isError)
      assert.strictEqual(runs, 1)
      const events = yield* EventSink.EventLog.use((log) => log.all)
      assert.deepStrictEqual(
        events.map((e) => [e._tag, "toolCallId" in e ? e.toolCallId : "", keyOf(e)]),
        [
          ["tool.started", "a", "[redacted]:mon"],
          ["tool.audit", "a", "[redacted]:mon"],
          ["tool.completed", "a", "[redacted]:mon"],
          ["tool.started", "b", "[redacted]:mon"],
          ["tool.audit", "b", "[redacted]:mon"],
          ["tool.completed", "b", "[redacted]:mon"],
          ["tool.started", "c", "[redacted]:tue"],
          ["tool.failed", "c", "[redacted]:tue"]
        ]
      )
      assert.deepStrictEqual(receipts.map((r) => r.idempotencyKey), ["[redacted]:mon", "[redacted]:mon", "[redacted]:tue"])
      assert.deepStrictEqual(ok.idempotency, { key: "[redacted]:mon", replayed: false })
      const searched = [
        ...events.map((e) => JSON.stringify(encodeEvent(e))),
        JSON.stringify(receipts),
        ...[ok, replay, failed].map((r) => JSON.stringify(encodeResult(r)))
      ]
      for (const text of searched) assert.notInclude(text, "PLANTED")
    }).pipe(Effect.provide(ToolServices.layerTest({ runId: "run-1", threadId: "thread-1" }))))

  it.effect("the key of a call that crashes is redacted in tool.failed too", () =>
    Effect.gen(function*() {
      const tool = Tool.make("charge", {
        description: "Charges once per request id.",
        input: Schema.Struct({ requestId: Schema.String }),
        safety: { access: "write", redact: { patterns: [/sk-live-\w+/] } },
        idempotency: ({ requestId }) => requestId,
        handler: () => Effect.die("card network crashed")
      })
      const executor = yield* Executor.make(yield* ToolRegistry.make([tool]))
      const result = yield* Effect.exit(executor.run(call("f", "charge", { requestId: "r-sk-live-FAILKEY9" })))
      const events = yield* EventSink.EventLog.use((log) => log.all)
      const failed = events.find((e) => e._tag === "tool.failed") as ToolEvent.ToolFailed | undefined
      assert.isDefined(failed, JSON.stringify(result))
      assert.strictEqual(failed!.idempotencyKey, "r-[redacted]")
      for (const e of events) assert.notInclude(JSON.stringify(encodeEvent(e)), "FAILKEY9")
    }).pipe(Effect.provide(ToolServices.layerTest({ runId: "run-1", threadId: "thread-1" }))))

  it.effect("the key is redacted in tool.progress too", () =>
    Effect.gen(function*() {
      const tool = Tool.make("export_data", {
        description: "Exports once per request id, reporting progress.",
        input: Schema.Struct({ requestId: Schema.String }),
        safety: { access: "write", redact: { patterns: [/sk-live-\w+/] } },
        idempotency: ({ requestId }) => requestId,
        services: [ToolProgress.ToolProgress],
        handler: () => Effect.as(ToolProgress.report({ message: "half way", fraction: 0.5 }), "exported")
      })
      const executor = yield* Executor.make(yield* ToolRegistry.make([tool]))
      yield* executor.run(call("p", "export_data", { requestId: "exp-sk-live-PROGRESS42" }))
      const events = yield* EventSink.EventLog.use((log) => log.all)
      const progress = events.filter((e) => e._tag === "tool.progress")
      assert.isAbove(progress.length, 0)
      for (const e of progress) assert.strictEqual(keyOf(e), "exp-[redacted]")
      for (const e of events) assert.notInclude(JSON.stringify(encodeEvent(e)), "PROGRESS42")
    }).pipe(Effect.provide(ToolServices.layerTest({ runId: "run-1", threadId: "thread-1" }))))
})
