/**
 * Writes that expire. A store whose backend can delete entries on time (the SQL stores: an
 * `expires_at` column, unreadable once past and swept out on writes; Redis: `PX`) carries a way to
 * view it with a time to live: `withTtl(store, ttl)` is the same store whose writes (`set`,
 * `modify`) live `ttl`, then are not readable and are deleted. A store without it (memory, file
 * system, your own) is returned as it is: its writes live until removed. The stores mark themselves
 * (`expiring`) and the executor's idempotency results use it (`withTtl`); not part of the public API.
 */
import { Duration } from "effect"
import type { KeyValueStore } from "effect/persistence"

const TypeId = "~tinyagents/stores/expiry" as const

/** A store that can give a view of itself whose writes expire after `millis`. */
interface Expiring extends KeyValueStore.KeyValueStore {
  readonly [TypeId]: (millis: number) => KeyValueStore.KeyValueStore
}

/** True when `store`'s writes can expire (`withTtl` gives an expiring view of it). */
export const supportsTtl = (store: KeyValueStore.KeyValueStore): boolean =>
  typeof (store as Partial<Expiring>)[TypeId] === "function"

/**
 * `store` whose writes expire `ttl` after they are made, when its backend supports it (see the module
 * comment); otherwise, and for an `undefined` ttl, `store` itself. A ttl under 1 ms counts as 1 ms.
 */
export const withTtl = (
  store: KeyValueStore.KeyValueStore,
  ttl: Duration.Input | undefined
): KeyValueStore.KeyValueStore => {
  if (ttl === undefined || !supportsTtl(store)) return store
  const millis = Duration.toMillis(Duration.fromInputUnsafe(ttl))
  return (store as Expiring)[TypeId](Math.max(1, Math.ceil(millis)))
}

/** `store`, marked as one whose writes can expire: `view(millis)` is its view that writes with that ttl. */
export const expiring = <S extends KeyValueStore.KeyValueStore>(
  store: S,
  view: (millis: number) => KeyValueStore.KeyValueStore
): S => Object.assign(store, { [TypeId]: view })
