/**
 * What a call's result is made of, on the path of plain calls (a pass-through middleware, an
 * `Effect.sync` handler) and beside it: the result's `value` is the output as its schema encodes
 * it (a copy, in the schema's key order, without keys it does not declare); a result completed in
 * place (its elapsed time) is one nobody else holds: a middleware that keeps the result `next`
 * gave it keeps it as it was, and a keyed call's stored result is answered again as it was stored.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { Executor, Middleware, Tool, ToolRegistry, ToolServices } from "../../src/index.ts"
import type { ToolResult } from "../../src/index.ts"

const test = ToolServices.layerTest({ runId: "run-1", threadId: "thread-1" })
const Output = Schema.Struct({ sum: Schema.Number, label: Schema.optionalKey(Schema.String) })

/** A tool whose handler answers `make(a)`, the object it answered last kept in `answered`. */
const toolOf = (make: (a: number) => object, keyed = false) => {
  const answered: Array<object> = []
  const tool = Tool.make("add", {
    description: "Adds.",
    input: Schema.Struct({ a: Schema.Number }),
    output: Output,
    safety: { access: "read", idempotent: true },
    handler: ({ a }) =>
      Effect.sync(() => {
        const out = make(a)
        answered.push(out)
        return out as typeof Output.Type
      }),
    ...(keyed ? { idempotency: ({ a }: { readonly a: number }) => `k${a}` } : {})
  })
  return { tool, answered }
}

const passThrough = Middleware.make({ name: "pass-through", around: (invocation, next) => next(invocation) })

describe("results", () => {
  it.effect("the result's value is the output as its schema encodes it, a copy", () =>
    Effect.gen(function*() {
      const { answered, tool } = toolOf((a) => a === 1 ? { sum: a, label: "x" } : { label: "x", sum: a, extra: true })
      const executor = yield* Executor.make(yield* ToolRegistry.make([tool]), { middleware: [passThrough] })
      const [same, changed] = yield* executor.runBatch([
        { id: "c1", name: "add", arguments: `{"a":1}` },
        { id: "c2", name: "add", arguments: `{"a":2}` }
      ])
      assert.notStrictEqual(same!.value, answered[0])
      assert.deepStrictEqual(same!.value, answered[0])
      assert.notStrictEqual(changed!.value, answered[1])
      assert.strictEqual(JSON.stringify(changed!.value), `{"sum":2,"label":"x"}`)
      assert.strictEqual(same!.content[0]!.type === "text" && same!.content[0]!.text, `{"sum":1,"label":"x"}`)
      assert.isAtLeast(same!.elapsed, 0)
    }).pipe(Effect.provide(test)))

  it.effect("a middleware that keeps the result next gave it keeps it as it was", () =>
    Effect.gen(function*() {
      const kept: Array<ToolResult.ToolResult> = []
      const keeping = Middleware.make({
        name: "keeping",
        around: (invocation, next) => Effect.tap(next(invocation), (result) => Effect.sync(() => void kept.push(result)))
      })
      const { tool } = toolOf((a) => ({ sum: a }))
      for (const middleware of [[keeping], [passThrough, keeping], [keeping, passThrough]]) {
        kept.length = 0
        const executor = yield* Executor.make(yield* ToolRegistry.make([tool]), { middleware })
        const result = yield* executor.run({ id: "c1", name: "add", arguments: { a: 1 } })
        assert.strictEqual(kept.length, 1)
        assert.notStrictEqual(kept[0], result)
        assert.strictEqual(kept[0]!.elapsed, 0)
        assert.deepStrictEqual({ ...kept[0]!, elapsed: result.elapsed }, result)
      }
    }).pipe(Effect.provide(test)))

  it.effect("a keyed call's replay answers what was stored", () =>
    Effect.gen(function*() {
      const { answered, tool } = toolOf((a) => ({ sum: a }), true)
      const executor = yield* Executor.make(yield* ToolRegistry.make([tool]), { middleware: [passThrough] })
      const first = yield* executor.run({ id: "c1", name: "add", arguments: { a: 1 } })
      const again = yield* executor.run({ id: "c2", name: "add", arguments: { a: 1 } })
      assert.strictEqual(answered.length, 1)
      assert.deepStrictEqual(again.value, first.value)
      assert.deepStrictEqual(again.content, first.content)
    }).pipe(Effect.provide(test)))
})
