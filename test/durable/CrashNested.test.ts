/**
 * Nested durable agents under SIGKILL: runner processes (`fixtures/nestedCrashWorker.ts`) run parent
 * runs whose one call runs a nested durable agent (`DurableAgent.asTool`) of three tool turns, and are
 * killed with SIGKILL at markers the nested runs print (model turns and tool calls: start, applied,
 * done); each is restarted in resume mode until every parent run has finished. The first kills are
 * aimed inside the nested run at its second turn (after its first turn and calls were journaled),
 * the rest fall on a marker a seeded RNG picks.
 *
 * Asserted from the files every process appends to: every parent run finishes with the nested run's
 * answer; no nested model turn is asked again and no nested call runs again once its outcome was
 * journaled (the nested run resumed; it did not start over, as an `Agent.asTool` run inside the
 * call's activity would); no keyed write twice per key, no non-idempotent write twice per call.
 * `TINYAGENTS_NESTED_CRASH_KILLS` (default 6), `TINYAGENTS_CRASH_SEED`, `TINYAGENTS_NESTED_CRASH_RUNS` (3);
 * `TINYAGENTS_NESTED_CRASH_NESTING=inline` runs the control, the nested agent as `Agent.asTool`
 * (re-run whole after a crash), under which this test fails.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, describe, expect, it } from "vitest"
import { random } from "../support/random.ts"
import { duplicates, readApplications, readMarkers, reexecutedAfterJournal, startWorker, type WorkerExit } from "./fixtures/harness.ts"

const worker = fileURLToPath(new URL("./fixtures/nestedCrashWorker.ts", import.meta.url))
const kills = Number(process.env["TINYAGENTS_NESTED_CRASH_KILLS"] ?? 6)
const seed = Number(process.env["TINYAGENTS_CRASH_SEED"] ?? 15)
const runs = Number(process.env["TINYAGENTS_NESTED_CRASH_RUNS"] ?? 3)
const turns = 3

const dirs: Array<string> = []
afterAll(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })))

/** The aimed kills: as a nested run's second turn starts, after its first call of each kind applied. */
const aimed = [/^model-start \S+-n 1 /, /^tool-applied keyed_write \S+-n k1 /, /^tool-applied plain_write \S+-n p1 /]

interface ResultLine {
  readonly runId: string
  readonly text: string
  readonly nested: string
  readonly calls: ReadonlyArray<{ readonly id: string; readonly name: string; readonly text: string; readonly isError: boolean }>
}

describe("nested durable agents under SIGKILL (SQLite journal)", () => {
  it(`waves of ${runs} parent runs, each running a nested agent of ${turns} turns, finish through ${kills} kills; the nested runs resume`, { timeout: 120_000 + kills * 10_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), "tinyagents-crash-nested-"))
    dirs.push(dir)
    const env = {
      DB_FILE: join(dir, "journal.db"),
      STORES_FILE: join(dir, "stores.db"),
      APPLIED_FILE: join(dir, "applied.jsonl"),
      MARKER_FILE: join(dir, "markers.log"),
      RUNS: String(runs),
      TURNS: String(turns),
      // `inline`: the control (the nested agent as Agent.asTool, re-run whole): this test then fails
      NESTING: process.env["TINYAGENTS_NESTED_CRASH_NESTING"] ?? "durable"
    }
    const rng = random(seed)
    const kinds = [
      "model-start",
      "model-done",
      ...["keyed_write", "read_value", "plain_write"].flatMap((tool) => ["start", "applied", "done"].map((when) => `tool-${when} ${tool}`))
    ]
    const killedAt: Array<string> = []
    const results: Array<ResultLine> = []
    let lives = 0
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
          ...(target === undefined ? {} : { killWhen: (line: string) => target.pattern.test(line) && ++matched === target.nth })
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

    const applications = readApplications(env.APPLIED_FILE)
    const markers = readMarkers(env.MARKER_FILE)
    const reexecuted = reexecutedAfterJournal(markers)
    const keyedDuplicates = duplicates(applications.filter((a) => a.tool === "keyed_write").map((a) => `${a.key}`))
    const plainDuplicates = duplicates(applications.filter((a) => a.tool === "plain_write").map((a) => `${a.runId}/${a.callId}`))
    const modelTurns = markers.filter(([kind]) => kind === "model-start").length
    console.log(
      `nested crash test: parent runs=${results.length} kills=${killedAt.length} lives=${lives} ` +
        `nested model turns asked=${modelTurns} (uncrashed: ${results.length * (turns + 1)}) ` +
        `nested tool applications=${applications.length} (uncrashed: ${results.length * turns * 3}) ` +
        `re-executed after journal=${reexecuted.length} keyed duplicates=${keyedDuplicates.length} ` +
        `non-idempotent duplicates=${plainDuplicates.length}\n  killed at: ${killedAt.join(" | ")}`
    )

    expect(killedAt).toHaveLength(kills)
    for (const r of results) {
      expect(r.nested).toBe(`done ${r.runId}-n`)
      expect(r.text).toBe(`parent ${r.runId}: done ${r.runId}-n`)
      if (env.NESTING === "durable") expect(r.calls).toHaveLength(turns * 3)
    }
    // the nested runs resumed: nothing they journaled ran again
    expect(reexecuted).toEqual([])
    expect(keyedDuplicates).toEqual([])
    expect(plainDuplicates).toEqual([])
    // the aimed kills fell in a nested run's second turn: its first turn was not asked again
    for (const line of killedAt.slice(0, Math.min(kills, aimed.length))) {
      const run = line.split(" ").find((field) => field.endsWith("-n"))!
      expect(markers.filter(([kind, r, turn]) => kind === "model-start" && r === run && turn === "0"), line).toHaveLength(1)
    }
  })
})
