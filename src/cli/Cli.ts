/**
 * The `tinyagents` command line, built with `effect/cli`: inspect and run the
 * tools of a *tools module* (a `.ts` or `.js` file whose default export is a
 * `ToolRegistry` or an array of tools, and which may export `layer`, the
 * services its tools need).
 *
 * - `tinyagents tools <module>`: the tools with their safety metadata;
 * - `tinyagents schema <module> [--dialect ...] [--strict]`: the tool definitions a provider receives, as JSON;
 * - `tinyagents call <module> <tool> --input '<json>'`: one call through the executor, events on
 *   stderr, the result on stdout (the text the model reads, also for a refused, failed or fatal call:
 *   `internal error in tool <name>` for a defect, whose own message is only in the events);
 * - `tinyagents mcp serve <module> [--http <port>]`: serve the tools over MCP (`McpServe`), on stdio
 *   or Streamable HTTP;
 * - `tinyagents mcp tools -- <command> [args...]` / `--url <url>`: list an MCP server's tools as they
 *   are imported (`McpConnect`);
 * - `tinyagents durable approve <runId> <callId> --db <file> | --postgres <url> --workflow <name>
 *   [--deny --reason ...]`: decide a durable run's pending approval from another process (exit 1,
 *   sending nothing, unless the run exists for that workflow, is unfinished and waits for that call);
 *   `tinyagents durable answer <runId> <callId> ... --json '<object>' | --decline [--reason ...]`: answer
 *   a tool call's question (`DurableAgent.answer`; an answer that does not match its schema: exit 1).
 *   `tinyagents durable cancel <runId> ... [--reason ...]`: cancel a durable run (`DurableAgent.cancel`).
 *   `tinyagents durable status <runId> ...`: whether the run is running (with the calls waiting for
 *   approval), finished or failed, read with `SELECT`s only (`internal/durableJournal.ts`). A journal
 *   that is empty, not a journal or cannot be opened: exit 1, one line (no stack, no password).
 * - `tinyagents inspect <source> [--port] [--allow-decisions]`: a local web page showing the runs of a
 *   JSON-lines events file, a SQLite audit database or a durable journal (docs/inspect.md).
 *
 * Exit codes: 0 success, 1 a failed call (or definitions that cannot be exported, or a module layer
 * that fails), 2 a usage error (bad flags or arguments, unknown tool, a module that cannot be loaded
 * or is not a tools module), 130 interrupted. {@link run} runs the command line on an argument list
 * (`Command.runWith`); {@link exitCode} maps its exit to the process exit code; {@link layer}
 * provides what `effect/cli` needs on Node without `@effect/platform-node`. `bin.ts` wires them to
 * the process.
 */
import { Cause, Console, Effect, Exit, FileSystem, Layer, Logger, Path, Runtime, Sink, Stdio, Stream, Terminal } from "effect"
import { CliConfig, CliError, CliOutput, Command, GlobalFlag, TerminalCapabilities } from "effect/cli"
import { ChildProcessSpawner } from "effect/process"
import { callCommand } from "./commands/call.ts"
import { durableCommand } from "./commands/durable.ts"
import { inspectCommand } from "./commands/inspect.ts"
import { mcpCommand } from "./commands/mcp.ts"
import { schemaCommand } from "./commands/schema.ts"
import { toolsCommand } from "./commands/tools.ts"
import { usageExitCode } from "./internal/errors.ts"

// One module per command group (commands/), what they share in internal/; the public surface is here.
export { callTool } from "./commands/call.ts"
export { definitions, type Dialect, dialects } from "./commands/schema.ts"
export { formatTools, summarize, type ToolSummary } from "./commands/tools.ts"
export { CallFailed, CommandFailed, usageExitCode, UsageError } from "./internal/errors.ts"
export { type EventFormat, eventFormats, formatEvent } from "./internal/events.ts"
export { load, loadErrorText, type ToolsModule } from "./internal/toolsModule.ts"

// ---------------------------------------------------------------------------
// exit codes
// ---------------------------------------------------------------------------

/**
 * The process exit code for the outcome of {@link run}: 0 success, 130 interrupted, 2 for
 * `effect/cli` parse errors (help shown with the errors, or a command that needs a subcommand), else
 * the failure's `Runtime.errorExitCode` (2 `UsageError`, 1 `CommandFailed` and `CallFailed`), else 1.
 */
export const exitCode = (exit: Exit.Exit<unknown, unknown>): number => {
  if (Exit.isSuccess(exit)) return 0
  if (Cause.hasInterruptsOnly(exit.cause)) return 130
  const error = Cause.squash(exit.cause)
  if (CliError.isCliError(error)) return usageExitCode
  return Runtime.getErrorExitCode(error)
}

// ---------------------------------------------------------------------------
// the command line
// ---------------------------------------------------------------------------

/** The `tinyagents` command and its subcommands. */
export const command = Command.make("tinyagents").pipe(
  Command.withDescription(
    "Inspect and run the tools of a tools module: a .ts or .js file whose default export is a ToolRegistry or an array of tools, and which may export `layer` (the services its tools need). Exit codes: 0 success, 1 a failed call, 2 a usage error."
  ),
  Command.withSubcommands([toolsCommand, schemaCommand, callCommand, mcpCommand, durableCommand, inspectCommand])
)

/** Built-in flags: `--help`/`-h`, `--version`/`-v`, `--completions`, `--log-level` (no `--wizard`: it needs a terminal). */
const builtIns = GlobalFlag.BuiltIns.filter((flag) => flag !== GlobalFlag.Wizard)

/** Help asked for goes to stdout; help shown for a usage error goes to stderr with the errors. */
const presenter: CliOutput.Presenter = {
  present: (event) =>
    Effect.gen(function*() {
      const { canColor } = yield* TerminalCapabilities.TerminalCapabilities
      const formatter = CliOutput.defaultFormatter({ colors: canColor })
      switch (event._tag) {
        case "Help":
          return yield* (event.reason === "Requested" ? Console.log : Console.error)(formatter.formatHelpDoc(event.helpDoc))
        case "InvalidInvocation":
          return yield* Console.error(`${formatter.formatHelpDoc(event.helpDoc)}\n${formatter.formatErrors(event.errors)}`)
        case "Version":
          return yield* Console.log(formatter.formatVersion(event.name, event.version))
      }
    })
}

/**
 * Runs the command line on `args` (`Command.runWith`, with this CLI's help presenter and built-in
 * flags; logs go to stderr). Errors are printed on stderr; map the exit with {@link exitCode}.
 */
export const run = (
  args: ReadonlyArray<string>,
  options: { readonly version: string }
): Effect.Effect<void, unknown, Command.Environment> =>
  Command.runWith(command, { version: options.version })(args).pipe(
    Effect.tapCause((cause) =>
      Cause.hasInterruptsOnly(cause) || !Runtime.getErrorReported(Cause.squash(cause))
        ? Effect.void
        : Console.error(Cause.pretty(cause))
    ),
    Effect.provideService(Logger.LogToStderr, true),
    Effect.provide([CliOutput.layerPresenter(presenter), CliConfig.layer({ builtIns })])
  )

const unavailable = (service: string) => Effect.die(new Error(`tinyagents: ${service} is not available to the command line`))

/**
 * What `effect/cli` needs on Node, from `effect` alone: `Path` (POSIX), `Stdio` over the process
 * (arguments, stdout, stderr, stdin) and stand-ins for `FileSystem`, `Terminal` and
 * `ChildProcessSpawner`, which the commands never use. Tool calls never see the stand-ins: a tool
 * that needs one of these services gets it from its module's `layer`.
 */
export const layer: Layer.Layer<Command.Environment> = Layer.mergeAll(
  Path.layer,
  FileSystem.layerNoop({}),
  Layer.succeed(
    Terminal.Terminal,
    Terminal.make({
      columns: Effect.sync(() => process.stdout.columns ?? 80),
      rows: Effect.sync(() => process.stdout.rows ?? 24),
      size: unavailable("terminal size"),
      readInput: unavailable("terminal input"),
      readLine: Effect.fail(new Terminal.QuitError({})),
      display: (text) => Effect.sync(() => void process.stdout.write(text))
    })
  ),
  Layer.succeed(ChildProcessSpawner.ChildProcessSpawner, ChildProcessSpawner.make(() => unavailable("spawning processes"))),
  Layer.succeed(
    Stdio.Stdio,
    Stdio.make({
      args: Effect.sync(() => process.argv.slice(2)),
      stdinIsTerminal: Effect.sync(() => process.stdin.isTTY === true),
      stdoutIsTerminal: Effect.sync(() => process.stdout.isTTY === true),
      stderrIsTerminal: Effect.sync(() => process.stderr.isTTY === true),
      stdout: () => Sink.forEach((chunk: string | Uint8Array) => Effect.sync(() => void process.stdout.write(chunk))),
      stderr: () => Sink.forEach((chunk: string | Uint8Array) => Effect.sync(() => void process.stderr.write(chunk))),
      stdin: Stream.fromAsyncIterable(process.stdin, (cause) => cause).pipe(
        Stream.map((chunk) => typeof chunk === "string" ? new TextEncoder().encode(chunk) : chunk as Uint8Array),
        Stream.orDie
      )
    })
  )
)
