/**
 * `tinyagents call <module> <tool> --input '<json>'`: one call through an executor over the
 * module's registry ({@link callTool}), the live events on stderr, the result (the text the model
 * reads) on stdout.
 */
import { Console, Effect } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import type { ToolCall } from "../../contract/ToolCall.ts"
import * as ToolRegistry from "../../contract/ToolRegistry.ts"
import * as ToolResult from "../../contract/ToolResult.ts"
import * as Executor from "../../runtime/Executor.ts"
import { CallFailed, CommandFailed, failedAs, UsageError } from "../internal/errors.ts"
import { type EventFormat, eventsFlag } from "../internal/events.ts"
import { hideCliServices, load, moduleArgument, type ToolsModule, withModuleServices } from "../internal/toolsModule.ts"

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
    return yield* run.pipe(failedAs(entry.spec.name), hideCliServices)
  })

/** `tinyagents call <module> <tool> [--input <json>] [--events <format>]`. */
export const callCommand = Command.make("call", {
  module: moduleArgument,
  tool: Argument.String("tool").pipe(Argument.withDescription("The tool to call (canonical or original name)")),
  input: Flag.String("input").pipe(
    Flag.withAlias("i"),
    Flag.withDescription("The call's arguments as JSON text, an object (default: {})"),
    Flag.withDefault("{}")
  ),
  events: eventsFlag
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
