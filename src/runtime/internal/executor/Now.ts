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
 * A {@link Startable} is the same without the closure: an object that is the effect, whose `start`
 * method reads its fields (the executor's per-call steps, one object each).
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

/** The key every effect has (checked below: if it moves, {@link isEffect} is `Effect.isEffect`). */
const effectKey = "~effect/Effect"
const effectKnown = effectKey in Exit.void && effectKey in Effect.never && !(effectKey in {})

/**
 * A step's answer where its value is never an effect (a call's outcome): the value itself when the
 * step completed, else the rest of it as an effect. No `Exit` is made for the value.
 */
export type Answer<A, E = never, R = never> = A | Effect.Effect<A, E, R>

/** True when `answer` is an effect (the rest of the step, or a completed `Exit`), not the value itself. */
export const isEffect = <A, E, R>(answer: Answer<A, E, R>): answer is Effect.Effect<A, E, R> =>
  effectKnown ? typeof answer === "object" && answer !== null && effectKey in answer : Effect.isEffect(answer)

/** `value` as an {@link Answer}: itself, or a completed `Exit` of it when it is an effect itself. */
export const answer = <A>(value: A): Answer<A> => isEffect(value as Answer<A>) ? Exit.succeed(value) : value

/** `answer` as an effect (a value as a completed `Exit`). */
export const effectOf = <A, E, R>(answer: Answer<A, E, R>): Effect.Effect<A, E, R> =>
  isEffect(answer) ? answer : Exit.succeed(answer)

/**
 * A startable effect without a closure: an object whose run is its `start(fiber)` (a method of its
 * class, reading the object's fields), where `deferred(start)` is `Effect.withFiber`'s effect and
 * the closure `start` it holds. Run as an effect, it is exactly `Effect.withFiber((fiber) =>
 * this.start(fiber))`: Effect's fiber evaluates a primitive by calling its evaluate method (checked
 * below: if that moves, {@link startable} wraps the object in `Effect.withFiber` and nothing else
 * changes).
 */
export abstract class Startable<A, E, R> {
  /** The step, started now: its value itself when it completed (an {@link Answer}), else the rest. */
  abstract start(fiber: Fiber.Fiber<unknown, unknown>): Answer<A, E, R>
}
export interface Startable<A, E, R> extends Effect.Effect<A, E, R> {}

/** `deferred(start)`'s object: its `start` is the closure it was made with. */
class Deferred<A, E, R> extends Startable<A, E, R> {
  readonly run: Start<A, E, R>
  constructor(run: Start<A, E, R>) {
    super()
    this.run = run
  }
  start(fiber: Fiber.Fiber<unknown, unknown>): Effect.Effect<A, E, R> {
    return this.run(fiber)
  }
}

/** Where Effect keeps a primitive's evaluate method (a `WithFiber`'s calls its closure). */
const evaluateKey = "~effect/Effect/evaluate"
const withFiberProto: object | null = Object.getPrototypeOf(Effect.withFiber(() => Exit.void))
Object.setPrototypeOf(Startable.prototype, withFiberProto)
Object.defineProperty(Startable.prototype, evaluateKey, {
  value(this: Startable<unknown, unknown, unknown>, fiber: Fiber.Fiber<unknown, unknown>) {
    return effectOf(this.start(fiber))
  }
})
class Probe extends Startable<number, never, never> {
  start(): Effect.Effect<number> {
    return Effect.succeed(1)
  }
}
const startableKnown = (() => {
  try {
    return Effect.runSync(Effect.map(new Probe(), (n) => n + 1)) === 2
  } catch {
    return false
  }
})()

let slot: Effect.Effect<unknown, unknown, unknown> | undefined
let slotStart: Startable<unknown, unknown, unknown> | undefined

/** `startable` as an effect (itself), takeable by {@link takeStartable} or {@link take} until the next one. */
export const startable = <A, E, R>(startable: Startable<A, E, R>): Effect.Effect<A, E, R> => {
  const effect = startableKnown ? startable : Effect.withFiber((fiber) => effectOf(startable.start(fiber)))
  slot = effect as Effect.Effect<unknown, unknown, unknown>
  slotStart = startable as Startable<unknown, unknown, unknown>
  return effect
}

/** `Effect.withFiber(start)`, takeable by {@link take} until the next `deferred` (or {@link startable}). */
export const deferred = <A, E, R>(start: Start<A, E, R>): Effect.Effect<A, E, R> => startable(new Deferred(start))

/** The startable of `effect` when it is the last one made (then it can no longer be taken), else `undefined`. */
export const takeStartable = <A, E, R>(effect: Effect.Effect<A, E, R>): Startable<A, E, R> | undefined => {
  if (slot === undefined || effect !== slot || !mode.eager) return undefined
  const start = slotStart as Startable<A, E, R>
  slot = undefined
  slotStart = undefined
  return start
}

/** {@link takeStartable}, as its `start` function. */
export const take = <A, E, R>(effect: Effect.Effect<A, E, R>): Start<A, E, R> | undefined => {
  const start = takeStartable(effect)
  return start === undefined ? undefined : start instanceof Deferred ? start.run : (fiber) => effectOf(start.start(fiber))
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
