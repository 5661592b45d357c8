/**
 * Stores on Redis (`tinyagents/stores/redis`), for several processes that share
 * one Redis: every `StoreRegistry` store, the claims that make idempotency keys
 * apply once across processes, and the `RateLimiter` behind `rateLimit`.
 * Needs the optional peers `@effect/platform-node` (its `NodeRedis`) and `redis`.
 *
 * One connection (a `node-redis` client) is opened on first use, in the layer's
 * scope; a failed open is not remembered, so the next use tries again. Once
 * open, the client reconnects for ever with backoff (50 ms doubling to 2 s)
 * after a drop, and commands sent while it is disconnected fail at once
 * (no offline queue): a store operation fails with `StoreFailed`, a rate
 * limit check with a store error, and both work again when Redis is back.
 *
 * Keys: a store's key `k` of store `name` is the Redis key `<prefix><name>/k`
 * (`prefix` defaults to `tinyagents:`), UTF-8; a key that is not well-formed
 * UTF-16 (a lone surrogate) continues after its well-formed start with the
 * byte 0xFF (never in UTF-8) and the rest as UTF-16LE, so any string is a key
 * and prefixes still match. Values are binary-safe: one type byte (`s`: the
 * rest is a string as UTF-8, `b`: the rest is bytes, `u`: the rest is a string
 * that is not well-formed UTF-16, a lone surrogate, as UTF-16LE) then the value,
 * so `get` and `getUint8Array` answer exactly as the memory store does. `keys`, `size`
 * and `clearPrefix` use `SCAN` (never `KEYS`); `modify` is atomic across
 * processes: a read, `f`, then a compare-and-set Lua script that writes only if
 * the value is still the one read, retried (with a short random pause) when
 * another writer came between. Claims are the keys
 * `<prefix>~claim/<name>/<key>` (`SET` when free or held by the same owner,
 * with `PX`, and a compare-and-delete release, both as Lua scripts); the rate
 * limiter's keys start with `<prefix>~rate/` (Effect's `RateLimiter.layerStoreRedis`).
 * Stored values live until removed, except writes with a ttl (the executor's
 * idempotency results, through `src/internal/expiry`'s `withTtl`) and the artifacts
 * store, which has a size cap and an expiry like the SQL layers'
 * (`Options.artifacts`): both are Redis's `PX`, so Redis deletes them.
 * Errors never carry a key or a value.
 *
 * A failure because Redis is unreachable, restarting or loading (the client
 * offline or closed, a dropped socket, a timeout, a `LOADING`/`BUSY`/`TRYAGAIN`
 * reply) carries a {@link RedisUnavailable} cause, which `StoreFailed` reads as
 * transient (disposition `"retry"`); other failures keep node-redis's error, and
 * a misconfiguration (a wrong password, `WRONGPASS`/`NOAUTH`; an invalid URL) is
 * fatal, as no retry fixes it.
 */
import * as NodeRedis from "@effect/platform-node/NodeRedis"
import { createHash } from "node:crypto"
import { Context, Data, Duration, Effect, Layer, Schedule, Scope, Semaphore } from "effect"
import { KeyValueStore, RateLimiter } from "effect/persistence"
import {
  ClientClosedError,
  ClientOfflineError,
  ConnectionTimeoutError,
  ReconnectStrategyError,
  RESP_TYPES,
  SocketClosedUnexpectedlyError,
  SocketTimeoutError
} from "redis"
import { StoreFailed } from "../contract/ToolError.ts"
import * as StoreRegistry from "../runtime/StoreRegistry.ts"
import { expiring } from "../internal/expiry.ts"
import { lazily } from "../internal/lazily.ts"
import { checkArtifactPolicy, tooLarge, truncateText } from "./internal/sqlBackend.ts"
import type * as Stores from "./Stores.ts"

/** Where the Redis server is, and how its keys are named. */
export interface Options {
  /** `redis://[[user]:password@]host[:port][/db]`; wins over `host` and `port`. */
  readonly url?: string | undefined
  /** Default `127.0.0.1`. */
  readonly host?: string | undefined
  /** Default `6379`. */
  readonly port?: number | undefined
  /** What every key starts with, to share one Redis between applications. Default `"tinyagents:"`. */
  readonly prefix?: string | undefined
  /** How long the first connection may take, in milliseconds. Default 5,000. */
  readonly connectTimeout?: number | undefined
  /**
   * The artifacts store's cap and expiry, as for the SQL layers (`Stores.ArtifactPolicy`): text over
   * `maxBytes` (default 16 MiB, at least 1024) is kept truncated with a note, binary over it is
   * refused; `ttl` makes every write expire (`SET ... PX`, Redis deletes it). `sweepEvery` is unused.
   */
  readonly artifacts?: Stores.ArtifactPolicy | undefined
}

/**
 * `StoreRegistry` and `RateLimiter.RateLimiter` on one Redis: stores, idempotency claims and rate
 * limits shared by every process using the same server and `prefix`. Connects on first use.
 */
export const layer = (
  options: Options = {}
): Layer.Layer<Stores.Services> => {
  checkArtifactPolicy(options.artifacts)
  return Layer.effectContext(Effect.gen(function*() {
    const connect = yield* connection(options)
    const registry = yield* StoreRegistry.make(connect)
    const limiter = yield* Effect.provideService(RateLimiter.make, RateLimiter.RateLimiterStore, lazyLimiterStore(connect))
    return Context.make(StoreRegistry.StoreRegistry, registry).pipe(Context.add(RateLimiter.RateLimiter, limiter))
  }))
}

/**
 * The cause of a store failure while Redis is unreachable, restarting or loading: transient
 * (`isRetryable`), so the `StoreFailed` around it is retryable. `cause` is node-redis's error.
 */
export class RedisUnavailable extends Data.TaggedError("RedisUnavailable")<{ readonly cause: unknown }> {
  readonly isRetryable = true
}

const transientReply = /^(LOADING|BUSY|TRYAGAIN|MASTERDOWN|CLUSTERDOWN)\b/
const networkCodes: ReadonlySet<unknown> = new Set([
  "ECONNREFUSED", "ECONNRESET", "ECONNABORTED", "EPIPE", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH", "EAI_AGAIN"
])

/**
 * `cause` as a {@link RedisUnavailable} when it says Redis is unreachable or restarting, else itself.
 * A connection that gave up (`ReconnectStrategyError`) is classified by why it did: refused or timed
 * out is transient, a wrong password (`WRONGPASS`) is not.
 */
const classify = (cause: unknown): unknown =>
  cause instanceof ReconnectStrategyError
    ? classify(cause.originalError)
    : cause instanceof ClientOfflineError || cause instanceof ClientClosedError ||
        cause instanceof SocketClosedUnexpectedlyError || cause instanceof ConnectionTimeoutError ||
        cause instanceof SocketTimeoutError ||
        (cause instanceof Error && (transientReply.test(cause.message) || networkCodes.has((cause as { code?: unknown }).code)))
    ? new RedisUnavailable({ cause })
    : cause

/** An open connection: the registry's backend and the rate limiter's store. */
interface Connection extends StoreRegistry.Backend {
  readonly limiterStore: RateLimiter.RateLimiterStore["Service"]
}

type Client = NodeRedis.NodeRedis["Service"]["client"]

/** Replies with bulk strings as `Buffer`s (keys and values are bytes). */
const binary = { typeMapping: { [RESP_TYPES.BLOB_STRING]: Buffer } } as const

/** Opens the connection on first use (at most one open at a time, see `src/internal/lazily`); only a success is kept. */
const connection = (options: Options): Effect.Effect<Effect.Effect<Connection, StoreFailed>, never, Scope.Scope> => {
  const prefix = Buffer.from(options.prefix ?? "tinyagents:", "utf8")
  return lazily(Effect.gen(function*() {
    // node-redis calls this after every drop; before the first `ready` a failure ends the open attempt.
    const state = { ready: false }
    const context = yield* Layer.build(NodeRedis.layer({
      ...(options.url === undefined ? {} : { url: options.url }),
      disableOfflineQueue: true,
      socket: {
        ...(options.url === undefined ? { host: options.host ?? "127.0.0.1", port: options.port ?? 6379 } : {}),
        connectTimeout: options.connectTimeout ?? 5_000,
        reconnectStrategy: (retries: number, cause: Error) =>
          state.ready ? Math.min(2 ** retries * 50, 2_000) + Math.floor(Math.random() * 100) : cause
      }
    })).pipe(
      Effect.mapError((error) => new StoreFailed({ store: "redis", operation: "open", cause: classify(error.cause) })),
      // node-redis throws on an invalid URL: a failure of the open (fatal: no retry fixes it), not a defect
      Effect.catchDefect((defect) => Effect.fail(new StoreFailed({ store: "redis", operation: "open", cause: classify(defect) })))
    )
    state.ready = true
    const client = Context.get(context, NodeRedis.NodeRedis).client
    const limiterStore = yield* RateLimiter.makeStoreRedis({ prefix: `${prefix.toString("utf8")}~rate/` }).pipe(
      Effect.provideContext(context)
    )
    const artifacts = options.artifacts ?? {}
    const artifactName = artifacts.store ?? "artifacts"
    const artifactStore = makeKeyValueStore(client, Buffer.concat([prefix, Buffer.from(`${artifactName}/`, "utf8")]), {
      maxBytes: artifacts.maxBytes ?? 16 * 1024 * 1024,
      ttl: artifacts.ttl === undefined ? undefined : Math.max(1, Math.ceil(Duration.toMillis(Duration.fromInputUnsafe(artifacts.ttl))))
    })
    return {
      store: makeKeyValueStore(client, prefix),
      // every store name its own view (not the registry's prefixed one), so `withTtl` works on it
      view: (name: string) =>
        name === artifactName ? artifactStore : makeKeyValueStore(client, Buffer.concat([prefix, Buffer.from(`${name}/`, "utf8")])),
      claims: (name: string) => makeClaims(client, Buffer.concat([prefix, Buffer.from(`~claim/${name}/`, "utf8")]), name),
      limiterStore
    } satisfies Connection
  }))
}

/** A `RateLimiterStore` that opens the connection on first use; a failed open is a store error. */
const lazyLimiterStore = (
  connect: Effect.Effect<Connection, StoreFailed>
): RateLimiter.RateLimiterStore["Service"] => {
  const store = connect.pipe(
    Effect.map((made) => made.limiterStore),
    Effect.mapError((error) =>
      new RateLimiter.RateLimiterError({
        reason: new RateLimiter.RateLimitStoreError({ message: "cannot connect to Redis", cause: error.cause })
      })
    )
  )
  /** A store error's cause classified (node-redis's error, bare or in a `RedisError`). */
  const classified = (error: RateLimiter.RateLimiterError): RateLimiter.RateLimiterError => {
    if (error.reason._tag !== "RateLimitStoreError") return error
    const cause: unknown = error.reason.cause
    const inner = typeof cause === "object" && cause !== null && (cause as { _tag?: unknown })._tag === "RedisError"
      ? (cause as { cause: unknown }).cause
      : cause
    return new RateLimiter.RateLimiterError({
      reason: new RateLimiter.RateLimitStoreError({ message: error.reason.message, cause: classify(inner) })
    })
  }
  const use = <A>(f: (store: RateLimiter.RateLimiterStore["Service"]) => Effect.Effect<A, RateLimiter.RateLimiterError>) =>
    Effect.mapError(Effect.flatMap(store, f), classified)
  return RateLimiter.RateLimiterStore.of({
    fixedWindow: (options) => use((s) => s.fixedWindow(options)),
    tokenBucket: (options) => use((s) => s.tokenBucket(options)),
    adaptiveConsume: (options) => use((s) => s.adaptiveConsume(options)),
    adaptiveFeedback: (options) => use((s) => s.adaptiveFeedback(options))
  })
}

/** A lone surrogate (a pair is one code point under the `u` flag). */
const loneSurrogate = /\p{Cs}/u
/** Starts the UTF-16LE rest of a key that is not well-formed (0xFF is never in UTF-8). */
const marker = 0xff

/** The bytes of `key`: UTF-8 up to its first lone surrogate, then 0xFF and the rest as UTF-16LE. */
const encodeKey = (key: string): Buffer => {
  const lone = key.search(loneSurrogate)
  if (lone < 0) return Buffer.from(key, "utf8")
  return Buffer.concat([Buffer.from(key.slice(0, lone), "utf8"), Buffer.of(marker), Buffer.from(key.slice(lone), "utf16le")])
}

const decodeKey = (bytes: Buffer): string => {
  const at = bytes.indexOf(marker)
  return at < 0
    ? bytes.toString("utf8")
    : bytes.subarray(0, at).toString("utf8") + bytes.subarray(at + 1).toString("utf16le")
}

/** `bytes` as a `SCAN MATCH` pattern that matches exactly them (glob characters escaped), then `*`. */
const startsWithPattern = (bytes: Buffer): Buffer => {
  const out: Array<number> = []
  for (const byte of bytes) {
    if (byte === 0x2a || byte === 0x3f || byte === 0x5b || byte === 0x5d || byte === 0x5c) out.push(0x5c)
    out.push(byte)
  }
  out.push(0x2a)
  return Buffer.from(out)
}

const stringType = 0x73 // "s"
const bytesType = 0x62 // "b"
/** A string that is not well-formed UTF-16 (a lone surrogate, which UTF-8 cannot hold): the rest is UTF-16LE. */
const utf16Type = 0x75 // "u"

/** Writes only when the key still holds `ARGV[1]`: `ARGV[2]`, with expiry `ARGV[3]` ms when given. 1 when written. */
const compareAndSetLua = `if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
if ARGV[3] then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
else
  redis.call('SET', KEYS[1], ARGV[2])
end
return 1`
const compareAndSetSha = createHash("sha1").update(compareAndSetLua).digest("hex")

/** How many times a `modify` retries its compare-and-set before it fails. */
const modifyAttempts = 10_000

/** A cap and an expiry for every write of a store (the artifacts store's, or a `withTtl` view's). */
interface WritePolicy {
  readonly maxBytes?: number | undefined
  /** Milliseconds. */
  readonly ttl?: number | undefined
}

/**
 * A `KeyValueStore` on the Redis keys that start with `prefix` (see the module comment); `policy` caps
 * writes and makes them expire. `withTtl` (`src/internal/expiry`) gives the same store with another expiry.
 * Its `modify`s run one at a time in this process (`lock`, shared with those views): each is atomic
 * across processes anyway, but many at once on one key would mostly lose their compare-and-set races.
 */
export const makeKeyValueStore = (
  client: Client,
  prefix: Uint8Array,
  policy: WritePolicy = {},
  lock: Semaphore.Semaphore = Semaphore.makeUnsafe(1)
): KeyValueStore.KeyValueStore => {
  const base = Buffer.from(prefix)
  const redisKey = (key: string) => Buffer.concat([base, encodeKey(key)])
  const send = <A>(method: string, key: string | undefined, args: ReadonlyArray<string | Buffer>) =>
    Effect.tryPromise({
      try: () => client.sendCommand(args, binary) as Promise<A>,
      // the message names the command only: a store error never carries a key or a value
      catch: (cause) =>
        new KeyValueStore.KeyValueStoreError({ method, message: `Redis ${String(args[0])} failed`, cause: classify(cause) })
    })
  const raw = (key: string) => send<Buffer | null>("get", key, ["GET", redisKey(key)])
  /** Every store key whose Redis key starts with `from` (de-duplicated: `SCAN` may repeat keys). */
  const scan = (method: string, from: Buffer): Effect.Effect<ReadonlyArray<Buffer>, KeyValueStore.KeyValueStoreError> =>
    Effect.gen(function*() {
      const seen = new Map<string, Buffer>()
      const pattern = startsWithPattern(from)
      let cursor = "0"
      do {
        const [next, batch] = yield* send<[Buffer, Array<Buffer>]>(method, undefined, ["SCAN", cursor, "MATCH", pattern, "COUNT", "1000"])
        for (const key of batch) seen.set(key.toString("latin1"), key)
        cursor = next.toString("latin1")
      } while (cursor !== "0")
      return [...seen.values()]
    })
  const keyOf = (redis: Buffer) => decodeKey(redis.subarray(base.length))
  const keys = Effect.map(scan("keys", base), (found) => found.map(keyOf))
  /** The stored form of `value` (type byte, then bytes), under the policy's cap. */
  const encodeValue = (value: string | Uint8Array): Effect.Effect<Buffer, KeyValueStore.KeyValueStoreError> => {
    const maxBytes = policy.maxBytes
    if (typeof value === "string") {
      const wellFormed = !loneSurrogate.test(value)
      const bytes = wellFormed ? Buffer.from(value, "utf8") : Buffer.from(value, "utf16le")
      if (maxBytes !== undefined && bytes.length > maxBytes) {
        return Effect.succeed(Buffer.concat([Buffer.of(stringType), truncateText(value, maxBytes)]))
      }
      return Effect.succeed(Buffer.concat([Buffer.of(wellFormed ? stringType : utf16Type), bytes]))
    }
    if (maxBytes !== undefined && value.length > maxBytes) return Effect.fail(tooLarge(value.length, maxBytes))
    return Effect.succeed(Buffer.concat([Buffer.of(bytesType), value]))
  }
  const expiry: ReadonlyArray<string> = policy.ttl === undefined ? [] : ["PX", String(policy.ttl)]
  /** `SET` of the stored form (with the policy's expiry). */
  const write = (key: string, value: string | Uint8Array) =>
    Effect.flatMap(encodeValue(value), (stored) => send<unknown>("set", key, ["SET", redisKey(key), stored, ...expiry]))
  /** Writes `next` only when `key` still holds `current`: `true` when written. */
  const compareAndSet = (key: string, current: Buffer, next: Buffer) =>
    Effect.tryPromise({
      try: async () => {
        const args = [redisKey(key), current, next, ...expiry.slice(1)]
        try {
          return await client.sendCommand(["EVALSHA", compareAndSetSha, "1", ...args]) as number
        } catch (error) {
          if (!String(error).includes("NOSCRIPT")) throw error
          return await client.sendCommand(["EVAL", compareAndSetLua, "1", ...args]) as number
        }
      },
      catch: (cause) =>
        new KeyValueStore.KeyValueStoreError({ method: "modify", message: "Redis compare-and-set failed", cause: classify(cause) })
    }).pipe(Effect.map((written) => written === 1))
  class Conflict extends Data.TaggedError("Conflict")<{}> {}
  /** Read, `f`, compare-and-set; again when another writer came between (atomic across processes). */
  const modify = <A extends string | Uint8Array>(key: string, f: (stored: Buffer) => A) =>
    Effect.gen(function*() {
      const current = yield* raw(key)
      if (current === null) return undefined
      const next = f(current)
      if (!(yield* compareAndSet(key, current, yield* encodeValue(next)))) return yield* Effect.fail(new Conflict())
      return next
    }).pipe(
      Effect.retry({
        while: (error) => error._tag === "Conflict",
        schedule: Schedule.spaced(Duration.millis(1)).pipe(Schedule.jittered),
        times: modifyAttempts
      }),
      Effect.catchTag("Conflict", () =>
        Effect.fail(
          new KeyValueStore.KeyValueStoreError({
            method: "modify",
            message: `a modify lost ${modifyAttempts} races with other writers`
          })
        ))
    )
  /** A stored value as `get` answers: a string as itself, bytes as base64. */
  const asString = (value: Buffer) =>
    value[0] === bytesType
      ? value.subarray(1).toString("base64")
      : value[0] === utf16Type
      ? value.subarray(1).toString("utf16le")
      : value.subarray(1).toString("utf8")
  /** A stored value as `getUint8Array` answers: bytes as themselves, a string as its UTF-8 (as in memory). */
  const asBytes = (value: Buffer) =>
    value[0] === utf16Type ? new TextEncoder().encode(asString(value)) : new Uint8Array(value.subarray(1))
  const store = KeyValueStore.make({
    get: (key) => Effect.map(raw(key), (value) => value === null ? undefined : asString(value)),
    getUint8Array: (key) => Effect.map(raw(key), (value) => value === null ? undefined : asBytes(value)),
    set: (key, value) => Effect.asVoid(write(key, value)),
    modify: (key, f) => lock.withPermits(1)(modify(key, (stored) => f(asString(stored)))),
    modifyUint8Array: (key, f) => lock.withPermits(1)(modify(key, (stored) => f(asBytes(stored)))),
    remove: (key) => Effect.asVoid(send<number>("remove", key, ["DEL", redisKey(key)])),
    has: (key) => Effect.map(send<number>("has", key, ["EXISTS", redisKey(key)]), (n) => n > 0),
    keys,
    size: Effect.map(scan("size", base), (found) => found.length),
    clear: Effect.asVoid(clearFrom(send, scan, base, () => true)),
    clearPrefix: (start) =>
      loneSurrogate.test(start)
        // the encoded form of a prefix that is not well-formed is no byte prefix: filter decoded keys
        ? clearFrom(send, scan, base, (key) => keyOf(key).startsWith(start))
        : clearFrom(send, scan, Buffer.concat([base, Buffer.from(start, "utf8")]), () => true)
  })
  return expiring(store, (ttl) => makeKeyValueStore(client, prefix, { ...policy, ttl }, lock))
}

/** Deletes the keys `scan` finds from `from` that `keep` selects, 500 per `DEL`. */
const clearFrom = (
  send: <A>(method: string, key: string | undefined, args: ReadonlyArray<string | Buffer>) => Effect.Effect<A, KeyValueStore.KeyValueStoreError>,
  scan: (method: string, from: Buffer) => Effect.Effect<ReadonlyArray<Buffer>, KeyValueStore.KeyValueStoreError>,
  from: Buffer,
  keep: (key: Buffer) => boolean
): Effect.Effect<void, KeyValueStore.KeyValueStoreError> =>
  Effect.flatMap(scan("clearPrefix", from), (found) => {
    const doomed = found.filter(keep)
    const batches: Array<ReadonlyArray<Buffer>> = []
    for (let i = 0; i < doomed.length; i += 500) batches.push(doomed.slice(i, i + 500))
    return Effect.forEach(batches, (batch) => send<number>("clearPrefix", undefined, ["DEL", ...batch]), { discard: true })
  })

/** Takes the key when it is free or already the owner's, for `ARGV[2]` milliseconds. */
const acquireLua = `local v = redis.call('GET', KEYS[1])
if v == false or v == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
return 0`

/** Deletes the key only when the owner holds it. */
const releaseLua = `if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0`

/** Claims on the Redis keys `<base><key>` (see the module comment); errors name the store `name`. */
export const makeClaims = (client: Client, base: Uint8Array, name: string): StoreRegistry.Claims => {
  const script = (lua: string, operation: string) => {
    const sha = createHash("sha1").update(lua).digest("hex")
    return (key: string, args: ReadonlyArray<string>) => {
      const keyBytes = Buffer.concat([base, encodeKey(key)])
      return Effect.tryPromise({
        try: async () => {
          try {
            return await client.sendCommand(["EVALSHA", sha, "1", keyBytes, ...args]) as number
          } catch (error) {
            // a restarted server has forgotten its scripts: EVAL loads it again
            if (!String(error).includes("NOSCRIPT")) throw error
            return await client.sendCommand(["EVAL", lua, "1", keyBytes, ...args]) as number
          }
        },
        catch: (cause) => new StoreFailed({ store: name, operation, cause: classify(cause) })
      })
    }
  }
  const acquire = script(acquireLua, "claim")
  const release = script(releaseLua, "release")
  return {
    acquire: (key, owner, lease) =>
      Effect.map(acquire(key, [owner, String(Math.max(1, Math.ceil(lease)))]), (taken) => taken === 1),
    release: (key, owner) => Effect.asVoid(release(key, [owner]))
  }
}
