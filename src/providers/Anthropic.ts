/**
 * Anthropic Messages: custom tool definitions (`input_schema` as is, or the
 * SDK's strict transform on request; `cache_control` passed through per
 * tool), `tool_use` blocks as `ToolCall`s (their `input` is already an
 * object), and the one user message that answers them: `tool_result` blocks
 * first, in the order given, `is_error: true` on failures. Wire types follow
 * anthropic-sdk-typescript `src/resources/messages/messages.ts` (`Tool`,
 * `ToolUseBlock`, `ServerToolUseBlock`, `ToolResultBlockParam`,
 * `CacheControlEphemeral`, `ToolReferenceBlockParam`). Tool search done by
 * your own tool: deferred tools carry `defer_loading: true` and its results
 * answer with `tool_reference` blocks. Server tools (`server_tool_use`, their
 * `*_tool_result` blocks, MCP connector blocks) are passthrough. Outbound
 * types use mutable arrays, so they assign to `@anthropic-ai/sdk`'s request
 * params; {@link toolCalls} reads only `type` of a block it does not know, so
 * the SDK's `Message` and `ContentBlock[]` pass as they are.
 */
import { Result } from "effect"
import type { ToolSpec } from "../contract/Tool.ts"
import type { ToolCall } from "../contract/ToolCall.ts"
import type { ToolResult } from "../contract/ToolResult.ts"
import * as AnthropicStrict from "./internal/anthropicStrict.ts"
import { contentFor, type Media } from "./internal/content.ts"
import * as ExportTools from "./internal/exportTools.ts"
import * as Names from "./internal/names.ts"
import * as Output from "./internal/output.ts"
import { inputSchemaOf } from "./internal/schema.ts"
import type { ProviderCalls } from "./ProviderCalls.ts"
import { fromProblem, type ProviderExportError } from "./ProviderExportError.ts"

// ---------------------------------------------------------------------------
// wire types
// ---------------------------------------------------------------------------

/** `CacheControlEphemeral`: a prompt-cache breakpoint. */
export interface CacheControlEphemeral {
  readonly type: "ephemeral"
  readonly ttl?: "5m" | "1h"
}

/** `Tool.InputSchema`: a JSON Schema 2020-12 object schema. */
export interface InputSchema {
  readonly type: "object"
  readonly properties?: unknown
  readonly required?: Array<string> | null
  readonly [key: string]: unknown
}

/** `Tool`: a custom (client) tool. */
export interface Tool {
  readonly name: string
  readonly description?: string
  readonly input_schema: InputSchema
  readonly cache_control?: CacheControlEphemeral | null
  /** "When true, guarantees schema validation on tool names and inputs." */
  readonly strict?: boolean
  /** Tool search: the tool is not shown to the model until a `tool_reference` to it is returned. */
  readonly defer_loading?: boolean
  readonly type?: "custom"
}

/** `ToolUseBlock`: `input` is an already-parsed object. */
export interface ToolUseBlock {
  readonly type: "tool_use"
  readonly id: string
  readonly name: string
  readonly input: unknown
}

/** Any other content block (`text`, `thinking`, `server_tool_use`, `web_search_tool_result`, ...), as parsed JSON. */
export interface OtherBlock {
  readonly type: string
  readonly [key: string]: unknown
}

/** A block of an assistant message's `content`, as parsed JSON. */
export type ContentBlock = ToolUseBlock | OtherBlock

/**
 * What {@link toolCalls} needs of any block: a `type` (a `tool_use` is then
 * checked field by field). No index signature, so the SDK's block
 * interfaces, which have none, qualify.
 */
export interface AnyBlock {
  readonly type: string
}

/** `Message` (the fields read here), over the block type you have: parsed JSON by default, or the SDK's. */
export interface Message<Block extends AnyBlock = ContentBlock> {
  readonly role: "assistant"
  readonly content: ReadonlyArray<Block>
}

/** `TextBlockParam`. */
export interface TextBlockParam {
  readonly type: "text"
  readonly text: string
}

/** `ImageBlockParam` with a base64 source. */
export interface ImageBlockParam {
  readonly type: "image"
  readonly source: {
    readonly type: "base64"
    readonly media_type: "image/jpeg" | "image/png" | "image/gif" | "image/webp"
    readonly data: string
  }
}

/** `DocumentBlockParam` with a base64 PDF or a plain-text source, titled with the resource's URI. */
export interface DocumentBlockParam {
  readonly type: "document"
  readonly source:
    | { readonly type: "base64"; readonly media_type: "application/pdf"; readonly data: string }
    | { readonly type: "text"; readonly media_type: "text/plain"; readonly data: string }
  readonly title?: string
}

/** `ToolReferenceBlockParam`: a deferred tool (`defer_loading: true`) that a tool search found, by the name it is sent under. */
export interface ToolReferenceBlockParam {
  readonly type: "tool_reference"
  readonly tool_name: string
}

/** `ToolResultBlockParam`: the answer to one `tool_use` id (a mutable array, as the SDK's param wants). */
export interface ToolResultBlockParam {
  readonly type: "tool_result"
  readonly tool_use_id: string
  readonly content?: string | Array<TextBlockParam | ImageBlockParam | DocumentBlockParam | ToolReferenceBlockParam>
  readonly is_error?: boolean
  readonly cache_control?: CacheControlEphemeral | null
}

/** The user message that answers a turn's tool calls (a `MessageParam`). */
export interface ToolResultMessage {
  readonly role: "user"
  readonly content: Array<ToolResultBlockParam | TextBlockParam>
}

// ---------------------------------------------------------------------------
// definitions
// ---------------------------------------------------------------------------

/**
 * Strict tool use: `false` (default) omits `strict`; `"auto"` sends
 * `strict: true` with the SDK-transformed schema when the schema allows it and
 * the plain schema otherwise; `"require"` fails on such a tool.
 */
export type Strict = "auto" | "require" | false

/** Export options. */
export interface ExportOptions {
  readonly strict?: Strict
  /** `cache_control` per canonical tool name (e.g. on the last tool, to cache the tool list). */
  readonly cacheControl?: Readonly<Record<string, CacheControlEphemeral>>
  /**
   * Tool search: the canonical names of the tools sent with `defer_loading: true`, which the model
   * sees only once a tool result references them (see {@link MessageOptions.references}).
   */
  readonly deferLoading?: ReadonlyArray<string>
  /** Called for each tool that `"auto"` exported non-strict, with the reason. */
  readonly onFallback?: (reason: ProviderExportError) => void
}

/** {@link toolDefinitions} as a `Result`, for synchronous callers. */
export const toolDefinitionsResult = (
  specs: ReadonlyArray<ToolSpec>,
  options: ExportOptions = {}
): Result.Result<Array<Tool>, ProviderExportError> => {
  const deferred = new Set(options.deferLoading ?? [])
  return ExportTools.exportEach("anthropic", Names.anthropicRule, specs, ExportTools.canonicalName, (spec, name) => {
    const canonical = inputSchemaOf(spec) as InputSchema
    let input_schema = canonical
    let strict: boolean | undefined
    if (options.strict === "auto" || options.strict === "require") {
      const transformed = AnthropicStrict.toStrict(canonical)
      if (Result.isSuccess(transformed)) {
        input_schema = transformed.success as InputSchema
        strict = true
      } else {
        const error = fromProblem("anthropic", spec.name, transformed.failure)
        if (options.strict === "require") return Result.fail(error)
        options.onFallback?.(error)
      }
    }
    const cacheControl = options.cacheControl?.[spec.name]
    return Result.succeed<Tool>({
      name,
      description: spec.description,
      input_schema,
      ...(strict === undefined ? {} : { strict }),
      ...(cacheControl === undefined ? {} : { cache_control: cacheControl }),
      ...(deferred.has(spec.name) ? { defer_loading: true } : {})
    })
  })
}

/** The request's `tools`, one custom tool per spec, named by canonical name. */
export const toolDefinitions = ExportTools.toEffect(toolDefinitionsResult)

/** `JSONOutputFormat`: the request's `output_config.format` asking for a structured answer. */
export interface OutputFormat {
  readonly type: "json_schema"
  readonly schema: { readonly [key: string]: unknown }
}

/**
 * The `output_config.format` for a structured answer (`ChatModel.OutputFormat`), on models that
 * offer structured outputs: the schema as the SDK transforms it for strict mode (a schema strict
 * mode cannot express fails: the API would refuse it).
 */
export const outputFormatResult = (output: Output.OutputSchema): Result.Result<OutputFormat, ProviderExportError> =>
  Result.flatMap(Output.checked("anthropic", Names.anthropicRule, output), ({ name, schema }) =>
    Result.match(AnthropicStrict.toStrict(schema), {
      onSuccess: (strict) => Result.succeed({ type: "json_schema" as const, schema: strict }),
      onFailure: (problem) => Result.fail(fromProblem("anthropic", name, problem))
    }))

// ---------------------------------------------------------------------------
// calls
// ---------------------------------------------------------------------------

const isToolUse = (block: AnyBlock): block is ToolUseBlock => {
  const fields = block as { readonly id?: unknown; readonly name?: unknown }
  return block.type === "tool_use" && typeof fields.id === "string" && typeof fields.name === "string"
}

/** Server-side tool activity: `server_tool_use`, `*_tool_result`, MCP connector blocks. */
const isServerToolBlock = (block: AnyBlock): boolean =>
  block.type === "server_tool_use" || block.type.endsWith("_tool_result") || block.type.startsWith("mcp_tool_")

/**
 * The passthrough blocks of {@link toolCalls}, in the type given: the members
 * of `Block` whose `type` is server-side tool activity (`server_tool_use`,
 * `*_tool_result`, `mcp_tool_*`); a block typed with `type: string` may be any of them.
 */
export type Passthrough<Block extends AnyBlock> = Block extends { readonly type: infer T extends string }
  ? string extends T ? Block
  : T extends "server_tool_use" | `${string}_tool_result` | `mcp_tool_${string}` ? Block
  : never
  : never

/**
 * The `tool_use` blocks of an assistant message (or of its content), ids
 * preserved, `input` passed through as the object it is. Server tool blocks
 * are passthrough, typed as the blocks given (the SDK's `ContentBlock`
 * members when you pass its `Message`), so they can be replayed unchanged.
 */
export const toolCalls = <Block extends AnyBlock = ContentBlock>(
  response: Message<Block> | ReadonlyArray<Block>
): ProviderCalls<Passthrough<Block>> => {
  const blocks: ReadonlyArray<Block> = "content" in response ? response.content : response
  const calls: Array<ToolCall> = []
  const passthrough: Array<Passthrough<Block>> = []
  for (const block of blocks) {
    if (isToolUse(block)) calls.push({ id: block.id, name: block.name, arguments: block.input })
    else if (isServerToolBlock(block)) passthrough.push(block as Passthrough<Block>)
  }
  return { calls, passthrough }
}

// ---------------------------------------------------------------------------
// results
// ---------------------------------------------------------------------------

const imageTypes = new Set(["image/jpeg", "image/png", "image/gif", "image/webp"])

/**
 * What a `tool_result` carries: images of the four types, text resources and PDF resources as
 * documents (titled with their URI); the rest is described in text.
 */
const carries = (block: Media): true | string => {
  switch (block.type) {
    case "image":
      return imageTypes.has(block.mimeType) || "Anthropic accepts JPEG, PNG, GIF and WebP images"
    case "audio":
      return "an Anthropic tool result carries no audio"
    case "resource":
      return "text" in block.resource || block.resource.mimeType === "application/pdf" ||
        "an Anthropic document is a PDF or text"
  }
}

const resultBlock = (result: ToolResult): ToolResultBlockParam => {
  const blocks = contentFor(result, carries)
  const parts = blocks.map((block): TextBlockParam | ImageBlockParam | DocumentBlockParam => {
    switch (block.type) {
      case "image":
        return {
          type: "image",
          source: {
            type: "base64",
            media_type: block.mimeType as ImageBlockParam["source"]["media_type"],
            data: block.data
          }
        }
      case "resource":
        return {
          type: "document",
          source: "text" in block.resource
            ? { type: "text", media_type: "text/plain", data: block.resource.text }
            : { type: "base64", media_type: "application/pdf", data: block.resource.blob },
          title: block.resource.uri
        }
      default: // text (audio is never carried: `contentFor` described it)
        return { type: "text", text: block.type === "text" ? block.text : "" }
    }
  })
  const only = parts.length === 1 ? parts[0] : undefined
  return {
    type: "tool_result",
    tool_use_id: result.toolCallId,
    content: parts.length === 0 ? "" : only?.type === "text" ? only.text : parts,
    ...(result.isError ? { is_error: true } : {})
  }
}

/** Options of {@link toolMessages}. */
export interface MessageOptions {
  /** Text to send in the same user message, after every `tool_result` block. */
  readonly after?: ReadonlyArray<TextBlockParam>
  /**
   * Tool search done by your own tool: the names (as sent, `defer_loading: true`) of the tools a
   * result found. A result this gives names for is answered with one `tool_reference` block per name
   * (Anthropic then shows the model those tools); `undefined` or no names: the result as it is.
   */
  readonly references?: (result: ToolResult) => ReadonlyArray<string> | undefined
}

/** The `tool_result` answering a tool search with references to the tools it found (sent with `defer_loading: true`). */
export const toolReferences = (toolUseId: string, names: ReadonlyArray<string>): ToolResultBlockParam => ({
  type: "tool_result",
  tool_use_id: toolUseId,
  content: names.map((name) => ({ type: "tool_reference", tool_name: name }))
})

/**
 * The single user message answering a turn: one `tool_result` per result, in
 * the order given (use `ToolAnswers.answerAll` to put them in call order and
 * check every call is answered once; a tool search's result as references, see
 * {@link MessageOptions.references}), then any `after` text.
 */
export const toolMessages = (results: ReadonlyArray<ToolResult>, options: MessageOptions = {}): ToolResultMessage => ({
  role: "user",
  content: [
    ...results.map((result) => {
      const names = options.references?.(result)
      return names === undefined || names.length === 0 ? resultBlock(result) : toolReferences(result.toolCallId, names)
    }),
    ...(options.after ?? [])
  ]
})
