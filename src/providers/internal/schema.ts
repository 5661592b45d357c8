/**
 * JSON Schema plumbing shared by the provider exporters: reading a spec's
 * input schema as draft 2020-12, resolving local references, detecting
 * recursion, and the small predicates every transform needs. It changes no
 * schema's meaning; provider-specific rewrites live in their own modules.
 */
import { JsonSchema } from "effect"
import type { ToolSpec } from "../../contract/Tool.ts"
import type { SchemaProblem } from "../ProviderExportError.ts"

/** A JSON Schema node (an open record of keywords). */
export type Node = JsonSchema.JsonSchema

/** A plain JSON object (not an array, not null). */
export const isRecord = (u: unknown): u is Readonly<Record<string, unknown>> =>
  typeof u === "object" && u !== null && !Array.isArray(u)

const DRAFT_07 = /^https?:\/\/json-schema\.org\/draft-07\/schema#?$/

/** Draft-07 keywords or shapes that mean something else (or nothing) in 2020-12. */
const usesDraft07Syntax = (node: unknown): boolean => {
  if (Array.isArray(node)) return node.some(usesDraft07Syntax)
  if (!isRecord(node)) return false
  if (Array.isArray(node.items) || "additionalItems" in node || "dependencies" in node) return true
  if (typeof node.$ref === "string" && node.$ref.startsWith("#/definitions/")) return true
  return Object.values(node).some(usesDraft07Syntax)
}

/**
 * A spec's input (or output) schema as draft 2020-12. Imported tools keep the
 * schema their server sent, which may be draft-07 (`$schema` says so, or its
 * tuple `items`, `additionalItems`, `dependencies`, `#/definitions/` refs show
 * it): those are converted with Effect's `JsonSchema.fromSchemaDraft07`, so
 * every exporter reads one dialect. `$schema` itself is dropped.
 */
export const toDraft2020 = (schema: Node): Node => {
  const declared07 = typeof schema.$schema === "string" && DRAFT_07.test(schema.$schema)
  const { $schema: _, ...body } = schema
  if (!declared07 && !usesDraft07Syntax(body)) return body
  const document = JsonSchema.fromSchemaDraft07(body)
  const { $schema: __, ...converted } = document.schema
  return Object.keys(document.definitions).length === 0 ? converted : { ...converted, $defs: document.definitions }
}

/** The spec's input schema in draft 2020-12. */
export const inputSchemaOf = (spec: ToolSpec): Node => toDraft2020(spec.inputSchema)

/** The definition key of a local reference (`#/$defs/X`, `#/definitions/X`); `""` for `#`. */
export const refKey = (ref: string): string | undefined => {
  if (ref === "#") return ""
  const match = /^#\/(\$defs|definitions)\/([^/]+)$/.exec(ref)
  return match === null ? undefined : match[2]!.replaceAll("~1", "/").replaceAll("~0", "~")
}

/** The definitions of a root schema (`$defs`, or draft-07 `definitions`). */
export const definitionsOf = (root: Node): Readonly<Record<string, Node>> => {
  const defs = isRecord(root.$defs) ? root.$defs : isRecord(root.definitions) ? root.definitions : {}
  return defs as Readonly<Record<string, Node>>
}

/** The node a local `$ref` points at, or `undefined` for external or dangling refs. */
export const resolveRef = (root: Node, ref: string): Node | undefined => {
  const key = refKey(ref)
  if (key === undefined) return undefined
  if (key === "") return root
  const target = definitionsOf(root)[key]
  return isRecord(target) ? target : undefined
}

/** Calls `f` on every subschema directly below `node` (not `$defs`), with the keyword path to it. */
export const forEachChild = (node: Node, f: (child: unknown, path: ReadonlyArray<string>) => void): void => {
  for (const [key, value] of Object.entries(node)) {
    switch (key) {
      case "properties":
      case "patternProperties":
      case "dependentSchemas":
        if (isRecord(value)) for (const [name, child] of Object.entries(value)) f(child, [key, name])
        break
      case "allOf":
      case "anyOf":
      case "oneOf":
      case "prefixItems":
        if (Array.isArray(value)) value.forEach((child, i) => f(child, [key, String(i)]))
        break
      case "items":
      case "additionalProperties":
      case "not":
      case "if":
      case "then":
      case "else":
      case "contains":
      case "propertyNames":
      case "unevaluatedProperties":
      case "unevaluatedItems":
        f(value, [key])
        break
    }
  }
}

/**
 * The first reference cycle reachable from the root, as the chain of
 * definition names (`["Node", "Node"]`), or `undefined` when there is none.
 */
export const findRecursion = (root: Node): ReadonlyArray<string> | undefined => {
  const visiting: Array<string> = []
  const done = new Set<string>()
  const visit = (node: unknown): ReadonlyArray<string> | undefined => {
    if (!isRecord(node)) return undefined
    if (typeof node.$ref === "string") {
      const key = refKey(node.$ref)
      if (key !== undefined) {
        const at = visiting.indexOf(key)
        if (at >= 0) return [...visiting.slice(at), key]
        if (!done.has(key)) {
          visiting.push(key)
          const target = key === "" ? root : definitionsOf(root)[key]
          const found = visit(key === "" ? withoutDefs(root) : target)
          visiting.pop()
          done.add(key)
          if (found !== undefined) return found
        }
      }
    }
    let found: ReadonlyArray<string> | undefined
    forEachChild(node as Node, (child) => {
      found ??= visit(child)
    })
    return found
  }
  return visit(withoutDefs(root))
}

const withoutDefs = (root: Node): Node => {
  const { $defs: _, definitions: __, ...rest } = root
  return rest
}

/** The JSON types a node admits through `type` (string or array), or `undefined` when it has none. */
export const typesOf = (node: Node): ReadonlyArray<string> | undefined =>
  typeof node.type === "string"
    ? [node.type]
    : Array.isArray(node.type)
    ? node.type.filter((t): t is string => typeof t === "string")
    : undefined

/** True when the node admits `null` by its `type`, an `enum`/`const` null, or a `{type:"null"}` branch. */
export const admitsNull = (node: Node): boolean =>
  (typesOf(node)?.includes("null") ?? false) ||
  (Array.isArray(node.enum) && node.enum.includes(null)) ||
  ("const" in node && node.const === null) ||
  (Array.isArray(node.anyOf) && node.anyOf.some((b) => isRecord(b) && admitsNull(b))) ||
  (Array.isArray(node.oneOf) && node.oneOf.some((b) => isRecord(b) && admitsNull(b)))

/**
 * Appends keywords a provider cannot take to the description, as the Anthropic
 * SDK does: `"text\n\n{minLength: 1, pattern: \"^a\"}"`, so the model still reads them.
 */
export const describeKeywords = (description: unknown, moved: Readonly<Record<string, unknown>>): string | undefined => {
  const entries = Object.entries(moved)
  const base = typeof description === "string" ? description : undefined
  if (entries.length === 0) return base
  const note = `{${entries.map(([key, value]) => `${key}: ${JSON.stringify(value)}`).join(", ")}}`
  return base === undefined || base.length === 0 ? note : `${base}\n\n${note}`
}

/** The `required` list of an object node (string entries only). */
export const requiredOf = (node: Node): ReadonlyArray<string> =>
  Array.isArray(node.required) ? node.required.filter((r): r is string => typeof r === "string") : []

/** Builds an object with own data properties only (safe for keys like `__proto__`). */
export const fromEntries = (entries: Iterable<readonly [string, unknown]>): Record<string, unknown> =>
  Object.fromEntries(entries)

/** Thrown by a dialect transform on a node it cannot express; caught at its entry point. */
export class Incompatible {
  readonly problem: SchemaProblem
  constructor(problem: SchemaProblem) {
    this.problem = problem
  }
}

/** Stops a transform with a problem at `path`. */
export const fail = (
  path: ReadonlyArray<string>,
  detail: string,
  reason: SchemaProblem["reason"] = "unsupported_schema"
): never => {
  throw new Incompatible({ reason, path, detail })
}
