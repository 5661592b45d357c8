/**
 * Every tool call gets exactly one answer. Providers reject a conversation
 * where a call id is left unanswered (OpenAI: "An assistant message with
 * 'tool_calls' must be followed by tool messages responding to each
 * 'tool_call_id'"; Anthropic: "`tool_use` ids were found without
 * `tool_result` blocks immediately after"). `answerAll` checks the pairing
 * before any provider message is built and puts the results in call order.
 */
import { Data, Result } from "effect"
import type { ToolCall } from "../contract/ToolCall.ts"
import type { ToolResult } from "../contract/ToolResult.ts"

/** Calls and results do not pair one to one; every list names call ids. */
export class ToolAnswerMismatch extends Data.TaggedError("ToolAnswerMismatch")<{
  /** Calls without a result. */
  readonly unanswered: ReadonlyArray<string>
  /** Calls with more than one result. */
  readonly answeredTwice: ReadonlyArray<string>
  /** Results for ids that were not called (or called ids that appear twice among the calls). */
  readonly unexpected: ReadonlyArray<string>
}> {
  override get message(): string {
    const parts = [
      this.unanswered.length > 0 ? `unanswered tool calls: ${this.unanswered.join(", ")}` : undefined,
      this.answeredTwice.length > 0 ? `tool calls answered more than once: ${this.answeredTwice.join(", ")}` : undefined,
      this.unexpected.length > 0 ? `results or calls with unexpected ids: ${this.unexpected.join(", ")}` : undefined
    ].filter((part) => part !== undefined)
    return `every tool call needs exactly one result: ${parts.join("; ")}`
  }
}

/**
 * Pairs results with calls by id: succeeds with the results in call order
 * when every call has exactly one result and no result is left over.
 */
export const answerAll = (
  calls: ReadonlyArray<Pick<ToolCall, "id">>,
  results: ReadonlyArray<ToolResult>
): Result.Result<Array<ToolResult>, ToolAnswerMismatch> => {
  const byId = new Map<string, Array<ToolResult>>()
  for (const result of results) {
    const list = byId.get(result.toolCallId)
    if (list === undefined) byId.set(result.toolCallId, [result])
    else list.push(result)
  }
  const called = new Set<string>()
  const unanswered: Array<string> = []
  const answeredTwice: Array<string> = []
  const unexpected: Array<string> = []
  const ordered: Array<ToolResult> = []
  for (const call of calls) {
    if (called.has(call.id)) {
      unexpected.push(call.id)
      continue
    }
    called.add(call.id)
    const answers = byId.get(call.id) ?? []
    if (answers.length === 0) unanswered.push(call.id)
    else if (answers.length > 1) answeredTwice.push(call.id)
    else ordered.push(answers[0]!)
  }
  for (const id of byId.keys()) if (!called.has(id)) unexpected.push(id)
  return unanswered.length + answeredTwice.length + unexpected.length === 0
    ? Result.succeed(ordered)
    : Result.fail(new ToolAnswerMismatch({ unanswered, answeredTwice, unexpected }))
}
