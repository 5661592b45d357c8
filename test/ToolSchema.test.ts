import { assert, describe, it } from "@effect/vitest"
import { Effect, Result, Schema } from "effect"
import * as ToolInput from "../src/contract/ToolInput.ts"
import { validate2020 } from "./providers/support/schemaChecks.ts"
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
  safety: { access: "write", idempotent: true },
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

  describe("common constructors export as a person would write them", () => {
    const Common = Schema.Struct({
      number: Schema.Number,
      described: Schema.Number.annotate({ description: "a count" }),
      int: Schema.Int,
      finite: Schema.Finite,
      nonNegative: Schema.Number.check(Schema.isGreaterThanOrEqualTo(0)),
      positive: Schema.Number.check(Schema.isGreaterThan(0)),
      between: Schema.Number.check(Schema.isBetween({ minimum: 1, maximum: 10 })),
      intBetween: Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 10 })),
      natural: Schema.Natural,
      literal: Schema.Literal("on"),
      literals: Schema.Literals(["fast", "slow"]),
      numbers: Schema.Literals([1, 2]),
      color: Schema.Enum({ Red: "red", Blue: "blue" }),
      text: Schema.NonEmptyString,
      flag: Schema.Boolean,
      nullable: Schema.NullOr(Schema.Number),
      list: Schema.Array(Schema.Number),
      paths: Schema.NonEmptyArray(Schema.String),
      key: Schema.optionalKey(Schema.Int),
      maybe: Schema.optional(Schema.Number)
    })

    it("numbers are {type: number}, integers {type: integer} (no safe-integer bounds), user bounds and descriptions kept", () => {
      const schema = Result.getOrThrow(ToolSchema.toJsonSchema("t", Common))
      assert.deepStrictEqual(schema.properties, {
        number: { type: "number" },
        described: { type: "number", description: "a count" },
        int: { type: "integer" },
        finite: { type: "number" },
        nonNegative: { type: "number", minimum: 0 },
        positive: { type: "number", exclusiveMinimum: 0 },
        between: { type: "number", minimum: 1, maximum: 10 },
        intBetween: { type: "integer", minimum: 1, maximum: 10 },
        natural: { type: "integer", minimum: 0 },
        literal: { type: "string", enum: ["on"] },
        literals: { type: "string", enum: ["fast", "slow"] },
        numbers: { type: "number", enum: [1, 2] },
        color: { type: "string", enum: ["red", "blue"] },
        text: { type: "string", minLength: 1 },
        flag: { type: "boolean" },
        nullable: { anyOf: [{ type: "number" }, { type: "null" }] },
        list: { type: "array", items: { type: "number" } },
        paths: { type: "array", items: { type: "string" }, minItems: 1 },
        key: { type: "integer" },
        maybe: { anyOf: [{ type: "number" }, { type: "null" }] }
      })
      assert.deepStrictEqual(schema.required, Object.keys(Common.fields).filter((k) => k !== "key" && k !== "maybe"))
      const text = JSON.stringify(schema)
      for (const noise of ["NaN", "Infinity", "9007199254740991", "title", "prefixItems"]) assert.notInclude(text, noise)
    })

    it("numbers inside unions, records, tuples and recursive schemas are clean too", () => {
      interface Tree {
        readonly value: number
        readonly children: ReadonlyArray<Tree>
      }
      const Tree = Schema.Struct({
        value: Schema.Number,
        children: Schema.Array(Schema.suspend((): Schema.Codec<Tree> => Tree))
      })
      const schema = Result.getOrThrow(ToolSchema.toJsonSchema(
        "t",
        Schema.Struct({
          either: Schema.Union([Schema.String, Schema.Number]),
          scores: Schema.Record(Schema.String, Schema.Number),
          pair: Schema.Tuple([Schema.String, Schema.Int]),
          tree: Tree
        })
      ))
      const text = JSON.stringify(schema)
      for (const noise of ["NaN", "Infinity", "9007199254740991"]) assert.notInclude(text, noise)
      const properties = schema.properties as Record<string, unknown>
      assert.deepStrictEqual(properties["either"], { anyOf: [{ type: "string" }, { type: "number" }] })
      assert.deepStrictEqual(properties["scores"], { type: "object", additionalProperties: { type: "number" } })
    })

    it("decoding accepts exactly what the export advertises (checked with Ajv)", () => {
      const schema = Result.getOrThrow(ToolSchema.toJsonSchema("t", Common))
      const decode = ToolInput.decoder("t", Common)
      const valid = {
        number: 1.5,
        described: 0,
        int: -3,
        finite: 2,
        nonNegative: 0,
        positive: 0.1,
        between: 10,
        intBetween: 1,
        natural: 0,
        literal: "on",
        literals: "slow",
        numbers: 2,
        color: "blue",
        text: "x",
        flag: false,
        nullable: null,
        list: [1, 2.5],
        paths: ["a"]
      }
      const variants: ReadonlyArray<Record<string, unknown>> = [
        {},
        { key: 3 },
        { maybe: null },
        { maybe: 4 },
        { nullable: 3 },
        ...["NaN", "Infinity", "-Infinity", "1"].flatMap((s) => [{ number: s }, { finite: s }, { list: [s] }, { maybe: s }]),
        { int: 2.5 },
        { int: "3" },
        { key: 1.5 },
        { key: null },
        { nonNegative: -1 },
        { positive: 0 },
        { between: 11 },
        { intBetween: 0 },
        { natural: -1 },
        { literal: "off" },
        { numbers: 3 },
        { color: "Red" },
        { text: "" },
        { flag: "true" },
        { list: "1" },
        { paths: [] },
        { paths: ["a", 1] },
        { extra: 1 }
      ]
      for (const variant of variants) {
        const value = { ...valid, ...variant }
        const advertised = validate2020(schema, value).length === 0
        const accepted = Result.isSuccess(decode(value))
        assert.strictEqual(accepted, advertised, JSON.stringify(variant))
      }
    })

    it("the one intended difference: integers beyond 2^53 are advertised as integers but refused, with a clear message", () => {
      const schema = Result.getOrThrow(ToolSchema.toJsonSchema("t", Schema.Struct({ id: Schema.Int })))
      assert.deepStrictEqual(validate2020(schema, { id: 2 ** 60 }), [])
      const result = ToolInput.decoder("t", Schema.Struct({ id: Schema.Int }))({ id: 2 ** 60 })
      assert.isTrue(Result.isFailure(result))
      if (Result.isFailure(result)) assert.include(result.failure.message, "Expected an integer between -9007199254740991 and 9007199254740991")
    })
  })
})
