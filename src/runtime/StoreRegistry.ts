/**
 * Named key-value stores (`effect/persistence` `KeyValueStore`) for tools and
 * the runtime: artifacts, caches, notes. A hidden service: handlers reach a
 * store with `yield* StoreRegistry.store("notes")`. Layers: memory (tests, one
 * process) and file system (one directory per store).
 */
import { Context, Effect, FileSystem, Layer, Path } from "effect"
import { KeyValueStore } from "effect/persistence"
import { StoreFailed } from "../contract/ToolError.ts"

export interface StoreRegistryShape {
  /** The store called `name`, created on first use. */
  readonly store: (name: string) => Effect.Effect<KeyValueStore.KeyValueStore, StoreFailed>
}

export class StoreRegistry extends Context.Service<StoreRegistry, StoreRegistryShape>()("tinyagents/StoreRegistry") {
  /** Stores in memory, one map per name, for the life of the layer. */
  static readonly layerMemory: Layer.Layer<StoreRegistry> = Layer.effect(
    StoreRegistry,
    Effect.sync(() => make(() => buildStore(KeyValueStore.layerMemory)))
  )

  /** Stores on disk: store `name` is the directory `root/name`, one file per key. */
  static readonly layerFileSystem = (
    root: string
  ): Layer.Layer<StoreRegistry, never, FileSystem.FileSystem | Path.Path> =>
    Layer.effect(
      StoreRegistry,
      Effect.gen(function*() {
        const fs = yield* FileSystem.FileSystem
        const path = yield* Path.Path
        return make((name) =>
          buildStore(KeyValueStore.layerFileSystem(path.join(root, name))).pipe(
            Effect.provideService(FileSystem.FileSystem, fs),
            Effect.provideService(Path.Path, path)
          )
        )
      })
    )
}

/** Stores in memory (the same as `StoreRegistry.layerMemory`). */
export const layerMemory: Layer.Layer<StoreRegistry> = StoreRegistry.layerMemory

/** Stores on disk under `root` (the same as `StoreRegistry.layerFileSystem`). */
export const layerFileSystem: (root: string) => Layer.Layer<StoreRegistry, never, FileSystem.FileSystem | Path.Path> =
  StoreRegistry.layerFileSystem

const storeName = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/

const make = (
  build: (name: string) => Effect.Effect<KeyValueStore.KeyValueStore, unknown>
): StoreRegistryShape => {
  const stores = new Map<string, Effect.Effect<KeyValueStore.KeyValueStore, StoreFailed>>()
  return {
    store: (name) =>
      Effect.suspend(() => {
        if (!storeName.test(name)) {
          return Effect.fail(new StoreFailed({ store: name, operation: "open", cause: "invalid store name" }))
        }
        let cached = stores.get(name)
        if (cached === undefined) {
          // Memoised synchronously, so concurrent first uses share one store.
          cached = Effect.runSync(Effect.cached(
            build(name).pipe(Effect.mapError((cause) => new StoreFailed({ store: name, operation: "open", cause })))
          ))
          stores.set(name, cached)
        }
        return cached
      })
  }
}

const buildStore = <E, R>(
  layer: Layer.Layer<KeyValueStore.KeyValueStore, E, R>
): Effect.Effect<KeyValueStore.KeyValueStore, E, R> =>
  Effect.scoped(Effect.map(Layer.build(layer), (context) => Context.get(context, KeyValueStore.KeyValueStore)))

/** The store called `name` from the current `StoreRegistry`. */
export const store = (name: string): Effect.Effect<KeyValueStore.KeyValueStore, StoreFailed, StoreRegistry> =>
  StoreRegistry.use((registry) => registry.store(name))
