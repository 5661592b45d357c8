/**
 * The durable-agents simulation (`TINYAGENTS_BENCH=durable`): `TINYAGENTS_BENCH_AGENTS` (default
 * 1,000) durable agents started at once, each two model turns (a scripted model: turn 0 calls two
 * tools, turn 1 answers) and two tool calls that take 50 ms (`Effect.sleep`). Measured:
 *
 * - on SQLite, one runner in this process (`Runner.layerSqlite`);
 * - on Postgres, when the machine has it (a fresh server per case, from `test/support/postgres.ts`),
 *   with 1, 2 and 4 runner processes (`TINYAGENTS_BENCH_RUNNERS`, default `1,2,4`), each this file
 *   run as `runner` (`Runner.layerPostgres`), and a client process (this file as `client`,
 *   `Runner.layerPostgresClient`) that starts the runs and waits for them.
 *
 * Each case first runs 100 agents untimed (so that the runners hold their shards). Per case: wall
 * time from the first start to the last result of the 1,000, runs/s and tool calls/s; journal
 * rows per tool call (`cluster_messages` + `cluster_replies` + the durable agent's event journal and
 * started markers, counted after the case, divided by the calls); the RSS of each runner at the end
 * (MB), and the runners' RSS growth from serving to the end, per agent (KB); the runners' CPU time
 * (user + system, all runners, from serving to the client's last result: warm-up, settling and idle
 * polling included) per agent run (ms), this process's own for SQLite. CPU per agent is the cost
 * that should stay flat as runners are added; wall time also depends on how many cores the machine
 * has for them.
 *
 * Idle cost, separated (Postgres): every runner polls storage (`pollInterval`), refreshes its shard
 * locks (every second) and the shard assignments (every second) even with nothing to do, so the
 * CPU above grows with runners × wall time whatever the work. Each runner reports its CPU time when
 * told (SIGUSR2); the bench reads it around the client's run (its start to its last result: start-up,
 * warm-up and timed agents) and over 2 s after it (`runner idle CPU ms/s`: per runner, averaged;
 * measured then because right after start-up a runner is still acquiring shards and compiling).
 * `runner work CPU ms/agent` is the runners' CPU over the client's run minus each runner's idle
 * rate × that wall time, per agent run (warm-up included): the work the agents cost.
 * `client CPU ms/agent` is the client process's CPU from its first start to its last result
 * (starting the runs and polling every 100 ms for each result), per agent run.
 *
 * Knobs: `TINYAGENTS_BENCH_SQLITE=0` skips the SQLite case; `TINYAGENTS_BENCH_RUNNER_POLL` sets the
 * Postgres runners' `pollInterval` (default `500 millis`, `Runner`'s default; the client's and `result`'s stay 100 ms);
 * `TINYAGENTS_BENCH_PROF=<dir>` runs
 * the runner and client processes with `--cpu-prof`, writing `<dir>/<runners>r-runner<i>.cpuprofile`
 * and `<dir>/<runners>r-client.cpuprofile` (a runner's profile covers its whole life, start-up and
 * settle included).
 */
import { type Duration, Effect, Layer, Redacted, Result, Schema } from "effect"
import { spawn } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { SqlClient } from "effect/sql"
import { ChatModel, Tool, ToolRegistry } from "../src/index.ts"
import { Stores } from "../src/stores/index.ts"
import { DurableAgent, Runner } from "../src/durable/index.ts"

const agents = Number(process.env["TINYAGENTS_BENCH_AGENTS"] ?? 1000)
/** The Postgres cases: runner counts (`TINYAGENTS_BENCH_RUNNERS`, default `1,2,4`; empty: none). */
const postgresRunners = (process.env["TINYAGENTS_BENCH_RUNNERS"] ?? "1,2,4").split(",").filter(Boolean).map(Number)
const toolMs = 50
/** `TINYAGENTS_BENCH_SQLITE=0`: no SQLite case. */
const sqliteEnabled = process.env["TINYAGENTS_BENCH_SQLITE"] !== "0"
/** `TINYAGENTS_BENCH_PROF=<dir>`: CPU profiles of the runner and client processes go there. */
const profDir = process.env["TINYAGENTS_BENCH_PROF"]

const work = Tool.make("lookup", {
  description: "Looks something up (50 ms).",
  input: Schema.Struct({ q: Schema.String }),
  safety: { access: "read", idempotent: true },
  handler: ({ q }) => Effect.as(Effect.sleep(toolMs), `found ${q}`)
})

const model = ChatModel.fromFunction((request) =>
  Effect.succeed(
    request.messages.some((m) => m.role === "tool")
      ? ChatModel.answer("done")
      : ChatModel.callTools([["a", "lookup", { q: "a" }], ["b", "lookup", { q: "b" }]])
  )
)

const agent = DurableAgent.make({
  name: "bench-agent",
  tools: Result.getOrThrow(ToolRegistry.makeResult([work])),
  maxTurns: 4,
  pollInterval: "100 millis"
})
const callsPerRun = 2
/** Agents run (untimed) before each case, so that the runners hold their shards when the clock starts. */
const warmup = 100
const poll = "100 millis"
/**
 * The Postgres runners' storage poll (`TINYAGENTS_BENCH_RUNNER_POLL`, default 500 ms, `Runner`'s own
 * default: on Postgres a message is pushed to its runner and the poll is a fallback, so a faster one
 * mostly measures polling).
 */
const runnerPoll = process.env["TINYAGENTS_BENCH_RUNNER_POLL"] ?? "500 millis"

/** Runs `warmup` agents (prefix `prefix`w), then starts `ids` and waits for each result; the elapsed milliseconds of the latter. */
const startAndWait = (ids: ReadonlyArray<string>, prefix: string) =>
  Effect.gen(function*() {
    const warm = Array.from({ length: warmup }, (_, i) => `${prefix}w${i}`)
    yield* Effect.forEach(warm, (id) => agent.start(id, [{ role: "user", content: id }]), { concurrency: 50, discard: true })
    yield* Effect.forEach(warm, (id) => agent.result(id), { concurrency: 50, discard: true })
    const t0 = performance.now()
    yield* Effect.forEach(ids, (id) => agent.start(id, [{ role: "user", content: id }]), { concurrency: 50, discard: true })
    yield* Effect.forEach(ids, (id) => agent.result(id), { concurrency: 50, discard: true })
    return performance.now() - t0
  })

/** Journal rows: the engine's messages and replies, and the durable agent's own tables (events, markers). */
const journalRows = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const count = (table: string) =>
    sql.unsafe<{ n: number | string }>(`SELECT COUNT(*) AS n FROM ${table}`).pipe(Effect.map((rows) => Number(rows[0]!.n)))
  const tables = sql.onDialectOrElse({
    pg: () => sql<{ name: string }>`SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'public'`,
    orElse: () => sql<{ name: string }>`SELECT name FROM sqlite_master WHERE type = 'table'`
  })
  const names = (yield* tables).map((t) => t.name)
  const journal = names.filter((n) => n === "cluster_messages" || n === "cluster_replies" || n.startsWith("tinyagents_durable_"))
  const counts = yield* Effect.forEach(journal, (n) => Effect.map(count(n), (rows) => [n, rows] as const))
  return Object.fromEntries(counts)
})

interface Row {
  readonly journal: string
  readonly runners: number
  readonly agents: number
  readonly seconds: number
  readonly rss: ReadonlyArray<number>
  /** RSS growth of all runners from serving to the end (bytes). */
  readonly growth: number
  /** CPU time of all runners from serving to the end (microseconds). */
  readonly cpu: number
  /** Postgres: the runners' idle CPU rate (microseconds per second, per runner, averaged over the runners). */
  readonly idle?: number
  /** Postgres: the runners' CPU over the client's run minus their idle rate × its wall time (microseconds). */
  readonly work?: number
  /** Postgres: the client's CPU time from the first start to the last result (microseconds). */
  readonly client?: number
  readonly rows: Record<string, number>
}

const rowOf = (r: Row): Record<string, string | number> => {
  const calls = r.agents * callsPerRun
  const journaledCalls = (r.agents + warmup) * callsPerRun // the journal holds the warm-up's rows too
  const total = Object.values(r.rows).reduce((a, b) => a + b, 0)
  return {
    journal: r.journal,
    runners: r.runners,
    agents: r.agents,
    "s": +r.seconds.toFixed(2),
    "runs/s": Math.round(r.agents / r.seconds),
    "calls/s": Math.round(calls / r.seconds),
    "journal rows/call": +(total / journaledCalls).toFixed(2),
    "rows": Object.entries(r.rows).map(([k, v]) => `${k}=${v}`).join(" "),
    "RSS MB/runner": r.rss.map((b) => Math.round(b / 1e6)).join("/"),
    "RSS growth KB/agent": Math.round(r.growth / r.agents / 1024),
    "runner CPU ms/agent": +(r.cpu / 1000 / (r.agents + warmup)).toFixed(2),
    "runner idle CPU ms/s": r.idle === undefined ? "" : +(r.idle / 1000).toFixed(1),
    "runner work CPU ms/agent": r.work === undefined ? "" : +(r.work / 1000 / (r.agents + warmup)).toFixed(2),
    "client CPU ms/agent": r.client === undefined ? "" : +(r.client / 1000 / (r.agents + warmup)).toFixed(2)
  }
}

/** SQLite: one runner in this process. */
const sqliteCase = async (): Promise<Row> => {
  const dir = mkdtempSync(join(tmpdir(), "tinyagents-bench-durable-"))
  try {
    const ids = Array.from({ length: agents }, (_, i) => `s${i}`)
    const live = agent.layer.pipe(
      Layer.provide([model, Stores.layerMemory]),
      Layer.provideMerge(Runner.layerSqlite({ filename: join(dir, "journal.db"), pollInterval: poll }))
    )
    const cpu0 = cpuMicros()
    const [base, ms, rows] = await Effect.runPromise(
      Effect.all([Effect.sync(() => process.memoryUsage().rss), startAndWait(ids, "s"), journalRows]).pipe(Effect.provide(live))
    )
    const rss = process.memoryUsage().rss
    return { journal: "sqlite", runners: 1, agents, seconds: ms / 1000, rss: [rss], growth: rss - base, rows, cpu: cpuMicros() - cpu0 }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

const self = fileURLToPath(import.meta.url)

/** This process's CPU time so far (user + system, microseconds). */
const cpuMicros = () => {
  const usage = process.cpuUsage()
  return usage.user + usage.system
}

/** Runs this file as a child (`runner` or `client`); resolves with its stdout when it exits. */
const child = (args: ReadonlyArray<string>, env: Record<string, string>, profName?: string) => {
  const prof = profDir !== undefined && profName !== undefined
    ? ["--cpu-prof", `--cpu-prof-dir=${profDir}`, `--cpu-prof-name=${profName}.cpuprofile`]
    : []
  const proc = spawn(process.execPath, [...prof, "--conditions=tinyagents-source", self, ...args], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "inherit"]
  })
  let out = ""
  proc.stdout.setEncoding("utf8").on("data", (chunk: string) => (out += chunk))
  const up = new Promise<void>((resolve) => {
    const check = () => (out.includes("UP ") ? resolve() : setTimeout(check, 50))
    check()
  })
  const done = new Promise<string>((resolve) => proc.on("close", () => resolve(out)))
  return { proc, up, done, stdout: () => out }
}

/** Each runner's CPU time now (microseconds): SIGUSR2 makes a runner print `CPU <n> <k>`, the k-th. */
const cpuOf = (procs: ReadonlyArray<ReturnType<typeof child>>) => {
  const marks = procs.map((p) => (p.stdout().match(/CPU \d+ \d+/g) ?? []).length)
  for (const p of procs) p.proc.kill("SIGUSR2")
  return Promise.all(procs.map((p, i) =>
    new Promise<number>((resolve) => {
      const check = () => {
        const all = [...p.stdout().matchAll(/CPU (\d+) (\d+)/g)]
        const mark = all[marks[i]!]
        return mark === undefined ? setTimeout(check, 10) : resolve(Number(mark[1]))
      }
      check()
    })
  ))
}

/** Postgres: `runners` runner processes on a fresh database, a client process starting the runs. */
export const postgresCase = async (url: string, runners: number, prefix: string): Promise<Row> => {
  const { freePort } = await import("../test/support/postgres.ts")
  const procs: Array<ReturnType<typeof child>> = []
  for (let i = 0; i < runners; i++) {
    const p = child(["runner"], { BENCH_PG_URL: url, BENCH_PORT: String(await freePort()) }, `${runners}r-runner${i}`)
    await p.up
    procs.push(p)
  }
  // let the shards settle between the runners before the clock starts (assignments refresh every second)
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
  await sleep(3000)
  const client = child(["client"], { BENCH_PG_URL: url, BENCH_PREFIX: prefix }, `${runners}r-client`)
  const run0 = await cpuOf(procs)
  const runT0 = performance.now()
  // the client's run ends when it prints its result (its exit adds nothing the runners do)
  await new Promise<void>((resolve) => {
    const check = () => (client.stdout().includes("CLIENT ") ? resolve() : setTimeout(check, 10))
    check()
  })
  const run1 = await cpuOf(procs)
  const runSeconds = (performance.now() - runT0) / 1000
  // then 2 s of idle: warmed up, shards held, every run finished
  const idleT0 = performance.now()
  await sleep(2000)
  const idle1 = await cpuOf(procs)
  const idleRates = idle1.map((c, i) => (c - run1[i]!) / ((performance.now() - idleT0) / 1000))
  const work = run1.reduce((sum, c, i) => sum + c - run0[i]! - idleRates[i]! * runSeconds, 0)
  const out = await client.done
  const line = out.split("\n").find((l) => l.startsWith("CLIENT "))
  if (line === undefined) throw new Error(`bench client failed: ${out}`)
  const { ms, rows, cpu: clientCpu } = JSON.parse(line.slice("CLIENT ".length)) as {
    ms: number
    rows: Record<string, number>
    cpu: number
  }
  // each runner prints its RSS and CPU time when it is serving (`UP <rss> <cpu>`) and when told to stop (`RSS <rss> <cpu>`)
  const ends = await Promise.all(procs.map(async (p) => {
    p.proc.kill("SIGTERM")
    const text = await p.done
    const up = text.match(/UP (\d+) (\d+)/)
    const end = text.match(/RSS (\d+) (\d+)/)
    if (up === null || end === null) throw new Error(`bench runner failed: ${text}`)
    return { up: Number(up[1]), end: Number(end[1]) }
  }))
  const rss = ends.map((e) => e.end)
  const growth = ends.reduce((sum, e) => sum + e.end - e.up, 0)
  const cpu = run1.reduce((sum, c, i) => sum + c - Number(procs[i]!.stdout().match(/UP \d+ (\d+)/)![1]), 0)
  const idle = idleRates.reduce((a, b) => a + b, 0) / runners
  return { journal: "postgres", runners, agents, seconds: ms / 1000, rss, growth, rows, cpu, idle, work, client: clientCpu }
}

/** The rows of the durable simulation (Postgres cases only when the machine has Postgres). */
export const durableRows = async (): Promise<ReadonlyArray<Record<string, string | number>>> => {
  const rows: Array<Row> = sqliteEnabled ? [await sqliteCase()] : []
  const { postgresSkipReason, startPostgres } = await import("../test/support/postgres.ts")
  if (postgresSkipReason === undefined) {
    for (const runners of postgresRunners) {
      // a fresh server per case, so the row counts are the case's own
      const server = await startPostgres()
      try {
        rows.push(await postgresCase(server.url, runners, `p${runners}-`))
      } finally {
        server.destroy()
      }
    }
  }
  return rows.map(rowOf)
}

if (process.argv[1] === self) {
  const role = process.argv[2]
  const url = process.env["BENCH_PG_URL"]!
  if (role === "runner") {
    const live = agent.layer.pipe(
      Layer.provide([model, Stores.layerMemory]),
      Layer.provideMerge(Runner.layerPostgres({
        url: Redacted.make(url),
        address: { host: "127.0.0.1", port: Number(process.env["BENCH_PORT"]) },
        pollInterval: runnerPoll as Duration.Input
      }))
    )
    let marks = 0
    process.on("SIGUSR2", () => process.stdout.write(`CPU ${cpuMicros()} ${marks++}\n`))
    process.on("SIGTERM", () => {
      process.stdout.write(`RSS ${process.memoryUsage().rss} ${cpuMicros()}\n`, () => process.exit(0))
    })
    void Effect.runPromise(Effect.andThen(Effect.sync(() => console.log(`UP ${process.memoryUsage().rss} ${cpuMicros()}`)), Effect.never).pipe(Effect.provide(live)))
  } else if (role === "client") {
    const prefix = process.env["BENCH_PREFIX"] ?? "p"
    const ids = Array.from({ length: agents }, (_, i) => `${prefix}${i}`)
    const live = Runner.layerPostgresClient({ url: Redacted.make(url), pollInterval: poll })
    const run = Effect.gen(function*() {
      const cpu0 = cpuMicros()
      const ms = yield* startAndWait(ids, prefix)
      const cpu = cpuMicros() - cpu0
      return { ms, cpu, rows: yield* journalRows }
    })
    void Effect.runPromise(run.pipe(Effect.provide(live))).then(({ ms, cpu, rows }) => {
      console.log(`CLIENT ${JSON.stringify({ ms, rows, cpu })}`)
      process.exit(0)
    })
  } else {
    console.table(await durableRows())
    process.exit(0)
  }
}
