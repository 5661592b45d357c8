/** ToolTransform: add a parameter (additive, idempotent), drop tools, rewrite descriptions; the registry is rebuilt. */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Result, Schema } from "effect"
import { Tool, ToolRegistry } from "../src/index.ts"
import * as ToolTransform from "../src/contract/ToolTransform.ts"

const read = Tool.make("read_note", {
  description: "Read a note.",
  input: Schema.Struct({ key: Schema.String }).annotate({ description: "which note" }),
  safety: { access: "read", tags: ["notes"] },
  handler: () => Effect.succeed("text")
})
const remove = Tool.make("remove_note", {
  description: "Remove a note.",
  input: Schema.Struct({ key: Schema.String }),
  safety: { access: "mutate" },
  handler: () => Effect.succeed("gone")
})

describe("ToolTransform", () => {
  it.effect("addParameter is additive and idempotent; the decoder follows the schema", () =>
    Effect.gen(function*() {
      const registry = yield* ToolRegistry.make([read, remove])
      const add = ToolTransform.addParameter("dry_run", { schema: Schema.Boolean, required: false })
      const once = yield* ToolTransform.apply(registry, [add])
      const twice = yield* ToolTransform.apply(once, [add])
      assert.deepStrictEqual(once.specs.map((s) => s.inputSchema), twice.specs.map((s) => s.inputSchema))
      const spec = once.specs[0]!
      assert.deepStrictEqual(Object.keys(spec.inputSchema.properties as object), ["key", "dry_run"])
      assert.deepStrictEqual(spec.inputSchema.required, ["key"])
      assert.strictEqual(spec.inputSchema.description, "which note")
      assert.isTrue(Result.isSuccess(once.get("read_note")!.decode({ key: "a", dry_run: true })))
      assert.isTrue(Result.isFailure(registry.get("read_note")!.decode({ key: "a", dry_run: true })))
      assert.isTrue(ToolTransform.addedParameters(once.get("read_note")!.tool).has("dry_run"))
    }))

  it.effect("an existing parameter is left untouched", () =>
    Effect.gen(function*() {
      const registry = yield* ToolRegistry.make([read])
      const out = yield* ToolTransform.apply(registry, [ToolTransform.addParameter("key", { schema: Schema.Number })])
      assert.strictEqual(out.get("read_note")!.tool, read)
      assert.isFalse(ToolTransform.addedParameters(read).has("key"))
    }))

  it.effect("drop and describe", () =>
    Effect.gen(function*() {
      const registry = yield* ToolRegistry.make([read, remove])
      const out = yield* ToolTransform.apply(registry, [
        ToolTransform.drop((spec) => spec.safety.access === "mutate"),
        ToolTransform.describe((spec) => `${spec.description} Always say why.`)
      ])
      assert.deepStrictEqual<ReadonlyArray<string>>(out.names, ["read_note"])
      assert.strictEqual(out.specs[0]!.description, "Read a note. Always say why.")
      const byName = yield* ToolTransform.apply(registry, [ToolTransform.drop(["read_note"])])
      assert.deepStrictEqual<ReadonlyArray<string>>(byName.names, ["remove_note"])
    }))

  it("a tool whose input schema has its own encoding cannot take a parameter", () => {
    const renamed = Tool.make("renamed", {
      description: "Its input is encoded with other keys.",
      input: Schema.Struct({ n: Schema.String }).pipe(Schema.encodeKeys({ n: "N" })),
      handler: () => Effect.succeed(null)
    })
    const out = ToolTransform.applyTools([renamed], [ToolTransform.addParameter("x", { schema: Schema.String })])
    assert.isTrue(Result.isFailure(out))
    if (Result.isFailure(out)) {
      assert.strictEqual(out.failure._tag, "TransformError")
      assert.include(out.failure.message, "not a plain object schema")
    }
  })
})
