/** redaction: arguments rewritten before the handler, results after; redacted fields recorded. */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { Tool, ToolResult } from "../../src/index.ts"
import { redaction, Redaction } from "../../src/governance/middleware/index.ts"
import { call, executorOf, layersOf, makeCounter, makeTools, services } from "./fixtures.ts"

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
})
