import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Fiber, Result } from "effect"
import { TestClock } from "effect/testing"
import { EventSink, Executor, ToolRegistry, ToolServices } from "../../src/index.ts"
import * as Tool from "../../src/contract/Tool.ts"
import { bash, maxOutputBytes, maxTimeoutSeconds, timeoutGraceSeconds } from "../../src/tools/Bash.ts"
import { Workspace } from "../../src/tools/Workspace.ts"

const withWorkspace = <A, E>(body: (root: string) => Effect.Effect<A, E, Workspace>) =>
  Effect.acquireUseRelease(
    Effect.sync(() => fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "tinyagents-bash-")))),
    (root) => body(root).pipe(Effect.provide(Workspace.layer(root))),
    (root) => Effect.sync(() => fs.rmSync(root, { recursive: true, force: true }))
  )

/**
 * Waits `millis` of real time, also under `TestClock` (a child process runs on real time).
 */
const realSleep = (millis: number) => Effect.promise(() => new Promise<void>((resolve) => setTimeout(resolve, millis)))

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
    for (let waited = 0; waited < millis && isRunning(pid); waited += 20) yield* realSleep(20)
    return !isRunning(pid)
  })

const readPid = (file: string) =>
  Effect.gen(function*() {
    for (let i = 0; i < 100 && !(fs.existsSync(file) && fs.readFileSync(file, "utf8").endsWith("\n")); i++) {
      yield* realSleep(20)
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

  it.effect("the deadline is a Clock sleep: TestClock reaching it kills the group and returns timedOut", () =>
    withWorkspace((root) =>
      Effect.gen(function*() {
        const started = Date.now()
        const fiber = yield* Effect.forkChild(bash.handler({
          command: "echo started; echo $$ > shell.pid; sleep 1000 & echo $! > child.pid; wait",
          timeoutSeconds: 5
        }))
        const shell = yield* readPid(path.join(root, "shell.pid"))
        const child = yield* readPid(path.join(root, "child.pid"))
        yield* TestClock.adjust("4999 millis")
        yield* realSleep(50)
        assert.isUndefined(fiber.pollUnsafe()) // real time passing does not count, only the Clock
        assert.isTrue(isRunning(shell) && isRunning(child))
        yield* TestClock.adjust("1 millis")
        const result = yield* Fiber.join(fiber)
        assert.isBelow(Date.now() - started, 4_000) // the 5 s were the TestClock's, not real time
        assert.isTrue(result.timedOut)
        assert.strictEqual(result.exitCode, null)
        assert.strictEqual(result.signal, "SIGKILL")
        assert.strictEqual(result.stdout, "started\n")
        assert.isFalse(isRunning(shell))
        assert.isTrue(yield* stopsRunning(child))
      })
    ))

  it.effect("a timeout above the maximum is clamped to it", () =>
    withWorkspace((root) =>
      Effect.gen(function*() {
        const fiber = yield* Effect.forkChild(bash.handler({ command: "echo $$ > shell.pid; sleep 1000", timeoutSeconds: 10_000 }))
        yield* readPid(path.join(root, "shell.pid"))
        yield* TestClock.adjust(maxTimeoutSeconds * 1000 - 1)
        yield* realSleep(50)
        assert.isUndefined(fiber.pollUnsafe())
        yield* TestClock.adjust(1)
        assert.isTrue((yield* Fiber.join(fiber)).timedOut)
      })
    ))

  describe("through the executor", () => {
    /** An executor whose default timeout (1 s) is below the bash calls' own (2 s). */
    const runBash = (command: string, timeoutSeconds: number) =>
      Effect.gen(function*() {
        const executor = yield* Executor.make(yield* ToolRegistry.make([bash]), { defaultTimeout: "1 second" })
        return yield* Effect.forkChild(
          executor.run({ id: "c1", name: "bash", arguments: { command, timeoutSeconds } })
        )
      })
    const eventTags = EventSink.EventLog.use((log) => log.all).pipe(Effect.map((events) => events.map((e) => e._tag)))

    it("declares a timeout above its own maximum, so its own limit always applies first", () => {
      assert.strictEqual(Duration.toMillis(bash.timeout!), (maxTimeoutSeconds + timeoutGraceSeconds) * 1000)
      assert.isAbove(timeoutGraceSeconds, 0)
      const spec = Tool.spec(bash)
      assert.isTrue(Result.isSuccess(spec) && spec.success.timeout! > maxTimeoutSeconds * 1000)
    })

    it.effect("a call longer than the executor's default timeout but within its own completes", () =>
      withWorkspace((root) =>
        Effect.gen(function*() {
          const fiber = yield* runBash(
            "echo $$ > shell.pid; while [ ! -e go ]; do sleep 0.02; done; echo done",
            2
          )
          yield* readPid(path.join(root, "shell.pid"))
          yield* TestClock.adjust("1500 millis") // past the executor's 1 s default, within bash's 2 s
          yield* realSleep(50)
          fs.writeFileSync(path.join(root, "go"), "")
          const result = yield* Fiber.join(fiber)
          assert.isFalse(result.isError, result.error?.message)
          assert.deepInclude(result.value as object, { exitCode: 0, stdout: "done\n", timedOut: false })
          assert.deepStrictEqual(yield* eventTags, ["tool.started", "tool.completed"])
        }).pipe(Effect.provide(ToolServices.layerTest()))
      ))

    it.effect("a call past its own timeout returns timedOut with the output so far, not a ToolTimeout", () =>
      withWorkspace((root) =>
        Effect.gen(function*() {
          const fiber = yield* runBash("echo started; echo $$ > shell.pid; sleep 1000", 2)
          const shell = yield* readPid(path.join(root, "shell.pid"))
          yield* TestClock.adjust("2 seconds")
          const result = yield* Fiber.join(fiber)
          assert.isFalse(result.isError, result.error?.message)
          assert.deepInclude(result.value as object, {
            exitCode: null,
            signal: "SIGKILL",
            stdout: "started\n",
            timedOut: true
          })
          assert.isFalse(isRunning(shell))
          assert.deepStrictEqual(yield* eventTags, ["tool.started", "tool.completed"])
        }).pipe(Effect.provide(ToolServices.layerTest()))
      ))
  })

  it("declares honest safety", () => {
    assert.deepStrictEqual(bash.safety, {
      access: "mutate",
      idempotent: false,
      shell: true,
      requiresConfirmation: true,
      destructive: true
    })
    assert.isTrue(Result.isSuccess(Tool.spec(bash)))
  })
})
