/**
 * A tool: a name, a description, an input `Schema` of what the model may
 * choose, an optional output schema, safety and execution metadata, and an
 * Effect handler whose requirements are hidden services declared in `services`.
 * Defining a tool has no side effects; `spec` derives what exporters read.
 */
import {
  type Context,
  Data,
  Duration,
  type Effect,
  JsonSchema,
  Predicate,
  Result,
  type Schedule,
  Schema,
  SchemaRepresentation
} from "effect"
import type { Safety } from "./Safety.ts"
import type { ToolError } from "./ToolError.ts"
import type { ModelOutput } from "./ToolResult.ts"
import * as ToolName from "./ToolName.ts"
import * as ToolSchema from "./ToolSchema.ts"

const TypeId = "~tinyagents/Tool" as const

/** The identifiers of a list of services: what a handler may require. */
export type ServicesOf<S extends ReadonlyArray<Context.Key<unknown, unknown>>> = {
  [K in keyof S]: S[K] extends Context.Key<infer I, unknown> ? I : never
}[number]

type OutputType<O> = O extends Schema.Top ? O["Type"] : unknown

/**
 * The errors a handler may fail with: the tool's declared `failure` and the
 * runtime's `ToolError`s. Anything else is a compile error in `make`; at run time
 * an undeclared failure (from untyped code) becomes a repairable `ToolFailure`
 * naming only the tool and the error's tag, never its message.
 */
export type Failures<F> = ToolError | (F extends Schema.Top ? F["Type"] : never)

/** A tool. `R` is the set of hidden services its handler uses. */
export interface Tool<
  out Name extends string = string,
  in out Input extends Schema.Top = Schema.Top,
  out Output extends Schema.Top | undefined = Schema.Top | undefined,
  out E = unknown,
  out R = unknown
> {
  readonly [TypeId]: typeof TypeId
  /** The name as given (canonical for `make`, foreign for imported tools). */
  readonly name: Name
  /** A human-readable display name (MCP's `title`); providers that have none ignore it. */
  readonly title: string | undefined
  readonly description: string
  readonly input: Input
  readonly output: Output
  /** Declared user-facing failures: a handler error matching it renders for the model. */
  readonly failure: Schema.Top | undefined
  /** The hidden services the handler uses. */
  readonly services: ReadonlyArray<Context.Key<unknown, unknown>>
  readonly safety: Safety
  readonly timeout: Duration.Duration | undefined
  /**
   * Retry schedule for retryable errors ({@link mayRetry}: a timeout only for an idempotent tool); a
   * registry refuses it unless the tool is idempotent or keyed.
   */
  readonly retry: Schedule.Schedule<unknown, ToolError> | undefined
  /**
   * Idempotency key of a call, computed from its input. A key that succeeded is not applied again:
   * a repeat (or retry) returns the stored result. The handler gets the key
   * (`ToolCallContext.idempotencyKey`) to pass downstream, the only place that can tell whether an
   * attempt that failed or timed out applied it.
   */
  readonly idempotency: ((input: Input["Type"]) => string) | undefined
  /** What the model reads for an output (text or content blocks); default: the encoded output as JSON text. */
  readonly toModelOutput: ((output: unknown) => ModelOutput) | undefined
  readonly options: ToolOptions
  /** Model-visible JSON Schemas given as is (imported tools, converted to 2020-12); otherwise derived. */
  readonly jsonSchema:
    | { readonly input: ToolSchema.JsonSchemaObject; readonly output?: ToolSchema.JsonSchemaObject }
    | undefined
  readonly handler: (input: Input["Type"]) => Effect.Effect<OutputType<Output>, E, R>
}

/** Execution options that are not about safety. */
export interface ToolOptions {
  /** Accept and drop keys the input schema does not declare. Default `false`: unknown keys are an error. */
  readonly allowUnknownKeys?: boolean
  /** Model-facing text longer than this (characters) is stored as an artifact. */
  readonly artifactThreshold?: number
  /** Never runs at the same time as another exclusive tool. */
  readonly exclusive?: boolean
  /** A successful call ends the agent loop with this tool's output as the answer. */
  readonly returnDirect?: boolean
}

/**
 * Any tool: the existential of `Tool`, for registries and executors that hold tools of every
 * shape. Two parameters are `any` on purpose: the input is invariant (the handler reads it, the
 * schema makes it), and the requirements must stay open so that a registry's `R` is inferred from
 * its tools; the output and error take their widest types.
 */
export type Any = Tool<string, any, Schema.Top | undefined, unknown, any>

/** The hidden services a tool (or a union of tools) needs. */
export type Services<T> = T extends Tool<string, any, Schema.Top | undefined, unknown, infer R> ? R : never

export interface MakeOptions<
  Input extends Schema.Top,
  Output extends Schema.Top | undefined,
  E,
  S extends ReadonlyArray<Context.Key<unknown, unknown>>,
  F extends Schema.Top | undefined = undefined,
  R = ServicesOf<S>
> extends ToolOptions {
  /** A human-readable display name (MCP's `title`, e.g. "Read a file"); the name stays the identifier. */
  readonly title?: string
  /** What the tool does, what it refuses, its side effects: the model reads this. */
  readonly description: string
  /** What the model may choose, and nothing else. */
  readonly input: Input
  readonly output?: Output
  /** User-facing failures the handler declares (a `Schema.TaggedError`, or a union): the model reads them. */
  readonly failure?: F
  /** The hidden services the handler uses: the type checker holds the handler to them. */
  readonly services?: S
  readonly safety?: Safety
  /** Each attempt's timeout (default: the executor's `defaultTimeout`); paused while a question (`Ask`) is open. */
  readonly timeout?: Duration.Input
  readonly retry?: Schedule.Schedule<unknown, ToolError>
  /** The call's idempotency key, from its input: a key that succeeded is not applied again (see `Tool.idempotency`). */
  readonly idempotency?: (input: Input["Type"]) => string
  /** What the model reads for an output: text, or content blocks (text and images). */
  readonly toModelOutput?: (output: OutputType<Output>) => ModelOutput
  readonly handler: (input: Input["Type"]) => Effect.Effect<OutputType<Output>, E, R>
}

/**
 * The type `make` reports a handler against when it fails with `E`, an error that is neither the
 * tool's declared `failure` nor a `ToolError`: declare `E` in `failure`, or map it to a
 * `ToolError` (`ToolError.repairable(...)`, `ToolError.retryable(...)`).
 */
export interface HandlerFailsWithUndeclaredError<E> {
  readonly "~tinyagents/HandlerFailsWithUndeclaredError": E
}

/**
 * The type `make` reports a handler against when it uses `R`, a service not listed in
 * `services`: list it there (the executor then requires it).
 */
export interface HandlerUsesUndeclaredService<R> {
  readonly "~tinyagents/HandlerUsesUndeclaredService": R
}

type IsAny<T> = 0 extends 1 & T ? true : false

/** Nothing when the handler keeps to its declared failures and services; otherwise the mistake, named. */
type HandlerCheck<E, F, R, S extends ReadonlyArray<Context.Key<unknown, unknown>>> =
  & (IsAny<E> extends true ? unknown
    : [Exclude<E, Failures<F>>] extends [never] ? unknown
    : { readonly handler: HandlerFailsWithUndeclaredError<Exclude<E, Failures<F>>> })
  & (IsAny<R> extends true ? unknown
    : [Exclude<R, ServicesOf<S>>] extends [never] ? unknown
    : { readonly handler: HandlerUsesUndeclaredService<Exclude<R, ServicesOf<S>>> })

/**
 * Defines a tool. `name` must be canonical snake_case (checked when a registry
 * is built). The handler may only require the services listed in `services`,
 * and may only fail with its declared `failure` or a `ToolError`; a handler that
 * breaks either rule is a compile error naming `HandlerUsesUndeclaredService<R>`
 * or `HandlerFailsWithUndeclaredError<E>`.
 */
export const make = <
  const Name extends string,
  Input extends Schema.Top,
  E = never,
  const S extends ReadonlyArray<Context.Key<unknown, unknown>> = [],
  Output extends Schema.Top | undefined = undefined,
  F extends Schema.Top | undefined = undefined,
  R = never
>(
  name: Name,
  options: MakeOptions<Input, Output, E, S, F, R> & HandlerCheck<E, F, R, S>
): Tool<Name, Input, Output, E, ServicesOf<S>> => ({
  [TypeId]: TypeId,
  name,
  title: options.title,
  description: options.description,
  input: options.input,
  output: options.output as Output,
  failure: options.failure,
  services: options.services ?? [],
  safety: options.safety ?? {},
  timeout: options.timeout === undefined ? undefined : Duration.fromInputUnsafe(options.timeout),
  retry: options.retry,
  idempotency: options.idempotency,
  toModelOutput: options.toModelOutput as ((output: unknown) => ModelOutput) | undefined,
  options: {
    ...(options.allowUnknownKeys === undefined ? {} : { allowUnknownKeys: options.allowUnknownKeys }),
    ...(options.artifactThreshold === undefined ? {} : { artifactThreshold: options.artifactThreshold }),
    ...(options.exclusive === undefined ? {} : { exclusive: options.exclusive }),
    ...(options.returnDirect === undefined ? {} : { returnDirect: options.returnDirect })
  },
  jsonSchema: undefined,
  // HandlerCheck holds R to the declared services
  handler: options.handler as (input: Input["Type"]) => Effect.Effect<OutputType<Output>, E, ServicesOf<S>>
})

/** True for values made by this module. */
export const isTool = (u: unknown): u is Any => Predicate.hasProperty(u, TypeId)

// ---------------------------------------------------------------------------
// imported (dynamic) tools
// ---------------------------------------------------------------------------

/** A JSON Schema that Effect's importer cannot turn into a validator. */
export class SchemaImportError extends Data.TaggedError("SchemaImportError")<{
  readonly toolName: string
  readonly reason: string
}> {
  override get message(): string {
    return `tool ${JSON.stringify(this.toolName)}: its JSON Schema cannot be imported: ${this.reason}`
  }
}

export interface FromJsonSchemaOptions<
  E,
  S extends ReadonlyArray<Context.Key<unknown, unknown>>,
  R = ServicesOf<S>
> extends ToolOptions {
  /** A human-readable display name (an MCP server's `title`). */
  readonly title?: string
  readonly description: string
  /** The input JSON Schema as the server supplied it (draft 2020-12, or draft-07 when `$schema` says so). */
  readonly inputSchema: ToolSchema.JsonSchemaObject
  readonly outputSchema?: ToolSchema.JsonSchemaObject
  readonly services?: S
  readonly safety?: Safety
  readonly timeout?: Duration.Input
  readonly retry?: Schedule.Schedule<unknown, ToolError>
  /** How to treat `pattern` keywords: apply them (default) or ignore them (untrusted servers). */
  readonly patterns?: "apply" | "ignore"
  /** What the model reads for an output; default: the output as JSON text. */
  readonly toModelOutput?: (output: unknown) => ModelOutput
  readonly handler: (input: { readonly [key: string]: unknown }) => Effect.Effect<unknown, E, R>
}

/** A tool defined by a raw JSON Schema, as MCP servers and BFCL supply them. */
export type Dynamic<E = unknown, R = unknown> = Tool<string, Schema.Top, Schema.Top | undefined, E, R>

/**
 * Defines a tool from a raw JSON Schema. The schema is imported with Effect's
 * `SchemaRepresentation.fromJsonSchemaDocument`, so arguments are validated
 * before the handler runs. The name may be foreign (`math.factorial`): the
 * registry maps it to a canonical alias. The handler may fail with `ToolError`s
 * only and use only the services in `services` (checked as in {@link make}).
 *
 * What the model is shown is what is enforced: unless the tool sets
 * `allowUnknownKeys: true`, every object schema that lists `properties` and says
 * nothing about other keys (no `additionalProperties`, `unevaluatedProperties`
 * or `patternProperties`) is closed with `additionalProperties: false`, in the
 * schema the model sees and in the one arguments are checked against, as the
 * strict provider exports close it. Objects whose keys other subschemas may add
 * (`allOf`, `anyOf`/`oneOf` beside `properties`, `$ref`, `if`/`then`/`else`,
 * `dependentSchemas`) stay as given; so does a free-form object below the root
 * (`{"type":"object"}`, or an empty `properties`, as Python's `dict` is often
 * written); a root with empty `properties` is a tool that takes no keys.
 */
export const fromJsonSchema = <
  E = never,
  const S extends ReadonlyArray<Context.Key<unknown, unknown>> = [],
  R = never
>(
  name: string,
  options: FromJsonSchemaOptions<E, S, R> & HandlerCheck<E, undefined, R, S>
): Result.Result<Dynamic<E, ServicesOf<S>>, SchemaImportError> => {
  const toDocument = (schema: ToolSchema.JsonSchemaObject) =>
    schema.$schema === JsonSchema.META_SCHEMA_URI_DRAFT_07 || schema.$schema === "http://json-schema.org/draft-07/schema"
      ? JsonSchema.fromSchemaDraft07(schema)
      : JsonSchema.fromSchemaDraft2020_12(schema)
  const importOne = (document: JsonSchema.Document<"draft-2020-12">): Schema.Top =>
    SchemaRepresentation.fromJsonSchemaDocument(document, { patterns: options.patterns ?? "apply" })
  /**
   * The schema as the model sees it: draft 2020-12, with the `$schema` the tool declared when it
   * declared 2020-12 (`Tool.spec` leaves it out of the spec; MCP serving keeps it).
   */
  const visible = (
    document: JsonSchema.Document<"draft-2020-12">,
    declared: unknown
  ): ToolSchema.JsonSchemaObject => {
    const { $schema: _, ...body } = document.schema
    const root = declared === draft2020 ? { $schema: draft2020, ...body } : body
    return Object.keys(document.definitions).length === 0 ? root : { ...root, $defs: document.definitions }
  }
  if (options.inputSchema.type !== "object") {
    return Result.fail(new SchemaImportError({ toolName: name, reason: "the root must be an object schema" }))
  }
  let input: Schema.Top
  let output: Schema.Top | undefined
  let inputDocument: JsonSchema.Document<"draft-2020-12">
  let outputDocument: JsonSchema.Document<"draft-2020-12"> | undefined
  try {
    // Inputs are what a model sends: closed as shown. Outputs are what the tool returns: as given.
    inputDocument = options.allowUnknownKeys === true
      ? toDocument(options.inputSchema)
      : closeObjects(toDocument(options.inputSchema))
    outputDocument = options.outputSchema === undefined ? undefined : toDocument(options.outputSchema)
    input = importOne(inputDocument)
    output = outputDocument === undefined ? undefined : importOne(outputDocument)
  } catch (error) {
    return Result.fail(
      new SchemaImportError({ toolName: name, reason: error instanceof Error ? error.message : String(error) })
    )
  }
  return Result.succeed({
    [TypeId]: TypeId,
    name,
    title: options.title,
    description: options.description,
    input,
    output,
    failure: undefined,
    services: options.services ?? [],
    safety: options.safety ?? {},
    timeout: options.timeout === undefined ? undefined : Duration.fromInputUnsafe(options.timeout),
    retry: options.retry,
    idempotency: undefined,
    toModelOutput: options.toModelOutput,
    options: {
      ...(options.allowUnknownKeys === undefined ? {} : { allowUnknownKeys: options.allowUnknownKeys }),
      ...(options.artifactThreshold === undefined ? {} : { artifactThreshold: options.artifactThreshold }),
      ...(options.exclusive === undefined ? {} : { exclusive: options.exclusive }),
      ...(options.returnDirect === undefined ? {} : { returnDirect: options.returnDirect })
    },
    jsonSchema: {
      input: visible(inputDocument, options.inputSchema.$schema),
      ...(outputDocument === undefined ? {} : { output: visible(outputDocument, options.outputSchema?.$schema) })
    },
    handler: options.handler as Dynamic<E, ServicesOf<S>>["handler"]
  })
}

type JsonNode = { readonly [key: string]: unknown }

const isNode = (u: unknown): u is JsonNode => typeof u === "object" && u !== null && !Array.isArray(u)

/** Keywords whose value is one subschema, a list of them, or a map of them (draft 2020-12). */
const oneSchema = [
  "items",
  "contains",
  "additionalProperties",
  "propertyNames",
  "not",
  "if",
  "then",
  "else",
  "unevaluatedItems",
  "unevaluatedProperties",
  "contentSchema"
]
const schemaLists = ["allOf", "anyOf", "oneOf", "prefixItems"]
const schemaMaps = ["properties", "patternProperties", "dependentSchemas", "$defs"]

/** Keywords beside `properties` through which other subschemas may admit more keys. */
const widening = ["allOf", "anyOf", "oneOf", "$ref", "$dynamicRef", "if", "then", "else", "dependentSchemas"]

/**
 * True when a node lists properties and is silent about every other key. An empty
 * `properties` below the root (`{"type":"object","properties":{}}`, how Python's
 * `dict` is often written) is a free-form object, as `{"type":"object"}` is; at the
 * root it is a tool without parameters, which takes no keys.
 */
const closable = (node: JsonNode, root: boolean): boolean =>
  isNode(node.properties) && (root || Object.keys(node.properties).length > 0) &&
  node.additionalProperties === undefined && node.unevaluatedProperties === undefined &&
  node.patternProperties === undefined && !widening.some((key) => node[key] !== undefined)

/**
 * A branch of `parent`'s `key` list is "open" (merged with its siblings or its
 * parent's properties, so closing it would refuse keys they admit): every member
 * of `allOf`, and members of `anyOf`/`oneOf` when the parent has object keywords.
 */
const opensBranches = (parent: JsonNode, key: string): boolean =>
  key === "allOf" ||
  ((key === "anyOf" || key === "oneOf") &&
    (parent.properties !== undefined || parent.patternProperties !== undefined ||
      parent.additionalProperties !== undefined))

const definitionKey = (ref: unknown): string | undefined => {
  if (typeof ref !== "string") return undefined
  const match = /^#\/\$defs\/([^/]+)$/.exec(ref)
  return match === null ? undefined : match[1]!.replaceAll("~1", "/").replaceAll("~0", "~")
}

/**
 * Calls `visit` on every subschema of `node` (itself included) with whether it sits
 * in an open position (see {@link opensBranches}); `rewrite` rebuilds the node from
 * its rewritten children. Schemas are as deep as their author made them: the
 * recursion is fine (Effect's importer recurses the same way).
 */
const mapSchema = (
  node: unknown,
  open: boolean,
  rewrite: (node: JsonNode, open: boolean) => JsonNode
): unknown => {
  if (!isNode(node)) return node
  let out: Record<string, unknown> | undefined
  const set = (key: string, value: unknown) => {
    if (value === node[key]) return
    out ??= { ...node }
    out[key] = value
  }
  for (const key of oneSchema) if (node[key] !== undefined) set(key, mapSchema(node[key], false, rewrite))
  for (const key of schemaLists) {
    const list = node[key]
    if (!Array.isArray(list)) continue
    const branchOpen = opensBranches(node, key)
    const mapped = list.map((branch) => mapSchema(branch, branchOpen, rewrite))
    if (mapped.some((branch, i) => branch !== list[i])) set(key, mapped)
  }
  for (const key of schemaMaps) {
    const map = node[key]
    if (!isNode(map)) continue
    let changed = false
    const mapped = Object.fromEntries(Object.entries(map).map(([name, child]) => {
      const next = mapSchema(child, false, rewrite)
      if (next !== child) changed = true
      return [name, next]
    }))
    if (changed) set(key, mapped)
  }
  return rewrite(out ?? node, open)
}

/**
 * The document with every closable object schema closed (`additionalProperties:
 * false`), except in open positions and in definitions referenced from one.
 */
const closeObjects = (document: JsonSchema.Document<"draft-2020-12">): JsonSchema.Document<"draft-2020-12"> => {
  const definitions = document.definitions as Readonly<Record<string, unknown>>
  // Definitions reached by `$ref` from an open position stay as given (to a fixpoint).
  const openDefinitions = new Set<string>()
  const collect = (node: JsonNode, open: boolean): JsonNode => {
    const key = open ? definitionKey(node.$ref) : undefined
    if (key !== undefined && !openDefinitions.has(key)) {
      openDefinitions.add(key)
      mapSchema(definitions[key], true, collect)
    }
    return node
  }
  mapSchema(document.schema, false, collect)
  for (const [name, definition] of Object.entries(definitions)) mapSchema(definition, openDefinitions.has(name), collect)
  const close = (node: JsonNode, open: boolean): JsonNode =>
    !open && closable(node, false) ? { ...node, additionalProperties: false } : node
  const schema = mapSchema(document.schema, false, close) as JsonNode
  return {
    ...document,
    schema: (closable(schema, true) ? { ...schema, additionalProperties: false } : schema) as typeof document.schema,
    definitions: Object.fromEntries(
      Object.entries(definitions).map(([name, definition]) => [
        name,
        mapSchema(definition, openDefinitions.has(name), close)
      ])
    ) as typeof document.definitions
  }
}

// ---------------------------------------------------------------------------
// spec
// ---------------------------------------------------------------------------

/** Everything exporters and policy read about a tool. Derived, never written by hand. */
export interface ToolSpec {
  /** Canonical name: what events, stores and provider exports use. */
  readonly name: ToolName.ToolName
  /** The foreign name an imported tool came with, when it differs. */
  readonly originalName?: string
  /** A human-readable display name (MCP's `title`); only the MCP export shows it. */
  readonly title?: string
  readonly description: string
  /** Canonical model-visible input schema (JSON Schema 2020-12, root object). */
  readonly inputSchema: ToolSchema.JsonSchemaObject
  readonly outputSchema?: ToolSchema.JsonSchemaObject
  /** Keys of the hidden services the handler uses (never model-visible). */
  readonly injected: ReadonlyArray<string>
  readonly safety: Safety
  /** Milliseconds; `undefined` means the runtime default. */
  readonly timeout?: number
  /** True when the tool declares a retry schedule. */
  readonly retry: boolean
  /** What a retry may rely on ({@link retrySafety}): `idempotent` (even when keyed), `keyed`, or `none`. */
  readonly idempotency: RetrySafety
  readonly options: ToolOptions
}

/**
 * What running a tool again may rely on. `idempotent` (`safety.idempotent`, keyed or not): running
 * it again is harmless. `keyed` (an `idempotency` key, not idempotent): a key that succeeded is not
 * applied again (its stored result answers), and the handler gets the key to deduplicate
 * downstream, but an attempt that timed out may have applied its effect there. `none`: neither.
 */
export type RetrySafety = "idempotent" | "keyed" | "none"

/** The {@link RetrySafety} of a tool (also its `ToolSpec.idempotency`). */
export const retrySafety = (tool: Pick<Any, "safety" | "idempotency">): RetrySafety =>
  tool.safety.idempotent === true ? "idempotent" : tool.idempotency !== undefined ? "keyed" : "none"

/**
 * Whether an attempt that may have had its effect and left no result (it timed out; in a durable
 * run, its process died) may run again: only an idempotent tool's. Anything else reports it as
 * "may or may not have completed".
 */
export const mayRunAgain = (safety: RetrySafety): boolean => safety === "idempotent"

/**
 * The one rule for automatic retries: whether a failed attempt of a tool with `safety` may run
 * again under its `retry` schedule. Only a retryable error (`disposition: "retry"`), only for an
 * idempotent or keyed tool (registration refuses a schedule on any other, `UnsafeRetry`), and a
 * timeout only when {@link mayRunAgain}. A keyed tool that is not idempotent retries only a
 * `ToolTransient` (its handler saying the effect did not happen): not its timeout, and not another
 * retryable error (a retryable `StoreFailed` may come after the effect was applied downstream).
 */
export const mayRetry = (safety: RetrySafety, error: ToolError): boolean =>
  error.disposition === "retry" && (safety === "idempotent" || (safety === "keyed" && error._tag === "ToolTransient"))

/** The canonical name of a tool: its own name, or the sanitised alias of a foreign name. */
export const canonicalName = (tool: Any): Result.Result<ToolName.ToolName, ToolName.InvalidToolName> =>
  tool.jsonSchema !== undefined && !ToolName.isToolName(tool.name) ? ToolName.sanitize(tool.name) : ToolName.validate(tool.name)

/** The URI of JSON Schema draft 2020-12, the dialect of every spec's schemas. */
const draft2020 = "https://json-schema.org/draft/2020-12/schema"

/** A schema without its `$schema` (a spec's schemas are always 2020-12 and never say so). */
const withoutDialect = (schema: ToolSchema.JsonSchemaObject | undefined): ToolSchema.JsonSchemaObject | undefined => {
  if (schema === undefined || !("$schema" in schema)) return schema
  const { $schema: _, ...body } = schema
  return body as ToolSchema.JsonSchemaObject
}

/** Derives a tool's spec, exporting its schemas. */
export const spec = (
  tool: Any
): Result.Result<ToolSpec, ToolName.InvalidToolName | ToolSchema.SchemaExportError> =>
  Result.gen(function*() {
    const name = yield* canonicalName(tool)
    const imported = tool.jsonSchema
    const inputSchema = withoutDialect(imported?.input) ??
      (yield* ToolSchema.toJsonSchema(tool.name, tool.input, { allowUnknownKeys: tool.options.allowUnknownKeys === true }))
    const outputSchema = imported !== undefined
      ? withoutDialect(imported.output)
      : tool.output === undefined
      ? undefined
      : yield* ToolSchema.toJsonSchema(tool.name, tool.output, { allowUnknownKeys: true })
    return {
      name,
      ...(name === tool.name ? {} : { originalName: tool.name }),
      ...(tool.title === undefined ? {} : { title: tool.title }),
      description: tool.description,
      inputSchema,
      ...(outputSchema === undefined ? {} : { outputSchema }),
      injected: tool.services.map((service) => service.key),
      safety: tool.safety,
      ...(tool.timeout === undefined ? {} : { timeout: Duration.toMillis(tool.timeout) }),
      retry: tool.retry !== undefined,
      idempotency: retrySafety(tool),
      options: tool.options
    }
  })
