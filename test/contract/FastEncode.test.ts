/**
 * The output encoder (`Render.outputEncoder`: the compiled validator of
 * src/internal/fastDecode.ts run on the flipped model codec, which is
 * what Effect's encode decodes) against Effect's encode of the model codec, as a
 * property over random output schemas (the grammar of FastDecode.test.ts, whose
 * `Schema.optional` fields encode `undefined` and refuse `null`) and random
 * outputs: valid ones, then mutated (wrong types, missing and extra keys,
 * reordered keys, symbol keys), and outputs that differ from a plain value
 * where JSON does not look (a class instance, a getter, a property that is not
 * enumerable or is inherited, a null prototype, a frozen object, an array with
 * a named property).
 *
 * For every output: the encoder answers what Effect's encode answers, compared
 * strictly (prototypes, own enumerable keys in order with their symbols, each a
 * data property with the same value by `Object.is`), and the same JSON text; an
 * output it refuses, Effect's encode refuses with the same issues. The compiled
 * validator answers many outputs itself, each one Effect's encode accepts. Then
 * the BFCL input schemas, used as output schemas, with their canonical calls'
 * arguments.
 *
 * `TINYAGENTS_FASTDECODE_RUNS` / `TINYAGENTS_FASTDECODE_SEED` as in FastDecode.test.ts.
 */
import { assert, describe, it } from "@effect/vitest"
import { Result, Schema, SchemaAST } from "effect"
import { ToolInput } from "../../src/index.ts"
import * as FastDecode from "../../src/internal/fastDecode.ts"
import { toModelCodec } from "../../src/contract/internal/modelSchema.ts"
import { outputEncoder } from "../../src/runtime/internal/executor/Render.ts"
import { corpusTools } from "../support/decoding.ts"
import { random, type Random } from "../support/random.ts"
import { mutate, overlapping, struct } from "../support/schemaShapes.ts"
import { count } from "../support/tier.ts"

const runs = count("TINYAGENTS_FASTDECODE_RUNS", 200, 5_000)
const firstSeed = Number(process.env["TINYAGENTS_FASTDECODE_SEED"] ?? 1)

/** The own enumerable keys, symbols too, in order: what spread, `Object.assign` and equality see. */
const shown = (o: object) => Reflect.ownKeys(o).filter((key) => Object.getOwnPropertyDescriptor(o, key)!.enumerable)

/**
 * Equal but for identity: prototypes, own enumerable keys in order (symbols too), each a data
 * property, values alike (an array's `length` compared too).
 */
const alike = (a: unknown, b: unknown): boolean => {
  if (a === b) return true
  if (typeof a !== "object" || a === null || typeof b !== "object" || b === null) return Object.is(a, b)
  if (Object.getPrototypeOf(a) !== Object.getPrototypeOf(b)) return false
  if (Array.isArray(a) && (a as ReadonlyArray<unknown>).length !== (b as ReadonlyArray<unknown>).length) return false
  const keys = shown(a)
  const others = shown(b)
  if (keys.length !== others.length || keys.some((key, i) => key !== others[i])) return false
  return keys.every((key) => {
    const x = Object.getOwnPropertyDescriptor(a, key)!
    const y = Object.getOwnPropertyDescriptor(b, key)!
    return "value" in x && "value" in y && x.enumerable === y.enumerable && alike(x.value, y.value)
  })
}

class Holder {
  constructor(fields: object) {
    Object.assign(this, fields)
  }
}

/** `value` changed only where JSON does not look (or, for a getter, where it reads the same). */
const disguise = (r: Random, value: unknown): unknown => {
  if (Array.isArray(value)) return Object.assign([...value], { extra: 1 })
  if (typeof value !== "object" || value === null) return value
  const record = value as Record<string, unknown>
  const keys = Object.keys(record)
  switch (r.int(0, 6)) {
    case 0:
      return new Holder(record)
    case 1: {
      if (keys.length === 0) return value
      const key = r.pick(keys)
      const copy = { ...record }
      Object.defineProperty(copy, key, { get: () => record[key], enumerable: true })
      return copy
    }
    case 2: {
      if (keys.length === 0) return value
      const key = r.pick(keys)
      const copy = { ...record }
      Object.defineProperty(copy, key, { value: record[key], enumerable: false })
      return copy
    }
    case 3: {
      if (keys.length === 0) return value
      const key = r.pick(keys)
      const { [key]: inherited, ...rest } = record
      return Object.assign(Object.create({ [key]: inherited }) as object, rest)
    }
    case 4:
      return Object.assign(Object.create(null) as object, record)
    case 5:
      return Object.freeze({ ...record })
    default:
      return { ...record, [Symbol("s")]: 1 }
  }
}

interface Tally {
  outputs: number
  fastAnswers: number
  schemas: number
  compiled: number
}

/** The encoder and Effect's encode agree on `output`. */
const agree = (
  encode: (value: unknown) => unknown,
  effect: (value: unknown) => Result.Result<unknown, Schema.SchemaError>,
  output: unknown,
  label: string
) => {
  const answer = encode(output)
  const expected = effect(output)
  if (Result.isFailure(expected)) {
    assert.isTrue(typeof answer === "object" && answer !== null && answer.constructor.name === "Refused", `${label}: accepted`)
    assert.deepStrictEqual(
      ToolInput.issuesOf((answer as { readonly error: Schema.SchemaError }).error),
      ToolInput.issuesOf(expected.failure),
      label
    )
    return
  }
  assert.isTrue(alike(answer, expected.success), `${label}: not alike (${String(JSON.stringify(answer))})`)
  assert.strictEqual(JSON.stringify(answer), JSON.stringify(expected.success), `${label}: JSON`)
}

const checkSchema = (seed: number, tally: Tally) => {
  const r = random(seed)
  const root = struct(r, 0, [])
  const schema = Schema.Struct(root.fields)
  const label = (output: unknown) => `seed ${seed}: ${root.text}\noutput: ${String(JSON.stringify(output))}`
  const codec = toModelCodec(schema as Schema.Top) as Schema.Codec<unknown, unknown>
  const encode = outputEncoder(schema)
  const effect = Schema.encodeUnknownResult(codec)
  const fast = FastDecode.compile(SchemaAST.flip(codec.ast), {})
  const ambiguous = overlapping(codec.ast)
  tally.schemas++
  if (fast !== undefined) tally.compiled++
  const outputs: Array<unknown> = []
  for (let i = 0; i < 6; i++) {
    const valid = root.value(r)
    outputs.push(valid, disguise(r, valid), mutate(r, valid), disguise(r, mutate(r, valid)))
  }
  for (const output of outputs) {
    tally.outputs++
    agree(encode, effect, output, label(output))
    if (fast === undefined) continue
    const answer = fast(output, false)
    const expected = effect(output)
    if (answer === FastDecode.invalid) {
      if (!ambiguous) assert.isTrue(Result.isFailure(expected), `${label(output)}: fast deferred on an output the encode accepts`)
      continue
    }
    tally.fastAnswers++
    assert.isTrue(Result.isSuccess(expected), `${label(output)}: fast accepted what the encode refuses`)
  }
}

describe("output encoder", () => {
  it(`agrees with Effect's encode on ${runs} random schemas and their outputs`, () => {
    const tally: Tally = { outputs: 0, fastAnswers: 0, schemas: 0, compiled: 0 }
    for (let seed = firstSeed; seed < firstSeed + runs; seed++) checkSchema(seed, tally)
    // (less than the decode's share: a check on an object or an array is an encoding check once
    // flipped, which the validator leaves to Effect)
    assert.isAbove(tally.compiled, tally.schemas * 0.35)
    assert.isAbove(tally.fastAnswers, tally.outputs * 0.15)
  }, 120_000)

  it("agrees on the BFCL input schemas used as outputs and their calls' arguments", () => {
    let tools = 0
    let compiled = 0
    for (const { samples, tool } of corpusTools()) {
      tools++
      const schema = tool.input as Schema.Top
      const codec = toModelCodec(schema) as Schema.Codec<unknown, unknown>
      const encode = outputEncoder(schema)
      const effect = Schema.encodeUnknownResult(codec)
      if (FastDecode.compile(SchemaAST.flip(codec.ast), {}) !== undefined) compiled++
      for (const sample of samples.slice(0, 1)) {
        const r = random(tools)
        // the sample decoded first: the encoder is given what a handler would return
        const decoded = Schema.decodeUnknownResult(codec)(sample)
        if (Result.isFailure(decoded)) continue
        for (const output of [decoded.success, disguise(r, decoded.success), mutate(r, decoded.success)]) {
          agree(encode, effect, output, `${tool.name}: ${JSON.stringify(output)}`)
        }
      }
    }
    assert.isAbove(tools, 1_000)
    assert.isAbove(compiled, tools * 0.5)
  }, 60_000)
})
