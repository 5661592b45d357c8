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
 * locks (every `lockExpiration / 3`) and the shard assignments (every second) even with nothing to
 * do (the agents' cancellation watcher reads only while a run runs in the runner), so the
 * CPU above grows with runners × wall time whatever the work. Each runner reports its CPU time when
 * told (SIGUSR2); the bench reads it around the client's run (its start to its last result: start-up,
 * warm-up and timed agents) and over 2 s after it (`runner idle CPU ms/s`: per runner, averaged;
 * measured then because right after start-up a runner is still acquiring shards and compiling).
 * `runner work CPU ms/agent` is the runners' CPU over the client's run minus each runner's idle
 * rate × that wall time, per agent run (warm-up included): the work the agents cost.
 * `after warm-up` is the same from the warm-up's end (the timed agents and the idle phase, per agent
 * run of those): what is left once each runner process has compiled its code and holds its shards;
 * `burst` and `idle phase` split it: the timed agents' (all at once, the cores oversubscribed) and
 * the idle phase's (one run at a time), each per run of that phase. Adding runners adds their idle
 * cost, taken out here, and per-runner costs while runs run (each runner's own lock refreshes and
 * cancellation reads); a ratio that grows in the burst only is the cores' contention.
 * `client CPU ms/agent` is the client process's CPU from its first start to its last result
 * (starting the runs and polling every 100 ms for each result), per agent run.
 *
 * Then, per case, the idle phase: `TINYAGENTS_BENCH_IDLE_RUNS` runs (default 1,000),
 * `TINYAGENTS_BENCH_IDLE_CONCURRENCY` at a time (default 1). The model and the tool record when each
 * activity of a run began and ended (in the process that ran it); `idle gap ms p50/p99` is the time
 * from one activity's end to the next one's start in the same run over the idle phase's runs (the
 * engine's own latency), `burst gap` the same over the timed 1,000 (mostly waiting for CPU).
 * `idle gaps ≥ 50 ms: waiting for a CPU`: of the idle phase's gaps of 50 ms or more, the share of
 * their time the runner's main thread was ready but not running (its run-queue wait, Linux
 * `/proc/self/schedstat`, read at each idle-phase activity's start and end); `machine CPU busy`:
 * the whole machine's busy CPU over the idle phase (`/proc/stat`, share of all cores) and the
 * runners' part of it. A tail that is mostly CPU wait on a busy machine is the machine's load.
 * `shard-lock warnings`: warnings and errors mentioning shards that the runners logged (a counting
 * logger; the lines still go to stderr). Then the restart case (`restartCase`, SQLite): a runner
 * process with a blocked tool call is SIGKILLed and restarted `TINYAGENTS_BENCH_RESTARTS` times
 * (default 5); the time from the runner's start (its layer being built) to the resumed call's start,
 * and from the process's spawn. `durableTargets` prints each goal of issue #25 with its target and
 * met or not.
 *
 * Knobs: `TINYAGENTS_BENCH_SQLITE=0` skips the SQLite case (and the restart case); `TINYAGENTS_BENCH_RUNNER_POLL` sets the
 * Postgres runners' `pollInterval` (default `500 millis`, `Runner`'s default; the client's and `result`'s stay 100 ms);
 * `TINYAGENTS_BENCH_PROF=<dir>` runs
 * the runner and client processes with `--cpu-prof`, writing `<dir>/<runners>r-runner<i>.cpuprofile`
 * and `<dir>/<runners>r-client.cpuprofile` (a runner's profile covers its whole life, start-up and
 * settle included); `TINYAGENTS_BENCH_LOG_ALL=1` writes every log line of the runners (Debug and
 * up) and their event-loop delay to stderr; `TINYAGENTS_BENCH_DUMP=<prefix>` writes each Postgres
 * runner's activity times to `<prefix>-<pid>.json` (diagnosis); `TINYAGENTS_BENCH_TRACE=<prefix>`
 * writes each Postgres runner's statements (from its sockets' bytes: SQL text, sent, answered), spans,
 * GC pauses and load samples beside its activity times to `<prefix>-<pid>.trace.json` (what a gap is
 * made of: docs/durable.md, "Between two activities").
 */
import { type Duration, Effect, Layer, Logger, Redacted, References, Result, Schema, Tracer } from "effect"
import { spawn } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { availableParallelism, tmpdir } from "node:os"
import { Socket } from "node:net"
import { monitorEventLoopDelay, type PerformanceEntry, PerformanceObserver } from "node:perf_hooks"
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

/**
 * When each activity of a run began and ended in this process (epoch ms, sub-ms precision), by run
 * id, and (idle-phase runs, on Linux) how long this process's main thread had waited for a CPU by
 * then (`/proc/self/schedstat`, ms, cumulative; NaN elsewhere): a gap's share of that wait is the
 * time the runner was ready but not scheduled (the machine's load, not the engine).
 */
const activityTimes = new Map<string, Array<readonly [start: number, end: number, waitStart: number, waitEnd: number]>>()
const now = () => performance.timeOrigin + performance.now()
const cpuWaitMs = (): number => {
  try {
    return Number(readFileSync("/proc/self/schedstat", "utf8").split(" ")[1]) / 1e6
  } catch {
    return Number.NaN
  }
}
/** An activity of run `runId` begins: its start, and the CPU wait so far for an idle-phase run. */
const begin = (runId: string) => ({ at: now(), wait: isIdleRun(runId) ? cpuWaitMs() : Number.NaN })
const track = (runId: string, start: { readonly at: number; readonly wait: number }) => {
  const list = activityTimes.get(runId) ?? []
  list.push([start.at, now(), start.wait, isIdleRun(runId) ? cpuWaitMs() : Number.NaN])
  activityTimes.set(runId, list)
}
/**
 * `TINYAGENTS_BENCH_TRACE=<prefix>` (diagnosis): each Postgres runner records every span it makes
 * (name, start, end, SQL text, connection wait) and every GC pause, and writes them with its
 * activity times to `<prefix>-<pid>.trace.json` when it stops.
 */
const tracePrefix = process.env["TINYAGENTS_BENCH_TRACE"]
const spans: Array<[name: string, start: number, end: number, sql?: string, waitMs?: number]> = []
const gcs: Array<[start: number, ms: number, kind: number]> = []
/**
 * With `TINYAGENTS_BENCH_TRACE`, every 20 ms: the machine's runnable tasks (`/proc/loadavg`), its
 * busy CPU time and this process's main thread's time waiting for a CPU (`/proc/self/schedstat`),
 * both cumulative (ms), to line the gaps up with the machine's load.
 */
const loadSamples: Array<[at: number, runnable: number, busyMs: number, waitMs: number]> = []
const sampleLoad = () => {
  const runnable = Number(readFileSync("/proc/loadavg", "utf8").split(" ")[3]!.split("/")[0])
  const cpu = readFileSync("/proc/stat", "utf8").split("\n")[0]!.split(/\s+/).slice(1).map(Number)
  const busy = cpu.reduce((a, b) => a + b, 0) - cpu[3]! - cpu[4]! // all but idle and iowait, in USER_HZ (10 ms)
  const wait = Number(readFileSync("/proc/self/schedstat", "utf8").split(" ")[1]) / 1e6
  loadSamples.push([now(), runnable, busy * 10, wait])
}
const recordingTracer = Tracer.make({
  span(options) {
    const span = new Tracer.NativeSpan(options)
    const start = now()
    const end = span.end.bind(span)
    span.end = (endTime, exit) => {
      end(endTime, exit)
      const sql = span.attributes.get("db.query.text")
      const wait = span.attributes.get("db.client.connection.wait_time_ms")
      spans.push([
        span.name,
        start,
        now(),
        ...(typeof sql === "string" ? [sql.slice(0, 80)] : []),
        ...(typeof wait === "number" ? [wait] : [])
      ] as [string, number, number])
    }
    return span
  }
})
/**
 * With `TINYAGENTS_BENCH_TRACE`: every Postgres statement this process sends, from the bytes on its
 * sockets (effect/cluster's storage runs with tracing disabled, so spans miss it): the socket, the
 * SQL text, when its frame was written and when the server's ReadyForQuery for it came back.
 */
const statements: Array<[socket: number, sql: string, sent: number, done: number]> = []
const tracePostgresSockets = (port: number) => {
  const write = Socket.prototype.write
  const state = new WeakMap<Socket, { id: number; pending: Array<[string, number]>; names: Map<string, string>; rest: Buffer<ArrayBufferLike> }>()
  let ids = 0
  const cstring = (buf: Buffer, at: number) => {
    const end = buf.indexOf(0, at)
    return [buf.toString("utf8", at, end), end + 1] as const
  }
  Socket.prototype.write = function(this: Socket, chunk: unknown, ...args: Array<unknown>) {
    if (chunk instanceof Uint8Array && this.remotePort === port) {
      let st = state.get(this)
      if (st === undefined) {
        const fresh = { id: ids++, pending: [] as Array<[string, number]>, names: new Map<string, string>(), rest: Buffer.alloc(0) as Buffer<ArrayBufferLike> }
        st = fresh
        state.set(this, fresh)
        this.prependListener("data", (data: Buffer) => {
          let buf = fresh.rest.length === 0 ? data : Buffer.concat([fresh.rest, data])
          let at = 0
          while (buf.length - at >= 5) {
            const len = buf.readInt32BE(at + 1)
            if (buf.length - at < 1 + len) break
            if (buf[at] === 0x5a) { // ReadyForQuery
              const done = fresh.pending.shift()
              if (done !== undefined) statements.push([fresh.id, done[0], done[1], now()])
            }
            at += 1 + len
          }
          fresh.rest = buf.subarray(at)
        })
      }
      const buf = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)
      let at = 0
      let text: string | undefined
      const t = now()
      while (buf.length - at >= 5) {
        const type = buf[at]!
        const len = buf.readInt32BE(at + 1)
        const body = at + 5
        if (type === 0x51) text = cstring(buf, body)[0] // Query
        else if (type === 0x50) { // Parse: name, text
          const [name, next] = cstring(buf, body)
          text = cstring(buf, next)[0]
          st.names.set(name, text)
        } else if (type === 0x42) { // Bind: portal, statement
          const [, next] = cstring(buf, body)
          text ??= st.names.get(cstring(buf, next)[0]) ?? "?"
        }
        if (type === 0x51 || type === 0x53) { // Query or Sync: one ReadyForQuery comes back
          st.pending.push([(text ?? "?").replace(/\s+/g, " ").trim().slice(0, 90), t])
          text = undefined
        }
        at += 1 + len
      }
    }
    return (write as (...a: Array<unknown>) => boolean).call(this, chunk, ...args)
  } as typeof Socket.prototype.write
}
/** Resolves when a tool call of the restart case starts (that case's tool blocks forever). */
let onBlockingCall: (() => void) | undefined

const work = Tool.make("lookup", {
  description: "Looks something up (50 ms).",
  input: Schema.Struct({ q: Schema.String }),
  safety: { access: "read", idempotent: true },
  handler: ({ q }) =>
    Effect.suspend(() => {
      const runId = q.slice(0, q.lastIndexOf("|"))
      const start = begin(runId)
      if (runId.startsWith("restart")) {
        onBlockingCall?.()
        return Effect.never
      }
      return Effect.as(Effect.ensuring(Effect.sleep(toolMs), Effect.sync(() => track(runId, start))), `found ${q}`)
    })
})

const model = ChatModel.fromFunction((request) =>
  Effect.sync(() => {
    const first = request.messages.find((m) => m.role === "user")
    const runId = typeof first?.content === "string" ? first.content : "?"
    const start = begin(runId)
    const answer = request.messages.some((m) => m.role === "tool")
      ? ChatModel.answer("done")
      : ChatModel.callTools([["a", "lookup", { q: `${runId}|a` }], ["b", "lookup", { q: `${runId}|b` }]])
    track(runId, start)
    return answer
  })
)

/**
 * The gaps (ms) between one activity's end and the next one's start, per run, over the runs `keep`
 * accepts (each activity after a run's first starts some time after the latest end before it), each
 * with the time the runner waited for a CPU in it (NaN when not measured).
 */
const activityGaps = (keep: (runId: string) => boolean): Array<readonly [gap: number, wait: number]> => {
  const gaps: Array<readonly [number, number]> = []
  for (const [runId, list] of activityTimes) {
    if (!keep(runId)) continue
    const sorted = [...list].sort((a, b) => a[0] - b[0])
    for (let i = 1; i < sorted.length; i++) {
      let last: (typeof sorted)[number] | undefined
      for (const other of sorted) {
        if (other[1] <= sorted[i]![0] && (last === undefined || other[1] > last[1])) last = other
      }
      if (last !== undefined) gaps.push([sorted[i]![0] - last[1], sorted[i]![2] - last[3]])
    }
  }
  return gaps
}

const percentile = (values: ReadonlyArray<number>, p: number): number => {
  if (values.length === 0) return Number.NaN
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!
}

/** `TINYAGENTS_BENCH_LOG_ALL=1`: every log line of the runners (Debug and up) to stderr, for diagnosis. */
const logAll = process.env["TINYAGENTS_BENCH_LOG_ALL"] === "1"
/** Warnings and errors the cluster logs about its shard locks (counted, and still printed to stderr). */
let shardLockWarnings = 0
const shardLogs = Logger.layer([
  Logger.make((options) => {
    const text = Logger.formatSimple.log(options)
    if (logAll) process.stderr.write(`${process.pid} ${text}\n`)
    if (options.logLevel !== "Warn" && options.logLevel !== "Error" && options.logLevel !== "Fatal") return
    if (/shard/i.test(text)) shardLockWarnings++
    if (!logAll) process.stderr.write(`${text}\n`)
  })
]).pipe(Layer.merge(logAll ? Layer.succeed(References.MinimumLogLevel, "Debug") : Layer.empty))

const agent = DurableAgent.make({
  name: "bench-agent",
  tools: Result.getOrThrow(ToolRegistry.makeResult([work])),
  maxTurns: 4,
  pollInterval: "100 millis"
})
const callsPerRun = 2
/**
 * Agents run (untimed) before each case (`TINYAGENTS_BENCH_WARMUP`, default 100), so that the
 * runners hold their shards when the clock starts; more of them warm each runner's compiled code up
 * further (each runner process compiles its own, on its share of these).
 */
const warmup = Number(process.env["TINYAGENTS_BENCH_WARMUP"] ?? 100)
const poll = "100 millis"
/**
 * The Postgres runners' storage poll (`TINYAGENTS_BENCH_RUNNER_POLL`, default 500 ms, `Runner`'s own
 * default: on Postgres a message is pushed to its runner and the poll is a fallback, so a faster one
 * mostly measures polling).
 */
const runnerPoll = process.env["TINYAGENTS_BENCH_RUNNER_POLL"] ?? "500 millis"

/**
 * The idle phase: `TINYAGENTS_BENCH_IDLE_RUNS` runs (default 1,000; the issue's count) after the
 * timed burst, `TINYAGENTS_BENCH_IDLE_CONCURRENCY` at a time (default 1: the runner is otherwise idle),
 * whose activity gaps (one activity's end to the next one's start) are the engine's own latency.
 */
const idleRuns = Number(process.env["TINYAGENTS_BENCH_IDLE_RUNS"] ?? 1000)
const idleConcurrency = Number(process.env["TINYAGENTS_BENCH_IDLE_CONCURRENCY"] ?? 1)
const isIdleRun = (runId: string) => /i\d+$/.test(runId)
const isTimedRun = (runId: string) => /^[sp][0-9-]*\d+$/.test(runId)

/**
 * Runs `warmup` agents (prefix `prefix`w), then starts `ids` and waits for each result (the elapsed
 * milliseconds of this), then the idle phase (`prefix`i).
 */
const startAndWait = (
  ids: ReadonlyArray<string>,
  prefix: string,
  marks: { readonly warm: Effect.Effect<void>; readonly idle: Effect.Effect<void> } = { warm: Effect.void, idle: Effect.void }
) =>
  Effect.gen(function*() {
    const warm = Array.from({ length: warmup }, (_, i) => `${prefix}w${i}`)
    yield* Effect.forEach(warm, (id) => agent.start(id, [{ role: "user", content: id }]), { concurrency: 50, discard: true })
    yield* Effect.forEach(warm, (id) => agent.result(id), { concurrency: 50, discard: true })
    yield* marks.warm
    const t0 = performance.now()
    yield* Effect.forEach(ids, (id) => agent.start(id, [{ role: "user", content: id }]), { concurrency: 50, discard: true })
    yield* Effect.forEach(ids, (id) => agent.result(id), { concurrency: 50, discard: true })
    const ms = performance.now() - t0
    const idle = Array.from({ length: idleRuns }, (_, i) => `${prefix}i${i}`)
    yield* marks.idle
    yield* Effect.forEach(
      idle,
      (id) => Effect.andThen(agent.start(id, [{ role: "user", content: id }]), agent.result(id)),
      { concurrency: idleConcurrency, discard: true }
    )
    return ms
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
  /** Postgres: the same from the warm-up's end (the timed agents and the idle phase) (microseconds). */
  readonly workWarm?: number
  /** Postgres: the same over the timed agents only, and over the idle phase only (microseconds). */
  readonly workBurst?: number
  readonly workIdlePhase?: number
  /** Postgres: the runners' involuntary context switches over the timed agents. */
  readonly preemptedBurst?: number
  /** Postgres: the client's CPU time from the first start to the last result (microseconds). */
  readonly client?: number
  readonly rows: Record<string, number>
  /** Activity gaps (ms) of the idle phase's runs and of the timed burst's. */
  readonly idleGaps: ReadonlyArray<readonly [gap: number, cpuWait: number]>
  readonly burstGaps: ReadonlyArray<number>
  /** Postgres: the machine's CPU busy over the idle phase (share of all its cores), and the runners' share of it. */
  readonly idleMachine?: { readonly busy: number; readonly runners: number }
  /** Shard-lock warnings and errors the runners logged. */
  readonly warnings: number
}

const fmt = (ms: number) => (Number.isNaN(ms) ? "-" : ms.toFixed(1))

/**
 * The idle gaps of 50 ms or more: how many, and the share of their time the runner was ready but
 * waiting for a CPU (Linux run-queue wait of its main thread): near 100%, the machine's other
 * processes had the cores; near 0, the time went to waiting on storage or the engine.
 */
const slowGaps = (gaps: ReadonlyArray<readonly [number, number]>): string => {
  const slow = gaps.filter(([g]) => g >= 50)
  if (slow.length === 0) return "none"
  const measured = slow.filter(([, w]) => Number.isFinite(w))
  if (measured.length === 0) return `${slow.length} (CPU wait not measured)`
  const total = measured.reduce((sum, [g]) => sum + g, 0)
  const waited = measured.reduce((sum, [, w]) => sum + w, 0)
  return `${slow.length}: ${(100 * waited / total).toFixed(0)}% of their time`
}

const rowOf = (r: Row): Record<string, string | number> => {
  const calls = r.agents * callsPerRun
  const runs = r.agents + warmup + idleRuns // the journal holds the warm-up's and idle phase's rows too
  const journaledCalls = runs * callsPerRun
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
    "runner CPU ms/agent": +(r.cpu / 1000 / runs).toFixed(2),
    "runner idle CPU ms/s": r.idle === undefined ? "" : +(r.idle / 1000).toFixed(1),
    "runner work CPU ms/agent": r.work === undefined ? "" : +(r.work / 1000 / runs).toFixed(2),
    "after warm-up": r.workWarm === undefined ? "" : +(r.workWarm / 1000 / (r.agents + idleRuns)).toFixed(2),
    "burst / idle phase": r.workBurst === undefined || r.workIdlePhase === undefined
      ? ""
      : `${(r.workBurst / 1000 / r.agents).toFixed(2)} / ${(r.workIdlePhase / 1000 / idleRuns).toFixed(2)}`,
    "preempted/agent (burst)": r.preemptedBurst === undefined ? "" : +(r.preemptedBurst / r.agents).toFixed(1),
    "client CPU ms/agent": r.client === undefined ? "" : +(r.client / 1000 / runs).toFixed(2),
    "idle gap ms p50/p99": `${fmt(percentile(r.idleGaps.map(([g]) => g), 50))}/${fmt(percentile(r.idleGaps.map(([g]) => g), 99))} (n=${r.idleGaps.length})`,
    "idle gaps ≥ 50 ms: waiting for a CPU": slowGaps(r.idleGaps),
    "machine CPU busy (idle phase)": r.idleMachine === undefined
      ? ""
      : `${(r.idleMachine.busy * 100).toFixed(0)}% (runners ${(r.idleMachine.runners * 100).toFixed(0)}%)`,
    "burst gap ms p50/p99": `${fmt(percentile(r.burstGaps, 50))}/${fmt(percentile(r.burstGaps, 99))}`,
    "shard-lock warnings": r.warnings
  }
}

/** SQLite: one runner in this process. */
const sqliteCase = async (): Promise<Row> => {
  const dir = mkdtempSync(join(tmpdir(), "tinyagents-bench-durable-"))
  try {
    const ids = Array.from({ length: agents }, (_, i) => `s${i}`)
    const live = agent.layer.pipe(
      Layer.provide([model, Stores.layerMemory]),
      Layer.provideMerge(Runner.layerSqlite({ filename: join(dir, "journal.db"), pollInterval: poll })),
      Layer.provide(shardLogs)
    )
    activityTimes.clear()
    shardLockWarnings = 0
    const cpu0 = cpuMicros()
    const [base, ms, rows] = await Effect.runPromise(
      Effect.all([Effect.sync(() => process.memoryUsage().rss), startAndWait(ids, "s"), journalRows]).pipe(Effect.provide(live))
    )
    const rss = process.memoryUsage().rss
    return {
      journal: "sqlite",
      runners: 1,
      agents,
      seconds: ms / 1000,
      rss: [rss],
      growth: rss - base,
      rows,
      cpu: cpuMicros() - cpu0,
      idleGaps: activityGaps(isIdleRun),
      burstGaps: activityGaps(isTimedRun).map(([g]) => g),
      warnings: shardLockWarnings
    }
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

/** The machine's busy CPU time so far (ms, all cores: `/proc/stat` minus idle and iowait; NaN elsewhere). */
const machineBusyMs = (): number => {
  try {
    const jiffies = readFileSync("/proc/stat", "utf8").split("\n")[0]!.split(/\s+/).slice(1).map(Number)
    return (jiffies.reduce((a, b) => a + b, 0) - jiffies[3]! - jiffies[4]!) * 10 // USER_HZ is 100
  } catch {
    return Number.NaN
  }
}

/**
 * Each runner's CPU time now (microseconds) and how many times the OS took its CPU away from it so
 * far (involuntary context switches: it was runnable, another task ran): SIGUSR2 makes a runner
 * print `CPU <n> <k> <switches>`, the k-th.
 */
const marksOf = (procs: ReadonlyArray<ReturnType<typeof child>>) => {
  const marks = procs.map((p) => (p.stdout().match(/CPU \d+ \d+/g) ?? []).length)
  for (const p of procs) p.proc.kill("SIGUSR2")
  return Promise.all(procs.map((p, i) =>
    new Promise<{ readonly cpu: number; readonly preempted: number }>((resolve) => {
      const check = () => {
        const all = [...p.stdout().matchAll(/CPU (\d+) (\d+) (\d+)/g)]
        const mark = all[marks[i]!]
        return mark === undefined ? setTimeout(check, 10) : resolve({ cpu: Number(mark[1]), preempted: Number(mark[3]) })
      }
      check()
    })
  ))
}
const cpuOf = async (procs: ReadonlyArray<ReturnType<typeof child>>) => (await marksOf(procs)).map((m) => m.cpu)

/** This process's involuntary context switches so far (Linux `/proc/self/status`; 0 elsewhere). */
const preemptions = (): number => {
  try {
    return Number(readFileSync("/proc/self/status", "utf8").match(/nonvoluntary_ctxt_switches:\s+(\d+)/)?.[1] ?? 0)
  } catch {
    return 0
  }
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
  const printed = (text: string) =>
    new Promise<void>((resolve) => {
      const check = () => (client.stdout().includes(text) ? resolve() : setTimeout(check, 10))
      check()
    })
  // the warm-up's end: from here the runners have run `warmup` agents each process (code compiled, shards held)
  await printed("WARM")
  const warmMarks = await marksOf(procs)
  const warm0 = warmMarks.map((m) => m.cpu)
  const warmT0 = performance.now()
  // the idle phase: the machine's CPU (all cores, `/proc/stat`) and the runners' over it
  await printed("IDLE")
  const idleMarks = await marksOf(procs)
  const idlePhase0 = { machine: machineBusyMs(), runners: idleMarks.map((m) => m.cpu), at: performance.now() }
  const preemptedBurst = idleMarks.reduce((sum, m, i) => sum + m.preempted - warmMarks[i]!.preempted, 0)
  // the client's run ends when it prints its result (its exit adds nothing the runners do)
  await printed("CLIENT ")
  const run1 = await cpuOf(procs)
  const run1At = performance.now()
  const idlePhaseMs = (performance.now() - idlePhase0.at) * availableParallelism()
  const idleMachine = {
    busy: (machineBusyMs() - idlePhase0.machine) / idlePhaseMs,
    runners: run1.reduce((sum, c, i) => sum + c - idlePhase0.runners[i]!, 0) / 1000 / idlePhaseMs
  }
  const runSeconds = (performance.now() - runT0) / 1000
  const warmSeconds = (performance.now() - warmT0) / 1000
  // then 2 s of idle: warmed up, shards held, every run finished
  const idleT0 = performance.now()
  await sleep(2000)
  const idle1 = await cpuOf(procs)
  const idleRates = idle1.map((c, i) => (c - run1[i]!) / ((performance.now() - idleT0) / 1000))
  const work = run1.reduce((sum, c, i) => sum + c - run0[i]! - idleRates[i]! * runSeconds, 0)
  const workWarm = run1.reduce((sum, c, i) => sum + c - warm0[i]! - idleRates[i]! * warmSeconds, 0)
  const burstSeconds = (idlePhase0.at - warmT0) / 1000
  const idlePhaseSeconds = (run1At - idlePhase0.at) / 1000
  const workBurst = idlePhase0.runners.reduce((sum, c, i) => sum + c - warm0[i]! - idleRates[i]! * burstSeconds, 0)
  const workIdlePhase = run1.reduce((sum, c, i) => sum + c - idlePhase0.runners[i]! - idleRates[i]! * idlePhaseSeconds, 0)
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
    const end = text.match(/RSS (\d+) (\d+) (\d+)/)
    const gaps = text.split("\n").find((l) => l.startsWith("GAPS "))
    if (up === null || end === null || gaps === undefined) throw new Error(`bench runner failed: ${text}`)
    const parsed = JSON.parse(gaps.slice("GAPS ".length)) as {
      idle: Array<[number, number | null]>
      burst: Array<[number, number | null]>
    }
    const idle = parsed.idle.map(([g, w]) => [g, w ?? Number.NaN] as const)
    const burst = parsed.burst.map(([g]) => g)
    return { up: Number(up[1]), end: Number(end[1]), warnings: Number(end[3]), idle, burst }
  }))
  const rss = ends.map((e) => e.end)
  const growth = ends.reduce((sum, e) => sum + e.end - e.up, 0)
  const cpu = run1.reduce((sum, c, i) => sum + c - Number(procs[i]!.stdout().match(/UP \d+ (\d+)/)![1]), 0)
  const idle = idleRates.reduce((a, b) => a + b, 0) / runners
  return {
    journal: "postgres",
    runners,
    agents,
    seconds: ms / 1000,
    rss,
    growth,
    rows,
    cpu,
    idle,
    work,
    workWarm,
    workBurst,
    workIdlePhase,
    preemptedBurst,
    idleMachine,
    client: clientCpu,
    idleGaps: ends.flatMap((e) => e.idle),
    burstGaps: ends.flatMap((e) => e.burst),
    warnings: ends.reduce((sum, e) => sum + e.warnings, 0)
  }
}

/** `TINYAGENTS_BENCH_RESTARTS` (default 5): how many times the restart case kills and restarts its runner. */
const restarts = Number(process.env["TINYAGENTS_BENCH_RESTARTS"] ?? 5)

/**
 * Restart readiness on SQLite: a runner process starts one agent whose tool call blocks, and is
 * SIGKILLed once the call started; then, `restarts` times, a new runner process on the same file
 * is started and killed again once it resumed the call. Per restart: the milliseconds from the
 * runner's start (its layer being built, after Node and the modules loaded) to the resumed call's
 * start, and from the process's spawn to it.
 */
export const restartCase = async (): Promise<{ readonly ready: Array<number>; readonly spawned: Array<number> }> => {
  const dir = mkdtempSync(join(tmpdir(), "tinyagents-bench-restart-"))
  const ready: Array<number> = []
  const spawned: Array<number> = []
  try {
    for (let i = 0; i <= restarts; i++) {
      const t0 = performance.now()
      const p = child(["restart"], { BENCH_SQLITE_FILE: join(dir, "journal.db"), BENCH_RESTART_FIRST: i === 0 ? "1" : "0" })
      const line = await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`restart ${i}: no call resumed in 60 s: ${p.stdout()}`)), 60_000)
        const check = () => {
          const found = p.stdout().split("\n").find((l) => l.startsWith("RESUMED "))
          if (found === undefined) return void setTimeout(check, 5)
          clearTimeout(timer)
          resolve(found)
        }
        check()
      })
      const elapsed = performance.now() - t0
      p.proc.kill("SIGKILL")
      await p.done
      if (i > 0) {
        ready.push(Number(line.split(" ")[1]))
        spawned.push(elapsed)
      }
    }
    return { ready, spawned }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/** Each goal of the durable part of issue #25, measured in this run: its target, and met or not. */
export const durableTargets = (
  rows: ReadonlyArray<Record<string, string | number>>,
  restart: { readonly ready: ReadonlyArray<number>; readonly spawned: ReadonlyArray<number> } | undefined
): Array<Record<string, string>> => {
  const out: Array<Record<string, string>> = []
  const goal = (name: string, measured: string, target: string, met: boolean | undefined) =>
    out.push({ goal: name, measured, target, met: met === undefined ? "not measured" : met ? "met" : "NOT met" })
  for (const r of rows) {
    const [, p99] = String(r["idle gap ms p50/p99"]).split(" ")[0]!.split("/")
    const met = p99 === "-" ? undefined : Number(p99) < 100
    const machine = r["machine CPU busy (idle phase)"]
    goal(
      `idle activity gap p99, ${r["journal"]} ×${r["runners"]}`,
      `${r["idle gap ms p50/p99"]} ms (p50/p99)` + (met === false
        ? `; reason: gaps ≥ 50 ms ${r["idle gaps ≥ 50 ms: waiting for a CPU"]} with the runner waiting for a CPU${
          machine === "" || machine === undefined ? "" : `, machine CPU busy ${machine}`
        } (the machine's load)`
        : ""),
      "p99 < 100 ms",
      met
    )
  }
  // work CPU per agent from 1 to 4 Postgres runners: flat taken as within 25% of one runner's
  const pgRows = rows.filter((r) => r["journal"] === "postgres")
  const one = pgRows.find((r) => r["runners"] === 1)
  const most = pgRows.reduce<Record<string, string | number> | undefined>(
    (best, r) => best === undefined || Number(r["runners"]) > Number(best["runners"]) ? r : best,
    undefined
  )
  const workRatio = one !== undefined && most !== undefined && most !== one
    ? Number(most["runner work CPU ms/agent"]) / Number(one["runner work CPU ms/agent"])
    : undefined
  const cores = availableParallelism()
  goal(
    `runner work CPU per agent flat, 1 → ${most?.["runners"] ?? "-"} Postgres runners`,
    workRatio === undefined
      ? "-"
      : `${pgRows.map((r) => r["runner work CPU ms/agent"]).join(" / ")} ms (after warm-up ${
        pgRows.map((r) => r["after warm-up"]).join(" / ")
      }; burst / idle phase ${pgRows.map((r) => r["burst / idle phase"]).join(", ")}) = ${workRatio.toFixed(2)}×` + (workRatio > 1.25 && Number(most!["runners"]) + 2 > cores
        ? `; reason: ${most!["runners"]} runners + Postgres + the client share ${cores} cores with the machine's other load (idle phase: machine CPU busy ${
          most!["machine CPU busy (idle phase)"]
        }; context switches per agent in the burst ${pgRows.map((r) => r["preempted/agent (burst)"]).join(" / ")}); CPU contention if the idle phase's ratio stays near 1, see docs/durable.md`
        : ""),
    "≤ 1.25×",
    workRatio === undefined ? undefined : workRatio <= 1.25
  )
  const sqlite = rows.find((r) => r["journal"] === "sqlite")
  const pg1 = rows.find((r) => r["journal"] === "postgres" && r["runners"] === 1)
  const ratio = sqlite !== undefined && pg1 !== undefined ? Number(pg1["runs/s"]) / Number(sqlite["runs/s"]) : undefined
  goal(
    "runs/s, 1 Postgres runner / 1 SQLite runner",
    ratio === undefined ? "-" : `${pg1!["runs/s"]} / ${sqlite!["runs/s"]} = ${ratio.toFixed(2)}`,
    "≥ 0.50",
    ratio === undefined ? undefined : ratio >= 0.5
  )
  for (const r of rows) {
    goal(
      `shard-lock warnings, ${r["journal"]} ×${r["runners"]}`,
      String(r["shard-lock warnings"]),
      "0",
      Number(r["shard-lock warnings"]) === 0
    )
  }
  const median = restart === undefined ? undefined : percentile(restart.ready, 50)
  goal(
    "restart readiness (SQLite): runner start → first resumed activity, median",
    restart === undefined
      ? "-"
      : `${median!.toFixed(0)} ms (each: ${restart.ready.map((ms) => ms.toFixed(0)).join(", ")}; from process spawn: median ${
        percentile(restart.spawned, 50).toFixed(0)
      } ms)`,
    "≤ 1000 ms",
    median === undefined ? undefined : median <= 1000
  )
  return out
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
  if (role === "restart") {
    const layerStart = now()
    const live = agent.layer.pipe(
      Layer.provide([model, Stores.layerMemory]),
      Layer.provideMerge(Runner.layerSqlite({ filename: process.env["BENCH_SQLITE_FILE"]!, pollInterval: poll })),
      Layer.provide(shardLogs)
    )
    let reported = false
    onBlockingCall = () => {
      if (reported) return
      reported = true
      process.stdout.write(`RESUMED ${now() - layerStart}\n`)
    }
    const first = process.env["BENCH_RESTART_FIRST"] === "1"
    void Effect.runPromise(
      Effect.andThen(first ? agent.start("restart", [{ role: "user", content: "restart" }]) : Effect.void, Effect.never).pipe(
        Effect.provide(live)
      )
    )
  } else if (role === "runner") {
    const live = agent.layer.pipe(
      Layer.provide([model, Stores.layerMemory]),
      Layer.provideMerge(Runner.layerPostgres({
        url: Redacted.make(url),
        address: { host: "127.0.0.1", port: Number(process.env["BENCH_PORT"]) },
        pollInterval: runnerPoll as Duration.Input
      })),
      Layer.provide(shardLogs)
    )
    // (a 10 ms timer of its own: only when asked for, so it is not in the idle CPU)
    const loop = monitorEventLoopDelay({ resolution: 10 })
    if (logAll) loop.enable()
    let marks = 0
    process.on("SIGUSR2", () => process.stdout.write(`CPU ${cpuMicros()} ${marks++} ${preemptions()}\n`))
    process.on("SIGTERM", () => {
      const gaps = JSON.stringify({ idle: activityGaps(isIdleRun), burst: activityGaps(isTimedRun) })
      if (logAll) process.stderr.write(`event loop delay ms: p99 ${loop.percentile(99) / 1e6} max ${loop.max / 1e6}\n`)
      const dump = process.env["TINYAGENTS_BENCH_DUMP"]
      if (dump !== undefined) writeFileSync(`${dump}-${process.pid}.json`, JSON.stringify([...activityTimes]))
      if (tracePrefix !== undefined) {
        writeFileSync(`${tracePrefix}-${process.pid}.trace.json`, JSON.stringify({ activities: [...activityTimes], spans, gcs, statements, loadSamples }))
      }
      process.stdout.write(
        `RSS ${process.memoryUsage().rss} ${cpuMicros()} ${shardLockWarnings}\nGAPS ${gaps}\n`,
        () => process.exit(0)
      )
    })
    if (tracePrefix !== undefined) {
      tracePostgresSockets(Number(new URL(url).port))
      setInterval(sampleLoad, 20).unref()
      new PerformanceObserver((list) => {
        for (const e of list.getEntries()) {
          gcs.push([performance.timeOrigin + e.startTime, e.duration, (e as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind ?? 0])
        }
      }).observe({ entryTypes: ["gc"] })
    }
    const serve = Effect.andThen(Effect.sync(() => console.log(`UP ${process.memoryUsage().rss} ${cpuMicros()}`)), Effect.never).pipe(
      Effect.provide(live)
    )
    void Effect.runPromise(tracePrefix === undefined ? serve : Effect.withTracer(serve, recordingTracer))
  } else if (role === "client") {
    const prefix = process.env["BENCH_PREFIX"] ?? "p"
    const ids = Array.from({ length: agents }, (_, i) => `${prefix}${i}`)
    const live = Runner.layerPostgresClient({ url: Redacted.make(url), pollInterval: poll })
    if (tracePrefix !== undefined) {
      // the client's statements too, written when it is told to stop (diagnosing a run that never ends)
      tracePostgresSockets(Number(new URL(url).port))
      process.on("SIGTERM", () => {
        writeFileSync(`${tracePrefix}-client-${process.pid}.trace.json`, JSON.stringify({ activities: [], spans, gcs, statements, loadSamples }))
        process.exit(1)
      })
    }
    const run = Effect.gen(function*() {
      const cpu0 = cpuMicros()
      const ms = yield* startAndWait(ids, prefix, {
        warm: Effect.sync(() => console.log("WARM")),
        idle: Effect.sync(() => console.log("IDLE"))
      })
      const cpu = cpuMicros() - cpu0
      return { ms, cpu, rows: yield* journalRows }
    })
    void Effect.runPromise(run.pipe(Effect.provide(live))).then(({ ms, cpu, rows }) => {
      console.log(`CLIENT ${JSON.stringify({ ms, rows, cpu })}`)
      process.exit(0)
    })
  } else {
    const rows = await durableRows()
    console.table(rows)
    console.table(durableTargets(rows, sqliteEnabled ? await restartCase() : undefined))
    process.exit(0)
  }
}
