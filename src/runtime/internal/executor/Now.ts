/**
 * Effects the executor may start now, by a plain function call, instead of
 * through the Effect runtime. `deferred(start)` is an ordinary effect
 * (`Effect.withFiber(start)`): whoever runs it runs `start` once, then what
 * `start` returned. Whoever receives it back unchanged from code it handed it
 * to (a middleware's `around` that only calls `next`) and is about to run it
 * at once anyway may instead `take` it and call `start` itself, on the fiber
 * that would have run it: the same code runs once, at the same moment, with
 * the same fiber, without the runtime's steps in between. When `start`
 * answers with a completed `Exit`, the step is done; anything else is the
 * rest of the step, run as an effect (the fall-back at the first step that
 * suspends).
 *
 * Only the effect made last can be taken (one slot, matched by identity):
 * `deferred` and `take` happen in one synchronous stretch (building a call's
 * middleware pipeline), so anything else misses the slot and simply runs the
 * effect as an effect.
 */
import { Effect, Exit, type Fiber } from "effect"

/** What a deferred effect runs when it starts: a completed `Exit` or the rest of the step. */
export type Start<A, E, R> = (fiber: Fiber.Fiber<unknown, unknown>) => Effect.Effect<A, E, R>

/**
 * Test seam (test/executor/Exactness.test.ts runs every plan both ways and compares): `false` runs
 * every step as an effect, as if each had suspended. `calls` counts the started calls a batch got back
 * as a completed `Exit` (`now`) or as an effect (`effect`).
 */
export const mode = { eager: true }
export const calls = { now: 0, effect: 0 }

let slot: Effect.Effect<unknown, unknown, unknown> | undefined
let slotStart: Start<unknown, unknown, unknown> | undefined

/** `Effect.withFiber(start)`, takeable by {@link take} until the next `deferred`. */
export const deferred = <A, E, R>(start: Start<A, E, R>): Effect.Effect<A, E, R> => {
  const effect = Effect.withFiber(start)
  slot = effect as Effect.Effect<unknown, unknown, unknown>
  slotStart = start as Start<unknown, unknown, unknown>
  return effect
}

/** The `start` of `effect` when it is the last deferred effect made (then it can no longer be taken), else `undefined`. */
export const take = <A, E, R>(effect: Effect.Effect<A, E, R>): Start<A, E, R> | undefined => {
  if (slot === undefined || effect !== slot || !mode.eager) return undefined
  const start = slotStart as Start<A, E, R>
  slot = undefined
  slotStart = undefined
  return start
}

/** Where Effect keeps an `Effect.sync`'s thunk (checked below: if it moves, {@link thunkOf} finds none). */
const thunkKey = "~effect/Effect/args"
const probe = () => undefined
const syncProto: object | null = Object.getPrototypeOf(Effect.sync(probe))
const syncKnown = (Effect.sync(probe) as unknown as Record<string, unknown>)[thunkKey] === probe

/**
 * The thunk of an `Effect.sync(thunk)`, else `undefined`: all a fiber running it would do is call
 * it once (a throw is its defect, `Cause.die`) and end with its value. It runs no other effect and
 * reads no service, so a caller about to fork a fiber just to run it may call it instead.
 */
export const thunkOf = (effect: Effect.Effect<unknown, unknown, unknown>): (() => unknown) | undefined => {
  if (!mode.eager || !syncKnown || Object.getPrototypeOf(effect) !== syncProto) return undefined
  const thunk = (effect as unknown as Record<string, unknown>)[thunkKey]
  return typeof thunk === "function" ? thunk as () => unknown : undefined
}

/** The key every `Exit` has (checked below: if it moves, {@link isExit} is `Exit.isExit`). */
const exitKey = "~effect/Exit"
const exitKnown = exitKey in Exit.void && !(exitKey in Effect.never) && !(exitKey in Effect.sync(probe))

/**
 * `Exit.isExit`, without its generic property check: asked several times per call, of an effect
 * the executor made or a sink answered.
 */
export const isExit = <A, E, R>(effect: Effect.Effect<A, E, R>): effect is Exit.Exit<A, E> =>
  exitKnown ? typeof effect === "object" && effect !== null && exitKey in effect : Exit.isExit(effect)

/** `effect` when it is a completed `Exit` (typed as the effect was), else `undefined`. */
export const exitOf = <A, E, R>(effect: Effect.Effect<A, E, R>): Exit.Exit<A, E> | undefined =>
  mode.eager && isExit(effect) ? effect : undefined

/** True when `effect` is a completed, successful `Exit`: nothing is left to run. */
export const done = <A, E, R>(effect: Effect.Effect<A, E, R>): effect is Exit.Success<A, E> =>
  mode.eager && isExit(effect) && effect._tag === "Success"

/** `Effect.flatMap(effect, f)`, with `f` called now when `effect` is a completed success (a failed `Exit` answers as it is). */
export const flatMap = <A, E, R, B, E2, R2>(
  effect: Effect.Effect<A, E, R>,
  f: (a: A) => Effect.Effect<B, E2, R2>
): Effect.Effect<B, E | E2, R | R2> => {
  const exit = exitOf(effect)
  return exit === undefined ? Effect.flatMap(effect, f) : Exit.isSuccess(exit) ? f(exit.value) : exit as Exit.Exit<never, E>
}
