/**
 * A read-only look into a durable agent's journal, for `tinyagents durable status`, `list` and
 * `pending`, and the checks `tinyagents durable approve` makes before it sends a decision. Only `SELECT`s: the SQLite file is
 * opened read-only, and nothing here creates a table (a journal without the engine's tables is "no
 * journal", not a journal to set up).
 *
 * What it reads: the workflow engine's `cluster_messages` (a run is the `run` message of the
 * entity `Workflow/<workflow>` whose entity id is the run's execution id), `cluster_replies` (the run's `Complete` reply, with the
 * journaled `Journal.Outcome`), `tinyagents_durable_approvals` (the requests with no decision
 * yet, whose arguments were redacted when they were written), `tinyagents_durable_questions` (the
 * questions tool calls asked with no reply yet: message, answer's JSON Schema, choices) and `tinyagents_durable_runs` (the runs
 * runners have picked up: start, turn, parent). `DurableAgent.pending`, `pendingAll` and `list` read
 * the same rows, but through a client that creates the tables first.
 */
import { Cause, Data, Effect, Layer, Option, Redacted, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { statSync } from "node:fs"
import * as Journal from "../../durable/Journal.ts"
import { marker, withoutSecrets } from "../../internal/redact/text.ts"
import * as SqliteClient from "../../stores/SqliteClient.ts"

/** Where a journal is: a SQLite file (resolved path, and the name as given) or a Postgres URL. */
export type Location =
  | { readonly _tag: "Sqlite"; readonly filename: string; readonly given: string }
  | { readonly _tag: "Postgres"; readonly url: string }

/** The journal cannot be read (or is not a durable journal): one line, with no password in it. */
export class JournalError extends Data.TaggedError("JournalError")<{ readonly detail: string }> {
  override get message(): string {
    return this.detail
  }
}

/** A call waiting for its approval: its id, its tool and its arguments (redacted as the tool's safety says). */
export interface PendingApproval {
  readonly callId: string
  readonly toolName: string
  readonly arguments: unknown
}

/** A question a call asked, waiting for its answer: the call (and its turn), its number, the (redacted) message and the answer's JSON Schema. */
export interface PendingQuestion {
  readonly callId: string
  readonly toolName: string
  /** The turn (from 0) of the asking call. */
  readonly turn: number
  readonly question: number
  readonly message: string
  readonly schema: unknown
  readonly choices: unknown
}

/** What the journal knows of one run of one workflow. */
export type RunState =
  | { readonly _tag: "UnknownWorkflow"; readonly workflows: ReadonlyArray<string> }
  | { readonly _tag: "UnknownRun" }
  | {
    readonly _tag: "Running"
    readonly pending: ReadonlyArray<PendingApproval>
    /** The questions its calls asked (`Ask`) that wait for an answer, in call order. */
    readonly questions: ReadonlyArray<PendingQuestion>
    /** The reason of a `cancel` the run has not yet acted on. */
    readonly cancelling: string | undefined
    /** The run's state (`AgentState`, as JSON) as its last `agent.state` event left it; absent without one. */
    readonly agentState?: { readonly value: unknown }
  }
  | { readonly _tag: "Cancelled"; readonly reason: string }
  | {
    readonly _tag: "Finished"
    readonly outcome: typeof Journal.Outcome.Type
    /** As for a running run. */
    readonly agentState?: { readonly value: unknown }
  }
  | { readonly _tag: "Ended"; readonly detail: string }

/** The location for messages: the file as given, or the URL without its password. */
export const describe = (location: Location): string =>
  location._tag === "Sqlite" ? location.given : redactUrl(location.url)

/** `url` with its password replaced by the marker (unparsable: `<postgres url>`). */
export const redactUrl = (url: string): string => {
  if (!URL.canParse(url)) return "<postgres url>"
  const parsed = new URL(url)
  if (parsed.password === "") return parsed.toString()
  // Spelled out: the password setter would percent-encode the marker's brackets.
  return `${parsed.protocol}//${parsed.username}:${marker}@${parsed.host}${parsed.pathname}${parsed.search}${parsed.hash}`
}

/** The password of `url` as the URL spells it and decoded (any length: it is a credential). */
const passwordOf = (url: string): ReadonlyArray<string> => {
  if (!URL.canParse(url)) return []
  const spelled = new URL(url).password
  if (spelled === "") return []
  try {
    return [spelled, decodeURIComponent(spelled)]
  } catch {
    return [spelled]
  }
}

/** Removes the location's password from `text` (a driver's message may quote the URL, or the password alone). */
const scrub = (location: Location, text: string): string => {
  if (location._tag === "Sqlite") return text
  return withoutSecrets(text.split(location.url).join(redactUrl(location.url)), passwordOf(location.url))
}

/** The first line of the failure in `cause`, without the location's password. */
export const failureLine = (location: Location, cause: Cause.Cause<unknown>): string => {
  const messages: Array<string> = []
  let error: unknown = Cause.squash(cause)
  for (let depth = 0; depth < 5 && error !== undefined && error !== null; depth++) {
    const text = error instanceof Error ? error.message : typeof error === "object" ? "" : String(error)
    const line = text.split("\n")[0]!.trim()
    if (line !== "" && !messages.some((m) => m.includes(line))) messages.push(line)
    error = typeof error === "object" ? (error as { readonly cause?: unknown }).cause : undefined
  }
  return scrub(location, messages.join(": ") || "unknown error")
}

/** A read-only SQL client of the journal (the Postgres driver is loaded on use). */
const readOnly = (location: Location): Layer.Layer<SqlClient.SqlClient, unknown> =>
  location._tag === "Sqlite"
    ? SqliteClient.layer({ filename: location.filename, readonly: true })
    : Layer.unwrap(
      Effect.map(
        Effect.promise(() => import("@effect/sql-pg")),
        ({ PgClient }) => PgClient.layer({ url: Redacted.make(location.url), connectTimeout: "5 seconds" })
      )
    )

/**
 * Runs `f` on a read-only client of the journal. A journal that cannot be opened or read (not a
 * SQLite file, an unreachable server, a failed query) fails with a one-line {@link JournalError};
 * so does an empty SQLite file or a database without the engine's tables ("no durable journal").
 */
export const withJournal = <A>(
  location: Location,
  f: Effect.Effect<A, unknown, SqlClient.SqlClient>
): Effect.Effect<A, JournalError> =>
  Effect.gen(function*() {
    if (location._tag === "Sqlite") {
      const size = yield* Effect.sync(() => statSync(location.filename, { throwIfNoEntry: false })?.size ?? 0)
      if (size === 0) return yield* new JournalError({ detail: `no durable journal in ${location.given} (the file is empty)` })
    }
    return yield* Effect.andThen(tablesPresent(location), f).pipe(Effect.provide(readOnly(location)))
  }).pipe(
    Effect.catchCause((cause) => {
      if (Cause.hasInterruptsOnly(cause)) return Effect.failCause(cause as Cause.Cause<never>)
      const error = Cause.squash(cause)
      if (error instanceof JournalError) return Effect.fail(error)
      return Effect.fail(
        new JournalError({ detail: `cannot read the journal ${describe(location)}: ${failureLine(location, cause)}` })
      )
    })
  )

const tableNames = ["cluster_messages", "cluster_replies"] as const

/** Fails with "no durable journal" unless the engine's tables are there. */
const tablesPresent = (location: Location): Effect.Effect<void, JournalError | unknown, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const present = yield* tablesOf
    const missing = tableNames.filter((name) => !present.has(name))
    if (missing.length > 0) {
      return yield* new JournalError({
        detail: `no durable journal in ${describe(location)} (no ${missing.join(", ")} table)`
      })
    }
  })

/** The tables of the database (SQLite) or of the current schema (Postgres). */
export const tablesOf: Effect.Effect<ReadonlySet<string>, unknown, SqlClient.SqlClient> = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) =>
    Effect.map(
      sql.onDialectOrElse({
        pg: () =>
          sql<{ readonly name: string }>`SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema()`,
        orElse: () => sql<{ readonly name: string }>`SELECT name FROM sqlite_master WHERE type = 'table'`
      }),
      (rows) => new Set(rows.map((row) => row.name))
    )
)

const workflowPrefix = "Workflow/tinyagents/"

const json = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

const field = (value: unknown, key: string): unknown =>
  typeof value === "object" && value !== null ? (value as Record<string, unknown>)[key] : undefined

const decodeOutcome = Schema.decodeUnknownOption(Schema.toCodecJson(Journal.Outcome))

/** A run's `run` reply as a state: `Complete` with the journaled outcome, or `undefined` (suspended or none). */
const endOf = (payload: string): RunState | undefined => {
  const exit = json(payload)
  if (field(exit, "_tag") === "Failure") return { _tag: "Ended", detail: "the workflow ended with a defect" }
  const result = field(exit, "value")
  if (field(result, "_tag") !== "Complete") return undefined
  const inner = field(result, "exit")
  if (field(inner, "_tag") !== "Success") return { _tag: "Ended", detail: "the workflow ended with a defect" }
  const outcome = decodeOutcome(field(inner, "value"))
  if (Option.isNone(outcome)) return { _tag: "Ended", detail: "unreadable outcome" }
  const value = outcome.value
  return value._tag === "Finished" && value.cancelled !== undefined
    ? { _tag: "Cancelled", reason: value.cancelled }
    : { _tag: "Finished", outcome: value }
}

/**
 * What the journal knows of run `runId` of the workflow `workflow` (its `_tag`, `tinyagents/<name>`),
 * whose execution id is `executionId`.
 */
export const runState = (options: {
  readonly workflow: string
  readonly runId: string
  readonly executionId: string
}): Effect.Effect<RunState, unknown, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const entityType = `Workflow/${options.workflow}`
    const runs = yield* sql<{ readonly payload: string | null }>`SELECT r.payload FROM cluster_messages m JOIN cluster_replies r ON r.request_id = m.id WHERE m.entity_type = ${entityType} AND m.entity_id = ${options.executionId} AND m.tag = 'run'`
    const started = yield* sql<{ readonly n: number | string }>`SELECT COUNT(*) AS n FROM cluster_messages WHERE entity_type = ${entityType} AND entity_id = ${options.executionId} AND tag = 'run'`
    if (Number(started[0]?.n ?? 0) === 0) {
      const known = yield* sql<{ readonly entity_type: string }>`SELECT DISTINCT entity_type FROM cluster_messages WHERE entity_type LIKE ${`${workflowPrefix}%`}`
      const workflows = known.map((row) => row.entity_type.slice(workflowPrefix.length)).sort()
      return workflows.includes(options.workflow.slice("tinyagents/".length))
        ? { _tag: "UnknownRun" }
        : { _tag: "UnknownWorkflow", workflows }
    }
    for (const row of runs) {
      const end = row.payload === null ? undefined : endOf(row.payload)
      if (end?._tag === "Finished") {
        const agentState = yield* stateOf(options)
        return agentState === undefined ? end : { ...end, agentState }
      }
      if (end !== undefined) return end
    }
    // a cancelled run waits for no approval any more
    const cancelling = yield* cancelReasonOf(options)
    const agentState = yield* stateOf(options)
    return {
      _tag: "Running",
      pending: cancelling === undefined ? yield* pendingOf(options) : [],
      questions: cancelling === undefined ? yield* questionsOf(options) : [],
      cancelling,
      ...(agentState === undefined ? {} : { agentState })
    }
  })

/**
 * The run's requests in `tinyagents_durable_approvals` with no decision yet, in call order (none when
 * the table is not there: no run of this journal has asked for an approval).
 */
const pendingOf = (options: { readonly workflow: string; readonly runId: string }) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    if (!(yield* tablesOf).has("tinyagents_durable_approvals")) return []
    const rows = yield* sql<{ readonly call_id: string; readonly tool: string; readonly arguments: string }>`SELECT call_id, tool, arguments FROM tinyagents_durable_approvals WHERE workflow = ${options.workflow} AND run_id = ${options.runId} AND decision IS NULL ORDER BY turn, call_index`
    return rows.map((row): PendingApproval => ({ callId: row.call_id, toolName: row.tool, arguments: json(row.arguments) }))
  })

/**
 * The run's questions in `tinyagents_durable_questions` with no reply yet, in call order (none when
 * the table is not there: no run of this journal has asked one).
 */
const questionsOf = (options: { readonly workflow: string; readonly runId: string }) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    if (!(yield* tablesOf).has("tinyagents_durable_questions")) return []
    const rows = yield* sql<{
      readonly call_id: string
      readonly tool: string
      readonly turn: number | string
      readonly question: number | string
      readonly message: string
      readonly answer_schema: string
      readonly choices: string | null
    }>`SELECT call_id, tool, turn, question, message, answer_schema, choices FROM tinyagents_durable_questions WHERE workflow = ${options.workflow} AND run_id = ${options.runId} AND reply IS NULL ORDER BY turn, call_index, question`
    return rows.map((row): PendingQuestion => ({
      callId: row.call_id,
      toolName: row.tool,
      turn: Number(row.turn),
      question: Number(row.question),
      message: row.message,
      schema: json(row.answer_schema),
      choices: row.choices === null ? undefined : json(row.choices)
    }))
  })

/** The run's state as its last journaled `agent.state` event has it (none: the run has no such event). */
const stateOf = (options: { readonly workflow: string; readonly runId: string }) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    if (!(yield* tablesOf).has("tinyagents_durable_run_events")) return undefined
    const rows = yield* sql<{ readonly event: string }>`SELECT event FROM tinyagents_durable_run_events WHERE workflow = ${options.workflow} AND run_id = ${options.runId} AND event LIKE ${"%agent.state%"} ORDER BY seq DESC`
    for (const row of rows) {
      const event = json(row.event) as { readonly _tag?: unknown; readonly state?: unknown } | undefined
      if (event?._tag === "agent.state") return { value: event.state }
    }
    return undefined
  })

/** The reason of the run's `cancel`, if one was made (none when the table is not there). */
const cancelReasonOf = (options: { readonly workflow: string; readonly runId: string }) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    if (!(yield* tablesOf).has("tinyagents_durable_cancels")) return undefined
    const rows = yield* sql<{ readonly reason: string }>`SELECT reason FROM tinyagents_durable_cancels WHERE workflow = ${options.workflow} AND run_id = ${options.runId}`
    return rows[0]?.reason
  })

/** One run as `tinyagents durable list` prints it: its row in `tinyagents_durable_runs` and its state. */
export interface ListedRun {
  readonly runId: string
  readonly state: Exclude<RunState, { readonly _tag: "UnknownWorkflow" | "UnknownRun" }>
  /** When it was started (epoch ms). */
  readonly startedAt: number
  /** Started, and no runner has journaled anything of it yet. */
  readonly queued: boolean
  /** The latest turn it started, `undefined` before its first. */
  readonly turn: number | undefined
  readonly parentRunId: string | undefined
}

/** The workflows the journal has runs of (their names, without `tinyagents/`), sorted. */
const workflowsOf = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const known = yield* sql<{ readonly entity_type: string }>`SELECT DISTINCT entity_type FROM cluster_messages WHERE entity_type LIKE ${`${workflowPrefix}%`}`
  return known.map((row) => row.entity_type.slice(workflowPrefix.length)).sort()
})

/**
 * Workflow `workflow`'s runs (its `_tag`), newest first, at most `limit`, with how many there are in
 * all; `executionIdOf` gives a run's execution id (what its end is journaled under).
 */
export const listRuns = (options: {
  readonly workflow: string
  readonly limit: number
  readonly executionIdOf: (runId: string) => Effect.Effect<string>
}): Effect.Effect<
  | { readonly _tag: "UnknownWorkflow"; readonly workflows: ReadonlyArray<string> }
  | { readonly _tag: "Runs"; readonly runs: ReadonlyArray<ListedRun>; readonly total: number },
  unknown,
  SqlClient.SqlClient
> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const workflows = yield* workflowsOf
    if (!workflows.includes(options.workflow.slice("tinyagents/".length))) return { _tag: "UnknownWorkflow", workflows } as const
    // a journal written before runs were recorded has no such table: no run is listed
    if (!(yield* tablesOf).has("tinyagents_durable_runs")) return { _tag: "Runs", runs: [], total: 0 } as const
    const total = yield* sql<{ readonly n: number | string }>`SELECT COUNT(*) AS n FROM tinyagents_durable_runs WHERE workflow = ${options.workflow}`
    const rows = yield* sql<{
      readonly run_id: string
      readonly started_at: number | string
      readonly turn: number | string | null
      readonly parent_run_id: string | null
    }>`SELECT run_id, started_at, turn, parent_run_id FROM tinyagents_durable_runs WHERE workflow = ${options.workflow} ORDER BY started_at DESC, run_id DESC LIMIT ${options.limit}`
    const runs: Array<ListedRun> = []
    for (const row of rows) {
      const executionId = yield* options.executionIdOf(row.run_id)
      const state = yield* runState({ workflow: options.workflow, runId: row.run_id, executionId })
      const queued = state._tag === "Running" && row.turn === null && !(yield* journaled({ workflow: options.workflow, runId: row.run_id }))
      // a run listed here was started: its state is never unknown (a defensive "ended" otherwise)
      runs.push({
        queued,
        runId: row.run_id,
        state: state._tag === "UnknownRun" || state._tag === "UnknownWorkflow" ? { _tag: "Ended", detail: "not in the engine's journal" } : state,
        startedAt: Number(row.started_at),
        turn: row.turn === null ? undefined : Number(row.turn),
        parentRunId: row.parent_run_id ?? undefined
      })
    }
    return { _tag: "Runs", runs, total: Number(total[0]?.n ?? 0) } as const
  })

/**
 * Every call of workflow `workflow`'s runs waiting for its approval, by run id then call order (runs
 * that have ended or are cancelled wait for none).
 */
export const pendingAll = (options: {
  readonly workflow: string
  readonly executionIdOf: (runId: string) => Effect.Effect<string>
}): Effect.Effect<
  | { readonly _tag: "UnknownWorkflow"; readonly workflows: ReadonlyArray<string> }
  | {
    readonly _tag: "Pending"
    readonly pending: ReadonlyArray<PendingApproval & { readonly runId: string }>
    readonly questions: ReadonlyArray<PendingQuestion & { readonly runId: string }>
  },
  unknown,
  SqlClient.SqlClient
> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const workflows = yield* workflowsOf
    if (!workflows.includes(options.workflow.slice("tinyagents/".length))) return { _tag: "UnknownWorkflow", workflows } as const
    const tables = yield* tablesOf
    const ids = new Set<string>()
    if (tables.has("tinyagents_durable_approvals")) {
      for (const row of yield* sql<{ readonly run_id: string }>`SELECT DISTINCT run_id FROM tinyagents_durable_approvals WHERE workflow = ${options.workflow} AND decision IS NULL`) ids.add(row.run_id)
    }
    if (tables.has("tinyagents_durable_questions")) {
      for (const row of yield* sql<{ readonly run_id: string }>`SELECT DISTINCT run_id FROM tinyagents_durable_questions WHERE workflow = ${options.workflow} AND reply IS NULL`) ids.add(row.run_id)
    }
    const pending: Array<PendingApproval & { readonly runId: string }> = []
    const questions: Array<PendingQuestion & { readonly runId: string }> = []
    for (const runId of [...ids].sort()) {
      const state = yield* runState({ workflow: options.workflow, runId, executionId: yield* options.executionIdOf(runId) })
      if (state._tag !== "Running") continue
      for (const p of state.pending) pending.push({ runId, ...p })
      for (const q of state.questions) questions.push({ runId, ...q })
    }
    return { _tag: "Pending", pending, questions } as const
  })

/** Whether the run has journaled any event (a runner has picked it up). */
const journaled = (options: { readonly workflow: string; readonly runId: string }) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    if (!(yield* tablesOf).has("tinyagents_durable_run_events")) return false
    const rows = yield* sql<{ readonly seq: number }>`SELECT seq FROM tinyagents_durable_run_events WHERE workflow = ${options.workflow} AND run_id = ${options.runId} LIMIT 1`
    return rows.length > 0
  })

/** A listed run's status in words, as `tinyagents durable list` prints it and the inspector shows it. */
export const listedStatus = ({ queued, state }: ListedRun): string => {
  if (queued) return state._tag === "Running" && state.cancelling !== undefined ? `queued, cancelling: ${state.cancelling}` : "queued"
  if (state._tag === "Finished") return state.outcome._tag === "Failed" ? "failed" : "finished"
  if (state._tag === "Cancelled") return "cancelled"
  if (state._tag === "Ended") return `ended (${state.detail})`
  if (state.cancelling !== undefined) return `running, cancelling: ${state.cancelling}`
  return state.pending.length > 0
    ? `awaiting approval (${state.pending.length})`
    : state.questions.length > 0
    ? `awaiting answer (${state.questions.length})`
    : "running"
}
