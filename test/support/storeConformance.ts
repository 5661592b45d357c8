/**
 * The store conformance suite: what every `StoreRegistry` backend must do, run by one call
 * per backend (`storeConformance("sqlite", layer)`), so a new backend is one layer plus one
 * line. Covers get/set/remove/has, isolation between store names, concurrency (parallel sets
 * and modifies), large values, unicode keys (emoji, astral characters; keys that are not well-formed
 * UTF-16 or hold NUL, each its own key), `clearPrefix` with astral characters (in a plain store and
 * in the `artifacts` store), long keys (10 KB, and keys that differ only after a long shared start:
 * distinct keys, listed, cleared by prefix, claimed), string values that are not well-formed UTF-16,
 * binary values, writes with a ttl (`src/internal/expiry`: they expire where the backend supports it),
 * and claims (atomic acquisition, expiry, renewal, release by a non-owner ignored, distinct keys
 * distinct).
 *
 * Every test uses fresh store names (a random suffix), so a backend whose data outlives the
 * layer (a file, a server) can be shared by all tests and by earlier runs.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import type { Claims } from "../../src/runtime/StoreRegistry.ts"
import { supportsTtl, withTtl } from "../../src/internal/expiry.ts"
import { StoreRegistry } from "../../src/runtime/StoreRegistry.ts"

/** How a backend runs the suite. */
export interface ConformanceOptions {
  /** Skip the whole suite, with this reason in its name (e.g. "no postgres on this machine"). */
  readonly skip?: string | undefined
  /**
   * How claims expire: `"clock"` (on Effect's `Clock`, tested with `TestClock`) or `"real"` (on the
   * backend's own time, tested by sleeping past a short lease). Default `"clock"`.
   */
  readonly claimsTime?: "clock" | "real" | undefined
  /** The size of the large value, in bytes (default 5 MB). */
  readonly largeValueBytes?: number | undefined
  /**
   * How `keys` lists a key that is not well-formed UTF-16: `"exact"` (as itself, the default) or
   * `"named"` (under another name, as the file system does: only their number is checked).
   */
  readonly oddKeysListed?: "exact" | "named" | undefined
  /**
   * How a string value that is not well-formed UTF-16 (a lone surrogate) reads back: `"exact"` (as
   * itself, the default) or `"replaced"` (each lone surrogate as U+FFFD, as the file system keeps it).
   */
  readonly loneSurrogateValues?: "exact" | "replaced" | undefined
  /**
   * Whether writes made through `withTtl` expire: `"clock"` (on Effect's `Clock`, tested with
   * `TestClock`), `"real"` (on the backend's own time, tested by sleeping) or `"none"` (the backend keeps
   * every write until removed: `withTtl` gives the store itself). Default `"none"`.
   */
  readonly expiry?: "clock" | "real" | "none" | undefined
  /** Per-test timeout in milliseconds (default 30 s). */
  readonly timeout?: number | undefined
}

let counter = 0
/** A store name no other test (or earlier run against the same database) has used. */
const fresh = (base: string): string =>
  `${base}-${Date.now().toString(36)}-${(counter++).toString(36)}-${Math.random().toString(36).slice(2, 8)}`

/**
 * `length` characters that do not compress (a database may compress a long key to fit its index),
 * ASCII and multi-byte alike; the same for the same `seed`.
 */
const noise = (length: number, seed: number): string => {
  const alphabet = Array.from("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789é中🦀ж")
  let state = seed * 2_654_435_761
  let out = ""
  for (let i = 0; i < length; i++) {
    state = (Math.imul(state, 1_103_515_245) + 12_345) >>> 0
    out += alphabet[(state >>> 16) % alphabet.length]
  }
  return out
}

const storeOf = (name: string) => StoreRegistry.use((registry) => registry.store(name))
const claimsOf = (name: string): Effect.Effect<Claims, unknown, StoreRegistry> =>
  StoreRegistry.use((registry) => registry.claims(name))

/**
 * Registers the conformance tests for the backend `backend`. `layer` is evaluated when a test runs
 * (so it may use servers a `beforeAll` started); every test gets its own instance of it.
 */
export const storeConformance = (
  backend: string,
  layer: () => Layer.Layer<StoreRegistry, unknown>,
  options: ConformanceOptions = {}
): void => {
  const title = options.skip === undefined
    ? `store conformance: ${backend}`
    : `store conformance: ${backend} (skipped: ${options.skip})`
  const suite = options.skip === undefined ? describe : describe.skip
  const timeout = options.timeout ?? 30_000
  const large = options.largeValueBytes ?? 5 * 1024 * 1024
  const provide = <A, E>(effect: Effect.Effect<A, E, StoreRegistry>) =>
    Effect.provide(effect, Layer.suspend(layer))

  suite(title, () => {
    it.effect("get, set, remove and has", () =>
      provide(Effect.gen(function*() {
        const kv = yield* storeOf(fresh("basic"))
        assert.strictEqual(yield* kv.get("missing"), undefined)
        assert.strictEqual(yield* kv.has("missing"), false)
        yield* kv.set("a", "one")
        assert.strictEqual(yield* kv.get("a"), "one")
        assert.strictEqual(yield* kv.has("a"), true)
        yield* kv.set("a", "two")
        assert.strictEqual(yield* kv.get("a"), "two")
        assert.strictEqual(yield* kv.modify("a", (v) => `${v}!`), "two!")
        assert.strictEqual(yield* kv.get("a"), "two!")
        assert.strictEqual(yield* kv.modify("absent", (v) => `${v}!`), undefined)
        assert.strictEqual(yield* kv.has("absent"), false)
        yield* kv.set("empty", "")
        assert.strictEqual(yield* kv.get("empty"), "")
        yield* kv.remove("a")
        assert.strictEqual(yield* kv.get("a"), undefined)
        assert.strictEqual(yield* kv.has("a"), false)
        yield* kv.remove("a") // removing a missing key is not an error
      })), timeout)

    it.effect("store names are isolated: keys, size, clear", () =>
      provide(Effect.gen(function*() {
        const first = fresh("iso")
        const a = yield* storeOf(first)
        const b = yield* storeOf(`${first}x`) // a name that is a prefix of another
        assert.strictEqual(yield* storeOf(first), a, "the same object for every use of a name")
        yield* a.set("k", "from a")
        yield* a.set("only-a", "1")
        yield* b.set("k", "from b")
        assert.strictEqual(yield* a.get("k"), "from a")
        assert.strictEqual(yield* b.get("k"), "from b")
        assert.strictEqual(yield* b.get("only-a"), undefined)
        assert.deepStrictEqual([...(yield* a.keys)].sort(), ["k", "only-a"])
        assert.deepStrictEqual([...(yield* b.keys)], ["k"])
        assert.strictEqual(yield* a.size, 2)
        yield* a.clear
        assert.strictEqual(yield* a.size, 0)
        assert.strictEqual(yield* b.get("k"), "from b", "clearing one store leaves the other")
      })), timeout)

    it.effect("invalid store names fail with StoreFailed", () =>
      provide(Effect.gen(function*() {
        for (const name of ["", "a/b", "../x", " spaced"]) {
          const error = yield* Effect.flip(storeOf(name))
          assert.strictEqual(error._tag, "StoreFailed")
          assert.strictEqual(error.disposition, "fatal")
        }
      })), timeout)

    it.effect("concurrency: parallel sets of distinct keys and parallel modifies of one key", () =>
      provide(Effect.gen(function*() {
        const kv = yield* storeOf(fresh("conc"))
        const n = 50
        yield* Effect.forEach(
          Array.from({ length: n }, (_, i) => i),
          (i) => kv.set(`k${i}`, `v${i}`),
          { concurrency: "unbounded", discard: true }
        )
        const values = yield* Effect.forEach(Array.from({ length: n }, (_, i) => i), (i) => kv.get(`k${i}`), {
          concurrency: "unbounded"
        })
        assert.deepStrictEqual(values, Array.from({ length: n }, (_, i) => `v${i}`))
        assert.strictEqual(yield* kv.size, n)
        yield* kv.set("counter", "0")
        yield* Effect.forEach(
          Array.from({ length: 25 }),
          () => kv.modify("counter", (v) => String(Number(v) + 1)),
          { concurrency: "unbounded", discard: true }
        )
        assert.strictEqual(yield* kv.get("counter"), "25", "no modify is lost")
      })), timeout)

    it.effect("large values round-trip", () =>
      provide(Effect.gen(function*() {
        const kv = yield* storeOf(fresh("large"))
        const bytes = new Uint8Array(large)
        for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 31 + 7) & 0xff
        yield* kv.set("blob", bytes)
        const back = yield* kv.getUint8Array("blob")
        assert.isDefined(back)
        assert.strictEqual(back!.length, large)
        assert.isTrue(Buffer.from(back!).equals(Buffer.from(bytes)))
        const text = "x".repeat(large)
        yield* kv.set("text", text)
        assert.strictEqual((yield* kv.get("text"))?.length, large)
      })), timeout)

    it.effect("unicode keys: emoji, astral characters, separators", () =>
      provide(Effect.gen(function*() {
        const kv = yield* storeOf(fresh("uni"))
        const keys = ["café", "🦀 crab", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "中文/键", "a%2Fb", "line\nbreak", "👩‍👩‍👧‍👦", "%", "_", "'quote\""]
        yield* Effect.forEach(keys, (key, i) => kv.set(key, `value ${i} ✓`), { discard: true })
        for (const [i, key] of keys.entries()) assert.strictEqual(yield* kv.get(key), `value ${i} ✓`, key)
        assert.deepStrictEqual([...(yield* kv.keys)].sort(), [...keys].sort())
      })), timeout)

    it.effect("keys with lone surrogates or NUL are distinct keys: get, set, has, remove, modify, keys", () =>
      provide(Effect.gen(function*() {
        const kv = yield* storeOf(fresh("odd"))
        const keys = ["k\uD800", "k\uDC00", "k\uFFFD", "k", "k\u0000", "k\u0000x", "\u0000", "k\uFFFF", "k\uDC00\uD800", "k\uD83E\uDD80"]
        yield* Effect.forEach(keys, (key, i) => kv.set(key, `v${i}`), { discard: true })
        for (const [i, key] of keys.entries()) {
          assert.strictEqual(yield* kv.get(key), `v${i}`, JSON.stringify(key))
          assert.isTrue(yield* kv.has(key), JSON.stringify(key))
        }
        if ((options.oddKeysListed ?? "exact") === "exact") {
          assert.deepStrictEqual([...(yield* kv.keys)].sort(), [...keys].sort())
        } else assert.strictEqual(new Set(yield* kv.keys).size, keys.length)
        assert.strictEqual(yield* kv.modify("k\uD800", (v) => `${v}!`), "v0!")
        assert.strictEqual(yield* kv.get("k\uDC00"), "v1", "modifying one leaves the other")
        yield* kv.remove("k\u0000")
        assert.isFalse(yield* kv.has("k\u0000"))
        assert.strictEqual(yield* kv.get("k"), "v3")
        assert.strictEqual(yield* kv.get("k\u0000x"), "v5")
        yield* kv.clearPrefix("k\u0000")
        assert.isFalse(yield* kv.has("k\u0000x"))
        assert.strictEqual(yield* kv.get("\u0000"), "v6")
        assert.strictEqual(yield* kv.get("k\uD800"), "v0!")
      })), timeout)

    for (const kind of ["a plain store", "the artifacts store"] as const) {
      it.effect(`clearPrefix with astral characters, in ${kind}`, () =>
        provide(Effect.gen(function*() {
          const base = fresh("astral")
          const kv = yield* storeOf(kind === "a plain store" ? base : "artifacts")
          const at = kind === "a plain store" ? "" : `${base}/`
          yield* kv.set(`${at}🦀/one`, "1")
          yield* kv.set(`${at}🦀/two`, "2")
          yield* kv.set(`${at}🦀x`, "3")
          yield* kv.set(`${at}𝔘/one`, "4")
          yield* kv.clearPrefix(`${at}🦀/`)
          assert.isFalse(yield* kv.has(`${at}🦀/one`))
          assert.isFalse(yield* kv.has(`${at}🦀/two`))
          assert.strictEqual(yield* kv.get(`${at}🦀x`), "3")
          assert.strictEqual(yield* kv.get(`${at}𝔘/one`), "4")
          yield* kv.clearPrefix(`${at}𝔘`)
          assert.isFalse(yield* kv.has(`${at}𝔘/one`))
          const left = (yield* kv.keys).filter((key) => key.startsWith(at))
          assert.deepStrictEqual(left, [`${at}🦀x`])
        })), timeout)
    }

    it.effect("long keys (10 KB; keys that differ only after a long shared start) are distinct: get, set, has, modify, remove, keys, clearPrefix", () =>
      provide(Effect.gen(function*() {
        const kv = yield* storeOf(fresh("long"))
        const start = noise(1_500, 1) // about 3 KB of UTF-8
        const long = noise(5_000, 2) // about 10 KB
        const keys = [`${start}a`, `${start}b`, `${start}\uD800`, `${start}\u0000`, start, long, `${start}a/more`]
        yield* Effect.forEach(keys, (key, i) => kv.set(key, `v${i}`), { discard: true })
        for (const [i, key] of keys.entries()) {
          assert.strictEqual(yield* kv.get(key), `v${i}`, `key ${i}`)
          assert.isTrue(yield* kv.has(key), `key ${i}`)
        }
        if ((options.oddKeysListed ?? "exact") === "exact") {
          assert.deepStrictEqual([...(yield* kv.keys)].sort(), [...keys].sort())
        } else assert.strictEqual(new Set(yield* kv.keys).size, keys.length)
        assert.strictEqual(yield* kv.modify(`${start}a`, (v) => `${v}!`), "v0!")
        assert.strictEqual(yield* kv.get(`${start}b`), "v1", "modifying one leaves the other")
        yield* kv.remove(`${start}b`)
        assert.isFalse(yield* kv.has(`${start}b`))
        assert.strictEqual(yield* kv.get(`${start}a`), "v0!")
        if ((options.oddKeysListed ?? "exact") === "exact") {
          yield* kv.clearPrefix(`${start}a`)
          assert.isFalse(yield* kv.has(`${start}a`))
          assert.isFalse(yield* kv.has(`${start}a/more`))
          assert.strictEqual(yield* kv.get(start), "v4", "a shorter key is not under the prefix")
          yield* kv.clearPrefix(start.slice(0, 10))
          assert.deepStrictEqual([...(yield* kv.keys)], [long])
        }
        const artifacts = yield* storeOf("artifacts")
        const at = `${fresh("long")}/${start}`
        yield* artifacts.set(`${at}1`, "one")
        yield* artifacts.set(`${at}2`, "two")
        assert.strictEqual(yield* artifacts.get(`${at}1`), "one")
        assert.strictEqual(yield* artifacts.get(`${at}2`), "two")
        if ((options.oddKeysListed ?? "exact") === "exact") {
          assert.deepStrictEqual((yield* artifacts.keys).filter((key) => key.startsWith(at)).sort(), [`${at}1`, `${at}2`])
          yield* artifacts.clearPrefix(`${at}1`)
          assert.isFalse(yield* artifacts.has(`${at}1`))
          assert.strictEqual(yield* artifacts.get(`${at}2`), "two")
        }
      })), timeout)

    it.effect("claims of long keys (10 KB; differing only at the end) are distinct", () =>
      provide(Effect.gen(function*() {
        const claims = yield* claimsOf(fresh("longclaims"))
        const start = noise(1_500, 3)
        assert.isTrue(yield* claims.acquire(`${start}a`, "alice", 60_000))
        assert.isTrue(yield* claims.acquire(`${start}b`, "bob", 60_000))
        assert.isTrue(yield* claims.acquire(noise(5_000, 4), "carol", 60_000))
        assert.isFalse(yield* claims.acquire(`${start}a`, "bob", 60_000), "still alice's")
        yield* claims.release(`${start}a`, "alice")
        assert.isTrue(yield* claims.acquire(`${start}a`, "bob", 60_000))
      })), timeout)

    it.effect("string values that are not well-formed UTF-16, or start with U+FEFF, read back as they were written (get, modify)", () =>
      provide(Effect.gen(function*() {
        const kv = yield* storeOf(fresh("oddvalues"))
        // (a leading U+FEFF is a character of the value, not a byte order mark to drop)
        const values = ["a\uD800b", "\uDC00", "x\uDC00\uD800y", "🦀\uD83E", "\uFFFD", "fine 🦀", "\uFEFFbom", "\uFEFF\uFEFF", "\uFEFF"]
        const exact = (options.loneSurrogateValues ?? "exact") === "exact"
        const expected = (value: string) => exact ? value : value.replace(/\p{Cs}/gu, "\uFFFD")
        yield* Effect.forEach(values, (value, i) => kv.set(`k${i}`, value), { discard: true })
        for (const [i, value] of values.entries()) {
          assert.strictEqual(yield* kv.get(`k${i}`), expected(value), JSON.stringify(value))
          assert.deepStrictEqual(
            Array.from((yield* kv.getUint8Array(`k${i}`))!),
            Array.from(new TextEncoder().encode(value)),
            `its bytes are its UTF-8 (lone surrogates as U+FFFD), as in memory: ${JSON.stringify(value)}`
          )
        }
        assert.strictEqual(yield* kv.modify("k0", (v) => `${v}\uDBFF`), `${expected("a\uD800b")}\uDBFF`, "what f returned")
        assert.strictEqual(yield* kv.get("k0"), expected("a\uD800b\uDBFF"))
        const artifacts = yield* storeOf("artifacts")
        const at = `${fresh("oddvalues")}/a`
        yield* artifacts.set(at, "lone \uD800 here")
        assert.strictEqual(yield* artifacts.get(at), expected("lone \uD800 here"))
      })), timeout)

    const expiry = options.expiry ?? "none"
    if (expiry === "none") {
      it.effect("writes with a ttl: this backend keeps every write until removed (withTtl gives the store itself)", () =>
        provide(Effect.gen(function*() {
          const kv = yield* storeOf(fresh("ttl"))
          assert.isFalse(supportsTtl(kv))
          assert.strictEqual(withTtl(kv, "1 second"), kv)
        })), timeout)
    } else {
      // in real time, a unit long enough that a few round trips never cross an expiry, even with the
      // machine busy (200 ms was crossed once on 2 loaded cores: a modify landed after its key's expiry)
      const unit = expiry === "clock" ? 100 : 500
      const pass = (units: number) => expiry === "clock" ? TestClock.adjust(units * unit) : Effect.sleep(units * unit)
      const test = expiry === "clock" ? it.effect : it.live
      test("writes with a ttl expire: unreadable, unlisted, gone; a write without one (or a later one) replaces the expiry", () =>
        provide(Effect.gen(function*() {
          const kv = yield* storeOf(fresh("ttl"))
          assert.isTrue(supportsTtl(kv))
          assert.strictEqual(withTtl(kv, undefined), kv)
          const short = withTtl(kv, 3 * unit)
          yield* short.set("a", "1")
          yield* short.set("bytes", Uint8Array.of(1, 2, 3))
          yield* kv.set("kept", "2")
          yield* short.set("made-permanent", "3")
          yield* kv.set("made-permanent", "3!")
          yield* kv.set("made-expiring", "4")
          yield* short.set("made-expiring", "4!")
          yield* short.set("modified", "5")
          assert.strictEqual(yield* short.get("a"), "1", "the view reads the store")
          assert.strictEqual(yield* kv.get("a"), "1")
          assert.deepStrictEqual([...(yield* kv.getUint8Array("bytes"))!], [1, 2, 3])
          yield* pass(2)
          assert.strictEqual(yield* withTtl(kv, 3 * unit).modify("modified", (v) => `${v}!`), "5!", "a modify renews the ttl")
          yield* pass(2)
          assert.strictEqual(yield* kv.get("a"), undefined, "expired")
          assert.isFalse(yield* kv.has("a"))
          assert.strictEqual(yield* kv.getUint8Array("bytes"), undefined)
          assert.strictEqual(yield* kv.get("made-expiring"), undefined)
          assert.strictEqual(yield* kv.modify("a", (v) => `${v}!`), undefined, "nothing to modify")
          assert.strictEqual(yield* kv.get("modified"), "5!")
          assert.deepStrictEqual([...(yield* kv.keys)].sort(), ["kept", "made-permanent", "modified"])
          assert.strictEqual(yield* kv.size, 3)
          yield* pass(3)
          assert.deepStrictEqual([...(yield* kv.keys)].sort(), ["kept", "made-permanent"])
          yield* short.set("a", "again")
          assert.strictEqual(yield* kv.get("a"), "again", "an expired key can be written again")
          yield* kv.clear
          assert.strictEqual(yield* kv.size, 0)
        })), timeout)
    }

    it.effect("binary values keep every byte", () =>
      provide(Effect.gen(function*() {
        const kv = yield* storeOf(fresh("bin"))
        const bytes = Uint8Array.from({ length: 256 }, (_, i) => i)
        yield* kv.set("all-bytes", bytes)
        const back = yield* kv.getUint8Array("all-bytes")
        assert.deepStrictEqual(Array.from(back!), Array.from(bytes))
        assert.strictEqual(yield* kv.getUint8Array("missing"), undefined)
        yield* kv.set("text", "héllo")
        assert.deepStrictEqual(Array.from((yield* kv.getUint8Array("text"))!), Array.from(Buffer.from("héllo")))
      })), timeout)

    it.effect("claims: of concurrent acquisitions of one key exactly one succeeds", () =>
      provide(Effect.gen(function*() {
        const claims = yield* claimsOf(fresh("claims"))
        const won = yield* Effect.forEach(
          Array.from({ length: 20 }, (_, i) => `owner-${i}`),
          (owner) => claims.acquire("job", owner, 60_000),
          { concurrency: "unbounded" }
        )
        assert.strictEqual(won.filter(Boolean).length, 1)
        const winner = `owner-${won.indexOf(true)}`
        assert.isTrue(yield* claims.acquire("job", winner, 60_000), "the owner renews its claim")
        assert.isFalse(yield* claims.acquire("job", "someone-else", 60_000))
        assert.isTrue(yield* claims.acquire("other-job", "someone-else", 60_000), "keys are independent")
      })), timeout)

    it.effect("claims: release by a non-owner is ignored; release by the owner frees the key", () =>
      provide(Effect.gen(function*() {
        const claims = yield* claimsOf(fresh("release"))
        assert.isTrue(yield* claims.acquire("k", "alice", 60_000))
        yield* claims.release("k", "mallory")
        assert.isFalse(yield* claims.acquire("k", "bob", 60_000), "still alice's")
        yield* claims.release("k", "alice")
        assert.isTrue(yield* claims.acquire("k", "bob", 60_000))
        yield* claims.release("never-claimed", "bob") // nothing to release is not an error
      })), timeout)

    it.effect("claims of keys with lone surrogates or NUL are distinct", () =>
      provide(Effect.gen(function*() {
        const claims = yield* claimsOf(fresh("oddclaims"))
        assert.isTrue(yield* claims.acquire("k\uD800", "alice", 60_000))
        assert.isTrue(yield* claims.acquire("k\uDC00", "bob", 60_000))
        assert.isTrue(yield* claims.acquire("k\uFFFD", "carol", 60_000))
        assert.isTrue(yield* claims.acquire("k\u0000", "dave", 60_000))
        assert.isTrue(yield* claims.acquire("k", "erin", 60_000))
        assert.isFalse(yield* claims.acquire("k\uD800", "bob", 60_000), "still alice's")
        yield* claims.release("k\uDC00", "bob")
        assert.isTrue(yield* claims.acquire("k\uDC00", "frank", 60_000))
        assert.isFalse(yield* claims.acquire("k\u0000", "frank", 60_000), "still dave's")
      })), timeout)

    it.effect("claims of different store names are independent", () =>
      provide(Effect.gen(function*() {
        const base = fresh("cl")
        const a = yield* claimsOf(base)
        const b = yield* claimsOf(`${base}-b`)
        assert.isTrue(yield* a.acquire("k", "alice", 60_000))
        assert.isTrue(yield* b.acquire("k", "bob", 60_000))
      })), timeout)

    if ((options.claimsTime ?? "clock") === "clock") {
      it.effect("claims expire on the Clock, and renewal extends them", () =>
        provide(Effect.gen(function*() {
          const claims = yield* claimsOf(fresh("expiry"))
          assert.isTrue(yield* claims.acquire("k", "alice", 1_000))
          yield* TestClock.adjust(600)
          assert.isFalse(yield* claims.acquire("k", "bob", 1_000))
          assert.isTrue(yield* claims.acquire("k", "alice", 1_000), "renewed until 1600")
          yield* TestClock.adjust(600)
          assert.isFalse(yield* claims.acquire("k", "bob", 1_000), "the renewal still holds at 1200")
          yield* TestClock.adjust(500)
          assert.isTrue(yield* claims.acquire("k", "bob", 1_000), "expired at 1600: bob takes it")
          assert.isFalse(yield* claims.acquire("k", "alice", 1_000))
        })), timeout)
    } else {
      it.live("claims expire in real time, and renewal extends them", () =>
        provide(Effect.gen(function*() {
          const claims = yield* claimsOf(fresh("expiry"))
          assert.isTrue(yield* claims.acquire("k", "alice", 300))
          assert.isFalse(yield* claims.acquire("k", "bob", 300))
          assert.isTrue(yield* claims.acquire("k", "alice", 5_000), "renewed")
          yield* Effect.sleep(400)
          assert.isFalse(yield* claims.acquire("k", "bob", 300), "the renewal still holds")
          assert.isTrue(yield* claims.acquire("k2", "alice", 150))
          yield* Effect.sleep(400)
          assert.isTrue(yield* claims.acquire("k2", "bob", 300), "expired: bob takes it")
        })), timeout)
    }
  })
}
