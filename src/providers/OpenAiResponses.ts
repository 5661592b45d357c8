/**
 * OpenAI Responses: flat function tool definitions (strict by default where
 * the schema allows it), `function_call` output items as `ToolCall`s (by
 * `call_id`), and one `function_call_output` input item per result. Wire
 * types follow openai-node `src/resources/responses` and the OpenAPI spec
 * (`FunctionTool`, `FunctionToolCall`, `FunctionCallOutputItemParam`).
 * Server-side tool items (`web_search_call`, `code_interpreter_call`, ...)
 * and built-in client tools are passthrough: never run here.
 */
import { Result } from "effect"
import type { ToolSpec } from "../Tool.ts"
import type { ToolCall } from "../ToolCall.ts"
import type { ToolResult } from "../ToolResult.ts"
import { imagesOf, textOf } from "./internal/content.ts"
import * as OpenAiFunction from "./internal/openAiFunction.ts"
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

/** Any other output item (`message`, `reasoning`, `web_search_call`, ...). */
export interface OtherItem {
  readonly type: string
  readonly id?: string
  readonly [key: string]: unknown
}

/** An item of `Response.output`. */
export type OutputItem = FunctionCall | OtherItem

/** `Response` (the fields read here). */
export interface Response {
  readonly id?: string
  readonly object?: "response"
  readonly output: ReadonlyArray<OutputItem>
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

/** `FunctionCallOutputItemParam`: the answer to one `call_id`. */
export interface FunctionCallOutput {
  readonly type: "function_call_output"
  readonly call_id: string
  readonly output: string | ReadonlyArray<InputText | InputImage>
}

// ---------------------------------------------------------------------------
// definitions
// ---------------------------------------------------------------------------

/** Strict mode choice: `"auto"` (default), `"require"` or `false`. */
export type Strict = OpenAiFunction.Strict

/** Export options: strict mode, limits, and a hook for `"auto"` fallbacks. */
export type ExportOptions = OpenAiFunction.ExportOptions

/**
 * The request's `tools`, one flat function per spec, named by canonical name,
 * with `strict` always explicit (the API would otherwise decide by itself).
 */
export const toolDefinitions = (
  specs: ReadonlyArray<ToolSpec>,
  options: ExportOptions = {}
): Result.Result<Array<FunctionTool>, ProviderExportError> =>
  Result.map(OpenAiFunction.exportAll("openai-responses", specs, options), (functions) =>
    functions.map(({ description, name, parameters, strict }) => ({
      type: "function",
      name,
      description,
      parameters,
      strict
    })))

// ---------------------------------------------------------------------------
// calls
// ---------------------------------------------------------------------------

/** Options of {@link toolCalls}. */
export interface CallOptions {
  /** The specs you exported: a `null` for an optional property becomes an absent key. */
  readonly specs?: ReadonlyArray<ToolSpec>
}

const isFunctionCall = (item: OutputItem): item is FunctionCall =>
  item.type === "function_call" && typeof item.call_id === "string" && typeof item.name === "string"

/** Tool activity that is not a function call: `*_call` items and MCP items. */
const isOtherToolItem = (item: OutputItem): boolean =>
  item.type !== "function_call" && (item.type.endsWith("_call") || item.type.startsWith("mcp_"))

/**
 * The `function_call` items of a response (or of an output list), by
 * `call_id`, argument text preserved. Other tool items are passthrough.
 */
export const toolCalls = (
  response: Response | ReadonlyArray<OutputItem>,
  options: CallOptions = {}
): ProviderCalls<OtherItem> => {
  const items = "output" in response ? response.output : response
  const calls: Array<ToolCall> = []
  const passthrough: Array<OtherItem> = []
  for (const item of items) {
    if (isFunctionCall(item)) {
      calls.push(
        OpenAiFunction.normalizeCall({ id: item.call_id, name: item.name, arguments: item.arguments }, options.specs)
      )
    } else if (isOtherToolItem(item)) passthrough.push(item)
  }
  return { calls, passthrough }
}

/** A strict-mode `null` for a property `spec` leaves optional becomes an absent key, recursively. */
export const normalizeArguments: (spec: ToolSpec, args: unknown) => unknown = OpenAiFunction.normalizeArguments

// ---------------------------------------------------------------------------
// results
// ---------------------------------------------------------------------------

/**
 * One `function_call_output` per result, in the order given: plain text, or
 * an `input_text` / `input_image` list when the result has images.
 */
export const toolMessages = (results: ReadonlyArray<ToolResult>): Array<FunctionCallOutput> =>
  results.map((result) => {
    const images = imagesOf(result)
    const text = textOf(result)
    return {
      type: "function_call_output",
      call_id: result.toolCallId,
      output: images.length === 0 ? text : [
        ...(text.length === 0 ? [] : [{ type: "input_text" as const, text }]),
        ...images.map((image) => ({
          type: "input_image" as const,
          image_url: `data:${image.mimeType};base64,${image.data}`,
          detail: "auto" as const
        }))
      ]
    }
  })
