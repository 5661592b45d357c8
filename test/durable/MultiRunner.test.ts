/**
 * Several runner processes on one real Postgres (`Runner.layerPostgres`, each on its own loopback
 * port): a client process starts nine runs of the crash test's agent, the runners split them
 * (Effect Cluster sharding), one runner is SIGKILLed while it works on a run, and every run finishes
 * on the others with nothing applied twice and nothing journaled run again. Skipped when the machine
 * has no Postgres (CI installs it and sets TINYAGENTS_REQUIRE_POSTGRES=1).
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, describe, expect, it } from "vitest"
import { freePort, postgresSkipReason, type PostgresServer, startPostgres } from "../support/postgres.ts"
import { duplicates, markerPids, readApplications, readMarkers, reexecutedAfterJournal, startWorker, type Worker } from "./fixtures/harness.ts"

const worker = fileURLToPath(new URL("./fixtures/multiWorker.ts", import.meta.url))
const runs = 9
const turns = 3

let server: PostgresServer | undefined
const dirs: Array<string> = []
const workers: Array<Worker> = []
afterAll(() => {
  workers.forEach((w) => w.kill())
  server?.destroy()
  dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true }))
})

describe.skipIf(postgresSkipReason !== undefined)(
  `three runners on Postgres${postgresSkipReason === undefined ? "" : ` (skipped: no postgres: ${postgresSkipReason})`}`,
  () => {
    it("one runner killed mid-run: every run finishes on the others, nothing applied twice", { timeout: 150_000 }, async () => {
      server = await startPostgres()
      const dir = mkdtempSync(join(tmpdir(), "tinyagents-multi-"))
      dirs.push(dir)
      const env = {
        PG_URL: server.url,
        APPLIED_FILE: join(dir, "applied.jsonl"),
        MARKER_FILE: join(dir, "markers.log"),
        RUNS: String(runs),
        TURNS: String(turns),
        WORK_MS: "100"
      }
      // the runner that prints the first `tool-applied plain_write` after 15 markers (of any runner) is
      // killed right there: after a non-idempotent call's side effect, before its outcome is journaled
      let seen = 0
      let victim: string | undefined
      const runners: Array<Worker> = []
      for (let i = 0; i < 3; i++) {
        const port = await freePort()
        const w = startWorker(worker, {
          args: ["runner"],
          env: { ...env, PORT: String(port) },
          timeoutMs: 140_000,
          killWhen: (line) => {
            if (++seen < 15 || victim !== undefined || !line.startsWith("tool-applied plain_write")) return false
            victim = line
            return true
          }
        })
        runners.push(w)
        workers.push(w)
        // one at a time: the first runner creates the cluster tables
        await w.waitFor(/^UP /)
      }
      const client = startWorker(worker, { args: ["client"], env, timeoutMs: 140_000 })
      workers.push(client)
      const exit = await client.exited
      runners.forEach((w) => w.kill())
      const runnerExits = await Promise.all(runners.map((w) => w.exited))
      if (exit.code !== 0) {
        throw new Error(
          `client failed (${exit.code ?? exit.signal}):\n${exit.stderr.slice(-3000)}\n${
            runnerExits.map((r) => r.stderr.slice(-1500)).join("\n---\n")
          }`
        )
      }

      const results = exit.stdout.split("\n").filter((line) => line.startsWith("RESULT ")).map((line) =>
        JSON.parse(line.slice("RESULT ".length)) as {
          runId: string
          text: string
          calls: ReadonlyArray<{ id: string; text: string; isError: boolean }>
        }
      )
      const applications = readApplications(env.APPLIED_FILE)
      const markers = readMarkers(env.MARKER_FILE)
      const killed = runnerExits.filter((r) => r.killedAt !== undefined)
      const victimPid = victim?.match(/pid=(\d+)/)?.[1]
      // the processes that did work after the kill: the survivors, never the victim
      const pidsAfterKill = new Set([...markerPids(env.MARKER_FILE, victim)].filter((pid) => pid !== victimPid))
      const keyedDuplicates = duplicates(applications.filter((a) => a.tool === "keyed_write").map((a) => `${a.key}`))
      const plainDuplicates = duplicates(applications.filter((a) => a.tool === "plain_write").map((a) => `${a.runId}/${a.callId}`))
      const reexecuted = reexecutedAfterJournal(markers)
      console.log(
        `multi-runner: runs finished=${results.length}/${runs} killed runner at "${victim}" ` +
          `runners that worked besides the victim=${pidsAfterKill.size} applications=${applications.length} ` +
          `keyed duplicates=${keyedDuplicates.length} non-idempotent duplicates=${plainDuplicates.length} ` +
          `re-executed after journal=${reexecuted.length}`
      )

      expect(killed).toHaveLength(1)
      expect(results.map((r) => r.runId).sort()).toEqual(Array.from({ length: runs }, (_, i) => `m${i}`).sort())
      for (const r of results) expect(r.text).toBe(`done ${r.runId}`)
      // the killed runner had started work; the survivors finished it
      expect(victimPid).toBeDefined()
      expect(pidsAfterKill.size).toBeGreaterThanOrEqual(1)
      // the victim's run went on in another runner; its call in flight was not run again, and says so
      const [, , victimRun, victimCall] = victim!.split(" ") as [string, string, string, string]
      expect(applications.filter((a) => a.runId === victimRun && a.callId === victimCall)).toHaveLength(1)
      const inFlight = results.find((r) => r.runId === victimRun)!.calls.find((c) => c.id === victimCall)!
      expect(inFlight.isError).toBe(true)
      expect(inFlight.text).toMatch(/may or may not have completed/)
      const afterKill = markers.slice(markers.findIndex((m) => m.join(" ") === victim!.replace(/ pid=\d+$/, "")) + 1)
      expect(afterKill.some((m) => m.includes(victimRun))).toBe(true)
      expect(keyedDuplicates).toEqual([])
      expect(plainDuplicates).toEqual([])
      expect(reexecuted).toEqual([])
    })
  }
)
