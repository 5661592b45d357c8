/**
 * The `bash` tool: runs one shell command in the workspace root with an explicit
 * environment (an allowlist, see `commandEnvironment`), inside a PID namespace
 * where the machine allows it (see `Containment`), and kills every process of the
 * call on timeout, on interruption and when the command exits: no process started
 * by a call outlives it. `make({ sandbox: "strict" })` also takes away the network
 * and makes everything outside the workspace read-only (bubblewrap). It owns the
 * time and output limits.
 * Its deadline is a `Clock` sleep (so `TestClock` drives it), and the tool
 * declares an executor timeout above the longest deadline it accepts, so the
 * command's own limit is the one that applies: a timed-out command is a
 * result (`timedOut: true`, output so far), never the executor's `ToolTimeout`.
 */
import { spawn } from "node:child_process"
import { randomUUID } from "node:crypto"
import { readdirSync, readFileSync } from "node:fs"
import { Data, Deferred, Effect, Option, Schema } from "effect"
import * as Tool from "../contract/Tool.ts"
import { Workspace } from "./Workspace.ts"

/** Seconds a command may run when `timeoutSeconds` is not given. */
export const defaultTimeoutSeconds = 30

/** Longest timeout accepted; larger values are clamped to it. */
export const maxTimeoutSeconds = 300

/** Bytes kept of each of stdout and stderr; the rest is counted and dropped. */
export const maxOutputBytes = 64 * 1024

/** How long output is still read after the shell exits, for processes that escaped its group. */
const drainGraceMillis = 200

/** How long the shell may take to exit once its group was killed (on timeout or interruption). */
const killWaitMillis = 2_000

/**
 * Seconds added to {@link maxTimeoutSeconds} for the tool's executor timeout: room to kill the
 * group, wait for the shell to exit and drain its output, so that the executor never cuts a call
 * before the command's own time limit has returned `timedOut: true` with the output so far.
 */
export const timeoutGraceSeconds = 10

/** What a finished (or timed-out) command produced. */
export interface BashResult {
  /** The exit status; `null` when a signal ended the command (e.g. the timeout's SIGKILL). */
  readonly exitCode: number | null
  readonly signal: string | null
  readonly stdout: string
  readonly stderr: string
  /** Bytes of output not returned because of the cap. */
  readonly stdoutOmittedBytes: number
  readonly stderrOmittedBytes: number
  readonly timedOut: boolean
}

/** Keeps the first `maxOutputBytes` of a stream and counts the rest. */
class CappedOutput {
  private readonly chunks: Array<Buffer> = []
  private kept = 0
  omitted = 0
  push(chunk: Buffer): void {
    const room = maxOutputBytes - this.kept
    if (room > 0) this.chunks.push(room >= chunk.length ? chunk : chunk.subarray(0, room))
    this.kept += Math.min(room, chunk.length)
    this.omitted += Math.max(0, chunk.length - Math.max(room, 0))
  }
  text(name: string): string {
    const text = Buffer.concat(this.chunks).toString("utf8")
    return this.omitted === 0 ? text : `${text}\n[${name} truncated: ${this.omitted} more bytes not shown]`
  }
}

/** Sends SIGKILL to every process in the group led by `pid`; a group already gone is fine. */
const killGroup = (pid: number | undefined): void => {
  if (pid === undefined) return
  try {
    process.kill(-pid, "SIGKILL")
  } catch {
    // ESRCH: nothing left in the group.
  }
}

// ---------------------------------------------------------------------------
// environment
// ---------------------------------------------------------------------------

/**
 * The variables a command gets from this process's environment, when set there: nothing else
 * is passed on (no API keys, tokens or other secrets), unless the tool's options name it.
 */
export const baseEnvironmentNames: ReadonlyArray<string> = [
  "PATH",
  "HOME",
  "USER",
  "LOGNAME",
  "LANG",
  "LC_ALL",
  "LC_CTYPE",
  "TZ",
  "TMPDIR"
]

/** `PATH` when this process has none. */
export const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

/** A variable set in every command's environment: a random id of the call (how the fallback finds its processes). */
export const callIdVariable = "TINYAGENTS_BASH_CALL"

/**
 * The environment a command starts with: {@link baseEnvironmentNames} and `inheritEnv` copied
 * from `parent` (when set), `PATH` defaulting to {@link defaultPath}, then `env` on top, then
 * {@link callIdVariable}.
 */
export const commandEnvironment = (
  options: Pick<BashOptions, "env" | "inheritEnv">,
  callId: string,
  parent: NodeJS.ProcessEnv = process.env
): Record<string, string> => {
  const environment: Record<string, string> = { PATH: defaultPath }
  for (const name of [...baseEnvironmentNames, ...(options.inheritEnv ?? [])]) {
    const value = parent[name]
    if (value !== undefined) environment[name] = value
  }
  return { ...environment, ...options.env, [callIdVariable]: callId }
}

// ---------------------------------------------------------------------------
// containment: what makes sure no process of a call outlives it
// ---------------------------------------------------------------------------

/**
 * How the processes of a call are held:
 * - `"pid-namespace"`: `unshare --pid --fork --kill-child --mount-proc` (util-linux, needs root):
 *   the command is PID 1 of a new PID namespace; when it exits or is killed, the kernel kills
 *   every process left in the namespace. No process can leave a PID namespace (`setsid`,
 *   `setpgid`, double forks, job control stay inside).
 * - `"bwrap"`: `bwrap --unshare-pid --die-with-parent` (bubblewrap, any user where it works):
 *   the same kernel guarantee.
 * - `"process-group"`: the fallback: the command's process group and session are killed, and
 *   (on Linux) every process whose environment still carries the call's {@link callIdVariable}.
 *   Best effort: a process that leaves the session and drops that variable (`setsid env -i ...`)
 *   survives.
 */
export type Containment = "pid-namespace" | "bwrap" | "process-group"

const probes = new Map<string, Promise<boolean>>()

/** Whether a program runs (`argv` exits 0 within 5 s); asked once per process for each `argv`. */
const probe = (argv: ReadonlyArray<string>): Promise<boolean> => {
  const key = argv.join("\0")
  let result = probes.get(key)
  if (result === undefined) {
    result = new Promise((resolve) => {
      try {
        const child = spawn(argv[0]!, argv.slice(1), { stdio: "ignore", timeout: 5_000 })
        child.on("error", () => resolve(false))
        child.on("exit", (code) => resolve(code === 0))
      } catch {
        resolve(false)
      }
    })
    probes.set(key, result)
  }
  return result
}

const unsharePrefix = ["unshare", "--pid", "--fork", "--kill-child", "--mount-proc"] as const
const bwrapPidPrefix = ["bwrap", "--dev-bind", "/", "/", "--proc", "/proc", "--unshare-pid", "--die-with-parent"] as const

let detected: Promise<Containment> | undefined

/**
 * The strongest containment that works on this machine, found once per process by running
 * `true` under each in turn: `pid-namespace`, then `bwrap`, then `process-group`.
 */
export const detectContainment = (): Promise<Containment> =>
  detected ??= (async () => {
    if (process.platform !== "linux") return "process-group"
    if (await probe([...unsharePrefix, "true"])) return "pid-namespace"
    if (await probe([...bwrapPidPrefix, "true"])) return "bwrap"
    return "process-group"
  })()

let strictAvailable: Promise<boolean> | undefined

/** Whether the strict sandbox (bubblewrap) works on this machine; found once per process. */
export const detectStrictSandbox = (): Promise<boolean> =>
  strictAvailable ??= process.platform === "linux"
    ? probe([...strictPrefix(process.cwd()), "true"])
    : Promise.resolve(false)

/**
 * The strict sandbox, with bubblewrap: a new PID, network (loopback only), IPC and UTS namespace;
 * the whole file system read-only except the workspace (read-write) and a private, empty `/tmp`;
 * a fresh `/dev` and `/proc`; all capabilities dropped (also as root, so nothing can be
 * remounted); killed with the tool (`--die-with-parent`).
 */
const strictPrefix = (root: string): Array<string> => [
  "bwrap",
  "--ro-bind", "/", "/",
  "--dev", "/dev",
  "--proc", "/proc",
  "--tmpfs", "/tmp",
  "--bind", root, root,
  "--chdir", root,
  "--unshare-pid",
  "--unshare-net",
  "--unshare-ipc",
  "--unshare-uts",
  // No `--new-session`: the namespace's init must stay in the call's process group, so that the
  // tool waits for it (and so for the whole namespace). The command has no terminal anyway: it
  // starts in a new session of its own (stdin /dev/null) and gets a fresh /dev.
  "--die-with-parent",
  ...(process.getuid?.() === 0 ? ["--cap-drop", "ALL"] : [])
]

/** A process as `/proc/<pid>/stat` shows it: its state, process group and session. */
interface ProcStat {
  readonly pid: number
  readonly state: string
  readonly pgrp: number
  readonly session: number
}

/** The processes of this machine (Linux `/proc`; empty elsewhere), zombies left out. */
const liveProcesses = (): Array<ProcStat> => {
  if (process.platform !== "linux") return []
  let names: Array<string>
  try {
    names = readdirSync("/proc").filter((name) => /^[0-9]+$/.test(name))
  } catch {
    return []
  }
  const processes: Array<ProcStat> = []
  for (const name of names) {
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8")
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
      const state = fields[0] ?? "X"
      if (state === "Z" || state === "X") continue
      processes.push({ pid: Number(name), state, pgrp: Number(fields[2]), session: Number(fields[3]) })
    } catch {
      // Gone meanwhile.
    }
  }
  return processes
}

/** True while `pid` exists and is not a zombie (PID 1 may never reap orphans: zombies count as dead). */
const isAlive = (pid: number): boolean => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    const state = stat.slice(stat.lastIndexOf(")") + 2)[0]
    return state !== "Z" && state !== "X"
  } catch {
    return false
  }
}

/** SIGKILLs `pid`; a process already gone is fine. */
const kill = (pid: number): void => {
  try {
    process.kill(pid, "SIGKILL")
  } catch {
    // ESRCH
  }
}

/**
 * On Linux, SIGKILLs every process in the session `sid` or whose environment carries
 * `marker` (`NAME=value`), in rounds until none is left (at most 20): the process-group
 * fallback's sweep. Returns the PIDs it signalled. Elsewhere does nothing.
 */
const sweep = (sid: number | undefined, marker: string): Array<number> => {
  const needle = Buffer.from(`${marker}\0`)
  const signalled: Array<number> = []
  for (let round = 0; round < 20; round++) {
    let found = 0
    for (const { pid, session } of liveProcesses()) {
      if (pid === process.pid) continue
      try {
        if ((sid !== undefined && session === sid) || readFileSync(`/proc/${pid}/environ`).includes(needle)) {
          kill(pid)
          signalled.push(pid)
          found++
        }
      } catch {
        // Gone meanwhile, or not ours to read.
      }
    }
    if (found === 0) break
  }
  return signalled
}

/** A spawned shell: its pipes read into capped buffers, its `exit` and `close` as Deferreds. */
interface Running {
  readonly pid: number | undefined
  readonly stdout: CappedOutput
  readonly stderr: CappedOutput
  /** Completed when the shell exits (its code and signal), or with a defect when it could not be spawned. */
  readonly exited: Deferred.Deferred<{ readonly code: number | null; readonly signal: string | null }>
  /** Completed when every pipe of the shell is closed (or with the spawn defect). */
  readonly closed: Deferred.Deferred<void>
  /** Kills every process of the call (the group, and the fallback's sweep). */
  readonly killAll: () => void
  /** The PIDs `killAll` signalled (Linux): the call is over once none of them runs. */
  readonly signalled: Set<number>
  /** Stops reading the pipes (a process that left the group may hold them open). */
  readonly stopReading: () => void
}

/** How one call starts its shell. */
interface Launch {
  /** Program and arguments put before `bash -c command`. */
  readonly prefix: ReadonlyArray<string>
  readonly sweep: boolean
  /**
   * Whether the launcher may exit before everything it started is gone (bwrap reports the
   * command's exit before its namespace init is dead): then the exit is followed by `killAll`
   * and a wait. `unshare --fork` exits only after its namespace is torn down.
   */
  readonly exitsEarly: boolean
  readonly env: Record<string, string>
  readonly marker: string
}

/**
 * Spawns `bash -c command` in `cwd` in a new process group and session, behind `launch.prefix`,
 * with exactly `launch.env` as its environment. When the launcher exits, whatever the call left
 * is killed at once (in the `exit` callback, with no gap for a new job): the group, and with the
 * fallback the sweep; in a PID namespace the kernel has already killed the rest.
 */
const spawnShell = (command: string, cwd: string, launch: Launch): Running => {
  const argv = [...launch.prefix, "bash", "-c", command]
  const child = spawn(argv[0]!, argv.slice(1), {
    cwd,
    detached: true,
    env: launch.env,
    stdio: ["ignore", "pipe", "pipe"]
  })
  const signalled = new Set<number>()
  const killAll = () => {
    // In a PID namespace the namespace's init is in this group: once it is dead, so is the namespace.
    if (child.pid !== undefined) for (const p of liveProcesses()) if (p.pgrp === child.pid) signalled.add(p.pid)
    killGroup(child.pid)
    if (launch.sweep) for (const pid of sweep(child.pid, launch.marker)) signalled.add(pid)
  }
  const running: Running = {
    pid: child.pid,
    stdout: new CappedOutput(),
    stderr: new CappedOutput(),
    exited: Deferred.makeUnsafe(),
    closed: Deferred.makeUnsafe(),
    killAll,
    signalled,
    stopReading: () => {
      child.stdout.destroy()
      child.stderr.destroy()
    }
  }
  child.stdout.on("data", (chunk: Buffer) => running.stdout.push(chunk))
  child.stderr.on("data", (chunk: Buffer) => running.stderr.push(chunk))
  child.on("error", (error) => {
    Deferred.doneUnsafe(running.exited, Effect.die(error))
    Deferred.doneUnsafe(running.closed, Effect.die(error))
  })
  child.on("exit", (code, signal) => {
    if (launch.exitsEarly) killAll()
    else killGroup(child.pid)
    Deferred.doneUnsafe(running.exited, Effect.succeed({ code, signal }))
  })
  child.on("close", () => Deferred.doneUnsafe(running.closed, Effect.void))
  return running
}

/**
 * Waits (real time, at most `killWaitMillis`) until no process `killAll` signalled is alive:
 * SIGKILL is not synchronous, and a namespace's init dies only after all its processes did.
 */
const waitGone = (running: Running): Effect.Effect<void> =>
  Effect.promise(async () => {
    const deadline = Date.now() + killWaitMillis
    while (Date.now() < deadline && [...running.signalled].some(isAlive)) {
      await new Promise((resolve) => setTimeout(resolve, 5))
    }
  })

/**
 * Runs `bash -c command` in `cwd` and returns once the shell has exited and its output is
 * read. The deadline is a `Clock` sleep (`Effect.timeoutOrElse`): when it fires, every process
 * of the call is SIGKILLed and the result says `timedOut: true` with the output so far.
 * Interruption kills them too, and waits (at most 2 s) until the shell has exited.
 */
const run = (command: string, cwd: string, timeoutMillis: number, launch: Launch): Effect.Effect<BashResult> =>
  Effect.acquireUseRelease(
    Effect.sync(() => spawnShell(command, cwd, launch)),
    (running) =>
      Effect.gen(function*() {
        const timedOut = yield* Deferred.await(running.exited).pipe(
          Effect.as(false),
          Effect.timeoutOrElse({
            duration: timeoutMillis,
            orElse: () => Effect.as(Effect.sync(running.killAll), true)
          })
        )
        // After SIGKILL the shell exits at once; the wait is bounded all the same.
        const exit = yield* Deferred.await(running.exited).pipe(Effect.timeoutOption(killWaitMillis))
        yield* waitGone(running)
        // Output still in the pipes is read for a short grace period, then reading stops: a
        // process that escaped (only possible with the process-group fallback) must not keep
        // the call open.
        yield* Deferred.await(running.closed).pipe(Effect.timeoutOption(drainGraceMillis))
        running.stopReading()
        return {
          exitCode: Option.isSome(exit) ? exit.value.code : null,
          signal: Option.isSome(exit) ? exit.value.signal : null,
          stdout: running.stdout.text("stdout"),
          stderr: running.stderr.text("stderr"),
          stdoutOmittedBytes: running.stdout.omitted,
          stderrOmittedBytes: running.stderr.omitted,
          timedOut
        }
      }),
    // Interrupted (or failed) while the shell runs: kill everything and wait until the shell has exited.
    (running) =>
      Effect.suspend(() => {
        if (Deferred.isDoneUnsafe(running.exited)) return Effect.sync(running.stopReading)
        running.killAll()
        return Deferred.await(running.exited).pipe(
          Effect.timeoutOption(killWaitMillis),
          Effect.exit,
          Effect.andThen(waitGone(running)),
          Effect.andThen(Effect.sync(running.stopReading))
        )
      })
  )

/**
 * The strict sandbox, or a containment named in the options, was asked for where it cannot run:
 * the call dies with this defect (it never runs the command with less isolation than asked).
 */
export class SandboxUnavailable extends Data.TaggedError("SandboxUnavailable")<{ readonly reason: string }> {
  override get message(): string {
    return `the bash sandbox asked for is not available: ${this.reason}`
  }
}

/** Options of {@link make}. */
export interface BashOptions {
  /**
   * Variables set in every command's environment, over the ones copied from this process.
   * Use it for what a command needs (e.g. `{ CI: "1" }`); secrets put here reach the command.
   */
  readonly env?: Readonly<Record<string, string>>
  /** Names copied from this process's environment besides {@link baseEnvironmentNames}, when set. */
  readonly inheritEnv?: ReadonlyArray<string>
  /**
   * `"standard"` (default): the command runs as this process's user, may read and write what
   * that user may, and use the network; no process outlives the call (see {@link Containment}).
   * `"strict"`: also no network (loopback only), the file system read-only except the workspace
   * and a private `/tmp`, no capabilities; needs bubblewrap (`bwrap`) on Linux. Where it cannot
   * run, every call dies with {@link SandboxUnavailable}: it never falls back to less.
   */
  readonly sandbox?: "standard" | "strict"
  /**
   * Which containment to use in the standard sandbox: `"auto"` (default) takes the strongest that
   * works ({@link detectContainment}); naming one fails the call when it is not available.
   */
  readonly containment?: "auto" | Containment
}

const describeSandbox = (sandbox: "standard" | "strict"): string =>
  sandbox === "strict"
    ? "It runs in a sandbox: no network (loopback only), the file system read-only except the workspace and a " +
      "private empty /tmp, no capabilities. "
    : "It runs as the tool's user, with that user's file and network access. "

/** The `bash` tool with `options`: its environment, sandbox and containment. */
export const make = (options: BashOptions = {}) => {
  const sandbox = options.sandbox ?? "standard"
  const unavailable = (reason: string) => Effect.die(new SandboxUnavailable({ reason }))
  /** How this call starts: the strict sandbox, or the chosen containment. */
  const launchFor = Effect.fnUntraced(function*(root: string): Effect.fn.Return<Launch> {
    const callId = randomUUID()
    const env = commandEnvironment(options, callId)
    const marker = `${callIdVariable}=${callId}`
    if (sandbox === "strict") {
      if (!(yield* Effect.promise(detectStrictSandbox))) {
        return yield* unavailable("the strict sandbox needs bubblewrap (bwrap), which is missing or does not work here")
      }
      // /tmp is a private tmpfs in the sandbox.
      return { prefix: strictPrefix(root), sweep: false, exitsEarly: true, env: { ...env, TMPDIR: "/tmp" }, marker }
    }
    const wanted = options.containment ?? "auto"
    const containment = wanted === "auto" ? yield* Effect.promise(detectContainment) : wanted
    if (containment === "pid-namespace") {
      if (!(yield* Effect.promise(() => probe([...unsharePrefix, "true"])))) {
        return yield* unavailable("`unshare --pid --fork --kill-child --mount-proc` does not work here (it needs root)")
      }
      return { prefix: unsharePrefix, sweep: false, exitsEarly: false, env, marker }
    }
    if (containment === "bwrap") {
      if (!(yield* Effect.promise(() => probe([...bwrapPidPrefix, "true"])))) {
        return yield* unavailable("bubblewrap (bwrap) is missing or does not work here")
      }
      return { prefix: bwrapPidPrefix, sweep: false, exitsEarly: true, env, marker }
    }
    return { prefix: [], sweep: true, exitsEarly: true, env, marker }
  })

  return Tool.make("bash", {
    description: "Run a command with `bash -c` in the workspace root and return its exit code, stdout and stderr. " +
      `Stdin is empty. Each of stdout and stderr is cut after ${maxOutputBytes} bytes (the cut is reported). ` +
      `The command is killed after \`timeoutSeconds\` (default ${defaultTimeoutSeconds}; values above ` +
      `${maxTimeoutSeconds} are clamped to ${maxTimeoutSeconds}); a timeout is not an error: the result has ` +
      "timedOut: true, exitCode null and the output so far. Every process the command started is killed when it " +
      "exits, times out or is cancelled, so background jobs do not survive the call. The environment holds only " +
      "PATH, HOME, USER, LOGNAME, LANG, LC_*, TZ, TMPDIR and what the operator configured. " +
      describeSandbox(sandbox) + "Side effects: whatever the command does.",
    input: Schema.Struct({
      command: Schema.String.check(Schema.isMinLength(1)).annotate({ description: "The bash command line to run" }),
      timeoutSeconds: Schema.optionalKey(
        Schema.Finite.check(Schema.isGreaterThan(0)).annotate({
          description: `Seconds before the command is killed (default ${defaultTimeoutSeconds}, at most ${maxTimeoutSeconds})`
        })
      )
    }),
    output: Schema.Struct({
      exitCode: Schema.NullOr(Schema.Number),
      signal: Schema.NullOr(Schema.String),
      stdout: Schema.String,
      stderr: Schema.String,
      stdoutOmittedBytes: Schema.Number,
      stderrOmittedBytes: Schema.Number,
      timedOut: Schema.Boolean
    }),
    services: [Workspace],
    // Above the command's own limit, so that limit always applies (and reports timedOut: true).
    timeout: `${maxTimeoutSeconds + timeoutGraceSeconds} seconds`,
    safety: { access: "mutate", idempotent: false, shell: true, requiresConfirmation: true, destructive: true },
    handler: Effect.fn("bash")(function*({ command, timeoutSeconds = defaultTimeoutSeconds }) {
      const { root } = yield* Workspace
      const seconds = Math.min(timeoutSeconds, maxTimeoutSeconds)
      const launch = yield* launchFor(root)
      return yield* run(command, root, Math.round(seconds * 1000), launch)
    })
  })
}

/** Runs a shell command in the workspace root: {@link make} with the default options. */
export const bash = make()
