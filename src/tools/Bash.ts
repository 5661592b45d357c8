/**
 * The `bash` tool: runs one shell command in the workspace root, in its own
 * process group, and kills the whole group on timeout, on interruption and when
 * the command exits (no background process outlives a call). It owns the
 * time and output limits; it does not sandbox what the command may touch.
 * Its deadline is a `Clock` sleep (so `TestClock` drives it), and the tool
 * declares an executor timeout above the longest deadline it accepts, so the
 * command's own limit is the one that applies: a timed-out command is a
 * result (`timedOut: true`, output so far), never the executor's `ToolTimeout`.
 */
import { spawn } from "node:child_process"
import { Deferred, Effect, Option, Schema } from "effect"
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

/** A spawned shell: its pipes read into capped buffers, its `exit` and `close` as Deferreds. */
interface Running {
  readonly pid: number | undefined
  readonly stdout: CappedOutput
  readonly stderr: CappedOutput
  /** Completed when the shell exits (its code and signal), or with a defect when it could not be spawned. */
  readonly exited: Deferred.Deferred<{ readonly code: number | null; readonly signal: string | null }>
  /** Completed when every pipe of the shell is closed (or with the spawn defect). */
  readonly closed: Deferred.Deferred<void>
  /** Stops reading the pipes (a process that left the group may hold them open). */
  readonly stopReading: () => void
}

/**
 * Spawns `bash -c command` in `cwd` in a new process group. When the shell exits, whatever
 * it left in its group is killed at once (in the `exit` callback, with no gap for a new job).
 */
const spawnShell = (command: string, cwd: string): Running => {
  const child = spawn("bash", ["-c", command], { cwd, detached: true, stdio: ["ignore", "pipe", "pipe"] })
  const running: Running = {
    pid: child.pid,
    stdout: new CappedOutput(),
    stderr: new CappedOutput(),
    exited: Deferred.makeUnsafe(),
    closed: Deferred.makeUnsafe(),
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
    killGroup(child.pid)
    Deferred.doneUnsafe(running.exited, Effect.succeed({ code, signal }))
  })
  child.on("close", () => Deferred.doneUnsafe(running.closed, Effect.void))
  return running
}

/**
 * Runs `bash -c command` in `cwd` and returns once the shell has exited and its output is
 * read. The deadline is a `Clock` sleep (`Effect.timeoutOrElse`): when it fires, the group is
 * SIGKILLed and the result says `timedOut: true` with the output so far. Interruption SIGKILLs
 * the group too, and waits (at most 2 s) until the shell has exited.
 */
const run = (command: string, cwd: string, timeoutMillis: number): Effect.Effect<BashResult> =>
  Effect.acquireUseRelease(
    Effect.sync(() => spawnShell(command, cwd)),
    (running) =>
      Effect.gen(function*() {
        const timedOut = yield* Deferred.await(running.exited).pipe(
          Effect.as(false),
          Effect.timeoutOrElse({
            duration: timeoutMillis,
            orElse: () => Effect.as(Effect.sync(() => killGroup(running.pid)), true)
          })
        )
        // After SIGKILL the shell exits at once; the wait is bounded all the same.
        const exit = yield* Deferred.await(running.exited).pipe(Effect.timeoutOption(killWaitMillis))
        // Output still in the pipes is read for a short grace period, then reading stops: a
        // process that escaped the group (setsid) must not keep the call open.
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
    // Interrupted (or failed) while the shell runs: kill the group and wait until the shell has exited.
    (running) =>
      Effect.suspend(() => {
        if (Deferred.isDoneUnsafe(running.exited)) return Effect.sync(running.stopReading)
        killGroup(running.pid)
        return Deferred.await(running.exited).pipe(
          Effect.timeoutOption(killWaitMillis),
          Effect.exit,
          Effect.andThen(Effect.sync(running.stopReading))
        )
      })
  )

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
  // Above the command's own limit, so that limit always applies (and reports timedOut: true).
  timeout: `${maxTimeoutSeconds + timeoutGraceSeconds} seconds`,
  safety: { access: "mutate", idempotent: false, shell: true, requiresConfirmation: true, destructive: true },
  handler: Effect.fn("bash")(function*({ command, timeoutSeconds = defaultTimeoutSeconds }) {
    const { root } = yield* Workspace
    const seconds = Math.min(timeoutSeconds, maxTimeoutSeconds)
    return yield* run(command, root, Math.round(seconds * 1000))
  })
})
