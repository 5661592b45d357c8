/**
 * The decoder's compiled validator (src/internal/fastDecode.ts) against
 * Effect's strict decode, as a property over random tool-input schemas from the
 * grammar it covers (strings, numbers, booleans, null, literals, enums, unknown,
 * structs with required and optional keys, arrays, unions, tagged and
 * overlapping unions, `oneOf` unions, checks on any of them) mixed with shapes it leaves to the
 * strict decode (`Schema.optional`, records, tuples, numbers from strings), and
 * random arguments: valid ones, then mutated (wrong types, missing and extra keys,
 * `__proto__` and `constructor` keys, `-0`, NaN, Infinity, symbol keys, inherited
 * names, reordered keys), as JSON text and as objects, with unknown keys refused
 * or allowed.
 *
 * For every input: the decoder answers exactly what the reference decoder (no fast
 * path) answers (the value with its key order, or the same error and issues); the
 * validator's own answer, when it gives one, is the strict decode's value; and for
 * a schema without a union of non-literal members, the validator answers every
 * value the strict decode accepts (it only ever defers on unions that two members
 * accept). Then the BFCL tools: every one is compiled but the few that hold a
 * record, and each agrees on its canonical call's mutations.
 *
 * `TINYAGENTS_FASTDECODE_RUNS` sets the number of schemas (200 under `npm test`,
 * 5,000 under `npm run test:full`), `TINYAGENTS_FASTDECODE_SEED` the first seed;
 * a failure names its seed, and `TINYAGENTS_FASTDECODE_RUNS=1 TINYAGENTS_FASTDECODE_SEED=<seed>` replays it.
 */
import { assert, describe, it } from "@effect/vitest"
import { Result, Schema, type SchemaAST } from "effect"
import { ToolInput } from "../../src/index.ts"
import * as FastDecode from "../../src/internal/fastDecode.ts"
import { toModelCodec } from "../../src/contract/internal/modelSchema.ts"
import { corpusTools, observed, referenceDecoder } from "../support/decoding.ts"
import { random, type Random } from "../support/random.ts"
import { holds, json, mutate, overlapping, struct } from "../support/schemaShapes.ts"
import { count } from "../support/tier.ts"

const runs = count("TINYAGENTS_FASTDECODE_RUNS", 200, 5_000)
const firstSeed = Number(process.env["TINYAGENTS_FASTDECODE_SEED"] ?? 1)

/** The raw forms a decoder may be given: JSON text (when the value has one) and the object itself. */
const rawForms = (r: Random, value: unknown): ReadonlyArray<unknown> => {
  const forms: Array<unknown> = [value]
  let text: string | undefined
  try {
    text = JSON.stringify(value)
  } catch {
    text = undefined
  }
  if (text !== undefined) {
    forms.push(text)
    if (r.chance(0.3)) forms.push(text.replace(/:0([,}\]])/, ":-0$1"))
  }
  return forms
}

interface Tally {
  inputs: number
  fastAnswers: number
  schemas: number
  compiled: number
  /** Answers that were the parsed value itself (`reuse`). */
  reused: number
}

const checkSchema = (seed: number, tally: Tally) => {
  const r = random(seed)
  const root = struct(r, 0, [])
  const schema = r.chance(0.1) ? Schema.Struct(root.fields).check(Schema.makeFilter((o: object) => Object.keys(o).length <= 2)) : Schema.Struct(root.fields)
  const allowUnknownKeys = r.chance(0.25)
  const label = (raw: unknown) => `seed ${seed}${allowUnknownKeys ? " (unknown keys allowed)" : ""}: ${root.text}\ninput: ${String(JSON.stringify(raw))}`
  const decode = ToolInput.decoder("t", schema as unknown as Schema.Codec<unknown, unknown>, { allowUnknownKeys })
  const reference = referenceDecoder("t", schema, allowUnknownKeys)
  const codec = toModelCodec(schema)
  const options = { errors: "all", reportInput: true, onExcessProperty: allowUnknownKeys ? "ignore" : "error" } as const
  const strict = Schema.decodeUnknownResult(codec, options)
  const fast = FastDecode.compile(codec.ast, options)
  // the decoder's own: a value parsed from JSON text the decode would copy unchanged is answered itself
  const reusing = FastDecode.compile(codec.ast, options, true)
  const ambiguous = overlapping(codec.ast)
  tally.schemas++
  if (fast !== undefined) tally.compiled++
  if (!root.fallback) assert.isDefined(fast, `${label(undefined)}: not compiled`)
  const values: Array<unknown> = []
  for (let i = 0; i < 6; i++) {
    const valid = root.value(r)
    values.push(valid, mutate(r, valid), mutate(r, mutate(r, valid)))
  }
  for (const value of values) {
    for (const raw of rawForms(r, value)) {
      tally.inputs++
      assert.deepStrictEqual(observed(decode(raw)), observed(reference(raw)), label(raw))
      if (fast === undefined) continue
      const parsed = ToolInput.parse("t", raw)
      if (Result.isFailure(parsed)) continue
      const answer = fast(parsed.success, typeof raw !== "string")
      const expected = strict(parsed.success)
      const reused = reusing!(parsed.success, typeof raw !== "string")
      // the same answer; or one where the copying validator defers on a union two members accept,
      // each with a value equal to the input (answered itself, it is the input whichever Effect picks)
      if (answer !== FastDecode.invalid || reused !== FastDecode.invalid) {
        const value = answer !== FastDecode.invalid ? answer : Result.getOrThrow(expected)
        assert.deepStrictEqual(reused, value, `${label(raw)}: reuse`)
        assert.strictEqual(JSON.stringify(reused), JSON.stringify(value), `${label(raw)}: reuse, key order`)
      }
      if (reused === parsed.success && answer !== parsed.success) {
        tally.reused++
        assert.strictEqual(typeof raw, "string", `${label(raw)}: an object given reused`)
      }
      if (answer !== FastDecode.invalid) {
        tally.fastAnswers++
        assert.isTrue(Result.isSuccess(expected), `${label(raw)}: fast accepted what the strict decode refuses`)
        assert.deepStrictEqual(answer, Result.getOrThrow(expected), label(raw))
        assert.strictEqual(JSON.stringify(answer), JSON.stringify(Result.getOrThrow(expected)), `${label(raw)}: key order`)
      } else if (!ambiguous) {
        assert.isTrue(Result.isFailure(expected), `${label(raw)}: fast deferred on a value the strict decode accepts`)
      }
    }
  }
}

describe("FastDecode", () => {
  it(`agrees with the strict decode on ${runs} random schemas and their arguments`, () => {
    const tally: Tally = { inputs: 0, fastAnswers: 0, schemas: 0, compiled: 0, reused: 0 }
    for (let seed = firstSeed; seed < firstSeed + runs; seed++) checkSchema(seed, tally)
    // The grammar is mostly covered: most schemas compile, and the validator answers many inputs itself.
    assert.isAbove(tally.compiled, tally.schemas * 0.6)
    assert.isAbove(tally.fastAnswers, tally.inputs * 0.15)
    assert.isAbove(tally.reused, tally.fastAnswers * 0.05)
  }, 120_000)

  it("compiles every BFCL tool but those with a record, and agrees on their calls", () => {
    let tools = 0
    let compiled = 0
    const options = { errors: "all", reportInput: true, onExcessProperty: "error" } as const
    for (const { samples, tool } of corpusTools()) {
      tools++
      const codec = toModelCodec(tool.input as Schema.Top)
      const fast = FastDecode.compile(codec.ast, options)
      if (fast === undefined) {
        // What it does not compile: objects with free keys (records).
        assert.isTrue(holds(codec.ast, (n) => n._tag === "Objects" && n.indexSignatures.length > 0), tool.name)
        continue
      }
      compiled++
      const ambiguous = overlapping(codec.ast)
      const strict = Schema.decodeUnknownResult(codec, options)
      for (const sample of samples.slice(0, 1)) {
        const r = random(tools)
        for (const value of [sample, mutate(r, sample), mutate(r, sample), mutate(r, mutate(r, sample))]) {
          const parsed = ToolInput.parse(tool.name, value)
          if (Result.isFailure(parsed)) continue
          const answer = fast(parsed.success, true)
          const expected = strict(parsed.success)
          if (answer === FastDecode.invalid) {
            if (!ambiguous) assert.isTrue(Result.isFailure(expected), `${tool.name}: ${JSON.stringify(value)}`)
          }
          else assert.strictEqual(JSON.stringify(answer), JSON.stringify(Result.getOrThrow(expected)), tool.name)
        }
      }
    }
    assert.isAbove(tools, 1_000)
    assert.isAbove(compiled, tools * 0.99)
  }, 60_000)
})
