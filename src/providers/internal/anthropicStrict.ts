/**
 * Anthropic strict tool schemas: a port of the official SDK's
 * `transformJSONSchema` (anthropic-sdk-typescript `src/lib/transform-json-schema.ts`)
 * to JSON Schema in, `Result` out. Kept from the SDK: `$ref` (with `$defs`
 * beside it, nothing else), `$defs`, `anyOf`/`allOf`, `oneOf` → `anyOf`,
 * `type`, `description`, `title`, a primitive `const` and a non-empty `enum`
 * of primitives (either one needs no `type`, so `{"enum": [1, 2, 3]}` is
 * accepted; a declared `type` is kept beside them, where the SDK drops it;
 * other enums and consts go to the description), `properties`, `required`
 * (not expanded: optional stays optional), `additionalProperties: false`
 * forced, string `format` from the supported list, `minItems` 0 or 1; every
 * other keyword is appended to the description as `{key: value}`. A node with
 * none of a type, a combinator or literals is an error, as in the SDK.
 *
 * Added (the SDK does not check them, the API rejects or misreads them):
 * recursive `$ref` (strict mode has no recursion; `effect/ai`'s
 * `AnthropicStructuredOutput` rejects it too), non-local `$ref`, and objects
 * that are free-form or maps: forcing `additionalProperties: false` on those
 * would leave the model only `{}` to send.
 */
import { Result } from "effect"
import type { SchemaProblem } from "../ProviderExportError.ts"
import { describeKeywords, fail, findRecursion, fromEntries, Incompatible, isRecord, type Node, refKey, resolveRef } from "./schema.ts"

const isPrimitive = (value: unknown): boolean => value === null || typeof value !== "object"

const formats = new Set(["date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid"])

/** Rewrites a draft 2020-12 input schema as the SDK would for `strict: true`, or names what cannot be. */
export const toStrict = (root: Node): Result.Result<Node, SchemaProblem> => {
  const cycle = findRecursion(root)
  if (cycle !== undefined) {
    return Result.fail({
      reason: "unsupported_schema",
      path: ["$defs", cycle[0] ?? ""],
      detail: `recursive $ref (${cycle.join(" -> ")}) is not supported in strict mode`
    })
  }
  try {
    return Result.succeed(transform(root, root, []))
  } catch (error) {
    if (error instanceof Incompatible) return Result.fail(error.problem)
    throw error
  }
}

const transform = (root: Node, schema: unknown, path: ReadonlyArray<string>): Node => {
  if (!isRecord(schema)) return fail(path, `a boolean schema (${JSON.stringify(schema)}) has no strict form`)
  const rest: Record<string, unknown> = { ...schema }
  const take = (key: string): unknown => {
    const value = rest[key]
    delete rest[key]
    return value
  }
  const out: Record<string, unknown> = {}
  // `$defs` before the `$ref` early return, as the SDK: a root `$ref` keeps its definitions.
  const defs = take("$defs")
  if (isRecord(defs)) {
    out.$defs = fromEntries(Object.entries(defs).map(([name, def]) => [name, transform(root, def, ["$defs", name])]))
  }
  const ref = take("$ref")
  if (ref !== undefined) {
    if (typeof ref !== "string" || refKey(ref) === undefined || resolveRef(root, ref) === undefined) {
      return fail([...path, "$ref"], `only local references (#/$defs/...) are supported, got ${JSON.stringify(ref)}`)
    }
    return { ...out, $ref: ref }
  }
  // Literals, as the SDK: a non-empty `enum` of primitives or a primitive `const` is kept
  // and needs no type (`{"enum": [1, 2, 3]}` is accepted); other enums and consts are
  // described. A declared type stays beside them (the SDK drops it).
  const enumValues = rest.enum
  if (Array.isArray(enumValues) && enumValues.length > 0 && enumValues.every(isPrimitive)) out.enum = take("enum")
  if (rest.const !== undefined && isPrimitive(rest.const)) out.const = take("const")
  const hasLiterals = "enum" in out || "const" in out
  const type = take("type")
  const anyOf = take("anyOf")
  const oneOf = take("oneOf")
  const allOf = take("allOf")
  const branches = (list: ReadonlyArray<unknown>, key: string) =>
    list.map((branch, i) => transform(root, branch, [...path, key, String(i)]))
  if (Array.isArray(anyOf)) out.anyOf = branches(anyOf, "anyOf")
  else if (Array.isArray(oneOf)) out.anyOf = branches(oneOf, "oneOf")
  else if (Array.isArray(allOf)) out.allOf = branches(allOf, "allOf")
  else if (type !== undefined) out.type = type
  else if (!hasLiterals) {
    return fail(path, "a schema needs a type when anyOf/oneOf/allOf/enum/const are not used (it accepts any value)")
  }
  for (const key of ["description", "title"]) {
    const value = take(key)
    if (value !== undefined) out[key] = value
  }
  if (type === "object") {
    const properties = take("properties")
    const extra = take("additionalProperties")
    if (extra !== undefined && extra !== false) {
      fail([...path, "additionalProperties"], "an open object or map has no strict form (strict forces additionalProperties: false)")
    }
    if (properties === undefined && extra !== false) {
      fail(path, "a free-form object (no properties) has no strict form (strict forces additionalProperties: false)")
    }
    out.properties = fromEntries(
      Object.entries(isRecord(properties) ? properties : {}).map((
        [name, property]
      ) => [name, transform(root, property, [...path, "properties", name])])
    )
    out.additionalProperties = false
    const required = take("required")
    if (required !== undefined) out.required = required
  } else if (type === "string") {
    const format = take("format")
    if (typeof format === "string" && formats.has(format)) out.format = format
    else if (format !== undefined) rest.format = format
  } else if (type === "array") {
    const items = take("items")
    if (items !== undefined) out.items = transform(root, items, [...path, "items"])
    const minItems = take("minItems")
    if (minItems === 0 || minItems === 1) out.minItems = minItems
    else if (minItems !== undefined) rest.minItems = minItems
  }
  delete rest.$schema
  const description = describeKeywords(out.description, rest)
  if (description !== undefined) out.description = description
  return out
}
