/**
 * How a command fails, with its exit code: {@link UsageError} (2), {@link CommandFailed} and
 * {@link CallFailed} (1); and the one way a command turns any other failure into a
 * `CommandFailed` ({@link failWith}, {@link failedAs}). `Cli.ts` re-exports the errors.
 */
import { Cause, Data, Effect, Result, Runtime } from "effect"
import { CliError } from "effect/cli"
import type * as ToolResult from "../../contract/ToolResult.ts"

/** Exit code of a usage error: bad flags or arguments, an unknown tool, a module that is not a tools module. */
export const usageExitCode = 2

/**
 * The command was used wrongly: an unknown tool, a module that cannot be loaded or is not a tools
 * module, flags that do not go together. Printed as `ERROR` with the message; exit code 2.
 */
export class UsageError extends Data.TaggedError("UsageError")<{ readonly detail: string }> {
  override readonly [Runtime.errorExitCode] = usageExitCode
  override get message(): string {
    return this.detail
  }
  override get [CliError.userMessage](): string {
    return this.detail
  }
}

/**
 * The command ran and failed: definitions that cannot be exported, a fatal error of the call, a
 * module layer that fails. Printed as `ERROR` with the message; exit code 1. For a fatal error of
 * the call, `result` is the error result the executor made for it (`call` prints its text, what
 * the model reads, on stdout) and the message is that text: a defect's own message and stack are
 * only in the `tool.failed` event.
 */
export class CommandFailed extends Data.TaggedError("CommandFailed")<{
  readonly detail: string
  readonly result?: ToolResult.ToolResult
}> {
  override readonly [Runtime.errorExitCode] = 1
  override get message(): string {
    return this.detail
  }
  override get [CliError.userMessage](): string {
    return this.detail
  }
}

/**
 * The call produced an error result (`isError`). The result is on stdout and the events on
 * stderr already say why, so nothing more is printed; exit code 1.
 */
export class CallFailed extends Data.TaggedError("CallFailed")<{ readonly result: ToolResult.ToolResult }> {
  override readonly [Runtime.errorExitCode] = 1
  override readonly [Runtime.errorReported] = false
  override get message(): string {
    return `${this.result.name}: the call failed`
  }
}

/** The message of a thrown value. */
export const errorText = (error: unknown): string => error instanceof Error ? error.message : String(error)

/** The cause inside a `ToolDefect` or `MiddlewareFailed` (a throw, a die, a missing service), which their message leaves out. */
export const innerCause = (error: unknown): Cause.Cause<unknown> | undefined => {
  if (typeof error !== "object" || error === null) return undefined
  const { _tag, cause } = error as { readonly _tag?: unknown; readonly cause?: unknown }
  return (_tag === "ToolDefect" || _tag === "MiddlewareFailed") && Cause.isCause(cause) ? cause : undefined
}

/** A failure in one line: the error's message (with the cause inside a defect), or the whole cause when there is no error. */
const describeFailure = (cause: Cause.Cause<unknown>): string => {
  const found = Cause.findError(cause)
  if (Result.isFailure(found) || !(found.success instanceof Error)) return Cause.pretty(cause)
  const inner = innerCause(found.success)
  return inner === undefined ? found.success.message : `${found.success.message} (${errorText(Cause.squash(inner))})`
}

/**
 * Fails with a {@link CommandFailed} whose detail is `detail(cause)` for any failure but an
 * interruption or a `CommandFailed` already made, which go on as they are.
 */
export const failWith = (detail: (cause: Cause.Cause<unknown>) => string) =>
<A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, CommandFailed, R> =>
  Effect.catchCause(effect, (cause) => {
    if (Cause.hasInterruptsOnly(cause)) return Effect.failCause(cause as Cause.Cause<never>)
    const found = Cause.findError(cause)
    return Effect.fail(
      Result.isSuccess(found) && found.success instanceof CommandFailed
        ? found.success
        : new CommandFailed({ detail: detail(cause) })
    )
  })

/** {@link failWith} the detail `<what>: <the failure>` (a defect with its cause). */
export const failedAs = (what: string) => failWith((cause) => `${what}: ${describeFailure(cause)}`)
