/**
 * Cancellation for code that is not Effect-aware: an `AbortSignal` that aborts
 * when the handler's fiber is interrupted (so `fetch` stops too), and a way to
 * cancel the whole run from inside a tool. The executor provides a fresh one per
 * call; handlers read it with `yield* Cancellation`.
 */
import { Context, Deferred, Effect, Layer } from "effect"

export interface CancellationShape {
  /** Aborts when the current call's fiber is interrupted. */
  readonly signal: AbortSignal
  /** Requests cancellation of the whole run (the agent loop stops after this batch). */
  readonly cancelRun: (reason: string) => Effect.Effect<void>
}

export class Cancellation extends Context.Service<Cancellation, CancellationShape>()("tinyagents/Cancellation") {
  /** A signal that never aborts and a run cancel that does nothing: for tests and direct handler calls. */
  static readonly layerNever: Layer.Layer<Cancellation> = Layer.sync(Cancellation, () => ({
    signal: new AbortController().signal,
    cancelRun: () => Effect.void
  }))
}

/** A signal that never aborts (the same as `Cancellation.layerNever`). */
export const layerNever: Layer.Layer<Cancellation> = Cancellation.layerNever

/** Requests cancellation of the whole run, from inside a handler. */
export const cancelRun = (reason: string): Effect.Effect<void, never, Cancellation> =>
  Cancellation.use((cancellation) => cancellation.cancelRun(reason))

/** The current call's `AbortSignal`, for code that is not Effect-aware (`fetch`). */
export const signal: Effect.Effect<AbortSignal, never, Cancellation> = Cancellation.use((cancellation) => Effect.succeed(cancellation.signal))

/** A run-level cancellation switch, shared by every call in a run. */
export interface RunCancel {
  /** Cancels the run: calls in flight are interrupted (and answered), calls not yet started never start. */
  readonly cancel: (reason: string) => Effect.Effect<void>
  /** Completes with the reason once `cancel` is called. */
  readonly await: Effect.Effect<string>
  readonly isCancelled: Effect.Effect<boolean>
  /** The reason, once cancelled: a synchronous check for code that must not yield. */
  readonly reasonUnsafe: () => string | undefined
  /**
   * Calls `f` once, synchronously inside `cancel` (at once when already cancelled);
   * returns a function that removes it. `f` must not block: it may only signal.
   */
  readonly onCancel: (f: (reason: string) => void) => () => void
}

const noop = (): void => {}

/** Makes a run-level cancellation switch, outside `Effect`. */
export const makeRunCancelUnsafe = (): RunCancel => {
  const deferred = Deferred.makeUnsafe<string>()
  const listeners = new Set<(reason: string) => void>()
  let reason: string | undefined
  return {
    cancel: (why) =>
      Effect.suspend(() => {
        if (reason !== undefined) return Effect.void
        reason = why
        const toCall = Array.from(listeners)
        listeners.clear()
        for (const f of toCall) f(why)
        return Effect.asVoid(Deferred.succeed(deferred, why))
      }),
    await: Deferred.await(deferred),
    isCancelled: Effect.sync(() => reason !== undefined),
    reasonUnsafe: () => reason,
    onCancel: (f) => {
      if (reason !== undefined) {
        f(reason)
        return noop
      }
      listeners.add(f)
      return () => void listeners.delete(f)
    }
  }
}

/** Makes a run-level cancellation switch. */
export const makeRunCancel: Effect.Effect<RunCancel> = Effect.sync(makeRunCancelUnsafe)

/** One call's cancellation: the `AbortController` is created on first use of `signal` (most handlers never read it). */
class CallCancellation implements CancellationShape {
  controller: AbortController | undefined
  readonly cancelRun: (reason: string) => Effect.Effect<void>
  constructor(cancelRun: (reason: string) => Effect.Effect<void>) {
    this.controller = undefined
    this.cancelRun = cancelRun
  }
  get signal(): AbortSignal {
    this.controller ??= new AbortController()
    return this.controller.signal
  }
  abort(): void {
    this.controller?.abort(new Error("tool call cancelled"))
  }
}

/**
 * Runs `effect` with a `Cancellation` whose signal aborts when the effect is
 * interrupted (a signal is never reused).
 */
export const provide = (runCancel: RunCancel) => <A, E, R>(
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, E, Exclude<R, Cancellation>> =>
  Effect.suspend(() => {
    const service = new CallCancellation(runCancel.cancel)
    return effect.pipe(
      Effect.provideService(Cancellation, service),
      Effect.onInterrupt(() => Effect.sync(() => service.abort()))
    )
  })
