import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Fiber, Result } from "effect"
import { TestClock } from "effect/testing"
import { EventSink, Executor, ToolRegistry, ToolServices } from "../../src/index.ts"
import * as Tool from "../../src/contract/Tool.ts"
import {
  bash,
  callIdVariable,
  commandEnvironment,
  type Containment,
  defaultPath,
  detectContainment,
  detectStrictSandbox,
  make,
  maxOutputBytes,
  maxTimeoutSeconds,
  timeoutGraceSeconds
} from "../../src/tools/Bash.ts"
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
const isPidRunning = (pid: number): boolean => {
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

/**
 * Shell text printing a PID the test can find from outside: commands may run in their own PID
 * namespace, where `$$` and `$!` mean other processes than on the host. Prints
 * `<pid namespace> <pid>`; {@link hostPid} maps it back.
 */
const pidRef = (expression: string) => `echo "$(readlink /proc/self/ns/pid) ${expression}"`

const ownPidNamespace = fs.readlinkSync("/proc/self/ns/pid")

/** The host PID of a `pidRef`, or `undefined` when no such process exists (any more). */
const hostPid = (ref: string): number | undefined => {
  const [namespace, pid] = ref.trim().split(" ")
  if (namespace === ownPidNamespace) return Number(pid)
  for (const name of fs.readdirSync("/proc")) {
    if (!/^[0-9]+$/.test(name)) continue
    try {
      if (fs.readlinkSync(`/proc/${name}/ns/pid`) !== namespace) continue
      const nspid = /NSpid:\s+(.*)/.exec(fs.readFileSync(`/proc/${name}/status`, "utf8"))?.[1]?.trim().split(/\s+/)
      if (nspid !== undefined && nspid[nspid.length - 1] === pid) return Number(name)
    } catch {
      // gone meanwhile
    }
  }
  return undefined
}

/** True while the process named by a `pidRef` runs. */
const isRunning = (ref: string): boolean => {
  const pid = hostPid(ref)
  return pid !== undefined && isPidRunning(pid)
}

/** Waits up to `millis` for the process of `ref` to stop running. */
const stopsRunning = (ref: string, millis = 1_000) =>
  Effect.gen(function*() {
    for (let waited = 0; waited < millis && isRunning(ref); waited += 20) yield* realSleep(20)
    return !isRunning(ref)
  })

/** Waits until `file` holds a complete line, and returns it (a `pidRef`). */
const readPid = (file: string) =>
  Effect.gen(function*() {
    for (let i = 0; i < 100 && !(fs.existsSync(file) && fs.readFileSync(file, "utf8").endsWith("\n")); i++) {
      yield* realSleep(20)
    }
    return fs.readFileSync(file, "utf8").trim()
  })

/** SIGKILLs the process of a `pidRef` if it still runs (cleanup after a failed assertion). */
const killRef = (ref: string): void => {
  const pid = hostPid(ref)
  if (pid !== undefined && isPidRunning(pid)) process.kill(pid, "SIGKILL")
}

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
          command: `echo started; sleep 30 & ${pidRef("$!")} > child.pid; wait`,
          timeoutSeconds: 1
        })
        assert.isBelow(Date.now() - started, 5_000)
        assert.isTrue(result.timedOut)
        assert.strictEqual(result.exitCode, null)
        assert.strictEqual(result.signal, "SIGKILL")
        assert.strictEqual(result.stdout, "started\n")
        const child = fs.readFileSync(path.join(root, "child.pid"), "utf8").trim()
        assert.isTrue(yield* stopsRunning(child))
      })
    ))

  it.live("background jobs do not outlive the command", () =>
    withWorkspace((root) =>
      Effect.gen(function*() {
        const result = yield* bash.handler({ command: `sleep 30 & ${pidRef("$!")} > child.pid; echo done` })
        assert.strictEqual(result.stdout, "done\n")
        const child = fs.readFileSync(path.join(root, "child.pid"), "utf8").trim()
        assert.isTrue(yield* stopsRunning(child))
      })
    ))

  it.live("a process that escapes the group (setsid) does not keep the call open", () =>
    withWorkspace((root) =>
      Effect.gen(function*() {
        const started = Date.now()
        const result = yield* bash.handler({ command: `setsid sleep 30 & ${pidRef("$!")} > child.pid; echo done` })
        killRef(fs.readFileSync(path.join(root, "child.pid"), "utf8"))
        assert.strictEqual(result.stdout, "done\n")
        assert.strictEqual(result.exitCode, 0)
        assert.isBelow(Date.now() - started, 2_000)
      })
    ))

  it.live("interrupting the call kills the whole process group", () =>
    withWorkspace((root) =>
      Effect.gen(function*() {
        const fiber = yield* Effect.forkChild(
          bash.handler({ command: `${pidRef("$$")} > shell.pid; sleep 30 & ${pidRef("$!")} > child.pid; wait` })
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
          command: `echo started; ${pidRef("$$")} > shell.pid; sleep 1000 & ${pidRef("$!")} > child.pid; wait`,
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
        const fiber = yield* Effect.forkChild(bash.handler({ command: `${pidRef("$$")} > shell.pid; sleep 1000`, timeoutSeconds: 10_000 }))
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
            `${pidRef("$$")} > shell.pid; while [ ! -e go ]; do sleep 0.02; done; echo done`,
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
          const fiber = yield* runBash(`echo started; ${pidRef("$$")} > shell.pid; sleep 1000`, 2)
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

// ---------------------------------------------------------------------------
// the sandbox: environment, containment, strict mode
// ---------------------------------------------------------------------------

/** Whether `argv` runs and exits 0 here. */
const works = (argv: ReadonlyArray<string>): boolean =>
  spawnSync(argv[0]!, argv.slice(1), { stdio: "ignore", timeout: 5_000 }).status === 0

const available: Readonly<Record<Containment, string | undefined>> = {
  "pid-namespace": works(["unshare", "--pid", "--fork", "--kill-child", "--mount-proc", "true"])
    ? undefined
    : "skipped: unshare --pid does not work here (not root, or no util-linux unshare)",
  bwrap: works(["bwrap", "--dev-bind", "/", "/", "--proc", "/proc", "--unshare-pid", "--die-with-parent", "true"])
    ? undefined
    : "skipped: no bwrap (install Debian's bubblewrap)",
  "process-group": process.platform === "linux" ? undefined : "skipped: not Linux"
}
const strictAvailable = await detectStrictSandbox()
const strictSkip = strictAvailable ? undefined : "skipped: no bwrap (the strict sandbox needs bubblewrap)"
for (const reason of [...Object.values(available), strictSkip]) if (reason !== undefined) console.warn(`bash sandbox tests ${reason}`)
console.log(`bash containment chosen here: ${await detectContainment()}`)

const withSecret = <A, E, R>(body: Effect.Effect<A, E, R>) =>
  Effect.acquireUseRelease(
    Effect.sync(() => {
      process.env["OPENAI_API_KEY"] = "sk-test-secret-0123456789"
      process.env["TINYAGENTS_TEST_INHERITED"] = "inherited-value"
    }),
    () => body,
    () =>
      Effect.sync(() => {
        delete process.env["OPENAI_API_KEY"]
        delete process.env["TINYAGENTS_TEST_INHERITED"]
      })
  )

describe("bash environment (finding 1)", () => {
  it("commandEnvironment: the allowlist, then inheritEnv, then env, then the call id", () => {
    const parent = { PATH: "/p", HOME: "/h", OPENAI_API_KEY: "sk-x", AWS_SECRET_ACCESS_KEY: "s", KEEP: "k", LANG: "C.UTF-8" }
    assert.deepStrictEqual(commandEnvironment({}, "id1", parent), {
      PATH: "/p",
      HOME: "/h",
      LANG: "C.UTF-8",
      [callIdVariable]: "id1"
    })
    assert.deepStrictEqual(commandEnvironment({ inheritEnv: ["KEEP", "MISSING"], env: { HOME: "/w", X: "1" } }, "id2", parent), {
      PATH: "/p",
      HOME: "/w",
      LANG: "C.UTF-8",
      KEEP: "k",
      X: "1",
      [callIdVariable]: "id2"
    })
    assert.deepStrictEqual(commandEnvironment({}, "id3", {}), { PATH: defaultPath, [callIdVariable]: "id3" })
  })

  it.live("passes only the documented allowlist: no API keys from the parent environment", () =>
    withWorkspace(() =>
      withSecret(
        Effect.gen(function*() {
          const result = yield* bash.handler({ command: "env" })
          assert.notInclude(result.stdout, "sk-test-secret")
          assert.notInclude(result.stdout, "OPENAI_API_KEY")
          assert.notInclude(result.stdout, "TINYAGENTS_TEST_INHERITED")
          const names = result.stdout.split("\n").filter((l) => l.includes("=")).map((l) => l.slice(0, l.indexOf("=")))
          const allowed = ["PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", callIdVariable]
          // bash itself sets PWD, SHLVL and _.
          const unexpected = names.filter((n) => !allowed.includes(n) && !["PWD", "SHLVL", "_", "OLDPWD"].includes(n))
          assert.deepStrictEqual(unexpected, [])
          assert.include(names, "PATH")
        })
      )
    ))

  it.live("adds what the options give: env values and inherited names", () =>
    withWorkspace(() =>
      withSecret(
        Effect.gen(function*() {
          const tool = make({ env: { CI: "1", PATH: "/usr/bin:/bin" }, inheritEnv: ["TINYAGENTS_TEST_INHERITED"] })
          const result = yield* tool.handler({
            command: "echo \"$CI|$PATH|$TINYAGENTS_TEST_INHERITED|${OPENAI_API_KEY-unset}\""
          })
          assert.strictEqual(result.stdout, "1|/usr/bin:/bin|inherited-value|unset\n")
        })
      )
    ))
})

/**
 * Commands that try to leave the call's process group; each writes a `pidRef` of the escapee to
 * `escaped.pid` and returns only once the escapee has left (it touches `ready` after `setsid` /
 * `setpgid`), so the escape is real before the shell exits.
 */
const ready = "while [ ! -e ready ]; do sleep 0.01; done"
const escapee = `sh -c 'touch ready; exec sleep 1000'`
const escapes: ReadonlyArray<readonly [string, string]> = [
  ["setsid", `setsid ${escapee} & ${pidRef("$!")} > escaped.pid; ${ready}`],
  ["set -m (job control: a new process group)", `set -m; ${escapee} & ${pidRef("$!")} > escaped.pid; ${ready}`],
  [
    "setpgid in the child",
    `perl -e 'setpgrp(0, 0); open(my $f, ">", "ready"); close $f; exec "sleep", "1000"' & ${pidRef("$!")} > escaped.pid; ${ready}`
  ],
  ["double fork with setsid", `( setsid ${escapee} & ${pidRef("$!")} > escaped.pid ) & wait; ${ready}`],
  ["nohup and a new session", `nohup setsid ${escapee} >/dev/null 2>&1 & ${pidRef("$!")} > escaped.pid; ${ready}`]
]

const containments: ReadonlyArray<"auto" | Containment> = ["auto", "pid-namespace", "bwrap", "process-group"]

describe("bash containment (finding 2): no process started by a call outlives it", () => {
  for (const containment of containments) {
    const skip = containment === "auto" ? undefined : available[containment]
    const tool = make({ containment })
    for (const [name, command] of escapes) {
      it.live.skipIf(skip !== undefined)(`${containment}: ${name}, when the command exits${skip ? ` (${skip})` : ""}`, () =>
        withWorkspace((root) =>
          Effect.gen(function*() {
            const result = yield* tool.handler({ command: `${command}; echo done` })
            assert.strictEqual(result.stdout, "done\n", result.stderr)
            const escaped = yield* readPid(path.join(root, "escaped.pid"))
            const survived = isRunning(escaped)
            killRef(escaped)
            assert.isFalse(survived, `${name} survived the call`)
          })
        ))
    }
    it.live.skipIf(skip !== undefined)(`${containment}: setsid, when the command times out${skip ? ` (${skip})` : ""}`, () =>
      withWorkspace((root) =>
        Effect.gen(function*() {
          const result = yield* tool.handler({
            command: `setsid sleep 1000 & ${pidRef("$!")} > escaped.pid; sleep 1000`,
            timeoutSeconds: 1
          })
          assert.isTrue(result.timedOut)
          const escaped = yield* readPid(path.join(root, "escaped.pid"))
          const survived = isRunning(escaped)
          killRef(escaped)
          assert.isFalse(survived)
        })
      ))
    it.live.skipIf(skip !== undefined)(`${containment}: setsid, when the call is interrupted${skip ? ` (${skip})` : ""}`, () =>
      withWorkspace((root) =>
        Effect.gen(function*() {
          const fiber = yield* Effect.forkChild(
            tool.handler({ command: `setsid sleep 1000 & ${pidRef("$!")} > escaped.pid; sleep 1000` })
          )
          const escaped = yield* readPid(path.join(root, "escaped.pid"))
          assert.isTrue(isRunning(escaped))
          yield* Fiber.interrupt(fiber)
          const survived = isRunning(escaped)
          killRef(escaped)
          assert.isFalse(survived)
        })
      ))
  }

  // CI sets TINYAGENTS_REQUIRE_SANDBOX=1 so that a missing tool fails the run instead of skipping tests.
  it.runIf(process.env["TINYAGENTS_REQUIRE_SANDBOX"] === "1")("TINYAGENTS_REQUIRE_SANDBOX=1: unshare and bwrap both work here", () => {
    assert.deepStrictEqual([available["pid-namespace"], available.bwrap, strictSkip], [undefined, undefined, undefined])
  })

  it.skipIf(available["pid-namespace"] !== undefined && available.bwrap !== undefined)(
    "auto picks a PID namespace where one works",
    () =>
      Effect.runPromise(Effect.promise(detectContainment)).then((chosen) =>
        assert.oneOf(chosen, ["pid-namespace", "bwrap"])
      )
  )
})

describe(`bash strict sandbox${strictSkip ? ` (${strictSkip})` : ""}`, () => {
  const strict = make({ sandbox: "strict" })

  it.live.skipIf(!strictAvailable)("writes the workspace; cannot write outside it; /tmp is private", () =>
    withWorkspace((root) =>
      Effect.gen(function*() {
        const outside = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "tinyagents-outside-")))
        const marker = `tinyagents-strict-${process.pid}-${Date.now()}`
        const result = yield* strict.handler({
          command: `echo in > inside.txt && cat inside.txt; touch ${outside}/x 2>/dev/null && echo WROTE-OUTSIDE; ` +
            `touch $HOME/${marker} 2>/dev/null && echo WROTE-HOME; echo t > /tmp/${marker} && cat /tmp/${marker}; ` +
            `cat /etc/hostname > /dev/null && echo can-read`
        })
        const outsideFiles = fs.readdirSync(outside)
        fs.rmSync(outside, { recursive: true, force: true })
        assert.strictEqual(result.stdout, "in\nt\ncan-read\n", result.stderr)
        assert.deepStrictEqual(outsideFiles, [])
        assert.isFalse(fs.existsSync(path.join(os.tmpdir(), marker)))
        assert.strictEqual(fs.readFileSync(path.join(root, "inside.txt"), "utf8"), "in\n")
      })
    ))

  it.live.skipIf(!strictAvailable)("has no network, not even the host's loopback; standard mode has", () =>
    withWorkspace(() =>
      Effect.acquireUseRelease(
        Effect.promise(() =>
          new Promise<net.Server>((resolve) => {
            const server = net.createServer((socket) => socket.end("hello\n"))
            server.listen(0, "127.0.0.1", () => resolve(server))
          })
        ),
        (server) =>
          Effect.gen(function*() {
            const port = (server.address() as net.AddressInfo).port
            const command = `exec 3<>/dev/tcp/127.0.0.1/${port} && head -n1 <&3 || echo refused`
            const standard = yield* bash.handler({ command })
            assert.strictEqual(standard.stdout, "hello\n")
            const sandboxed = yield* strict.handler({ command })
            assert.strictEqual(sandboxed.stdout, "refused\n")
            const interfaces = yield* strict.handler({ command: "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '" })
            assert.strictEqual(interfaces.stdout.trim(), "lo")
          }),
        (server) => Effect.promise(() => new Promise<void>((resolve) => server.close(() => resolve())))
      )
    ))

  it.live.skipIf(!strictAvailable)("cannot remount, even as root, and no process outlives the call", () =>
    withWorkspace((root) =>
      Effect.gen(function*() {
        const result = yield* strict.handler({
          command: `mount -o remount,rw / 2>/dev/null && echo REMOUNTED; setsid sleep 1000 & ${pidRef("$!")} > escaped.pid; echo done`
        })
        assert.strictEqual(result.stdout, "done\n")
        const escaped = yield* readPid(path.join(root, "escaped.pid"))
        const survived = isRunning(escaped)
        killRef(escaped)
        assert.isFalse(survived)
      })
    ))
})
