/**
 * Runs a batch of calls under one supervisor fiber: at most `concurrency` at
 * once, each call's outcome recorded inside its uninterruptible lifecycle.
 * Stopping (the first raised error under fail-fast, run cancellation, or the
 * caller interrupting) first marks the batch stopped, so no further call is
 * admitted, then interrupts the calls in flight and waits for them. The batch
 * returns only once every call has ended, and its results are a frozen
 * snapshot: nothing writes to them afterwards.
 */
import { Effect, Exit, Fiber } from "effect"
import type * as Cancellation from "../../Cancellation.ts"
import type { ToolCall } from "../../../contract/ToolCall.ts"
import * as ToolError from "../../../contract/ToolError.ts"
import * as ToolResult from "../../../contract/ToolResult.ts"
import type { Restore } from "./Call.ts"
import * as Now from "./Now.ts"
import { Ended, errorOf, type Outcome } from "./Outcome.ts"

export interface Settled {
  /** One result per call, in call order (frozen). */
  readonly results: ReadonlyArray<ToolResult.ToolResult>
  /** Raised errors, in call order (frozen); cancellations are not errors. */
  readonly errors: ReadonlyArray<ToolError.ToolError>
  /** Per call: `undefined` when it never started (frozen; the very array `results` is when every call completed). */
  readonly outcomes: ReadonlyArray<Outcome | undefined>
}

/**
 * A batch's settings. The caller's own fields ride along (one object per batch): `runCall` is
 * handed the very object, so it needs no closure made per batch.
 */
export interface Options {
  readonly concurrency: number
  readonly failFast: boolean
  readonly runCancel: Cancellation.RunCancel
}

/** What a call asks of its batch: whether it stopped (read at once, when it matters). */
export interface Stopping {
  readonly stopped: boolean
}

/** A batch's errors when it raised none (frozen, shared). */
const noErrors: ReadonlyArray<ToolError.ToolError> = Object.freeze([])

/** What a call answered synchronously counts towards its worker's operation budget (about what its effect took). */
const callOps = 32

/**
 * One call's lifecycle, run uninterruptibly with `restore` making its invocation interruptible,
 * started now on `fiber` (the worker's): its outcome itself, or a completed `Exit`, when it ended
 * without suspending (`Now.Answer`).
 * `options` is the batch's (with the caller's fields), `batch` says whether it stopped.
 */
export type RunCall<O extends Options> = (
  call: ToolCall,
  options: O,
  restore: Restore,
  batch: Stopping,
  fiber: Fiber.Fiber<unknown, unknown>
) => Now.Answer<Outcome | undefined>

/**
 * Runs `calls` with `runCall`, started now on `fiber`, the fiber running it, which must be inside an
 * uninterruptible region whose `restore` is given (`Effect.uninterruptibleMask`): a batch whose calls
 * all complete synchronously answers a completed `Exit`, with no fiber of its own.
 */
export const start = <O extends Options>(
  fiber: Fiber.Fiber<unknown, unknown>,
  restore: Restore,
  calls: ReadonlyArray<ToolCall>,
  options: O,
  runCall: RunCall<O>
): Effect.Effect<Settled> => new Run(calls, options, runCall).start(fiber, restore)

/** One batch: its calls' outcomes, whether it stopped, and the next call a worker takes. */
class Run<O extends Options> implements Stopping {
  readonly calls: ReadonlyArray<ToolCall>
  readonly options: O
  readonly runCall: RunCall<O>
  readonly outcomes: Array<Outcome | undefined>
  stopped: boolean
  supervisor: Fiber.Fiber<void> | undefined = undefined
  /**
   * At most `concurrency` workers, each taking the next call in order until none is
   * left or the batch stops: call `i` starts only when a worker is free, as with one
   * fiber per call, without a fiber, a mask and closures per call. A worker runs
   * inside one mask; between two calls it only checks `stopped` (set before any
   * interruption of the batch), so it never starts a call after the batch stopped.
   */
  next = 0
  constructor(calls: ReadonlyArray<ToolCall>, options: O, runCall: RunCall<O>) {
    this.calls = calls
    this.options = options
    this.runCall = runCall
    this.outcomes = new Array(calls.length)
    this.stopped = options.runCancel.reasonUnsafe() !== undefined
  }
  stop(): void {
    if (this.stopped) return
    this.stopped = true
    this.supervisor?.interruptUnsafe()
  }
  /**
   * The results: one per call, in call order, frozen. When every call completed with nothing to raise
   * or cancel, the outcomes are the results (one array for both).
   */
  settle(): Settled {
    const { calls, outcomes } = this
    let i = 0
    while (i < calls.length && outcomes[i] !== undefined && !(outcomes[i] instanceof Ended)) i++
    if (i === calls.length) {
      const results = Object.freeze(outcomes as Array<ToolResult.ToolResult>)
      return { results, errors: noErrors, outcomes: results }
    }
    const results: Array<ToolResult.ToolResult> = outcomes.slice(0, i) as Array<ToolResult.ToolResult>
    results.length = calls.length
    const errors: Array<ToolError.ToolError> = []
    for (; i < calls.length; i++) {
      const outcome = outcomes[i]
      if (outcome === undefined) {
        const call = calls[i]!
        results[i] = ToolResult.fromError(call, new ToolError.ToolCancelled({ toolName: call.name, started: false }))
      } else if (outcome instanceof Ended) {
        results[i] = outcome.result
        if (outcome.error !== undefined) errors.push(outcome.error)
      } else results[i] = outcome
    }
    return { results: Object.freeze(results), errors: Object.freeze(errors), outcomes: Object.freeze(outcomes) }
  }
  start(fiber: Fiber.Fiber<unknown, unknown>, restore: Restore): Effect.Effect<Settled> {
    if (this.stopped || this.calls.length === 0) return Exit.succeed(this.settle())
    const workers = Math.min(this.options.concurrency, this.calls.length)
    // The first worker starts here, on the calling fiber (under the caller's mask): a batch whose calls
    // all complete synchronously ends without a fiber of its own. (Nothing can stop it meanwhile but
    // its own calls, which only set `stopped`: no fiber of the batch runs yet to interrupt.)
    const first = new Worker(this)
    const rest = Now.mode.eager ? first.drain(fiber) : first.loop()
    if (rest === undefined) return Exit.succeed(this.settle())
    // At the first call that suspends, the rest of that worker and the others run under one
    // supervisor fiber, which stopping interrupts.
    const each = [Effect.uninterruptible(rest)]
    for (let w = 1; w < workers; w++) each.push(Effect.uninterruptible(new Worker(this).loop()))
    const work = each.length === 1
      ? each[0]!
      : Effect.forEach(each, (w) => w, { concurrency: "unbounded", discard: true })
    return Effect.flatMap(Effect.forkChild(work, { startImmediately: true }), (supervised) => {
      // Every call completed synchronously: there is nothing left to stop or wait for.
      if (supervised.pollUnsafe() !== undefined) return Effect.sync(() => this.settle())
      this.supervisor = supervised
      const unsubscribe = this.options.runCancel.onCancel(() => this.stop())
      if (this.stopped) supervised.interruptUnsafe()
      return restore(Fiber.await(supervised)).pipe(
        Effect.onInterrupt(() => {
          this.stopped = true
          return Fiber.interrupt(supervised)
        }),
        Effect.ensuring(Effect.sync(unsubscribe)),
        Effect.andThen(Effect.sync(() => this.settle()))
      )
    })
  }
}

/**
 * One worker: `drain` runs calls on `fiber` while each is answered as a completed `Exit` and
 * answers `undefined` once nothing is left for it, or what is left of it as an effect (a call that
 * suspended, then `loop`); `loop` is the whole worker as an effect. A worker runs uninterruptibly
 * and makes only its calls' invocations interruptible (`restore` is `Effect.interruptible`, whatever
 * fiber runs it).
 */
class Worker<O extends Options> {
  readonly batch: Run<O>
  current = -1
  constructor(batch: Run<O>) {
    this.batch = batch
  }
  record(outcome: Outcome | undefined): void {
    const batch = this.batch
    batch.outcomes[this.current] = outcome
    if (outcome !== undefined && batch.options.failFast && errorOf(outcome) !== undefined) batch.stop()
  }
  drain(fiber: Fiber.Fiber<unknown, unknown>): Effect.Effect<void> | undefined {
    const batch = this.batch
    const calls = batch.calls
    while (true) {
      if (batch.stopped || batch.next >= calls.length) return undefined
      // Fairness: other fibers (a run cancellation, a timer) get their turn even in a long
      // batch of synchronous calls. Effect yields a fiber wherever it runs out of its operation
      // budget (`MaxOpsBeforeYield`); inside a call that may be while it holds the run's event
      // slot, and then every worker queues behind it for the rest of the batch (measured:
      // 2.5 times the CPU per call). So a worker yields between two calls, once it has used
      // half its budget: a call of up to half a budget never reaches the limit.
      if (fiber.currentOpCount >= fiber.cache.maxOpsBeforeYield / 2 && !fiber.cache.preventYield) {
        return Effect.andThen(Effect.yieldNow, this.loop())
      }
      this.current = batch.next++
      const answer = batch.runCall(calls[this.current]!, batch.options, Effect.interruptible, batch, fiber)
      // A call answered by plain calls (`Call`) is recorded here, and the next one starts in the
      // same step; it counts as `callOps` operations towards the budget above.
      let outcome: Outcome | undefined
      if (Now.isEffect(answer)) {
        if (!Now.done(answer)) {
          Now.calls.effect++
          return Effect.flatMap(answer, (outcome) => {
            this.record(outcome)
            return this.loop()
          })
        }
        outcome = answer.value
      } else outcome = answer
      if (outcome !== undefined) Now.calls.now++
      this.record(outcome)
      ;(fiber as { currentOpCount: number }).currentOpCount += callOps
    }
  }
  /** The worker as an effect, from here on. */
  loop(): Effect.Effect<void> {
    return Effect.withFiber((fiber) => this.drain(fiber) ?? Effect.void)
  }
}
