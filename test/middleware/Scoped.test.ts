/** scoped: narrows tools and side effects per stage; nested scopes only tighten; violations name the stage. */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { Middleware, ToolResult } from "../../src/index.ts"
import { scoped, Scoped } from "../../src/middleware/index.ts"
import { call, executorOf, layersOf, makeCounter, makeTools, services } from "./fixtures.ts"

describe("scoped", () => {
  it.effect("allowed tools run under the stage; audit.scope names it", () =>
    Effect.gen(function*() {
      const executor = yield* executorOf(makeTools(makeCounter()).all, [
        scoped({ stage: "research", allowedTools: ["echo"], maxEffect: "read" })
      ])
      const result = yield* executor.run(call("c1", "echo", { text: "hi" }))
      assert.isFalse(result.isError)
      assert.deepStrictEqual(result.audit?.scope, { stage: "research", allowedTools: ["echo"], maxEffect: "read" })
      assert.deepStrictEqual(layersOf(result), ["scoped:ok"])
    }).pipe(Effect.provide(services)))

  it.effect("a tool outside the stage, or above its side-effect ceiling, is refused with scope_violation", () =>
    Effect.gen(function*() {
      const counter = makeCounter()
      const executor = yield* executorOf(makeTools(counter).all, [
        scoped({ stage: "research", allowedTools: ["echo", "write_note"], maxEffect: "read" })
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
        assert.deepStrictEqual(layersOf(result), ["scoped:scope_violation"])
      }
      assert.strictEqual(counter.count("delete_all") + counter.count("write_note"), 0)
    }).pipe(Effect.provide(services)))

  it.effect("nested scopes intersect: an inner stage cannot widen the outer one", () =>
    Effect.gen(function*() {
      const executor = yield* executorOf(makeTools(makeCounter()).all, [
        scoped({ stage: "plan", allowedTools: ["echo", "write_note"], maxEffect: "write" }),
        scoped({ stage: "research", allowedTools: ["echo", "delete_all"], maxEffect: "mutate" })
      ])
      // The inner stage lists delete_all, but the outer one does not: still refused.
      const widened = yield* executor.run(call("c1", "delete_all"))
      assert.include(ToolResult.textOf(widened), "stage \"plan\" does not allow tool delete_all")
      assert.deepStrictEqual(layersOf(widened), ["scoped:scope_violation"])
      // The outer stage allows write_note, the inner one does not: refused under the intersection.
      const narrowed = yield* executor.run(call("c3", "write_note", { key: "k", text: "t" }))
      assert.include(ToolResult.textOf(narrowed), "stage \"plan/research\" does not allow tool write_note; allowed: echo")
      assert.deepStrictEqual(layersOf(narrowed), ["scoped:scope_violation", "scoped:scope_violation"])
      const ok = yield* executor.run(call("c2", "echo", { text: "hi" }))
      assert.isFalse(ok.isError)
      assert.deepStrictEqual(ok.audit?.scope, { stage: "plan/research", allowedTools: ["echo"], maxEffect: "write" })
    }).pipe(Effect.provide(services)))

  it.effect("layers inside nested scopes see the intersected scope", () =>
    Effect.gen(function*() {
      const seen: Array<Scoped.Scope | undefined> = []
      const probe = Middleware.make({
        name: "probe",
        before: (inv) => Effect.as(Effect.map(Scoped.Current, (s) => seen.push(s)), inv)
      })
      const executor = yield* executorOf(makeTools(makeCounter()).all, [
        scoped({ stage: "plan", allowedTools: ["echo", "write_note"], maxEffect: "write" }),
        scoped({ stage: "research", allowedTools: ["echo", "delete_all"], maxEffect: "mutate" }),
        probe
      ])
      yield* executor.run(call("c1", "echo", { text: "hi" }))
      assert.deepStrictEqual(seen, [{ stages: ["plan", "research"], allowedTools: ["echo"], maxEffect: "write" }])
    }).pipe(Effect.provide(services)))

  it.effect("a layer inside one scope sees it", () =>
    Effect.gen(function*() {
      const seen: Array<Scoped.Scope | undefined> = []
      const probe = Middleware.make({
        name: "probe",
        before: (inv) => Effect.as(Effect.map(Scoped.Current, (s) => seen.push(s)), inv)
      })
      const executor = yield* executorOf(makeTools(makeCounter()).all, [scoped({ stage: "plan", maxEffect: "write" }), probe])
      yield* executor.run(call("c1", "echo", { text: "hi" }))
      assert.deepStrictEqual(seen, [{ stages: ["plan"], maxEffect: "write" }])
    }).pipe(Effect.provide(services)))

  it.effect("repair: false makes a violation fatal", () =>
    Effect.gen(function*() {
      const executor = yield* executorOf(makeTools(makeCounter()).all, [scoped({ stage: "ci", allowedTools: [], repair: false })])
      const error = yield* Effect.flip(executor.run(call("c1", "echo", { text: "hi" })))
      assert.strictEqual(error._tag, "PolicyBlocked")
      assert.strictEqual(error.disposition, "fatal")
    }).pipe(Effect.provide(services)))

  it("narrow never widens", () => {
    const outer: Scoped.Scope = { stages: ["a"], allowedTools: ["x"], maxEffect: "read" }
    assert.deepStrictEqual(Scoped.narrow(outer, { stage: "b", maxEffect: "mutate" }), {
      stages: ["a", "b"],
      allowedTools: ["x"],
      maxEffect: "read"
    })
    assert.deepStrictEqual(Scoped.narrow(undefined, { stage: "b" }), { stages: ["b"] })
  })
})
