/**
 * `tinyagents durable`: a durable agent's runs from any process connected to its journal (a SQLite
 * file or a Postgres URL). `approve` decides a pending approval, `answer` answers a tool call's
 * question (`Ask`), `cancel` cancels a run (all three
 * through `DurableAgent`); `status` says whether a run is running (with the calls waiting for
 * approval), finished or failed, `list` lists a workflow's runs (status, turn, pending approvals,
 * start) and `pending` every call waiting for approval across its runs, all three read with `SELECT`s
 * only (`internal/durableJournal.ts`). A journal that is empty, not a journal or cannot be opened:
 * exit 1, one line (no stack, no password).
 */
import { Console, Effect, Option, Redacted, Result } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import type { SqlClient } from "effect/sql"
import { statSync } from "node:fs"
import { resolve } from "node:path"
import * as ToolRegistry from "../../contract/ToolRegistry.ts"
import type * as DurableJournal from "../internal/durableJournal.ts"
import { CommandFailed, errorText, failWith, UsageError } from "../internal/errors.ts"

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
  try: () => Promise.all([import("../../durable/index.ts"), import("../internal/durableJournal.ts")]),
  catch: (error) => new CommandFailed({ detail: `cannot load tinyagents/durable (is @effect/platform-node installed?): ${errorText(error)}` })
})

/**
 * What the journal knows of run `runId` of the durable agent the flags name, read with `SELECT`s only
 * (`internal/durableJournal.ts`); a handle on the agent (made with no tools: a client needs only
 * the workflow's name) and a client layer on the journal, to send a decision through; and
 * `failedIn(what)`, which words any other failure of that as `cannot <what> in <journal>: <why>`
 * (no password). Fails with {@link CommandFailed} (exit 1) for an unknown workflow or run, an
 * empty or table-less journal, or a journal that cannot be read, in one line without a password.
 */
const inspectRun = (flags: JournalFlags, runId: string) =>
  Effect.gen(function*() {
    const location = yield* journalLocation(flags)
    const [durable, journal] = yield* loadDurable
    const agent = durable.DurableAgent.make<never>({ name: flags.workflow, tools: noTools })
    const executionId = yield* agent.workflow.executionId({ runId, messages: [] })
    const state = yield* journal.withJournal(location, journal.runState({ workflow: agent.workflow._tag, runId, executionId })).pipe(
      Effect.mapError((error) => new CommandFailed({ detail: error.detail }))
    )
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
    // A client of the journal (not a runner): what approve and cancel send their decision through.
    const client = location._tag === "Sqlite"
      ? durable.Runner.layerSqliteClient({ filename: location.filename })
      : durable.Runner.layerPostgresClient({ url: Redacted.make(location.url) })
    const failedIn = (what: string) =>
      failWith((cause) => `cannot ${what} in ${journal.describe(location)}: ${journal.failureLine(location, cause)}`)
    return { state, agent, client, failedIn }
  })

/**
 * Runs `f` on a read-only client of the journal the flags name, with a handle on the workflow (its
 * `_tag` and a run's execution id); an unknown workflow or an unreadable journal fails with
 * {@link CommandFailed} (exit 1) in one line without a password.
 */
const readWorkflow = <A extends { readonly _tag: string }>(
  flags: JournalFlags,
  f: (
    workflow: { readonly tag: string; readonly executionIdOf: (runId: string) => Effect.Effect<string> },
    journal: typeof DurableJournal
  ) => Effect.Effect<A | { readonly _tag: "UnknownWorkflow"; readonly workflows: ReadonlyArray<string> }, unknown, SqlClient.SqlClient>
) =>
  Effect.gen(function*() {
    const location = yield* journalLocation(flags)
    const [durable, journal] = yield* loadDurable
    const agent = durable.DurableAgent.make<never>({ name: flags.workflow, tools: noTools })
    const executionIdOf = (runId: string) => agent.workflow.executionId({ runId, messages: [] })
    const found = yield* journal.withJournal(location, f({ tag: agent.workflow._tag, executionIdOf }, journal)).pipe(
      Effect.mapError((error) => new CommandFailed({ detail: error.detail }))
    )
    if (found._tag === "UnknownWorkflow") {
      const { workflows } = found as { readonly workflows: ReadonlyArray<string> }
      return yield* new CommandFailed({
        detail: `no workflow ${JSON.stringify(flags.workflow)} in the journal ${journal.describe(location)} (${
          workflows.length === 0 ? "it has no runs" : `its workflows: ${workflows.join(", ")}`
        })`
      })
    }
    return found as A
  })

/** How a run that no longer runs ended, as "run <id> has ..." says it. */
const endedAs = (state: Extract<DurableJournal.RunState, { readonly _tag: "Ended" | "Cancelled" | "Finished" }>): string =>
  state._tag === "Ended"
    ? "ended"
    : state._tag === "Cancelled"
    ? "been cancelled"
    : state.outcome._tag === "Finished"
    ? "finished"
    : "failed"

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
    const { agent, client, failedIn, state } = yield* inspectRun(flags, runId)
    const of = `call ${JSON.stringify(callId)} of run ${JSON.stringify(runId)}`
    if (state._tag !== "Running") {
      return yield* new CommandFailed({ detail: `run ${JSON.stringify(runId)} has ${endedAs(state)}: nothing to decide for ${of}` })
    }
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
      failedIn(`decide ${of}`)
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

/** A pending question, as `status` and `pending` print it. */
const questionLine = (q: DurableJournal.PendingQuestion): string =>
  `${q.callId} #${q.question} ${q.toolName}: ${JSON.stringify(q.message)} answer: ${JSON.stringify(q.schema)}${
    q.choices === undefined ? "" : ` choices: ${JSON.stringify(q.choices)}`
  }`

const durableAnswerCommand = Command.make("answer", {
  ...journalFlags,
  runId: Argument.String("run-id").pipe(Argument.withDescription("The run (its runId)")),
  callId: Argument.String("call-id").pipe(Argument.withDescription("The tool call whose question waits (its call id; `durable status` lists them)")),
  json: Flag.String("json").pipe(Flag.withDescription("The answer: a JSON object matching the question's answer schema"), Flag.optional),
  decline: Flag.Boolean("decline").pipe(Flag.withDescription("Decline to answer instead (the handler reads Ask.Declined with --reason)"), Flag.withDefault(false)),
  reason: Flag.String("reason").pipe(Flag.withDescription("Why (with --decline)"), Flag.optional),
  question: Flag.Int("question").pipe(Flag.withDescription("Which of the call's questions (its number; default: the latest open one)"), Flag.optional),
  by: Flag.String("by").pipe(Flag.withDescription("Who answers (recorded as answeredBy)"), Flag.withDefault("cli"))
}, ({ by, callId, decline, json, question, reason, runId, ...flags }) =>
  Effect.gen(function*() {
    if (decline === Option.isSome(json)) return yield* new UsageError({ detail: "give the answer with --json '<object>', or --decline" })
    if (!decline && Option.isSome(reason)) return yield* new UsageError({ detail: "--reason goes with --decline" })
    let value: unknown
    if (Option.isSome(json)) {
      try {
        value = JSON.parse(json.value)
      } catch (error) {
        return yield* new UsageError({ detail: `--json: not JSON: ${errorText(error)}` })
      }
    }
    const reply = decline
      ? { _tag: "Decline" as const, reason: Option.getOrElse(reason, () => "declined from the command line"), answeredBy: by }
      : { _tag: "Answer" as const, value, answeredBy: by }
    const { agent, client, failedIn, state } = yield* inspectRun(flags, runId)
    const of = `call ${JSON.stringify(callId)} of run ${JSON.stringify(runId)}`
    if (state._tag !== "Running") {
      return yield* new CommandFailed({ detail: `run ${JSON.stringify(runId)} has ${endedAs(state)}: nothing to answer for ${of}` })
    }
    const open = state.questions.map((q) => `${q.callId} #${q.question}`)
    yield* Effect.scoped(
      agent.answer(runId, callId, reply, Option.isSome(question) ? { question: question.value } : undefined).pipe(Effect.provide(client))
    ).pipe(
      // the agent's own check is the authority (the run may have moved on since the journal was read)
      Effect.catchTags({
        AnswerRefused: (error) =>
          Effect.fail(new CommandFailed({ detail: `answer refused (the question stays open): ${error.reason}` })),
        QuestionNotPending: (error) =>
          Effect.fail(new CommandFailed({
            detail: error.reason === "not pending"
              ? `no open question for ${of} (${open.length === 0 ? "none open" : `open: ${open.join(", ")}`})`
              : error.reason === "already answered"
              ? `the question of ${of} is already answered (a reply stands; it cannot be changed)`
              : error.reason === "finished"
              ? `run ${JSON.stringify(runId)} has finished: nothing to answer for ${of}`
              : error.reason === "cancelled"
              ? `run ${JSON.stringify(runId)} has been cancelled: nothing to answer for ${of}`
              : `no open question for ${of} (the run has not been picked up by a runner yet)`
          }))
      }),
      failedIn(`answer ${of}`)
    )
    yield* Console.log(`${decline ? "declined" : "answered"} the question of ${callId} of run ${runId}`)
  })).pipe(
    Command.withDescription(
      "Answer (or decline) a question a durable run's tool call asked (Ask.question), from any process connected to its journal. The answer is checked against the question's answer schema first: one that does not match is refused (exit 1) with the reason, and the question stays open. The reply is journaled, and the runner that owns the run (now, or once restarted) resumes it: the call runs again from its start and gets this reply. Refused (exit 1) when the journal has no such run of the workflow, the run has ended, or no question of the call is open (`durable status` lists them)."
    ),
    Command.withExamples([
      {
        command: "tinyagents durable answer run-1 call_7 --db journal.db --workflow deployer --json '{\"branch\":\"main\"}'",
        description: "Answer on a SQLite journal"
      },
      { command: "tinyagents durable answer run-1 call_7 --db journal.db -w deployer --decline --reason 'ask ops'", description: "Decline" }
    ])
  )

const durableCancelCommand = Command.make("cancel", {
  ...journalFlags,
  runId: Argument.String("run-id").pipe(Argument.withDescription("The run (its runId)")),
  reason: Flag.String("reason").pipe(Flag.withDescription("Why (what `result` reports: RunCancelled)"), Flag.withDefault("cancelled from the command line"))
}, ({ reason, runId, ...flags }) =>
  Effect.gen(function*() {
    const { agent, client, failedIn, state } = yield* inspectRun(flags, runId)
    if (state._tag === "Finished" || state._tag === "Ended") {
      return yield* new CommandFailed({ detail: `run ${JSON.stringify(runId)} has ${endedAs(state)}: nothing to cancel` })
    }
    yield* Effect.scoped(agent.cancel(runId, { reason }).pipe(Effect.provide(client))).pipe(
      // the agent's own check is the authority (the run may have ended since the journal was read)
      Effect.catchTag("RunNotCancellable", (error) =>
        Effect.fail(new CommandFailed({
          detail: error.reason === "finished"
            ? `run ${JSON.stringify(runId)} has finished: nothing to cancel`
            : `run ${JSON.stringify(runId)} has not been picked up by a runner yet: nothing to cancel`
        }))),
      failedIn(`cancel run ${JSON.stringify(runId)}`)
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
    if ((state._tag === "Running" || state._tag === "Finished") && state.agentState !== undefined) {
      yield* Console.log(`  state: ${JSON.stringify(state.agentState.value)}`)
    }
    if (state._tag === "Running") {
      for (const p of state.pending) {
        yield* Console.log(`  waiting for approval: ${p.callId} ${p.toolName} ${JSON.stringify(p.arguments)}`)
      }
      for (const q of state.questions) yield* Console.log(`  waiting for an answer: ${questionLine(q)}`)
    }
  })).pipe(
    Command.withDescription(
      "Print whether a durable run is running (with the calls waiting for approval: call id, tool, redacted arguments), finished (with its answer) or failed, and its state (Agent.run's state, as its last update left it) when it has one. Reads the journal only (never writes to it); exit 1 for an unknown run or workflow."
    ),
    Command.withExamples([
      { command: "tinyagents durable status run-1 --db journal.db --workflow mailer", description: "A run on a SQLite journal" }
    ])
  )


const durableListCommand = Command.make("list", {
  ...journalFlags,
  limit: Flag.Int("limit").pipe(Flag.withDescription("How many runs, newest first"), Flag.withDefault(50))
}, ({ limit, ...flags }) =>
  Effect.gen(function*() {
    if (limit < 1) return yield* new UsageError({ detail: "--limit: at least 1" })
    const { runs, total } = yield* readWorkflow(flags, (workflow, journal) =>
      journal.listRuns({ workflow: workflow.tag, limit, executionIdOf: workflow.executionIdOf }))
    if (runs.length === 0) return yield* Console.log(`no runs of workflow ${flags.workflow}`)
    const [, journal] = yield* loadDurable
    for (const run of runs) {
      yield* Console.log(
        [
          run.runId,
          journal.listedStatus(run),
          run.turn === undefined ? "no turn yet" : `turn ${run.turn}`,
          `started ${new Date(run.startedAt).toISOString()}`,
          ...(run.parentRunId === undefined ? [] : [`in run ${run.parentRunId}`])
        ].join("  ")
      )
    }
    if (total > runs.length) yield* Console.log(`(the newest ${runs.length} of ${total} runs: --limit to see more)`)
  })).pipe(
    Command.withDescription(
      "List a durable agent's runs, newest first: each one's status (queued: not picked up by a runner yet, running, awaiting approval with how many calls wait, finished, failed, cancelled), the turn it is at and when it was started. Reads the journal only (never writes to it); exit 1 for an unknown workflow."
    ),
    Command.withExamples([
      { command: "tinyagents durable list --db journal.db --workflow mailer", description: "The runs on a SQLite journal" }
    ])
  )

const durablePendingCommand = Command.make("pending", { ...journalFlags }, (flags) =>
  Effect.gen(function*() {
    const { pending, questions } = yield* readWorkflow(flags, (workflow, journal) =>
      journal.pendingAll({ workflow: workflow.tag, executionIdOf: workflow.executionIdOf }))
    if (pending.length === 0 && questions.length === 0) {
      return yield* Console.log(`no calls of workflow ${flags.workflow} wait for approval`)
    }
    for (const p of pending) yield* Console.log(`${p.runId}  ${p.callId}  ${p.toolName}  ${JSON.stringify(p.arguments)}`)
    for (const q of questions) yield* Console.log(`${q.runId}  asks: ${questionLine(q)}`)
  })).pipe(
    Command.withDescription(
      "List every call waiting for approval across a durable agent's runs: run id, call id, tool and redacted arguments (what `durable approve` takes); then every question waiting for an answer: run id, call id, question number, tool, message and the answer's JSON Schema (what `durable answer` takes). Runs that have ended or are cancelled wait for none. Reads the journal only (never writes to it); exit 1 for an unknown workflow."
    ),
    Command.withExamples([
      { command: "tinyagents durable pending --db journal.db --workflow mailer", description: "The waiting calls on a SQLite journal" }
    ])
  )

/** `tinyagents durable approve`, `answer`, `cancel`, `status`, `list` and `pending`. */
export const durableCommand = Command.make("durable").pipe(
  Command.withDescription(
    "Durable agents (tinyagents/durable): decide a pending approval, answer a tool's question, cancel a run, see a run's status, list the runs or the calls waiting for approval"
  ),
  Command.withSubcommands([durableApproveCommand, durableAnswerCommand, durableCancelCommand, durableStatusCommand, durableListCommand, durablePendingCommand])
)
