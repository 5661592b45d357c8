/**
 * Transcript helpers the adapters share: putting a tool message's results in
 * the order of the calls they answer before they are sent, and a call's
 * arguments as the JSON text the OpenAI wire formats carry.
 */
import { Result } from "effect"
import type { Message } from "../../ChatModel.ts"
import * as ToolAnswers from "../../../providers/ToolAnswers.ts"
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
