/** redaction: arguments rewritten before the handler, results after; redacted fields recorded. */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { Middleware, Tool, ToolError, ToolEvent, ToolResult } from "../../src/index.ts"
import { auditLog, type AuditLog, redaction, Redaction } from "../../src/governance/middleware/index.ts"
import * as AuditTrail from "../../src/governance/middleware/AuditTrail.ts"
import { call, eventsOf, executorOf, layersOf, makeCounter, makeTools, services } from "./fixtures.ts"

const leaky = Tool.make("leaky", {
  description: "Returns a password and a text mentioning a key.",
  input: Schema.Struct({}),
  safety: { access: "read" },
  handler: () => Effect.succeed({ user: "ann", password: "hunter2", note: "key sk-123456 here" })
})

describe("redaction", () => {
  it.effect("arguments are rewritten before the handler; the fields are recorded; status redacted", () =>
    Effect.gen(function*() {
      const counter = makeCounter()
      const executor = yield* executorOf(makeTools(counter).all, [redaction(Redaction.keys({ keys: ["token"] }))])
      const result = yield* executor.run(call("c1", "echo", { text: "hi", token: "secret" }))
      assert.deepStrictEqual(counter.runs.get("echo"), [{ text: "hi", token: "[redacted]" }])
      assert.deepStrictEqual(result.audit?.metadata?.["redactedFields"], { arguments: ["token"], result: [] })
      assert.deepStrictEqual(layersOf(result), ["redaction:redacted"])
    }).pipe(Effect.provide(services)))

  it.effect("results are rewritten on the way out: value and text", () =>
    Effect.gen(function*() {
      const executor = yield* executorOf([leaky], [
        redaction(Redaction.keys({ keys: ["password"], patterns: [/sk-[0-9]+/] }))
      ])
      const result = yield* executor.run(call("c1", "leaky"))
      assert.deepStrictEqual(result.value, { user: "ann", password: "[redacted]", note: "key [redacted] here" })
      assert.notInclude(ToolResult.textOf(result), "hunter2")
      assert.notInclude(ToolResult.textOf(result), "sk-123456")
      assert.deepStrictEqual(result.audit?.metadata?.["redactedFields"], { arguments: [], result: ["password"] })
    }).pipe(Effect.provide(services)))

  it.effect("nothing to redact: status ok, empty field lists", () =>
    Effect.gen(function*() {
      const executor = yield* executorOf(makeTools(makeCounter()).all, [redaction(Redaction.keys({ keys: ["token"] }))])
      const result = yield* executor.run(call("c1", "echo", { text: "hi" }))
      assert.deepStrictEqual(layersOf(result), ["redaction:ok"])
      assert.deepStrictEqual(result.audit?.metadata?.["redactedFields"], { arguments: [], result: [] })
    }).pipe(Effect.provide(services)))

  it.effect("a custom redactor", () =>
    Effect.gen(function*() {
      const counter = makeCounter()
      const upper: Redaction.Redactor = {
        arguments: (args) => ({ value: { ...(args as object), text: "***" }, fields: ["text"] })
      }
      const executor = yield* executorOf(makeTools(counter).all, [redaction(upper)])
      yield* executor.run(call("c1", "echo", { text: "private" }))
      assert.deepStrictEqual(counter.runs.get("echo"), [{ text: "***" }])
    }).pipe(Effect.provide(services)))

  it.effect("failures from further in are redacted on the way out: events, the model's text, outer receipts (finding 5)", () =>
    Effect.gen(function*() {
      const refusing = Tool.make("refusing", {
        description: "Fails with a message that quotes a key; no policy of its own.",
        input: Schema.Struct({ mode: Schema.Literals(["repair", "undeclared", "defect"]) }),
        safety: { access: "read" },
        handler: ({ mode }): Effect.Effect<string, ToolError.ToolError> =>
          mode === "repair"
            ? Effect.fail(ToolError.repairable("key sk-123456 rejected", { password: "hunter2" }))
            : mode === "undeclared"
            ? Effect.fail(new Error("db said sk-654321")) as never
            : Effect.die(new Error("crash sk-777777"))
      })
      const receipts: Array<AuditLog.Receipt> = []
      const executor = yield* executorOf([refusing], [
        auditLog((receipt) => void receipts.push(receipt)),
        redaction(Redaction.keys({ keys: ["password"], patterns: [/sk-[0-9]+/] }))
      ])
      const repaired = yield* executor.run(call("c1", "refusing", { mode: "repair" }))
      const undeclared = yield* executor.run(call("c2", "refusing", { mode: "undeclared" }))
      const defect = yield* Effect.flip(executor.run(call("c3", "refusing", { mode: "defect" })))
      assert.strictEqual(ToolResult.textOf(repaired), "key [redacted] rejected")
      assert.deepStrictEqual((repaired.error as ToolError.ToolFailure).detail, { password: "[redacted]" })
      assert.strictEqual(receipts[0]?.error, "key [redacted] rejected")
      assert.strictEqual(defect._tag, "ToolDefect")
      const events = yield* eventsOf
      const text = JSON.stringify([
        events.map((event) => Schema.encodeUnknownSync(ToolEvent.EventJson)(event)),
        receipts,
        ToolResult.textOf(undeclared),
        Schema.encodeUnknownSync(ToolError.ToolError)(defect)
      ])
      for (const secret of ["sk-123456", "hunter2", "sk-654321", "sk-777777"]) assert.notInclude(text, secret)
    }).pipe(Effect.provide(services)))

  it.effect("a value nested 100,000 levels deep is redacted and shown, not a middleware failure", () =>
    Effect.gen(function*() {
      let deep: unknown = { password: "hunter2" }
      for (let i = 0; i < 100_000; i++) deep = [deep]
      const nested = Tool.make("nested", {
        description: "Returns a deeply nested value.",
        input: Schema.Struct({}),
        safety: { access: "read" },
        handler: () => Effect.succeed(deep)
      })
      const executor = yield* executorOf([nested], [redaction(Redaction.keys({ keys: ["password"] }))])
      const result = yield* executor.run(call("c1", "nested"))
      assert.isFalse(result.isError)
      assert.notInclude(ToolResult.textOf(result), "hunter2")
      const fields = result.audit?.metadata?.["redactedFields"] as { readonly result: ReadonlyArray<string> }
      assert.strictEqual(fields.result.length, 1)
    }).pipe(Effect.provide(services)))

  it.effect("a refusal from further in that is an error result has its error redacted too, not only its text", () =>
    Effect.gen(function*() {
      const refuser = Middleware.make({
        name: "refuser",
        before: (invocation) =>
          AuditTrail.refuse(
            invocation,
            new ToolError.PolicyBlocked({
              toolName: invocation.spec.name,
              reason: "key sk-123456 is not allowed",
              status: "policy_blocked",
              repairable: true
            })
          )
      })
      const executor = yield* executorOf([leaky], [
        redaction(Redaction.keys({ keys: ["password"], patterns: [/sk-[0-9]+/] })),
        refuser
      ])
      const result = yield* executor.run(call("c1", "leaky"))
      assert.isTrue(result.isError)
      assert.strictEqual(ToolResult.textOf(result), "leaky: refused: key [redacted] is not allowed")
      assert.strictEqual(result.error?.message, "leaky: refused: key [redacted] is not allowed")
    }).pipe(Effect.provide(services)))
})
