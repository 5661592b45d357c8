/**
 * auditLog: one receipt per call (including short-circuited and crashed
 * calls), hashes instead of payloads, a JSONL file per run whose URI is in the
 * audit, and an emit order.
 */
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { Approval } from "../../src/governance/Approval.ts"
import { canonicalJson, hash, withoutKeys } from "../../src/internal/canonical.ts"
import { Tool, ToolRegistry, ToolResult } from "../../src/index.ts"
import { auditLog, consent, AuditLog } from "../../src/governance/middleware/index.ts"
import { call, eventsOf, executorOf, layersOf, makeCounter, makeTools, services, tagsOf } from "./fixtures.ts"

const denyDeletes = Approval.layerRules([
  { name: "no-deletes", match: (r) => r.toolName === "delete_all", decide: "deny", reason: "deleting is not allowed" },
  { name: "rest", match: () => true, decide: "approve" }
])

describe("auditLog", () => {
  it.effect("one receipt per call with status, timing, emit order, hashes and the audit", () =>
    Effect.gen(function*() {
      const receipts: Array<AuditLog.Receipt> = []
      const tools = makeTools(makeCounter())
      const executor = yield* executorOf(tools.all, [auditLog((r) => receipts.push(r)), consent()])
      const ok = yield* executor.run(call("c1", "echo", { text: "hi", token: "secret" }))
      const denied = yield* executor.run(call("c2", "delete_all"))
      assert.deepStrictEqual(receipts.map((r) => [r.callId, r.tool, r.status, r.emitOrder, r.isError]), [
        ["c1", "echo", "ok", 0, false],
        ["c2", "delete_all", "consent_denied", 1, true]
      ])
      const [first, second] = receipts
      assert.strictEqual(first!.runId, "run-1")
      assert.strictEqual(first!.argumentsSha256, hash({ text: "hi", token: "secret" }))
      assert.strictEqual(first!.resultSha256, hash({ content: ok.content, value: ok.value }))
      assert.notInclude(JSON.stringify(receipts), "secret")
      assert.deepStrictEqual(layersOf(first!), ["audit_log:ok", "consent:ok"])
      assert.strictEqual(first!.audit.consent?.decidedBy, "rule:rest")
      assert.strictEqual(second!.error, "delete_all: the call was not approved: deleting is not allowed")
      assert.deepStrictEqual(layersOf(denied), ["audit_log:consent_denied", "consent:consent_denied"])
      assert.deepStrictEqual(tagsOf(yield* eventsOf).filter((t) => t === "tool.audit"), ["tool.audit", "tool.audit"])
    }).pipe(Effect.provide([services, denyDeletes])))

  it.effect("a keyed tool's receipts record its idempotency key (also for the replayed call); others have none", () =>
    Effect.gen(function*() {
      const receipts: Array<AuditLog.Receipt> = []
      const pay = Tool.make("pay_invoice", {
        description: "Pays an invoice once per invoice id.",
        input: Schema.Struct({ invoiceId: Schema.String }),
        safety: { access: "write" },
        idempotency: ({ invoiceId }) => `invoice:${invoiceId}`,
        handler: () => Effect.succeed("paid")
      })
      const tools = makeTools(makeCounter())
      const executor = yield* executorOf([pay, tools.echo], [auditLog((r) => receipts.push(r))])
      yield* executor.run(call("c1", "pay_invoice", { invoiceId: "inv-1" }))
      yield* executor.run(call("c2", "pay_invoice", { invoiceId: "inv-1" }))
      yield* executor.run(call("c3", "echo", { text: "hi" }))
      assert.deepStrictEqual(receipts.map((r) => [r.callId, r.idempotencyKey, r.status]), [
        ["c1", "invoice:inv-1", "ok"],
        ["c2", "invoice:inv-1", "ok"],
        ["c3", undefined, "ok"]
      ])
      assert.isFalse("idempotencyKey" in receipts[2]!)
    }).pipe(Effect.provide(services)))

  it("hashes are stable under key order, change with any value, and ignore redacted keys", () => {
    const a = { b: 1, a: { y: [1, { q: 2, p: 3 }], x: "s" } }
    const reordered = { a: { x: "s", y: [1, { p: 3, q: 2 }] }, b: 1 }
    assert.strictEqual(canonicalJson(a), canonicalJson(reordered))
    assert.strictEqual(hash(a), hash(reordered))
    assert.notStrictEqual(hash(a), hash({ ...a, b: 2 }))
    assert.notStrictEqual(hash(a), hash({ b: 1, a: { y: [1, { q: 2, p: 4 }], x: "s" } }))
    assert.notStrictEqual(hash([1, 2]), hash([2, 1]))
    const redact = new Set(["token"])
    assert.strictEqual(
      hash(withoutKeys({ text: "hi", token: "one" }, redact)),
      hash(withoutKeys({ token: "two", text: "hi" }, redact))
    )
  })

  it.effect("receipts hash arguments without the redact keys", () =>
    Effect.gen(function*() {
      const receipts: Array<AuditLog.Receipt> = []
      const tools = makeTools(makeCounter())
      const executor = yield* executorOf(tools.all, [auditLog((r) => receipts.push(r), { redact: ["token"] })])
      yield* executor.run(call("c1", "echo", { text: "hi", token: "one" }))
      yield* executor.run(call("c2", "echo", { token: "two", text: "hi" }))
      yield* executor.run(call("c3", "echo", { text: "hello", token: "one" }))
      const [a, b, c] = receipts.map((r) => r.argumentsSha256)
      assert.strictEqual(a, b)
      assert.notStrictEqual(a, c)
      assert.strictEqual(a, hash({ text: "hi" }))
    }).pipe(Effect.provide(services)))

  it.effect("JSONL: one line per call in <dir>/<runId>.jsonl, including a crashed handler; the URI is in the audit", () => {
    const directory = mkdtempSync(join(tmpdir(), "tinyagents-receipts-"))
    return Effect.gen(function*() {
      const tools = makeTools(makeCounter())
      const executor = yield* executorOf(tools.all, [auditLog(AuditLog.jsonl(directory)), consent()])
      const ok = yield* executor.run(call("c1", "echo", { text: "hi" }))
      const crash = yield* Effect.flip(executor.run(call("c2", "crash")))
      const denied = yield* executor.run(call("c3", "delete_all"))
      const batch = yield* executor.runBatch([call("c4", "echo", { text: "a" }), call("c5", "echo", { text: "b" })])
      assert.strictEqual(crash._tag, "ToolDefect")
      const file = AuditLog.receiptPath(directory, "run-1")
      const uri = ok.audit?.metadata?.["receiptUri"]
      assert.strictEqual(typeof uri, "string")
      assert.strictEqual(fileURLToPath(uri as string), file)
      assert.strictEqual(denied.audit?.metadata?.["receiptUri"], uri)
      const lines = readFileSync(file, "utf8").trimEnd().split("\n").map((l) => JSON.parse(l) as AuditLog.Receipt)
      assert.deepStrictEqual(lines.map((r) => [r.callId, r.status]), [
        ["c1", "ok"],
        ["c2", "exception"],
        ["c3", "consent_denied"],
        ["c4", "ok"],
        ["c5", "ok"]
      ])
      assert.deepStrictEqual(lines.map((r) => r.emitOrder), [0, 1, 2, 3, 4])
      assert.strictEqual(lines[1]!.error, "internal error in tool crash")
      assert.isUndefined(lines[1]!.resultSha256)
      assert.strictEqual(lines[1]!.audit.metadata?.["receiptUri"], uri)
      assert.strictEqual(batch.length, 2)
    }).pipe(
      Effect.provide([services, NodeFileSystem.layer, denyDeletes]),
      Effect.ensuring(Effect.sync(() => rmSync(directory, { recursive: true, force: true })))
    )
  })

  it.effect("several sinks: every sink gets each receipt; the file URI comes from the file sink", () => {
    const directory = mkdtempSync(join(tmpdir(), "tinyagents-receipts-"))
    return Effect.gen(function*() {
      const seen: Array<string> = []
      const tools = makeTools(makeCounter())
      const sink = AuditLog.all([AuditLog.callback((r) => seen.push(r.callId)), AuditLog.jsonl(directory)])
      const executor = yield* executorOf(tools.all, [auditLog(sink)])
      const result = yield* executor.run(call("c1", "echo", { text: "hi" }))
      assert.deepStrictEqual(seen, ["c1"])
      assert.include(String(result.audit?.metadata?.["receiptUri"]), "run-1.jsonl")
    }).pipe(
      Effect.provide(Layer.mergeAll(services, NodeFileSystem.layer)),
      Effect.ensuring(Effect.sync(() => rmSync(directory, { recursive: true, force: true })))
    )
  })
})

describe("auditLog: calls refused before any middleware runs", () => {
  it.effect("unknown, not advertised, malformed, invalid and over-limit calls each leave a receipt with a reserved status", () =>
    Effect.gen(function*() {
      const receipts: Array<AuditLog.Receipt> = []
      const tools = makeTools(makeCounter())
      const executor = yield* executorOf(tools.all, [auditLog((r) => receipts.push(r)), consent()], {
        limits: { tool: { max: 2 } }
      })
      const advertised = yield* ToolRegistry.advertise(executor.registry, ["echo", "write_note"])
      yield* executor.run(call("c1", "echo", { text: "hi" }), { advertised })
      yield* executor.run(call("c2", "rm_rf", {}), { advertised })
      yield* executor.run(call("c3", "delete_all", {}), { advertised })
      yield* executor.run(call("c4", "echo", "{\"text\":"), { advertised })
      yield* executor.run(call("c5", "echo", { text: 1 }), { advertised })
      yield* executor.run(call("c6", "echo", { text: "again" }), { advertised })
      yield* executor.run(call("c7", "echo", { text: "over" }), { advertised })
      assert.deepStrictEqual(receipts.map((r) => [r.callId, r.tool, r.status, r.emitOrder, r.isError, r.refused]), [
        ["c1", "echo", "ok", 0, false, undefined],
        ["c2", "rm_rf", "tool_not_found", 1, true, true],
        ["c3", "delete_all", "scope_violation", 2, true, true],
        ["c4", "echo", "schema_violation", 3, true, true],
        ["c5", "echo", "schema_violation", 4, true, true],
        ["c6", "echo", "ok", 5, false, undefined],
        ["c7", "echo", "rate_limited", 6, true, true]
      ])
      const refused = receipts.filter((r) => r.refused === true)
      for (const r of refused) {
        assert.strictEqual(r.runId, "run-1")
        assert.strictEqual(r.threadId, "thread-1")
        assert.strictEqual(r.durationMillis, 0)
        assert.isUndefined(r.resultSha256)
        assert.deepStrictEqual(r.audit, { layers: [] })
      }
      assert.strictEqual(refused[0]!.error, "unknown tool \"rm_rf\"; available tools: echo, write_note")
      assert.strictEqual(refused[0]!.argumentsSha256, hash({}))
      assert.strictEqual(refused[2]!.error, "echo: malformed arguments: the arguments are not valid JSON")
      assert.strictEqual(refused[2]!.argumentsSha256, hash("{\"text\":"))
      assert.strictEqual(refused[3]!.error, "echo: invalid arguments at \"text\"")
      assert.strictEqual(refused[3]!.argumentsSha256, hash({ text: 1 }))
      // the executor's `tool.rejected` events still come, one per refusal
      assert.lengthOf(tagsOf(yield* eventsOf).filter((t) => t === "tool.rejected"), 5)
    }).pipe(Effect.provide([services, denyDeletes])))

  it.effect("a refused call's receipt never quotes its argument values: hashes only, paths without values", () =>
    Effect.gen(function*() {
      const receipts: Array<AuditLog.Receipt> = []
      const tools = makeTools(makeCounter())
      const executor = yield* executorOf(tools.all, [auditLog((r) => receipts.push(r), { redact: ["token"] })])
      // the model's messages quote what it sent: JSON parser excerpts and `got ...` in schema issues
      const malformed = yield* executor.run(call("c1", "echo", "{\"text\": sk-live-AAAA, \"token\": \"sk-live-BBBB\"}"))
      const invalid = yield* executor.run(call("c2", "echo", { text: 4242424242, token: "sk-live-CCCC", extra: "sk-live-DDDD" }))
      const unknown = yield* executor.run(call("c3", "no_such_tool", { token: "sk-live-EEEE" }))
      const text = `${ToolResult.textOf(malformed)}\n${ToolResult.textOf(invalid)}`
      assert.include(text, "4242424242") // the model is shown what it sent...
      const written = JSON.stringify(receipts) // ...the receipts are not
      for (const secret of ["sk-live-AAAA", "sk-live-BBBB", "sk-live-CCCC", "sk-live-DDDD", "sk-live-EEEE", "4242424242"]) {
        assert.notInclude(written, secret)
      }
      assert.deepStrictEqual(receipts.map((r) => r.status), ["schema_violation", "schema_violation", "tool_not_found"])
      assert.strictEqual(receipts[1]!.error, "echo: invalid arguments at \"extra\", \"text\"")
      assert.strictEqual(unknown.error?._tag, "ToolNotFound")
      // JSON text is hashed as its value (so `redact` applies); other text as the string
      assert.strictEqual(receipts[1]!.argumentsSha256, hash({ text: 4242424242, extra: "sk-live-DDDD" }))
      assert.strictEqual(receipts[2]!.argumentsSha256, hash({}))
      assert.strictEqual(
        receipts[0]!.argumentsSha256,
        hash("{\"text\": sk-live-AAAA, \"token\": \"sk-live-BBBB\"}")
      )
    }).pipe(Effect.provide(services)))

  it.effect("JSONL: refused calls are lines of the run's file, in emit order with the others", () => {
    const directory = mkdtempSync(join(tmpdir(), "tinyagents-receipts-"))
    return Effect.gen(function*() {
      const tools = makeTools(makeCounter())
      const executor = yield* executorOf(tools.all, [auditLog(AuditLog.jsonl(directory))])
      yield* executor.runBatch([call("c1", "echo", { text: "a" }), call("c2", "nope"), call("c3", "echo", "[]")])
      const lines = readFileSync(AuditLog.receiptPath(directory, "run-1"), "utf8").trimEnd().split("\n")
        .map((l) => JSON.parse(l) as AuditLog.Receipt)
      assert.deepStrictEqual(lines.map((r) => [r.callId, r.status]).sort(), [
        ["c1", "ok"],
        ["c2", "tool_not_found"],
        ["c3", "schema_violation"]
      ])
      assert.deepStrictEqual(lines.map((r) => r.emitOrder), [0, 1, 2])
      const uri = lines.find((r) => r.callId === "c2")!.audit.metadata?.["receiptUri"]
      assert.strictEqual(fileURLToPath(uri as string), AuditLog.receiptPath(directory, "run-1"))
      assert.strictEqual(lines.find((r) => r.callId === "c3")!.error, "echo: malformed arguments: the arguments are not a JSON object")
    }).pipe(
      Effect.provide([services, NodeFileSystem.layer]),
      Effect.ensuring(Effect.sync(() => rmSync(directory, { recursive: true, force: true })))
    )
  })

  it.effect("a receipt shows a layer that did not decide as `skipped`", () =>
    Effect.gen(function*() {
      const receipts: Array<AuditLog.Receipt> = []
      const tools = makeTools(makeCounter())
      const executor = yield* executorOf(tools.all, [
        auditLog((r) => receipts.push(r)),
        consent({ when: (inv) => inv.spec.safety.access === "mutate" })
      ])
      yield* executor.run(call("c1", "echo", { text: "hi" }))
      yield* Effect.flip(executor.run(call("c2", "crash")))
      assert.deepStrictEqual(receipts.map((r) => [r.status, layersOf(r)]), [
        ["ok", ["audit_log:ok", "consent:skipped"]],
        ["exception", ["audit_log:exception", "consent:skipped"]]
      ])
    }).pipe(Effect.provide([services, denyDeletes])))

  it.effect("a sink that cannot write a refused call's receipt stops the run with MiddlewareFailed naming the layer", () =>
    Effect.gen(function*() {
      const tools = makeTools(makeCounter())
      const broken: AuditLog.Sink = { write: () => Effect.die(new Error("disk full")) }
      const executor = yield* executorOf(tools.all, [auditLog(broken)])
      const error = yield* Effect.flip(executor.run(call("c1", "nope")))
      assert.strictEqual(error._tag, "MiddlewareFailed")
      assert.strictEqual(error._tag === "MiddlewareFailed" ? error.middleware : "", "audit_log")
      const events = yield* eventsOf
      assert.deepStrictEqual(tagsOf(events), ["tool.rejected"])
    }).pipe(Effect.provide(services)))
})
