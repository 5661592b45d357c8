/**
 * Named key-value stores for tools and the runtime: artifacts, caches, notes.
 * A hidden service: handlers reach a store with `yield* StoreRegistry.store("notes")`.
 * Every name is a view of ONE underlying `KeyValueStore` (`effect/persistence`)
 * whose keys are prefixed with `<name>/` (`KeyValueStore.prefix`); names cannot
 * contain `/`, so two names never share a key. Each name also has `claims`
 * (atomic, expiring leases). The backend is opened on first use, in the layer's
 * scope; a failed open is a `StoreFailed` (operation `"open"`, retryable when the
 * cause is transient) and is not remembered, so the next use tries again.
 * Layers here: memory (tests, one process), file system (one directory, one file
 * per prefixed key), any `KeyValueStore` already in context (`layer`), or any
 * {@link Backend} (`layerBackend`: a store, its claims, and optional views of
 * some names); memory, file system and `layer` keep claims in this process's
 * memory. SQLite, Postgres and Redis backends are in `tinyagents/stores`. A
 * store's `modify` runs one at a time in this process (a read then a write on
 * the file system would otherwise lose parallel updates).
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
import { Base64 } from "effect/encoding"
import { KeyValueStore } from "effect/persistence"
import { StoreFailed } from "../contract/ToolError.ts"
import { lazily } from "../internal/lazily.ts"
import { Kept, storeNow, withClaimsNow, withStoreNow } from "../internal/storeNow.ts"

/** What the `StoreRegistry` service gives: named stores and their claims, from one backend. */
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

/**
 * Claims held in this process's memory (one per registry and store name), on the `Clock`. A hold
 * (`storeNow`'s `ClaimsNow.hold`: a claim for one synchronous stretch of a keyed call) is a key on a
 * stack rather than an entry of the map, which only code that stretch runs can see.
 */
export const memoryClaims = (): Claims => {
  const held = new Map<string, { readonly owner: string; readonly until: number }>()
  const holding: Array<string> = []
  const isHolding = (key: string): boolean => holding.length !== 0 && holding.includes(key)
  const acquireNow = (key: string, owner: string, lease: number, now: number): boolean => {
    if (isHolding(key)) return false
    const current = held.get(key)
    if (current !== undefined && current.owner !== owner && current.until > now) return false
    held.set(key, { owner, until: now + lease })
    return true
  }
  const releaseNow = (key: string, owner: string): void => {
    if (held.size !== 0 && held.get(key)?.owner === owner) held.delete(key)
  }
  const hold = (key: string, now: number): boolean => {
    if (isHolding(key)) return false
    if (held.size !== 0) {
      const current = held.get(key)
      if (current !== undefined) {
        if (current.until > now) return false
        // an expired claim: taking the key and releasing it would have removed it
        held.delete(key)
      }
    }
    holding.push(key)
    return true
  }
  return withClaimsNow({
    acquire: (key, owner, lease) =>
      Effect.clockWith((clock) => Effect.sync(() => acquireNow(key, owner, lease, clock.currentTimeMillisUnsafe()))),
    release: (key, owner) => Effect.sync(() => releaseNow(key, owner))
  }, { acquire: acquireNow, release: releaseNow, hold, drop: () => void holding.pop() })
}

/**
 * `KeyValueStore.layerMemory`'s store (one map of strings and bytes), with a synchronous view of
 * its string reads and writes (`storeNow`) for the executor's keyed calls, which may also keep a
 * value whose text is made when first read (`Kept`: every read but the view's answers its text).
 */
const memoryStore: Layer.Layer<KeyValueStore.KeyValueStore> = Layer.sync(KeyValueStore.KeyValueStore)(() => {
  const entries = new Map<string, string | Uint8Array | Kept>()
  const encoder = new TextEncoder()
  /** A kept value's text, kept from now on in its place. */
  const textOf = (key: string, kept: Kept): string => {
    const text = kept.text()
    entries.set(key, text)
    return text
  }
  const get = (key: string): string | undefined => {
    const value = entries.get(key)
    return value === undefined || typeof value === "string"
      ? value
      : value instanceof Kept
      ? textOf(key, value)
      : Base64.encode(value)
  }
  const getNow = (key: string): string | Kept | undefined => {
    const value = entries.get(key)
    return value === undefined || typeof value === "string" || value instanceof Kept ? value : Base64.encode(value)
  }
  const set = (key: string, value: string | Uint8Array | Kept): void => {
    entries.set(key, value)
  }
  return withStoreNow(
    KeyValueStore.make({
      get: (key) => Effect.sync(() => get(key)),
      getUint8Array: (key) =>
        Effect.sync(() => {
          const value = entries.get(key)
          return value === undefined
            ? undefined
            : typeof value === "string"
            ? encoder.encode(value)
            : value instanceof Kept
            ? encoder.encode(textOf(key, value))
            : value
        }),
      set: (key, value) => Effect.sync(() => set(key, value)),
      remove: (key) => Effect.sync(() => entries.delete(key)),
      clear: Effect.sync(() => entries.clear()),
      clearPrefix: (prefix) =>
        Effect.sync(() => {
          for (const key of entries.keys()) {
            if (key.startsWith(prefix)) entries.delete(key)
          }
        }),
      size: Effect.sync(() => entries.size),
      keys: Effect.sync(() => Array.from(entries.keys()))
    }),
    { get: getNow, set }
  )
})

/**
 * The registry of named stores (a hidden service: handlers reach a store with `StoreRegistry.store(name)`).
 * Its static layers are the backends in this module; SQL and Redis ones are in `tinyagents/stores`.
 */
export class StoreRegistry extends Context.Service<StoreRegistry, StoreRegistryShape>()("tinyagents/StoreRegistry") {
  /** Stores in memory, in one map, for the life of the layer. */
  static readonly layerMemory: Layer.Layer<StoreRegistry> = Layer.effect(
    StoreRegistry,
    Effect.suspend(() => make(kvBackend(memoryStore)))
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
        return yield* make(kvBackend(
          Layer.effect(KeyValueStore.KeyValueStore, Effect.map(KeyValueStore.KeyValueStore, fileNameSafe)).pipe(
            Layer.provide(KeyValueStore.layerFileSystem(root)),
            Layer.provide([Layer.succeed(FileSystem.FileSystem, fs), Layer.succeed(Path.Path, path)])
          )
        ))
      })
    )

  /** Stores in the `KeyValueStore` in context (SQL, browser storage, your own). */
  static readonly layer: Layer.Layer<StoreRegistry, never, KeyValueStore.KeyValueStore> = Layer.effect(
    StoreRegistry,
    Effect.gen(function*() {
      const kv = yield* KeyValueStore.KeyValueStore
      return yield* make(Effect.succeed({ store: kv, claims: () => memoryClaims() }))
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

/** A file's text: its UTF-8, with a leading U+FEFF kept (the value's own; Effect's `readFileString` drops it). */
const fileText = new TextDecoder("utf-8", { ignoreBOM: true })
const textOfFile = (bytes: Uint8Array | undefined): string | undefined => bytes === undefined ? undefined : fileText.decode(bytes)
const fileBytes = new TextEncoder()

/** `kv` with every key named by `fileKey`, and its text read as {@link fileText} reads it. */
const fileNameSafe = (kv: KeyValueStore.KeyValueStore): KeyValueStore.KeyValueStore => ({
  ...kv,
  get: (key) => Effect.map(kv.getUint8Array(fileKey(key)), textOfFile),
  getUint8Array: (key) => kv.getUint8Array(fileKey(key)),
  set: (key, value) => kv.set(fileKey(key), value),
  remove: (key) => kv.remove(fileKey(key)),
  has: (key) => kv.has(fileKey(key)),
  modify: (key, f) =>
    Effect.suspend(() => {
      // answers what `f` returned, as Effect's `modify` does
      let made = ""
      return Effect.map(
        kv.modifyUint8Array(fileKey(key), (bytes) => fileBytes.encode(made = f(fileText.decode(bytes)))),
        (bytes) => bytes === undefined ? undefined : made
      )
    }),
  modifyUint8Array: (key, f) => kv.modifyUint8Array(fileKey(key), f)
})

const storeName = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/

/**
 * What a backend gives a registry: its one underlying store (every name is a prefixed view of it),
 * the claims of a store name, and optionally a replacement for the view of some names (e.g. an
 * artifacts table with a size cap and expiry). Memory and file system keep claims in memory.
 */
export interface Backend {
  readonly store: KeyValueStore.KeyValueStore
  /** The claims of store `name` (called once per name). */
  readonly claims: (name: string) => Claims
  /** The view of store `name`; `undefined` for the default prefixed view of `store`. */
  readonly view?: ((name: string) => KeyValueStore.KeyValueStore | undefined) | undefined
}

/** A backend of the `KeyValueStore` `open` builds, with claims in memory. */
const kvBackend = <E>(open: Layer.Layer<KeyValueStore.KeyValueStore, E>): Effect.Effect<Backend, E, Scope.Scope> =>
  Effect.map(Layer.build(open), (context) => ({
    store: Context.get(context, KeyValueStore.KeyValueStore),
    claims: () => memoryClaims()
  }))

/**
 * A registry over the backend `open` builds, opened on first use in the registry's scope. Opening
 * happens at most once at a time (concurrent first uses wait for one open and share it); only a
 * success is kept, so after a failed open (the database is down) the next use tries again.
 */
export const make = <E>(
  open: Effect.Effect<Backend, E, Scope.Scope>
): Effect.Effect<StoreRegistryShape, never, Scope.Scope> =>
  Effect.gen(function*() {
    const opening = yield* lazily(open)
    const opened = (name: string): Effect.Effect<Backend, StoreFailed> =>
      Effect.catchCause(opening, (cause) =>
        Effect.fail(new StoreFailed({ store: name, operation: "open", cause: Cause.squash(cause) })))
    // What `make` gives for a valid store name, made once per name from the opened backend.
    const perName = <A>(make: (backend: Backend, name: string) => A) => {
      const made = new Map<string, A>()
      return (name: string): Effect.Effect<A, StoreFailed> =>
        Effect.suspend(() => {
          if (!storeName.test(name)) {
            return Effect.fail(new StoreFailed({ store: name, operation: "open", cause: "invalid store name" }))
          }
          const known = made.get(name)
          if (known !== undefined) return Effect.succeed(known)
          return Effect.map(opened(name), (backend) => {
            // Synchronous from the lookup to the insert, so every use of a name gets the same one.
            let value = made.get(name)
            if (value === undefined) {
              value = make(backend, name)
              made.set(name, value)
            }
            return value
          })
        })
    }
    return {
      claims: perName((backend, name) => backend.claims(name)),
      store: perName((backend, name) => {
        const view = backend.view?.(name)
        if (view !== undefined) return view
        const prefixed = serialModify(KeyValueStore.prefix(backend.store, `${name}/`))
        const now = storeNow(backend.store)
        const set = now?.set
        if (now === undefined || set === undefined) return prefixed
        // a keyed call gets then sets one key: its prefixed form is made (and hashed) once
        let last: string | undefined
        let lastPrefixed = ""
        const prefixedOf = (key: string): string => key === last ? lastPrefixed : (last = key, lastPrefixed = `${name}/${key}`)
        return withStoreNow(prefixed, {
          get: (key, at) => now.get(prefixedOf(key), at),
          set: (key, value) => set(prefixedOf(key), value)
        })
      })
    }
  })

/**
 * `kv` whose `modify`s run one at a time (in this process), so parallel modifies of a key are not
 * lost on a backend whose `modify` is a read then a write (the file system).
 */
const serialModify = (kv: KeyValueStore.KeyValueStore): KeyValueStore.KeyValueStore => {
  const lock = Semaphore.makeUnsafe(1)
  return {
    ...kv,
    modify: (key, f) => lock.withPermits(1)(kv.modify(key, f)),
    modifyUint8Array: (key, f) => lock.withPermits(1)(kv.modifyUint8Array(key, f))
  }
}

/** A `StoreRegistry` layer over the backend `open` builds (lazily, see {@link make}). */
export const layerBackend = <E, R>(
  open: Effect.Effect<Backend, E, R | Scope.Scope>
): Layer.Layer<StoreRegistry, never, Exclude<R, Scope.Scope>> =>
  Layer.effect(
    StoreRegistry,
    Effect.gen(function*() {
      const context = yield* Effect.context<Exclude<R, Scope.Scope>>()
      return yield* make(Effect.provideContext(open, context as Context.Context<R>) as Effect.Effect<Backend, E, Scope.Scope>)
    })
  )

/** The store called `name` from the current `StoreRegistry`. */
export const store = (name: string): Effect.Effect<KeyValueStore.KeyValueStore, StoreFailed, StoreRegistry> =>
  StoreRegistry.use((registry) => registry.store(name))
