// Durable agents: start a run in a child process, SIGKILL it mid-run, start it again: the run
// finishes, and each email went out once. (The worker is scratchpad/durable-worker.ts.)
import { spawn } from "node:child_process"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

const db = join(mkdtempSync(join(tmpdir(), "tinyagents-durable-")), "journal.db")
const worker = new URL("./durable-worker.ts", import.meta.url).pathname
const output: Array<string> = []

// Runs the worker; with `killAt`, SIGKILLs it as soon as it prints that line.
const run = (killAt?: string) =>
  new Promise<void>((resolve) => {
    const child = spawn(process.execPath, [...process.execArgv, worker, db], { stdio: ["ignore", "pipe", "inherit"] })
    child.stdout.setEncoding("utf8").on("data", (text: string) => {
      for (const line of text.split("\n").filter(Boolean)) {
        output.push(line)
        console.log(`  ${child.pid}: ${line}`)
        if (line === killAt) child.kill("SIGKILL")
      }
    })
    child.on("close", (_code, signal) => (signal === "SIGKILL" && console.log(`  ${child.pid}: killed`), resolve()))
  })

await run("model turn 1") // alice's email is journaled, the second model turn is in flight: kill
await run() // resume: no email to alice again, the model asked for turn 1 again (it was not journaled)
const sent = (to: string) => output.filter((line) => line === `sent ${to}`).length
console.log(`alice: ${sent("alice")} email, bob: ${sent("bob")} email, ${output.at(-1)}`)
if (sent("alice") !== 1 || sent("bob") !== 1 || output.at(-1) !== "finished: both sent") process.exit(1)
