/**
 * Hostile arguments, fuzzed: generated payloads (deep nesting past the limit,
 * prototype keys in every spelling and place, huge strings and keys, wrong
 * types, non-JSON values, broken JSON text) against recursive, union, record,
 * unknown-typed and imported schemas, as JSON text and as objects. Nothing may
 * throw: every payload decodes or is refused with a repairable, bounded
 * `MalformedArguments` / `InvalidArguments`; nothing decoded carries a
 * prototype key; redaction of every payload and every decoded value returns.
 *
 * `TINYAGENTS_FUZZ_RUNS` sets the number of payloads (1,500 under `npm test`, 20,000 under `npm run test:full`, each tried
 * in two forms against one schema: a few seconds); `TINYAGENTS_FUZZ_SEED`
 * the seed. A failure names its payload number; the same seed replays it.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Result, Schema } from "effect"
import { Tool, ToolInput } from "../src/index.ts"
import { redactValue } from "../src/internal/redact/policy.ts"
import { random, type Random } from "./support/random.ts"
import { count } from "./support/tier.ts"

const runs = count("TINYAGENTS_FUZZ_RUNS", 1_500, 20_000)
const seed = Number(process.env["TINYAGENTS_FUZZ_SEED"] ?? 7)


// ---------------------------------------------------------------------------
// schemas
// ---------------------------------------------------------------------------

interface Tree {
  readonly label?: string
  readonly kind?: "leaf" | "node"
  readonly child?: Tree
  readonly children?: ReadonlyArray<Tree>
  readonly value?: number | string | null
}
const Tree: Schema.Codec<Tree> = Schema.Struct({
  label: Schema.optionalKey(Schema.String.check(Schema.isMaxLength(20))),
  kind: Schema.optionalKey(Schema.Literals(["leaf", "node"])),
  child: Schema.optionalKey(Schema.suspend(() => Tree)),
  children: Schema.optionalKey(Schema.Array(Schema.suspend(() => Tree))),
  value: Schema.optionalKey(Schema.NullOr(Schema.Union([Schema.Int, Schema.String])))
})

const Shape = Schema.Union([
  Schema.Struct({ kind: Schema.Literal("circle"), radius: Schema.Number.check(Schema.isGreaterThan(0)) }),
  Schema.Struct({ kind: Schema.Literal("square"), side: Schema.Number }),
  Schema.Struct({ kind: Schema.Literal("group"), members: Schema.Array(Schema.Struct({ kind: Schema.String })) })
])

const imported = Result.getOrThrow(Tool.fromJsonSchema("imported", {
  description: "An imported tool.",
  inputSchema: {
    type: "object",
    properties: {
      query: { type: "string", minLength: 1 },
      limit: { type: "integer", minimum: 1, maximum: 100 },
      filters: {
        type: "array",
        items: {
          type: "object",
          properties: { field: { type: "string" }, op: { enum: ["eq", "lt", "gt"] }, value: {} },
          required: ["field", "op"]
        }
      },
      options: { anyOf: [{ type: "null" }, { type: "object", properties: { deep: { type: "boolean" } } }] },
      extra: { type: "object" },
      node: { $ref: "#/$defs/Node" }
    },
    required: ["query"],
    $defs: {
      Node: { type: "object", properties: { name: { type: "string" }, next: { $ref: "#/$defs/Node" } } }
    }
  },
  handler: () => Effect.void
}))

const schemas: ReadonlyArray<readonly [name: string, schema: Schema.Top, allowUnknownKeys: boolean]> = [
  ["recursive", Tree, false],
  ["union", Schema.Struct({ shape: Shape, alt: Schema.optionalKey(Schema.Union([Schema.Number, Schema.Array(Shape)])) }), false],
  ["record", Schema.Record(Schema.String, Schema.Union([Schema.Number, Schema.String, Schema.Array(Schema.Boolean)])), false],
  ["unknown", Schema.Struct({ meta: Schema.optionalKey(Schema.Unknown), items: Schema.optionalKey(Schema.Array(Schema.Unknown)) }), false],
  ["json", Schema.Struct({ data: Schema.optionalKey(Schema.Json) }), true],
  ["imported", imported.input as Schema.Top, false],
  ["recursive-lenient", Tree, true]
]
const decoders = schemas.map(([name, schema, allowUnknownKeys]) => ({
  name,
  decode: ToolInput.decoder(name, schema as Schema.Codec<unknown, unknown>, { allowUnknownKeys })
}))

// ---------------------------------------------------------------------------
// payloads
// ---------------------------------------------------------------------------

const keys = [
  "label", "kind", "child", "children", "value", "shape", "radius", "side", "members", "alt", "meta", "items",
  "data", "query", "limit", "filters", "field", "op", "options", "deep", "extra", "node", "name", "next",
  "__proto__", "constructor", "prototype", "toString", "hasOwnProperty", "valueOf", "", "zz", "0", "length"
]
const strings = ["", "leaf", "node", "circle", "square", "group", "eq", "NaN", "Infinity", "__proto__", "constructor", "\u0000", "\ud800", "é€😀"]

const leaf = (r: Random, objectForm: boolean): unknown => {
  const roll = r.int(0, objectForm ? 13 : 10)
  switch (roll) {
    case 0:
      return null
    case 1:
      return r.chance(0.5)
    case 2:
      return r.int(-5, 200)
    case 3:
      return r.pick([0.5, -0, 1e308, -1e-308, 2 ** 53 + 2, Number.MAX_SAFE_INTEGER, -(2 ** 60)])
    case 4:
    case 5:
      return r.pick(strings)
    case 6:
      return r.chance(0.02) ? "x".repeat(r.int(1_000, 200_000)) : "s".repeat(r.int(0, 80))
    case 7:
      return r.pick(["leaf", "node", "circle", "square"])
    case 8:
    case 9:
    case 10:
      return r.int(0, 3)
    // object form only: values JSON cannot carry
    case 11:
      return r.pick([undefined, Number.NaN, Infinity, -Infinity])
    case 12:
      return r.pick([new Date(0), Symbol("s"), () => 1, 10n])
    default:
      return new Map([["a", 1]])
  }
}

/** A random value: mostly shallow, sometimes past the depth limit (chains of objects and arrays). */
const value = (r: Random, depth: number, objectForm: boolean, budget: { n: number }): unknown => {
  if (budget.n-- <= 0 || depth <= 0) return leaf(r, objectForm)
  const roll = r.next()
  if (roll < 0.35) return leaf(r, objectForm)
  if (roll < 0.55) {
    const length = r.chance(0.01) ? r.int(100, 3_000) : r.int(0, 4)
    return Array.from({ length }, () => value(r, depth - 1, objectForm, budget))
  }
  const out: Record<string, unknown> = {}
  const size = r.chance(0.01) ? r.int(50, 500) : r.int(0, 5)
  for (let i = 0; i < size; i++) {
    const key = r.chance(0.01) ? "k".repeat(r.int(100, 50_000)) : r.pick(keys)
    // an own "__proto__" key, as JSON.parse makes it
    Object.defineProperty(out, key, { value: value(r, depth - 1, objectForm, budget), enumerable: true, writable: true, configurable: true })
  }
  return out
}

/** A chain `depth` deep of objects and arrays around `end`, as JSON text (built as text: any depth). */
const chainText = (r: Random, depth: number, end: string): string => {
  const open: Array<string> = []
  const close: Array<string> = []
  for (let i = 0; i < depth; i++) {
    const array = r.chance(0.3)
    open.push(array ? "[" : `{"${r.pick(["child", "meta", "data", "children", "node", "next", "items"])}":`)
    close.push(array ? "]" : "}")
  }
  return `${open.join("")}${end}${close.reverse().join("")}`
}

/** A chain `depth` deep of objects and arrays, ending in `end`. */
const chain = (r: Random, depth: number, end: unknown): unknown => JSON.parse(chainText(r, depth, JSON.stringify(end) ?? "null"))

const escapeKey = (r: Random, key: string): string =>
  [...key].map((c) => r.chance(0.3) ? `\\u${c.charCodeAt(0).toString(16).padStart(4, r.chance(0.5) ? "0" : "0")}` : c).join("")

/** JSON text for a JSON value, with some keys spelled with \u escapes. */
const toText = (r: Random, root: unknown): string => {
  let text: string
  try {
    text = JSON.stringify(root) ?? "null"
  } catch {
    text = "{}" // a bigint (object form only)
  }
  if (!r.chance(0.3)) return text
  return text.replace(/"(__proto__|constructor|prototype|child|label|kind)":/g, (_, key: string) => `"${escapeKey(r, key)}":`)
}

interface Payload {
  readonly text: string | undefined
  readonly object: unknown
}

const payload = (r: Random): Payload => {
  const objectForm = r.chance(0.15)
  const depth = r.pick([2, 3, 4, 6, 10])
  let root: unknown = value(r, depth, objectForm, { n: 400 })
  if (r.chance(0.9) && (typeof root !== "object" || root === null || Array.isArray(root))) {
    root = { [r.pick(keys)]: root }
  }
  if (r.chance(0.08)) {
    // past the depth limit: built as text, parsed for the object form (JSON.parse does not recurse)
    const deep = chainText(r, r.pick([60, 64, 65, 66, 200, 600, 5_000, 20_000]), r.chance(0.5) ? "{}" : toText(r, root))
    const text = `{"${r.pick(keys)}":${deep}}`
    return { text, object: JSON.parse(text) }
  }
  if (r.chance(0.05)) {
    // a prototype payload planted somewhere
    const planted = r.chance(0.5)
      ? JSON.parse("{\"__proto__\":{\"polluted\":true}}")
      : { constructor: r.chance(0.7) ? { prototype: { polluted: true } } : r.pick([null, "x", 1, { name: "n" }]) }
    root = { meta: chain(r, r.int(0, 5), planted), items: [planted] }
  }
  if (objectForm) return { text: undefined, object: root }
  let text = toText(r, root)
  if (r.chance(0.04)) text = text.slice(0, r.int(0, text.length))
  if (r.chance(0.02)) text = r.pick(["", " ", "[]", "1", "\"x\"", "{", "nul", "{\"a\":1,}", `{"a":"${"\\"}"}`])
  // the same value as a provider SDK hands it over (own "__proto__" keys included)
  let object: unknown
  try {
    object = JSON.parse(text)
  } catch {
    object = undefined
  }
  return { text, object }
}

// ---------------------------------------------------------------------------
// checks
// ---------------------------------------------------------------------------

/** A prototype key anywhere in a decoded value (iterative). */
const prototypeKeyIn = (root: unknown): boolean => {
  const stack: Array<unknown> = [root]
  let budget = 1_000_000
  while (stack.length > 0 && budget-- > 0) {
    const node = stack.pop()
    if (typeof node !== "object" || node === null) continue
    if (Object.hasOwn(node, "__proto__")) return true
    const ctor: unknown = Object.hasOwn(node, "constructor") ? (node as { constructor: unknown }).constructor : undefined
    if (typeof ctor === "object" && ctor !== null && Object.hasOwn(ctor, "prototype")) return true
    for (const key of Object.keys(node)) stack.push((node as Record<string, unknown>)[key])
  }
  return false
}

/** Rejection text is bounded: quoted values 60 characters, issue lists about 2,000 (plus a deep path). */
const maxMessage = 8_000

describe("hostile arguments, fuzzed", () => {
  it(`${runs} generated payloads (seed ${seed}), as text and objects, against recursive, union, record, unknown and imported schemas: refused, never thrown`, () => {
    const r = random(seed)
    const stats = { decoded: 0, malformed: 0, invalid: 0, deep: 0, prototype: 0, large: 0 }
    for (let i = 0; i < runs; i++) {
      const { decode, name } = decoders[i % decoders.length]!
      const { object, text } = payload(r)
      const forms = text === undefined ? [object] : [text, object]
      for (const raw of forms) {
        const where = `payload ${i} (${name}, ${typeof raw === "string" ? "text" : "object"})`
        let result: ReturnType<typeof decode>
        try {
          result = decode(raw)
        } catch (error) {
          assert.fail(`${where} threw: ${String(error).slice(0, 300)}\n${String(text).slice(0, 300)}`)
        }
        if (Result.isSuccess(result)) {
          stats.decoded++
          assert.isFalse(prototypeKeyIn(result.success), `${where}: a prototype key was decoded`)
          try {
            redactValue(result.success, { keys: ["label", "secret"], patterns: [/s{3}/] })
          } catch (error) {
            assert.fail(`${where}: redacting the decoded value threw: ${String(error)}`)
          }
          continue
        }
        const error = result.failure
        assert.include(["MalformedArguments", "InvalidArguments"], error._tag, where)
        assert.strictEqual(error.disposition, "repair", where)
        assert.isAtMost(error.message.length, maxMessage, `${where}: ${error.message.slice(0, 300)}`)
        if (error._tag === "InvalidArguments") stats.invalid++
        else {
          stats.malformed++
          if (error.reason.includes("levels deep")) stats.deep++
          if (error.reason.includes("forbidden")) stats.prototype++
          if (error.reason.includes("bytes")) stats.large++
        }
      }
      try {
        redactValue(object, { keys: ["child", "__proto__", "constructor"], patterns: [/e/] })
      } catch (error) {
        assert.fail(`payload ${i}: redacting the raw value threw: ${String(error)}`)
      }
    }
    assert.isUndefined(({} as Record<string, unknown>)["polluted"])
    // every kind of outcome is exercised
    assert.isAbove(stats.decoded, runs / 20)
    assert.isAbove(stats.invalid, runs / 5)
    assert.isAbove(stats.deep, runs / 100)
    assert.isAbove(stats.prototype, runs / 100)
    console.log(`fuzz: ${runs} payloads, ${JSON.stringify(stats)}`)
  }, 600_000)
})
