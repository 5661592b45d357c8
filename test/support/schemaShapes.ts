/**
 * Random tool schemas and values for the compiled validator's property tests
 * (test/contract/FastDecode.test.ts, FastEncode.test.ts): a grammar of schemas
 * with a generator of values each accepts, mutations of a value, and what a
 * schema's unions may make the validator defer on.
 */
import { Schema, type SchemaAST } from "effect"
import type { Random } from "./random.ts"

/** A schema with a generator of values it accepts (mostly: checks may refuse some). */
export interface Shape {
  readonly schema: Schema.Top
  readonly value: (r: Random) => unknown
  /** Holds a node the validator leaves to the strict decode. */
  readonly fallback: boolean
  readonly text: string
}

export const leaf = (schema: Schema.Top, text: string, value: (r: Random) => unknown, fallback = false): Shape => ({
  schema,
  value,
  fallback,
  text
})

export const strings = ["", "a", "abc", "héllo", "xxxxxxxxxx", "__proto__", "0"]
export const numbers = [0, 1, -3, 1.5, 42, 1e21, -0.25, 2 ** 53]
export const json = (r: Random, depth = 0): unknown => {
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

export const leaves: ReadonlyArray<(r: Random) => Shape> = [
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
export const fallbackLeaves: ReadonlyArray<(r: Random) => Shape> = [
  () => leaf(Schema.Record(Schema.String, Schema.Number), "Record", (r) => ({ k: r.pick(numbers) }), true),
  () => leaf(Schema.Tuple([Schema.String, Schema.Number]), "Tuple", (r) => [r.pick(strings), r.pick(numbers)], true),
  () => leaf(Schema.NumberFromString, "NumberFromString", (r) => String(r.pick(numbers)), true)
]

export const names = ["a", "b", "name", "id", "toString", "value", "kind"]

export const shape = (r: Random, depth: number): Shape => {
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
export const struct = (r: Random, depth: number, taken: ReadonlyArray<string>) => {
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
export const mutate = (r: Random, value: unknown): unknown => {
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

/** True when `test` holds for some node of `ast` (no suspensions in these schemas). */
export const holds = (ast: SchemaAST.AST, test: (node: SchemaAST.AST) => boolean): boolean => {
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
export const kinds = (ast: SchemaAST.AST): ReadonlySet<string> => {
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

export const meet = (a: ReadonlySet<string>, b: ReadonlySet<string>): boolean =>
  [...a].some((x) => x === "*" || b.has("*") || b.has(x) || [...b].some((y) => x.startsWith(`${y}:`) || y.startsWith(`${x}:`)))

/** True when some union in `ast` has two members that may accept one input: the validator may defer there. */
export const overlapping = (ast: SchemaAST.AST): boolean =>
  holds(ast, (n) => n._tag === "Union" && n.types.some((a, i) => n.types.some((b, j) => j > i && meet(kinds(a), kinds(b)))))

