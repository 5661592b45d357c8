/**
 * A validator compiled once per tool from the input codec's AST: for the shapes
 * tool inputs are made of, it decides whether a value is valid under the strict
 * decode (`errors: "all"`, unknown keys refused or dropped) and builds the value
 * that decode returns (same keys in the same order, same values), with no
 * allocation beyond that value. It never builds issues: when it answers
 * {@link invalid}, or when a check throws, `ToolInput` runs Effect's strict
 * decode, which reports exactly what it always did. The output encoder
 * (`Render.outputEncoder` in the executor) runs it on the flipped model codec:
 * Effect's encode is the decode of the flipped AST, so the same validator answers
 * the encode's value, under encode's options.
 *
 * Covered (`compile` answers a validator): `String`, `Number`, `Boolean`, `Null`,
 * `Literal` (and so `Literals` and enums, which the model codec makes unions of
 * literals), `Unknown`/`Any` and `Schema.Json` (the value as it is, once Effect's
 * own JSON check accepts it), objects with string-named required, `optionalKey`
 * and `optional` fields (the JSON codec decodes `optional`'s `null` to `undefined`
 * by its own transform) and no index signature (an empty struct accepts any value
 * but null, as Effect's does), arrays (`Array(X)`, `NonEmptyArray(X)`; no tuple
 * elements), unions, and the checks (refinements) of any of them, each run by its
 * own `run` as Effect's parser runs it. Anything else anywhere in the schema (any
 * other transformation, a default, a declaration other than `Schema.Json` such as
 * a class, a record, a tuple, a template literal, a suspension, symbols, a field
 * named `__proto__`, encoding checks) makes `compile` answer `undefined`: the
 * schema keeps the existing decode.
 *
 * How each node mirrors Effect 4's parser (SchemaAST's `getParser`s):
 * - a field is present when `name in input` (own or inherited), as Effect reads it;
 * - primitives and literals answer the input itself (`-0` stays `-0`); numbers
 *   are refused only by their checks (the model codec adds `isFinite`);
 * - unknown keys: with `onExcessProperty: "error"` any own enumerable key not
 *   declared (or any own symbol key, on objects not parsed from JSON text) is
 *   invalid; with "ignore" they are dropped;
 * - a union answers a member's value only when exactly one member accepts the
 *   input (or several do and the value is the input itself, for a non-`oneOf`
 *   union). When two members accept different values (`Schema.optional(NullOr(X))`
 *   given `null`), which one Effect tries first decides: the whole value goes to
 *   the strict decode.
 */
import { Exit, type SchemaAST } from "effect"
import { SchemaCompiler } from "effect/schema"

/** What a compiled validator answers for a value the strict decode would refuse (or might). */
export const invalid: unique symbol = Symbol("tinyagents/ToolInput/invalid")

/** A compiled validator: the decoded value, or {@link invalid}. `symbols`: also refuse own symbol keys. */
export type FastDecode = (input: unknown, symbols: boolean) => unknown

type Node = FastDecode

/**
 * Whether decoders built from now on get a validator: off only in the decode benchmark
 * (bench/decode.ts), to measure the decoder without it in the same run.
 */
export const compiling = { enabled: true }

/** The largest schema (in AST nodes) compiled; larger ones keep the existing decode. */
const maxNodes = 10_000

class Unsupported extends Error {}

const unsupported = (): never => {
  throw new Unsupported()
}

/**
 * Compiles `ast` (a model codec's AST) for the strict decode under `options`
 * (the options object the strict decode is given: checks receive it), or
 * `undefined` when some node is outside the covered shapes.
 *
 * `reuse` (the argument decoder's): for a value parsed from JSON text (`symbols` false), which
 * nobody else holds, an object answers the input itself where the decode's copy would be equal to
 * it in everything but identity: its own enumerable keys exactly the declared keys it holds, in the
 * schema's order (no declared key held otherwise, such as one inherited from a prototype that was
 * added to), each field answering its own value itself. Anywhere else (and for objects given as
 * objects) the copy is made, as without `reuse`; arrays are always copied.
 */
export const compile = (ast: SchemaAST.AST, options: SchemaAST.ParseOptions, reuse = false): FastDecode | undefined => {
  if (!compiling.enabled) return undefined
  const refuseUnknown = options.onExcessProperty === "error"
  const compiled = new Map<SchemaAST.AST, Node>()
  let nodes = 0

  const node = (ast: SchemaAST.AST): Node => {
    const known = compiled.get(ast)
    if (known !== undefined) return known
    if (++nodes > maxNodes) unsupported()
    if (ast.context?.constructorDefault !== undefined) unsupported()
    if ("encodingChecks" in ast && ast.encodingChecks !== undefined) unsupported()
    const base = baseOf(ast)
    const checks = ast.checks
    const local: Node = checks === undefined ? base : (input, symbols) => {
      const value = base(input, symbols)
      return value === invalid || !passes(checks, value, ast, options) ? invalid : value
    }
    const out = ast.encoding === undefined ? local : encoded(ast, ast.encoding, local)
    compiled.set(ast, out)
    return out
  }

  /**
   * A node decoded from other forms, each link decoded from the last back, as Effect's
   * interpreter runs them. Two kinds of link only: one that passes the value through (the
   * JSON codec's `Unknown`, checked as a JSON value first), and the JSON codec's
   * `Schema.optional`, an `Undefined` decoded from `null` by its own transform.
   */
  const encoded = (ast: SchemaAST.AST, links: SchemaAST.Encoding, local: Node): Node => {
    const steps: Array<Node> = []
    for (let i = links.length - 1; i >= 0; i--) {
      const link = links[i]!
      const transformation = link.transformation
      if (transformation._tag !== "Transformation") return unsupported()
      const getter = transformation.decode
      steps.push(node(link.to))
      if (getter._tag === "Passthrough") continue
      const target = i === 0 ? ast : links[i - 1]!.to
      // (the mirror, `Undefined` from `Null`, is `Schema.optional` flipped: the output encoder's)
      const nullish = (link.to._tag === "Null" && target._tag === "Undefined") ||
        (link.to._tag === "Undefined" && target._tag === "Null")
      if (getter._tag !== "Transform" || !nullish) return unsupported()
      const transform = getter.transform
      steps.push((input) => transform(input))
    }
    steps.push(local)
    return (input, symbols) => {
      let value = input
      for (let i = 0; i < steps.length; i++) {
        value = steps[i]!(value, symbols)
        if (value === invalid) return invalid
      }
      return value
    }
  }

  const baseOf = (ast: SchemaAST.AST): Node => {
    switch (ast._tag) {
      case "String":
        return (input) => typeof input === "string" ? input : invalid
      case "Number":
        return (input) => typeof input === "number" ? input : invalid
      case "Boolean":
        return (input) => typeof input === "boolean" ? input : invalid
      case "Null":
        return (input) => input === null ? input : invalid
      case "Undefined":
        return (input) => input === undefined ? input : invalid
      case "Literal": {
        const literal = ast.literal
        if (typeof literal === "bigint") return unsupported()
        return (input) => input === literal ? input : invalid
      }
      case "Unknown":
      case "Any":
        return (input) => input
      case "Arrays":
        return arrays(ast)
      case "Objects":
        return objects(ast)
      case "Union":
        return union(ast)
      case "Declaration":
        return json(ast)
      default:
        return unsupported()
    }
  }

  const arrays = (ast: SchemaAST.Arrays): Node => {
    if (ast.elements.length > 0 || ast.rest.length !== 1) return unsupported()
    const element = node(ast.rest[0]!)
    return (input, symbols) => {
      if (!Array.isArray(input)) return invalid
      const length = input.length
      const out = new Array<unknown>(length)
      for (let i = 0; i < length; i++) {
        const value = element(input[i], symbols)
        if (value === invalid) return invalid
        out[i] = value
      }
      return out
    }
  }

  const objects = (ast: SchemaAST.Objects): Node => {
    if (ast.indexSignatures.length > 0) return unsupported()
    const properties = ast.propertySignatures
    if (properties.length === 0) {
      // Effect's empty struct: any value but null and undefined, as it is (unknown keys never checked).
      return (input) => input === null || input === undefined ? invalid : input
    }
    const names: Array<string> = []
    const optional: Array<boolean> = []
    const types: Array<Node> = []
    for (const property of properties) {
      if (typeof property.name !== "string" || property.name === "__proto__") return unsupported()
      names.push(property.name)
      optional.push(property.type.context?.isOptional === true)
      types.push(node(property.type))
    }
    const declared = new Set(names)
    const count = names.length
    if (reuse) return reused(names, optional, types)
    return (input, symbols) => {
      if (typeof input !== "object" || input === null || Array.isArray(input)) return invalid
      const record = input as { readonly [key: string]: unknown }
      if (refuseUnknown) {
        for (const key in record) {
          if (!declared.has(key) && Object.hasOwn(record, key)) return invalid
        }
        if (symbols && Object.getOwnPropertySymbols(record).length > 0) return invalid
      }
      const out: { [key: string]: unknown } = {}
      for (let i = 0; i < count; i++) {
        const name = names[i]!
        if (name in record) {
          const value = types[i]!(record[name], symbols)
          if (value === invalid) return invalid
          out[name] = value
        } else if (!optional[i]) return invalid
      }
      return out
    }
  }

  /**
   * An object node under `reuse` (see {@link compile}): the fields' values are kept in `values`
   * (one array per node: a node never runs inside itself, schemas being without suspensions), then
   * the input is answered when nothing would tell the copy from it, else the copy is made of them.
   */
  const reused = (
    names: ReadonlyArray<string>,
    optional: ReadonlyArray<boolean>,
    types: ReadonlyArray<Node>
  ): Node => {
    const count = names.length
    const values = new Array<unknown>(count).fill(absent)
    const index = new Map(names.map((name, i) => [name, i]))
    return (input, symbols) => {
      if (typeof input !== "object" || input === null || Array.isArray(input)) return invalid
      const record = input as { readonly [key: string]: unknown }
      // (a value parsed from JSON text: a plain object of data properties, no symbol, nobody else's)
      const reusable = !symbols
      // One walk of the keys: unknown ones refused, and whether the own enumerable keys are declared
      // ones in the schema's order (for-in lists own keys first).
      let ordered = reusable
      let listed = 0
      if (refuseUnknown || reusable) {
        let last = -1
        for (const key in record) {
          const at = index.get(key)
          if (at === undefined) {
            if (refuseUnknown && Object.hasOwn(record, key)) return invalid
            ordered = false
          } else if (ordered && (at <= last || !Object.hasOwn(record, key))) ordered = false
          if (!ordered && !refuseUnknown) break
          last = at ?? last
          listed++
        }
        if (refuseUnknown && symbols && Object.getOwnPropertySymbols(record).length > 0) return invalid
      }
      let same = ordered
      let held = 0
      for (let i = 0; i < count; i++) {
        const name = names[i]!
        if (name in record) {
          const field = record[name]
          const value = types[i]!(field, symbols)
          if (value === invalid) return invalid
          if (value !== field) same = false
          values[i] = value
          held++
        } else if (!optional[i]) return invalid
        else values[i] = absent
      }
      if (same && listed === held) {
        values.fill(absent)
        return record
      }
      const out: { [key: string]: unknown } = {}
      for (let i = 0; i < count; i++) {
        const value = values[i]
        if (value !== absent) out[names[i]!] = value
      }
      values.fill(absent)
      return out
    }
  }

  /** `Schema.Json` (any JSON value, as it is): its own parser, kept only when it answers "the input, unchanged". */
  const json = (ast: SchemaAST.Declaration): Node => {
    const id = (ast.annotations?.representation as { readonly id?: unknown } | undefined)?.id
    if (id !== "effect/schema/Json" || ast.typeParameters.length > 0) return unsupported()
    const run = ast.run(ast.typeParameters)
    return (input) => {
      const result: unknown = run(input, ast, options)
      if (!Exit.isExit(result)) throw unsure
      if (Exit.isFailure(result)) return invalid
      if (result.value !== SchemaCompiler.missing) throw unsure
      return input
    }
  }

  const union = (ast: SchemaAST.Union): Node => {
    const members = ast.types.map(node)
    const oneOf = ast.options?.mode === "oneOf"
    return (input, symbols) => {
      let found: unknown = invalid
      let accepted = 0
      for (let i = 0; i < members.length; i++) {
        const value = members[i]!(input, symbols)
        if (value === invalid) continue
        accepted++
        // Two members accept: the answer is the input itself whichever Effect tries first, or unsure.
        if (accepted > 1 && (oneOf || value !== input || found !== input)) throw unsure
        found = value
      }
      return found
    }
  }

  let root: Node
  try {
    root = node(ast)
  } catch {
    // An unsupported node, or anything unexpected (a schema too deep for the stack): the existing decode.
    return undefined
  }
  return (input, symbols) => {
    try {
      return root(input, symbols)
    } catch (error) {
      if (error === unsure) return invalid
      throw error
    }
  }
}

/**
 * Thrown (and caught at the root) where the validator cannot tell the strict decode's answer
 * without Effect's order of trying union members: not "invalid" for an enclosing union, which
 * would then try its other members, but "ask the strict decode" for the whole value.
 */
const unsure: unique symbol = Symbol("tinyagents/ToolInput/unsure")

/** A field the input does not hold (`reuse`'s kept values). */
const absent: unique symbol = Symbol("tinyagents/ToolInput/absent")

/** True when every check accepts `value` (Effect's `collectIssues` finding nothing). */
const passes = (
  checks: ReadonlyArray<SchemaAST.Check<unknown>>,
  value: unknown,
  ast: SchemaAST.AST,
  options: SchemaAST.ParseOptions
): boolean => {
  for (let i = 0; i < checks.length; i++) {
    const check = checks[i]!
    if (check._tag === "FilterGroup") {
      if (!passes(check.checks, value, ast, options)) return false
    } else if (check.run(value, ast, options)) return false
  }
  return true
}
