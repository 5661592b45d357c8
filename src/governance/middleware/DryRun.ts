/**
 * `dryRun`: never runs the handler of a matching tool; the call gets a
 * synthetic successful result tagged `dry_run` (layer status and
 * `audit.metadata.dryRun`). For previewing a sequence of calls without side
 * effects. Non-matching tools run as usual.
 */
import { Effect } from "effect"
import type { Middleware } from "../../runtime/Middleware.ts"
import * as ToolResult from "../../contract/ToolResult.ts"
import * as AuditTrail from "./AuditTrail.ts"

export interface Options {
  /** Only these tools (canonical names) are dry-run. Default: every tool. */
  readonly only?: ReadonlyArray<string>
  /** These tools run for real. */
  readonly except?: ReadonlyArray<string>
}

/** Short-circuits matching calls with a synthetic `dry_run` result. */
export const dryRun = (options: Options = {}): Middleware =>
  AuditTrail.make("dry_run", (invocation, next, recorder) => {
    const { name } = invocation.spec
    const matches = (options.only === undefined || options.only.includes(name)) &&
      !(options.except ?? []).includes(name)
    if (!matches) return AuditTrail.skip(invocation, next, recorder)
    return Effect.as(
      Effect.andThen(recorder.mark("dry_run"), recorder.annotate({ metadata: { dryRun: true } })),
      {
        toolCallId: invocation.call.id,
        name,
        content: [ToolResult.text(`[dry run] ${name} was not executed`)],
        value: { dryRun: true, tool: name },
        artifacts: [],
        isError: false,
        elapsed: 0,
        ...(invocation.call.provider === undefined ? {} : { provider: invocation.call.provider })
      }
    )
  })
