/**
 * Approvals across processes: a runner starts two runs whose `plain_write` call waits for a durable
 * approval, and is SIGKILLed while they wait. The `tinyagents` binary, in a process of its own,
 * approves one call (`durable approve`) and denies the other (`--deny --reason`) on the same SQLite
 * journal; a restarted runner (which submits nothing) finishes both runs: the approved call ran
 * exactly once, the denied one never, and the model read the refusal. `durable status` reports the
 * run running, then finished.
 */
import { spawnSync } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, describe, expect, it } from "vitest"
import { node, readApplications, repo, startWorker } from "./fixtures/harness.ts"

const worker = fileURLToPath(new URL("./fixtures/approveWorker.ts", import.meta.url))
const bin = join(repo, "src", "cli", "bin.ts")

const dirs: Array<string> = []
afterAll(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })))

/** The real binary in a process of its own. */
const tinyagents = (...args: ReadonlyArray<string>) => {
  const run = spawnSync(node, ["--conditions=tinyagents-source", bin, ...args], {
    cwd: repo,
    encoding: "utf8",
    timeout: 60_000,
    env: { PATH: process.env["PATH"] ?? "", HOME: process.env["HOME"] ?? "", NO_COLOR: "1" }
  })
  return { code: run.status, stdout: run.stdout, stderr: run.stderr }
}

describe("durable approvals across processes", () => {
  it("runner killed while waiting; the CLI approves and denies; a restarted runner finishes; the approved call ran once", {
    timeout: 90_000
  }, async () => {
    const dir = mkdtempSync(join(tmpdir(), "tinyagents-approve-"))
    dirs.push(dir)
    const env = {
      DB_FILE: join(dir, "journal.db"),
      STORES_FILE: join(dir, "stores.db"),
      APPLIED_FILE: join(dir, "applied.jsonl"),
      MARKER_FILE: join(dir, "markers.log"),
      TURNS: "1"
    }
    const journal = ["--db", env.DB_FILE, "--workflow", "approve-agent"]

    const first = startWorker(worker, { args: ["submit"], env, timeoutMs: 60_000 })
    await first.waitFor(/^APPROVAL a0 p0$/)
    await first.waitFor(/^APPROVAL a1 p0$/)
    first.kill()
    const killed = await first.exited
    expect(killed.signal).toBe("SIGKILL")
    expect(killed.stdout).not.toContain("RESULT")
    // the call waiting for approval never ran
    expect(readApplications(env.APPLIED_FILE).filter((a) => a.tool === "plain_write")).toEqual([])

    const running = tinyagents("durable", "status", "a0", ...journal)
    expect(running.stdout, running.stderr).toContain("a0: running")

    const approved = tinyagents("durable", "approve", "a0", "p0", ...journal, "--by", "alice")
    expect(approved.code, approved.stderr).toBe(0)
    expect(approved.stdout).toContain("approved p0 of run a0")
    const denied = tinyagents("durable", "approve", "a1", "p0", ...journal, "--deny", "--reason", "not on a Sunday")
    expect(denied.code, denied.stderr).toBe(0)
    expect(denied.stdout).toContain("denied p0 of run a1")

    const second = startWorker(worker, { args: ["resume"], env, timeoutMs: 60_000 })
    const exit = await second.exited
    expect(exit.code, exit.stderr.slice(-3000)).toBe(0)
    const results = exit.stdout.split("\n").filter((line) => line.startsWith("RESULT ")).map((line) =>
      JSON.parse(line.slice("RESULT ".length)) as {
        runId: string
        text: string
        calls: ReadonlyArray<{ id: string; text: string; isError: boolean }>
      }
    )
    const plain = readApplications(env.APPLIED_FILE).filter((a) => a.tool === "plain_write")
    console.log(
      `approvals: runs finished=${results.length}/2, plain_write applications a0=${
        plain.filter((a) => a.runId === "a0").length
      } a1=${plain.filter((a) => a.runId === "a1").length}`
    )
    expect(results.map((r) => r.text)).toEqual(["done a0", "done a1"])
    // approved: ran exactly once, in the restarted runner
    expect(plain.filter((a) => a.runId === "a0")).toHaveLength(1)
    expect(plain.find((a) => a.runId === "a0")!.pid).toBe(second.child.pid)
    expect(results[0]!.calls.find((c) => c.id === "p0")).toMatchObject({ isError: false, text: "plain_write ok" })
    // denied: never ran, and the model read why
    expect(plain.filter((a) => a.runId === "a1")).toEqual([])
    const refusal = results[1]!.calls.find((c) => c.id === "p0")!
    expect(refusal.isError).toBe(true)
    expect(refusal.text).toContain("not on a Sunday")
    // the turn's other calls waited for the decisions too, then ran once each, in the restarted runner
    for (const tool of ["keyed_write", "read_value"]) {
      const applied = readApplications(env.APPLIED_FILE).filter((a) => a.tool === tool)
      expect(applied.map((a) => a.runId).sort()).toEqual(["a0", "a1"])
      expect(applied.every((a) => a.pid === second.child.pid)).toBe(true)
    }

    const finished = tinyagents("durable", "status", "a0", ...journal)
    expect(finished.stdout, finished.stderr).toMatch(/a0: finished \(final_answer, 2 turns\): done a0/)
  })
})
