/**
 * A run's typed final answer: the output schema exported once (as the request's `OutputFormat` and
 * as the final-answer tool a model without structured output gets), the decoder the answer goes
 * through (the tool-input decoder: same limits, same issue wording), and the repair text a rejected
 * answer sends back. The loop (`Agent.ts`) decides when each applies.
 */
import { Result, Schema } from "effect"
import type * as ChatModel from "../ChatModel.ts"
import type { ToolSpec } from "../../contract/Tool.ts"
import type { ToolCall } from "../../contract/ToolCall.ts"
import { type InvalidArguments, MalformedArguments, repairable } from "../../contract/ToolError.ts"
import * as ToolInput from "../../contract/ToolInput.ts"
import type { ToolName } from "../../contract/ToolName.ts"
import * as ToolResult from "../../contract/ToolResult.ts"
import * as ToolSchema from "../../contract/ToolSchema.ts"

/** The default name of the final answer (the final-answer tool, the provider's schema name). */
export const defaultName = "final_answer"

const defaultDescription =
  "Give your final answer: call this once you have everything you need, with the answer as its arguments."

/** What the loop needs to ask for, read and report a typed final answer. */
export interface Plan<A> {
  readonly name: string
  readonly format: ChatModel.OutputFormat
  /** The final-answer tool, for a model without structured output. */
  readonly tool: ToolSpec
  readonly decode: (raw: unknown) => Result.Result<A, MalformedArguments | InvalidArguments>
  /** The decoded value as JSON (for events and journals). */
  readonly encode: (value: A) => unknown
}

/** The plan for `schema` (its root must be an object schema); a schema no model can be shown fails. */
export const plan = <S extends Schema.ConstraintDecoder<unknown>>(
  schema: S,
  options: { readonly name?: string | undefined; readonly description?: string | undefined } = {}
): Result.Result<Plan<S["Type"]>, ToolSchema.SchemaExportError> => {
  const name = options.name ?? defaultName
  const top = schema as unknown as Schema.Top
  const description = options.description ??
    (typeof top.ast.annotations?.["description"] === "string" ? top.ast.annotations["description"] : defaultDescription)
  return Result.map(ToolSchema.toJsonSchema(name, top), (jsonSchema): Plan<S["Type"]> => {
    const encode = Schema.encodeUnknownSync(ToolSchema.toModelCodec(top))
    return {
      name,
      format: { name, description, schema: jsonSchema },
      tool: {
        name: name as ToolName,
        description,
        inputSchema: jsonSchema,
        injected: [],
        safety: {},
        retry: false,
        idempotency: "none",
        options: {}
      },
      decode: ToolInput.decoder(name, schema),
      encode: (value) => encode(value)
    }
  })
}

/** The issues of a rejected answer, as the tool repair messages word them (without the tool's name). */
export const issuesText = (error: MalformedArguments | InvalidArguments): string =>
  error._tag === "MalformedArguments"
    ? `malformed answer: ${error.reason}`
    : `invalid answer: ${error.message.slice(`${error.toolName}: invalid arguments: `.length)}`

/** The user message that sends a rejected text answer back (structured output, or text with no final-answer call). */
export const repairMessage = (
  name: string,
  error: MalformedArguments | InvalidArguments,
  viaTool: boolean
): ChatModel.Message => ({
  role: "user",
  content: `${name}: ${issuesText(error)}. ${
    viaTool
      ? `Give your final answer by calling the ${name} tool with arguments that match its schema.`
      : "Answer again with only a JSON object that matches the output schema."
  }`
})

/** The rejection of a text answer where the final-answer tool was expected and the text is no JSON object. */
export const notCalled = (name: string): MalformedArguments =>
  new MalformedArguments({ toolName: name, reason: `the answer is text, not a call of the ${name} tool` })

/** The final-answer call's result when its answer is accepted. */
export const accepted = (call: ToolCall): ToolResult.ToolResult => ({
  toolCallId: call.id,
  name: call.name,
  content: [ToolResult.text("final answer accepted")],
  artifacts: [],
  isError: false,
  elapsed: 0
})

/** The result of a final-answer call that is not read: beside other tool calls, or after the first one. */
export const unread = (call: ToolCall): ToolResult.ToolResult =>
  ToolResult.fromError(
    call,
    repairable(`${call.name}: not read: call ${call.name} once, alone, after the other tools have answered`)
  )
