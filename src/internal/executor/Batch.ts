/**
 * Runs a batch of calls under one supervisor fiber: at most `concurrency` at
 * once, each call's outcome recorded inside its uninterruptible lifecycle.
 * Stopping (the first raised error under fail-fast, run cancellation, or the
 * caller interrupting) first marks the batch stopped, so no further call is
 * admitted, then interrupts the calls in flight and waits for them. The batch
 * returns only once every call has ended, and its results are a frozen
 * snapshot: nothing writes to them afterwards.
 */
import { Effect, Fiber } from "effect"
import type * as Cancellation from "../../Cancellation.ts"
import type { ToolCall } from "../../ToolCall.ts"
import * as ToolError from "../../ToolError.ts"
import * as ToolResult from "../../ToolResult.ts"
import type { Outcome, Restore } from "./Call.ts"

export interface Settled {
  /** One result per call, in call order (frozen). */
  readonly results: ReadonlyArray<ToolResult.ToolResult>
  /** Raised errors, in call order (frozen); cancellations are not errors. */
  readonly errors: ReadonlyArray<ToolError.ToolError>
  /** Per call: `undefined` when it never started. */
  readonly outcomes: ReadonlyArray<Outcome | undefined>
}

export interface Options {
  readonly concurrency: number
  readonly failFast: boolean
  readonly runCancel: Cancellation.RunCancel
}

/** `runCall(call, restore, stopped)` must be one call's lifecycle, run inside the mask that `restore` belongs to. */
export const run = (
  calls: ReadonlyArray<ToolCall>,
  options: Options,
  runCall: (call: ToolCall, restore: Restore, stopped: () => boolean) => Effect.Effect<Outcome | undefined>
): Effect.Effect<Settled> =>
  Effect.suspend(() => {
    const outcomes: Array<Outcome | undefined> = new Array(calls.length)
    let stopped = options.runCancel.reasonUnsafe() !== undefined
    let supervisor: Fiber.Fiber<void> | undefined
    const isStopped = () => stopped
    const stop = () => {
      if (stopped) return
      stopped = true
      supervisor?.interruptUnsafe()
    }
    const one = (call: ToolCall, i: number) =>
      Effect.uninterruptibleMask((restore) =>
        Effect.map(runCall(call, restore, isStopped), (outcome) => {
          outcomes[i] = outcome
          if (outcome?.error !== undefined && options.failFast) stop()
        })
      )
    const settled = Effect.sync((): Settled => {
      const results: Array<ToolResult.ToolResult> = new Array(calls.length)
      const errors: Array<ToolError.ToolError> = []
      for (let i = 0; i < calls.length; i++) {
        const outcome = outcomes[i]
        if (outcome === undefined) {
          const call = calls[i]!
          results[i] = ToolResult.fromError(call, new ToolError.ToolCancelled({ toolName: call.name, started: false }))
        } else {
          results[i] = outcome.result
          if (outcome.error !== undefined) errors.push(outcome.error)
        }
      }
      return { results: Object.freeze(results), errors: Object.freeze(errors), outcomes: Object.freeze(outcomes) }
    })
    if (stopped || calls.length === 0) return settled
    const work = Effect.forEach(calls, one, { concurrency: options.concurrency, discard: true })
    return Effect.uninterruptibleMask((restore) =>
      Effect.flatMap(Effect.forkChild(work, { startImmediately: true }), (fiber) => {
        supervisor = fiber
        const unsubscribe = options.runCancel.onCancel(stop)
        if (stopped) fiber.interruptUnsafe()
        return restore(Fiber.await(fiber)).pipe(
          Effect.onInterrupt(() => {
            stopped = true
            return Fiber.interrupt(fiber)
          }),
          Effect.ensuring(Effect.sync(unsubscribe)),
          Effect.andThen(settled)
        )
      })
    )
  })
