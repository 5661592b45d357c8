/**
 * Shared pieces of the handoff tests (`Handoff.run`, `Handoff.stream`): a tool that hands the
 * conversation over (a `__handoff` payload in its value), a billing tool, and message helpers.
 */
import { Effect, Result, Schema } from "effect"
import { ChatModel, Tool, ToolRegistry, ToolResult } from "../../../src/index.ts"

/** A registry of `tools` (throws on a registration error: a bug in the test). */
export const registryOf = <const T extends ReadonlyArray<Tool.Any>>(tools: T) => Result.getOrThrow(ToolRegistry.makeResult(tools))

/** Hands the conversation to another agent: its value carries a `__handoff` payload (and a note). */
export const transfer = Tool.make("transfer", {
  description: "Hands the conversation to another agent.",
  input: Schema.Struct({ to: Schema.String, task: Schema.String }),
  handler: ({ task, to }) => Effect.succeed({ __handoff: { target: to, task }, note: `transferring to ${to}` })
})

export const refund = Tool.make("refund", {
  description: "Refunds an order.",
  input: Schema.Struct({ order: Schema.Int }),
  handler: ({ order }) => Effect.succeed(`order ${order} refunded`)
})

export const user = (content: string): ChatModel.Message => ({ role: "user", content })

/** The text of the first result of the last message, when it answers calls. */
export const lastResult = (request: ChatModel.Request): string => {
  const last = request.messages.at(-1)
  return last?.role === "tool" ? ToolResult.textOf(last.results[0]!) : "?"
}
