/**
 * Synchronous views of the stores and claims that live in this process's memory, for the
 * executor's keyed calls (`executor/Idempotency.ts`): a lookup, a claim, a write and a release by
 * plain function calls, so that a keyed call whose handler completes at once completes at once
 * too (`executor/Now.ts`), without an effect per step. Each view does exactly what the store's
 * (or the claims') effect does when run at that moment. Only `StoreRegistry.layerMemory`'s stores
 * have one (a view is found by the store object the registry gives); the claims kept in memory
 * (`memoryClaims`) all have one. Not part of the public API.
 */
import type { KeyValueStore } from "effect/persistence"
import type { Claims } from "../StoreRegistry.ts"

/** A store's synchronous view: what its `get` and `set` of a string do, now. */
export interface StoreNow {
  readonly get: (key: string) => string | undefined
  readonly set: (key: string, value: string) => void
}

/** Claims' synchronous view: `acquire` and `release` now, at `now` (the `Clock`'s milliseconds). */
export interface ClaimsNow {
  readonly acquire: (key: string, owner: string, lease: number, now: number) => boolean
  readonly release: (key: string, owner: string) => void
}

const stores = new WeakMap<KeyValueStore.KeyValueStore, StoreNow>()
const claims = new WeakMap<Claims, ClaimsNow>()

/** Marks `store` as having the synchronous view `view`; returns `store`. */
export const withStoreNow = <S extends KeyValueStore.KeyValueStore>(store: S, view: StoreNow): S => {
  stores.set(store, view)
  return store
}

/** Marks `of` as having the synchronous view `view`; returns `of`. */
export const withClaimsNow = (of: Claims, view: ClaimsNow): Claims => {
  claims.set(of, view)
  return of
}

/** `store`'s synchronous view, if it has one. */
export const storeNow = (store: KeyValueStore.KeyValueStore): StoreNow | undefined => stores.get(store)

/** `of`'s synchronous view, if it has one. */
export const claimsNow = (of: Claims): ClaimsNow | undefined => claims.get(of)
