/**
 * The Redis backend against a real `redis-server` (test/support/redis.ts starts one
 * on a free loopback port): the store conformance suite, then what is Redis's own —
 * keys any string can be, two connections (two "processes") sharing stores, claims
 * and rate limits, a lazy open that recovers, and a server that stops mid-run and
 * comes back (calls fail with a retryable `StoreFailed` meanwhile, then succeed,
 * and what was stored before survives with persistence on); writes with a ttl are
 * keys with `PX`; a wrong password, none, or an invalid URL is a fatal `StoreFailed`.
 * The README's Redis example (scratchpad/stores-redis.ts) runs here, twice, against
 * the test's server: the second process answers from the first's stored result.
 * Skipped, with "skipped: no redis-server" in the name, on a machine without it.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { spawnSync } from "node:child_process"
import { fileURLToPath } from "node:url"
import { Context, Effect, Layer, Result, Schema } from "effect"
import { createClient } from "redis"
import { RateLimiter } from "effect/persistence"
import {
  EventSink,
  Executor,
  RunContext,
  StoreRegistry,
  Tool,
  ToolError,
  ToolRegistry,
  ToolResult
} from "../../src/index.ts"
import { rateLimit } from "../../src/governance/middleware/index.ts"
import { withTtl } from "../../src/internal/expiry.ts"
import * as RedisStores from "../../src/stores/Redis.ts"
import type * as Stores from "../../src/stores/Stores.ts"
import { redisRequiredButMissing, redisSkip, startRedis, type RedisServer } from "../support/redis.ts"
import { storeConformance } from "../support/storeConformance.ts"

let server: RedisServer | undefined
const suite = redisSkip === undefined ? describe : describe.skip
const skipped = redisSkip === undefined ? "" : ` (skipped: ${redisSkip})`

beforeAll(async () => {
  if (redisSkip !== undefined) return
  if (redisRequiredButMissing) throw new Error("TINYAGENTS_REQUIRE_REDIS=1 but redis-server is not on PATH")
  server = await startRedis({ persist: true })
}, 30_000)
afterAll(async () => {
  await server?.close()
})

let prefixes = 0
/** A key prefix no other test (or earlier run) used: tests share the server. */
const freshPrefix = () => `t${Date.now().toString(36)}${(prefixes++).toString(36)}:`
const redisLayer = (prefix: string) => RedisStores.layer({ port: server!.port, prefix })

storeConformance("redis", () => redisLayer(freshPrefix()), { skip: redisSkip, claimsTime: "real", expiry: "real" })

const runLayer = (runId: string) =>
  Layer.mergeAll(RunContext.RunContext.layer({ threadId: "t", runId, turn: 0 }), EventSink.EventSink.layerMemory)

suite(`Redis stores${skipped}`, () => {
  it.live("any string is a key: lone surrogates, glob characters; clearPrefix removes exactly its keys", () =>
    Effect.gen(function*() {
      const kv = yield* StoreRegistry.store("keys")
      const keys = ["a\uD800", "a\uDC00", "a\uD800b", "x*", "x?", "x[1]", "x\\", "xy", "x"]
      yield* Effect.forEach(keys, (key, i) => kv.set(key, String(i)), { discard: true })
      for (const [i, key] of keys.entries()) assert.strictEqual(yield* kv.get(key), String(i), JSON.stringify(key))
      assert.deepStrictEqual([...(yield* kv.keys)].sort(), [...keys].sort())
      yield* kv.clearPrefix("x*")
      assert.isFalse(yield* kv.has("x*"))
      assert.isTrue(yield* kv.has("xy"), "a glob character in a prefix is literal")
      yield* kv.clearPrefix("a\uD800")
      assert.deepStrictEqual([...(yield* kv.keys)].sort(), ["a\uDC00", "x", "x?", "x[1]", "x\\", "xy"].sort())
      // bytes set are bytes got; a string reads back as its UTF-8 bytes, bytes as base64 text
      yield* kv.set("bytes", Uint8Array.of(0, 255, 115, 98))
      assert.strictEqual(yield* kv.get("bytes"), Buffer.from([0, 255, 115, 98]).toString("base64"))
      yield* kv.clear
      assert.strictEqual(yield* kv.size, 0)
    }).pipe(Effect.provide(redisLayer(freshPrefix()))))

  it.live("two connections with one prefix share stores, claims and rate limits; another prefix shares nothing", () =>
    Effect.gen(function*() {
      const prefix = freshPrefix()
      const one = yield* Layer.build(redisLayer(prefix))
      const two = yield* Layer.build(redisLayer(prefix))
      const other = yield* Layer.build(redisLayer(freshPrefix()))
      yield* Effect.provide(Effect.flatMap(StoreRegistry.store("notes"), (kv) => kv.set("n", "from one")), one)
      assert.strictEqual(yield* Effect.provide(Effect.flatMap(StoreRegistry.store("notes"), (kv) => kv.get("n")), two), "from one")
      assert.isUndefined(yield* Effect.provide(Effect.flatMap(StoreRegistry.store("notes"), (kv) => kv.get("n")), other))
      const claim = (owner: string) =>
        StoreRegistry.StoreRegistry.use((registry) => Effect.flatMap(registry.claims("idempotency"), (c) => c.acquire("k", owner, 60_000)))
      assert.isTrue(yield* Effect.provide(claim("one"), one))
      assert.isFalse(yield* Effect.provide(claim("two"), two))
      assert.isTrue(yield* Effect.provide(claim("other"), other))
      const consume = RateLimiter.RateLimiter.use((limiter) =>
        Effect.map(
          Effect.result(limiter.consume({ key: "k", limit: 3, window: "1 hour", onExceeded: "fail" })),
          (result) => result._tag === "Success"
        )
      )
      const allowed = [
        yield* Effect.provide(consume, one),
        yield* Effect.provide(consume, two),
        yield* Effect.provide(consume, one),
        yield* Effect.provide(consume, two),
        yield* Effect.provide(consume, other)
      ]
      assert.deepStrictEqual(allowed, [true, true, true, false, true])
    }))

  it.live("modify is atomic across connections: 2 × 100 concurrent increments make 200", () =>
    Effect.gen(function*() {
      const prefix = freshPrefix()
      const connections = [yield* Layer.build(redisLayer(prefix)), yield* Layer.build(redisLayer(prefix))]
      const n = Number(process.env["TINYAGENTS_REDIS_MODIFY_COUNT"] ?? 100)
      yield* Effect.provide(Effect.flatMap(StoreRegistry.store("counters"), (kv) => kv.set("c", "0")), connections[0]!)
      yield* Effect.provide(Effect.flatMap(StoreRegistry.store("counters"), (kv) => kv.set("b", Uint8Array.of(0, 0))), connections[0]!)
      const increments = (context: Context.Context<Stores.Services>) =>
        Effect.provide(
          Effect.flatMap(StoreRegistry.store("counters"), (kv) =>
            Effect.forEach(Array.from({ length: n }), (_, i) =>
              i % 2 === 0
                ? Effect.asVoid(kv.modify("c", (v) => String(Number(v) + 1)))
                : Effect.asVoid(kv.modifyUint8Array("b", (v) => {
                  const next = (v[0]! << 8 | v[1]!) + 1
                  return Uint8Array.of(next >> 8, next & 0xff)
                })), { concurrency: "unbounded", discard: true })),
          context
        )
      yield* Effect.all(connections.map(increments), { concurrency: "unbounded", discard: true })
      const kv = yield* Effect.provide(StoreRegistry.store("counters"), connections[1]!)
      const bytes = (yield* kv.getUint8Array("b"))!
      assert.strictEqual(Number(yield* kv.get("c")) + (bytes[0]! << 8 | bytes[1]!), 2 * n, "no modify is lost")
      assert.strictEqual(Number(yield* kv.get("c")), n)
      assert.isUndefined(yield* kv.modify("absent", (v) => `${v}!`))
    }))

  it.live("artifacts: text over the cap is truncated with a note, binary over it refused, every write expires", () =>
    Effect.gen(function*() {
      const prefix = freshPrefix()
      const context = yield* Layer.build(RedisStores.layer({ port: server!.port, prefix, artifacts: { maxBytes: 1_024, ttl: "300 millis" } }))
      const [artifacts, notes] = yield* Effect.provide(
        Effect.all([StoreRegistry.store("artifacts"), StoreRegistry.store("notes")]),
        context
      )
      yield* artifacts.set("big", "😀".repeat(1_000))
      const kept = (yield* artifacts.get("big"))!
      assert.isAtMost(Buffer.byteLength(kept), 1_024)
      assert.match(kept, /^(?:😀)+\n\[truncated by the artifact store: 4000 bytes, cap 1024\]\n$/u)
      const refused = yield* Effect.flip(artifacts.set("bin", new Uint8Array(1_025)))
      assert.strictEqual(refused._tag, "KeyValueStoreError")
      assert.match(refused.message, /over the cap of 1024 bytes/)
      assert.isFalse(yield* artifacts.has("bin"))
      yield* artifacts.set("small", new Uint8Array(1_024))
      assert.strictEqual((yield* artifacts.getUint8Array("small"))?.length, 1_024)
      yield* notes.set("kept", "other stores do not expire")
      yield* Effect.sleep("600 millis")
      assert.isUndefined(yield* artifacts.get("big"), "expired")
      assert.isFalse(yield* artifacts.has("small"))
      assert.strictEqual(yield* notes.get("kept"), "other stores do not expire")
      assert.throws(() => RedisStores.layer({ port: server!.port, artifacts: { maxBytes: 20 } }), RangeError)
    }))

  it.live("writes with a ttl are Redis keys with an expiry (PX): Redis deletes them; other writes have none", () =>
    Effect.gen(function*() {
      const prefix = freshPrefix()
      const notes = yield* Effect.provide(StoreRegistry.store("idempotency"), yield* Layer.build(redisLayer(prefix)))
      yield* withTtl(notes, "1 hour").set("tool/a", "result")
      yield* withTtl(notes, "1 hour").set("tool/b", "result")
      yield* withTtl(notes, "1 hour").modify("tool/b", (v) => `${v}!`)
      yield* notes.set("kept", "for ever")
      const client = createClient({ url: server!.url })
      yield* Effect.promise(() => client.connect())
      yield* Effect.addFinalizer(() => Effect.promise(() => client.quit()))
      const pttl = (key: string) => Effect.promise(() => client.pTTL(`${prefix}idempotency/${key}`))
      for (const key of ["tool/a", "tool/b"]) {
        const left = yield* pttl(key)
        assert.isAbove(left, 3_500_000, key)
        assert.isAtMost(left, 3_600_000, key)
      }
      assert.strictEqual(yield* pttl("kept"), -1, "no expiry")
      yield* withTtl(notes, "100 millis").set("tool/a", "short")
      yield* Effect.sleep("300 millis")
      assert.strictEqual(yield* pttl("tool/a"), -2, "Redis deleted it")
    }))

  it.live("a server that is not there yet: the open fails with StoreFailed, and the next use after it starts works", () =>
    Effect.gen(function*() {
      const spare = yield* Effect.promise(() => startRedis())
      yield* Effect.addFinalizer(() => Effect.promise(() => spare.close()))
      yield* Effect.promise(() => spare.stop())
      const registry = yield* Layer.build(RedisStores.layer({ port: spare.port, prefix: freshPrefix() }))
      const use = Effect.provide(Effect.flatMap(StoreRegistry.store("notes"), (kv) => kv.set("n", "1")), registry)
      const error = yield* Effect.flip(use)
      assert.strictEqual(error._tag, "StoreFailed")
      assert.strictEqual((error as ToolError.StoreFailed).operation, "open")
      yield* Effect.promise(() => spare.start())
      yield* use
    }))
})

suite(`Redis configuration errors are permanent${skipped}`, () => {
  it.live("a wrong password (WRONGPASS), none (NOAUTH), an invalid URL: a fatal StoreFailed, not \"retry later\"; the right password works", () =>
    Effect.gen(function*() {
      const locked = yield* Effect.promise(() => startRedis({ password: "right-password" }))
      yield* Effect.addFinalizer(() => Effect.promise(() => locked.close()))
      const failures = (url: string) =>
        Effect.gen(function*() {
          const context = yield* Layer.build(RedisStores.layer({ url, prefix: freshPrefix(), connectTimeout: 2_000 }))
          const written = yield* Effect.flip(
            Effect.provide(Effect.flatMap(StoreRegistry.store("notes"), (kv) => kv.set("key-planted-secret", "value-planted-secret")), context)
          )
          const limited = yield* Effect.flip(Effect.provide(
            RateLimiter.RateLimiter.use((limiter) => limiter.consume({ key: "k", limit: 1, window: "1 minute" })),
            context
          ))
          const consume = new ToolError.StoreFailed({
            store: "rate_limit",
            operation: "consume",
            cause: limited.reason._tag === "RateLimitStoreError" ? limited.reason.cause : limited
          })
          return [written as ToolError.StoreFailed, consume] as const
        })
      const cases = {
        "wrong password": `redis://:wrong-password@127.0.0.1:${locked.port}`,
        "wrong user": `redis://someone:right-password@127.0.0.1:${locked.port}`,
        "no password": `redis://127.0.0.1:${locked.port}`,
        "port not a number": "redis://127.0.0.1:notaport"
      }
      for (const [what, url] of Object.entries(cases)) {
        for (const error of yield* failures(url)) {
          assert.strictEqual(error._tag, "StoreFailed", what)
          assert.strictEqual(error.disposition, "fatal", `${what}: ${error.message}`)
          assert.notMatch(error.message, /retry later/, what)
          const encoded = JSON.stringify(Schema.encodeUnknownSync(ToolError.ToolError)(error))
          for (const secret of ["right-password", "key-planted-secret", "value-planted-secret"]) {
            assert.notInclude(encoded, secret, what)
            assert.notInclude(error.message, secret, what)
          }
        }
      }
      const context = yield* Layer.build(RedisStores.layer({ url: locked.url, prefix: freshPrefix() }))
      yield* Effect.provide(Effect.flatMap(StoreRegistry.store("notes"), (kv) => kv.set("n", "1")), context)
    }), 30_000)
})

/** A keyed tool that counts its real applications. */
const makeApply = () => {
  const applied = new Map<string, number>()
  const tool = Tool.make("apply_once", {
    description: "Applies a key once.",
    input: Schema.Struct({ key: Schema.String }),
    output: Schema.Struct({ key: Schema.String, n: Schema.Int }),
    safety: { access: "write" },
    idempotency: ({ key }) => key,
    handler: ({ key }) => Effect.sync(() => {
      const n = (applied.get(key) ?? 0) + 1
      applied.set(key, n)
      return { key, n }
    })
  })
  return { tool, applied }
}

suite(`Redis restart${skipped}`, () => {
  it.live("redis-server stops mid-run: keyed and rate-limited calls fail with a retryable StoreFailed; after it restarts they succeed, and stored results survive", () =>
    Effect.gen(function*() {
      const { tool, applied } = makeApply()
      const registry = Result.getOrThrow(ToolRegistry.makeResult([tool]))
      const layer = Layer.merge(redisLayer(freshPrefix()), runLayer("restart"))
      const context = yield* Layer.build(layer)
      const limited = yield* Effect.provide(
        Executor.make(registry, { middleware: [rateLimit({ maxCalls: 1_000, window: "1 hour" })] }),
        context
      )
      const plain = yield* Effect.provide(Executor.make(registry), context)
      const run = (id: string, key: string, executor = limited) =>
        Effect.provide(executor.run({ id, name: "apply_once", arguments: { key } }), context)
      const before = yield* run("c1", "before")
      assert.deepStrictEqual(before.value, { key: "before", n: 1 })

      yield* Effect.promise(() => server!.stop())
      // through rateLimit (its counter is in Redis) and without it (the idempotency store is); a retryable
      // error is the call's result (for the model to try again), not a failure of the run
      const failures = yield* Effect.forEach(
        [["k1", limited], ["k1", plain], ["before", plain]] as const,
        ([key, executor], i) => run(`down${i}`, key, executor)
      )
      assert.deepStrictEqual(
        failures.map((result) => [result.isError, result.error?._tag, (result.error as ToolError.StoreFailed | undefined)?.operation]),
        [[true, "StoreFailed", "consume"], [true, "StoreFailed", "read"], [true, "StoreFailed", "read"]]
      )
      for (const result of failures) assert.strictEqual(result.error?.disposition, "retry")
      assert.isFalse(applied.has("k1"), "no handler ran without the store")

      yield* Effect.promise(() => server!.start())
      // the client reconnects with backoff (at most ~2 s between attempts): try until it is back
      let after: ToolResult.ToolResult | undefined
      for (let i = 0; i < 100 && after === undefined; i++) {
        const attempt = yield* run(`up${i}`, "k1")
        if (!attempt.isError) after = attempt
        else yield* Effect.sleep(100)
      }
      assert.deepStrictEqual(after?.value, { key: "k1", n: 1 })
      const replay = yield* run("again", "before")
      assert.deepStrictEqual(replay.idempotency, { key: "before", replayed: true })
      assert.strictEqual(applied.get("before"), 1, "the result stored before the restart answered")
    }))
})

suite(`the README's Redis example${skipped}`, () => {
  it("scratchpad/stores-redis.ts run twice: the second process replays the first's result", () => {
    const repo = fileURLToPath(new URL("../..", import.meta.url))
    const runExample = () =>
      spawnSync(process.execPath, ["--conditions=tinyagents-source", "scratchpad/stores-redis.ts"], {
        cwd: repo,
        encoding: "utf8",
        timeout: 30_000,
        env: { ...process.env, REDIS_URL: server!.url }
      })
    const first = runExample()
    const second = runExample()
    assert.strictEqual(first.status, 0, first.stderr)
    assert.strictEqual(second.status, 0, second.stderr)
    const pidOf = (out: string) => /"pid":(\d+)/.exec(out)?.[1]
    assert.include(first.stdout, "replayed: false")
    assert.include(second.stdout, "replayed: true")
    assert.strictEqual(pidOf(second.stdout), pidOf(first.stdout), "the second run answered with the first process's result")
  }, 60_000)
})
