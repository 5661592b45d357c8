/**
 * The `bash` tool: runs one shell command in the workspace root, in its own
 * process group, and kills the whole group on timeout, on interruption and when
 * the command exits (no background process outlives a call). It owns the
 * time and output limits; it does not sandbox what the command may touch.
 */
import { spawn } from "node:child_process"
import { Effect, Schema } from "effect"
import * as Tool from "../Tool.ts"
import { Workspace } from "./Workspace.ts"

/** Seconds a command may run when `timeoutSeconds` is not given. */
export const defaultTimeoutSeconds = 30

/** Longest timeout accepted; larger values are clamped to it. */
export const maxTimeoutSeconds = 300

/** Bytes kept of each of stdout and stderr; the rest is counted and dropped. */
export const maxOutputBytes = 64 * 1024

/** How long output is still read after the shell exits, for processes that escaped its group. */
const drainGraceMillis = 200

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

/**
 * Runs `bash -c command` in `cwd` in a new process group and resolves once its
 * output is closed. Timeout, exit and interruption all SIGKILL the group.
 */
const run = (command: string, cwd: string, timeoutMillis: number): Effect.Effect<BashResult> =>
  Effect.callback<BashResult>((resume) => {
    const child = spawn("bash", ["-c", command], { cwd, detached: true, stdio: ["ignore", "pipe", "pipe"] })
    const stdout = new CappedOutput()
    const stderr = new CappedOutput()
    const exitWaiters: Array<() => void> = []
    let timedOut = false
    let exited = false
    let settled = false
    let drainTimer: ReturnType<typeof setTimeout> | undefined
    const timer = setTimeout(() => {
      timedOut = true
      killGroup(child.pid)
    }, timeoutMillis)
    const settle = (effect: Effect.Effect<BashResult>): void => {
      clearTimeout(timer)
      clearTimeout(drainTimer)
      if (settled) return
      settled = true
      resume(effect)
    }
    child.stdout.on("data", (chunk: Buffer) => stdout.push(chunk))
    child.stderr.on("data", (chunk: Buffer) => stderr.push(chunk))
    child.on("error", (error) => settle(Effect.die(error)))
    // The shell is gone: kill what it left in its group so the pipes close. A process that left
    // the group (setsid) may hold them open: stop reading after a short grace period.
    child.on("exit", () => {
      exited = true
      killGroup(child.pid)
      drainTimer = setTimeout(() => {
        child.stdout.destroy()
        child.stderr.destroy()
      }, drainGraceMillis)
      for (const wake of exitWaiters) wake()
    })
    child.on("close", (code, signal) =>
      settle(Effect.succeed({
        exitCode: code,
        signal,
        stdout: stdout.text("stdout"),
        stderr: stderr.text("stderr"),
        stdoutOmittedBytes: stdout.omitted,
        stderrOmittedBytes: stderr.omitted,
        timedOut
      })))
    // Interrupted: kill the group and wait (at most 2 s) until the shell has exited.
    return Effect.suspend(() => {
      clearTimeout(timer)
      killGroup(child.pid)
      if (exited || child.pid === undefined) return Effect.void
      return Effect.callback<void>((wake) => {
        exitWaiters.push(() => wake(Effect.void))
      }).pipe(Effect.timeoutOption("2 seconds"), Effect.asVoid)
    })
  })

/** Runs a shell command in the workspace root. */
export const bash = Tool.make("bash", {
  description: "Run a command with `bash -c` in the workspace root and return its exit code, stdout and stderr. " +
    `Stdin is empty. Each of stdout and stderr is cut after ${maxOutputBytes} bytes (the cut is reported). ` +
    `The command is killed after \`timeoutSeconds\` (default ${defaultTimeoutSeconds}; values above ` +
    `${maxTimeoutSeconds} are clamped to ${maxTimeoutSeconds}); a timeout is not an error: the result has ` +
    "timedOut: true, exitCode null and the output so far. Every process left in the command's process group is " +
    "killed when it exits, times out or is cancelled, so background jobs do not survive the call. Side effects: " +
    "whatever the command does; it is not sandboxed beyond its working directory.",
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
  safety: { effect: "mutate", idempotent: false, shell: true, requiresConfirmation: true, destructive: true },
  handler: Effect.fn("bash")(function*({ command, timeoutSeconds = defaultTimeoutSeconds }) {
    const { root } = yield* Workspace
    const seconds = Math.min(timeoutSeconds, maxTimeoutSeconds)
    return yield* run(command, root, Math.round(seconds * 1000))
  })
})
