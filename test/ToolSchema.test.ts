import { assert, describe, it } from "@effect/vitest"
import { Effect, Result, Schema } from "effect"
import {
  Cancellation,
  EventSink,
  RunContext,
  StoreRegistry,
  Tool,
  ToolRegistry,
  ToolSchema
} from "../src/index.ts"

// A handler that uses all four hidden services.
const saveNote = Tool.make("save_note", {
  description: "Save a note under a key. Writes to the notes store.",
  input: Schema.Struct({
    key: Schema.String.annotate({ description: "note key" }),
    text: Schema.String,
    tags: Schema.optionalKey(Schema.Array(Schema.String))
  }),
  output: Schema.Struct({ saved: Schema.Boolean }),
  services: [RunContext.RunContext, StoreRegistry.StoreRegistry, EventSink.EventSink, Cancellation.Cancellation],
  safety: { effect: "write", idempotent: true },
  handler: ({ key, text }) =>
    Effect.gen(function*() {
      const run = yield* RunContext.RunContext
      const notes = yield* StoreRegistry.store("notes")
      const cancellation = yield* Cancellation.Cancellation
      yield* EventSink.EventSink.use(() => Effect.void)
      if (!cancellation.signal.aborted) yield* Effect.orDie(notes.set(`${run.runId}/${key}`, text))
      return { saved: true }
    })
})

const hiddenWords = ["RunContext", "StoreRegistry", "EventSink", "Cancellation", "runId", "threadId", "signal", "tinyagents/"]

describe("ToolSchema", () => {
  it("exports canonical 2020-12: root inlined, object, closed, descriptions kept, optional keys optional", () => {
    const spec = Result.getOrThrow(Tool.spec(saveNote))
    assert.deepStrictEqual(spec.inputSchema, {
      type: "object",
      properties: {
        key: { type: "string", description: "note key" },
        text: { type: "string" },
        tags: { type: "array", items: { type: "string" } }
      },
      required: ["key", "text"],
      additionalProperties: false
    })
    assert.deepStrictEqual(spec.outputSchema, {
      type: "object",
      properties: { saved: { type: "boolean" } },
      required: ["saved"],
      additionalProperties: true
    })
  })

  it("a tool using all four hidden services shows no trace of them in its schemas; the spec lists them", () => {
    const spec = Result.getOrThrow(Tool.spec(saveNote))
    const visible = JSON.stringify([spec.inputSchema, spec.outputSchema, spec.description])
    for (const word of hiddenWords) assert.notInclude(visible, word)
    assert.deepStrictEqual(spec.injected, [
      "tinyagents/RunContext",
      "tinyagents/StoreRegistry",
      "tinyagents/EventSink",
      "tinyagents/Cancellation"
    ])
  })

  it("identifiers are inlined, not left as a root $ref", () => {
    const Input = Schema.Struct({ a: Schema.String }).annotate({ identifier: "Input" })
    const schema = Result.getOrThrow(ToolSchema.toJsonSchema("t", Input))
    assert.strictEqual(schema.type, "object")
    assert.isUndefined(schema.$ref)
    assert.deepStrictEqual(schema.required, ["a"])
  })

  it("a tool without parameters exports an empty closed object", () => {
    const schema = Result.getOrThrow(ToolSchema.toJsonSchema("t", Schema.Struct({})))
    assert.deepStrictEqual(schema, { type: "object", properties: {}, additionalProperties: false })
  })

  const refused: ReadonlyArray<readonly [label: string, schema: Schema.Top, path: string, reason: string]> = [
    [
      "a function field",
      Schema.Struct({ ok: Schema.String, callback: Schema.declare((u): u is () => void => typeof u === "function") }),
      "\"callback\"",
      "not plain JSON"
    ],
    ["a Redacted field", Schema.Struct({ apiKey: Schema.Redacted(Schema.String) }), "\"apiKey\"", "Redacted"],
    [
      "a Redacted decoded from a string",
      Schema.Struct({ auth: Schema.Struct({ token: Schema.RedactedFromValue(Schema.String) }) }),
      "\"auth.token\"",
      "Redacted"
    ],
    ["a bigint", Schema.Struct({ n: Schema.BigInt }), "\"n\"", "bigint"],
    ["a symbol", Schema.Struct({ s: Schema.Symbol }), "\"s\"", "symbols"],
    ["a Date instance", Schema.Struct({ when: Schema.Date }), "\"when\"", "not plain JSON"],
    ["a nested array of functions", Schema.Struct({
      hooks: Schema.Array(Schema.declare((u): u is () => void => typeof u === "function"))
    }), "\"hooks.[]\"", "not plain JSON"],
    ["an object keyword", Schema.Struct({ o: Schema.ObjectKeyword }), "\"o\"", "Schema.Object"],
    ["Unknown at the root", Schema.Unknown, "the root", "any value"],
    ["a non-object root", Schema.String, "the root", "must be an object"]
  ]

  for (const [label, schema, path, reason] of refused) {
    it(`refuses ${label}, naming the path`, () => {
      const result = ToolSchema.toJsonSchema("leaky", schema)
      assert.isTrue(Result.isFailure(result))
      if (Result.isFailure(result)) {
        assert.strictEqual(result.failure._tag, "SchemaExportError")
        assert.include(result.failure.message, `at ${path}`)
        assert.include(result.failure.message, reason)
        assert.include(result.failure.message, "tool leaky")
      }
    })
  }

  it("allows JSON-encodable transformations and optional (null-union) fields", () => {
    const schema = Result.getOrThrow(ToolSchema.toJsonSchema(
      "t",
      Schema.Struct({ n: Schema.NumberFromString, maybe: Schema.optional(Schema.String), u: Schema.Unknown })
    ))
    assert.deepStrictEqual(schema.required, ["n", "u"])
  })

  it.effect("the registry refuses a tool whose schema leaks, with the path", () =>
    Effect.gen(function*() {
      const leaky = Tool.make("leaky", {
        description: "x",
        input: Schema.Struct({ key: Schema.Redacted(Schema.String) }),
        handler: () => Effect.void
      })
      const error = yield* Effect.flip(ToolRegistry.make([leaky]))
      assert.include(error.message, "tool leaky: its schema cannot be shown to a model: at \"key\"")
    }))
})
