/**
 * Durable agents proven by crashes: real child processes (`fixtures/crashWorker.ts`) run durable
 * agents on one SQLite journal and are killed with SIGKILL at markers they print before, during and
 * after tool calls and model turns; each is restarted in resume mode (it submits nothing) until every
 * run has finished. The first three kills are aimed (right after each kind of tool applied its side
 * effect, before its outcome was journaled); the rest fall on the n-th marker (1..3) of a kind
 * (model or tool; start, applied or done) that a seeded RNG picks.
 *
 * Asserted from the files every process appends to (O_APPEND, so SIGKILL loses no line): every run
 * finishes; a keyed tool is applied at most once per key; a non-idempotent tool without a key at most
 * once per call, and the call killed after its side effect answers "may or may not have completed";
 * no tool call or model turn runs again once its outcome was journaled.
 *
 * Runs are started in waves of `TINYAGENTS_CRASH_RUNS` (default 6) until the kills are done (a kill
 * makes the calls in flight finish fast, so one wave may not take them all).
 * `TINYAGENTS_CRASH_KILLS` (10, or 20 under `npm run test:full`) sets the number of kills, `TINYAGENTS_CRASH_SEED` the seed.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, describe, expect, it } from "vitest"
import { random } from "../support/random.ts"
import { duplicates, readApplications, readMarkers, reexecutedAfterJournal, startWorker, type WorkerExit } from "./fixtures/harness.ts"
import { count } from "../support/tier.ts"

const worker = fileURLToPath(new URL("./fixtures/crashWorker.ts", import.meta.url))
const kills = count("TINYAGENTS_CRASH_KILLS", 10, 20)
const seed = Number(process.env["TINYAGENTS_CRASH_SEED"] ?? 15)
const runs = Number(process.env["TINYAGENTS_CRASH_RUNS"] ?? 6)
const turns = 3

const dirs: Array<string> = []
afterAll(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })))

/** The aimed kills: right after the first call of each kind of tool applied its side effect. */
const aimed = [/^tool-applied plain_write /, /^tool-applied keyed_write /, /^tool-applied read_value /]

interface ResultLine {
  readonly runId: string
  readonly text: string
  readonly calls: ReadonlyArray<{ readonly id: string; readonly name: string; readonly text: string; readonly isError: boolean }>
}

describe("durable agents under SIGKILL (SQLite journal)", () => {
  it(`waves of ${runs} runs × ${turns} turns finish through ${kills} kills, applying nothing twice`, { timeout: 240_000 + kills * 8_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), "tinyagents-crash-"))
    dirs.push(dir)
    const env = {
      DB_FILE: join(dir, "journal.db"),
      STORES_FILE: join(dir, "stores.db"),
      APPLIED_FILE: join(dir, "applied.jsonl"),
      MARKER_FILE: join(dir, "markers.log"),
      RUNS: String(runs),
      TURNS: String(turns)
    }
    const rng = random(seed)
    // a random kill: at the n-th (1..3) marker of a kind drawn from all kinds
    const kinds = [
      "model-start",
      "model-done",
      ...["keyed_write", "read_value", "plain_write"].flatMap((tool) =>
        ["start", "applied", "done"].map((when) => `tool-${when} ${tool}`)
      )
    ]
    const killedAt: Array<string> = []
    const results: Array<ResultLine> = []
    let lives = 0
    // waves of `runs` fresh runs (ids `w<wave>r<i>`), each killed and restarted until it finished, until
    // the kills are done (killing makes in-flight calls finish fast, so one wave may not take them all)
    for (let wave = 0; wave === 0 || killedAt.length < kills; wave++) {
      let submitted = false
      let final: WorkerExit | undefined
      while (final === undefined) {
        if (++lives > 2 * kills + 20) throw new Error(`no completion after ${lives} lives`)
        const target = killedAt.length < Math.min(kills, aimed.length)
          ? { pattern: aimed[killedAt.length]!, nth: 1 }
          : killedAt.length < kills
          ? { pattern: new RegExp(`^${rng.pick(kinds)} `), nth: rng.int(1, 3) }
          : undefined
        let matched = 0
        const w = startWorker(worker, {
          args: [submitted ? "resume" : "submit"],
          env: { ...env, WAVE: `w${wave}` },
          timeoutMs: 90_000,
          ...(target === undefined
            ? {}
            : { killWhen: (line: string) => target.pattern.test(line) && ++matched === target.nth })
        })
        const exit = await w.exited
        if (exit.stdout.includes("SUBMITTED")) submitted = true
        if (exit.killedAt !== undefined) {
          killedAt.push(exit.killedAt)
          continue
        }
        if (exit.code !== 0) throw new Error(`worker failed (${exit.code ?? exit.signal}):\n${exit.stderr.slice(-4000)}`)
        final = exit
        const lines = exit.stdout.split("\n").filter((line) => line.startsWith("RESULT "))
        results.push(...lines.map((line) => JSON.parse(line.slice("RESULT ".length)) as ResultLine))
        expect(lines, `wave ${wave}`).toHaveLength(runs)
      }
    }
    const waves = results.length / runs

    const applications = readApplications(env.APPLIED_FILE)
    const markers = readMarkers(env.MARKER_FILE)
    const keyedDuplicates = duplicates(applications.filter((a) => a.tool === "keyed_write").map((a) => `${a.key}`))
    const plainDuplicates = duplicates(
      applications.filter((a) => a.tool === "plain_write").map((a) => `${a.runId}/${a.callId}`)
    )
    const reexecuted = reexecutedAfterJournal(markers)
    const unknownOutcomes = results.flatMap((r) =>
      r.calls.filter((c) => /may or may not have completed/.test(c.text)).map((c) => `${r.runId}/${c.id}`)
    )
    const byKind = new Map<string, number>()
    for (const line of killedAt) {
      const kind = line.startsWith("model") ? line.split(" ")[0]! : line.split(" ").slice(0, 2).join(" ")
      byKind.set(kind, (byKind.get(kind) ?? 0) + 1)
    }
    console.log(
      `crash test: runs=${results.length} (${waves} waves of ${runs}) kills=${killedAt.length} lives=${lives} ` +
        `applications=${applications.length} keyed duplicates=${keyedDuplicates.length} ` +
        `non-idempotent duplicates=${plainDuplicates.length} re-executed after journal=${reexecuted.length} ` +
        `"may or may not have completed" answers=${unknownOutcomes.length} ` +
        `read_value re-runs=${applications.filter((a) => a.tool === "read_value").length - results.length * turns}\n` +
        `  kills by marker: ${[...byKind].map(([k, n]) => `${k}: ${n}`).join(", ")}`
    )

    // every run finished with the model's final answer, having seen every call answered
    expect(new Set(results.map((r) => r.runId)).size).toBe(results.length)
    for (const r of results) {
      expect(r.text).toBe(`done ${r.runId}`)
      expect(r.calls).toHaveLength(turns * 3)
    }
    expect(killedAt).toHaveLength(kills)
    // no keyed write twice per key, no non-idempotent write twice per call
    expect(keyedDuplicates).toEqual([])
    expect(plainDuplicates).toEqual([])
    // nothing journaled ran again
    expect(reexecuted).toEqual([])
    for (const r of results) {
      for (const c of r.calls) {
        if (c.name === "keyed_write" || c.name === "plain_write") {
          const applied = applications.filter((a) => a.runId === r.runId && a.callId === c.id).length
          // a write reported done was applied exactly once; one reported unknown at most once
          if (!c.isError) expect(applied, `${r.runId}/${c.id}`).toBe(1)
          else expect(c.text, `${r.runId}/${c.id}`).toMatch(/may or may not have completed/)
        }
      }
    }
    /** The run and call killed by aimed kill `i` (its side effect applied, its outcome not journaled). */
    const aimedCall = (i: number) => {
      const [, tool, runId, callId] = killedAt[i]!.split(" ") as [string, string, string, string]
      const applied = applications.filter((a) => a.runId === runId && a.callId === callId)
      return { tool, applied, result: results.find((r) => r.runId === runId)!.calls.find((c) => c.id === callId)! }
    }
    if (kills >= 1) {
      // a non-idempotent call killed after its side effect: not run again, and the model is told so
      const { applied, result } = aimedCall(0)
      expect(applied).toHaveLength(1)
      expect(result.isError).toBe(true)
      expect(result.text).toMatch(/may or may not have completed/)
    }
    if (kills >= 2) {
      // a keyed call killed after its side effect: applied once
      expect(aimedCall(1).applied).toHaveLength(1)
    }
    if (kills >= 3) {
      // an idempotent call killed after its side effect simply ran again
      const { applied, result } = aimedCall(2)
      expect(applied.length).toBeGreaterThanOrEqual(2)
      expect(result.isError).toBe(false)
    }
  })
})
