/**
 * Views of the stores and claims for the executor's keyed calls (`runtime/internal/executor/
 * Idempotency.ts`) that work by plain function calls where the store can, so that a keyed call whose
 * handler completes at once takes no effect per step (`executor/Now.ts`). Each view does exactly
 * what the store's (or the claims') effect does when run at that moment. Two kinds:
 *
 * - in memory (`StoreRegistry.layerMemory`'s stores, and every `memoryClaims`): a lookup, a claim, a
 *   write and a release, each a plain call;
 * - in one database with its claims (the SQLite stores, `stores/internal/sqlBackend.ts`): a lookup by
 *   a plain call outside any transaction, and, inside the write transaction plain calls share, a
 *   look at the stored result and the claim and a write of a result ({@link StoreClaims}); each
 *   answers {@link later} when it cannot run now (take the effect).
 *
 * A view is found by the store object the registry gives (or the claims object). Not part of the
 * public API.
 */
import type { Effect, Fiber } from "effect"
import type { KeyValueStore } from "effect/persistence"
import type { StoreFailed } from "../contract/ToolError.ts"
import type { Claims } from "../runtime/StoreRegistry.ts"

/** A view's answer when the plain call cannot answer now (the store is busy): take the effect. */
export const later: unique symbol = Symbol.for("tinyagents/storeNow/later")

/**
 * A value the memory store keeps as it was handed over, whose text (what the store's `get` answers)
 * is made on the first read that needs it (then kept instead): the executor's stored results whose
 * text follows from a part of them (`Idempotency`), so that storing one does not write it out. The
 * view's `get` answers it as it is.
 */
export abstract class Kept {
  abstract text(): string
}

/**
 * A store's view: what its `get` of a string answers now, at `now` (the `Clock`'s milliseconds), on
 * `fiber` (the SQLite stores' reads of one moment share a read transaction).
 */
export interface StoreNow {
  readonly get: (key: string, now: number, fiber?: Fiber.Fiber<unknown, unknown>) => string | Kept | undefined | typeof later
  /** What its `set` of a string does, now (the memory store), or of a {@link Kept} value. */
  readonly set?: ((key: string, value: string | Kept) => void) | undefined
  /** The claims of the store's own name, with the store's writes, in one database (SQLite). */
  readonly claims?: StoreClaims | undefined
}

/**
 * The claims of a store's own name (the registry's `claims(name)` for the store `name`: the same
 * keys) with the store's writes, in one database, by plain calls inside the write transaction those
 * calls share (the database's write lock held from its first step to its commit, which a fiber of
 * its own runs once the calls that run before it are done; the SQLite stores' `joined`). Each step
 * answers {@link later} when it cannot run now.
 */
export interface StoreClaims {
  /**
   * Now, in the shared transaction: the text stored under `key` (unexpired at `now`), and whether any
   * owner holds an unexpired claim on `key`; with the wait for the transaction's commit (what was
   * read may be a write of that transaction).
   */
  readonly look: (key: string, now: number, fiber: Fiber.Fiber<unknown, unknown>) => Looked | typeof later
  /**
   * Now, in the shared transaction: takes `key`'s claim for `owner` for `lease` ms (`Claims.acquire`,
   * committed with the transaction): true when `owner` holds it.
   */
  readonly claim: (key: string, owner: string, lease: number, fiber: Fiber.Fiber<unknown, unknown>) => boolean | typeof later
  /**
   * Now, in the shared transaction: stores `value` under `key` (expiring `ttl` ms after `now`;
   * `undefined`: never). Answers the wait for its commit, which fails when it was not stored.
   */
  readonly put: (
    key: string,
    value: string,
    ttl: number | undefined,
    now: number,
    fiber: Fiber.Fiber<unknown, unknown>
  ) => Effect.Effect<void, KeyValueStore.KeyValueStoreError> | typeof later
}

/** What {@link StoreClaims.look} found. */
export interface Looked {
  readonly stored: string | undefined
  readonly claimed: boolean
  /** Succeeds once the transaction it ran in is committed (made when asked: a fresh key waits for its write's instead). */
  readonly committed: () => Effect.Effect<void, StoreFailed>
}

/** Claims' synchronous view: `acquire` and `release` now, at `now` (the `Clock`'s milliseconds). */
export interface ClaimsNow {
  readonly acquire: (key: string, owner: string, lease: number, now: number) => boolean
  readonly release: (key: string, owner: string) => void
  /**
   * Takes `key` for the synchronous stretch that follows, until {@link drop}: what a claim taken and
   * released within that stretch would do, with no claim written. Meanwhile (only code that stretch
   * runs can try) an acquisition or hold of `key` fails, as against an owner of its own. False, and
   * nothing held, when another owner holds an unexpired claim on `key` at `now`. Holds nest.
   */
  readonly hold: (key: string, now: number) => boolean
  /** Ends the latest hold that is still held. */
  readonly drop: () => void
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
