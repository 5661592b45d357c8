/**
 * The model-visible JSON Schema of a tool, derived from its Effect `Schema`:
 * draft 2020-12, root inlined and of `type: "object"`, closed objects,
 * descriptions kept. Export refuses any schema that is not plain JSON
 * (functions, `Redacted`, symbols, bigint, class instances, `Unknown` at the
 * root), naming the offending path: hidden values can never reach a model.
 * Numbers export as `{"type":"number"}` (never the `"NaN"`/`"Infinity"`
 * strings of Effect's JSON codec) and integers as `{"type":"integer"}` (without
 * the safe-integer bounds); see `internal/modelSchema.ts`.
 */
import { Data, JsonSchema, Result, Schema, SchemaAST } from "effect"
import { toModelSchema } from "./internal/modelSchema.ts"

export { toModelCodec } from "./internal/modelSchema.ts"

/** A JSON Schema object as sent to providers. */
export type JsonSchemaObject = JsonSchema.JsonSchema

/** The schema cannot be shown to a model. `path` locates the offending node. */
export class SchemaExportError extends Data.TaggedError("SchemaExportError")<{
  readonly toolName: string
  readonly path: ReadonlyArray<string>
  readonly reason: string
}> {
  override get message(): string {
    const at = this.path.length === 0 ? "the root" : JSON.stringify(this.path.join("."))
    return `tool ${this.toolName}: its schema cannot be shown to a model: at ${at}: ${this.reason}`
  }
}

export interface ExportOptions {
  /** Unknown keys are rejected (`additionalProperties: false`) unless this is `true`. */
  readonly allowUnknownKeys?: boolean
}

/**
 * Exports a tool's input (or output) schema as canonical JSON Schema 2020-12.
 * The root must be an object.
 */
export const toJsonSchema = (
  toolName: string,
  schema: Schema.Top,
  options: ExportOptions = {}
): Result.Result<JsonSchemaObject, SchemaExportError> => {
  const problem = findNonJson(schema.ast)
  if (problem !== undefined) return Result.fail(new SchemaExportError({ toolName, ...problem }))
  if (isEmptyStruct(schema.ast)) {
    // Effect renders `Struct({})` as "any non-null value"; a tool without parameters means an empty object.
    const description = schema.ast.annotations?.["description"]
    return Result.succeed({
      type: "object",
      properties: {},
      additionalProperties: options.allowUnknownKeys === true,
      ...(typeof description === "string" ? { description } : {})
    })
  }
  // The same model schema `ToolInput` decodes with: finite numbers, integers
  // without safe-integer bounds, enums as plain `enum` lists.
  const document = Schema.toJsonSchemaDocument(toModelSchema(schema), {
    onExcessProperty: options.allowUnknownKeys === true ? "ignore" : "error",
    referencePolicy: () => undefined
  })
  return inlineRoot(toolName, document)
}

/** Inlines a root `$ref` and keeps remaining definitions (recursive ones) under `$defs`. */
const inlineRoot = (
  toolName: string,
  document: JsonSchema.Document<"draft-2020-12">
): Result.Result<JsonSchemaObject, SchemaExportError> => {
  let root = document.schema
  const definitions = document.definitions
  // Only recursive schemas keep references (the policy inlines the rest); their
  // definitions stay, since the body refers back to them.
  const ref = typeof root.$ref === "string" && root.$ref.startsWith("#/$defs/")
    ? root.$ref.slice("#/$defs/".length).replaceAll("~1", "/").replaceAll("~0", "~")
    : undefined
  const target = ref === undefined ? undefined : definitions[ref]
  if (target !== undefined) {
    const { $ref: _, ...siblings } = root
    root = { ...target, ...siblings }
  }
  if (root.type !== "object") {
    return Result.fail(
      new SchemaExportError({ toolName, path: [], reason: "the root must be an object schema (a Schema.Struct)" })
    )
  }
  return Result.succeed(Object.keys(definitions).length === 0 ? root : { ...root, $defs: definitions })
}

/** True for `Schema.Struct({})`: a tool without parameters. */
export const isEmptyStruct = (ast: SchemaAST.AST): boolean =>
  ast._tag === "Objects" && ast.propertySignatures.length === 0 && ast.indexSignatures.length === 0

interface Problem {
  readonly path: ReadonlyArray<string>
  readonly reason: string
}

/**
 * Finds the first node that is not plain JSON. The encoded side (what the model
 * sends) must be JSON; the decoded side must not be `Redacted`.
 */
export const findNonJson = (ast: SchemaAST.AST): Problem | undefined => {
  if (ast._tag === "Unknown" || ast._tag === "Any") {
    return { path: [], reason: "the root accepts any value; use a Schema.Struct" }
  }
  return walk(SchemaAST.toEncoded(ast), [], new Set(), "encoded") ?? walk(ast, [], new Set(), "type")
}

const redactedId = "effect/schema/Redacted"

const representationId = (ast: SchemaAST.AST): string | undefined => {
  const representation = ast.annotations?.["representation"]
  return typeof representation === "object" && representation !== null && "id" in representation
    ? String(representation.id)
    : undefined
}

const describe = (ast: SchemaAST.AST): string => {
  const expected = ast.annotations?.["expected"] ?? ast.annotations?.["identifier"]
  return typeof expected === "string" ? expected : ast._tag
}

const walk = (
  ast: SchemaAST.AST,
  path: ReadonlyArray<string>,
  seen: Set<SchemaAST.AST>,
  side: "encoded" | "type"
): Problem | undefined => {
  if (seen.has(ast)) return undefined
  seen.add(ast)
  if (representationId(ast) === redactedId) {
    return { path, reason: "a Redacted value is a secret; provide it through a service, not the model" }
  }
  switch (ast._tag) {
    case "Declaration":
      if (side === "encoded") {
        return {
          path,
          reason: `${describe(ast)} is not plain JSON (functions, class instances and dates have no JSON form)`
        }
      }
      return firstOf(ast.typeParameters, (p) => walk(p, path, seen, side))
    case "BigInt":
      return side === "encoded" ? { path, reason: "bigint is not JSON" } : undefined
    case "Symbol":
    case "UniqueSymbol":
      return side === "encoded" ? { path, reason: "symbols are not JSON" } : undefined
    case "Void":
    case "Undefined":
      return side === "encoded" ? { path, reason: "undefined is not JSON; use Schema.optionalKey" } : undefined
    case "ObjectKeyword":
      return side === "encoded" ? { path, reason: "Schema.Object admits functions; use a Schema.Struct" } : undefined
    case "Literal":
      return typeof ast.literal === "bigint" && side === "encoded" ? { path, reason: "bigint literals are not JSON" } : undefined
    case "Objects":
      return firstOf(ast.propertySignatures, (p) => walk(p.type, [...path, String(p.name)], seen, side)) ??
        firstOf(ast.indexSignatures, (s) => walk(s.type, [...path, "*"], seen, side))
    case "Arrays":
      return firstOf(ast.elements, (e, i) => walk(e, [...path, String(i)], seen, side)) ??
        firstOf(ast.rest, (e) => walk(e, [...path, "[]"], seen, side))
    case "Union":
      // `Schema.optional` adds `undefined` to a union: its JSON form is an absent key.
      return firstOf(ast.types, (t) => t._tag === "Undefined" ? undefined : walk(t, path, seen, side))
    case "Suspend":
      return walk(ast.thunk(), path, seen, side)
    default:
      return undefined
  }
}

const firstOf = <A>(
  items: ReadonlyArray<A>,
  f: (a: A, i: number) => Problem | undefined
): Problem | undefined => {
  for (let i = 0; i < items.length; i++) {
    const found = f(items[i]!, i)
    if (found !== undefined) return found
  }
  return undefined
}
