/**
 * The pausable deadline of one attempt of a tool that asks (`Ask`): the attempt's timeout does not
 * run while one of its questions is open (from the question's `tool.question` to its
 * `tool.answered`, however it ends), and resumes with the time it had left. Time is the run's
 * `Clock`'s monotonic time (a `TestClock` in tests). Each attempt makes its own, with the tool's whole timeout.
 * Only calls of tools that list `Ask` have one; the others keep `Effect.timeoutOrElse`.
 *
 * How it waits: one timer at a time, for the time left as of its start. A pause never moves the
 * deadline earlier, so the timer never fires late; when it fires, the time left is counted again
 * (what was paused is not counted), and it waits again (for the rest, or for the pause to end).
 */
import { type Clock, Deferred, Duration, Effect, Exit, Option } from "effect"

/** `clock`'s monotonic time in (fractional) milliseconds: immune to wall-clock jumps. */
const nowOf = (clock: Clock.Clock): number => Number(clock.monotonicTimeNanosUnsafe()) / 1_000_000

export class Deadline {
  /** The open questions (several fibers of a handler may ask at once). */
  open = 0
  /** The budget left (ms) as of `since`. */
  left: number
  /** When the deadline last ran again (monotonic ms); meaningless while paused. */
  since: number
  /** Completed when the last open question ends, for a timer waiting on a pause. */
  resumed: Deferred.Deferred<void> | undefined = undefined
  readonly clock: Clock.Clock
  constructor(clock: Clock.Clock, budgetMillis: number) {
    this.clock = clock
    this.left = budgetMillis
    this.since = nowOf(clock)
  }
  /** A question opens: the first one stops the deadline. */
  pause(): void {
    if (this.open++ === 0) this.left -= nowOf(this.clock) - this.since
  }
  /** A question ends: the last one runs the deadline again, with the time it had left. */
  resume(): void {
    if (--this.open > 0) return
    this.since = nowOf(this.clock)
    const resumed = this.resumed
    this.resumed = undefined
    if (resumed !== undefined) Deferred.doneUnsafe(resumed, Exit.void)
  }
}

/** What holds an attempt's deadline (the call's state): `Invoke` sets it, the call's `Ask` pauses it. */
export interface Holder {
  deadline: Deadline | undefined
}

/** A fresh deadline of `budgetMillis` for the attempt starting now, put in `holder`. */
export const start = (holder: Holder, clock: Clock.Clock, budgetMillis: number): Deadline => {
  const deadline = new Deadline(clock, budgetMillis)
  holder.deadline = deadline
  return deadline
}

/** `effect` (a question) with `deadline` paused while it runs, however it ends. */
export const paused = <A, E, R>(deadline: Deadline, effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.uninterruptibleMask((restore) => {
    deadline.pause()
    return Effect.ensuring(restore(effect), Effect.sync(() => deadline.resume()))
  })

/** Completes once the deadline's budget is spent, not counting its pauses. */
const expired = (deadline: Deadline): Effect.Effect<void> =>
  Effect.suspend(() => {
    if (deadline.open > 0) {
      deadline.resumed ??= Deferred.makeUnsafe<void>()
      return Effect.andThen(Deferred.await(deadline.resumed), expired(deadline))
    }
    const left = deadline.left - (nowOf(deadline.clock) - deadline.since)
    return left <= 0 ? Effect.void : Effect.andThen(deadline.clock.sleep(Duration.millis(Math.ceil(left))), expired(deadline))
  })

/** `Effect.timeoutOrElse` by `deadline`: `self`, or `orElse` once the deadline expires first. */
export const timeoutOrElse = <A, E, A2, E2>(
  self: Effect.Effect<A, E>,
  deadline: Deadline,
  orElse: () => Effect.Effect<A2, E2>
): Effect.Effect<A | A2, E | E2> =>
  Effect.flatMap(
    Effect.raceFirst(Effect.asSome(self), Effect.as(expired(deadline), Option.none())),
    (option): Effect.Effect<A | A2, E2> => Option.isNone(option) ? orElse() : Effect.succeed(option.value)
  )
