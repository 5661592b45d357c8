/**
 * Transcript helpers the adapters share: putting a tool message's results in
 * the order of the calls they answer before they are sent, a call's arguments
 * as the JSON text the OpenAI wire formats carry or the object Anthropic and
 * Gemini carry, and the turns of a transcript whose system text travels apart
 * (Anthropic, Gemini).
 */
import { Result } from "effect"
import type { Message } from "../../ChatModel.ts"
import * as ToolAnswers from "../../../providers/ToolAnswers.ts"
import type { ToolCall } from "../../../contract/ToolCall.ts"
import type { ToolResult } from "../../../contract/ToolResult.ts"
import { stringify } from "../../../internal/json.ts"

/**
 * `results` in the order of the previous assistant message's calls when they
 * pair one to one; as given otherwise (the provider then reports the
 * mismatch itself).
 */
export const inCallOrder = (
  previous: Message | undefined,
  results: ReadonlyArray<ToolResult>
): ReadonlyArray<ToolResult> => {
  if (previous?.role !== "assistant") return results
  const paired = ToolAnswers.answerAll(previous.toolCalls, results)
  return Result.isSuccess(paired) ? paired.success : results
}

/** Arguments as the wire wants them: the model's own JSON text, or JSON text of a parsed value. */
export const argumentsText = (args: unknown): string => {
  if (typeof args === "string") return args
  try {
    return stringify(args) ?? "null"
  } catch {
    return String(args)
  }
}

const isObject = (value: unknown): value is { readonly [key: string]: unknown } =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/**
 * Arguments as the object Anthropic (`tool_use.input`) and Gemini
 * (`functionCall.args`) require: an object as it is, JSON object text (a
 * transcript from another provider) parsed, anything else kept verbatim
 * under `_raw`, never replaced by `{}`.
 */
export const argumentsObject = (args: unknown): { readonly [key: string]: unknown } => {
  if (isObject(args)) return args
  if (typeof args === "string") {
    try {
      const parsed: unknown = JSON.parse(args)
      if (isObject(parsed)) return parsed
    } catch {
      // not JSON: kept below
    }
  }
  return { _raw: args }
}

/** How a wire format writes the turns of {@link systemApart}. */
export interface Turns<Turn> {
  readonly user: (text: string) => Turn
  /** `last` with a user message's `text` added, when it takes it (a turn of tool results); `undefined`: a turn of its own. */
  readonly join: (last: Turn, text: string) => Turn | undefined
  readonly assistant: (content: string, toolCalls: ReadonlyArray<ToolCall>) => Turn
  /** The results (in call order) of the message after `previous`. */
  readonly tool: (results: ReadonlyArray<ToolResult>, previous: Message | undefined) => Turn
}

/**
 * A transcript for an API that takes the system prompt apart and answers tool
 * calls in a user turn: the system messages, in order, joined by a blank line,
 * and the other messages as turns, where a user message right after tool
 * results joins their turn (when `join` takes it) and an empty assistant turn
 * is left out.
 */
export const systemApart = <Turn>(
  messages: ReadonlyArray<Message>,
  turns: Turns<Turn>
): { readonly system: string | undefined; readonly turns: Array<Turn> } => {
  const system: Array<string> = []
  const out: Array<Turn> = []
  messages.forEach((message, i) => {
    switch (message.role) {
      case "system":
        system.push(message.content)
        return
      case "user": {
        const last = out.at(-1)
        const joined = last === undefined ? undefined : turns.join(last, message.content)
        if (joined === undefined) out.push(turns.user(message.content))
        else out[out.length - 1] = joined
        return
      }
      case "assistant":
        if (message.content !== "" || message.toolCalls.length > 0) out.push(turns.assistant(message.content, message.toolCalls))
        return
      case "tool": {
        const previous = messages[i - 1]
        out.push(turns.tool(inCallOrder(previous, message.results), previous))
        return
      }
    }
  })
  return { system: system.length === 0 ? undefined : system.join("\n\n"), turns: out }
}
