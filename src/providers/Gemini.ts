/**
 * Google Gemini: function declarations (`parametersJsonSchema` by default,
 * or `parameters` in Google's OpenAPI 3.0 subset on request), `functionCall`
 * parts as `ToolCall`s (a missing `id` becomes a deterministic one from the
 * call's position and name), and `functionResponse` parts answering them.
 * Wire types follow googleapis/js-genai `src/types.ts` (`FunctionDeclaration`,
 * `Schema`, `FunctionCall`, `FunctionResponse`, `Part`). Code execution parts
 * (`executableCode`, `codeExecutionResult`) run on Google's side and are
 * passthrough. Outbound types use mutable arrays and the SDK-compatible
 * `Type` enum, so they assign to `@google/genai`'s `Tool` and `Content`;
 * inbound types have every field optional, as the SDK's, so its
 * `GenerateContentResponse`, `Content` and `Part[]` pass as they are.
 */
import { Result } from "effect"
import { Base64 } from "effect/encoding"
import type { ToolSpec } from "../contract/Tool.ts"
import type { ToolCall } from "../contract/ToolCall.ts"
import type { ToolResult } from "../contract/ToolResult.ts"
import { type Media, resourceText, textOf, valueWithoutMedia } from "./internal/content.ts"
import * as ExportTools from "./internal/exportTools.ts"
import * as GeminiOpenApi from "./internal/geminiOpenApi.ts"
import * as Names from "./internal/names.ts"
import * as Output from "./internal/output.ts"
import { inputSchemaOf, isRecord } from "./internal/schema.ts"
import type { ProviderCalls } from "./ProviderCalls.ts"
import { fromProblem, ProviderExportError } from "./ProviderExportError.ts"

// ---------------------------------------------------------------------------
// wire types
// ---------------------------------------------------------------------------

/** Google's `Schema`: the OpenAPI 3.0 subset of `parameters`. */
export type Schema = GeminiOpenApi.Schema

/**
 * Google's `Type` enum, for types only (at runtime a `type` is the plain
 * string, e.g. `"OBJECT"`). An enum, not string literals, so that `Schema`
 * assigns to the SDK's: TypeScript relates two enums of the same name member
 * by member, while a string literal never assigns to an enum. It compares
 * with plain strings (`schema.type === "OBJECT"`).
 */
export type Type = GeminiOpenApi.Type

/** `FunctionDeclaration`: `parameters` and `parametersJsonSchema` are mutually exclusive. */
export interface FunctionDeclaration {
  readonly name: string
  readonly description?: string
  readonly parameters?: Schema
  readonly parametersJsonSchema?: { readonly [key: string]: unknown }
}

/** `Tool` with function declarations (a mutable array, as the SDK's type has). */
export interface Tool {
  readonly functionDeclarations: Array<FunctionDeclaration>
}

/** `FunctionCall`: `args` is an already-parsed object; `id` may be missing. */
export interface FunctionCall {
  readonly id?: string
  readonly name?: string
  readonly args?: { readonly [key: string]: unknown }
}

/** `FunctionResponsePart` of a multimodal function response (its `FunctionResponseBlob`). */
export interface FunctionResponsePart {
  readonly inlineData: { readonly mimeType: string; readonly data: string }
}

/**
 * `FunctionResponse` as {@link toolMessages} writes it: `response` holds
 * `output` or `error`, and `name` is always set (the API wants it; the SDK's
 * type leaves it optional, and a `Part` read back may lack it).
 */
export interface FunctionResponse {
  readonly id?: string
  readonly name: string
  readonly response: { readonly [key: string]: unknown }
  readonly parts?: Array<FunctionResponsePart>
}

/**
 * `Part` (the fields read here, and the usual others), every field optional
 * as in the SDK and without an index signature, so the SDK's `Part` assigns.
 * Enum-typed SDK fields (`codeExecutionResult.outcome`, `executableCode.language`)
 * are read as strings.
 */
export interface Part {
  readonly text?: string
  readonly thought?: boolean
  readonly thoughtSignature?: string
  readonly inlineData?: { readonly mimeType?: string; readonly data?: string }
  readonly functionCall?: FunctionCall
  readonly functionResponse?: Partial<Omit<FunctionResponse, "parts">>
  readonly executableCode?: { readonly code?: string; readonly language?: string }
  readonly codeExecutionResult?: { readonly outcome?: string; readonly output?: string }
}

/** `Content` as read, over the part type you have: this module's `Part` by default, or the SDK's. */
export interface Content<P extends Part = Part> {
  readonly role?: string
  readonly parts?: ReadonlyArray<P>
}

/** `GenerateContentResponse` (the fields read here), over the part type you have. */
export interface GenerateContentResponse<P extends Part = Part> {
  readonly candidates?: ReadonlyArray<{ readonly content?: Content<P>; readonly index?: number }>
}

/** The user `Content` {@link toolMessages} builds: one `functionResponse` part per result. */
export interface FunctionResponseContent {
  readonly role: "user"
  readonly parts: Array<{ readonly functionResponse: FunctionResponse }>
}

// ---------------------------------------------------------------------------
// definitions
// ---------------------------------------------------------------------------

/** Export options. */
export interface ExportOptions {
  /**
   * `"json-schema"` (default): the canonical schema as `parametersJsonSchema`.
   * `"openapi"`: `parameters` in Google's OpenAPI 3.0 subset.
   */
  readonly dialect?: "json-schema" | "openapi"
  /**
   * `"canonical"` (default) or `"original"` (`math.factorial`; Gemini's rule
   * allows dots and colons). The registry resolves either.
   */
  readonly names?: "canonical" | "original"
}

/** Gemini's rule for parameter (property) names: letter or `_` first, `[A-Za-z0-9_]`, at most 64. */
const propertyName = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/

const badPropertyName = (schema: unknown, path: ReadonlyArray<string>): ReadonlyArray<string> | undefined => {
  if (!isRecord(schema)) return undefined
  if (isRecord(schema.properties)) {
    for (const [name, child] of Object.entries(schema.properties)) {
      if (!propertyName.test(name)) return [...path, "properties", name]
      const found = badPropertyName(child, [...path, "properties", name])
      if (found !== undefined) return found
    }
  }
  return badPropertyName(schema.items, [...path, "items"])
}

/** {@link toolDefinitions} as a `Result`, for synchronous callers. */
export const toolDefinitionsResult = (
  specs: ReadonlyArray<ToolSpec>,
  options: ExportOptions = {}
): Result.Result<Array<Tool>, ProviderExportError> => {
  const nameOf = (spec: ToolSpec) => options.names === "original" ? spec.originalName ?? spec.name : spec.name
  const declarations = ExportTools.exportEach("gemini", Names.geminiRule, specs, nameOf, (spec, name) => {
    const canonical = inputSchemaOf(spec)
    const badName = badPropertyName(canonical, [])
    if (badName !== undefined) {
      return Result.fail(
        new ProviderExportError({
          provider: "gemini",
          toolName: spec.name,
          reason: "unsupported_schema",
          path: badName,
          detail: `parameter name ${
            JSON.stringify(badName.at(-1))
          } breaks Gemini's rule: start with a letter or underscore, then A-Z, a-z, 0-9 or _, at most 64 characters`
        })
      )
    }
    const base = { name, description: spec.description }
    if (options.dialect !== "openapi") {
      return Result.succeed<FunctionDeclaration>({ ...base, parametersJsonSchema: canonical })
    }
    const parameters = GeminiOpenApi.toOpenApi(canonical)
    if (Result.isFailure(parameters)) return Result.fail(fromProblem("gemini", spec.name, parameters.failure))
    const declaration: FunctionDeclaration = parameters.success === undefined ? base : { ...base, parameters: parameters.success }
    return Result.succeed(declaration)
  })
  return Result.map(declarations, (all) => all.length === 0 ? [] : [{ functionDeclarations: all }])
}

/**
 * The request's `tools`: one `Tool` holding a declaration per spec (none when
 * `specs` is empty).
 */
export const toolDefinitions = ExportTools.toEffect(toolDefinitionsResult)

/** The `generationConfig` fields asking for a structured answer: JSON, described by `responseJsonSchema`. */
export interface ResponseFormat {
  readonly responseMimeType: "application/json"
  readonly responseJsonSchema: { readonly [key: string]: unknown }
}

/** The `generationConfig` fields for a structured answer (`ChatModel.OutputFormat`): the canonical schema. */
export const responseFormatResult = (output: Output.OutputSchema): Result.Result<ResponseFormat, ProviderExportError> =>
  Result.map(Output.checked("gemini", Names.geminiRule, output), ({ schema }) => ({
    responseMimeType: "application/json" as const,
    responseJsonSchema: output.description === "" ? schema : { description: output.description, ...schema }
  }))

// ---------------------------------------------------------------------------
// calls
// ---------------------------------------------------------------------------

/** Prefix of the ids made up for calls Gemini sent without one; such ids are never sent back. */
export const generatedIdPrefix = "gemini-call:"

/** A server-side part: code Gemini wrote and ran itself, in the part type given (the SDK's `Part` when you pass its response). */
export type ServerPart<P extends Part = Part> =
  & P
  & ({ readonly executableCode: object } | { readonly codeExecutionResult: object })

const isServerPart = <P extends Part>(part: P): part is ServerPart<P> =>
  part.executableCode !== undefined || part.codeExecutionResult !== undefined

/**
 * The `functionCall` parts of a response's first candidate (or of a content
 * or a part list), in order. `args` is passed through as the object it is (a
 * missing `args` is `{}`: Gemini omits it for calls without arguments). A
 * call without `id` gets `gemini-call:<candidate>:<part>:<name>`. Server
 * parts are passthrough, typed as the parts given, so the SDK's (with its
 * enums) replay unchanged.
 */
export const toolCalls = <P extends Part = Part>(
  response: GenerateContentResponse<P> | Content<P> | ReadonlyArray<P>
): ProviderCalls<ServerPart<P>> => {
  const [parts, candidate]: readonly [ReadonlyArray<P>, number] = Array.isArray(response)
    ? [response as ReadonlyArray<P>, 0]
    : "candidates" in response
    ? [response.candidates?.[0]?.content?.parts ?? [], response.candidates?.[0]?.index ?? 0]
    : [(response as Content<P>).parts ?? [], 0]
  const calls: Array<ToolCall> = []
  const passthrough: Array<ServerPart<P>> = []
  parts.forEach((part, index) => {
    const call = part.functionCall
    if (call !== undefined) {
      const name = call.name ?? ""
      calls.push({
        id: call.id ?? `${generatedIdPrefix}${candidate}:${index}:${name}`,
        name,
        arguments: call.args ?? {}
      })
    } else if (isServerPart(part)) passthrough.push(part)
  })
  return { calls, passthrough }
}

// ---------------------------------------------------------------------------
// results
// ---------------------------------------------------------------------------

const isPlainObject = (value: unknown): value is { readonly [key: string]: unknown } =>
  isRecord(value) && (Object.getPrototypeOf(value) === Object.prototype || Object.getPrototypeOf(value) === null)

/**
 * The `response` object: `{error}` for failures; for successes the value when
 * it is a plain object without `output`/`error` keys, else `{output: value}`.
 * A result without a value (or whose value went to an artifact) sends its text.
 * Base64 data the value repeats from the result's media blocks (sent as parts)
 * stands as a short note.
 */
const responseOf = (result: ToolResult): { readonly [key: string]: unknown } => {
  if (result.isError) return { error: textOf(result) }
  const value = result.value !== undefined && result.artifacts.length === 0
    ? valueWithoutMedia(result.value, result.content)
    : textOf(result)
  return isPlainObject(value) && !("output" in value) && !("error" in value)
    ? value
    : { output: value }
}

/** Options of {@link toolMessages}. */
export interface MessageOptions {
  /** The calls being answered: each response then carries the name the model used. */
  readonly calls?: ReadonlyArray<ToolCall>
}

/**
 * A block that is not text as a `FunctionResponsePart`: images, audio and binary resources as
 * `inlineData` (the model decides which MIME types it reads); a text resource as `text/plain`
 * `inlineData` holding its text under its URI (so it travels even when `response` is the value).
 */
const inlinePart = (block: Media): FunctionResponsePart => {
  switch (block.type) {
    case "image":
    case "audio":
      return { inlineData: { mimeType: block.mimeType, data: block.data } }
    case "resource":
      return "text" in block.resource
        ? { inlineData: { mimeType: "text/plain", data: Base64.encode(resourceText(block.resource)) } }
        : { inlineData: { mimeType: block.resource.mimeType ?? "application/octet-stream", data: block.resource.blob } }
  }
}

/**
 * One user `Content` with a `functionResponse` part per result, in the order
 * given. Ids Gemini sent are echoed; made-up ones are not. Images, audio and
 * embedded resources travel as `parts` of the function response, in order.
 */
export const toolMessages = (
  results: ReadonlyArray<ToolResult>,
  options: MessageOptions = {}
): FunctionResponseContent => {
  const names = new Map((options.calls ?? []).map((call) => [call.id, call.name]))
  return {
    role: "user",
    parts: results.map((result) => {
      const media = result.content.flatMap((block) => block.type === "text" ? [] : [inlinePart(block)])
      const functionResponse: FunctionResponse = {
        ...(result.toolCallId.startsWith(generatedIdPrefix) ? {} : { id: result.toolCallId }),
        name: names.get(result.toolCallId) ?? result.name,
        response: responseOf(result),
        ...(media.length === 0 ? {} : { parts: media })
      }
      return { functionResponse }
    })
  }
}
