/**
 * Named key-value stores for tools and the runtime: artifacts, caches, notes.
 * A hidden service: handlers reach a store with `yield* StoreRegistry.store("notes")`.
 * Every name is a view of ONE underlying `KeyValueStore` (`effect/persistence`)
 * whose keys are prefixed with `<name>/` (`KeyValueStore.prefix`); names cannot
 * contain `/`, so two names never share a key. The underlying store is opened on
 * first use, in the layer's scope; a failed open is a `StoreFailed` (operation
 * `"open"`) and is not remembered, so the next use tries again. Layers: memory
 * (tests, one process), file system (one directory, one file per prefixed key),
 * or any `KeyValueStore` already in context (`layer`, e.g. `KeyValueStore.layerSql`).
 *
 * File names (`layerFileSystem`): a prefixed key's file is named by its
 * `encodeURIComponent` form (as `KeyValueStore.layerFileSystem` does) when that
 * form is at most 200 bytes. A longer key, or one that is not well-formed
 * UTF-16 (a lone surrogate, which has no encoded form), would give a file name
 * the file system refuses (255 bytes at most on most), so it is stored under a
 * fixed-length name instead: its readable start (at most 180 encoded bytes,
 * lone surrogates as U+FFFD), then `~` (repeated as needed to make the name
 * longer than 200 encoded bytes), then the SHA-256 hex of the full key (of its
 * UTF-16LE code units). Such a name never equals a key that fits, and every
 * operation on a key (get, set, remove, has, modify) uses the same name, so
 * any string works as a key; `keys` lists the fixed-length name for such keys.
 */
import { createHash } from "node:crypto"
import { Cause, Context, Effect, FileSystem, Layer, Path, Scope, Semaphore } from "effect"
import { KeyValueStore } from "effect/persistence"
import { StoreFailed } from "../contract/ToolError.ts"

export interface StoreRegistryShape {
  /** The store called `name` (the same object for every use of a name). */
  readonly store: (name: string) => Effect.Effect<KeyValueStore.KeyValueStore, StoreFailed>
  /**
   * The claims of store `name`: atomic, expiring ownership of keys, shared by every user of the same
   * backend (every process, for a shared database); in memory for backends that cannot share them.
   */
  readonly claims: (name: string) => Effect.Effect<Claims, StoreFailed>
}

/**
 * Expiring, atomic ownership of keys (a lease): what `KeyValueStore` cannot do (it has no
 * compare-and-set). The idempotency of keyed calls uses it so that two processes never apply one key.
 */
export interface Claims {
  /**
   * Takes `key` for `owner` for `lease` milliseconds, unless another owner holds an unexpired claim on it.
   * `true` when `owner` now holds it (taking it again renews the lease). Atomic: of concurrent
   * acquisitions of a free key, exactly one succeeds.
   */
  readonly acquire: (key: string, owner: string, lease: number) => Effect.Effect<boolean, StoreFailed>
  /** Gives up `owner`'s claim on `key` (nothing when another owner holds it, or none does). */
  readonly release: (key: string, owner: string) => Effect.Effect<void, StoreFailed>
}

/** Claims held in this process's memory (one per registry and store name), on the `Clock`. */
export const memoryClaims = (): Claims => {
  const held = new Map<string, { readonly owner: string; readonly until: number }>()
  return {
    acquire: (key, owner, lease) =>
      Effect.clockWith((clock) =>
        Effect.sync(() => {
          const now = clock.currentTimeMillisUnsafe()
          const current = held.get(key)
          if (current !== undefined && current.owner !== owner && current.until > now) return false
          held.set(key, { owner, until: now + lease })
          return true
        })
      ),
    release: (key, owner) =>
      Effect.sync(() => {
        if (held.get(key)?.owner === owner) held.delete(key)
      })
  }
}

export class StoreRegistry extends Context.Service<StoreRegistry, StoreRegistryShape>()("tinyagents/StoreRegistry") {
  /** Stores in memory, in one map, for the life of the layer. */
  static readonly layerMemory: Layer.Layer<StoreRegistry> = Layer.effect(
    StoreRegistry,
    Effect.suspend(() => make(KeyValueStore.layerMemory))
  )

  /**
   * Stores on disk: every store is in the directory `root`, one file per (prefixed, percent-encoded) key;
   * a key whose encoded form is over 200 bytes gets a fixed-length name with its SHA-256 (see the module comment).
   */
  static readonly layerFileSystem = (
    root: string
  ): Layer.Layer<StoreRegistry, never, FileSystem.FileSystem | Path.Path> =>
    Layer.effect(
      StoreRegistry,
      Effect.gen(function*() {
        const fs = yield* FileSystem.FileSystem
        const path = yield* Path.Path
        return yield* make(
          Layer.effect(KeyValueStore.KeyValueStore, Effect.map(KeyValueStore.KeyValueStore, fileNameSafe)).pipe(
            Layer.provide(KeyValueStore.layerFileSystem(root)),
            Layer.provide([Layer.succeed(FileSystem.FileSystem, fs), Layer.succeed(Path.Path, path)])
          )
        )
      })
    )

  /** Stores in the `KeyValueStore` in context (SQL, browser storage, your own). */
  static readonly layer: Layer.Layer<StoreRegistry, never, KeyValueStore.KeyValueStore> = Layer.effect(
    StoreRegistry,
    Effect.gen(function*() {
      const kv = yield* KeyValueStore.KeyValueStore
      return yield* make(Layer.succeed(KeyValueStore.KeyValueStore, kv))
    })
  )
}

/** Stores in memory (the same as `StoreRegistry.layerMemory`). */
export const layerMemory: Layer.Layer<StoreRegistry> = StoreRegistry.layerMemory

/** Stores on disk under `root` (the same as `StoreRegistry.layerFileSystem`). */
export const layerFileSystem: (root: string) => Layer.Layer<StoreRegistry, never, FileSystem.FileSystem | Path.Path> =
  StoreRegistry.layerFileSystem

/** Stores in the `KeyValueStore` in context (the same as `StoreRegistry.layer`). */
export const layer: Layer.Layer<StoreRegistry, never, KeyValueStore.KeyValueStore> = StoreRegistry.layer

/** The longest encoded file name a key keeps; longer ones get a fixed-length name. */
const maxEncodedKey = 200
/** The longest encoded readable start of a fixed-length name. */
const maxReadable = 180

/** A lone surrogate (a pair is one code point under the `u` flag). */
const loneSurrogate = /\p{Cs}/u
const loneSurrogates = /\p{Cs}/gu

/** The encoded length of `s` (`encodeURIComponent`), or `undefined` for a string that is not well-formed. */
const encodedLength = (s: string): number | undefined =>
  loneSurrogate.test(s) ? undefined : encodeURIComponent(s).length

/** The key the file-system store uses for `key`: itself when it fits, else a fixed-length name (module comment). */
const fileKey = (key: string): string => {
  const encoded = encodedLength(key)
  if (encoded !== undefined && encoded <= maxEncodedKey) return key
  let readable = ""
  let length = 0
  for (const char of key.replace(loneSurrogates, "\uFFFD")) {
    const size = encodeURIComponent(char).length
    if (length + size > maxReadable) break
    readable += char
    length += size
  }
  const digest = createHash("sha256").update(Buffer.from(key, "utf16le")).digest("hex")
  return `${readable}${"~".repeat(Math.max(1, maxEncodedKey + 1 - length - digest.length))}${digest}`
}

/** `kv` with every key named by `fileKey`. */
const fileNameSafe = (kv: KeyValueStore.KeyValueStore): KeyValueStore.KeyValueStore => ({
  ...kv,
  get: (key) => kv.get(fileKey(key)),
  getUint8Array: (key) => kv.getUint8Array(fileKey(key)),
  set: (key, value) => kv.set(fileKey(key), value),
  remove: (key) => kv.remove(fileKey(key)),
  has: (key) => kv.has(fileKey(key)),
  modify: (key, f) => kv.modify(fileKey(key), f),
  modifyUint8Array: (key, f) => kv.modifyUint8Array(fileKey(key), f)
})

const storeName = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/

/**
 * A registry over the store `open` builds. Opening happens at most once at a
 * time (concurrent first uses wait for one open and share its store); only a
 * success is kept, in the layer's scope.
 */
const make = <E>(
  open: Layer.Layer<KeyValueStore.KeyValueStore, E>
): Effect.Effect<StoreRegistryShape, never, Scope.Scope> =>
  Effect.gen(function*() {
    const scope = yield* Effect.scope
    const opening = yield* Semaphore.make(1)
    let underlying: KeyValueStore.KeyValueStore | undefined
    const views = new Map<string, KeyValueStore.KeyValueStore>()
    const attempt = Effect.gen(function*() {
      const child = yield* Scope.fork(scope)
      const built = yield* Effect.exit(Layer.buildWithScope(open, child))
      if (built._tag === "Failure") {
        yield* Scope.close(child, built)
        return yield* Effect.failCause(built.cause)
      }
      return Context.get(built.value, KeyValueStore.KeyValueStore)
    })
    const base = (name: string): Effect.Effect<KeyValueStore.KeyValueStore, StoreFailed> =>
      Effect.suspend(() =>
        underlying !== undefined ? Effect.succeed(underlying) : opening.withPermits(1)(
          Effect.suspend(() =>
            underlying !== undefined
              ? Effect.succeed(underlying)
              : attempt.pipe(
                Effect.tap((kv) => Effect.sync(() => void (underlying = kv))),
                Effect.catchCause((cause) =>
                  Effect.fail(new StoreFailed({ store: name, operation: "open", cause: Cause.squash(cause) }))
                )
              )
          )
        )
      )
    const claimsByName = new Map<string, Claims>()
    return {
      claims: (name) =>
        Effect.suspend(() => {
          if (!storeName.test(name)) {
            return Effect.fail(new StoreFailed({ store: name, operation: "open", cause: "invalid store name" }))
          }
          let claims = claimsByName.get(name)
          if (claims === undefined) {
            claims = memoryClaims()
            claimsByName.set(name, claims)
          }
          return Effect.succeed(claims)
        }),
      store: (name) =>
        Effect.suspend(() => {
          if (!storeName.test(name)) {
            return Effect.fail(new StoreFailed({ store: name, operation: "open", cause: "invalid store name" }))
          }
          const view = views.get(name)
          if (view !== undefined) return Effect.succeed(view)
          return Effect.map(base(name), (kv) => {
            // Synchronous from the lookup to the insert, so every use of a name gets the same view.
            let named = views.get(name)
            if (named === undefined) {
              named = KeyValueStore.prefix(kv, `${name}/`)
              views.set(name, named)
            }
            return named
          })
        })
    }
  })

/** The store called `name` from the current `StoreRegistry`. */
export const store = (name: string): Effect.Effect<KeyValueStore.KeyValueStore, StoreFailed, StoreRegistry> =>
  StoreRegistry.use((registry) => registry.store(name))
