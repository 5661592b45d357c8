/** dryRun: matching tools never run; they get a synthetic result tagged dry_run. */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { ToolResult } from "../../src/index.ts"
import { dryRun } from "../../src/governance/middleware/index.ts"
import { call, executorOf, layersOf, makeCounter, makeTools, services } from "./fixtures.ts"

describe("dryRun", () => {
  it.effect("short-circuit: the handler is never called; a synthetic ok result tagged dry_run", () =>
    Effect.gen(function*() {
      const counter = makeCounter()
      const executor = yield* executorOf(makeTools(counter).all, [dryRun()])
      const result = yield* executor.run(call("c1", "delete_all"))
      assert.isFalse(result.isError)
      assert.strictEqual(result.toolCallId, "c1")
      assert.strictEqual(ToolResult.textOf(result), "[dry run] delete_all was not executed")
      assert.deepStrictEqual(layersOf(result), ["dry_run:dry_run"])
      assert.strictEqual(result.audit?.metadata?.["dryRun"], true)
      assert.strictEqual(counter.count("delete_all"), 0)
    }).pipe(Effect.provide(services)))

  it.effect("only / except choose the tools; the others run for real", () =>
    Effect.gen(function*() {
      const counter = makeCounter()
      const tools = makeTools(counter).all
      const only = yield* executorOf(tools, [dryRun({ only: ["delete_all"] })])
      const except = yield* executorOf(tools, [dryRun({ except: ["echo"] })])
      const real = yield* only.run(call("c1", "echo", { text: "hi" }))
      yield* only.run(call("c2", "delete_all"))
      const realToo = yield* except.run(call("c3", "echo", { text: "hi" }))
      const dry = yield* except.run(call("c4", "write_note", { key: "k", text: "t" }))
      assert.deepStrictEqual(layersOf(real), ["dry_run:skipped"])
      assert.deepStrictEqual(layersOf(realToo), ["dry_run:skipped"])
      assert.deepStrictEqual(layersOf(dry), ["dry_run:dry_run"])
      assert.deepStrictEqual([counter.count("echo"), counter.count("delete_all"), counter.count("write_note")], [2, 0, 0])
    }).pipe(Effect.provide(services)))
})
