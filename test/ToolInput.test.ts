import { assert, describe, it } from "@effect/vitest"
import { Result, Schema } from "effect"
import { ToolInput } from "../src/index.ts"

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
    assert.include(error.message, "at \"options\".\"ranges\"[1].\"start\": Expected number, got \"x\"")
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
})
