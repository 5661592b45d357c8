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
 *   `tinyagents durable cancel <runId> ... [--reason ...]`: cancel a durable run (`DurableAgent.cancel`).
 *   `tinyagents durable status <runId> ...`: whether the run is running (with the calls waiting for
 *   approval), finished or failed, read with `SELECT`s only (`internal/durableJournal.ts`). A journal
 *   that is empty, not a journal or cannot be opened: exit 1, one line (no stack, no password).
 *
 * Exit codes: 0 success, 1 a failed call (or definitions that cannot be exported, or a module layer
 * that fails), 2 a usage error (bad flags or arguments, unknown tool, a module that cannot be loaded
 * or is not a tools module), 130 interrupted. {@link run} runs the command line on an argument list
 * (`Command.runWith`); {@link exitCode} maps its exit to the process exit code; {@link layer}
 * provides what `effect/cli` needs on Node without `@effect/platform-node`. `bin.ts` wires them to
 * the process.
 */
import { Cause, Console, Context, Data, Effect, Exit, FileSystem, Layer, Logger, Option, Path, Redacted, Result, Runtime, Sink, Stdio, Stream, Terminal } from "effect"
import { Argument, CliConfig, CliError, CliOutput, Command, Flag, GlobalFlag, TerminalCapabilities } from "effect/cli"
import { ChildProcessSpawner } from "effect/process"
import type * as DurableJournal from "./internal/durableJournal.ts"
import { randomUUID } from "node:crypto"
import { statSync } from "node:fs"
import { resolve } from "node:path"
import { pathToFileURL } from "node:url"
import * as Safety from "../contract/Safety.ts"
import * as Tool from "../contract/Tool.ts"
import type { ToolCall } from "../contract/ToolCall.ts"
import * as ToolEvent from "../contract/ToolEvent.ts"
import * as ToolRegistry from "../contract/ToolRegistry.ts"
import * as ToolResult from "../contract/ToolResult.ts"
import * as Anthropic from "../providers/Anthropic.ts"
import * as Gemini from "../providers/Gemini.ts"
import * as Mcp from "../providers/Mcp.ts"
import * as OpenAiChat from "../providers/OpenAiChat.ts"
import * as OpenAiResponses from "../providers/OpenAiResponses.ts"
import type { ProviderExportError } from "../providers/ProviderExportError.ts"
import { EventSink } from "../runtime/EventSink.ts"
import * as McpConnect from "../mcp/McpConnect.ts"
import * as McpServe from "../mcp/McpServe.ts"
import * as Executor from "../runtime/Executor.ts"
import { RunContext } from "../runtime/RunContext.ts"
import { StoreRegistry } from "../runtime/StoreRegistry.ts"

// ---------------------------------------------------------------------------
// errors and exit codes
// ---------------------------------------------------------------------------

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

/**
 * The process exit code for the outcome of {@link run}: 0 success, 130 interrupted, 2 for
 * `effect/cli` parse errors (help shown with the errors, or a command that needs a subcommand), else
 * the failure's `Runtime.errorExitCode` (2 {@link UsageError}, 1 {@link CommandFailed} and
 * {@link CallFailed}), else 1.
 */
export const exitCode = (exit: Exit.Exit<unknown, unknown>): number => {
  if (Exit.isSuccess(exit)) return 0
  if (Cause.hasInterruptsOnly(exit.cause)) return 130
  const error = Cause.squash(exit.cause)
  if (CliError.isCliError(error)) return usageExitCode
  return Runtime.getErrorExitCode(error)
}

// ---------------------------------------------------------------------------
// tools modules
// ---------------------------------------------------------------------------

/** A loaded tools module: its registry, and the `layer` it exports (if any). */
export interface ToolsModule {
  /** Absolute path of the module file. */
  readonly path: string
  readonly registry: ToolRegistry.ToolRegistry<unknown>
  /** The module's `layer` export: the services its tools need. */
  readonly layer: Layer.Layer<unknown, unknown, unknown> | undefined
}

const isRegistry = (u: unknown): u is ToolRegistry.ToolRegistry<unknown> =>
  typeof u === "object" && u !== null && Array.isArray((u as ToolRegistry.ToolRegistry).names) &&
  Array.isArray((u as ToolRegistry.ToolRegistry).entries) && Array.isArray((u as ToolRegistry.ToolRegistry).specs) &&
  typeof (u as ToolRegistry.ToolRegistry).get === "function"

const describeValue = (u: unknown): string =>
  u === null
    ? "null"
    : Array.isArray(u)
    ? "an array"
    : Effect.isEffect(u)
    ? "an Effect"
    : `${/^[aeiou]/.test(typeof u) ? "an" : "a"} ${typeof u}`

const errorText = (error: unknown): string => error instanceof Error ? error.message : String(error)

/**
 * Why a tools module could not be imported. A Node that does not strip TypeScript types (before
 * 22.18) refuses a `.ts` module with "Unknown file extension": say which Node is needed.
 */
export const loadErrorText = (path: string, error: unknown): string => {
  const code = typeof error === "object" && error !== null ? (error as { readonly code?: unknown }).code : undefined
  if (code === "ERR_UNKNOWN_FILE_EXTENSION" && /\.[mc]?ts$/.test(path)) {
    return `${errorText(error)} (this Node, ${process.version}, cannot load TypeScript: run the tools module with Node 24 or later, e.g. through npx or an npm script in a project that has the node devDependency, or compile it to .js)`
  }
  return errorText(error)
}

/**
 * Imports a tools module (`.ts` on Node 24 or later, which strips types, or `.js`) from `path`,
 * resolved against the working directory. Fails with a {@link UsageError} when the file does not
 * exist, cannot be imported, has no default export, its default export is neither a
 * `ToolRegistry` nor an array of tools (or the tools do not make a valid registry), or it exports a
 * `layer` that is not a `Layer`.
 */
export const load = (path: string): Effect.Effect<ToolsModule, UsageError> =>
  Effect.gen(function*() {
    const absolute = resolve(path)
    const isFile = yield* Effect.sync(() => statSync(absolute, { throwIfNoEntry: false })?.isFile() === true)
    if (!isFile) return yield* new UsageError({ detail: `tools module not found: ${path}` })
    const exports = yield* Effect.tryPromise({
      try: () => import(pathToFileURL(absolute).href) as Promise<Record<string, unknown>>,
      catch: (error) => new UsageError({ detail: `cannot load tools module ${path}: ${loadErrorText(path, error)}` })
    })
    const expected = "export default a ToolRegistry or an array of tools"
    if (!("default" in exports) || exports.default === undefined) {
      return yield* new UsageError({ detail: `tools module ${path} has no default export (${expected})` })
    }
    const value = exports.default
    let registry: ToolRegistry.ToolRegistry<unknown>
    if (isRegistry(value)) {
      registry = value
    } else if (Array.isArray(value)) {
      const notTools = value.flatMap((tool, index) => Tool.isTool(tool) ? [] : [index])
      if (notTools.length > 0) {
        return yield* new UsageError({
          detail: `tools module ${path}: the default export is an array, but item${notTools.length > 1 ? "s" : ""} ${
            notTools.join(", ")
          } ${notTools.length > 1 ? "are" : "is"} not a tool (make tools with Tool.make or Tool.fromJsonSchema)`
        })
      }
      const made = ToolRegistry.makeResult(value as ReadonlyArray<Tool.Any>)
      if (Result.isFailure(made)) return yield* new UsageError({ detail: `tools module ${path}: ${made.failure.message}` })
      registry = made.success
    } else {
      return yield* new UsageError({
        detail: `tools module ${path}: the default export is ${describeValue(value)} (${expected}${
          Effect.isEffect(value) ? "; export the registry itself, e.g. Result.getOrThrow(ToolRegistry.makeResult(tools))" : ""
        })`
      })
    }
    const layer = exports.layer
    if (layer !== undefined && !Layer.isLayer(layer)) {
      return yield* new UsageError({
        detail: `tools module ${path}: the export "layer" is ${describeValue(layer)}, not a Layer`
      })
    }
    return { path: absolute, registry, layer: layer as Layer.Layer<unknown, unknown, unknown> | undefined }
  })

// ---------------------------------------------------------------------------
// tools
// ---------------------------------------------------------------------------

/** The safety metadata of a spec, with defaults applied (what `tools --json` prints per tool). */
export interface ToolSummary {
  readonly name: string
  readonly originalName?: string
  readonly description: string
  readonly safety: {
    readonly access: Safety.Access
    readonly idempotent: boolean
    readonly networked: boolean
    readonly filesystem: boolean | { readonly workspaceRoot?: string }
    readonly shell: boolean
    readonly spend: boolean
    readonly requiresConfirmation: boolean
    readonly destructive: boolean
    readonly tags: ReadonlyArray<string>
    readonly redact?: { readonly keys: ReadonlyArray<string>; readonly patterns: ReadonlyArray<string> }
  }
  /** `idempotent`, `keyed` (an idempotency key) or `none`. */
  readonly idempotency: "idempotent" | "keyed" | "none"
  /** Hidden services the handler uses. */
  readonly injected: ReadonlyArray<string>
}

/** The summary of one tool: safety metadata with its defaults applied. */
export const summarize = (spec: Tool.ToolSpec): ToolSummary => {
  const s = spec.safety
  const redact = s.redact
  return {
    name: spec.name,
    ...(spec.originalName === undefined ? {} : { originalName: spec.originalName }),
    description: spec.description,
    safety: {
      access: Safety.accessOf(s),
      idempotent: Safety.isIdempotent(s),
      networked: s.networked === true,
      filesystem: s.filesystem ?? false,
      shell: s.shell === true,
      spend: s.spend === true,
      requiresConfirmation: s.requiresConfirmation === true,
      destructive: Safety.toMcpAnnotations(s).destructiveHint,
      tags: s.tags ?? [],
      ...(redact === undefined ? {} : {
        redact: { keys: redact.keys ?? [], patterns: (redact.patterns ?? []).map(String) }
      })
    },
    idempotency: spec.idempotency,
    injected: spec.injected
  }
}

const flagsOf = (summary: ToolSummary): string => {
  const s = summary.safety
  const flags = [
    s.idempotent ? "idempotent" : undefined,
    summary.idempotency === "keyed" ? "keyed" : undefined,
    s.networked ? "networked" : undefined,
    s.filesystem === false ? undefined : typeof s.filesystem === "object" && s.filesystem.workspaceRoot !== undefined
      ? `filesystem(${s.filesystem.workspaceRoot})`
      : "filesystem",
    s.shell ? "shell" : undefined,
    s.spend ? "spend" : undefined,
    s.requiresConfirmation ? "confirm" : undefined,
    s.destructive ? "destructive" : undefined,
    ...s.tags.map((tag) => `#${tag}`)
  ].filter((flag): flag is string => flag !== undefined)
  return flags.length === 0 ? "-" : flags.join(",")
}

/** The `tools` table: one row per tool (name, access, safety flags, first line of the description). */
export const formatTools = (summaries: ReadonlyArray<ToolSummary>): string => {
  const rows = [
    ["TOOL", "ACCESS", "SAFETY", "DESCRIPTION"],
    ...summaries.map((t) => [
      t.originalName === undefined ? t.name : `${t.name} (${t.originalName})`,
      t.safety.access,
      flagsOf(t),
      t.description.split("\n")[0]!
    ])
  ]
  const widths = [0, 1, 2].map((column) => Math.max(...rows.map((row) => row[column]!.length)))
  return rows.map((row) => row.map((cell, column) => column < 3 ? cell.padEnd(widths[column]!) : cell).join("  ").trimEnd())
    .join("\n")
}

const moduleArgument = Argument.String("module").pipe(
  Argument.withDescription("Path of a tools module (.ts or .js): its default export is a ToolRegistry or an array of tools")
)

const toolsCommand = Command.make("tools", {
  module: moduleArgument,
  json: Flag.Boolean("json").pipe(Flag.withDescription("Print the list as JSON"), Flag.withDefault(false))
}, ({ json, module }) =>
  Effect.gen(function*() {
    const loaded = yield* load(module)
    const summaries = loaded.registry.specs.map(summarize)
    yield* Console.log(json ? JSON.stringify(summaries, null, 2) : formatTools(summaries))
  })).pipe(
    Command.withDescription(
      "List the tools of a tools module with their safety metadata: access level (read < write < network < mutate) and flags (idempotent, keyed, networked, filesystem, shell, spend, confirm, destructive, #tags)."
    ),
    Command.withExamples([
      { command: "tinyagents tools ./tools.ts", description: "A table, one tool per line" },
      { command: "tinyagents tools ./tools.ts --json", description: "The same as JSON, defaults applied" }
    ])
  )

// ---------------------------------------------------------------------------
// schema
// ---------------------------------------------------------------------------

/** The wire formats `schema --dialect` exports to. */
export const dialects = ["openai-chat", "openai-responses", "anthropic", "gemini", "mcp"] as const
export type Dialect = typeof dialects[number]

const strictDialects: ReadonlyArray<Dialect> = ["openai-chat", "openai-responses", "anthropic"]

/**
 * The tool definitions `dialect` receives for `specs` (each provider's `toolDefinitions` with its
 * defaults). `strict` requires strict mode (`strict: "require"`): a tool it cannot express fails
 * the export. OpenAI's default is already strict where the schema allows it (`"auto"`).
 */
export const definitions = (
  specs: ReadonlyArray<Tool.ToolSpec>,
  dialect: Dialect,
  strict: boolean
): Result.Result<ReadonlyArray<unknown>, ProviderExportError> => {
  switch (dialect) {
    case "openai-chat":
      return OpenAiChat.toolDefinitionsResult(specs, strict ? { strict: "require" } : {})
    case "openai-responses":
      return OpenAiResponses.toolDefinitionsResult(specs, strict ? { strict: "require" } : {})
    case "anthropic":
      return Anthropic.toolDefinitionsResult(specs, strict ? { strict: "require" } : {})
    case "gemini":
      return Gemini.toolDefinitionsResult(specs)
    case "mcp":
      return Mcp.toolDefinitionsResult(specs)
  }
}

const schemaCommand = Command.make("schema", {
  module: moduleArgument,
  dialect: Flag.Literals("dialect", dialects).pipe(
    Flag.withAlias("d"),
    Flag.withDescription("The provider wire format (default: openai-chat)"),
    Flag.withDefault("openai-chat")
  ),
  strict: Flag.Boolean("strict").pipe(
    Flag.withDescription(
      "Require strict mode (openai-chat, openai-responses, anthropic): every tool strict, or fail naming the tool that cannot be"
    ),
    Flag.withDefault(false)
  )
}, ({ dialect, module, strict }) =>
  Effect.gen(function*() {
    if (strict && !strictDialects.includes(dialect)) {
      return yield* new UsageError({
        detail: `--strict applies to ${strictDialects.join(", ")}; ${dialect} has no strict mode`
      })
    }
    const loaded = yield* load(module)
    const exported = definitions(loaded.registry.specs, dialect, strict)
    if (Result.isFailure(exported)) return yield* new CommandFailed({ detail: exported.failure.message })
    yield* Console.log(JSON.stringify(exported.success, null, 2))
  })).pipe(
    Command.withDescription(
      "Print, as JSON, the tool definitions a provider receives for the tools of a tools module (what the provider's toolDefinitions returns)."
    ),
    Command.withExamples([
      { command: "tinyagents schema ./tools.ts", description: "OpenAI Chat Completions `tools` (strict where possible)" },
      { command: "tinyagents schema ./tools.ts --dialect anthropic --strict", description: "Anthropic tools, all strict" },
      { command: "tinyagents schema ./tools.ts --dialect mcp", description: "MCP tools/list entries" }
    ])
  )

// ---------------------------------------------------------------------------
// call
// ---------------------------------------------------------------------------

/** How `call` prints events on stderr. */
export const eventFormats = ["text", "jsonl", "none"] as const
export type EventFormat = typeof eventFormats[number]

/** The cause inside a `ToolDefect` or `MiddlewareFailed` (a throw, a die, a missing service), which their message leaves out. */
const innerCause = (error: unknown): Cause.Cause<unknown> | undefined => {
  if (typeof error !== "object" || error === null) return undefined
  const { _tag, cause } = error as { readonly _tag?: unknown; readonly cause?: unknown }
  return (_tag === "ToolDefect" || _tag === "MiddlewareFailed") && Cause.isCause(cause) ? cause : undefined
}

/** One line of text for a tool event (what `call --events text` prints). */
export const formatEvent = (event: ToolEvent.Event): string => {
  switch (event._tag) {
    case "tool.started":
      return `started   ${event.toolName} ${event.toolCallId} ${JSON.stringify(event.arguments)}${
        event.idempotencyKey === undefined ? "" : ` (key ${event.idempotencyKey})`
      }`
    case "tool.completed":
      return `completed ${event.toolName} ${event.toolCallId} in ${event.elapsed} ms${
        event.isError ? " (error result)" : ""
      }${event.artifacts.map((a) => `, artifact ${a.store}/${a.key} (${a.bytes} bytes)`).join("")}`
    case "tool.failed": {
      const line =
        `failed    ${event.toolName} ${event.toolCallId} after ${event.elapsed} ms [${event.disposition}, ${event.reason}] ${event.error.message}`
      const inner = innerCause(event.error)
      return inner === undefined ? line : `${line}\n${Cause.pretty(inner).split("\n").map((l) => `    ${l}`).join("\n")}`
    }
    case "tool.rejected":
      return `rejected  ${event.toolName} ${event.toolCallId} [${event.error.disposition}] ${event.error.message}`
    case "tool.retrying":
      return `retrying  ${event.toolName} ${event.toolCallId} attempt ${event.attempt} in ${event.delay} ms (${event.error.message})`
    case "tool.artifact_stored":
      return `artifact  ${event.toolName} ${event.toolCallId} stored as ${event.artifact.store}/${event.artifact.key}`
    case "tool.audit":
      return `audit     ${event.toolName} ${event.toolCallId} ${event.audit.layers.map((l) => `${l.name}:${l.status}`).join(" ")}${
        event.audit.summary === undefined ? "" : ` (${event.audit.summary})`
      }`
    case "tool.progress": {
      const count = event.count === undefined ? "" : ` ${event.count}${event.total === undefined ? "" : `/${event.total}`}`
      const fraction = event.fraction === undefined ? "" : ` (${Math.round(event.fraction * 100)}%)`
      return `progress  ${event.toolName} ${event.toolCallId}${count}${fraction}${event.message === undefined ? "" : ` ${event.message}`}`
    }
    case "agent.text_delta":
    case "agent.tool_call":
    case "agent.turn_started":
    case "agent.model_responded":
    case "agent.finished":
      return event._tag
    case "agent.approval_requested":
      return `approval  ${event.toolName} ${event.toolCallId} ${JSON.stringify(event.arguments)} waits for a decision`
  }
}

const sinkFor = (format: EventFormat): EventSink["Service"] =>
  EventSink.of({
    emit: (event) =>
      format === "none"
        ? Effect.void
        : format === "jsonl"
        ? Effect.flatMap(ToolEvent.encodeJson(event), (line) => Console.error(line))
        : Console.error(formatEvent(event))
  })

/** Services `effect/cli` needs that no tool may see (the stand-ins of {@link layer}). */
const hideCliServices = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.updateContext(effect, (context: Context.Context<R>) =>
    Context.omit(FileSystem.FileSystem, Terminal.Terminal, ChildProcessSpawner.ChildProcessSpawner, Stdio.Stdio)(
      context
    ) as Context.Context<R>)

/**
 * Provides what running the module's tools needs: our event sink (first, so a module cannot take
 * the events away), the module's `layer`, then a fresh `RunContext` and a memory `StoreRegistry`
 * (which the module's layer may use or replace). The module's layer is trusted to provide what its
 * tools need; a service it lacks is a defect naming the service.
 */
const withModuleServices = <A, E, R>(
  effect: Effect.Effect<A, E, R>,
  loaded: ToolsModule,
  events: EventFormat
): Effect.Effect<A, E | unknown> => {
  const base = Layer.mergeAll(
    RunContext.layer({ threadId: "cli", runId: `cli-${randomUUID()}`, turn: 0 }),
    StoreRegistry.layerMemory
  )
  const withSink = Effect.provideService(effect, EventSink, sinkFor(events))
  const withModule = loaded.layer === undefined
    ? withSink
    : Effect.provide(withSink, loaded.layer as unknown as Layer.Layer<never>)
  return Effect.provide(withModule, base) as Effect.Effect<A, E | unknown>
}

const describeFailure = (cause: Cause.Cause<unknown>): string => {
  const found = Cause.findError(cause)
  if (Result.isFailure(found) || !(found.success instanceof Error)) return Cause.pretty(cause)
  const inner = innerCause(found.success)
  return inner === undefined ? found.success.message : `${found.success.message} (${errorText(Cause.squash(inner))})`
}

/**
 * Runs one call of `tool` with `input` (JSON text) through an executor over the module's registry,
 * with the module's `layer` (over a fresh `RunContext`, memory `StoreRegistry`) and events sent to
 * stderr as `events` says. Returns the result (an error result when the call was refused or its
 * handler failed repairably); fails with {@link CommandFailed} on a fatal error (with the error
 * result the executor made, whose text is what the model reads: `internal error in tool <name>` for
 * a defect) or a failing layer (with the layer's error).
 */
export const callTool = (
  loaded: ToolsModule,
  tool: string,
  input: string,
  events: EventFormat
): Effect.Effect<ToolResult.ToolResult, UsageError | CommandFailed> =>
  Effect.gen(function*() {
    const entry = ToolRegistry.get(loaded.registry, tool)
    if (entry === undefined) {
      return yield* new UsageError({
        detail: `unknown tool ${JSON.stringify(tool)}; the module has: ${loaded.registry.names.join(", ") || "(no tools)"}`
      })
    }
    const call: ToolCall = { id: "call_1", name: tool, arguments: input }
    // One call as a batch: a fatal error comes with the error result the model would read.
    const run = withModuleServices(
      Effect.flatMap(Executor.make(loaded.registry), (executor) =>
        executor.runBatch([call]).pipe(
          Effect.map((results) => results[0]!),
          Effect.catchTag("BatchFailed", ({ results }) => {
            const result = results[0]!
            return Effect.fail(
              new CommandFailed({ detail: `${entry.spec.name}: ${ToolResult.textOf(result)}`, result })
            )
          })
        )),
      loaded,
      events
    )
    return yield* run.pipe(
      Effect.catchCause((cause) => {
        if (Cause.hasInterruptsOnly(cause)) return Effect.failCause(cause as Cause.Cause<never>)
        const found = Cause.findError(cause)
        return Result.isSuccess(found) && found.success instanceof CommandFailed && found.success.result !== undefined
          ? Effect.fail(found.success)
          : Effect.fail(new CommandFailed({ detail: `${entry.spec.name}: ${describeFailure(cause)}` }))
      }),
      hideCliServices
    )
  })

const callCommand = Command.make("call", {
  module: moduleArgument,
  tool: Argument.String("tool").pipe(Argument.withDescription("The tool to call (canonical or original name)")),
  input: Flag.String("input").pipe(
    Flag.withAlias("i"),
    Flag.withDescription("The call's arguments as JSON text, an object (default: {})"),
    Flag.withDefault("{}")
  ),
  events: Flag.Literals("events", eventFormats).pipe(
    Flag.withDescription("How events are printed on stderr: a line of text each, JSON lines (ToolEvent's JSON), or not at all (default: text)"),
    Flag.withDefault("text")
  )
}, ({ events, input, module, tool }) =>
  Effect.gen(function*() {
    const loaded = yield* load(module)
    const result = yield* callTool(loaded, tool, input, events).pipe(
      Effect.tapError((error) =>
        error._tag === "CommandFailed" && error.result !== undefined ? Console.log(ToolResult.textOf(error.result)) : Effect.void
      )
    )
    yield* Console.log(ToolResult.textOf(result))
    if (result.isError) return yield* new CallFailed({ result })
  })).pipe(
    Command.withDescription(
      "Run one call through the executor: the live events on stderr, the result (the text the model reads, also for a refused or failed call) on stdout. Exit code 1 when the call fails (refused arguments, a handler failure, a timeout, a defect)."
    ),
    Command.withExamples([
      { command: "tinyagents call ./tools.ts add --input '{\"a\":1,\"b\":2}'", description: "Prints 3" },
      { command: "tinyagents call ./tools.ts add -i '{\"a\":1,\"b\":2}' --events jsonl", description: "Events as JSON lines" }
    ])
  )

// ---------------------------------------------------------------------------
// mcp serve, mcp tools
// ---------------------------------------------------------------------------

/** Fails with {@link CommandFailed} for any failure but an interruption (a defect is shown with its cause). */
const failedAs = (what: string) => <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, CommandFailed, R> =>
  Effect.catchCause(effect, (cause) =>
    Cause.hasInterruptsOnly(cause)
      ? Effect.failCause(cause as Cause.Cause<never>)
      : Effect.fail(new CommandFailed({ detail: `${what}: ${describeFailure(cause)}` })))

const mcpServeCommand = Command.make("serve", {
  module: moduleArgument,
  http: Flag.Int("http").pipe(
    Flag.withDescription("Serve Streamable HTTP on this port (0 picks a free one) instead of stdio"),
    Flag.optional
  ),
  host: Flag.String("host").pipe(
    Flag.withDescription("The interface --http listens on (default: 127.0.0.1)"),
    Flag.withDefault("127.0.0.1")
  ),
  events: Flag.Literals("events", eventFormats).pipe(
    Flag.withDescription("How events are printed on stderr: a line of text each, JSON lines, or not at all (default: text)"),
    Flag.withDefault("text")
  )
}, ({ events, host, http, module }) =>
  Effect.gen(function*() {
    if (Option.isSome(http) && !(Number.isInteger(http.value) && http.value >= 0 && http.value <= 65535)) {
      return yield* new UsageError({ detail: `--http takes a port from 0 to 65535, not ${http.value}` })
    }
    if (Option.isNone(http)) {
      // stdio: the protocol owns stdout from the start, also while the tools module is imported.
      yield* Effect.sync(() => {
        console.log = console.error
        console.info = console.error
        console.debug = console.error
      })
    }
    const loaded = yield* load(module)
    const serve = Option.isNone(http)
      ? McpServe.runStdio(loaded.registry)
      : Effect.scoped(Effect.gen(function*() {
        const server = yield* McpServe.serveHttp(loaded.registry, { port: http.value, host })
        yield* Console.error(`tinyagents: serving ${loaded.registry.names.length} tool(s) over MCP at ${server.url}`)
        return yield* Effect.never
      }))
    yield* withModuleServices(serve, loaded, events).pipe(failedAs("mcp serve"), hideCliServices)
  })).pipe(
    Command.withDescription(
      "Serve the tools of a tools module over the Model Context Protocol: on stdin/stdout until the client closes stdin (events and logs on stderr), or over Streamable HTTP with --http until interrupted. Every call runs through the executor."
    ),
    Command.withExamples([
      { command: "tinyagents mcp serve ./tools.ts", description: "A stdio server (for an MCP client's server command)" },
      { command: "tinyagents mcp serve ./tools.ts --http 8080", description: "Streamable HTTP at http://127.0.0.1:8080/mcp" }
    ])
  )

const mcpToolsCommand = Command.make("tools", {
  url: Flag.String("url").pipe(Flag.withDescription("The server's Streamable HTTP endpoint"), Flag.optional),
  json: Flag.Boolean("json").pipe(Flag.withDescription("Print the list as JSON"), Flag.withDefault(false)),
  command: Argument.String("command").pipe(
    Argument.withDescription("After --: the command that starts a stdio server, and its arguments"),
    Argument.variadic()
  )
}, ({ command, json, url }) =>
  Effect.scoped(Effect.gen(function*() {
    const [program, ...args] = command
    if (Option.isSome(url) === (program !== undefined)) {
      return yield* new UsageError({ detail: "name one server: --url <url>, or -- <command> [args...]" })
    }
    if (Option.isSome(url) && !URL.canParse(url.value)) {
      return yield* new UsageError({ detail: `--url: not a URL: ${url.value}` })
    }
    const connection = yield* (Option.isSome(url)
      ? McpConnect.http({ url: url.value })
      : McpConnect.stdio({ command: program!, args })).pipe(failedAs("mcp tools"))
    const registry = yield* connection.registry
    for (const skipped of connection.skipped()) {
      yield* Console.error(`skipped ${JSON.stringify(skipped.name)}: ${skipped.reason}`)
    }
    const summaries = registry.specs.map(summarize)
    yield* Console.log(json ? JSON.stringify(summaries, null, 2) : formatTools(summaries))
    yield* connection.close
  }))).pipe(
    Command.withDescription(
      "Connect to an MCP server (a command to spawn, after --, or --url) and list its tools as tinyagents imports them: canonical names, and safety from the server's annotations (a tool without hints counts as mutate, destructive, networked)."
    ),
    Command.withExamples([
      {
        command: "tinyagents mcp tools -- npx -y @modelcontextprotocol/server-everything",
        description: "A stdio server"
      },
      { command: "tinyagents mcp tools --url http://127.0.0.1:8080/mcp --json", description: "A Streamable HTTP server, as JSON" }
    ])
  )

const mcpCommand = Command.make("mcp").pipe(
  Command.withDescription("The Model Context Protocol both ways: serve a tools module, or list a server's tools"),
  Command.withSubcommands([mcpServeCommand, mcpToolsCommand])
)

// ---------------------------------------------------------------------------
// durable
// ---------------------------------------------------------------------------

const noTools: ToolRegistry.ToolRegistry<never> = Result.getOrThrow(ToolRegistry.makeResult([]))

/** Where a durable agent's journal is: a SQLite file or a Postgres URL (exactly one). */
const journalFlags = {
  db: Flag.String("db").pipe(Flag.withDescription("The journal's SQLite file (Runner.layerSqlite)"), Flag.optional),
  postgres: Flag.String("postgres").pipe(
    Flag.withDescription("The journal's Postgres URL (Runner.layerPostgres)"),
    Flag.optional
  ),
  workflow: Flag.String("workflow").pipe(
    Flag.withAlias("w"),
    Flag.withDescription("The durable agent's name (DurableAgent.make({ name }))")
  )
}

type JournalFlags = { readonly db: Option.Option<string>; readonly postgres: Option.Option<string>; readonly workflow: string }

/** The journal the flags name (exactly one of --db, --postgres; a --db file must exist). */
const journalLocation = (flags: JournalFlags): Effect.Effect<DurableJournal.Location, UsageError> =>
  Effect.gen(function*() {
    if (Option.isSome(flags.db) === Option.isSome(flags.postgres)) {
      return yield* new UsageError({ detail: "name one journal: --db <sqlite file> or --postgres <url>" })
    }
    if (Option.isSome(flags.postgres)) {
      const url = flags.postgres.value
      if (!URL.canParse(url)) return yield* new UsageError({ detail: "--postgres: not a URL (postgres://user:password@host:port/db)" })
      return { _tag: "Postgres", url } as const
    }
    const db = Option.getOrThrow(flags.db)
    if (!(yield* Effect.sync(() => statSync(resolve(db), { throwIfNoEntry: false })?.isFile() === true))) {
      return yield* new UsageError({ detail: `--db: no such journal file: ${db}` })
    }
    return { _tag: "Sqlite", filename: resolve(db), given: db } as const
  })

/** `tinyagents/durable` and the CLI's journal reader, loaded on use (the other commands never load `@effect/platform-node`). */
const loadDurable = Effect.tryPromise({
  try: () => Promise.all([import("../durable/index.ts"), import("./internal/durableJournal.ts")]),
  catch: (error) => new CommandFailed({ detail: `cannot load tinyagents/durable (is @effect/platform-node installed?): ${errorText(error)}` })
})

/**
 * What the journal knows of run `runId` of the durable agent the flags name, read with `SELECT`s only
 * (`internal/durableJournal.ts`), and a handle on the agent (made with no tools: a client needs only
 * the workflow's name). Fails with {@link CommandFailed} (exit 1) for an unknown workflow or run, an
 * empty or table-less journal, or a journal that cannot be read, in one line without a password.
 */
const inspectRun = (flags: JournalFlags, runId: string) =>
  Effect.gen(function*() {
    const location = yield* journalLocation(flags)
    const [durable, journal] = yield* loadDurable
    const agent = durable.DurableAgent.make<never>({ name: flags.workflow, tools: noTools })
    const executionId = yield* agent.workflow.executionId({ runId, messages: [] })
    const state = yield* journal.withJournal(location, journal.runState({ workflow: agent.workflow._tag, runId, executionId }).pipe(
      Effect.mapError((error) => error instanceof journal.JournalError ? error : new journal.JournalError({ detail: `cannot read the journal ${journal.describe(location)}: ${errorText(error)}` }))
    )).pipe(Effect.mapError((error) => new CommandFailed({ detail: error.detail })))
    if (state._tag === "UnknownWorkflow") {
      return yield* new CommandFailed({
        detail: `no workflow ${JSON.stringify(flags.workflow)} in the journal ${journal.describe(location)} (${
          state.workflows.length === 0 ? "it has no runs" : `its workflows: ${state.workflows.join(", ")}`
        })`
      })
    }
    if (state._tag === "UnknownRun") {
      return yield* new CommandFailed({ detail: `no run ${JSON.stringify(runId)} of workflow ${JSON.stringify(flags.workflow)}` })
    }
    return { state, agent, durable, location, journal }
  })

/** The run's end, as `status` prints it. */
const endText = (state: DurableJournal.RunState): string => {
  if (state._tag === "Ended") return `ended: ${state.detail}`
  if (state._tag === "Cancelled") return `cancelled: ${state.reason}`
  if (state._tag === "Running") return state.cancelling === undefined ? "running" : `running, cancelling: ${state.cancelling}`
  if (state._tag !== "Finished") return "running"
  const outcome = state.outcome
  if (outcome._tag === "Finished") {
    return `finished (${outcome.result.reason}, ${outcome.result.turns} turns): ${outcome.result.text}`
  }
  return `failed (${outcome.reason}, ${outcome.turns} turns): ${outcome.error.message.split("\n")[0]}`
}

const durableApproveCommand = Command.make("approve", {
  ...journalFlags,
  runId: Argument.String("run-id").pipe(Argument.withDescription("The run (its runId)")),
  callId: Argument.String("call-id").pipe(Argument.withDescription("The tool call waiting for approval (its call id; `durable status` lists them)")),
  deny: Flag.Boolean("deny").pipe(Flag.withDescription("Refuse the call instead (the model reads --reason)"), Flag.withDefault(false)),
  reason: Flag.String("reason").pipe(Flag.withDescription("Why the call is refused (with --deny)"), Flag.optional),
  by: Flag.String("by").pipe(Flag.withDescription("Who decides (recorded as decidedBy)"), Flag.withDefault("cli"))
}, ({ by, callId, deny, reason, runId, ...flags }) =>
  Effect.gen(function*() {
    if (!deny && Option.isSome(reason)) return yield* new UsageError({ detail: "--reason goes with --deny" })
    const decision = deny
      ? { _tag: "Deny" as const, reason: Option.getOrElse(reason, () => "denied from the command line"), decidedBy: by }
      : { _tag: "Approve" as const, decidedBy: by }
    const { agent, durable, journal, location, state } = yield* inspectRun(flags, runId)
    const of = `call ${JSON.stringify(callId)} of run ${JSON.stringify(runId)}`
    if (state._tag !== "Running") {
      const how = state._tag === "Ended"
        ? "ended"
        : state._tag === "Cancelled"
        ? "been cancelled"
        : state.outcome._tag === "Finished"
        ? "finished"
        : "failed"
      return yield* new CommandFailed({ detail: `run ${JSON.stringify(runId)} has ${how}: nothing to decide for ${of}` })
    }
    const client = location._tag === "Sqlite"
      ? durable.Runner.layerSqliteClient({ filename: location.filename })
      : durable.Runner.layerPostgresClient({ url: Redacted.make(location.url) })
    const pendingIds = state.pending.map((p) => p.callId)
    yield* Effect.scoped(agent.approve(runId, callId, decision).pipe(Effect.provide(client))).pipe(
      // the agent's own check is the authority (the run may have moved on since the journal was read)
      Effect.catchTag("ApprovalNotPending", (error) =>
        Effect.fail(new CommandFailed({
          detail: error.reason === "not pending"
            ? `no pending approval for ${of} (${pendingIds.length === 0 ? "none pending" : `pending: ${pendingIds.join(", ")}`})`
            : error.reason === "already decided"
            ? `${of} is already decided (a decision stands; it cannot be changed)`
            : error.reason === "finished"
            ? `run ${JSON.stringify(runId)} has finished: nothing to decide for ${of}`
            : error.reason === "cancelled"
            ? `run ${JSON.stringify(runId)} has been cancelled: nothing to decide for ${of}`
            : `no pending approval for ${of} (the run has not been picked up by a runner yet)`
        }))),
      Effect.catchCause((cause) =>
        Cause.hasInterruptsOnly(cause) || Cause.squash(cause) instanceof CommandFailed
          ? Effect.failCause(cause as Cause.Cause<CommandFailed>)
          : Effect.fail(new CommandFailed({ detail: `cannot decide ${of} in ${journal.describe(location)}: ${journal.failureLine(location, cause)}` })))
    )
    yield* Console.log(`${deny ? "denied" : "approved"} ${callId} of run ${runId}`)
  })).pipe(
    Command.withDescription(
      "Decide a durable run's pending approval from any process connected to its journal: the decision is journaled, and the runner that owns the run (now, or once restarted) resumes it. The call then runs once (or, with --deny, is answered as refused). Refused (exit 1) when the journal has no such run of the workflow, the run has ended, or the call is not waiting for a decision (`durable status` lists the calls that are)."
    ),
    Command.withExamples([
      { command: "tinyagents durable approve run-1 call_7 --db journal.db --workflow mailer", description: "Approve on a SQLite journal" },
      {
        command: "tinyagents durable approve run-1 call_7 --postgres postgres://localhost/agents -w mailer --deny --reason 'not today'",
        description: "Refuse on a Postgres journal"
      }
    ])
  )

const durableCancelCommand = Command.make("cancel", {
  ...journalFlags,
  runId: Argument.String("run-id").pipe(Argument.withDescription("The run (its runId)")),
  reason: Flag.String("reason").pipe(Flag.withDescription("Why (what `result` reports: RunCancelled)"), Flag.withDefault("cancelled from the command line"))
}, ({ reason, runId, ...flags }) =>
  Effect.gen(function*() {
    const { agent, durable, journal, location, state } = yield* inspectRun(flags, runId)
    if (state._tag === "Finished" || state._tag === "Ended") {
      const how = state._tag === "Ended" ? "ended" : state.outcome._tag === "Finished" ? "finished" : "failed"
      return yield* new CommandFailed({ detail: `run ${JSON.stringify(runId)} has ${how}: nothing to cancel` })
    }
    const client = location._tag === "Sqlite"
      ? durable.Runner.layerSqliteClient({ filename: location.filename })
      : durable.Runner.layerPostgresClient({ url: Redacted.make(location.url) })
    yield* Effect.scoped(agent.cancel(runId, { reason }).pipe(Effect.provide(client))).pipe(
      // the agent's own check is the authority (the run may have ended since the journal was read)
      Effect.catchTag("RunNotCancellable", (error) =>
        Effect.fail(new CommandFailed({
          detail: error.reason === "finished"
            ? `run ${JSON.stringify(runId)} has finished: nothing to cancel`
            : `run ${JSON.stringify(runId)} has not been picked up by a runner yet: nothing to cancel`
        }))),
      Effect.catchCause((cause) =>
        Cause.hasInterruptsOnly(cause) || Cause.squash(cause) instanceof CommandFailed
          ? Effect.failCause(cause as Cause.Cause<CommandFailed>)
          : Effect.fail(new CommandFailed({ detail: `cannot cancel run ${JSON.stringify(runId)} in ${journal.describe(location)}: ${journal.failureLine(location, cause)}` })))
    )
    yield* Console.log(`cancelled run ${runId}`)
  })).pipe(
    Command.withDescription(
      "Cancel a durable run from any process connected to its journal: the cancellation is journaled, and the runner that owns the run (now, or once restarted) stops it: no new model turn or tool call starts, pending approvals stop waiting, calls already running finish. Cancelling a cancelled run again succeeds; refused (exit 1) when the journal has no such run of the workflow or the run has ended."
    ),
    Command.withExamples([
      { command: "tinyagents durable cancel run-1 --db journal.db --workflow mailer --reason 'wrong customer'", description: "Cancel a run on a SQLite journal" }
    ])
  )

const durableStatusCommand = Command.make("status", {
  ...journalFlags,
  runId: Argument.String("run-id").pipe(Argument.withDescription("The run (its runId)"))
}, ({ runId, ...flags }) =>
  Effect.gen(function*() {
    const { state } = yield* inspectRun(flags, runId)
    yield* Console.log(`${runId}: ${endText(state)}`)
    if (state._tag === "Running") {
      for (const p of state.pending) {
        yield* Console.log(`  waiting for approval: ${p.callId} ${p.toolName} ${JSON.stringify(p.arguments)}`)
      }
    }
  })).pipe(
    Command.withDescription(
      "Print whether a durable run is running (with the calls waiting for approval: call id, tool, redacted arguments), finished (with its answer) or failed. Reads the journal only (never writes to it); exit 1 for an unknown run or workflow."
    ),
    Command.withExamples([
      { command: "tinyagents durable status run-1 --db journal.db --workflow mailer", description: "A run on a SQLite journal" }
    ])
  )

const durableCommand = Command.make("durable").pipe(
  Command.withDescription("Durable agents (tinyagents/durable): decide a pending approval, cancel a run, or see a run's status"),
  Command.withSubcommands([durableApproveCommand, durableCancelCommand, durableStatusCommand])
)

// ---------------------------------------------------------------------------
// the command line
// ---------------------------------------------------------------------------

/** The `tinyagents` command and its subcommands. */
export const command = Command.make("tinyagents").pipe(
  Command.withDescription(
    "Inspect and run the tools of a tools module: a .ts or .js file whose default export is a ToolRegistry or an array of tools, and which may export `layer` (the services its tools need). Exit codes: 0 success, 1 a failed call, 2 a usage error."
  ),
  Command.withSubcommands([toolsCommand, schemaCommand, callCommand, mcpCommand, durableCommand])
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
