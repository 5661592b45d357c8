/**
 * handoffArtifact: a handoff payload in a result becomes a typed record in the
 * audit (and so on the receipt) and reaches the sink once; malformed payloads
 * are noted (or, strict, fail the call); results without one are untouched.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Result, Schema } from "effect"
import { Tool, ToolResult } from "../../src/index.ts"
import { AuditLog, auditLog, HandoffArtifact, handoffArtifact } from "../../src/governance/middleware/index.ts"
import type { Invocation } from "../../src/runtime/Middleware.ts"
import { call, executorOf, layersOf, makeCounter, makeTools, services } from "./fixtures.ts"

/** A tool that answers `{ status, ...extra }` where `extra` comes from its input (as JSON text). */
const delegate = Tool.make("delegate", {
  description: "Finishes its part and hands the rest on.",
  input: Schema.Struct({ extra: Schema.String }),
  output: Schema.Record(Schema.String, Schema.Unknown),
  safety: { access: "read" },
  handler: ({ extra }) => Effect.succeed({ status: "done", ...(JSON.parse(extra) as Record<string, unknown>) })
})

const extra = (value: unknown) => ({ extra: JSON.stringify(value) })

describe("handoffArtifact", () => {
  it.effect("a payload under __handoff becomes a typed record in the audit and the receipt; the sink gets it once", () =>
    Effect.gen(function*() {
      const handed: Array<readonly [HandoffArtifact.Handoff, string]> = []
      const receipts: Array<AuditLog.Receipt> = []
      const executor = yield* executorOf([delegate, ...makeTools(makeCounter()).all], [
        auditLog((r) => receipts.push(r)),
        handoffArtifact({ sink: (handoff, invocation: Invocation) => handed.push([handoff, invocation.call.id]), source: "planner" })
      ])
      const payload = {
        __handoff: {
          target_persona: "reviewer",
          task: "review the patch",
          context: { pr: 42 },
          policy_override: { maxAccess: "read" },
          ignored: "dropped"
        }
      }
      const result = yield* executor.run(call("c1", "delegate", extra(payload)))
      const record: HandoffArtifact.Handoff = {
        target: "reviewer",
        task: "review the patch",
        source: "planner",
        context: { pr: 42 },
        policyOverride: { maxAccess: "read" }
      }
      assert.deepStrictEqual(result.audit?.handoff, record)
      assert.deepStrictEqual(layersOf(result), ["audit_log:ok", "handoff_artifact:ok"])
      assert.deepStrictEqual(handed, [[record, "c1"]])
      assert.deepStrictEqual(receipts[0]!.audit.handoff, record)
      // the result the model reads is unchanged
      assert.deepStrictEqual(result.value, { status: "done", ...payload })
    }).pipe(Effect.provide(services)))

  it.effect("the payload's own source wins over the option; `handoff` is the second key looked at", () =>
    Effect.gen(function*() {
      const handed: Array<HandoffArtifact.Handoff> = []
      const executor = yield* executorOf([delegate], [
        handoffArtifact({ sink: HandoffArtifact.callback((h) => handed.push(h)), source: "planner" })
      ])
      yield* executor.run(call("c1", "delegate", extra({ handoff: { to: "ops", summary: "restart", source_persona: "oncall" } })))
      assert.deepStrictEqual(handed, [{ target: "ops", task: "restart", source: "oncall" }])
    }).pipe(Effect.provide(services)))

  it.effect("no payload: nothing recorded, the sink is not called", () =>
    Effect.gen(function*() {
      const handed: Array<HandoffArtifact.Handoff> = []
      const executor = yield* executorOf([delegate], [handoffArtifact({ sink: (h) => handed.push(h) })])
      const plain = yield* executor.run(call("c1", "delegate", extra({})))
      assert.isUndefined(plain.audit?.metadata)
      assert.deepStrictEqual(layersOf(plain), ["handoff_artifact:ok"])
      assert.lengthOf(handed, 0)
    }).pipe(Effect.provide(services)))

  it.effect("a malformed payload is noted without its values and the call goes on; the sink is not called", () =>
    Effect.gen(function*() {
      const handed: Array<HandoffArtifact.Handoff> = []
      const executor = yield* executorOf([delegate], [handoffArtifact({ sink: (h) => handed.push(h) })])
      const result = yield* executor.run(call("c1", "delegate", extra({ __handoff: { target: "", task: 7, context: "sk-live-XYZ" } })))
      assert.isFalse(result.isError)
      const noted = String(result.audit?.metadata?.["handoffError"])
      assert.include(noted, "malformed handoff: at \"__handoff\".\"target\"")
      assert.include(noted, "\"__handoff\".\"task\": Expected string")
      assert.notInclude(noted, "sk-live-XYZ")
      assert.lengthOf(handed, 0)
    }).pipe(Effect.provide(services)))

  it.effect("strict: a malformed payload fails the call with a fatal InvalidOutput (receipt status exception)", () =>
    Effect.gen(function*() {
      const receipts: Array<AuditLog.Receipt> = []
      const executor = yield* executorOf([delegate], [
        auditLog((r) => receipts.push(r)),
        handoffArtifact({ strict: true })
      ])
      const error = yield* Effect.flip(executor.run(call("c1", "delegate", extra({ __handoff: "reviewer" }))))
      assert.strictEqual(error._tag, "InvalidOutput")
      assert.strictEqual(error.disposition, "fatal")
      assert.include(error.message, "at \"__handoff\": Expected a handoff object")
      assert.deepStrictEqual(receipts.map((r) => [r.status, layersOf(r)]), [
        ["exception", ["audit_log:exception", "handoff_artifact:exception"]]
      ])
    }).pipe(Effect.provide(services)))

  it.effect("`detect` finds a payload anywhere; `keys` replaces the keys looked at", () =>
    Effect.gen(function*() {
      const handed: Array<HandoffArtifact.Handoff> = []
      const executor = yield* executorOf([delegate, ...makeTools(makeCounter()).all], [
        handoffArtifact({
          sink: (h) => handed.push(h),
          keys: ["next"],
          detect: (result) =>
            ToolResult.textOf(result).includes("escalate") ? { target: "human", task: "look at this" } : undefined
        })
      ])
      yield* executor.run(call("c1", "delegate", extra({ next: { target: "writer", task: "draft" } })))
      yield* executor.run(call("c2", "delegate", extra({ __handoff: { target: "ignored", task: "ignored" } })))
      yield* executor.run(call("c3", "echo", { text: "please escalate" }))
      assert.deepStrictEqual(handed, [{ target: "writer", task: "draft" }, { target: "human", task: "look at this" }])
    }).pipe(Effect.provide(services)))

  it("normalize: aliases, the default source, and issues with paths", () => {
    const ok = HandoffArtifact.normalize({ targetPersona: "a", task: "t", policyOverride: { x: 1 } }, "me")
    assert.deepStrictEqual(Result.getOrThrow(ok), { target: "a", task: "t", source: "me", policyOverride: { x: 1 } })
    const bad = HandoffArtifact.normalize({ task: "t" })
    assert.isTrue(Result.isFailure(bad))
    assert.deepStrictEqual(Result.isFailure(bad) ? bad.failure.map((i) => i.path) : [], [["target"]])
  })
})
