/**
 * Which result of a turn hands the conversation on: the first successful one whose audit carries a
 * handoff (`audit.handoff`) to one of the agents the run may hand over to. The loop (`Agent`) stops on
 * it; `Handoff.run` reads it to start the receiving agent.
 */
import type * as ToolResult from "../../contract/ToolResult.ts"

export const find = (
  results: ReadonlyArray<ToolResult.ToolResult>,
  targets: ReadonlyArray<string>
): { readonly result: ToolResult.ToolResult; readonly handoff: ToolResult.Handoff } | undefined => {
  for (const result of results) {
    const handoff = result.audit?.handoff
    if (!result.isError && handoff !== undefined && targets.includes(handoff.target)) return { result, handoff }
  }
  return undefined
}
