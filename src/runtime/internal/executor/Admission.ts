/**
 * Lifecycle step 1, admit: resolve the name, check it was advertised, decode the
 * arguments (all in `ToolRegistry.resolve`, asked here without its `Result`, which also redacts a refusal of a
 * known tool per its `safety.redact`: its message never quotes a value under a
 * redacted key), then count the call against the run's limits. Admission either
 * refuses a call (a `Rejection`, reported as `tool.rejected`) or admits it; it
 * never runs anything.
 */
import type { Limit, Options } from "../../Executor.ts"
import type { ToolCall } from "../../../contract/ToolCall.ts"
import * as ToolError from "../../../contract/ToolError.ts"
import type * as ToolRegistry from "../../../contract/ToolRegistry.ts"
import * as Resolve from "../../../internal/resolve.ts"

type Limits = NonNullable<Options["limits"]>

/** A refused call: reported as `tool.rejected`. */
export class Rejected {
  readonly toolName: string
  readonly error: ToolError.Rejection
  constructor(toolName: string, error: ToolError.Rejection) {
    this.toolName = toolName
    this.error = error
  }
}

/** An admitted call is its resolution itself (no wrapper per call); a refused one is {@link Rejected}. */
export type Admission = ToolRegistry.Resolved | Rejected

/**
 * The run's admission check; it owns the run's call counters. `count` adds a call admitted
 * elsewhere (a durable run's call replayed from its journal: `Executor.countReplayed`).
 */
export const make = (limits: Limits | undefined) => {
  let runCalls = 0
  const toolCalls = new Map<string, number>()

  /** The refusal when `calls` have reached `limit` (its mode defaults to `continue`). */
  const reached = (name: string, scope: "run" | "tool", limit: Limit | undefined, calls: number) =>
    limit !== undefined && calls >= limit.max
      ? new ToolError.ToolCallLimitExceeded({ toolName: name, scope, limit: limit.max, mode: limit.mode ?? "continue" })
      : undefined

  const count = (name: string): void => {
    runCalls++
    toolCalls.set(name, (toolCalls.get(name) ?? 0) + 1)
  }

  /** The refusal of a call over a limit; a call within them is counted. */
  const exceeded = (name: string): ToolError.ToolCallLimitExceeded | undefined => {
    const refusal = reached(name, "run", limits?.run, runCalls) ??
      reached(name, "tool", limits?.perTool?.[name] ?? limits?.tool, toolCalls.get(name) ?? 0)
    if (refusal === undefined) count(name)
    return refusal
  }

  const admit = (advertised: ToolRegistry.Advertised<unknown>, call: ToolCall): Admission => {
    const resolved = Resolve.resolveNow(advertised, call)
    if (Resolve.isRefusal(resolved)) {
      // Rejection messages are already redacted per the tool's policy by `Resolve.resolveNow`.
      return new Rejected(resolved.toolName, resolved)
    }
    const name = resolved.entry.spec.name
    const limit = exceeded(name)
    return limit === undefined ? resolved : new Rejected(name, limit)
  }
  return Object.assign(admit, { count })
}
