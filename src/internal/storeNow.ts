/**
 * Views of the stores and claims for the executor's keyed calls (`runtime/internal/executor/
 * Idempotency.ts`) that work by plain function calls where the store can, so that a keyed call whose
 * handler completes at once takes no effect per step (`executor/Now.ts`). Each view does exactly
 * what the store's (or the claims') effect does when run at that moment. Two kinds:
 *
 * - in memory (`StoreRegistry.layerMemory`'s stores, and every `memoryClaims`): a lookup, a claim, a
 *   write and a release, each a plain call;
 * - in one database with its claims (the SQLite stores, `stores/internal/sqlBackend.ts`): a lookup by
 *   a plain call (or {@link later}: take the effect), and two grouped steps, each one atomic write
 *   of the database: a claim that first looks for a stored result, and a write of a result that
 *   also releases its claim ({@link StoreClaims}).
 *
 * A view is found by the store object the registry gives (or the claims object). Not part of the
 * public API.
 */
import type { Effect } from "effect"
import type { KeyValueStore } from "effect/persistence"
import type { StoreFailed } from "../contract/ToolError.ts"
import type { Claims } from "../runtime/StoreRegistry.ts"

/** A view's answer when the plain call cannot answer now (the store is busy): take the effect. */
export const later: unique symbol = Symbol.for("tinyagents/storeNow/later")

/** A store's view: what its `get` of a string answers now, at `now` (the `Clock`'s milliseconds). */
export interface StoreNow {
  readonly get: (key: string, now: number) => string | undefined | typeof later
  /** What its `set` of a string does, now (the memory store). */
  readonly set?: ((key: string, value: string) => void) | undefined
  /** The claims of the store's own name, with the store's writes, in one database (SQLite). */
  readonly claims?: StoreClaims | undefined
}

/**
 * The claims of a store's own name (the registry's `claims(name)` for the store `name`: the same
 * keys) with the store's writes, each step one atomic write of the database (group-committed).
 */
export interface StoreClaims {
  /**
   * The text stored under `key` (unexpired at `now`) when there is one, and then no claim is taken;
   * else whether `owner` now holds `key`'s claim for `lease` ms (`Claims.acquire`).
   */
  readonly acquireUnlessStored: (
    key: string,
    owner: string,
    lease: number,
    now: number
  ) => Effect.Effect<string | boolean, StoreFailed>
  /**
   * Stores `value` under `key` (expiring `ttl` ms after `now`; `undefined`: never), then releases
   * `owner`'s claim on `key`. Fails when the value was not stored (the claim may be left to expire).
   */
  readonly setAndRelease: (
    key: string,
    value: string,
    ttl: number | undefined,
    owner: string,
    now: number
  ) => Effect.Effect<void, KeyValueStore.KeyValueStoreError>
}

/** Claims' synchronous view: `acquire` and `release` now, at `now` (the `Clock`'s milliseconds). */
export interface ClaimsNow {
  readonly acquire: (key: string, owner: string, lease: number, now: number) => boolean
  readonly release: (key: string, owner: string) => void
}

const stores = new WeakMap<KeyValueStore.KeyValueStore, StoreNow>()
const claims = new WeakMap<Claims, ClaimsNow>()

/** Marks `store` as having the view `view`; returns `store`. */
export const withStoreNow = <S extends KeyValueStore.KeyValueStore>(store: S, view: StoreNow): S => {
  stores.set(store, view)
  return store
}

/** Marks `of` as having the synchronous view `view`; returns `of`. */
export const withClaimsNow = (of: Claims, view: ClaimsNow): Claims => {
  claims.set(of, view)
  return of
}

/** `store`'s view, if it has one. */
export const storeNow = (store: KeyValueStore.KeyValueStore): StoreNow | undefined => stores.get(store)

/** `of`'s synchronous view, if it has one. */
export const claimsNow = (of: Claims): ClaimsNow | undefined => claims.get(of)
