/**
 * Gemini `FunctionDeclaration.parameters`: the OpenAPI 3.0 subset Google's
 * `Schema` type accepts (js-genai `src/types.ts`, rules of `processJsonSchema`
 * in `src/_transformers.ts`). Upper-case `type`; `null` in a type array or a
 * union becomes `nullable: true`; `type` together with `anyOf` and a lone
 * `type: "null"` are rejected, as the SDK does; `additionalProperties` is
 * dropped; `$ref` is inlined (recursion cannot be); enums are strings, with
 * number enums written as strings plus `format: "enum"` (the `Schema.enum`
 * doc's `{type: INTEGER, format: enum, enum: ["101", "201"]}`); int64
 * keywords (`minItems`, `maxLength`, ...) are strings. Keywords the subset
 * lacks are appended to the description, so the model still reads them; the
 * registry enforces the canonical schema either way.
 */
import { Result } from "effect"
import type { SchemaProblem } from "../ProviderExportError.ts"
import { describeKeywords, fail, fromEntries, Incompatible, isRecord, type Node, refKey, resolveRef } from "./schema.ts"

/**
 * Gemini's `Type` enum, declared for types only: at runtime a `type` is the
 * plain string (`"OBJECT"`), exactly what the API and the SDK send. It is an
 * enum rather than a union of string literals so that {@link Schema} assigns
 * to `@google/genai`'s `Schema`: a string literal never assigns to an enum,
 * but TypeScript relates two enums of the same name member by member (each
 * of our members must exist in theirs with the same value), so this `Type`
 * and the SDK's assign to each other. Both still compare with, and assign
 * to, the plain strings (`schema.type === "OBJECT"`).
 */
declare enum Type {
  TYPE_UNSPECIFIED = "TYPE_UNSPECIFIED",
  STRING = "STRING",
  NUMBER = "NUMBER",
  INTEGER = "INTEGER",
  BOOLEAN = "BOOLEAN",
  ARRAY = "ARRAY",
  OBJECT = "OBJECT",
  NULL = "NULL"
}
export type { Type }

/** Google's `Schema` (the OpenAPI 3.0 subset of `parameters`); mutable arrays, as the SDK's type has. */
export interface Schema {
  readonly type?: Type
  readonly format?: string
  readonly title?: string
  readonly description?: string
  readonly nullable?: boolean
  readonly enum?: Array<string>
  readonly default?: unknown
  readonly example?: unknown
  readonly items?: Schema
  readonly minItems?: string
  readonly maxItems?: string
  readonly properties?: Readonly<Record<string, Schema>>
  readonly required?: Array<string>
  readonly minProperties?: string
  readonly maxProperties?: string
  readonly propertyOrdering?: Array<string>
  readonly minimum?: number
  readonly maximum?: number
  readonly minLength?: string
  readonly maxLength?: string
  readonly pattern?: string
  readonly anyOf?: Array<Schema>
}

const unsupported = [
  "not",
  "if",
  "then",
  "else",
  "prefixItems",
  "additionalItems",
  "patternProperties",
  "dependentRequired",
  "dependentSchemas",
  "dependencies",
  "contains",
  "propertyNames",
  "unevaluatedProperties",
  "unevaluatedItems",
  "$dynamicRef"
]

const int64Keywords = new Set(["minItems", "maxItems", "minLength", "maxLength", "minProperties", "maxProperties"])
const dropped = new Set(["$schema", "$id", "$anchor", "$comment", "$defs", "definitions", "additionalProperties"])
const formatsFor: Readonly<Record<string, ReadonlySet<string>>> = {
  STRING: new Set(["enum", "date-time"]),
  NUMBER: new Set(["float", "double"]),
  INTEGER: new Set(["int32", "int64"])
}

/** Google's JSON type name for a JSON Schema type. */
const upper = (type: unknown, path: ReadonlyArray<string>): Type => {
  switch (type) {
    case "string":
    case "number":
    case "integer":
    case "boolean":
    case "array":
    case "object":
      return type.toUpperCase() as Type
    case "null":
      return fail(path, "type \"null\" cannot be the only type of a field")
    default:
      return fail(path, `unknown type ${JSON.stringify(type)}`)
  }
}

const typeOfValues = (values: ReadonlyArray<unknown>): string | undefined =>
  values.every((v) => typeof v === "string")
    ? "string"
    : values.every((v) => Number.isInteger(v))
    ? "integer"
    : values.every((v) => typeof v === "number")
    ? "number"
    : values.every((v) => typeof v === "boolean")
    ? "boolean"
    : undefined

/**
 * The `parameters` form of a draft 2020-12 root object schema, or the first
 * thing the subset cannot express. `undefined` means "no parameters" (the
 * declaration then omits `parameters`, as Google's docs do for no-argument functions).
 */
export const toOpenApi = (root: Node): Result.Result<Schema | undefined, SchemaProblem> => {
  try {
    const schema = node(root, root, [], new Set(), true)
    const empty = schema.type === "OBJECT" && Object.keys(schema.properties ?? {}).length === 0
    return Result.succeed(empty ? undefined : schema)
  } catch (error) {
    if (error instanceof Incompatible) return Result.fail(error.problem)
    throw error
  }
}

const node = (
  root: Node,
  schema: unknown,
  path: ReadonlyArray<string>,
  inlining: ReadonlySet<string>,
  isRoot = false
): Schema => {
  if (!isRecord(schema)) return fail(path, `a boolean schema (${JSON.stringify(schema)}) has no OpenAPI form`)
  let n: Node = { ...schema }
  let expanding = inlining
  for (let hops = 0; hops < 64; hops++) {
    if (Array.isArray(n.allOf)) {
      const [only, ...others] = n.allOf
      if (others.length > 0 || !isRecord(only)) return fail([...path, "allOf"], "allOf is not in the OpenAPI subset")
      const { allOf: _, ...rest } = n
      n = { ...only, ...rest }
      continue
    }
    if (typeof n.$ref === "string") {
      const key = refKey(n.$ref)
      const target = resolveRef(root, n.$ref)
      if (key === undefined || target === undefined) {
        return fail([...path, "$ref"], `only local references can be inlined, got ${n.$ref}`)
      }
      if (expanding.has(key)) return fail([...path, "$ref"], `recursive $ref ${n.$ref} cannot be inlined`)
      expanding = new Set([...expanding, key])
      const { $ref: _, ...siblings } = n
      n = { ...(key === "" ? withoutDefs(target) : target), ...siblings }
      continue
    }
    break
  }
  for (const keyword of unsupported) {
    if (keyword in n) fail([...path, keyword], `${JSON.stringify(keyword)} is not in the OpenAPI subset`)
  }
  if (n.type !== undefined && (Array.isArray(n.anyOf) || Array.isArray(n.oneOf))) {
    fail(path, "type and anyOf cannot both be set (the SDK rejects them too)")
  }
  const out: Record<string, unknown> = {}
  const moved: Record<string, unknown> = {}
  const union = Array.isArray(n.anyOf) ? n.anyOf : Array.isArray(n.oneOf) ? n.oneOf : undefined
  let typeName: Type | undefined
  if (union !== undefined) {
    const isNull = (b: unknown) => isRecord(b) && b.type === "null" && Object.keys(b).length === 1
    const branches = union.filter((b) => !isNull(b))
    if (branches.length < union.length) out.nullable = true
    if (branches.length === 1) {
      // `{anyOf: [X, {type: "null"}]}` is a nullable X, as in the SDK.
      const { anyOf: _, oneOf: __, ...outer } = n
      const inner = node(root, { ...(branches[0] as Node), ...outer }, path, expanding)
      return out.nullable === true ? { ...inner, nullable: true } : inner
    }
    out.anyOf = branches.map((b, i) => node(root, b, [...path, "anyOf", String(i)], expanding))
  } else {
    let types: ReadonlyArray<unknown> | undefined = Array.isArray(n.type) ? n.type : n.type === undefined ? undefined : [n.type]
    if (types === undefined) {
      const values = Array.isArray(n.enum) ? n.enum : "const" in n ? [n.const] : undefined
      const inferred = values === undefined ? undefined : typeOfValues(values.filter((v) => v !== null))
      if (inferred === undefined) return fail(path, "a schema without a type (it accepts any value) has no OpenAPI form")
      types = values!.includes(null) ? [inferred, "null"] : [inferred]
    }
    if (types.includes("null")) out.nullable = true
    const rest = types.filter((t) => t !== "null")
    if (rest.length === 0) return fail(path, "type \"null\" cannot be the only type of a field")
    if (rest.length === 1) {
      typeName = upper(rest[0], path)
      out.type = typeName
    } else {
      out.anyOf = rest.map((t) => ({ type: upper(t, path) }))
    }
  }
  for (const [key, value] of Object.entries(n)) {
    switch (key) {
      case "type":
      case "anyOf":
      case "oneOf":
      case "properties":
      case "required":
      case "items":
      case "const":
        break
      case "description":
      case "title":
      case "pattern":
      case "minimum":
      case "maximum":
      case "default":
      case "propertyOrdering":
        out[key] = value
        break
      case "examples":
        if (Array.isArray(value) && value.length > 0) out.example = value[0]
        break
      case "format":
        if (typeName !== undefined && typeof value === "string" && formatsFor[typeName]?.has(value)) out.format = value
        else moved[key] = value
        break
      case "enum":
        enumeration(value, typeName, out, moved)
        break
      default:
        if (dropped.has(key)) break
        if (int64Keywords.has(key) && typeof value === "number") out[key] = String(value)
        else moved[key] = value
    }
  }
  if ("const" in n && !Array.isArray(n.enum)) enumeration([n.const], typeName, out, moved)
  if (typeName === "OBJECT") {
    const properties = isRecord(n.properties) ? n.properties : undefined
    const closedRoot = isRoot && n.additionalProperties === false
    if (properties === undefined ? !closedRoot : Object.keys(properties).length === 0 && !isRoot) {
      // Google's API answers "properties: should be non-empty for OBJECT type".
      fail(path, "an object without properties (free-form or a map) has no OpenAPI form for Gemini")
    }
    out.properties = fromEntries(
      Object.entries(properties ?? {}).map((
        [name, property]
      ) => [name, node(root, property, [...path, "properties", name], expanding)])
    )
    if (Array.isArray(n.required)) out.required = n.required
  }
  if (typeName === "ARRAY") {
    if (n.items === undefined) fail(path, "an array needs an items schema in the OpenAPI subset")
    out.items = node(root, n.items, [...path, "items"], expanding)
  }
  const description = describeKeywords(out.description, moved)
  if (description !== undefined) out.description = description
  return out as Schema
}

const enumeration = (
  value: unknown,
  typeName: Type | undefined,
  out: Record<string, unknown>,
  moved: Record<string, unknown>
): void => {
  if (!Array.isArray(value)) return
  const values = value.filter((v) => v !== null)
  if (values.length < value.length) out.nullable = true
  if (values.every((v) => typeof v === "string")) {
    out.enum = values
  } else if ((typeName === "INTEGER" || typeName === "NUMBER") && values.every((v) => typeof v === "number")) {
    if (out.format !== undefined) moved.format = out.format
    out.format = "enum"
    out.enum = values.map(String)
  } else {
    moved.enum = value
  }
}

const withoutDefs = (root: Node): Node => {
  const { $defs: _, definitions: __, ...rest } = root
  return rest
}
