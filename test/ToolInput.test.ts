import { assert, describe, it } from "@effect/vitest"
import { isDeepStrictEqual } from "node:util"
import { Effect, Result, Schema } from "effect"
import { ToolError, ToolInput } from "../src/index.ts"
import { corpusTools, observed, referenceDecoder } from "./support/decoding.ts"

const ReadFile = Schema.Struct({
  path: Schema.String,
  limit: Schema.optionalKey(Schema.Int),
  options: Schema.optionalKey(Schema.Struct({
    encoding: Schema.Literals(["utf8", "base64"]),
    ranges: Schema.optionalKey(Schema.Array(Schema.Struct({ start: Schema.Int, end: Schema.Int })))
  }))
})
const decode = ToolInput.decoder("read_file", ReadFile)

const failureOf = (raw: unknown) => {
  const result = decode(raw)
  if (Result.isSuccess(result)) throw new Error(`expected a failure for ${JSON.stringify(raw)}`)
  return result.failure
}

describe("ToolInput", () => {
  it("decodes JSON text (OpenAI) and objects (Anthropic) to the same typed input", () => {
    const fromText = Result.getOrThrow(decode("{\"path\":\"a.txt\",\"limit\":10}"))
    const fromObject = Result.getOrThrow(decode({ path: "a.txt", limit: 10 }))
    assert.deepStrictEqual(fromText, { path: "a.txt", limit: 10 })
    assert.deepStrictEqual(fromObject, fromText)
  })

  const malformed: ReadonlyArray<readonly [raw: unknown, reason: string]> = [
    ["{\"path\": ", "not valid JSON"],
    ["", "the arguments are empty"],
    ["   ", "the arguments are empty"],
    ["[1, 2]", "expected a JSON object, got an array"],
    ["\"a.txt\"", "expected a JSON object, got a string"],
    ["42", "expected a JSON object, got a number"],
    ["null", "expected a JSON object, got null"],
    [null, "expected a JSON object, got null"],
    [undefined, "expected a JSON object, got a undefined"],
    [[{ path: "a" }], "expected a JSON object, got an array"],
    ["{\"path\":\"a\",\"__proto__\":{\"polluted\":true}}", "forbidden \"__proto__\""],
    ["{\"path\":\"a\",\"nested\":{\"__proto__\":{}}}", "forbidden \"__proto__\""],
    ["{\"path\":\"a\",\"constructor\":{\"prototype\":{\"polluted\":true}}}", "forbidden"],
    [JSON.parse("{\"path\":\"a\",\"__proto__\":{\"polluted\":true}}"), "forbidden \"__proto__\""]
  ]
  for (const [raw, reason] of malformed) {
    it(`malformed: ${JSON.stringify(raw) ?? "undefined"} → MalformedArguments (never {})`, () => {
      const error = failureOf(raw)
      assert.strictEqual(error._tag, "MalformedArguments")
      assert.strictEqual(error.disposition, "repair")
      assert.include(error.message, "read_file: malformed arguments: ")
      assert.include(error.message, reason)
    })
  }

  it("the depth limit holds for long JSON text, whatever its brackets in strings", () => {
    // Long text (more than twice the limit) nested exactly 64 levels, then 65; then shallow text
    // with more brackets inside strings than the limit.
    const nested = (levels: number) => `{"pad":"${"x".repeat(200)}","v":${"[".repeat(levels - 1)}${"]".repeat(levels - 1)}}`
    const deep = ToolInput.decoder("deep", Schema.Struct({ pad: Schema.String, v: Schema.Unknown }))
    const messageOf = (raw: string) => {
      const result = deep(raw)
      return Result.isFailure(result) ? result.failure.message : "accepted"
    }
    assert.strictEqual(messageOf(nested(64)), "accepted")
    assert.include(messageOf(nested(65)), "more than 64 levels deep")
    const brackets = `{"pad":"${"[{".repeat(100)}","v":[[1]]}`
    assert.deepStrictEqual(Result.getOrThrow(deep(brackets)), { pad: "[{".repeat(100), v: [[1]] })
    assert.include(messageOf(brackets.replace("\"v\"", "\"__proto__\":{},\"v\"")), "forbidden \"__proto__\"")
  })

  it("nothing is polluted by a __proto__ payload", () => {
    failureOf("{\"path\":\"a\",\"__proto__\":{\"polluted\":true}}")
    assert.isUndefined(({} as Record<string, unknown>)["polluted"])
  })

  it("wrong types, missing required, unknown keys and nested paths: every issue, with its path", () => {
    const error = failureOf({ path: 1, limit: 2.5, extra: true })
    assert.strictEqual(error._tag, "InvalidArguments")
    assert.strictEqual(error.disposition, "repair")
    if (error._tag !== "InvalidArguments") return
    assert.deepStrictEqual(error.issues.map((i) => i.path), [["extra"], ["path"], ["limit"]])
    assert.strictEqual(
      error.message,
      "read_file: invalid arguments: at \"extra\": Unexpected key with value true; at \"path\": Expected string, got 1; at \"limit\": Expected an integer, got 2.5"
    )
  })

  it("missing required key", () => {
    const error = failureOf({ limit: 3 })
    assert.strictEqual(error.message, "read_file: invalid arguments: at \"path\": Missing key")
  })

  it("nested paths into objects and arrays", () => {
    const error = failureOf({ path: "a", options: { encoding: "latin1", ranges: [{ start: 1, end: 2 }, { start: "x" }] } })
    assert.strictEqual(error._tag, "InvalidArguments")
    if (error._tag !== "InvalidArguments") return
    assert.deepStrictEqual(error.issues.map((i) => i.path), [
      ["options", "encoding"],
      ["options", "ranges", 1, "start"],
      ["options", "ranges", 1, "end"]
    ])
    assert.include(error.message, "at \"options\".\"encoding\": Expected \"utf8\" | \"base64\", got \"latin1\"")
    assert.include(error.message, "at \"options\".\"ranges\"[1].\"end\": Missing key")
    assert.include(error.message, "at \"options\".\"ranges\"[1].\"start\": Expected an integer, got \"x\"")
  })

  it("unknown keys are accepted (and dropped) when the tool allows them", () => {
    const lenient = ToolInput.decoder("read_file", ReadFile, { allowUnknownKeys: true })
    assert.deepStrictEqual(Result.getOrThrow(lenient({ path: "a", extra: 1 })), { path: "a" })
  })

  it("a tool without parameters accepts {} and refuses keys", () => {
    const none = ToolInput.decoder("ping", Schema.Struct({}))
    assert.deepStrictEqual(Result.getOrThrow(none("{}")), {})
    const result = none({ x: 1 })
    assert.isTrue(Result.isFailure(result))
    if (Result.isFailure(result)) assert.include(result.failure.message, "at \"x\": Unexpected key")
  })

  it("decodes exactly what the export advertises: Schema.optional accepts null (as absent), optionalKey does not", () => {
    const schema = Schema.Struct({ a: Schema.optional(Schema.String), b: Schema.optionalKey(Schema.String) })
    const decode = ToolInput.decoder("t", schema)
    // `Schema.optional`'s type is `a?: string | undefined`: null decodes to undefined.
    assert.isUndefined(Result.getOrThrow(decode({ a: null })).a)
    const refused = decode({ b: null })
    assert.isTrue(Result.isFailure(refused))
    if (Result.isFailure(refused)) assert.include(refused.failure.message, "at \"b\": Expected string, got null")
  })

  describe("repair messages read like a person wrote them", () => {
    const Shape = Schema.Union([
      Schema.Struct({ kind: Schema.Literal("circle"), radius: Schema.Number }),
      Schema.Struct({ kind: Schema.Literal("square"), side: Schema.Number })
    ])
    const Everything = Schema.Struct({
      s: Schema.optionalKey(Schema.String),
      n: Schema.optionalKey(Schema.Number),
      i: Schema.optionalKey(Schema.Int),
      f: Schema.optionalKey(Schema.Finite),
      b: Schema.optionalKey(Schema.Boolean),
      literal: Schema.optionalKey(Schema.Literal("on")),
      mode: Schema.optionalKey(Schema.Literals(["fast", "slow"])),
      color: Schema.optionalKey(Schema.Enum({ Red: "red", Blue: "blue" })),
      tags: Schema.optionalKey(Schema.Array(Schema.String)),
      paths: Schema.optionalKey(Schema.NonEmptyArray(Schema.String)),
      pair: Schema.optionalKey(Schema.Array(Schema.Number).check(Schema.isBetweenLength(2, 2))),
      name: Schema.optionalKey(Schema.NonEmptyString.check(Schema.isMaxLength(8))),
      point: Schema.optionalKey(Schema.Struct({ x: Schema.Number, y: Schema.Number })),
      count: Schema.optionalKey(Schema.Number.check(Schema.isGreaterThanOrEqualTo(0))),
      percent: Schema.optionalKey(Schema.Number.check(Schema.isBetween({ minimum: 0, maximum: 100 }))),
      page: Schema.optionalKey(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 10 }))),
      id: Schema.optionalKey(Schema.Int),
      maybe: Schema.optional(Schema.Number),
      nullable: Schema.optionalKey(Schema.NullOr(Schema.String)),
      shape: Schema.optionalKey(Shape)
    })
    const decodeEverything = ToolInput.decoder("t", Everything)
    const cases: ReadonlyArray<readonly [label: string, raw: unknown, message: string]> = [
      ["string, wrong type", { s: 1 }, "at \"s\": Expected string, got 1"],
      ["number, wrong type", { n: "x" }, "at \"n\": Expected number, got \"x\""],
      ["number, boolean", { n: true }, "at \"n\": Expected number, got true"],
      ["number, the string \"NaN\"", "{\"n\":\"NaN\"}", "at \"n\": Expected number, got \"NaN\""],
      ["number, the string \"Infinity\"", { n: "Infinity" }, "at \"n\": Expected number, got \"Infinity\""],
      ["number, the string \"-Infinity\"", { n: "-Infinity" }, "at \"n\": Expected number, got \"-Infinity\""],
      ["finite, the string \"NaN\"", { f: "NaN" }, "at \"f\": Expected number, got \"NaN\""],
      ["integer, a fraction", { i: 2.5 }, "at \"i\": Expected an integer, got 2.5"],
      ["integer, wrong type", { i: "3" }, "at \"i\": Expected an integer, got \"3\""],
      [
        "integer, too large to be exact",
        "{\"id\":12345678901234567890}",
        "at \"id\": Expected an integer between -9007199254740991 and 9007199254740991, got 12345678901234567000"
      ],
      ["boolean, a string", { b: "true" }, "at \"b\": Expected boolean, got \"true\""],
      ["literal", { literal: "off" }, "at \"literal\": Expected \"on\", got \"off\""],
      ["literals", { mode: "medium" }, "at \"mode\": Expected \"fast\" | \"slow\", got \"medium\""],
      ["enum", { color: "green" }, "at \"color\": Expected \"red\" | \"blue\", got \"green\""],
      ["array, a string", { tags: "a" }, "at \"tags\": Expected array, got \"a\""],
      ["array, a wrong element", { tags: ["a", 2] }, "at \"tags\"[1]: Expected string, got 2"],
      ["non-empty array, empty", { paths: [] }, "at \"paths\": Expected at least 1 item, got []"],
      ["array of a fixed length", { pair: [1] }, "at \"pair\": Expected exactly 2 items, got [1]"],
      ["non-empty string, empty", { name: "" }, "at \"name\": Expected at least 1 character, got \"\""],
      ["string, too long", { name: "abcdefghi" }, "at \"name\": Expected at most 8 characters, got \"abcdefghi\""],
      ["nested struct, wrong type", { point: "1,2" }, "at \"point\": Expected object, got \"1,2\""],
      ["nested struct, wrong field", { point: { x: 1, y: "2" } }, "at \"point\".\"y\": Expected number, got \"2\""],
      ["nested struct, missing key", { point: { x: 1 } }, "at \"point\".\"y\": Missing key"],
      ["unknown key", { colour: "red" }, "at \"colour\": Unexpected key with value \"red\""],
      ["non-negative, out of range", { count: -1 }, "at \"count\": Expected a value greater than or equal to 0, got -1"],
      ["between, out of range", { percent: 101 }, "at \"percent\": Expected a value between 0 and 100, got 101"],
      ["integer between, out of range", { page: 0 }, "at \"page\": Expected a value between 1 and 10, got 0"],
      ["optional number, wrong type", { maybe: "x" }, "at \"maybe\": Expected number | null, got \"x\""],
      ["nullable string, wrong type", { nullable: 1 }, "at \"nullable\": Expected string | null, got 1"],
      [
        "tagged union, unknown tag",
        { shape: { kind: "triangle" } },
        "at \"shape\": Expected an object with \"kind\": \"circle\" | \"square\", got {\"kind\":\"triangle\"}"
      ],
      ["tagged union, wrong field", { shape: { kind: "circle", radius: "1" } }, "at \"shape\".\"radius\": Expected number, got \"1\""]
    ]
    for (const [label, raw, message] of cases) {
      it(`${label}: ${message}`, () => {
        const result = decodeEverything(raw)
        assert.isTrue(Result.isFailure(result), `expected a failure for ${JSON.stringify(raw)}`)
        if (Result.isFailure(result)) assert.strictEqual(result.failure.message, `t: invalid arguments: ${message}`)
      })
    }

    it("a missing key of the root", () => {
      const decode = ToolInput.decoder("t", Schema.Struct({ a: Schema.Number }))
      const result = decode({})
      assert.isTrue(Result.isFailure(result))
      if (Result.isFailure(result)) assert.strictEqual(result.failure.message, "t: invalid arguments: at \"a\": Missing key")
    })

    it("the same issue reported by several union members is listed once", () => {
      const decode = ToolInput.decoder("t", Schema.Struct({
        by: Schema.Union([Schema.Struct({ name: Schema.String }), Schema.Struct({ id: Schema.Number })])
      }))
      const result = decode({ by: { nick: "x" } })
      assert.isTrue(Result.isFailure(result))
      if (Result.isFailure(result)) {
        assert.strictEqual(
          result.failure.message,
          "t: invalid arguments: at \"by\".\"nick\": Unexpected key with value \"x\"; at \"by\".\"name\": Missing key; at \"by\".\"id\": Missing key"
        )
      }
    })

    it("numbers decode as numbers; the strings \"NaN\" and \"Infinity\" never become NaN or Infinity", () => {
      assert.deepStrictEqual(Result.getOrThrow(decodeEverything({ n: 1.5, f: -2, i: 3, maybe: null })), {
        n: 1.5,
        f: -2,
        i: 3,
        maybe: undefined
      })
      for (const value of ["NaN", "Infinity", "-Infinity"]) {
        assert.isTrue(Result.isFailure(decodeEverything({ n: value })))
        assert.isTrue(Result.isFailure(decodeEverything({ maybe: value })))
        assert.isTrue(Result.isFailure(decodeEverything({ point: { x: value, y: 0 } })))
      }
    })
  })
})

// ---------------------------------------------------------------------------
// the decoder's fast path against the full decode (a differential test)
// ---------------------------------------------------------------------------

const oddValues: ReadonlyArray<unknown> = [1.5, "text", true, null, [1, "a"], { x: 1 }]

/** Arguments derived from a valid call: each key removed, retyped, extended with unknown keys; nested too. */
const variantsOf = (args: Record<string, unknown>): ReadonlyArray<unknown> => {
  const out: Array<unknown> = [args, { ...args, zz_unknown: 1 }, {}]
  for (const [key, value] of Object.entries(args)) {
    const { [key]: _removed, ...rest } = args
    out.push(rest)
    for (const odd of oddValues) out.push({ ...args, [key]: odd })
    if (typeof value === "object" && value !== null && !Array.isArray(value)) {
      out.push({ ...args, [key]: { ...value, zz_unknown: true } })
    }
    if (Array.isArray(value)) {
      out.push({ ...args, [key]: [...value, ...value] }, { ...args, [key]: [...value, { zz: 1 }] })
      const first: unknown = value[0]
      if (typeof first === "object" && first !== null && !Array.isArray(first)) {
        out.push({ ...args, [key]: [{ ...first, zz_unknown: 1 }, ...value.slice(1)] })
      }
    }
  }
  return out
}

/** Raw forms of one argument object: JSON text and the object; `all`: also text the secure parser must look at. */
const rawFormsOf = (args: unknown, all: boolean): ReadonlyArray<unknown> => {
  const text = JSON.stringify(args)
  return all
    ? [text, args, ` ${text}\n`, text.replace(/^\{/, "{\"constructor\":1,"), text.replace(/^\{/, "{\"__proto__\":{},")]
    : [text, args]
}

describe("ToolInput fast path", () => {
  const check = (name: string, schema: Schema.Top, inputs: ReadonlyArray<unknown>, allowUnknownKeys = false) => {
    const decode = ToolInput.decoder(name, schema as Schema.Codec<unknown, unknown>, { allowUnknownKeys })
    const reference = referenceDecoder(name, schema, allowUnknownKeys)
    let checked = 0
    for (let i = 0; i < inputs.length; i++) {
      for (const raw of rawFormsOf(inputs[i], i === 0)) {
        const got = observed(decode(raw))
        const expected = observed(reference(raw))
        // The message (and chai's walk) only when they differ: this loop makes ~100,000 comparisons.
        if (!isDeepStrictEqual(got, expected)) assert.deepStrictEqual(got, expected, `${name}: ${JSON.stringify(raw)}`)
        checked++
      }
    }
    return checked
  }

  it("agrees with the full decode on every BFCL tool: valid calls and their mutations", () => {
    let checked = 0
    let tools = 0
    // Each refused input builds two errors; their stack traces are never read here and were a quarter of the time.
    const stackTraceLimit = Error.stackTraceLimit
    Error.stackTraceLimit = 0
    try {
      for (const { samples, tool } of corpusTools()) {
        tools++
        const inputs = samples.slice(0, 1).flatMap(variantsOf)
        checked += check(tool.name, tool.input as Schema.Top, inputs)
        checked += check(tool.name, tool.input as Schema.Top, inputs.slice(0, 8), true)
      }
    } finally {
      Error.stackTraceLimit = stackTraceLimit
    }
    assert.isAbove(tools, 1_000)
    assert.isAbove(checked, 20_000)
  }, 120_000)

  it("agrees on schemas written with Effect: unions, tagged unions, arrays, records, optional, enums, checks", () => {
    const Mode = { Fast: "fast", Slow: "slow" } as const
    const Item = Schema.Struct({ id: Schema.Int, tags: Schema.optionalKey(Schema.Array(Schema.String)) })
    const schemas: ReadonlyArray<readonly [Schema.Top, ReadonlyArray<Record<string, unknown>>]> = [
      [ReadFile, [{ path: "a", limit: 3, options: { encoding: "utf8", ranges: [{ start: 1, end: 2 }] } }]],
      [
        Schema.Struct({
          shape: Schema.Union([
            Schema.Struct({ kind: Schema.Literal("circle"), radius: Schema.Number }),
            Schema.Struct({ kind: Schema.Literal("square"), side: Schema.Number.check(Schema.isGreaterThan(0)) })
          ])
        }),
        [{ shape: { kind: "circle", radius: 1 } }, { shape: { kind: "square", side: 2 } }]
      ],
      [
        // Members that overlap: the strict decode may pick a later member than a lenient one.
        Schema.Struct({ v: Schema.Union([Schema.Struct({ a: Schema.Number }), Schema.Struct({ a: Schema.Number, b: Schema.String })]) }),
        [{ v: { a: 1 } }, { v: { a: 1, b: "x" } }]
      ],
      [
        Schema.Struct({
          items: Schema.NonEmptyArray(Item),
          mode: Schema.Enum(Mode),
          pair: Schema.Tuple([Schema.String, Schema.Number]),
          meta: Schema.Record(Schema.String, Schema.Number),
          any: Schema.Unknown,
          name: Schema.String.check(Schema.isMinLength(2), Schema.isMaxLength(5))
        }),
        [{ items: [{ id: 1, tags: ["a"] }, { id: 2 }], mode: "fast", pair: ["a", 1], meta: { x: 1 }, any: { deep: [1] }, name: "abc" }]
      ],
      [
        Schema.Struct({ a: Schema.optional(Schema.String), n: Schema.NullOr(Schema.Number), big: Schema.Int }),
        [{ a: "x", n: null, big: 1 }, { a: null, n: 2, big: 2 ** 60 }]
      ],
      [Schema.Struct({}), [{}]]
    ]
    let checked = 0
    schemas.forEach(([schema, samples], i) => {
      const inputs = samples.flatMap(variantsOf)
      checked += check(`tool_${i}`, schema, inputs) + check(`tool_${i}`, schema, inputs, true)
    })
    assert.isAbove(checked, 500)
  })

  it("a valid object keeps its declared key order and drops nothing it should report", () => {
    const decode = ToolInput.decoder("read_file", ReadFile)
    assert.strictEqual(JSON.stringify(Result.getOrThrow(decode("{\"limit\":1,\"path\":\"a\"}"))), "{\"path\":\"a\",\"limit\":1}")
    const symbol = Symbol("s")
    const result = decode({ path: "a", [symbol]: 1 })
    assert.deepStrictEqual(observed(result), observed(referenceDecoder("read_file", ReadFile, false)({ path: "a", [symbol]: 1 })))
  })
})
