import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Result } from "effect"
import * as Tool from "../../src/Tool.ts"
import { bash, maxOutputBytes } from "../../src/tools/Bash.ts"
import { Workspace } from "../../src/tools/Workspace.ts"

const withWorkspace = <A, E>(body: (root: string) => Effect.Effect<A, E, Workspace>) =>
  Effect.acquireUseRelease(
    Effect.sync(() => fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "tinyagents-bash-")))),
    (root) => body(root).pipe(Effect.provide(Workspace.layer(root))),
    (root) => Effect.sync(() => fs.rmSync(root, { recursive: true, force: true }))
  )

/**
 * True while `pid` runs. A killed orphan whose reaper never calls `wait` (PID 1
 * in some containers) stays a zombie, which `kill(pid, 0)` still finds: it counts as dead.
 */
const isRunning = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ESRCH") return false
    throw error
  }
  try {
    const state = fs.readFileSync(`/proc/${pid}/stat`, "utf8").replace(/^.*\) /s, "")[0]
    return state !== "Z" && state !== "X"
  } catch {
    return false
  }
}

/** Waits up to `millis` for `pid` to stop running. */
const stopsRunning = (pid: number, millis = 1_000) =>
  Effect.gen(function*() {
    for (let waited = 0; waited < millis && isRunning(pid); waited += 20) yield* Effect.sleep("20 millis")
    return !isRunning(pid)
  })

const readPid = (file: string) =>
  Effect.gen(function*() {
    for (let i = 0; i < 100 && !(fs.existsSync(file) && fs.readFileSync(file, "utf8").endsWith("\n")); i++) {
      yield* Effect.sleep("20 millis")
    }
    return Number(fs.readFileSync(file, "utf8").trim())
  })

describe("bash", () => {
  it.live("runs a command in the workspace root", () =>
    withWorkspace((root) =>
      Effect.gen(function*() {
        const hi = yield* bash.handler({ command: "echo hi" })
        assert.deepStrictEqual(hi, {
          exitCode: 0,
          signal: null,
          stdout: "hi\n",
          stderr: "",
          stdoutOmittedBytes: 0,
          stderrOmittedBytes: 0,
          timedOut: false
        })
        const pwd = yield* bash.handler({ command: "pwd; echo err >&2" })
        assert.strictEqual(pwd.stdout, `${root}\n`)
        assert.strictEqual(pwd.stderr, "err\n")
      })
    ))

  it.live("reports a non-zero exit code", () =>
    withWorkspace(() =>
      Effect.gen(function*() {
        const result = yield* bash.handler({ command: "echo failing >&2; exit 3" })
        assert.strictEqual(result.exitCode, 3)
        assert.strictEqual(result.stderr, "failing\n")
        assert.isFalse(result.timedOut)
      })
    ))

  it.live("caps the output and says how much was cut", () =>
    withWorkspace(() =>
      Effect.gen(function*() {
        const result = yield* bash.handler({ command: "head -c 100000 /dev/zero | tr '\\0' a" })
        const omitted = 100_000 - maxOutputBytes
        assert.strictEqual(result.stdoutOmittedBytes, omitted)
        assert.strictEqual(result.stdout, `${"a".repeat(maxOutputBytes)}\n[stdout truncated: ${omitted} more bytes not shown]`)
      })
    ))

  it.live("a timeout kills the whole process group and returns timedOut", () =>
    withWorkspace((root) =>
      Effect.gen(function*() {
        const started = Date.now()
        const result = yield* bash.handler({
          command: "echo started; sleep 30 & echo $! > child.pid; wait",
          timeoutSeconds: 1
        })
        assert.isBelow(Date.now() - started, 5_000)
        assert.isTrue(result.timedOut)
        assert.strictEqual(result.exitCode, null)
        assert.strictEqual(result.signal, "SIGKILL")
        assert.strictEqual(result.stdout, "started\n")
        const child = Number(fs.readFileSync(path.join(root, "child.pid"), "utf8"))
        assert.isTrue(yield* stopsRunning(child))
      })
    ))

  it.live("background jobs do not outlive the command", () =>
    withWorkspace((root) =>
      Effect.gen(function*() {
        const result = yield* bash.handler({ command: "sleep 30 & echo $! > child.pid; echo done" })
        assert.strictEqual(result.stdout, "done\n")
        const child = Number(fs.readFileSync(path.join(root, "child.pid"), "utf8"))
        assert.isTrue(yield* stopsRunning(child))
      })
    ))

  it.live("a process that escapes the group (setsid) does not keep the call open", () =>
    withWorkspace((root) =>
      Effect.gen(function*() {
        const started = Date.now()
        const result = yield* bash.handler({ command: "setsid sleep 30 & echo $! > child.pid; echo done" })
        const escaped = Number(fs.readFileSync(path.join(root, "child.pid"), "utf8"))
        process.kill(escaped, "SIGKILL")
        assert.strictEqual(result.stdout, "done\n")
        assert.strictEqual(result.exitCode, 0)
        assert.isBelow(Date.now() - started, 2_000)
      })
    ))

  it.live("interrupting the call kills the whole process group", () =>
    withWorkspace((root) =>
      Effect.gen(function*() {
        const fiber = yield* Effect.forkChild(
          bash.handler({ command: "echo $$ > shell.pid; sleep 30 & echo $! > child.pid; wait" })
        )
        const shell = yield* readPid(path.join(root, "shell.pid"))
        const child = yield* readPid(path.join(root, "child.pid"))
        assert.isTrue(isRunning(child))
        yield* Fiber.interrupt(fiber)
        assert.isFalse(isRunning(shell)) // interruption waits until the shell has exited
        assert.isTrue(yield* stopsRunning(child))
      })
    ))

  it("declares honest safety", () => {
    assert.deepStrictEqual(bash.safety, {
      effect: "mutate",
      idempotent: false,
      shell: true,
      requiresConfirmation: true,
      destructive: true
    })
    assert.isTrue(Result.isSuccess(Tool.spec(bash)))
  })
})
