/**
 * Model Context Protocol (2025-11-25): tools as an MCP server lists them
 * (`tools/list` entries, under their original names such as
 * `admin.tools.list`, with annotations derived from `Safety`), `tools/call`
 * requests as `ToolCall`s, and `CallToolResult`s answering them
 * (`structuredContent` for object values, checked against the tool's output
 * schema). Wire types follow `schema/2025-11-25/schema.ts` of
 * modelcontextprotocol/modelcontextprotocol. No transport or JSON-RPC session
 * lives here. Outbound types use mutable arrays, so they assign to
 * `@modelcontextprotocol/sdk`'s `Tool` and `CallToolResult`; a request
 * handler's `CallToolRequest` (no JSON-RPC envelope) is read with its
 * `extra.requestId`.
 */
import { JsonSchema, Result, Schema, SchemaRepresentation } from "effect"
import * as Safety from "../contract/Safety.ts"
import type { ToolSpec } from "../contract/Tool.ts"
import type { ToolCall } from "../contract/ToolCall.ts"
import { issuesOf } from "../contract/ToolInput.ts"
import { formatPath } from "../contract/ToolError.ts"
import type { ToolResult } from "../contract/ToolResult.ts"
import { contentFor, jsonWithoutMedia } from "./internal/content.ts"
import * as ExportTools from "./internal/exportTools.ts"
import * as Names from "./internal/names.ts"
import { isRecord, toDraft2020 } from "./internal/schema.ts"
import type { ProviderCalls } from "./ProviderCalls.ts"
import type { ProviderExportError } from "./ProviderExportError.ts"

// ---------------------------------------------------------------------------
// wire types
// ---------------------------------------------------------------------------

/** `ToolAnnotations`: hints, never guarantees. */
export interface ToolAnnotations {
  readonly title?: string
  readonly readOnlyHint?: boolean
  readonly destructiveHint?: boolean
  readonly idempotentHint?: boolean
  readonly openWorldHint?: boolean
}

/** An object JSON Schema as `inputSchema` / `outputSchema` require (root `type: "object"`). */
export interface ObjectSchema {
  readonly $schema?: string
  readonly type: "object"
  readonly properties?: { readonly [key: string]: object }
  readonly required?: Array<string>
  readonly [key: string]: unknown
}

/** `Tool`: an entry of `tools/list`. */
export interface Tool {
  readonly name: string
  readonly title?: string
  readonly description?: string
  readonly inputSchema: ObjectSchema
  readonly outputSchema?: ObjectSchema
  readonly annotations?: ToolAnnotations
}

/** `CallToolRequestParams` (optional fields may hold `undefined`, as the SDK's zod-inferred type has). */
export interface CallToolRequestParams {
  readonly name: string
  readonly arguments?: { readonly [key: string]: unknown } | undefined
  readonly _meta?: { readonly [key: string]: unknown } | undefined
}

/**
 * `CallToolRequest`: a JSON-RPC request with method `tools/call`. The MCP
 * SDK hands a request handler the request without `jsonrpc` and `id` (the id
 * is `extra.requestId`): pass that as {@link CallOptions.requestId}.
 */
export interface CallToolRequest {
  readonly jsonrpc?: "2.0"
  readonly id?: string | number
  readonly method: "tools/call"
  readonly params: CallToolRequestParams
}

/** Any other JSON-RPC request (passthrough of {@link toolCalls}). */
export interface OtherRequest {
  readonly jsonrpc?: "2.0"
  readonly id?: string | number
  readonly method: string
  readonly params?: unknown
}

/** `TextContent`. */
export interface TextContent {
  readonly type: "text"
  readonly text: string
}

/** `ImageContent`: base64 data. */
export interface ImageContent {
  readonly type: "image"
  readonly data: string
  readonly mimeType: string
}

/** `AudioContent`: base64 data. */
export interface AudioContent {
  readonly type: "audio"
  readonly data: string
  readonly mimeType: string
}

/** `EmbeddedResource`: a resource's contents, its `text` or its base64 `blob` (`TextResourceContents` / `BlobResourceContents`). */
export interface EmbeddedResource {
  readonly type: "resource"
  readonly resource:
    | { readonly uri: string; readonly mimeType?: string; readonly text: string }
    | { readonly uri: string; readonly mimeType?: string; readonly blob: string }
}

/** A content block of a {@link CallToolResult} as {@link toolMessages} writes it. */
export type ContentBlock = TextContent | ImageContent | AudioContent | EmbeddedResource

/**
 * `CallToolResult`: execution errors are results with `isError: true`, not
 * protocol errors. A type alias, not an interface, so it has the implicit
 * index signature the SDK's (open) `CallToolResult` asks for; `content` is a
 * mutable array, as the SDK's type has.
 */
export type CallToolResult = {
  readonly content: Array<ContentBlock>
  readonly structuredContent?: { readonly [key: string]: unknown }
  readonly isError?: boolean
}

// ---------------------------------------------------------------------------
// definitions
// ---------------------------------------------------------------------------

/** Export options. */
export interface ExportOptions {
  /** `"original"` (default: `spec.originalName ?? spec.name`) or `"canonical"`. */
  readonly names?: "original" | "canonical"
}

const objectSchema = (schema: JsonSchema.JsonSchema): ObjectSchema | undefined =>
  schema.type === "object" ? schema as ObjectSchema : undefined

/** {@link toolDefinitions} as a `Result`, for synchronous callers. */
export const toolDefinitionsResult = (
  specs: ReadonlyArray<ToolSpec>,
  options: ExportOptions = {}
): Result.Result<Array<Tool>, ProviderExportError> => {
  const nameOf = (spec: ToolSpec) => options.names === "canonical" ? spec.name : spec.originalName ?? spec.name
  return ExportTools.exportEach("mcp", Names.mcpRule, specs, nameOf, (spec, name) => {
    const outputSchema = spec.outputSchema === undefined ? undefined : objectSchema(toDraft2020(spec.outputSchema))
    return Result.succeed<Tool>({
      name,
      ...(spec.title === undefined ? {} : { title: spec.title }),
      description: spec.description,
      inputSchema: toDraft2020(spec.inputSchema) as ObjectSchema,
      ...(outputSchema === undefined ? {} : { outputSchema }),
      annotations: Safety.toMcpAnnotations(spec.safety)
    })
  })
}

/**
 * The `tools/list` entries: original names (MCP allows dots), the spec's
 * `title` when it has one, input schema in draft 2020-12 (draft-07 input is
 * converted), the output schema when its root is an object (the 2025-11-25
 * restriction), and annotations from `Safety`.
 */
export const toolDefinitions = ExportTools.toEffect(toolDefinitionsResult)

// ---------------------------------------------------------------------------
// calls
// ---------------------------------------------------------------------------

/** Options of {@link toolCalls}. */
export interface CallOptions {
  /**
   * The JSON-RPC id of a `tools/call` request given without its envelope:
   * the MCP SDK's request handlers get `(request, extra)`, with the id in
   * `extra.requestId`. A request's own `id` wins.
   */
  readonly requestId?: string | number
}

const isCallTool = (request: CallToolRequest | OtherRequest, requestId: unknown): request is CallToolRequest =>
  request.method === "tools/call" && (request.id !== undefined || requestId !== undefined) &&
  isRecord(request.params) && typeof request.params.name === "string"

/**
 * The `tools/call` requests among `requests`, as calls: the JSON-RPC id
 * (or `options.requestId`) as text, the name as sent, `arguments` as the
 * object it is (`{}` when absent, as the protocol makes it optional). Other
 * requests, and a `tools/call` without any id, are passthrough.
 */
export const toolCalls = (
  requests: CallToolRequest | OtherRequest | ReadonlyArray<CallToolRequest | OtherRequest>,
  options: CallOptions = {}
): ProviderCalls<OtherRequest> => {
  const list: ReadonlyArray<CallToolRequest | OtherRequest> = Array.isArray(requests)
    ? requests
    : [requests as CallToolRequest | OtherRequest]
  const calls: Array<ToolCall> = []
  const passthrough: Array<OtherRequest> = []
  for (const request of list) {
    if (isCallTool(request, options.requestId)) {
      calls.push({
        id: String(request.id ?? options.requestId),
        name: request.params.name,
        arguments: request.params.arguments ?? {}
      })
    } else passthrough.push(request)
  }
  return { calls, passthrough }
}

// ---------------------------------------------------------------------------
// results
// ---------------------------------------------------------------------------

type Validator = (value: unknown) => string | undefined

const validators = new WeakMap<object, Validator>()

/** A validator for an output schema, compiled once per schema with Effect's JSON Schema importer. */
const validatorFor = (schema: JsonSchema.JsonSchema): Validator => {
  const cached = validators.get(schema)
  if (cached !== undefined) return cached
  let validator: Validator
  try {
    const imported = SchemaRepresentation.fromJsonSchemaDocument(JsonSchema.fromSchemaDraft2020_12(toDraft2020(schema)))
    const decode = Schema.decodeUnknownResult(imported as unknown as Schema.ConstraintDecoder<unknown>, { errors: "all", onExcessProperty: "error" })
    validator = (value) => {
      const decoded = decode(value)
      return Result.isSuccess(decoded)
        ? undefined
        : issuesOf(decoded.failure).map((issue) => `at ${formatPath(issue.path)}: ${issue.message}`).join("; ")
    }
  } catch (error) {
    const reason = `the output schema cannot be checked: ${error instanceof Error ? error.message : String(error)}`
    validator = () => reason
  }
  validators.set(schema, validator)
  return validator
}

/** Options of {@link toolMessages}. */
export interface MessageOptions {
  /** Specs of the tools answered: object values are checked against their `outputSchema`. */
  readonly specs?: ReadonlyArray<ToolSpec>
}

/**
 * One `CallToolResult` per result, in the order given, every content block as
 * the MCP block of its type (text, image, audio, embedded resource). An object
 * `value` becomes `structuredContent` (its JSON also stands in the text when
 * the result has none, base64 data it repeats from the media blocks as a short
 * note); a value that breaks the tool's output schema turns the
 * result into an error instead.
 */
export const toolMessages = (results: ReadonlyArray<ToolResult>, options: MessageOptions = {}): Array<CallToolResult> =>
  results.map((result) => {
    const structured = !result.isError && isRecord(result.value) ? result.value : undefined
    const spec = options.specs === undefined ? undefined : Names.specFor(options.specs, result.name)
    if (structured !== undefined && spec?.outputSchema !== undefined) {
      const problem = validatorFor(spec.outputSchema)(structured)
      if (problem !== undefined) {
        return {
          content: [{
            type: "text",
            text: `${result.name}: the tool's structured output does not match its output schema: ${problem}`
          }],
          isError: true
        }
      }
    }
    const blocks = contentFor(result, () => true)
    const content: Array<ContentBlock> = [...blocks]
    if (!blocks.some((block) => block.type === "text") && (structured !== undefined || blocks.length === 0)) {
      content.unshift({ type: "text", text: structured === undefined ? "" : jsonWithoutMedia(structured, result.content) ?? "null" })
    }
    return {
      content,
      ...(structured === undefined ? {} : { structuredContent: structured }),
      isError: result.isError
    }
  })
