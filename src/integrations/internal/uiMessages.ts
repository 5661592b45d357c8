/**
 * The chat `useChat` posts (its `UIMessage`s) as an agent's transcript: system and user text, and
 * each assistant step as an assistant message (its text and the calls that have an outcome) followed
 * by the tool message answering them. What a browser sends is the client's word: a server that must
 * not trust earlier tool outputs keeps the transcript itself (`AgentResult.transcript`).
 */
import type { UIMessage } from "ai"
import type * as ChatModel from "../../agent/ChatModel.ts"
import type { ToolCall } from "../../contract/ToolCall.ts"
import * as ToolResult from "../../contract/ToolResult.ts"

/** The part fields read here (common to AI SDK 6 and 7). */
interface Part {
  readonly type: string
  readonly text?: string
  readonly toolCallId?: string
  readonly toolName?: string
  readonly state?: string
  readonly input?: unknown
  /** Where AI SDK 6 keeps an input refused with `tool-input-error`. */
  readonly rawInput?: unknown
  readonly output?: unknown
  readonly errorText?: string
}

const textOf = (parts: ReadonlyArray<Part>): string =>
  parts.flatMap((part) => part.type === "text" && part.text !== undefined ? [part.text] : []).join("")

const toolNameOf = (part: Part): string | undefined =>
  part.type === "dynamic-tool" ? part.toolName : part.type.startsWith("tool-") ? part.type.slice(5) : undefined

/** One assistant step: its message, and the tool message with the outcomes of its calls (when it has calls). */
const step = (parts: ReadonlyArray<Part>): Array<ChatModel.Message> => {
  const calls: Array<ToolCall> = []
  const results: Array<ToolResult.ToolResult> = []
  for (const part of parts) {
    const name = toolNameOf(part)
    if (name === undefined || part.toolCallId === undefined) continue
    if (part.state !== "output-available" && part.state !== "output-error") continue
    const isError = part.state === "output-error"
    const output = isError
      ? part.errorText ?? ""
      : typeof part.output === "string"
      ? part.output
      : JSON.stringify(part.output) ?? "null"
    calls.push({ id: part.toolCallId, name, arguments: (part.input ?? part.rawInput ?? {}) as ToolCall["arguments"] })
    results.push({
      toolCallId: part.toolCallId,
      name,
      content: [ToolResult.text(output)],
      artifacts: [],
      isError,
      elapsed: 0
    })
  }
  const content = textOf(parts)
  if (content === "" && calls.length === 0) return []
  const assistant: ChatModel.Message = { role: "assistant", content, toolCalls: calls }
  return results.length === 0 ? [assistant] : [assistant, { role: "tool", results }]
}

/** The messages as an agent's transcript (see the module comment). Files, reasoning and data parts are left out. */
export const toTranscript = (messages: ReadonlyArray<UIMessage>): Array<ChatModel.Message> =>
  messages.flatMap((message): Array<ChatModel.Message> => {
    const parts = message.parts as ReadonlyArray<Part>
    switch (message.role) {
      case "system":
        return [{ role: "system", content: textOf(parts) }]
      case "user":
        return [{ role: "user", content: textOf(parts) }]
      case "assistant": {
        const steps: Array<Array<Part>> = [[]]
        for (const part of parts) {
          if (part.type === "step-start") steps.push([])
          else steps.at(-1)!.push(part)
        }
        return steps.flatMap(step)
      }
      default:
        return []
    }
  })
