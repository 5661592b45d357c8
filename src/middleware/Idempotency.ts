/**
 * `idempotency`: caches successful results by a key derived from the call, in
 * a `StoreRegistry` store (JSON, with the time it was stored), so a repeat
 * within the TTL returns the cached result without running the tool (its
 * layer says `audit.metadata.idempotency.hit`). Error results and failures are
 * never cached. Two identical calls running at the same time both run.
 */
import { Clock, Duration, Effect, Option, Schema } from "effect"
import { KeyValueStore } from "effect/persistence"
import { hash } from "../internal/canonical.ts"
import type { Invocation, Middleware } from "../Middleware.ts"
import { StoreRegistry } from "../StoreRegistry.ts"
import { StoreFailed } from "../ToolError.ts"
import type { ToolResult } from "../ToolResult.ts"
import * as AuditTrail from "./AuditTrail.ts"

export interface Options {
  /** How long a cached result is reused. */
  readonly ttl: Duration.Input
  /** The `StoreRegistry` store. Default `"idempotency"`. */
  readonly store?: string
}

/** The cache key of a call; `undefined` skips the cache for it. */
export type KeyOf = (invocation: Invocation) => string | undefined

/** Keys a call by its tool and the SHA-256 of its canonical arguments. */
export const byArguments: KeyOf = (invocation) => `${invocation.spec.name}:${hash(invocation.input)}`

const Block = Schema.Union([
  Schema.Struct({ type: Schema.Literal("text"), text: Schema.String }),
  Schema.Struct({ type: Schema.Literal("image"), data: Schema.String, mimeType: Schema.String })
])

const Cached = Schema.Struct({
  storedAt: Schema.Number,
  content: Schema.Array(Block),
  value: Schema.optionalKey(Schema.Unknown),
  artifacts: Schema.Array(
    Schema.Struct({ store: Schema.String, key: Schema.String, bytes: Schema.Number, mimeType: Schema.String })
  )
})

/** Returns a cached result for a repeated key within `ttl`; caches successful results. */
export const idempotency = (keyOf: KeyOf, options: Options): Middleware<StoreRegistry> => {
  const ttl = Duration.toMillis(Duration.fromInputUnsafe(options.ttl))
  const name = options.store ?? "idempotency"
  const failed = (operation: string) => (cause: unknown) => new StoreFailed({ store: name, operation, cause })
  return AuditTrail.make("idempotency", (invocation, next, recorder) =>
    Effect.gen(function*() {
      const key = keyOf(invocation)
      if (key === undefined) return yield* next(invocation)
      const store = KeyValueStore.toSchemaStore(yield* StoreRegistry.use((s) => s.store(name)), Cached)
      const now = yield* Clock.currentTimeMillis
      const found = yield* store.get(key).pipe(
        Effect.catchTag("SchemaError", () => Effect.succeedNone), // an unreadable entry is a miss
        Effect.mapError(failed("read"))
      )
      if (Option.isSome(found) && now - found.value.storedAt < ttl) {
        const { storedAt, ...cached } = found.value
        yield* recorder.annotate({ metadata: { idempotency: { key, hit: true, storedAt } } })
        return {
          ...cached,
          toolCallId: invocation.call.id,
          name: invocation.spec.name,
          isError: false,
          elapsed: 0,
          ...(invocation.call.provider === undefined ? {} : { provider: invocation.call.provider })
        } satisfies ToolResult
      }
      const result = yield* next(invocation)
      yield* recorder.annotate({ metadata: { idempotency: { key, hit: false } } })
      if (result.isError) return result
      yield* store.set(key, {
        storedAt: yield* Clock.currentTimeMillis,
        content: result.content,
        ...(result.value === undefined ? {} : { value: result.value }),
        artifacts: result.artifacts
      }).pipe(Effect.mapError(failed("write")))
      return result
    }))
}
