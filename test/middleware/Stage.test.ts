/** stage: narrows tools and access per stage; nested stages only tighten; violations name the stage. */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { Middleware, ToolResult } from "../../src/index.ts"
import { stage, Stage } from "../../src/governance/middleware/index.ts"
import { call, executorOf, layersOf, makeCounter, makeTools, services } from "./fixtures.ts"

describe("stage", () => {
  it.effect("allowed tools run under the stage; audit.scope names it", () =>
    Effect.gen(function*() {
      const executor = yield* executorOf(makeTools(makeCounter()).all, [
        stage({ name: "research", allowedTools: ["echo"], maxAccess: "read" })
      ])
      const result = yield* executor.run(call("c1", "echo", { text: "hi" }))
      assert.isFalse(result.isError)
      assert.deepStrictEqual(result.audit?.scope, { stage: "research", allowedTools: ["echo"], maxAccess: "read" })
      assert.deepStrictEqual(layersOf(result), ["stage:ok"])
    }).pipe(Effect.provide(services)))

  it.effect("a tool outside the stage, or above its side-effect ceiling, is refused with scope_violation", () =>
    Effect.gen(function*() {
      const counter = makeCounter()
      const executor = yield* executorOf(makeTools(counter).all, [
        stage({ name: "research", allowedTools: ["echo", "write_note"], maxAccess: "read" })
      ])
      const notAllowed = yield* executor.run(call("c1", "delete_all"))
      const tooStrong = yield* executor.run(call("c2", "write_note", { key: "k", text: "t" }))
      assert.strictEqual(
        ToolResult.textOf(notAllowed),
        "delete_all: refused: stage \"research\" does not allow tool delete_all; allowed: echo, write_note"
      )
      assert.strictEqual(
        ToolResult.textOf(tooStrong),
        "write_note: refused: stage \"research\" allows side effects up to read; write_note is write"
      )
      for (const result of [notAllowed, tooStrong]) {
        assert.strictEqual(result.error?._tag, "PolicyBlocked")
        assert.deepStrictEqual(layersOf(result), ["stage:scope_violation"])
      }
      assert.strictEqual(counter.count("delete_all") + counter.count("write_note"), 0)
    }).pipe(Effect.provide(services)))

  it.effect("nested scopes intersect: an inner stage cannot widen the outer one", () =>
    Effect.gen(function*() {
      const executor = yield* executorOf(makeTools(makeCounter()).all, [
        stage({ name: "plan", allowedTools: ["echo", "write_note"], maxAccess: "write" }),
        stage({ name: "research", allowedTools: ["echo", "delete_all"], maxAccess: "mutate" })
      ])
      // The inner stage lists delete_all, but the outer one does not: still refused.
      const widened = yield* executor.run(call("c1", "delete_all"))
      assert.include(ToolResult.textOf(widened), "stage \"plan\" does not allow tool delete_all")
      assert.deepStrictEqual(layersOf(widened), ["stage:scope_violation"])
      // The outer stage allows write_note, the inner one does not: refused under the intersection.
      const narrowed = yield* executor.run(call("c3", "write_note", { key: "k", text: "t" }))
      assert.include(ToolResult.textOf(narrowed), "stage \"plan/research\" does not allow tool write_note; allowed: echo")
      assert.deepStrictEqual(layersOf(narrowed), ["stage:scope_violation", "stage:scope_violation"])
      const ok = yield* executor.run(call("c2", "echo", { text: "hi" }))
      assert.isFalse(ok.isError)
      assert.deepStrictEqual(ok.audit?.scope, { stage: "plan/research", allowedTools: ["echo"], maxAccess: "write" })
    }).pipe(Effect.provide(services)))

  it.effect("layers inside nested scopes see the intersected scope", () =>
    Effect.gen(function*() {
      const seen: Array<Stage.Scope | undefined> = []
      const probe = Middleware.make({
        name: "probe",
        before: (inv) => Effect.as(Effect.map(Stage.Current, (s) => seen.push(s)), inv)
      })
      const executor = yield* executorOf(makeTools(makeCounter()).all, [
        stage({ name: "plan", allowedTools: ["echo", "write_note"], maxAccess: "write" }),
        stage({ name: "research", allowedTools: ["echo", "delete_all"], maxAccess: "mutate" }),
        probe
      ])
      yield* executor.run(call("c1", "echo", { text: "hi" }))
      assert.deepStrictEqual(seen, [{ stages: ["plan", "research"], allowedTools: ["echo"], maxAccess: "write" }])
    }).pipe(Effect.provide(services)))

  it.effect("a layer inside one scope sees it", () =>
    Effect.gen(function*() {
      const seen: Array<Stage.Scope | undefined> = []
      const probe = Middleware.make({
        name: "probe",
        before: (inv) => Effect.as(Effect.map(Stage.Current, (s) => seen.push(s)), inv)
      })
      const executor = yield* executorOf(makeTools(makeCounter()).all, [stage({ name: "plan", maxAccess: "write" }), probe])
      yield* executor.run(call("c1", "echo", { text: "hi" }))
      assert.deepStrictEqual(seen, [{ stages: ["plan"], maxAccess: "write" }])
    }).pipe(Effect.provide(services)))

  it.effect("repair: false makes a violation fatal", () =>
    Effect.gen(function*() {
      const executor = yield* executorOf(makeTools(makeCounter()).all, [stage({ name: "ci", allowedTools: [], repair: false })])
      const error = yield* Effect.flip(executor.run(call("c1", "echo", { text: "hi" })))
      assert.strictEqual(error._tag, "PolicyBlocked")
      assert.strictEqual(error.disposition, "fatal")
    }).pipe(Effect.provide(services)))

  it("narrow never widens", () => {
    const outer: Stage.Scope = { stages: ["a"], allowedTools: ["x"], maxAccess: "read" }
    assert.deepStrictEqual(Stage.narrow(outer, { name: "b", maxAccess: "mutate" }), {
      stages: ["a", "b"],
      allowedTools: ["x"],
      maxAccess: "read"
    })
    assert.deepStrictEqual(Stage.narrow(undefined, { name: "b" }), { stages: ["b"] })
  })
})
