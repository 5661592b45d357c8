/**
 * Durable questions across processes: a runner starts a run whose `deploy` call asks which branch,
 * and is SIGKILLed while the question is open. The `tinyagents` binary, in a process of its own,
 * lists the question (`durable status`, `durable pending`), is refused a wrong answer (exit 1, the
 * reason; the question stays open), then answers it (`durable answer --json`); a restarted runner
 * (which submits nothing) finishes the run: the handler ran again from its start up to the question,
 * got the journaled answer, and deployed exactly once.
 */
import { spawnSync } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, describe, expect, it } from "vitest"
import { node, readApplications, repo, startWorker } from "./fixtures/harness.ts"

const worker = fileURLToPath(new URL("./fixtures/askWorker.ts", import.meta.url))
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

describe("durable questions across processes", () => {
  it("runner killed while a question is open; the CLI answers; a restarted runner finishes; deployed once", {
    timeout: 120_000
  }, async () => {
    const dir = mkdtempSync(join(tmpdir(), "tinyagents-ask-"))
    dirs.push(dir)
    const env = {
      DB_FILE: join(dir, "journal.db"),
      STORES_FILE: join(dir, "stores.db"),
      APPLIED_FILE: join(dir, "applied.jsonl")
    }
    const journal = ["--db", env.DB_FILE, "--workflow", "ask-agent"]

    const first = startWorker(worker, { args: ["submit"], env, timeoutMs: 60_000 })
    await first.waitFor(/^QUESTION q0 d1 1$/)
    first.kill()
    const killed = await first.exited
    expect(killed.signal).toBe("SIGKILL")
    expect(killed.stdout).not.toContain("RESULT")
    expect(readApplications(env.APPLIED_FILE).map((a) => a.tool)).toEqual(["start"])

    const status = tinyagents("durable", "status", "q0", ...journal)
    expect(status.stdout, status.stderr).toContain("q0: running")
    expect(status.stdout).toContain(`waiting for an answer: d1 #1 deploy: "Which branch of api?"`)
    const pending = tinyagents("durable", "pending", ...journal)
    expect(pending.stdout, pending.stderr).toContain("q0  asks: d1 #1 deploy")
    const listed = tinyagents("durable", "list", ...journal)
    expect(listed.stdout, listed.stderr).toContain("awaiting answer (1)")

    const wrong = tinyagents("durable", "answer", "q0", "d1", ...journal, "--json", `{"branch":"prod"}`)
    expect(wrong.code).toBe(1)
    expect(wrong.stderr).toContain("answer refused (the question stays open)")
    expect(wrong.stderr).toContain("branch")
    const unknown = tinyagents("durable", "answer", "q0", "nope", ...journal, "--json", `{"branch":"main"}`)
    expect(unknown.code).toBe(1)
    expect(unknown.stderr).toContain("open: d1 #1")
    const usage = tinyagents("durable", "answer", "q0", "d1", ...journal)
    expect(usage.code).toBe(2)

    const answered = tinyagents("durable", "answer", "q0", "d1", ...journal, "--json", `{"branch":"staging"}`, "--by", "alice")
    expect(answered.code, answered.stderr).toBe(0)
    expect(answered.stdout).toContain("answered the question of d1 of run q0")

    const second = startWorker(worker, { args: ["resume"], env, timeoutMs: 60_000 })
    const exit = await second.exited
    expect(exit.code, exit.stderr.slice(-3000)).toBe(0)
    const result = JSON.parse(exit.stdout.split("\n").find((line) => line.startsWith("RESULT "))!.slice("RESULT ".length)) as {
      text: string
      calls: ReadonlyArray<{ id: string; text: string; isError: boolean }>
    }
    const applications = readApplications(env.APPLIED_FILE)
    console.log(`durable question: handler starts=${applications.filter((a) => a.tool === "start").length}, deploys=${
      applications.filter((a) => a.tool === "deploy").length
    }`)
    expect(result.text).toBe("done: deployed api@staging")
    // the handler ran again from its start in the restarted runner, and deployed once, there
    expect(applications.map((a) => [a.tool, a.pid === second.child.pid])).toEqual([["start", false], ["start", true], ["deploy", true]])

    const finished = tinyagents("durable", "status", "q0", ...journal)
    expect(finished.stdout, finished.stderr).toMatch(/q0: finished \(final_answer, 2 turns\): done: deployed api@staging/)
    const late = tinyagents("durable", "answer", "q0", "d1", ...journal, "--json", `{"branch":"main"}`)
    expect(late.code).toBe(1)
    expect(late.stderr).toContain("has finished")
  })
})
