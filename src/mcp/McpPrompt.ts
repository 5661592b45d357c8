/**
 * Prompts an application offers over MCP beside its tools (`prompts/list`,
 * `prompts/get`): a name, arguments described by a `Schema.Struct` (the
 * `arguments` list clients see is derived from it, and what a client sends is
 * decoded against it before the handler runs), and a handler that returns the
 * messages. `McpServe` serves them (`options.prompts`); `McpConnect`'s
 * `getPrompt` reads them from any server.
 *
 * Prompts are the application's own text: what they return is sent as it is
 * (no tool redaction policy applies). A handler's failure is an MCP error
 * with its message; a defect is an MCP error that says only which prompt
 * failed.
 */
import { Effect, Schema, SchemaAST } from "effect"
import type * as ToolResult from "../contract/ToolResult.ts"

/** A block of a prompt message: text, an image or audio (base64 `data`), or an embedded resource. */
export type Content = ToolResult.ContentBlock

/** One message of a prompt. */
export interface Message {
  readonly role: "user" | "assistant"
  readonly content: Content
}

/** What a handler returns: a text (one user message), messages, or messages with a description. */
export type Result =
  | string
  | ReadonlyArray<Message>
  | { readonly description?: string; readonly messages: ReadonlyArray<Message> }

/** One entry of the prompt's `arguments` list, as `prompts/list` shows it. */
export interface Argument {
  readonly name: string
  readonly title?: string
  readonly description?: string
  readonly required: boolean
}

/** Fields of a prompt's arguments: MCP sends every argument as a string, so each field decodes from one. */
export type Fields = { readonly [key: string]: Schema.Codec<unknown, string, never, never> }

/** Marks a value made by {@link make}. */
export const TypeId = "~tinyagents/McpPrompt"

/** A prompt, ready to serve: its listing and an untyped `get` (arguments decoded inside). */
export interface McpPrompt<R = never> {
  readonly [TypeId]: typeof TypeId
  readonly name: string
  readonly title: string | undefined
  readonly description: string | undefined
  /** The `arguments` list, derived from the schema (field order). */
  readonly arguments: ReadonlyArray<Argument>
  /** Decodes `args` against the schema (failing with the schema's message), then runs the handler. */
  readonly get: (args: { readonly [key: string]: string }) => Effect.Effect<Result, GetFailure, R>
  /** Completion handlers, by argument name. */
  readonly completions: { readonly [name: string]: (input: string) => Effect.Effect<ReadonlyArray<string>, unknown, R> }
}

/** Any prompt, whatever its services. */
export type Any = McpPrompt<unknown>

/** Why `get` failed: arguments the schema refused, or the handler's own failure. */
export type GetFailure =
  | { readonly _tag: "InvalidArguments"; readonly message: string }
  | { readonly _tag: "HandlerFailed"; readonly error: unknown }

/** Whether `u` is a prompt made with {@link make}. */
export const isPrompt = (u: unknown): u is Any => typeof u === "object" && u !== null && TypeId in u

/** The argument list of a struct schema: one entry per field, `required` unless the field is optional. */
const argumentsOf = (schema: Schema.Top | undefined): ReadonlyArray<Argument> => {
  if (schema === undefined) return []
  const declared = schema.ast
  if (declared._tag !== "Objects") return []
  return declared.propertySignatures.map((property) => {
    const annotations = property.type.annotations as { readonly title?: unknown } | undefined
    const description = SchemaAST.resolveDescription(property.type)
    const title = typeof annotations?.title === "string" ? annotations.title : undefined
    return {
      name: String(property.name),
      ...(title === undefined ? {} : { title }),
      ...(description === undefined ? {} : { description }),
      required: property.type.context?.isOptional !== true
    }
  })
}

/**
 * A prompt. `arguments` is a `Schema.Struct` whose fields decode from strings (`Schema.String`,
 * `Schema.Literals`, `Schema.NumberFromString`, `Schema.optionalKey(...)`); a field's `description`
 * and `title` annotations are shown to clients. `completions` suggest values for an argument.
 */
export const make = <const F extends Fields = {}, E = never, R = never>(name: string, options: {
  readonly title?: string
  readonly description?: string
  readonly arguments?: Schema.Struct<F>
  readonly completions?: { readonly [K in keyof F]?: (input: string) => Effect.Effect<ReadonlyArray<string>, unknown, R> }
  readonly handler: (args: Schema.Struct<F>["Type"]) => Effect.Effect<Result, E, R>
}): McpPrompt<R> => {
  const schema = options.arguments ?? Schema.Struct({} as F)
  const decode = Schema.decodeUnknownEffect(schema as Schema.Codec<Schema.Struct<F>["Type"], unknown, never, never>, {
    errors: "all"
  })
  const completions: Record<string, (input: string) => Effect.Effect<ReadonlyArray<string>, unknown, R>> = {}
  for (const [key, complete] of Object.entries(options.completions ?? {})) {
    if (complete !== undefined) completions[key] = complete as (input: string) => Effect.Effect<ReadonlyArray<string>, unknown, R>
  }
  return {
    [TypeId]: TypeId,
    name,
    title: options.title,
    description: options.description,
    arguments: argumentsOf(options.arguments),
    get: (args) =>
      decode(args).pipe(
        Effect.mapError((error): GetFailure => ({ _tag: "InvalidArguments", message: error.message })),
        Effect.flatMap((decoded) =>
          options.handler(decoded).pipe(Effect.mapError((error): GetFailure => ({ _tag: "HandlerFailed", error })))
        )
      ),
    completions
  }
}
