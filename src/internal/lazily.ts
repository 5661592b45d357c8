/**
 * Open on first use: an effect that builds a resource (a connection, a backend) the first time it is
 * needed, at most once at a time, and keeps it once built. A failed build closes what it opened and is
 * not kept, so the next use tries again (a database that is down at start is not down for ever). Shared
 * by `StoreRegistry.make` (runtime) and the store layers (`Stores`, `Redis`); not part of the public API.
 */
import { Effect, Scope, Semaphore } from "effect"

/**
 * `build`, run at most once at a time and kept once it succeeds (in the current scope); a failure closes
 * what it opened and is not kept, so the next use runs it again.
 */
export const lazily = <A, E>(
  build: Effect.Effect<A, E, Scope.Scope>
): Effect.Effect<Effect.Effect<A, E>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const scope = yield* Effect.scope
    const lock = yield* Semaphore.make(1)
    let value: { readonly a: A } | undefined
    const attempt = Effect.gen(function*() {
      const child = yield* Scope.fork(scope)
      const exit = yield* Effect.exit(Scope.provide(build, child))
      if (exit._tag === "Failure") {
        yield* Scope.close(child, exit)
        return yield* Effect.failCause(exit.cause)
      }
      value = { a: exit.value }
      return exit.value
    })
    return Effect.suspend(() =>
      value !== undefined ? Effect.succeed(value.a) : lock.withPermits(1)(
        Effect.suspend(() => value !== undefined ? Effect.succeed(value.a) : attempt)
      )
    )
  })
