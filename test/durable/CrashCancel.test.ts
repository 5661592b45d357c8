/**
 * Cancellation under SIGKILL: the crash test's runner processes (`fixtures/crashWorker.ts`, six runs
 * of three turns on one SQLite journal) are killed mid-run, and runs are cancelled from this process
 * (a client, `Runner.layerSqliteClient`) both while no runner runs and while one does. Every run
 * still ends, cancelled or done; nothing is applied twice and nothing journaled runs again; and a
 * call a cancelled run answered as not started (`ToolCancelled`) was never applied.
 */
import { Effect, Result } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, describe, expect, it } from "vitest"
import { ToolRegistry } from "../../src/index.ts"
import { DurableAgent, Runner } from "../../src/durable/index.ts"
import { duplicates, readApplications, readMarkers, reexecutedAfterJournal, startWorker } from "./fixtures/harness.ts"

const worker = fileURLToPath(new URL("./fixtures/crashWorker.ts", import.meta.url))
const runs = 6
const turns = 3

const dirs: Array<string> = []
afterAll(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })))

interface ResultLine {
  readonly runId: string
  readonly text: string
  readonly cancelled?: string
  readonly calls: ReadonlyArray<{ readonly id: string; readonly name: string; readonly text: string; readonly isError: boolean }>
}

/** A client of the worker's agent: cancelling needs only the workflow's name. */
const agent = DurableAgent.make<never>({ name: "crash-agent", tools: Result.getOrThrow(ToolRegistry.makeResult([])) })

describe("durable cancellation under SIGKILL (SQLite journal)", () => {
  it("runs cancelled while no runner runs and while one runs end cancelled; nothing not started was applied", { timeout: 120_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), "tinyagents-crash-cancel-"))
    dirs.push(dir)
    const env = {
      DB_FILE: join(dir, "journal.db"),
      STORES_FILE: join(dir, "stores.db"),
      APPLIED_FILE: join(dir, "applied.jsonl"),
      MARKER_FILE: join(dir, "markers.log"),
      RUNS: String(runs),
      TURNS: String(turns),
      WAVE: "c",
      // one call at a time, so that a cancellation can fall between the calls of a turn
      CONCURRENCY: "1"
    }
    const cancel = (runId: string, reason: string) =>
      Effect.runPromise(agent.cancel(runId, { reason }).pipe(Effect.provide(Runner.layerSqliteClient({ filename: env.DB_FILE }))))

    // life 1: killed after the second non-idempotent write was applied (its outcome not journaled)
    let plainWrites = 0
    const first = await startWorker(worker, {
      args: ["submit"],
      env,
      timeoutMs: 60_000,
      killWhen: (line) => /^tool-applied plain_write /.test(line) && ++plainWrites === 2
    }).exited
    expect(first.killedAt, first.stderr.slice(-2000)).toBeDefined()
    // no runner runs: two runs are cancelled
    await cancel("cr0", "while down")
    await cancel("cr1", "while down")

    // life 2: the run of the first keyed write to start is cancelled while that write runs; the runner
    // is killed at a model turn later on
    let cancelling: Promise<void> | undefined
    let running: string | undefined
    let modelTurns = 0
    const second = await startWorker(worker, {
      args: ["resume"],
      env,
      timeoutMs: 60_000,
      killWhen: (line) => {
        const started = /^tool-start keyed_write (cr[2-5]) /.exec(line)
        if (cancelling === undefined && started !== null) {
          running = started[1]!
          cancelling = cancel(running, "while running")
        }
        return cancelling !== undefined && /^model-done /.test(line) && ++modelTurns === 3
      }
    }).exited
    await cancelling
    expect(cancelling, "the second life started a call").toBeDefined()

    // life 3: to the end
    const last = second.killedAt === undefined ? second : await startWorker(worker, { args: ["resume"], env, timeoutMs: 90_000 }).exited
    expect(last.code, last.stderr.slice(-4000)).toBe(0)
    const results = last.stdout.split("\n").filter((line) => line.startsWith("RESULT ")).map((line) =>
      JSON.parse(line.slice("RESULT ".length)) as ResultLine
    )
    expect(results.map((r) => r.runId).sort()).toEqual(Array.from({ length: runs }, (_, i) => `cr${i}`))

    const applications = readApplications(env.APPLIED_FILE)
    const byRun = new Map(results.map((r) => [r.runId, r]))
    // cancelled while no runner ran: they could not have finished, so they end cancelled
    expect(byRun.get("cr0")!.cancelled).toBe("while down")
    expect(byRun.get("cr1")!.cancelled).toBe("while down")
    // cancelled while running: cancelled (its keyed write was running, so it had not finished)
    expect(byRun.get(running!)!.cancelled, JSON.stringify(byRun.get(running!))).toBe("while running")
    for (const r of results) if (r.cancelled === undefined) expect(r.text).toBe(`done ${r.runId}`)

    // nothing applied twice, nothing journaled ran again
    expect(duplicates(applications.filter((a) => a.tool === "keyed_write").map((a) => `${a.key}`))).toEqual([])
    expect(duplicates(applications.filter((a) => a.tool === "plain_write").map((a) => `${a.runId}/${a.callId}`))).toEqual([])
    expect(reexecutedAfterJournal(readMarkers(env.MARKER_FILE))).toEqual([])
    // a write answered as not started was never applied, one answered as done was applied once (an
    // idempotent read has no "started" marker: one whose process died under it may be answered as not
    // started though it ran, which is harmless)
    let notStarted = 0
    for (const r of results) {
      for (const c of r.calls) {
        if (c.name === "read_value") continue
        const applied = applications.filter((a) => a.runId === r.runId && a.callId === c.id && a.tool === c.name).length
        if (/cancelled before it started/.test(c.text)) {
          notStarted++
          expect(applied, `${r.runId}/${c.id}`).toBe(0)
        } else if (!c.isError) expect(applied, `${r.runId}/${c.id}`).toBe(1)
        else expect(c.text, `${r.runId}/${c.id}`).toMatch(/may or may not have completed/)
      }
    }
    const cancelledRuns = results.filter((r) => r.cancelled !== undefined)
    // cancelled runs stop early: fewer calls than a full run
    for (const r of cancelledRuns) expect(r.calls.length).toBeLessThan(turns * 3)
    console.log(
      `crash-cancel test: runs=${results.length} cancelled=${cancelledRuns.length} kills=${[first, second].filter((e) => e.killedAt !== undefined).length} ` +
        `applications=${applications.length} not-started calls=${notStarted}`
    )
  })
})
