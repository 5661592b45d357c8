/**
 * `tinyagents inspect <source>`: serves the run inspector (`src/cli/inspect/`) on 127.0.0.1 for a
 * JSON-lines events file, a SQLite audit database or a durable journal (a SQLite file or a Postgres
 * URL), prints its URL and runs until interrupted. `--allow-decisions` lets the page approve, deny,
 * answer (a tool's question) and cancel a durable run's calls (through `DurableAgent`, as
 * `tinyagents durable approve` / `answer` / `cancel` do).
 */
import { Console, Effect } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { CommandFailed, errorText, UsageError } from "../internal/errors.ts"

/** The inspector, loaded on use (its readers load `node:sqlite`, which the other commands never need). */
const loadInspector = Effect.tryPromise({
  try: () => Promise.all([import("../inspect/server.ts"), import("../inspect/sources.ts")]),
  catch: (error) => new CommandFailed({ detail: `cannot load the inspector: ${errorText(error)}` })
})

/** True for an interface only this machine reaches. */
const loopback = (host: string): boolean =>
  host === "localhost" || host === "::1" || host === "[::1]" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host)

/** `tinyagents inspect`. */
export const inspectCommand = Command.make("inspect", {
  source: Argument.String("source").pipe(
    Argument.withDescription("A JSON-lines events file, a SQLite audit database or durable journal, or a durable journal's postgres:// URL")
  ),
  port: Flag.Int("port").pipe(Flag.withDescription("The port (default: a free one)"), Flag.withDefault(0)),
  host: Flag.String("host").pipe(Flag.withDescription("The interface to listen on"), Flag.withDefault("127.0.0.1")),
  allowDecisions: Flag.Boolean("allow-decisions").pipe(
    Flag.withDescription("Let the page approve, deny, answer and cancel a durable run's calls"),
    Flag.withDefault(false)
  )
}, ({ allowDecisions, host, port, source }) =>
  Effect.scoped(Effect.gen(function*() {
    if (port < 0 || port > 65535) return yield* new UsageError({ detail: "--port: 0 to 65535" })
    // The page has no login: deciding from it is for the person at this machine only.
    if (allowDecisions && !loopback(host)) {
      return yield* new UsageError({ detail: "--allow-decisions: only on a loopback --host (127.0.0.1, ::1, localhost): the page has no login" })
    }
    const [Server, Sources] = yield* loadInspector
    const opened = yield* Sources.open(source, { allowDecisions }).pipe(
      Effect.mapError((error) => new CommandFailed({ detail: error.detail }))
    )
    if (allowDecisions && opened.kind !== "journal") {
      return yield* new UsageError({ detail: "--allow-decisions: only for a durable journal" })
    }
    const served = yield* Server.serve(opened, { port, host }).pipe(
      Effect.mapError((error) => new CommandFailed({ detail: error.detail }))
    )
    yield* Console.log(`tinyagents inspect: ${opened.kind} ${opened.label} at ${served.url} (Ctrl-C to stop)`)
    return yield* Effect.never
  }))).pipe(
    Command.withDescription(
      "Serve a local web page (127.0.0.1, nothing fetched from elsewhere) that shows the runs of a source: their turns, each tool call as a bar with its state and duration, a call's arguments, result, repair message and receipt (redacted values stay redacted), nested runs, usage per turn; for a durable run its journal, pending approvals and open questions. Runs until interrupted."
    ),
    Command.withExamples([
      { command: "tinyagents inspect events.jsonl", description: "The runs of an EventSink.layerJsonl file" },
      { command: "tinyagents inspect journal.db --allow-decisions --port 4000", description: "A durable journal, deciding approvals from the page" }
    ])
  )
