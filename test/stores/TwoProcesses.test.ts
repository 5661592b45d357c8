/**
 * Two real Node processes (test/stores/fixtures/worker.ts, run by the Node running
 * these tests with `--conditions=tinyagents-source`) sharing one backend: Redis (a
 * real redis-server) and a SQLite file. They start their calls together (each says
 * `ready`, then both get `go`) and run the same keys at the same time, in opposite
 * orders (so they meet in the middle, where both claim the same keys at once):
 * - idempotency: every key is applied exactly once across both (the tool appends
 *   a line per real application to one file, O_APPEND), and both processes get
 *   the same result for every call of a key;
 * - rateLimit: together they let exactly `maxCalls` calls through in the window.
 * Counts: `TINYAGENTS_TWO_PROCESS_KEYS` keys (default 60) × 2 rounds per process.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { spawn } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { redisRequiredButMissing, redisSkip, startRedis, type RedisServer } from "../support/redis.ts"

const worker = fileURLToPath(new URL("./fixtures/worker.ts", import.meta.url))
const keys = Number(process.env["TINYAGENTS_TWO_PROCESS_KEYS"] ?? 60)
const rounds = 2

interface Spawned {
  readonly ready: Promise<void>
  readonly go: () => void
  readonly done: Promise<unknown>
}

/** Starts a worker with `config`; `ready` when it opened the backend, `done` with its JSON line. */
const spawnWorker = (config: unknown): Spawned => {
  const child = spawn(process.execPath, ["--conditions=tinyagents-source", "--no-warnings", worker, JSON.stringify(config)], {
    stdio: ["pipe", "pipe", "pipe"]
  })
  let stdout = ""
  let stderr = ""
  let markReady: () => void = () => {}
  const ready = new Promise<void>((resolve) => void (markReady = resolve))
  child.stdout.on("data", (data: Buffer) => {
    stdout += data.toString("utf8")
    if (stdout.includes("ready\n")) markReady()
  })
  child.stderr.on("data", (data: Buffer) => void (stderr += data.toString("utf8")))
  const done = new Promise<unknown>((resolve, reject) => {
    child.once("exit", (code) => {
      markReady()
      const last = stdout.trim().split("\n").at(-1) ?? ""
      if (code === 0 && last.startsWith("{")) resolve(JSON.parse(last))
      else reject(new Error(`worker exited with ${code}: ${stderr || stdout}`))
    })
  })
  return { ready, go: () => child.stdin.end("go\n"), done }
}

/** Runs two workers with `config` (the second with its keys in reverse order), started together; their outputs. */
const runTwo = async (config: Record<string, unknown>): Promise<[unknown, unknown]> => {
  const a = spawnWorker(config)
  const b = spawnWorker({ ...config, reverse: true })
  await Promise.all([a.ready, b.ready])
  a.go()
  b.go()
  return Promise.all([a.done, b.done])
}

interface IdempotencyOut {
  readonly pid: number
  readonly errors: number
  readonly results: Record<string, { readonly by: number; readonly replayed: boolean }>
}
interface RateOut {
  readonly allowed: number
  readonly limited: number
  readonly errors: number
}

let dir = ""
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "tinyagents-two-processes-"))
})
afterAll(() => {
  if (dir !== "") rmSync(dir, { recursive: true, force: true })
})

/** The two-process tests for one backend (`backend` is the worker's backend config). */
const twoProcessTests = (backend: () => unknown) => {
  // a handler that sleeps (its claim is held while it runs), and one that completes at once (the
  // keyed calls' plain calls: on SQLite, in the write transaction they share); more keys for the
  // second, so that the two processes' runs overlap
  for (const [sleep, count, what] of [[20, keys, "a handler that suspends"], [0, keys * 5, "a handler that completes at once"]] as const) {
    it(`every key is applied exactly once across both processes, and both get the same result (${what})`, async () => {
      const keys = count
      const log = join(dir, `applied-${Math.random().toString(36).slice(2)}.log`)
      writeFileSync(log, "")
      const [a, b] = await runTwo({ backend: backend(), mode: "idempotency", keys, rounds, log, calls: 0, maxCalls: 0, limitKey: "", sleep }) as [
        IdempotencyOut,
        IdempotencyOut
      ]
      assert.deepStrictEqual([a.errors, b.errors], [0, 0])
      const lines = readFileSync(log, "utf8").trim().split("\n")
      const applied = new Map<string, Array<string>>()
      for (const line of lines) {
        const [key, pid] = line.split(" ")
        applied.set(key!, [...(applied.get(key!) ?? []), pid!])
      }
      assert.strictEqual(applied.size, keys)
      for (const [key, by] of applied) assert.strictEqual(by.length, 1, `${key} applied by ${by.join(", ")}`)
      // every call of a key, in either process, got the one application's result
      const resultsOf = (out: IdempotencyOut) => Object.entries(out.results)
      assert.strictEqual(resultsOf(a).length + resultsOf(b).length, 2 * keys * rounds)
      for (const [id, result] of [...resultsOf(a), ...resultsOf(b)]) {
        const key = id.split("#")[0]!
        assert.strictEqual(String(result.by), applied.get(key)![0], id)
      }
      const fresh = [...resultsOf(a), ...resultsOf(b)].filter(([, r]) => !r.replayed).length
      assert.strictEqual(fresh, keys, "one unreplayed result per key")
      // both applied keys (they run the keys in opposite orders and meet in the middle): real contention,
      // not one process doing it all
      assert.deepStrictEqual(new Set([...applied.values()].map((by) => Number(by[0]))), new Set([a.pid, b.pid]))
    }, 60_000)
  }

  it("rateLimit: together the two processes let exactly maxCalls through per window", async () => {
    const maxCalls = 25
    const [a, b] = await runTwo({
      backend: backend(),
      mode: "ratelimit",
      keys: 0,
      rounds: 0,
      log: "",
      calls: 40,
      maxCalls,
      limitKey: `limit-${Math.random().toString(36).slice(2)}`
    }) as [RateOut, RateOut]
    assert.deepStrictEqual([a.errors, b.errors], [0, 0])
    assert.strictEqual(a.allowed + b.allowed, maxCalls)
    assert.strictEqual(a.limited + b.limited, 80 - maxCalls)
  }, 60_000)
}

let server: RedisServer | undefined
const redisSuite = redisSkip === undefined ? describe : describe.skip
redisSuite(`two processes sharing Redis${redisSkip === undefined ? "" : ` (skipped: ${redisSkip})`}`, () => {
  beforeAll(async () => {
    if (redisRequiredButMissing) throw new Error("TINYAGENTS_REQUIRE_REDIS=1 but redis-server is not on PATH")
    server = await startRedis()
  }, 30_000)
  afterAll(async () => {
    await server?.close()
  })
  twoProcessTests(() => ({ redis: { port: server!.port, prefix: `two-${Math.random().toString(36).slice(2)}:` } }))
})

describe("two processes sharing a SQLite file", () => {
  twoProcessTests(() => ({ sqlite: join(dir, `stores-${Math.random().toString(36).slice(2)}.db`) }))
})
