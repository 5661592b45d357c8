/**
 * Independent checks of exported schemas: the JSON Schema 2020-12
 * meta-schema (Ajv), OpenAI's strict-mode rules (every property required,
 * every object closed, no unsupported keyword, limits), and the shape of
 * Gemini's OpenAPI subset. Written from the rules in shared/providers.md, not
 * from the exporters' code.
 */
import { Ajv2020 } from "ajv/dist/2020.js"
import { Ajv } from "ajv"

const ajv2020 = new Ajv2020({ strict: false, allErrors: true, validateFormats: false })
const ajv07 = new Ajv({ strict: false, allErrors: true, validateFormats: false })

/** Meta-schema errors of a 2020-12 schema (empty when valid). */
export const metaErrors2020 = (schema: unknown): ReadonlyArray<string> => {
  const valid = ajv2020.validateSchema(schema as object)
  return valid === true ? [] : (ajv2020.errors ?? []).map((e) => `${e.instancePath} ${e.message ?? ""}`)
}

/** Compiles a 2020-12 schema and validates `value` against it. */
export const validate2020 = (schema: object, value: unknown): ReadonlyArray<string> => {
  const check = ajv2020.compile(schema)
  return check(value) ? [] : (check.errors ?? []).map((e) => `${e.instancePath} ${e.message ?? ""}`)
}

/** Compiles a draft-07 schema (MCP publishes its protocol schema in draft-07) and validates `value`. */
export const validate07 = (schema: object, value: unknown): ReadonlyArray<string> => {
  const check = ajv07.compile(schema)
  return check(value) ? [] : (check.errors ?? []).map((e) => `${e.instancePath} ${e.message ?? ""}`)
}

const isObject = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

const forbiddenInStrict = ["allOf", "oneOf", "not", "if", "then", "else", "dependentRequired", "dependentSchemas", "patternProperties"]

/**
 * Violations of OpenAI's strict subset: every object has `additionalProperties:
 * false` and `required` listing every property, no unsupported combinator, and
 * the documented limits (5,000 properties, 10 object levels, 1,000 enum values).
 */
export const strictViolations = (root: unknown): ReadonlyArray<string> => {
  const problems: Array<string> = []
  let properties = 0
  let enumValues = 0
  const visit = (node: unknown, path: string, level: number): void => {
    if (!isObject(node)) {
      problems.push(`${path}: not a schema object`)
      return
    }
    for (const keyword of forbiddenInStrict) if (keyword in node) problems.push(`${path}: has ${keyword}`)
    const types = Array.isArray(node.type) ? node.type : node.type === undefined ? [] : [node.type]
    let depth = level
    if (types.includes("object")) {
      depth = level + 1
      if (depth > 10) problems.push(`${path}: nested deeper than 10 objects`)
      if (node.additionalProperties !== false) problems.push(`${path}: object without additionalProperties: false`)
      const keys = isObject(node.properties) ? Object.keys(node.properties) : []
      properties += keys.length
      const required = Array.isArray(node.required) ? node.required : []
      if (required.length !== keys.length || keys.some((k) => !required.includes(k))) {
        problems.push(`${path}: required ${JSON.stringify(required)} is not every property ${JSON.stringify(keys)}`)
      }
      for (const key of keys) visit((node.properties as Record<string, unknown>)[key], `${path}.${key}`, depth)
    }
    if (types.includes("array")) visit(node.items, `${path}[]`, depth)
    if (types.length === 0 && !("$ref" in node) && !Array.isArray(node.anyOf) && !Array.isArray(node.enum)) {
      problems.push(`${path}: no type`)
    }
    if (Array.isArray(node.enum)) {
      enumValues += node.enum.length
      if (types.length > 0) {
        for (const value of node.enum) {
          const kind = value === null ? "null" : Number.isInteger(value) ? "integer" : typeof value
          const admitted = types.includes(kind) || (kind === "integer" && types.includes("number"))
          if (!admitted) problems.push(`${path}: enum value ${JSON.stringify(value)} is not of type ${types.join("|")}`)
        }
      }
    }
    if (Array.isArray(node.anyOf)) node.anyOf.forEach((b, i) => visit(b, `${path}|${i}`, depth))
  }
  visit(root, "$", 0)
  if (isObject(root) && isObject(root.$defs)) {
    for (const [name, def] of Object.entries(root.$defs)) visit(def, `$defs.${name}`, 0)
  }
  if (properties > 5000) problems.push(`more than 5,000 properties (${properties})`)
  if (enumValues > 1000) problems.push(`more than 1,000 enum values (${enumValues})`)
  return problems
}

const geminiTypes = new Set(["STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT"])

/** Violations of Google's OpenAPI `Schema` subset (upper-case types, string enums, no JSON-Schema-only keywords). */
export const geminiOpenApiViolations = (root: unknown): ReadonlyArray<string> => {
  const problems: Array<string> = []
  const visit = (node: unknown, path: string): void => {
    if (!isObject(node)) return void problems.push(`${path}: not a schema object`)
    for (const keyword of ["additionalProperties", "$ref", "$defs", "oneOf", "allOf", "const", "$schema"]) {
      if (keyword in node) problems.push(`${path}: has ${keyword}`)
    }
    if (node.type !== undefined && !geminiTypes.has(node.type as string)) problems.push(`${path}: type ${String(node.type)}`)
    if (node.type !== undefined && node.anyOf !== undefined) problems.push(`${path}: type with anyOf`)
    if (Array.isArray(node.enum) && !node.enum.every((v) => typeof v === "string")) problems.push(`${path}: non-string enum`)
    for (const key of ["minItems", "maxItems", "minLength", "maxLength", "minProperties", "maxProperties"]) {
      if (key in node && typeof node[key] !== "string") problems.push(`${path}: ${key} is not an int64 string`)
    }
    if (isObject(node.properties)) for (const [k, v] of Object.entries(node.properties)) visit(v, `${path}.${k}`)
    if (node.items !== undefined) visit(node.items, `${path}[]`)
    if (Array.isArray(node.anyOf)) node.anyOf.forEach((b, i) => visit(b, `${path}|${i}`))
  }
  visit(root, "$")
  return problems
}
