/**
 * The SQL `RateLimiterStore`: fixed-window and token-bucket limits that two clients of one database
 * (two `Stores.layerSqlite` on one file: separate connections, as two processes would have; and two
 * Postgres pools on PGlite) share exactly, on the `Clock`.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Context, Duration, Effect, Layer, Redacted } from "effect"
import { RateLimiter } from "effect/persistence"
import { TestClock } from "effect/testing"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Postgres from "../../src/stores/Postgres.ts"
import { Stores } from "../../src/stores/index.ts"
import type { PgliteServer } from "../support/postgres.ts"
import { startPglite } from "../support/postgres.ts"

const dir = mkdtempSync(join(tmpdir(), "tinyagents-ratelimit-"))
let pglite: PgliteServer | undefined
beforeAll(async () => {
  pglite = await startPglite()
}, 60_000)
afterAll(async () => {
  await pglite?.stop()
  rmSync(dir, { recursive: true, force: true })
})

/** `n` consumptions split over two limiters (two clients of one database), all at once; how many passed. */
const consumeFromBoth = (
  a: RateLimiter.RateLimiter,
  b: RateLimiter.RateLimiter,
  n: number,
  options: Omit<Parameters<RateLimiter.RateLimiter["consume"]>[0], "key"> & { readonly key: string }
) =>
  Effect.map(
    Effect.forEach(
      Array.from({ length: n }, (_, i) => i % 2 === 0 ? a : b),
      (limiter) => Effect.result(limiter.consume(options)),
      { concurrency: "unbounded" }
    ),
    (results) => results.filter((r) => r._tag === "Success").length
  )

/** Two independent limiters on one database. */
const twoClients = (make: () => Layer.Layer<Stores.Services>) =>
  Effect.gen(function*() {
    const a = Context.get(yield* Layer.build(make()), RateLimiter.RateLimiter)
    const b = Context.get(yield* Layer.build(make()), RateLimiter.RateLimiter)
    return [a, b] as const
  })

const backends: ReadonlyArray<readonly [string, () => Layer.Layer<Stores.Services>]> = [
  ["sqlite", () => Stores.layerSqlite({ filename: join(dir, "limits.db") })],
  ["postgres via PGlite", () => Postgres.layer({ url: Redacted.make(pglite!.url), maxConnections: 1 })]
]

for (const [name, make] of backends) {
  describe(`SQL rate limits: ${name}`, () => {
    it.effect("fixed window: two clients of one database share the limit exactly; it resets after the window", () =>
      Effect.scoped(Effect.gen(function*() {
        const [a, b] = yield* twoClients(make)
        const key = `fw-${Math.random()}`
        const passed = yield* consumeFromBoth(a, b, 20, { key, limit: 7, window: "1 minute" })
        assert.strictEqual(passed, 7)
        const refused = yield* Effect.flip(a.consume({ key, limit: 7, window: "1 minute" }))
        assert.strictEqual(refused.reason._tag, "RateLimitExceeded")
        yield* TestClock.adjust("61 seconds")
        const again = yield* b.consume({ key, limit: 7, window: "1 minute" })
        assert.strictEqual(again.remaining, 6)
      })))

    it.effect("keys with lone surrogates or NUL are distinct limits", () =>
      Effect.scoped(Effect.gen(function*() {
        const [a] = yield* twoClients(make)
        const base = `odd-${Math.random()}`
        for (const key of [`${base}\uD800`, `${base}\uDC00`, `${base}\u0000`, base]) {
          assert.strictEqual((yield* a.consume({ key, limit: 1, window: "1 minute" })).remaining, 0, JSON.stringify(key))
        }
        const refused = yield* Effect.flip(a.consume({ key: `${base}\uD800`, limit: 1, window: "1 minute" }))
        assert.strictEqual(refused.reason._tag, "RateLimitExceeded")
      })))

    it.effect("token bucket: two clients share the bucket; tokens refill over time", () =>
      Effect.scoped(Effect.gen(function*() {
        const [a, b] = yield* twoClients(make)
        const key = `tb-${Math.random()}`
        const options = { key, limit: 5, window: "10 seconds", algorithm: "token-bucket" } as const
        assert.strictEqual(yield* consumeFromBoth(a, b, 12, options), 5)
        yield* TestClock.adjust("2 seconds") // one token per 2 s
        assert.strictEqual(yield* consumeFromBoth(a, b, 4, options), 1)
        const delayed = yield* a.consume({ ...options, onExceeded: "delay" })
        assert.isTrue(Duration.toMillis(delayed.delay) > 0, "an empty bucket delays")
      })))
  })
}
