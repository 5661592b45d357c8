/**
 * Lifecycle steps 1 to 5: resolve the name, check it was advertised, decode the
 * arguments (all in `ToolRegistry.resolve`), then count the call against the
 * run's limits. Admission either refuses a call (a `Rejection`, reported as
 * `tool.rejected`) or admits it; it never runs anything. A refusal of a known
 * tool is redacted per its `safety.redact` here, once, before anything reads
 * it: its message never quotes a value under a redacted key.
 */
import { Result } from "effect"
import type { Options } from "../../Executor.ts"
import type { ToolCall } from "../../../contract/ToolCall.ts"
import * as ToolError from "../../../contract/ToolError.ts"
import * as ToolRegistry from "../../../contract/ToolRegistry.ts"

type Limits = NonNullable<Options["limits"]>

export type Admission =
  | { readonly _tag: "Admitted"; readonly resolved: ToolRegistry.Resolved }
  | { readonly _tag: "Rejected"; readonly toolName: string; readonly error: ToolError.Rejection }

/**
 * The run's admission check; it owns the run's call counters. `count` adds a call admitted
 * elsewhere (a durable run's call replayed from its journal: `Executor.countReplayed`).
 */
export const make = (limits: Limits | undefined) => {
  let runCalls = 0
  const toolCalls = new Map<string, number>()

  const exceeded = (name: string): ToolError.ToolCallLimitExceeded | undefined => {
    const runLimit = limits?.run
    if (runLimit !== undefined && runCalls >= runLimit.max) {
      return new ToolError.ToolCallLimitExceeded({
        toolName: name,
        scope: "run",
        limit: runLimit.max,
        mode: runLimit.mode ?? "continue"
      })
    }
    const toolLimit = limits?.perTool?.[name] ?? limits?.tool
    const count = toolCalls.get(name) ?? 0
    if (toolLimit !== undefined && count >= toolLimit.max) {
      return new ToolError.ToolCallLimitExceeded({
        toolName: name,
        scope: "tool",
        limit: toolLimit.max,
        mode: toolLimit.mode ?? "continue"
      })
    }
    runCalls++
    toolCalls.set(name, count + 1)
    return undefined
  }

  const count = (name: string): void => {
    runCalls++
    toolCalls.set(name, (toolCalls.get(name) ?? 0) + 1)
  }

  const admit = (advertised: ToolRegistry.Advertised<unknown>, call: ToolCall): Admission => {
    const resolved = ToolRegistry.resolve(advertised, call)
    if (Result.isFailure(resolved)) {
      // Rejection messages are already redacted per the tool's policy by `ToolRegistry.resolve`.
      const error = resolved.failure
      return { _tag: "Rejected", toolName: error.toolName, error }
    }
    const name = resolved.success.entry.spec.name
    const limit = exceeded(name)
    return limit === undefined
      ? { _tag: "Admitted", resolved: resolved.success }
      : { _tag: "Rejected", toolName: name, error: limit }
  }
  return Object.assign(admit, { count })
}
