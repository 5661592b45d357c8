/**
 * The decoder's compiled validator (src/contract/internal/fastDecode.ts) against
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
import * as FastDecode from "../../src/contract/internal/fastDecode.ts"
import { toModelCodec } from "../../src/contract/internal/modelSchema.ts"
import { corpusTools, observed, referenceDecoder } from "../support/decoding.ts"
import { random, type Random } from "../support/random.ts"
import { count } from "../support/tier.ts"

const runs = count("TINYAGENTS_FASTDECODE_RUNS", 200, 5_000)
const firstSeed = Number(process.env["TINYAGENTS_FASTDECODE_SEED"] ?? 1)

/** A schema with a generator of values it accepts (mostly: checks may refuse some). */
interface Shape {
  readonly schema: Schema.Top
  readonly value: (r: Random) => unknown
  /** Holds a node the validator leaves to the strict decode. */
  readonly fallback: boolean
  readonly text: string
}

const leaf = (schema: Schema.Top, text: string, value: (r: Random) => unknown, fallback = false): Shape => ({
  schema,
  value,
  fallback,
  text
})

const strings = ["", "a", "abc", "héllo", "xxxxxxxxxx", "__proto__", "0"]
const numbers = [0, 1, -3, 1.5, 42, 1e21, -0.25, 2 ** 53]
const json = (r: Random, depth = 0): unknown => {
  switch (r.int(0, depth > 1 ? 3 : 5)) {
    case 0:
      return r.pick(strings)
    case 1:
      return r.pick(numbers)
    case 2:
      return r.chance(0.5)
    case 3:
      return null
    case 4:
      return Array.from({ length: r.int(0, 2) }, () => json(r, depth + 1))
    default:
      return Object.fromEntries(Array.from({ length: r.int(0, 2) }, (_, i) => [`k${i}`, json(r, depth + 1)]))
  }
}

const leaves: ReadonlyArray<(r: Random) => Shape> = [
  () => leaf(Schema.String, "String", (r) => r.pick(strings)),
  () => leaf(Schema.String.check(Schema.isMinLength(2)), "String.minLength(2)", (r) => r.pick(strings)),
  () => leaf(Schema.String.check(Schema.isPattern(/^[a-z]*$/)), "String.pattern", (r) => r.pick(strings)),
  () => leaf(Schema.Number, "Number", (r) => r.pick(numbers)),
  () => leaf(Schema.Int, "Int", (r) => r.pick(numbers)),
  () => leaf(Schema.Number.check(Schema.isGreaterThan(0)), "Number.gt(0)", (r) => r.pick(numbers)),
  () => leaf(Schema.Number.check(Schema.isBetween({ minimum: -1, maximum: 10 })), "Number.between", (r) => r.pick(numbers)),
  () => leaf(Schema.Boolean, "Boolean", (r) => r.chance(0.5)),
  () => leaf(Schema.Null, "Null", () => null),
  (r) => {
    const literal = r.pick(["a", "b", 0, 1, true, false] as const)
    return leaf(Schema.Literal(literal), `Literal(${JSON.stringify(literal)})`, () => literal)
  },
  () => leaf(Schema.Literals(["x", "y", 3]), "Literals", (r) => r.pick(["x", "y", 3])),
  () => leaf(Schema.Enum({ A: "a", B: "b" }), "Enum", (r) => r.pick(["a", "b"])),
  () => leaf(Schema.Unknown, "Unknown", json),
  () => leaf(Schema.Json, "Json", json)
]

/** Shapes the validator leaves to the strict decode. */
const fallbackLeaves: ReadonlyArray<(r: Random) => Shape> = [
  () => leaf(Schema.Record(Schema.String, Schema.Number), "Record", (r) => ({ k: r.pick(numbers) }), true),
  () => leaf(Schema.Tuple([Schema.String, Schema.Number]), "Tuple", (r) => [r.pick(strings), r.pick(numbers)], true),
  () => leaf(Schema.NumberFromString, "NumberFromString", (r) => String(r.pick(numbers)), true)
]

const names = ["a", "b", "name", "id", "toString", "value", "kind"]

const shape = (r: Random, depth: number): Shape => {
  const roll = r.int(0, depth >= 3 ? 0 : 9)
  if (roll <= 3) return r.pick(r.chance(0.04) ? fallbackLeaves : leaves)(r)
  switch (roll) {
    case 4: {
      const inner = shape(r, depth + 1)
      return { ...inner, schema: Schema.NullOr(inner.schema), value: (r) => r.chance(0.3) ? null : inner.value(r), text: `NullOr(${inner.text})` }
    }
    case 5: {
      const members = Array.from({ length: r.int(2, 3) }, () => shape(r, depth + 1))
      const oneOf = r.chance(0.25)
      return {
        schema: Schema.Union(members.map((m) => m.schema), oneOf ? { mode: "oneOf" } : undefined),
        value: (r) => r.pick(members).value(r),
        fallback: members.some((m) => m.fallback),
        text: `${oneOf ? "OneOf" : "Union"}(${members.map((m) => m.text).join(", ")})`
      }
    }
    case 6: {
      const inner = shape(r, depth + 1)
      const kind = r.int(0, 2)
      const schema = kind === 0
        ? Schema.Array(inner.schema)
        : kind === 1
        ? Schema.Array(inner.schema).check(Schema.isMinLength(1))
        : Schema.NonEmptyArray(inner.schema)
      return {
        ...inner,
        schema,
        value: (r) => Array.from({ length: r.int(0, 3) }, () => inner.value(r)),
        text: `${["Array", "Array.minLength(1)", "NonEmptyArray"][kind]}(${inner.text})`
      }
    }
    case 7: {
      // A tagged union of structs.
      const members = ["p", "q"].map((tag) => ({ tag, body: struct(r, depth + 1, ["kind"]) }))
      const schema = Schema.Union(members.map((m) => Schema.Struct({ kind: Schema.Literal(m.tag), ...m.body.fields })))
      return {
        schema,
        value: (r) => {
          const m = r.pick(members)
          return { kind: m.tag, ...(m.body.value(r) as object) }
        },
        fallback: members.some((m) => m.body.fallback),
        text: `Tagged(${members.map((m) => m.body.text).join(", ")})`
      }
    }
    default: {
      const s = struct(r, depth + 1, [])
      const checked = r.chance(0.2)
      return {
        ...s,
        schema: checked
          ? Schema.Struct(s.fields).check(Schema.makeFilter((o: object) => Object.keys(o).length <= 2 || "at most 2 keys"))
          : Schema.Struct(s.fields),
        text: `${s.text}${checked ? ".atMost2" : ""}`
      }
    }
  }
}

/** Struct fields: required, `optionalKey` and `optional` (which the JSON codec decodes from null too). */
const struct = (r: Random, depth: number, taken: ReadonlyArray<string>) => {
  const chosen = names.filter((n) => !taken.includes(n) && r.chance(0.35)).slice(0, 4)
  const fields: Record<string, Schema.Top> = {}
  const parts: Array<string> = []
  const makers: Array<(r: Random, out: Record<string, unknown>) => void> = []
  let fallback = false
  for (const name of chosen) {
    const inner = shape(r, depth)
    fallback ||= inner.fallback
    const kind = r.pick(["required", "required", "optionalKey", "optional"] as const)
    fields[name] = kind === "required"
      ? inner.schema
      : kind === "optionalKey"
      ? Schema.optionalKey(inner.schema)
      : Schema.optional(inner.schema)
    parts.push(`${name}${kind === "required" ? "" : kind === "optionalKey" ? "?" : "?|null"}: ${inner.text}`)
    makers.push((r, out) => {
      if (kind === "required" || r.chance(0.6)) out[name] = inner.value(r)
      else if (kind === "optional" && r.chance(0.5)) out[name] = null
    })
  }
  return {
    fields,
    fallback,
    value: (r: Random) => {
      const out: Record<string, unknown> = {}
      for (const make of makers) make(r, out)
      return out
    },
    text: `{ ${parts.join(", ")} }`
  }
}

/** A value changed at one random place: retyped, a key removed or added, a prototype key, an edge number, reordered. */
const mutate = (r: Random, value: unknown): unknown => {
  if (Array.isArray(value)) {
    if (value.length > 0 && r.chance(0.6)) {
      const i = r.int(0, value.length - 1)
      return value.map((v, j) => j === i ? mutate(r, v) : v)
    }
    return r.chance(0.5) ? [...value, json(r)] : json(r)
  }
  if (typeof value === "object" && value !== null) {
    const keys = Object.keys(value)
    const record = value as Record<string, unknown>
    const op = r.int(0, 9)
    if (keys.length > 0 && op <= 3) {
      const key = r.pick(keys)
      return { ...record, [key]: mutate(r, record[key]) }
    }
    switch (op) {
      case 4: {
        const key = keys.length > 0 ? r.pick(keys) : "a"
        const { [key]: _, ...rest } = record
        return rest
      }
      case 5:
        return { ...record, [r.pick(["zz", "extra", ...names])]: json(r) }
      case 6:
        // An own `__proto__` key, as JSON.parse makes it.
        return Object.assign(JSON.parse(`{"__proto__":${JSON.stringify(json(r))}}`) as object, record)
      case 7:
        return { constructor: r.chance(0.5) ? { prototype: 1 } : "x", ...record }
      case 8:
        return Object.fromEntries(Object.entries(record).reverse())
      default:
        return { ...record, [Symbol("s")]: 1 }
    }
  }
  switch (r.int(0, 5)) {
    case 0:
      return -0
    case 1:
      return r.pick([NaN, Infinity, -Infinity])
    case 2:
      return typeof value === "number" ? value + 0.5 : r.pick(numbers)
    case 3:
      return undefined
    default:
      return json(r)
  }
}

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

/** True when `test` holds for some node of `ast` (no suspensions in these schemas). */
const holds = (ast: SchemaAST.AST, test: (node: SchemaAST.AST) => boolean): boolean => {
  if (test(ast)) return true
  if (ast.encoding !== undefined && ast.encoding.some((link) => holds(link.to, test))) return true
  switch (ast._tag) {
    case "Objects":
      return ast.propertySignatures.some((p) => holds(p.type, test)) || ast.indexSignatures.some((i) => holds(i.type, test))
    case "Arrays":
      return ast.elements.some((e) => holds(e, test)) || ast.rest.some((e) => holds(e, test))
    case "Union":
      return ast.types.some((t) => holds(t, test))
    default:
      return false
  }
}

/** The kinds of input a node may accept ("*": any), literals by value. */
const kinds = (ast: SchemaAST.AST): ReadonlySet<string> => {
  if (ast.encoding !== undefined) return kinds(ast.encoding[ast.encoding.length - 1]!.to)
  switch (ast._tag) {
    case "String":
    case "Number":
    case "Boolean":
      return new Set([ast._tag.toLowerCase()])
    case "Null":
    case "Undefined":
      return new Set([ast._tag])
    case "Literal":
      return new Set([`${typeof ast.literal}:${String(ast.literal)}`])
    case "Objects":
      return new Set([ast.propertySignatures.length === 0 ? "*" : "object"])
    case "Arrays":
      return new Set(["array"])
    case "Union":
      return new Set(ast.types.flatMap((t) => [...kinds(t)]))
    default:
      return new Set(["*"])
  }
}

const meet = (a: ReadonlySet<string>, b: ReadonlySet<string>): boolean =>
  [...a].some((x) => x === "*" || b.has("*") || b.has(x) || [...b].some((y) => x.startsWith(`${y}:`) || y.startsWith(`${x}:`)))

/** True when some union in `ast` has two members that may accept one input: the validator may defer there. */
const overlapping = (ast: SchemaAST.AST): boolean =>
  holds(ast, (n) => n._tag === "Union" && n.types.some((a, i) => n.types.some((b, j) => j > i && meet(kinds(a), kinds(b)))))

describe("FastDecode", () => {
  it(`agrees with the strict decode on ${runs} random schemas and their arguments`, () => {
    const tally: Tally = { inputs: 0, fastAnswers: 0, schemas: 0, compiled: 0 }
    for (let seed = firstSeed; seed < firstSeed + runs; seed++) checkSchema(seed, tally)
    // The grammar is mostly covered: most schemas compile, and the validator answers many inputs itself.
    assert.isAbove(tally.compiled, tally.schemas * 0.6)
    assert.isAbove(tally.fastAnswers, tally.inputs * 0.15)
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
