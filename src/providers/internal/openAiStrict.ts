/**
 * OpenAI strict mode (Structured Outputs) for tool parameters, shared by the
 * Chat Completions and Responses exporters: the JSON-Schema transform (every
 * property required, optional ones nullable, every object closed), the
 * documented size limits, and the inverse step that turns a `null` sent for a
 * formerly optional property back into an absent key.
 *
 * Why not `effect/ai`'s `OpenAiStructuredOutput.toCodecOpenAI`: it takes an
 * Effect `Schema` and returns a provider schema plus a *codec* that maps
 * `null` back to a missing key. A `ToolSpec` holds a JSON Schema (imported MCP
 * and BFCL tools have no Effect schema at all), and the registry decodes
 * arguments with the tool's own input schema, not with that codec. So this
 * module applies the same rules to JSON Schema, keeps Effect's keyword and
 * format lists, and provides the null-to-absent step separately
 * ({@link normalizeNulls}), to run before the registry decodes.
 */
import { Result } from "effect"
import type { SchemaProblem } from "../ProviderExportError.ts"
import { admitsNull, definitionsOf, describeKeywords, fail, fromEntries, Incompatible, isRecord, type Node, refKey, requiredOf, resolveRef, typesOf } from "./schema.ts"

/** The documented strict-mode limits; all configurable (they were 100 properties and 5 levels in 2024). */
export interface Limits {
  /** Object properties in the whole schema. Default 5,000. */
  readonly maxProperties: number
  /** Levels of object nesting (the root object is level 1). Default 10. */
  readonly maxDepth: number
  /** Enum values across all enums. Default 1,000. */
  readonly maxEnumValues: number
  /** Characters across property names, definition names, enum and const values. Default 120,000. */
  readonly maxStringLength: number
  /** A single string enum with more values than this ... Default 250. */
  readonly largeEnumThreshold: number
  /** ... may total at most this many characters. Default 15,000. */
  readonly maxLargeEnumStringLength: number
}

/** The limits OpenAI documents today. */
export const defaultLimits: Limits = {
  maxProperties: 5_000,
  maxDepth: 10,
  maxEnumValues: 1_000,
  maxStringLength: 120_000,
  largeEnumThreshold: 250,
  maxLargeEnumStringLength: 15_000
}

/** String formats strict mode accepts (the list `OpenAiStructuredOutput` keeps). */
const formats = new Set(["date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"])

/** Keywords strict mode cannot express: the schema falls back to non-strict (or fails). */
const unsupported = [
  "not",
  "if",
  "then",
  "else",
  "dependentRequired",
  "dependentSchemas",
  "dependencies",
  "patternProperties",
  "unevaluatedProperties",
  "unevaluatedItems",
  "propertyNames",
  "contains",
  "prefixItems",
  "additionalItems",
  "$dynamicRef",
  "$recursiveRef"
]

/** Keywords that carry no validation and no meaning for the model; dropped. */
const dropped = new Set(["$schema", "$id", "$anchor", "$comment", "$dynamicAnchor", "$vocabulary"])

/** Keywords kept per JSON type (the rest of `OpenAiStructuredOutput`'s supported list). */
const keptFor: Readonly<Record<string, ReadonlySet<string>>> = {
  string: new Set(["pattern", "format"]),
  number: new Set(["multipleOf", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"]),
  integer: new Set(["multipleOf", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"]),
  array: new Set(["minItems", "maxItems"])
}

/**
 * Rewrites a draft 2020-12 root object schema for strict mode, or names the
 * first thing strict mode cannot express (or the first limit it exceeds).
 */
export const toStrict = (root: Node, limits: Limits = defaultLimits): Result.Result<Node, SchemaProblem> => {
  try {
    const out = transformRoot(root)
    checkLimits(out, limits)
    return Result.succeed(out)
  } catch (error) {
    if (error instanceof Incompatible) return Result.fail(error.problem)
    throw error
  }
}

const transformRoot = (root: Node): Node => {
  if (Array.isArray(root.anyOf) || Array.isArray(root.oneOf)) fail([], "the root must be an object schema, not a union")
  if (typesOf(root)?.join() !== "object") fail([], "the root must be a schema of type \"object\"")
  const inlining = new Set<string>()
  const node = (schema: unknown, path: ReadonlyArray<string>): Node => {
    if (!isRecord(schema)) return fail(path, `a boolean schema (${JSON.stringify(schema)}) has no strict form`)
    let n: Node = { ...schema }
    if (Array.isArray(n.allOf)) {
      const [only, ...others] = n.allOf
      if (others.length > 0 || !isRecord(only)) return fail([...path, "allOf"], "allOf is not supported in strict mode")
      const { allOf: _, ...rest } = n
      n = { ...only, ...rest }
    }
    for (const keyword of unsupported) {
      if (keyword in n) fail([...path, keyword], `${JSON.stringify(keyword)} is not supported in strict mode`)
    }
    if (typeof n.$ref === "string") return reference(n, n.$ref, path)
    if ("$ref" in n) return fail([...path, "$ref"], "$ref must be a string")
    if (Array.isArray(n.oneOf)) {
      if (Array.isArray(n.anyOf)) fail(path, "oneOf together with anyOf has no strict form")
      const { oneOf, ...rest } = n
      n = { ...rest, anyOf: oneOf }
    }
    const types = typesOf(n)
    const out: Record<string, unknown> = {}
    const moved: Record<string, unknown> = {}
    if (Array.isArray(n.anyOf)) {
      if (types !== undefined) fail(path, "type together with anyOf has no strict form; put the type in each branch")
      out.anyOf = n.anyOf.map((branch, i) => node(branch, [...path, "anyOf", String(i)]))
    } else if (types === undefined && !Array.isArray(n.enum) && !("const" in n)) {
      fail(path, "a schema without a type accepts any value, which strict mode cannot express")
    }
    if (types !== undefined) out.type = n.type
    for (const [key, value] of Object.entries(n)) {
      switch (key) {
        case "type":
        case "anyOf":
        case "properties":
        case "required":
        case "additionalProperties":
        case "items":
        case "$defs":
        case "definitions":
          break
        case "description":
        case "title":
        case "enum":
          out[key] = value
          break
        case "const":
          if (!Array.isArray(n.enum)) out.enum = [value]
          break
        case "default":
          if (value !== null) moved[key] = value
          break
        case "format":
          if (typeof value === "string" && formats.has(value) && (types?.includes("string") ?? true)) out.format = value
          else moved[key] = value
          break
        default:
          if (dropped.has(key)) break
          if (types?.some((t) => keptFor[t]?.has(key)) ?? Object.values(keptFor).some((s) => s.has(key))) out[key] = value
          else moved[key] = value
      }
    }
    if (types?.includes("object")) object(n, out, path)
    if (types?.includes("array")) {
      if (n.items === undefined) fail(path, "an array without an items schema accepts any element, which strict mode cannot express")
      out.items = node(n.items, [...path, "items"])
    }
    const description = describeKeywords(out.description, moved)
    if (description !== undefined) out.description = description
    return out
  }
  const object = (n: Node, out: Record<string, unknown>, path: ReadonlyArray<string>): void => {
    const extra = n.additionalProperties
    if (extra !== undefined && extra !== false) {
      fail(
        [...path, "additionalProperties"],
        extra === true
          ? "an open object (additionalProperties: true) has no strict form"
          : "a map (additionalProperties with a schema) has no strict form"
      )
    }
    if (!isRecord(n.properties) && extra !== false) {
      fail(path, "a free-form object (no properties, additionalProperties not false) has no strict form")
    }
    const properties = isRecord(n.properties) ? n.properties : {}
    const required = new Set(requiredOf(n))
    out.properties = fromEntries(
      Object.entries(properties).map(([name, schema]) => {
        const strict = node(schema, [...path, "properties", name])
        return [name, required.has(name) ? strict : nullable(strict)]
      })
    )
    out.required = Object.keys(properties)
    out.additionalProperties = false
  }
  const reference = (n: Node, ref: string, path: ReadonlyArray<string>): Node => {
    const key = refKey(ref)
    if (key === undefined) return fail([...path, "$ref"], `only local references (#/$defs/...) are supported, got ${ref}`)
    const target = resolveRef(root, ref)
    if (target === undefined) return fail([...path, "$ref"], `the reference ${ref} points nowhere`)
    const { $ref: _, ...siblings } = n
    const canonical = key === "" ? "#" : `#/$defs/${key.replaceAll("~", "~0").replaceAll("/", "~1")}`
    // As the OpenAI SDK does: a $ref with sibling keywords is inlined once.
    if (Object.keys(siblings).length === 0 || inlining.has(key) || key === "") return { $ref: canonical }
    inlining.add(key)
    try {
      return node({ ...target, ...siblings }, path)
    } finally {
      inlining.delete(key)
    }
  }
  const { $defs: _, definitions: __, ...body } = root
  const out = node(body, [])
  const definitions = Object.entries(definitionsOf(root))
  if (definitions.length > 0) {
    out.$defs = fromEntries(definitions.map(([name, schema]) => [name, node(schema, ["$defs", name])]))
  }
  return out
}

/** Makes a strict node admit `null` (for a formerly optional property). */
export const nullable = (schema: Node): Node => {
  if (admitsNull(schema)) return schema
  if (typeof schema.$ref === "string") return { anyOf: [schema, { type: "null" }] }
  if (Array.isArray(schema.anyOf)) return { ...schema, anyOf: [...schema.anyOf, { type: "null" }] }
  const types = typesOf(schema)
  const withEnum = (s: Node): Node => Array.isArray(s.enum) ? { ...s, enum: [...s.enum, null] } : s
  if (types !== undefined) return withEnum({ ...schema, type: [...types, "null"] })
  if (Array.isArray(schema.enum)) return withEnum(schema)
  return { anyOf: [schema, { type: "null" }] }
}

const checkLimits = (root: Node, limits: Limits): void => {
  let properties = 0
  let enumValues = 0
  let characters = 0
  const definitions = isRecord(root.$defs) ? root.$defs : {}
  for (const name of Object.keys(definitions)) characters += name.length
  const visit = (node: unknown, path: ReadonlyArray<string>, depth: number): void => {
    if (!isRecord(node)) return
    let level = depth
    if (isRecord(node.properties)) {
      level = depth + 1
      if (level > limits.maxDepth) {
        fail(path, `objects are nested ${level} levels deep; the limit is ${limits.maxDepth}`, "limit_exceeded")
      }
      const names = Object.keys(node.properties)
      properties += names.length
      for (const name of names) characters += name.length
      if (properties > limits.maxProperties) {
        fail(path, `the schema has more than ${limits.maxProperties} properties`, "limit_exceeded")
      }
      for (const name of names) visit(node.properties[name], [...path, "properties", name], level)
    }
    if (Array.isArray(node.enum)) {
      enumValues += node.enum.length
      if (enumValues > limits.maxEnumValues) {
        fail(path, `the schema has more than ${limits.maxEnumValues} enum values`, "limit_exceeded")
      }
      let enumCharacters = 0
      for (const value of node.enum) {
        const length = typeof value === "string" ? value.length : JSON.stringify(value).length
        enumCharacters += length
        characters += length
      }
      if (
        node.enum.length > limits.largeEnumThreshold && node.enum.every((v) => typeof v === "string") &&
        enumCharacters > limits.maxLargeEnumStringLength
      ) {
        fail(
          path,
          `a string enum with more than ${limits.largeEnumThreshold} values totals ${enumCharacters} characters; the limit is ${limits.maxLargeEnumStringLength}`,
          "limit_exceeded"
        )
      }
    }
    if (Array.isArray(node.anyOf)) node.anyOf.forEach((b, i) => visit(b, [...path, "anyOf", String(i)], level))
    visit(node.items, [...path, "items"], level)
  }
  visit(root, [], 0)
  for (const [name, schema] of Object.entries(definitions)) visit(schema, ["$defs", name], 0)
  if (characters > limits.maxStringLength) {
    fail(
      [],
      `property names, definition names and enum values total ${characters} characters; the limit is ${limits.maxStringLength}`,
      "limit_exceeded"
    )
  }
}

// ---------------------------------------------------------------------------
// null -> absent
// ---------------------------------------------------------------------------

/**
 * Undoes the strict transform on incoming arguments: a `null` for a property
 * the canonical schema left optional becomes an absent key, recursively
 * (nested objects, array items, union branches, `$ref`s). Only the nulls
 * strict mode introduced are removed: where the canonical schema itself
 * admits `null`, strict mode left the property as it was and a `null` keeps
 * its meaning. JSON text is parsed and re-serialised only when something
 * changed; text that is not JSON is returned untouched for the registry to reject.
 */
export const normalizeNulls = (root: Node, args: unknown): unknown => {
  if (typeof args === "string") {
    let parsed: unknown
    try {
      parsed = JSON.parse(args)
    } catch {
      return args
    }
    const normalized = walk(root, root, parsed, 0)
    return normalized === parsed ? args : JSON.stringify(normalized)
  }
  return walk(root, root, args, 0)
}

const maxRefHops = 64

const resolveAll = (root: Node, schema: Node): Node => {
  let current = schema
  for (let hops = 0; hops < maxRefHops; hops++) {
    if (Array.isArray(current.allOf) && current.allOf.length === 1 && isRecord(current.allOf[0])) {
      const { allOf, ...rest } = current
      current = { ...(allOf[0] as Node), ...rest }
      continue
    }
    if (typeof current.$ref !== "string") return current
    const target = resolveRef(root, current.$ref)
    if (target === undefined) return current
    const { $ref: _, ...siblings } = current
    current = { ...target, ...siblings }
  }
  return current
}

const asNode = (schema: unknown): Node => isRecord(schema) ? schema : {}

const branchesOf = (schema: Node): ReadonlyArray<unknown> => [
  ...(Array.isArray(schema.anyOf) ? schema.anyOf : []),
  ...(Array.isArray(schema.oneOf) ? schema.oneOf : [])
]

const walk = (root: Node, schema: unknown, value: unknown, depth: number): unknown => {
  if (!isRecord(schema) || depth > 256) return value
  const resolved = resolveAll(root, schema)
  const candidates = [resolved, ...branchesOf(resolved).filter(isRecord).map((b) => resolveAll(root, b))]
  if (Array.isArray(value)) {
    const shape = candidates.find((c) => isRecord(c.items) || Array.isArray(c.prefixItems))
    if (shape === undefined) return value
    let changed = false
    const out = value.map((item, i) => {
      const itemSchema = Array.isArray(shape.prefixItems) && i < shape.prefixItems.length
        ? shape.prefixItems[i]
        : shape.items
      const next = walk(root, itemSchema, item, depth + 1)
      if (next !== item) changed = true
      return next
    })
    return changed ? out : value
  }
  if (!isRecord(value)) return value
  const shapes = candidates.filter((c) => isRecord(c.properties))
  const keys = Object.keys(value)
  const shape = shapes.find((c) => keys.every((k) => Object.hasOwn(c.properties as object, k))) ?? shapes[0]
  if (shape === undefined) return value
  const properties = shape.properties as Readonly<Record<string, unknown>>
  const required = new Set(requiredOf(shape))
  let changed = false
  const entries: Array<readonly [string, unknown]> = []
  for (const key of keys) {
    const item = value[key]
    const known = Object.hasOwn(properties, key)
    if (item === null && known && !required.has(key) && !admitsNull(resolveAll(root, asNode(properties[key])))) {
      changed = true
      continue
    }
    const next = known ? walk(root, properties[key], item, depth + 1) : item
    if (next !== item) changed = true
    entries.push([key, next])
  }
  return changed ? fromEntries(entries) : value
}
