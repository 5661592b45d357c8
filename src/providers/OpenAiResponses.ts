/**
 * OpenAI Responses: flat function tool definitions (strict by default where
 * the schema allows it), `function_call` output items as `ToolCall`s (by
 * `call_id`), and one `function_call_output` input item per result. Wire
 * types follow openai-node `src/resources/responses` and the OpenAPI spec
 * (`FunctionTool`, `FunctionToolCall`, `FunctionCallOutputItemParam`).
 * Tool search executed by the client: deferred functions carry
 * `defer_loading: true`, the search tool is a `tool_search` tool with
 * `execution: "client"`, the model's `tool_search_call` is read as a call to
 * it, and its answer is a `tool_search_output` item with the functions found
 * (`ToolSearchTool`, `ResponseToolSearchCall`, `ResponseToolSearchOutputItemParam`).
 * Server-side tool items (`web_search_call`, `code_interpreter_call`, ...)
 * and built-in client tools are passthrough: never run here. Outbound types
 * use mutable arrays, so they assign to the `openai` package's request
 * params; {@link toolCalls} reads only `type` of an item it does not know,
 * so the SDK's `Response` and `ResponseOutputItem[]` pass as they are.
 */
import { Result } from "effect"
import type { ToolSpec } from "../contract/Tool.ts"
import type { ToolCall } from "../contract/ToolCall.ts"
import type { ToolResult } from "../contract/ToolResult.ts"
import { contentFor, fileNameOf } from "./internal/content.ts"
import * as ExportTools from "./internal/exportTools.ts"
import * as Names from "./internal/names.ts"
import * as Output from "./internal/output.ts"
import * as OpenAiFunction from "./internal/openAiFunction.ts"
import { inputSchemaOf } from "./internal/schema.ts"
import type { ProviderCalls } from "./ProviderCalls.ts"
import type { ProviderExportError } from "./ProviderExportError.ts"

// ---------------------------------------------------------------------------
// wire types
// ---------------------------------------------------------------------------

/** `FunctionTool`: `parameters` and `strict` are required, and nullable. */
export interface FunctionTool {
  readonly type: "function"
  readonly name: string
  readonly description?: string | null
  readonly parameters: { readonly [key: string]: unknown } | null
  readonly strict: boolean | null
  /** Tool search: the function is not shown to the model until a tool search loads it. */
  readonly defer_loading?: boolean
}

/** `ToolSearchTool` executed by the client: the model calls it with `parameters`, you answer with the tools found. */
export interface ToolSearchTool {
  readonly type: "tool_search"
  readonly execution: "client"
  readonly description: string
  readonly parameters: { readonly [key: string]: unknown }
}

/** `ResponseToolSearchCall` (an output item) and `ResponseInputItem.ToolSearchCall` (replayed): `arguments` is a parsed value. */
export interface ToolSearchCall {
  readonly type: "tool_search_call"
  readonly id?: string
  readonly call_id: string | null
  readonly arguments: unknown
  readonly execution: "server" | "client"
  readonly status: "in_progress" | "completed" | "incomplete"
}

/** `ResponseToolSearchOutputItemParam`: the functions a client tool search loaded (a mutable array, as the SDK's param wants). */
export interface ToolSearchOutput {
  readonly type: "tool_search_output"
  readonly call_id: string
  readonly execution: "client"
  readonly status: "completed"
  readonly tools: Array<FunctionTool>
}

/** `ResponseFunctionToolCall`: an output item; `arguments` is JSON text. */
export interface FunctionCall {
  readonly type: "function_call"
  readonly id?: string
  readonly call_id: string
  readonly name: string
  readonly arguments: string
  readonly status?: "in_progress" | "completed" | "incomplete"
}

/** Any other output item (`message`, `reasoning`, `web_search_call`, ...), as parsed JSON. */
export interface OtherItem {
  readonly type: string
  readonly id?: string
  readonly [key: string]: unknown
}

/** An item of `Response.output`, as parsed JSON. */
export type OutputItem = FunctionCall | OtherItem

/**
 * What {@link toolCalls} needs of any item: a `type` (a `function_call` is
 * then checked field by field). No index signature, so the SDK's item
 * interfaces, which have none, qualify.
 */
export interface AnyItem {
  readonly type: string
}

/** `Response` (the fields read here), over the item type you have: parsed JSON by default, or the SDK's. */
export interface Response<Item extends AnyItem = OutputItem> {
  readonly id?: string
  readonly object?: "response"
  readonly output: ReadonlyArray<Item>
}

/** `ResponseInputText`. */
export interface InputText {
  readonly type: "input_text"
  readonly text: string
}

/** `ResponseInputImage` with a data URL. */
export interface InputImage {
  readonly type: "input_image"
  readonly image_url: string
  readonly detail: "auto" | "low" | "high"
}

/** `ResponseInputFile` with its data as a data URL (`data:<mime>;base64,...`) and a file name. */
export interface InputFile {
  readonly type: "input_file"
  readonly file_data: string
  readonly filename: string
}

/** `FunctionCallOutputItemParam`: the answer to one `call_id` (a mutable array, as the SDK's param wants). */
export interface FunctionCallOutput {
  readonly type: "function_call_output"
  readonly call_id: string
  readonly output: string | Array<InputText | InputImage | InputFile>
}

// ---------------------------------------------------------------------------
// definitions
// ---------------------------------------------------------------------------

/** Strict mode choice: `"auto"` (default), `"require"` or `false`. */
export type Strict = OpenAiFunction.Strict

/** Export options: strict mode, limits, a hook for `"auto"` fallbacks, and the deferred tools. */
export interface ExportOptions extends OpenAiFunction.ExportOptions {
  /** Tool search: the canonical names of the functions sent with `defer_loading: true`. */
  readonly deferLoading?: ReadonlyArray<string>
}

const exportFunctions = OpenAiFunction.exporter(
  "openai-responses",
  ({ description, name, parameters, strict }): FunctionTool => ({ type: "function", name, description, parameters, strict })
)

/** {@link toolDefinitions} as a `Result`, for synchronous callers. */
export const toolDefinitionsResult = (
  specs: ReadonlyArray<ToolSpec>,
  options: ExportOptions = {}
): Result.Result<Array<FunctionTool>, ProviderExportError> => {
  const deferred = new Set(options.deferLoading ?? [])
  return Result.map(exportFunctions(specs, options), (tools) =>
    deferred.size === 0
      ? tools
      : tools.map((tool) => deferred.has(tool.name) ? { ...tool, defer_loading: true } : tool))
}

/**
 * The `tool_search` tool (executed by the client) for your search tool's spec: its description, and
 * its input schema as `parameters`.
 */
export const toolSearchTool = (spec: ToolSpec): ToolSearchTool => ({
  type: "tool_search",
  execution: "client",
  description: spec.description,
  parameters: inputSchemaOf(spec)
})

/**
 * The request's `tools`, one flat function per spec, named by canonical name,
 * with `strict` always explicit (the API would otherwise decide by itself).
 */
export const toolDefinitions = ExportTools.toEffect(toolDefinitionsResult)

/** `ResponseFormatTextJSONSchemaConfig`: the request's `text.format` asking for a structured answer. */
export interface TextFormat {
  readonly type: "json_schema"
  readonly name: string
  readonly description?: string
  readonly schema: { readonly [key: string]: unknown }
  readonly strict?: boolean | null
}

/**
 * The `text.format` for a structured answer (`ChatModel.OutputFormat`): its schema under the same
 * strict-mode choice as tools (`"auto"`: strict when the schema allows it).
 */
export const textFormatResult = (
  output: Output.OutputSchema,
  options: ExportOptions = {}
): Result.Result<TextFormat, ProviderExportError> =>
  Result.flatMap(Output.checked("openai-responses", Names.openAiRule, output), ({ name, schema }) =>
    Result.map(OpenAiFunction.exportSchema("openai-responses", name, schema, options), ({ parameters, strict }) => ({
      type: "json_schema" as const,
      name,
      description: output.description,
      schema: parameters,
      strict
    })))

// ---------------------------------------------------------------------------
// calls
// ---------------------------------------------------------------------------

/** Options of {@link toolCalls}. */
export interface CallOptions {
  /** The specs you exported: a `null` for an optional property becomes an absent key. */
  readonly specs?: ReadonlyArray<ToolSpec>
  /**
   * The name of your search tool, sent as a `tool_search` tool executed by the client: a client
   * `tool_search_call` is then a call to it (id `call_id`, its `arguments` as given), not passthrough.
   */
  readonly toolSearch?: string
}

/** Whether an output item is a `tool_search_call` for the client to execute. */
export const isClientToolSearchCall = (item: AnyItem): item is ToolSearchCall => {
  const fields = item as { readonly call_id?: unknown; readonly execution?: unknown }
  return item.type === "tool_search_call" && fields.execution === "client" && typeof fields.call_id === "string"
}

const isFunctionCall = (item: AnyItem): item is FunctionCall => {
  const fields = item as { readonly call_id?: unknown; readonly name?: unknown }
  return item.type === "function_call" && typeof fields.call_id === "string" && typeof fields.name === "string"
}

/** Tool activity that is not a function call: `*_call` items and MCP items. */
const isOtherToolItem = (item: AnyItem): boolean =>
  item.type !== "function_call" && (item.type.endsWith("_call") || item.type.startsWith("mcp_"))

/**
 * The passthrough items of {@link toolCalls}, in the type given: the members
 * of `Item` whose `type` is a tool item other than `function_call` (`*_call`,
 * `mcp_*`); an item typed with `type: string` may be any of them.
 */
export type Passthrough<Item extends AnyItem> = Item extends { readonly type: infer T extends string }
  ? string extends T ? Item
  : T extends "function_call" ? never
  : T extends `${string}_call` | `mcp_${string}` ? Item
  : never
  : never

/**
 * The `function_call` items of a response (or of an output list), by
 * `call_id`, argument text preserved, and with {@link CallOptions.toolSearch}
 * each client `tool_search_call` as a call to the search tool. Other tool items are passthrough, typed
 * as the items given (the SDK's `ResponseOutputItem` members when you pass
 * its `Response`), so they can be replayed as input unchanged.
 */
export const toolCalls = <Item extends AnyItem = OutputItem>(
  response: Response<Item> | ReadonlyArray<Item>,
  options: CallOptions = {}
): ProviderCalls<Passthrough<Item>> => {
  const items: ReadonlyArray<Item> = "output" in response ? response.output : response
  const calls: Array<ToolCall> = []
  const passthrough: Array<Passthrough<Item>> = []
  for (const item of items) {
    if (isFunctionCall(item)) {
      calls.push(
        OpenAiFunction.normalizeCall({ id: item.call_id, name: item.name, arguments: item.arguments }, options.specs)
      )
    } else if (options.toolSearch !== undefined && isClientToolSearchCall(item)) {
      calls.push({ id: item.call_id!, name: options.toolSearch, arguments: item.arguments })
    } else if (isOtherToolItem(item)) passthrough.push(item as Passthrough<Item>)
  }
  return { calls, passthrough }
}

/** A strict-mode `null` for a property `spec` leaves optional becomes an absent key, recursively. */
export const normalizeArguments: (spec: ToolSpec, args: unknown) => unknown = OpenAiFunction.normalizeArguments

// ---------------------------------------------------------------------------
// results
// ---------------------------------------------------------------------------

/**
 * One `function_call_output` per result, in the order given: plain text, or an
 * `input_text` / `input_image` / `input_file` list, in the result's order, when
 * it has images or binary resources (files named by their URI). A text
 * resource is text under its URI; audio, which a function call output cannot
 * carry, is a note.
 */
export const toolMessages = (results: ReadonlyArray<ToolResult>): Array<FunctionCallOutput> =>
  results.map((result) => {
    const blocks = contentFor(
      result,
      (block) =>
        block.type === "image" || block.type === "resource" && "blob" in block.resource ||
        `a Responses function call output carries no ${block.type}`
    )
    const parts = blocks.map((block): InputText | InputImage | InputFile => {
      switch (block.type) {
        case "image":
          return { type: "input_image", image_url: `data:${block.mimeType};base64,${block.data}`, detail: "auto" }
        case "resource":
          return {
            type: "input_file",
            file_data: `data:${block.resource.mimeType ?? "application/octet-stream"};base64,${
              "blob" in block.resource ? block.resource.blob : ""
            }`,
            filename: fileNameOf(block.resource)
          }
        default: // text (audio is never carried: `contentFor` described it)
          return { type: "input_text", text: block.type === "text" ? block.text : "" }
      }
    })
    const only = parts.length === 1 ? parts[0] : undefined
    return {
      type: "function_call_output",
      call_id: result.toolCallId,
      output: parts.length === 0 ? "" : only?.type === "input_text" ? only.text : parts
    }
  })

/**
 * A call to your search tool replayed as the `tool_search_call` input item it came as (executed by
 * the client, completed); `args` as the model gave them (a parsed value).
 */
export const toolSearchCall = (callId: string, args: unknown): ToolSearchCall => ({
  type: "tool_search_call",
  call_id: callId,
  arguments: args,
  execution: "client",
  status: "completed"
})

/**
 * The `tool_search_output` answering the `tool_search_call` `callId`: the definitions of the
 * functions found, as the request's `tools` sends them (`defer_loading: true`).
 */
export const toolSearchOutput = (callId: string, tools: ReadonlyArray<FunctionTool>): ToolSearchOutput => ({
  type: "tool_search_output",
  call_id: callId,
  execution: "client",
  status: "completed",
  tools: [...tools]
})
