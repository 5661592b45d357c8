/**
 * The schema a model talks to. One AST rewrite, applied before Effect derives
 * the JSON codec, shared by the JSON Schema export (`ToolSchema`) and argument
 * decoding (`ToolInput`), so that decoding accepts exactly what the export
 * advertises:
 *
 * - Numbers are finite. Effect's JSON codec encodes `Schema.Number` as
 *   `number | "Infinity" | "-Infinity" | "NaN"`: the export tells the model it
 *   may send the string "NaN", `{"a":"NaN"}` decodes to `NaN`, a wrong-typed
 *   number is reported as `Expected "Infinity" | "-Infinity" | "NaN"`, and the
 *   node's own checks and description vanish from the export (they sit behind
 *   the added transformation). Adding `Schema.isFinite()` to every number
 *   without a finite or integer check makes Effect keep the node as it is:
 *   `{"type":"number"}` with its bounds and description, and "NaN" is refused
 *   with `Expected number, got "NaN"`. JSON cannot carry a non-finite number,
 *   so nothing a model can send is lost.
 * - Integers export as `{"type":"integer"}`: `Schema.isInt()` keeps its
 *   safe-integer check but no longer adds `minimum: -(2^53-1)` and
 *   `maximum: 2^53-1` to every integer. Bounds the user wrote are separate
 *   checks and stay.
 * - `Schema.Enum` exports as `{"type":"string","enum":[...]}` (a union of its
 *   literals) instead of one titled `anyOf` branch per member: the titles are
 *   the TypeScript member names, which mean nothing to a model.
 * - `Schema.NonEmptyArray(X)` (the tuple `[X, ...X[]]`) exports as
 *   `{"type":"array","items":X,"minItems":1}` instead of `prefixItems` plus
 *   `items`; an empty array is refused with `Expected at least 1 item`.
 * - A tagged union (objects sharing a literal key) that matches no member is
 *   reported as `Expected an object with "kind": "a" | "b"` rather than
 *   `Expected { readonly "kind": "a", ... } | ...` (an `expected` annotation;
 *   the export is unchanged).
 *
 * Only the encoded side is rewritten (what a model sends), following encodings
 * to their last link as Effect's own codec derivation does; the decoded side of
 * a transformation (e.g. the number of `NumberFromString`) is left alone. The
 * rewrite is memoised per AST, so every tool built from the same schema shares
 * one model schema.
 */
import { Formatter, Predicate, Schema, SchemaAST } from "effect"

const isIntId = "effect/schema/isInt"
const isFiniteId = "effect/schema/isFinite"

const idOf = (check: SchemaAST.Check<never>): unknown => check.annotations?.representation?.id

const hasCheck = (checks: ReadonlyArray<SchemaAST.Check<never>>, id: string): boolean =>
  checks.some((check) => idOf(check) === id || (check._tag === "FilterGroup" && hasCheck(check.checks, id)))

/**
 * `isInt()` as the model sees it: the same check, exported without the
 * safe-integer bounds. Only Effect's own export is changed: a `toJsonSchema`
 * the user gave that emits other bounds is kept.
 */
const withoutSafeBounds = (check: SchemaAST.Check<number>): SchemaAST.Check<number> => {
  if (check._tag === "FilterGroup") {
    const checks = mapOrSame(check.checks, withoutSafeBounds)
    return checks === check.checks ? check : new SchemaAST.FilterGroup(checks as typeof check.checks, check.annotations)
  }
  const toJsonSchema = check.annotations?.toJsonSchema
  if (idOf(check) !== isIntId || typeof toJsonSchema !== "function") return check
  const exported: unknown = (toJsonSchema as (context: object) => unknown)({ type: "number", schemas: [] })
  if (
    !Predicate.isObject(exported) || !("minimum" in exported) || exported.minimum !== Number.MIN_SAFE_INTEGER ||
    !("maximum" in exported) || exported.maximum !== Number.MAX_SAFE_INTEGER
  ) return check
  const { maximum: _max, minimum: _min, ...rest } = exported
  return check.annotate({ toJsonSchema: () => rest })
}

/** A number with a finite (or integer) check keeps its node in Effect's JSON codec. */
const finite = Schema.isFinite()

const rewriteNumber = (ast: SchemaAST.Number): SchemaAST.AST => {
  const checks = ast.checks
  if (checks === undefined) return new SchemaAST.Number(ast.annotations, [finite], undefined, ast.context)
  if (!hasCheck(checks, isFiniteId) && !hasCheck(checks, isIntId)) {
    return new SchemaAST.Number(ast.annotations, [finite, ...checks], undefined, ast.context)
  }
  const cleaned = mapOrSame(checks, withoutSafeBounds)
  return cleaned === checks
    ? ast
    : new SchemaAST.Number(ast.annotations, cleaned as SchemaAST.Checks, undefined, ast.context)
}

const memo = new WeakMap<SchemaAST.AST, SchemaAST.AST>()

/** Rewrites the encoded side of an AST as described above. Returns the same node when nothing changes. */
export const rewrite = (ast: SchemaAST.AST): SchemaAST.AST => {
  const cached = memo.get(ast)
  if (cached !== undefined) return cached
  const out = step(ast)
  memo.set(ast, out)
  return out
}

const step = (ast: SchemaAST.AST): SchemaAST.AST => {
  if (ast.encoding !== undefined) {
    // The JSON form is the end of the encoding chain.
    const links = ast.encoding
    const last = links[links.length - 1]!
    const to = rewrite(last.to)
    if (to === last.to) return ast
    const encoding = [...links.slice(0, -1), new SchemaAST.Link(to, last.transformation)] as unknown as SchemaAST.Encoding
    return Object.assign(Object.create(Object.getPrototypeOf(ast)), ast, { encoding }) as SchemaAST.AST
  }
  switch (ast._tag) {
    case "Number":
      return rewriteNumber(ast)
    case "Enum":
      return new SchemaAST.Union(
        ast.enums.map(([, value]) => new SchemaAST.Literal(value)),
        undefined,
        ast.annotations,
        ast.checks,
        undefined,
        ast.context
      )
    case "Objects": {
      const properties = mapOrSame(ast.propertySignatures, (ps) => {
        const type = rewrite(ps.type)
        return type === ps.type ? ps : new SchemaAST.PropertySignature(ps.name, type)
      })
      const indexes = mapOrSame(ast.indexSignatures, (is) => {
        const type = rewrite(is.type)
        return type === is.type ? is : new SchemaAST.IndexSignature(is.parameter, type)
      })
      return properties === ast.propertySignatures && indexes === ast.indexSignatures
        ? ast
        : new SchemaAST.Objects(
          properties,
          indexes,
          ast.annotations,
          ast.checks,
          undefined,
          ast.context,
          ast.encodingChecks
        )
    }
    case "Arrays": {
      const leading = repeatedLeading(ast)
      if (leading > 0) {
        // `NonEmptyArray(X)` is the tuple `[X, ...X[]]`: export it as a person writes it,
        // `{"type":"array","items":X,"minItems":1}` (no `prefixItems`).
        return rewrite(
          new SchemaAST.Arrays(
            ast.isMutable,
            [],
            ast.rest,
            ast.annotations,
            [Schema.isMinLength(leading), ...(ast.checks ?? [])] as unknown as SchemaAST.Checks,
            undefined,
            ast.context,
            ast.encodingChecks
          )
        )
      }
      const elements = mapOrSame(ast.elements, rewrite)
      const rest = mapOrSame(ast.rest, rewrite)
      return elements === ast.elements && rest === ast.rest
        ? ast
        : new SchemaAST.Arrays(
          ast.isMutable,
          elements,
          rest,
          ast.annotations,
          ast.checks,
          undefined,
          ast.context,
          ast.encodingChecks
        )
    }
    case "Union": {
      const types = mapOrSame(ast.types, rewrite)
      const expected = taggedExpected(ast)
      return types === ast.types && expected === undefined
        ? ast
        : new SchemaAST.Union(
          types,
          ast.options,
          expected === undefined ? ast.annotations : { ...ast.annotations, expected },
          ast.checks,
          undefined,
          ast.context,
          ast.encodingChecks
        )
    }
    case "Suspend":
      // Lazy: recursive schemas reach the memoised rewrite of their body.
      return new SchemaAST.Suspend(() => rewrite(ast.thunk()), ast.annotations, ast.checks, undefined, ast.context)
    default:
      return ast
  }
}

/** `n` when an array is `[X, ...(n times), ...X[]]` (as `NonEmptyArray(X)` is), else 0. */
const repeatedLeading = (ast: SchemaAST.Arrays): number =>
  ast.rest.length === 1 && ast.elements.length > 0 && ast.elements.every((e) => e === ast.rest[0])
    ? ast.elements.length
    : 0

const lastEncoded = (ast: SchemaAST.AST): SchemaAST.AST =>
  ast.encoding === undefined ? ast : lastEncoded(ast.encoding[ast.encoding.length - 1]!.to)

/**
 * For a union of objects that share a literal key (a tagged union), the message
 * shown when no member's tag matches: `an object with "kind": "a" | "b"`
 * instead of Effect's `{ readonly "kind": "a", ... } | { readonly "kind": "b", ... }`.
 */
const taggedExpected = (ast: SchemaAST.Union): string | undefined => {
  const annotations = ast.annotations
  if (annotations?.["expected"] !== undefined || annotations?.["identifier"] !== undefined) return undefined
  if (annotations?.["message"] !== undefined || ast.types.length < 2) return undefined
  const members = ast.types.map(lastEncoded)
  if (!members.every((m): m is SchemaAST.Objects => m._tag === "Objects")) return undefined
  for (const { name } of members[0]!.propertySignatures) {
    const tags = members.map((m) => m.propertySignatures.find((p) => p.name === name)?.type)
    if (tags.every((t): t is SchemaAST.Literal => t !== undefined && isLiteral(t))) {
      const values = [...new Set(tags.map((t) => Formatter.format(t.literal)))]
      return `an object with ${Formatter.format(name)}: ${values.join(" | ")}`
    }
  }
  return undefined
}

const isLiteral = (ast: SchemaAST.AST): ast is SchemaAST.Literal =>
  ast._tag === "Literal" && ast.encoding === undefined && ast.context?.isOptional !== true

/** True for a number node that carries `Schema.isInt()` (directly or in a group). */
export const isInteger = (ast: SchemaAST.AST): boolean =>
  ast._tag === "Number" && ast.checks !== undefined && hasCheck(ast.checks, isIntId)

/** True for the `Schema.isInt()` filter. */
export const isIntFilter = (filter: SchemaAST.Filter<never>): boolean => idOf(filter) === isIntId

const mapOrSame = <A>(items: ReadonlyArray<A>, f: (a: A) => A): ReadonlyArray<A> => {
  let out: Array<A> | undefined
  for (let i = 0; i < items.length; i++) {
    const item = items[i]!
    const next = f(item)
    if (next !== item && out === undefined) out = items.slice(0, i)
    if (out !== undefined) out.push(next)
  }
  return out ?? items
}

/** The model-facing form of a schema: the same `Type`; finite numbers, clean integers, enums and arrays. */
export const toModelSchema = <S extends Schema.Top>(schema: S): S => {
  const ast = rewrite(schema.ast)
  return ast === schema.ast ? schema : Schema.make<S>(ast)
}

/**
 * The codec for what a model reads and sends (a tool's output, its arguments): Effect's JSON codec
 * of the model schema. Its encoded side is exactly what `Schema.toJsonSchemaDocument(toModelSchema(schema))`
 * (and so `ToolSchema.toJsonSchema`) describes.
 */
export const toModelCodec = <S extends Schema.Top>(schema: S): Schema.Codec<S["Type"], unknown> =>
  Schema.toCodecJson(toModelSchema(schema)) as unknown as Schema.Codec<S["Type"], unknown>
