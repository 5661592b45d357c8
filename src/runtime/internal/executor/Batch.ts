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
import type { ToolCall } from "../../../contract/ToolCall.ts"
import * as ToolError from "../../../contract/ToolError.ts"
import * as ToolResult from "../../../contract/ToolResult.ts"
import type { Outcome, Restore } from "./Call.ts"
import * as Now from "./Now.ts"

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

/** What a call answered synchronously counts towards its worker's operation budget (about what its effect took). */
const callOps = 32

/**
 * `runCall(call, restore, stopped, fiber)` must be one call's lifecycle, run inside the mask that
 * `restore` belongs to, started now on `fiber` (the worker's): a completed `Exit` when it ended
 * without suspending.
 */
export const run = (
  calls: ReadonlyArray<ToolCall>,
  options: Options,
  runCall: (
    call: ToolCall,
    restore: Restore,
    stopped: () => boolean,
    fiber: Fiber.Fiber<unknown, unknown>
  ) => Effect.Effect<Outcome | undefined>
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
    /**
     * At most `concurrency` workers, each taking the next call in order until none is
     * left or the batch stops: call `i` starts only when a worker is free, as with one
     * fiber per call, without a fiber, a mask and closures per call. A worker runs
     * inside one mask; between two calls it only checks `stopped` (set before any
     * interruption of the batch), so it never starts a call after the batch stopped.
     */
    let next = 0
    const worker = (restore: Restore): Effect.Effect<void> => {
      let current = -1
      const record = (outcome: Outcome | undefined): void => {
        outcomes[current] = outcome
        if (outcome?.error !== undefined && options.failFast) stop()
      }
      const loop: Effect.Effect<void> = Effect.withFiber((fiber) => {
        while (true) {
          if (stopped || next >= calls.length) return Effect.void
          // Fairness: other fibers (a run cancellation, a timer) get their turn even in a long
          // batch of synchronous calls. Effect yields a fiber wherever it runs out of its operation
          // budget (`MaxOpsBeforeYield`); inside a call that may be while it holds the run's event
          // slot, and then every worker queues behind it for the rest of the batch (measured:
          // 2.5 times the CPU per call). So a worker yields between two calls, once it has used
          // half its budget: a call of up to half a budget never reaches the limit.
          if (fiber.currentOpCount >= fiber.cache.maxOpsBeforeYield / 2 && !fiber.cache.preventYield) {
            return Effect.andThen(Effect.yieldNow, loop)
          }
          current = next++
          const outcome = runCall(calls[current]!, restore, isStopped, fiber)
          // A call answered by plain calls (`Call`) is recorded here, and the next one starts in the
          // same step; it counts as `callOps` operations towards the budget above.
          if (!Now.done(outcome)) {
            Now.calls.effect++
            return Effect.flatMap(outcome, recorded)
          }
          if (outcome.value !== undefined) Now.calls.now++
          record(outcome.value)
          ;(fiber as { currentOpCount: number }).currentOpCount += callOps
        }
      })
      const recorded = (outcome: Outcome | undefined): Effect.Effect<void> => {
        record(outcome)
        return loop
      }
      return loop
    }
    const masked = Effect.uninterruptibleMask(worker)
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
    const workers = Math.min(options.concurrency, calls.length)
    const work = workers === 1
      ? masked
      : Effect.forEach(new Array<typeof masked>(workers).fill(masked), (w) => w, {
        concurrency: "unbounded",
        discard: true
      })
    return Effect.uninterruptibleMask((restore) =>
      Effect.flatMap(Effect.forkChild(work, { startImmediately: true }), (fiber) => {
        // Every call completed synchronously: there is nothing left to stop or wait for.
        if (fiber.pollUnsafe() !== undefined) return settled
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
