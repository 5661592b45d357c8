/** summary: a user-facing one-liner in audit.summary, from the call, its result and the audit so far. */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { Executor, ToolRegistry, ToolResult } from "../../src/index.ts"
import { requiredReason, summary } from "../../src/governance/middleware/index.ts"
import * as ToolTransform from "../../src/contract/ToolTransform.ts"
import { call, executorOf, layersOf, makeCounter, makeTools, services } from "./fixtures.ts"

describe("summary", () => {
  it.effect("formats the call and result into audit.summary", () =>
    Effect.gen(function*() {
      const executor = yield* executorOf(makeTools(makeCounter()).all, [
        summary((inv, result) => `${inv.spec.name} answered ${ToolResult.textOf(result).length} characters`)
      ])
      const result = yield* executor.run(call("c1", "echo", { text: "hi" }))
      assert.strictEqual(result.audit?.summary, "echo answered 13 characters")
      assert.deepStrictEqual(layersOf(result), ["summary:ok"])
    }).pipe(Effect.provide(services)))

  it.effect("sees the reason recorded by an inner requiredReason; undefined keeps it", () =>
    Effect.gen(function*() {
      const reason = requiredReason({})
      const registry = yield* ToolTransform.apply(yield* ToolRegistry.make(makeTools(makeCounter()).all), [reason.transform])
      const executor = yield* Executor.make(registry, {
        middleware: [
          summary((inv, _, audit) => inv.spec.name === "echo" ? `Echoed: ${audit.summary}` : undefined),
          reason.middleware
        ]
      })
      const echoed = yield* executor.run(call("c1", "echo", { text: "hi", reason: "testing the pipe" }))
      const kept = yield* executor.run(call("c2", "write_note", { key: "k", text: "t", reason: "saving notes" }))
      assert.strictEqual(echoed.audit?.summary, "Echoed: testing the pipe")
      assert.strictEqual(kept.audit?.summary, "saving notes")
    }).pipe(Effect.provide(services)))
})
