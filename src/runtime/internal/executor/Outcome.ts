/**
 * How a call ended, for the batch (`Call` answers it, `Batch` records it, `Tracing` and `Executor.run`
 * read it): the call's result itself when it completed with nothing to raise (the common case, so
 * that no record is made per call), else an {@link Ended}: a result the batch must raise, or a
 * call that was cancelled after it started.
 */
import type * as ToolError from "../../../contract/ToolError.ts"
import type * as ToolResult from "../../../contract/ToolResult.ts"

export class Ended {
  readonly result: ToolResult.ToolResult
  /** Present when the call must be raised: a fatal error, or a repairable one when repair is off. */
  readonly error: ToolError.ToolError | undefined
  /** Started, then interrupted (fail-fast, run cancellation, or the caller). */
  readonly cancelled: boolean
  constructor(result: ToolResult.ToolResult, error: ToolError.ToolError | undefined, cancelled: boolean) {
    this.result = result
    this.error = error
    this.cancelled = cancelled
  }
}

export type Outcome = ToolResult.ToolResult | Ended

/** The call's result. */
export const resultOf = (outcome: Outcome): ToolResult.ToolResult => outcome instanceof Ended ? outcome.result : outcome

/** The error the batch raises for the call, if any. */
export const errorOf = (outcome: Outcome): ToolError.ToolError | undefined =>
  outcome instanceof Ended ? outcome.error : undefined

/** True when the call started, then was interrupted. */
export const cancelledOf = (outcome: Outcome): boolean => outcome instanceof Ended && outcome.cancelled
