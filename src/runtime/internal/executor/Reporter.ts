/**
 * The run's event stream: stamps each event (run, thread, `Clock` time,
 * sequence number) at the moment it is handed to the `EventSink`, one event at
 * a time, uninterruptibly; a nested run's events (`RunContext.nesting`) also with their parent
 * run, parent call and depth. It owns the ordering rules; it does not decide which
 * events a call emits (that is `Call`).
 *
 * - Sequence numbers are assigned inside the critical section, so they are
 *   gap-free and in the order the sink receives them, whether `emit` is
 *   synchronous or suspends (a queue, a network exporter).
 * - An emission cannot be interrupted: once an event is due it is delivered,
 *   and an interrupted call waits for its events (a sink that never returns
 *   therefore holds the run).
 * - A sink that fails or dies does not fail the call: the failure is logged at
 *   `Warn` level with the event's tag and sequence, the event counts as offered
 *   (its number is not reused) and the next event is offered as usual.
 * - A lazy event (`emitLazy`, for progress) is made only once its turn has
 *   come, while the slot is held: what it says (or whether there is anything
 *   to say, `undefined` emits nothing and takes no number) is decided in
 *   order with the events before and after it.
 */
import { type Cause, type Clock, Effect, Exit } from "effect"
import type { EventSink } from "../../EventSink.ts"
import type { RunContext } from "../../RunContext.ts"
import type * as ToolEvent from "../../../contract/ToolEvent.ts"
import * as Now from "./Now.ts"

/** The services every event needs, read once per `run`/`runBatch`. */
export interface Env {
  readonly ctx: RunContext["Service"]
  readonly sink: EventSink["Service"]
  readonly clock: Clock.Clock
}

export interface Reporter {
  /** Stamps and delivers one event; completes once the sink has returned. Never fails, never interrupted. */
  readonly emit: (env: Env, event: ToolEvent.Unstamped<ToolEvent.Event>) => Effect.Effect<void>
  /** {@link emit} for callers already inside an uninterruptible region (the call lifecycle). */
  readonly emitMasked: (env: Env, event: ToolEvent.Unstamped<ToolEvent.Event> | Lazy) => Effect.Effect<void>
  /** {@link emit} of the event `make` returns when its turn comes (nothing when it returns `undefined`). */
  readonly emitLazy: (env: Env, make: Lazy) => Effect.Effect<void>
  /**
   * {@link emitMasked} started now, by the caller (inside an uninterruptible region, at the moment the
   * event is due): a free slot and a sink that answers with a completed `Exit` deliver the event before
   * it returns, and the answer is then a completed `Exit` (`Now.done`); otherwise it is the rest of
   * the delivery (waiting for the slot, or the sink's effect), which the caller must run next.
   */
  readonly emitNow: (env: Env, event: ToolEvent.Unstamped<ToolEvent.Event> | Lazy) => Effect.Effect<void>
  /**
   * {@link emitNow} of an event made for this one emission (by `Call`, which hands it over and keeps
   * no reference): it carries the run's `runId` and `threadId` and placeholders for `timestamp` and
   * `sequence`, in the order the stamped event has them, and is stamped in place instead of copied.
   */
  readonly emitFreshNow: (env: Env, event: ToolEvent.Event) => Effect.Effect<void>
}

/** An event made when its turn comes; `undefined`: nothing to emit. */
export type Lazy = () => ToolEvent.Unstamped<ToolEvent.Event> | undefined

/** The stamp's fields, writable: a fresh event is stamped in place. */
type Mutable = {
  -readonly [K in "timestamp" | "sequence" | "parentRunId" | "parentCallId" | "depth"]: ToolEvent.Event[K]
}

/** A fresh event waiting for the slot (`emitFreshNow`). */
class Fresh {
  readonly event: ToolEvent.Event
  constructor(event: ToolEvent.Event) {
    this.event = event
  }
}

const warn = (cause: Cause.Cause<unknown>, event: ToolEvent.Event): Effect.Effect<void> =>
  Effect.logWarning("tinyagents: the event sink failed; the event was not delivered", cause).pipe(
    Effect.annotateLogs({ event: event._tag, sequence: event.sequence })
  )

export const make = (): Reporter => {
  let sequence = 0
  /**
   * A one-slot lock: `busy` while an event is with the sink; waiters are handed the slot in order.
   * (`Semaphore.withPermit` does the same, at about 10% more CPU per call in the executor bench:
   * it wraps every event, contended or not, in a mask and an exit hook.)
   */
  let busy = false
  const waiters: Array<() => void> = []
  const release = (): void => {
    const next = waiters.shift()
    if (next === undefined) busy = false
    else next()
  }

  /** The event with the sink while the slot is held (one at a time), for the shared handlers below. */
  let inFlight: ToolEvent.Event | undefined
  /** Built once: an event does not allocate its own completion handlers. */
  const settled = {
    onFailure: (cause: Cause.Cause<unknown>): Effect.Effect<void> => {
      const event = inFlight!
      inFlight = undefined
      release()
      return warn(cause, event)
    },
    onSuccess: (): Effect.Effect<void> => {
      inFlight = undefined
      release()
      return Effect.void
    }
  }

  /** Stamps a fresh event in place (`emitFreshNow`): the same fields, in the same order, as a copy would have. */
  const stampFresh = (env: Env, event: ToolEvent.Event): ToolEvent.Event => {
    const stamped = event as Mutable
    stamped.timestamp = env.clock.currentTimeMillisUnsafe()
    stamped.sequence = sequence++
    const nesting = env.ctx.nesting
    if (nesting !== undefined) {
      stamped.parentRunId = nesting.parentRunId
      stamped.parentCallId = nesting.parentCallId
      stamped.depth = nesting.depth
    }
    return event
  }

  /** Holds the slot: stamps, hands the event to the sink, releases the slot when the sink returns. */
  const deliver = (env: Env, given: ToolEvent.Unstamped<ToolEvent.Event> | Lazy | Fresh): Effect.Effect<void> => {
    busy = true
    if (given instanceof Fresh) return handOver(env, stampFresh(env, given.event))
    const event = typeof given === "function" ? given() : given
    if (event === undefined) {
      release()
      return Effect.void
    }
    const nesting = env.ctx.nesting
    const stamped = (nesting === undefined
      ? {
        ...event,
        runId: env.ctx.runId,
        threadId: env.ctx.threadId,
        timestamp: env.clock.currentTimeMillisUnsafe(),
        sequence: sequence++
      }
      : {
        ...event,
        runId: env.ctx.runId,
        threadId: env.ctx.threadId,
        timestamp: env.clock.currentTimeMillisUnsafe(),
        sequence: sequence++,
        parentRunId: nesting.parentRunId,
        parentCallId: nesting.parentCallId,
        depth: nesting.depth
      }) as ToolEvent.Event
    return handOver(env, stamped)
  }

  /** Hands a stamped event to the sink (the slot held); releases the slot when the sink returns. */
  const handOver = (env: Env, stamped: ToolEvent.Event): Effect.Effect<void> => {
    let emitted: Effect.Effect<void>
    try {
      emitted = env.sink.emit(stamped)
    } catch (defect) {
      emitted = Effect.die(defect)
    }
    // A sink that answers with a completed Exit (`Effect.void`) is done already.
    if (Now.isExit(emitted)) {
      release()
      return Exit.isSuccess(emitted) ? Effect.void : warn(emitted.cause, stamped)
    }
    inFlight = stamped
    return Effect.matchCauseEffect(emitted, settled)
  }

  /** Waits for the slot; the releasing fiber hands it over on the next scheduler tick (no deep recursion). */
  const wait = (env: Env, event: ToolEvent.Unstamped<ToolEvent.Event> | Lazy | Fresh): Effect.Effect<void> =>
    Effect.withFiber((fiber) =>
      Effect.callback<void>((resume) => {
        waiters.push(() =>
          fiber.currentDispatcher.scheduleTask(() => resume(Effect.suspend(() => deliver(env, event))), 0)
        )
      })
    )

  const emitNow = (env: Env, event: ToolEvent.Unstamped<ToolEvent.Event> | Lazy): Effect.Effect<void> =>
    busy ? wait(env, event) : deliver(env, event)

  const emitMasked = (env: Env, event: ToolEvent.Unstamped<ToolEvent.Event> | Lazy): Effect.Effect<void> =>
    Effect.suspend(() => emitNow(env, event))

  return {
    emit: (env, event) => Effect.uninterruptible(emitMasked(env, event)),
    emitMasked,
    emitNow,
    // a free slot stamps the event where it is; a busy one waits with it (wrapped, to tell it apart)
    emitFreshNow: (env, event) => busy ? wait(env, new Fresh(event)) : (busy = true, handOver(env, stampFresh(env, event))),
    emitLazy: (env, make) => Effect.uninterruptible(emitMasked(env, make))
  }
}
