/**
 * The durable agent's own SQL tables, beside the engine's (`cluster_messages`, `cluster_replies`):
 * `tinyagents_durable_run_events` (each run's events by sequence number, keyed by workflow name and
 * run id, written with `ON CONFLICT DO NOTHING` so that a workflow body replaying writes nothing
 * twice), `tinyagents_durable_approvals` (one row per approval request: which call it is for and
 * the decision once `approve` claimed it) and `tinyagents_durable_markers` (one row per tool-call
 * activity that started a non-idempotent call, keyed or not: a re-run that finds it knows a first run
 * began; the key is the activity's idempotency key, which includes the execution id) and
 * `tinyagents_durable_cancels` (one row per cancelled run: the first reason given, and when, in
 * epoch milliseconds of the cancelling process's clock) and `tinyagents_durable_children` (one row
 * per run nested in a run's call, `DurableAgent.asTool`, written before the nested run starts: what
 * a cancellation cascades along) and `tinyagents_durable_runs` (one row per run, written by `start`
 * or by the runner that picks it up: when it started, the turn it is at, the run it is nested in:
 * what `DurableAgent.list` pages through) and `tinyagents_durable_questions` (one row per question a
 * call asked (`Ask`), named by its deferred `question/<turn>/<index>/<n>`: the call, the redacted
 * message, the answer's JSON Schema and choices, and the reply once `answer` claimed it). SQLite and
 * Postgres alike.
 */
import { Array as Arr, Effect, Schedule, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { withSchemaLock } from "../../internal/schemaLock.ts"
import * as ToolEvent from "../../contract/ToolEvent.ts"

const created = new WeakSet<SqlClient.SqlClient>()

/** A run of one workflow: the event journal's and the approvals' key. */
export interface RunKey {
  /** The workflow's name (`Workflow._tag`). */
  readonly workflow: string
  readonly runId: string
}

/**
 * Creates the tables once per client (idempotent: `IF NOT EXISTS`, under the schema lock on
 * Postgres so that runners starting together do not collide). Only a success is remembered; a
 * failure is retried a few times (the database may be starting) and then ends the run as a defect.
 */
export const ensure: Effect.Effect<void, never, SqlClient.SqlClient> = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) =>
    created.has(sql) ? Effect.void : withSchemaLock(
      sql,
      Effect.andThen(
        Effect.andThen(
          sql`CREATE TABLE IF NOT EXISTS tinyagents_durable_run_events (workflow TEXT NOT NULL, run_id TEXT NOT NULL, seq INTEGER NOT NULL, event TEXT NOT NULL, PRIMARY KEY (workflow, run_id, seq))`,
          sql`CREATE TABLE IF NOT EXISTS tinyagents_durable_approvals (workflow TEXT NOT NULL, run_id TEXT NOT NULL, deferred TEXT NOT NULL, turn INTEGER NOT NULL, call_index INTEGER NOT NULL, call_id TEXT NOT NULL, tool TEXT NOT NULL, arguments TEXT NOT NULL, decision TEXT, PRIMARY KEY (workflow, run_id, deferred))`
        ),
        Effect.andThen(
          sql`CREATE TABLE IF NOT EXISTS tinyagents_durable_markers (activity_key TEXT PRIMARY KEY)`,
          Effect.andThen(
            sql`CREATE TABLE IF NOT EXISTS tinyagents_durable_cancels (workflow TEXT NOT NULL, run_id TEXT NOT NULL, reason TEXT NOT NULL, at BIGINT NOT NULL, PRIMARY KEY (workflow, run_id))`,
            Effect.andThen(
              sql`CREATE TABLE IF NOT EXISTS tinyagents_durable_children (workflow TEXT NOT NULL, run_id TEXT NOT NULL, child_workflow TEXT NOT NULL, child_run_id TEXT NOT NULL, PRIMARY KEY (workflow, run_id, child_workflow, child_run_id))`,
              Effect.andThen(
                sql`CREATE TABLE IF NOT EXISTS tinyagents_durable_runs (workflow TEXT NOT NULL, run_id TEXT NOT NULL, started_at BIGINT NOT NULL, turn INTEGER, parent_run_id TEXT, PRIMARY KEY (workflow, run_id))`,
                sql`CREATE TABLE IF NOT EXISTS tinyagents_durable_questions (workflow TEXT NOT NULL, run_id TEXT NOT NULL, deferred TEXT NOT NULL, turn INTEGER NOT NULL, call_index INTEGER NOT NULL, call_id TEXT NOT NULL, tool TEXT NOT NULL, question INTEGER NOT NULL, message TEXT NOT NULL, answer_schema TEXT NOT NULL, choices TEXT, reply TEXT, PRIMARY KEY (workflow, run_id, deferred))`
              )
            )
          )
        )
      )
    ).pipe(
      Effect.tap(() => Effect.sync(() => created.add(sql))),
      Effect.retry({ times: 5, schedule: Schedule.exponential("50 millis") }),
      Effect.orDie
    )
)

const encode = Schema.encodeSync(ToolEvent.EventJson)
const decode = Schema.decodeUnknownSync(ToolEvent.EventJson)

const withSql = <A>(
  f: (sql: SqlClient.SqlClient) => Effect.Effect<A, unknown>
): Effect.Effect<A, never, SqlClient.SqlClient> => Effect.andThen(ensure, Effect.orDie(SqlClient.SqlClient.use(f)))

/**
 * Appends events `rows` (sequence number, event; ascending) of run `run` unless already there (a
 * replay), and, with `turn`, records it as the run's turn: one statement on Postgres
 * (a data-modifying CTE), two on SQLite, so that the events journaled between two steps of a run
 * cost one round trip instead of one each.
 */
export const appendAll = (
  run: RunKey,
  rows: ReadonlyArray<readonly [seq: number, event: ToolEvent.Event]>,
  turn: number | undefined
): Effect.Effect<void, never, SqlClient.SqlClient> =>
  Effect.asVoid(withSql((sql) => {
    if (!Arr.isReadonlyArrayNonEmpty(rows)) return turn === undefined ? Effect.void : setTurnWith(sql, run, turn)
    const values = sql.insert(Arr.map(rows, ([seq, event]) => ({
      workflow: run.workflow,
      run_id: run.runId,
      seq,
      event: JSON.stringify(encode(event))
    })))
    const insert = sql`INSERT INTO tinyagents_durable_run_events ${values} ON CONFLICT (workflow, run_id, seq) DO NOTHING`
    if (turn === undefined) return insert
    return sql.onDialectOrElse({
      pg: () => sql`WITH turn AS (${setTurnWith(sql, run, turn)}) ${insert}`,
      orElse: () => Effect.andThen(insert, setTurnWith(sql, run, turn))
    })
  }))

/** The run's events with a sequence number above `since`, in order (at most `limit`). */
export const read = (
  run: RunKey,
  since: number,
  limit = 500
): Effect.Effect<ReadonlyArray<ToolEvent.Event>, never, SqlClient.SqlClient> =>
  Effect.map(
    withSql((sql) =>
      sql<{ readonly event: string }>`SELECT event FROM tinyagents_durable_run_events WHERE workflow = ${run.workflow} AND run_id = ${run.runId} AND seq > ${since} ORDER BY seq LIMIT ${limit}`
    ),
    (rows) => rows.map((row) => decode(JSON.parse(row.event)) as ToolEvent.Event)
  )

/** The run's last journaled sequence number (-1 when none). */
export const lastSequence = (run: RunKey): Effect.Effect<number, never, SqlClient.SqlClient> =>
  Effect.map(
    withSql((sql) =>
      sql<{ readonly last: number | string | null }>`SELECT MAX(seq) AS last FROM tinyagents_durable_run_events WHERE workflow = ${run.workflow} AND run_id = ${run.runId}`
    ),
    (rows) => rows[0]?.last === null || rows[0]?.last === undefined ? -1 : Number(rows[0].last)
  )

/** Whether the run has journaled any event (it was picked up by a runner). */
export const known = (run: RunKey): Effect.Effect<boolean, never, SqlClient.SqlClient> =>
  Effect.map(
    withSql((sql) =>
      sql<{ readonly seq: number }>`SELECT seq FROM tinyagents_durable_run_events WHERE workflow = ${run.workflow} AND run_id = ${run.runId} LIMIT 1`
    ),
    (rows) => rows.length > 0
  )

/** One approval request as stored. */
export interface ApprovalRow {
  readonly deferred: string
  readonly turn: number
  readonly callIndex: number
  readonly callId: string
  readonly tool: string
  /** The call's arguments, redacted per the tool's policy, as JSON text. */
  readonly arguments: string
  /** The claimed decision as JSON text, or `null` while pending. */
  readonly decision: string | null
}

/** Records approval request `row` (pending) unless it is already there (a replay). */
export const request = (run: RunKey, row: Omit<ApprovalRow, "decision">): Effect.Effect<void, never, SqlClient.SqlClient> =>
  Effect.asVoid(withSql((sql) =>
    sql`INSERT INTO tinyagents_durable_approvals (workflow, run_id, deferred, turn, call_index, call_id, tool, arguments) VALUES (${run.workflow}, ${run.runId}, ${row.deferred}, ${row.turn}, ${row.callIndex}, ${row.callId}, ${row.tool}, ${row.arguments}) ON CONFLICT (workflow, run_id, deferred) DO NOTHING`
  ))

interface RawRow {
  readonly deferred: string
  readonly turn: number
  readonly call_index: number
  readonly call_id: string
  readonly tool: string
  readonly arguments: string
  readonly decision: string | null
}

const rowOf = (raw: RawRow): ApprovalRow => ({
  deferred: raw.deferred,
  turn: Number(raw.turn),
  callIndex: Number(raw.call_index),
  callId: raw.call_id,
  tool: raw.tool,
  arguments: raw.arguments,
  decision: raw.decision
})

/**
 * The leg of the run a request belongs to: 0 for the durable agent's own part, k for the k-th agent
 * a handoff passed the conversation to (its deferred is named under `handoff-<k>/`). Turns start at
 * 0 in each leg, so requests are ordered by leg first.
 */
const legOf = (deferred: string): number => {
  const match = /^handoff-([0-9]+)\//.exec(deferred)
  return match === null ? 0 : Number(match[1])
}

/** Latest first: by leg, then turn, then position in the turn. */
const latestFirst = (a: ApprovalRow, b: ApprovalRow): number =>
  legOf(b.deferred) - legOf(a.deferred) || b.turn - a.turn || b.callIndex - a.callIndex

/** The run's approval requests (all, or those for call id `callId`), latest first (see {@link latestFirst}). */
export const approvals = (
  run: RunKey,
  callId?: string
): Effect.Effect<ReadonlyArray<ApprovalRow>, never, SqlClient.SqlClient> =>
  Effect.map(
    withSql((sql) =>
      callId === undefined
        ? sql<RawRow>`SELECT deferred, turn, call_index, call_id, tool, arguments, decision FROM tinyagents_durable_approvals WHERE workflow = ${run.workflow} AND run_id = ${run.runId}`
        : sql<RawRow>`SELECT deferred, turn, call_index, call_id, tool, arguments, decision FROM tinyagents_durable_approvals WHERE workflow = ${run.workflow} AND run_id = ${run.runId} AND call_id = ${callId}`
    ),
    (rows) => rows.map(rowOf).sort(latestFirst)
  )

/** Claims pending request `deferred` with `decision` (JSON text): `true` when this call claimed it. */
export const decide = (run: RunKey, deferred: string, decision: string): Effect.Effect<boolean, never, SqlClient.SqlClient> =>
  Effect.map(
    withSql((sql) =>
      sql<{ readonly deferred: string }>`UPDATE tinyagents_durable_approvals SET decision = ${decision} WHERE workflow = ${run.workflow} AND run_id = ${run.runId} AND deferred = ${deferred} AND decision IS NULL RETURNING deferred`
    ),
    (rows) => rows.length > 0
  )

/** Writes the "started" marker of activity `key`: `true` when it is new, `false` when a run before this one wrote it. */
export const mark = (key: string): Effect.Effect<boolean, never, SqlClient.SqlClient> =>
  Effect.map(
    withSql((sql) =>
      sql<{ readonly activity_key: string }>`INSERT INTO tinyagents_durable_markers (activity_key) VALUES (${key}) ON CONFLICT (activity_key) DO NOTHING RETURNING activity_key`
    ),
    (rows) => rows.length > 0
  )

/** Records that run `run` is cancelled with `reason` (the first reason stays). */
export const cancel = (run: RunKey, reason: string): Effect.Effect<void, never, SqlClient.SqlClient> =>
  Effect.asVoid(withSql((sql) =>
    sql`INSERT INTO tinyagents_durable_cancels (workflow, run_id, reason, at) VALUES (${run.workflow}, ${run.runId}, ${reason}, ${Date.now()}) ON CONFLICT (workflow, run_id) DO NOTHING`
  ))

/** Why run `run` was cancelled, if it was. */
export const cancelReason = (run: RunKey): Effect.Effect<string | undefined, never, SqlClient.SqlClient> =>
  Effect.map(
    withSql((sql) =>
      sql<{ readonly reason: string }>`SELECT reason FROM tinyagents_durable_cancels WHERE workflow = ${run.workflow} AND run_id = ${run.runId}`
    ),
    (rows) => rows[0]?.reason
  )

/** Records that run `child` is nested in a call of run `parent` (before it starts; a replay writes nothing). */
export const link = (parent: RunKey, child: RunKey): Effect.Effect<void, never, SqlClient.SqlClient> =>
  Effect.asVoid(withSql((sql) =>
    sql`INSERT INTO tinyagents_durable_children (workflow, run_id, child_workflow, child_run_id) VALUES (${parent.workflow}, ${parent.runId}, ${child.workflow}, ${child.runId}) ON CONFLICT (workflow, run_id, child_workflow, child_run_id) DO NOTHING`
  ))

/** The runs nested in run `run`'s calls (`DurableAgent.asTool`), one level down (see {@link link}). */
export const children = (run: RunKey): Effect.Effect<ReadonlyArray<RunKey>, never, SqlClient.SqlClient> =>
  Effect.map(
    withSql((sql) =>
      sql<{ readonly child_workflow: string; readonly child_run_id: string }>`SELECT child_workflow, child_run_id FROM tinyagents_durable_children WHERE workflow = ${run.workflow} AND run_id = ${run.runId}`
    ),
    (rows) => rows.map((row) => ({ workflow: row.child_workflow, runId: row.child_run_id }))
  )

/** The runs nested in run `run`'s calls at any depth, outermost first: what a cancellation of `run` cancels too. */
export const nestedRuns = (run: RunKey): Effect.Effect<ReadonlyArray<RunKey>, never, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const found: Array<RunKey> = []
    let level: ReadonlyArray<RunKey> = [run]
    while (level.length > 0) {
      const next: Array<RunKey> = []
      for (const key of level) next.push(...(yield* children(key)))
      found.push(...next)
      level = next
    }
    return found
  })

/** Whether activity `key` has a "started" marker (read only). */
export const marked = (key: string): Effect.Effect<boolean, never, SqlClient.SqlClient> =>
  Effect.map(
    withSql((sql) =>
      sql<{ readonly activity_key: string }>`SELECT activity_key FROM tinyagents_durable_markers WHERE activity_key = ${key}`
    ),
    (rows) => rows.length > 0
  )

/**
 * Whether the engine's journal holds the `run` message of execution `executionId` of entity type
 * `entityType` (`Workflow/<name>`): the run was started, even if no runner has picked it up yet.
 * `false` when the engine keeps no SQL journal here (the in-memory engine).
 */
export const queued = (entityType: string, executionId: string): Effect.Effect<boolean, never, SqlClient.SqlClient> =>
  SqlClient.SqlClient.use((sql) =>
    sql<{ readonly found: number }>`SELECT 1 AS found FROM cluster_messages WHERE entity_type = ${entityType} AND entity_id = ${executionId} AND tag = 'run' LIMIT 1`
  ).pipe(
    Effect.map((rows) => rows.length > 0),
    Effect.catch(() => Effect.succeed(false))
  )

/** The cancellations recorded at or after `since` (epoch ms), with when (all of them for `since` 0). */
export const cancelsSince = (since: number): Effect.Effect<
  ReadonlyArray<{ readonly run: RunKey; readonly reason: string; readonly at: number }>,
  never,
  SqlClient.SqlClient
> =>
  Effect.map(
    withSql((sql) =>
      sql<{ readonly workflow: string; readonly run_id: string; readonly reason: string; readonly at: number | string }>`SELECT workflow, run_id, reason, at FROM tinyagents_durable_cancels WHERE at >= ${since}`
    ),
    (rows) => rows.map((row) => ({ run: { workflow: row.workflow, runId: row.run_id }, reason: row.reason, at: Number(row.at) }))
  )

/** A run as `tinyagents_durable_runs` records it. */
export interface RunRow {
  readonly runId: string
  /** When the run was started (epoch ms): by `start`, else its first event's timestamp. */
  readonly startedAt: number
  /** The latest turn it started (from 0; after a handoff, the receiving agent's), `undefined` before the first. */
  readonly turn: number | undefined
  /** For a run nested in a durable run's call (`DurableAgent.asTool`): that run's id. */
  readonly parentRunId: string | undefined
}

/** Records run `run` as started at `startedAt` unless it is already there (a resumed run keeps its start). */
export const begin = (
  run: RunKey,
  startedAt: number,
  parentRunId: string | undefined
): Effect.Effect<void, never, SqlClient.SqlClient> =>
  Effect.asVoid(withSql((sql) =>
    sql`INSERT INTO tinyagents_durable_runs (workflow, run_id, started_at, parent_run_id) VALUES (${run.workflow}, ${run.runId}, ${startedAt}, ${
      parentRunId ?? null
    }) ON CONFLICT (workflow, run_id) DO NOTHING`
  ))

const setTurnWith = (sql: SqlClient.SqlClient, run: RunKey, turn: number) =>
  sql`UPDATE tinyagents_durable_runs SET turn = ${turn} WHERE workflow = ${run.workflow} AND run_id = ${run.runId}`

/**
 * Workflow `workflow`'s runs, newest first (by start, then run id descending), at most `limit`,
 * those after `after` (the last row of the previous page) when given.
 */
export const runs = (
  workflow: string,
  options: { readonly limit: number; readonly after?: { readonly startedAt: number; readonly runId: string } | undefined }
): Effect.Effect<ReadonlyArray<RunRow>, never, SqlClient.SqlClient> =>
  Effect.map(
    withSql((sql) =>
      options.after === undefined
        ? sql<RawRunRow>`SELECT run_id, started_at, turn, parent_run_id FROM tinyagents_durable_runs WHERE workflow = ${workflow} ORDER BY started_at DESC, run_id DESC LIMIT ${options.limit}`
        : sql<RawRunRow>`SELECT run_id, started_at, turn, parent_run_id FROM tinyagents_durable_runs WHERE workflow = ${workflow} AND (started_at < ${options.after.startedAt} OR (started_at = ${options.after.startedAt} AND run_id < ${options.after.runId})) ORDER BY started_at DESC, run_id DESC LIMIT ${options.limit}`
    ),
    (rows) => rows.map(runRowOf)
  )

/** Run `run`'s row, if a runner has picked it up. */
export const runRow = (run: RunKey): Effect.Effect<RunRow | undefined, never, SqlClient.SqlClient> =>
  Effect.map(
    withSql((sql) =>
      sql<RawRunRow>`SELECT run_id, started_at, turn, parent_run_id FROM tinyagents_durable_runs WHERE workflow = ${run.workflow} AND run_id = ${run.runId}`
    ),
    (rows) => rows[0] === undefined ? undefined : runRowOf(rows[0])
  )

/** A `tinyagents_durable_runs` row as the driver returns it (SQLite and Postgres alike). */
interface RawRunRow {
  readonly run_id: string
  readonly started_at: number | string
  readonly turn: number | string | null
  readonly parent_run_id: string | null
}

/** A raw row as a {@link RunRow} (BIGINT columns come back as strings from Postgres). */
const runRowOf = (raw: RawRunRow): RunRow => ({
  runId: raw.run_id,
  startedAt: Number(raw.started_at),
  turn: raw.turn === null ? undefined : Number(raw.turn),
  parentRunId: raw.parent_run_id ?? undefined
})

/** By run id, then (within a run) in call order: the reverse of `latest`, which puts the latest first. */
const byRunThen = <T>(latest: (a: T, b: T) => number) =>
  (a: T & { readonly runId: string }, b: T & { readonly runId: string }): number =>
    a.runId < b.runId ? -1 : a.runId > b.runId ? 1 : -latest(a, b)

/** The undecided approval requests of workflow `workflow`'s runs, each with its run id, by run then call order. */
export const undecided = (
  workflow: string
): Effect.Effect<ReadonlyArray<ApprovalRow & { readonly runId: string }>, never, SqlClient.SqlClient> =>
  Effect.map(
    withSql((sql) =>
      sql<RawRow & { readonly run_id: string }>`SELECT run_id, deferred, turn, call_index, call_id, tool, arguments, decision FROM tinyagents_durable_approvals WHERE workflow = ${workflow} AND decision IS NULL`
    ),
    (rows) =>
      rows.map((raw) => ({ ...rowOf(raw), runId: raw.run_id })).sort(byRunThen(latestFirst))
  )

/** Removes the "started" marker of activity `key` (a call suspended on a question runs again from its start). */
export const unmark = (key: string): Effect.Effect<void, never, SqlClient.SqlClient> =>
  Effect.asVoid(withSql((sql) => sql`DELETE FROM tinyagents_durable_markers WHERE activity_key = ${key}`))

/** One question a call asked, as stored. */
export interface QuestionRow {
  readonly deferred: string
  readonly turn: number
  readonly callIndex: number
  readonly callId: string
  readonly tool: string
  /** The call's question number (1 for its first). */
  readonly question: number
  /** Redacted like the call's arguments. */
  readonly message: string
  /** The answer's JSON Schema, as JSON text. */
  readonly schema: string
  /** The offered answers (encoded, redacted), as JSON text, or `null`. */
  readonly choices: string | null
  /** The claimed reply (`Journal.QuestionReply`) as JSON text, or `null` while open. */
  readonly reply: string | null
}

interface RawQuestionRow {
  readonly deferred: string
  readonly turn: number | string
  readonly call_index: number | string
  readonly call_id: string
  readonly tool: string
  readonly question: number | string
  readonly message: string
  readonly answer_schema: string
  readonly choices: string | null
  readonly reply: string | null
}

const questionOf = (raw: RawQuestionRow): QuestionRow => ({
  deferred: raw.deferred,
  turn: Number(raw.turn),
  callIndex: Number(raw.call_index),
  callId: raw.call_id,
  tool: raw.tool,
  question: Number(raw.question),
  message: raw.message,
  schema: raw.answer_schema,
  choices: raw.choices,
  reply: raw.reply
})

/** Latest first: by leg, then turn, then position in the turn, then question number. */
const latestQuestionFirst = (a: QuestionRow, b: QuestionRow): number =>
  legOf(b.deferred) - legOf(a.deferred) || b.turn - a.turn || b.callIndex - a.callIndex || b.question - a.question

/** Records question `row` (open) unless it is already there (the call asked it before it was suspended). */
export const ask = (run: RunKey, row: Omit<QuestionRow, "reply">): Effect.Effect<void, never, SqlClient.SqlClient> =>
  Effect.asVoid(withSql((sql) =>
    sql`INSERT INTO tinyagents_durable_questions (workflow, run_id, deferred, turn, call_index, call_id, tool, question, message, answer_schema, choices) VALUES (${run.workflow}, ${run.runId}, ${row.deferred}, ${row.turn}, ${row.callIndex}, ${row.callId}, ${row.tool}, ${row.question}, ${row.message}, ${row.schema}, ${row.choices}) ON CONFLICT (workflow, run_id, deferred) DO NOTHING`
  ))

const questionColumns = "deferred, turn, call_index, call_id, tool, question, message, answer_schema, choices, reply"

/** The run's questions (all, or those of call id `callId`), latest first. */
export const questions = (
  run: RunKey,
  callId?: string
): Effect.Effect<ReadonlyArray<QuestionRow>, never, SqlClient.SqlClient> =>
  Effect.map(
    withSql((sql) =>
      callId === undefined
        ? sql<RawQuestionRow>`SELECT ${sql.literal(questionColumns)} FROM tinyagents_durable_questions WHERE workflow = ${run.workflow} AND run_id = ${run.runId}`
        : sql<RawQuestionRow>`SELECT ${sql.literal(questionColumns)} FROM tinyagents_durable_questions WHERE workflow = ${run.workflow} AND run_id = ${run.runId} AND call_id = ${callId}`
    ),
    (rows) => rows.map(questionOf).sort(latestQuestionFirst)
  )

/** Claims open question `deferred` with `reply` (JSON text): `true` when this call claimed it. */
export const reply = (run: RunKey, deferred: string, text: string): Effect.Effect<boolean, never, SqlClient.SqlClient> =>
  Effect.map(
    withSql((sql) =>
      sql<{ readonly deferred: string }>`UPDATE tinyagents_durable_questions SET reply = ${text} WHERE workflow = ${run.workflow} AND run_id = ${run.runId} AND deferred = ${deferred} AND reply IS NULL RETURNING deferred`
    ),
    (rows) => rows.length > 0
  )

/** The open questions of workflow `workflow`'s runs, each with its run id, by run then call order. */
export const unanswered = (
  workflow: string
): Effect.Effect<ReadonlyArray<QuestionRow & { readonly runId: string }>, never, SqlClient.SqlClient> =>
  Effect.map(
    withSql((sql) =>
      sql<RawQuestionRow & { readonly run_id: string }>`SELECT run_id, ${sql.literal(questionColumns)} FROM tinyagents_durable_questions WHERE workflow = ${workflow} AND reply IS NULL`
    ),
    (rows) =>
      rows.map((raw) => ({ ...questionOf(raw), runId: raw.run_id })).sort(byRunThen(latestQuestionFirst))
  )
