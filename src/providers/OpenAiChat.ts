/**
 * OpenAI Chat Completions: tool definitions (`tools[]` of type `function`,
 * strict by default where the schema allows it), the function calls of an
 * assistant message as `ToolCall`s, and one `role: "tool"` message per
 * result. Wire types follow openai-node `src/resources/chat/completions` and
 * the OpenAPI spec (`ChatCompletionTool`, `FunctionObject`,
 * `ChatCompletionMessageToolCall`, `ChatCompletionRequestToolMessage`).
 * Outbound types (definitions, tool messages) use mutable arrays, so they
 * assign to the `openai` package's request params; inbound types are the
 * fields read, so its `ChatCompletion` and `ChatCompletionMessage` assign to
 * them (checked by `test/providers/SdkTypes.test.ts`). It does not call the
 * API, stream, or parse arguments (the registry does).
 */
import { Result } from "effect"
import type { ToolSpec } from "../contract/Tool.ts"
import type { ToolCall } from "../contract/ToolCall.ts"
import type { ToolResult } from "../contract/ToolResult.ts"
import { textOnly } from "./internal/content.ts"
import * as ExportTools from "./internal/exportTools.ts"
import * as Names from "./internal/names.ts"
import * as OpenAiStrict from "./internal/openAiStrict.ts"
import * as Output from "./internal/output.ts"
import { toDraft2020 } from "./internal/schema.ts"
import * as OpenAiFunction from "./internal/openAiFunction.ts"
import type { ProviderCalls } from "./ProviderCalls.ts"
import type { ProviderExportError } from "./ProviderExportError.ts"

// ---------------------------------------------------------------------------
// wire types
// ---------------------------------------------------------------------------

/** `FunctionObject`: omitting `parameters` means no parameters. */
export interface FunctionDefinition {
  readonly name: string
  readonly description?: string
  readonly parameters?: { readonly [key: string]: unknown }
  readonly strict?: boolean | null
}

/** `ChatCompletionFunctionTool`: one entry of the request's `tools`. */
export interface FunctionTool {
  readonly type: "function"
  readonly function: FunctionDefinition
}

/** `ChatCompletionMessageFunctionToolCall`: `arguments` is JSON text the model wrote (not always valid). */
export interface FunctionToolCall {
  readonly id: string
  readonly type: "function"
  readonly function: { readonly name: string; readonly arguments: string }
}

/** `ChatCompletionMessageCustomToolCall`: a free-form custom tool, not a function. */
export interface CustomToolCall {
  readonly id: string
  readonly type: "custom"
  readonly custom: { readonly name: string; readonly input: string }
}

/** `ChatCompletionMessageToolCall`. */
export type MessageToolCall = FunctionToolCall | CustomToolCall

/** `ChatCompletionMessage`: the assistant message of a choice. */
export interface ChatCompletionMessage {
  readonly role: "assistant"
  readonly content: string | null
  readonly refusal?: string | null
  readonly tool_calls?: ReadonlyArray<MessageToolCall>
}

/** `ChatCompletion` (the fields read here). */
export interface ChatCompletion {
  readonly id: string
  readonly object?: "chat.completion"
  readonly choices: ReadonlyArray<{
    readonly index: number
    readonly message: ChatCompletionMessage
    readonly finish_reason: string | null
  }>
}

/** `ChatCompletionContentPartText`. */
export interface TextPart {
  readonly type: "text"
  readonly text: string
}

/** `ChatCompletionToolMessageParam`: the answer to one tool call (a mutable array, as the SDK's param wants). */
export interface ToolMessage {
  readonly role: "tool"
  readonly tool_call_id: string
  readonly content: string | Array<TextPart>
}

// ---------------------------------------------------------------------------
// definitions
// ---------------------------------------------------------------------------

/** Strict mode choice: `"auto"` (default), `"require"` or `false`. */
export type Strict = OpenAiFunction.Strict

/** Export options: strict mode, limits, and a hook for `"auto"` fallbacks. */
export type ExportOptions = OpenAiFunction.ExportOptions

/** {@link toolDefinitions} as a `Result`, for synchronous callers. */
export const toolDefinitionsResult = OpenAiFunction.exporter(
  "openai-chat",
  ({ description, name, parameters, strict }): FunctionTool => ({
    type: "function",
    function: { name, description, parameters, strict }
  })
)

/**
 * The request's `tools`, one function per spec, named by canonical name.
 * Under strict mode every property is required, optional ones nullable, every
 * object closed; a schema strict mode cannot express falls back to
 * `strict: false` (`"auto"`) or fails (`"require"`).
 */
export const toolDefinitions = ExportTools.toEffect(toolDefinitionsResult)

/** `ResponseFormatJSONSchema`: the request's `response_format` asking for a structured answer. */
export interface ResponseFormat {
  readonly type: "json_schema"
  readonly json_schema: {
    readonly name: string
    readonly description?: string
    readonly schema?: { readonly [key: string]: unknown }
    readonly strict?: boolean | null
  }
}

/**
 * The `response_format` for a structured answer (`ChatModel.OutputFormat`): its schema under the
 * same strict-mode choice as tools (`"auto"`: strict when the schema allows it).
 */
export const responseFormatResult = (
  output: Output.OutputSchema,
  options: ExportOptions = {}
): Result.Result<ResponseFormat, ProviderExportError> =>
  Result.flatMap(Output.checked("openai-chat", Names.openAiRule, output), ({ name, schema }) =>
    Result.map(OpenAiFunction.exportSchema("openai-chat", name, schema, options), ({ parameters, strict }) => ({
      type: "json_schema" as const,
      json_schema: { name, description: output.description, schema: parameters, strict }
    })))

/**
 * A structured answer's JSON text with strict mode's nulls for optional properties made absent keys
 * again (Chat and Responses alike); text that is not JSON is returned as it is, for the decoder to reject.
 */
export const normalizeAnswer = (output: Output.OutputSchema, text: string): string =>
  OpenAiStrict.normalizeNulls(toDraft2020(output.schema), text) as string

// ---------------------------------------------------------------------------
// calls
// ---------------------------------------------------------------------------

/** Options of {@link toolCalls}. */
export interface CallOptions {
  /**
   * The specs you exported: a `null` the model sent for a property the spec
   * leaves optional becomes an absent key (strict mode makes the model send one).
   */
  readonly specs?: ReadonlyArray<ToolSpec>
  /** Which choice of a `ChatCompletion` to read. Default 0. */
  readonly choice?: number
}

/**
 * The function calls of an assistant message (or of a completion's choice),
 * ids and argument text preserved. Custom tool calls are passthrough.
 */
export const toolCalls = (
  response: ChatCompletion | ChatCompletionMessage,
  options: CallOptions = {}
): ProviderCalls<CustomToolCall> => {
  const message = "choices" in response ? response.choices[options.choice ?? 0]?.message : response
  const calls: Array<ToolCall> = []
  const passthrough: Array<CustomToolCall> = []
  for (const call of message?.tool_calls ?? []) {
    if (call.type === "function") {
      calls.push(
        OpenAiFunction.normalizeCall(
          { id: call.id, name: call.function.name, arguments: call.function.arguments },
          options.specs
        )
      )
    } else passthrough.push(call)
  }
  return { calls, passthrough }
}

/**
 * A strict-mode `null` for a property `spec` leaves optional becomes an absent
 * key, recursively. JSON text stays text; text that is not JSON is returned as is.
 */
export const normalizeArguments: (spec: ToolSpec, args: unknown) => unknown = OpenAiFunction.normalizeArguments

// ---------------------------------------------------------------------------
// results
// ---------------------------------------------------------------------------

/**
 * One `role: "tool"` message per result, in the order given. Chat tool
 * messages carry text only: a text resource's text is shown under its URI,
 * images, audio and binary resources are replaced by a note (`ResultContent.describe`).
 */
export const toolMessages = (results: ReadonlyArray<ToolResult>): Array<ToolMessage> =>
  results.map((result) => ({
    role: "tool",
    tool_call_id: result.toolCallId,
    content: textOnly(result, "a Chat Completions tool message carries text only")
  }))
