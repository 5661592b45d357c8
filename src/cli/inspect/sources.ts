/**
 * Where the inspector reads runs from: a JSON-lines events file (`EventSink.layerJsonl`), a SQLite
 * audit database (`SqlAudit`), a durable journal (SQLite or Postgres) or a live run (`live`, an
 * `EventSink` the application adds). Every line or row is decoded through the event Schemas
 * (`ToolEvent.EventJson`; receipts through {@link ReceiptSchema}); one that does not decode is an
 * `Unreadable` entry with its line (or row) number, never a failure of the page.
 */
import { Cause, Data, Effect, PubSub, Redacted, Result, Schema, Stream } from "effect"
import { SqlClient } from "effect/sql"
import { closeSync, openSync, readFileSync, readSync, statSync } from "node:fs"
import { resolve } from "node:path"
import * as ToolEvent from "../../contract/ToolEvent.ts"
import * as ToolRegistry from "../../contract/ToolRegistry.ts"
import * as Ask from "../../governance/Ask.ts"
import { parses } from "../../internal/json.ts"
import type { EventSinkShape } from "../../runtime/EventSink.ts"
import * as SqliteClient from "../../stores/SqliteClient.ts"
import type * as DurableJournal from "../internal/durableJournal.ts"
import * as Model from "./model.ts"

/** The source cannot be read at all (one line, no password). */
export class SourceError extends Data.TaggedError("SourceError")<{ readonly detail: string }> {
  override get message(): string {
    return this.detail
  }
}

/** A durable run as its journal has it, beside its events. */
export interface DurableRun {
  readonly workflow: string
  readonly runId: string
  /** As `tinyagents durable list` words it. */
  readonly status: string
  readonly open: boolean
  readonly pending: ReadonlyArray<DurableJournal.PendingApproval>
  /** The questions its calls asked (`Ask.question`) that wait for an answer: message (redacted as journaled), answer's JSON Schema, choices. */
  readonly questions: ReadonlyArray<DurableJournal.PendingQuestion>
  /** The run's journaled event rows: position and the row's text. */
  readonly rows: ReadonlyArray<{ readonly seq: number; readonly text: string }>
}

/** What a source holds now. */
export interface Snapshot {
  readonly inspection: Model.Inspection
  /** Durable sources: their runs by run id. */
  readonly durable?: ReadonlyMap<string, DurableRun>
}

/**
 * A decision sent to a durable run (through `DurableAgent.approve` / `answer` / `cancel`, as the CLI
 * does): an approval, a denial, an answer to question `question` of a call (a JSON value, checked
 * against the question's schema by `answer`), a declined question, or a cancel.
 */
export type Decision =
  | { readonly _tag: "Approve"; readonly workflow: string; readonly runId: string; readonly callId: string }
  | { readonly _tag: "Deny"; readonly workflow: string; readonly runId: string; readonly callId: string; readonly reason: string }
  | { readonly _tag: "Answer"; readonly workflow: string; readonly runId: string; readonly callId: string; readonly question: number; readonly value: unknown }
  | { readonly _tag: "Decline"; readonly workflow: string; readonly runId: string; readonly callId: string; readonly question: number; readonly reason: string }
  | { readonly _tag: "Cancel"; readonly workflow: string; readonly runId: string; readonly reason: string }

export interface Source {
  readonly kind: "jsonl" | "audit" | "journal" | "live"
  /** What the page names it by (a file as given, a URL without its password). */
  readonly label: string
  readonly read: Effect.Effect<Snapshot, SourceError>
  /** Pings (the SSE frame `data: {"_tag":"changed"}`) when the source may have changed: a live run's event, a file's change. */
  readonly changes: Stream.Stream<string>
  /** Durable journals: sends a decision; fails with the reason it was refused. */
  readonly decide?: (decision: Decision) => Effect.Effect<string, SourceError>
}

// ---------------------------------------------------------------------------
// decoding
// ---------------------------------------------------------------------------

const decodeEvent = Schema.decodeUnknownResult(Schema.fromJsonString(ToolEvent.EventJson))

/** The receipt fields the inspector reads (`AuditLog.Receipt`'s wire form): `Model.Receipt` is its type. */
export const ReceiptSchema = Schema.Struct({
  tool: Schema.String,
  callId: Schema.String,
  runId: Schema.String,
  threadId: Schema.String,
  turn: Schema.Number,
  status: Schema.String,
  isError: Schema.Boolean,
  error: Schema.optionalKey(Schema.String),
  startedAt: Schema.Number,
  endedAt: Schema.Number,
  durationMillis: Schema.Number,
  emitOrder: Schema.Number,
  argumentsSha256: Schema.String,
  resultSha256: Schema.optionalKey(Schema.String),
  refused: Schema.optionalKey(Schema.Boolean),
  access: Schema.optionalKey(Schema.String),
  destructive: Schema.optionalKey(Schema.Boolean),
  audit: Schema.Unknown
})
const decodeReceipt = Schema.decodeUnknownResult(Schema.fromJsonString(ReceiptSchema))

const firstLine = (text: string): string => text.split("\n")[0]!.slice(0, 300)
const excerpt = (text: string): string => text.length > 300 ? `${text.slice(0, 300)}…` : text

/** One line (or row) of events: the event, or why it is unreadable. */
const eventEntry = (text: string, line: number): Model.Entry => {
  const decoded = decodeEvent(text)
  return Result.isSuccess(decoded)
    ? { _tag: "Event", line, event: decoded.success }
    : { _tag: "Unreadable", line, text: excerpt(text), reason: firstLine(decoded.failure.message) }
}


/**
 * The entries of a JSON-lines events file's text (blank lines skipped; a torn last line, an event
 * being written, too: one that begins as an object does and is not JSON yet).
 */
export const jsonlEntries = (text: string): Array<Model.Entry> => {
  const lines = text.split("\n")
  const torn = lines.length - 1
  const entries: Array<Model.Entry> = []
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!
    if (line.trim() === "") continue
    if (i === torn && line.trimStart().startsWith("{") && !parses(line)) continue
    entries.push(eventEntry(line, i + 1))
  }
  return entries
}

// ---------------------------------------------------------------------------
// files
// ---------------------------------------------------------------------------

const stamp = (file: string): string => {
  const stat = statSync(file, { throwIfNoEntry: false })
  return stat === undefined ? "missing" : `${stat.mtimeMs}:${stat.size}`
}

/**
 * The SSE frame a source's `changes` send: the page only learns that it should reload (it reads the
 * runs again from the source), so the frame carries nothing else.
 */
const changed = `data: {"_tag":"changed"}\n\n`

/** Pings (`changed`) whenever `version` changes, checked every second. */
const polled = (version: () => string): Stream.Stream<string> =>
  Stream.unwrap(Effect.sync(() => {
    let last = version()
    return Stream.tick("1 second").pipe(
      Stream.filter(() => {
        const now = version()
        const differs = now !== last
        last = now
        return differs
      }),
      Stream.map(() => changed)
    )
  }))

/** Reads `load` again only when `version` changed (a 10,000-call run is decoded once). */
const cached = <A>(versionOf: () => string, load: () => Effect.Effect<A, SourceError>): Effect.Effect<A, SourceError> => {
  let memo: { readonly version: string; readonly value: A } | undefined
  return Effect.suspend(() => {
    const version = versionOf()
    if (memo !== undefined && memo.version === version) return Effect.succeed(memo.value)
    return Effect.tap(load(), (value) => Effect.sync(() => void (memo = { version, value })))
  })
}

/** A JSON-lines events file (as `EventSink.layerJsonl` writes it). */
export const jsonl = (file: string, label = file): Source => ({
  kind: "jsonl",
  label,
  read: cached(() => stamp(file), () =>
    Effect.try({
      try: () => ({ inspection: Model.build(jsonlEntries(readFileSync(file, "utf8"))) }),
      catch: (error) => new SourceError({ detail: `cannot read ${label}: ${error instanceof Error ? error.message : String(error)}` })
    })),
  changes: polled(() => stamp(file))
})

/** A SQLite database's version: its file and its write-ahead log (where new rows land until a checkpoint). */
const sqliteStamp = (file: string): string => `${stamp(file)}:${stamp(`${file}-wal`)}`

/** A SQLite audit database (`SqlAudit.sink`): its `tinyagents_receipts` rows, each decoded from its `receipt` JSON. */
export const audit = (file: string, label = file): Source => ({
  kind: "audit",
  label,
  read: cached(() => sqliteStamp(file), () =>
    Effect.gen(function*() {
      const sql = yield* SqliteClient.SqliteClient
      const rows = yield* sql<{ readonly n: number; readonly receipt: unknown }>`SELECT rowid AS n, receipt FROM tinyagents_receipts ORDER BY started_at, emit_order, rowid`
      const entries = rows.map((row): Model.Entry => {
        // a foreign table's column may hold anything: NULL, a number, a BLOB
        if (typeof row.receipt !== "string") {
          return { _tag: "Unreadable", line: Number(row.n), text: excerpt(String(row.receipt)), reason: `the receipt is ${row.receipt === null ? "NULL" : `a ${typeof row.receipt === "object" ? "BLOB" : typeof row.receipt}`}, not JSON text` }
        }
        const decoded = decodeReceipt(row.receipt)
        return Result.isSuccess(decoded)
          ? { _tag: "Receipt", line: Number(row.n), receipt: decoded.success }
          : { _tag: "Unreadable", line: Number(row.n), text: excerpt(row.receipt), reason: firstLine(decoded.failure.message) }
      })
      return { inspection: Model.build(entries) }
    }).pipe(
      Effect.provide(SqliteClient.layer({ filename: file, readonly: true })),
      Effect.mapError((error) => new SourceError({ detail: `cannot read the audit database ${label}: ${firstLine(String((error as { message?: unknown }).message ?? error))}` }))
    )),
  changes: polled(() => sqliteStamp(file))
})

// ---------------------------------------------------------------------------
// durable journals
// ---------------------------------------------------------------------------

const noTools: ToolRegistry.ToolRegistry<never> = Result.getOrThrow(ToolRegistry.makeResult([]))

const loadDurable = Effect.tryPromise({
  try: () => Promise.all([import("../../durable/index.ts"), import("../internal/durableJournal.ts")]),
  catch: (error) => new SourceError({ detail: `cannot load tinyagents/durable (is @effect/platform-node installed?): ${String(error)}` })
})


/**
 * A durable agent's journal (a SQLite file or a Postgres URL), read with `SELECT`s only: every
 * workflow's runs (`tinyagents_durable_runs`, with their status and pending approvals as
 * `tinyagents durable list` reads them) and their journaled events (`tinyagents_durable_run_events`).
 * With `allowDecisions`, approvals and cancels are sent through `DurableAgent` on a client of the
 * journal, as `tinyagents durable approve` / `cancel` send them.
 */
export const journal = (location: DurableJournal.Location, options: { readonly allowDecisions: boolean }): Source => {
  const label = location._tag === "Sqlite" ? location.given : "postgres"
  const read = Effect.gen(function*() {
    const [durable, journalModule] = yield* loadDurable
    const body = Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const tables = yield* journalModule.tablesOf
      const durableRuns = new Map<string, DurableRun>()
      const entries: Array<Model.Entry> = []
      if (!tables.has("tinyagents_durable_runs")) return { inspection: Model.build([]), durable: durableRuns }
      const workflows = (yield* sql<{ readonly workflow: string }>`SELECT DISTINCT workflow FROM tinyagents_durable_runs ORDER BY workflow`).map((row) => row.workflow)
      const rowsByRun = new Map<string, Array<{ readonly seq: number; readonly text: string }>>()
      if (tables.has("tinyagents_durable_run_events")) {
        const rows = yield* sql<{ readonly workflow: string; readonly run_id: string; readonly seq: number | string; readonly event: string }>`SELECT workflow, run_id, seq, event FROM tinyagents_durable_run_events ORDER BY workflow, run_id, seq`
        let n = 0
        for (const row of rows) {
          n++
          entries.push(eventEntry(row.event, n))
          const key = `${row.workflow}\u0000${row.run_id}`
          let list = rowsByRun.get(key)
          if (list === undefined) rowsByRun.set(key, list = [])
          list.push({ seq: Number(row.seq), text: row.event })
        }
      }
      for (const tag of workflows) {
        const name = tag.startsWith("tinyagents/") ? tag.slice("tinyagents/".length) : tag
        const agent = durable.DurableAgent.make<never>({ name, tools: noTools })
        const listed = yield* journalModule.listRuns({
          workflow: agent.workflow._tag,
          limit: 10_000,
          executionIdOf: (runId) => agent.workflow.executionId({ runId, messages: [] })
        })
        if (listed._tag !== "Runs") continue
        for (const run of listed.runs) {
          durableRuns.set(run.runId, {
            workflow: name,
            runId: run.runId,
            status: journalModule.listedStatus(run),
            open: run.state._tag === "Running",
            pending: run.state._tag === "Running" ? run.state.pending : [],
            questions: run.state._tag === "Running" ? run.state.questions : [],
            rows: rowsByRun.get(`${tag}\u0000${run.runId}`) ?? []
          })
        }
      }
      const inspection = Model.build(entries)
      // a call suspended on its question has journaled no event of it yet (they come once it ends)
      for (const durable of durableRuns.values()) {
        const run = inspection.byId.get(durable.runId)
        if (run === undefined) continue
        for (const q of durable.questions) {
          Model.awaitingAnswer(run, {
            turn: q.turn,
            callId: q.callId,
            toolName: q.toolName,
            number: q.question,
            message: q.message,
            ...(Array.isArray(q.choices) ? { choices: q.choices } : {})
          })
        }
      }
      return { inspection, durable: durableRuns }
    })
    // any failure worded by the journal reader, which keeps a Postgres password out of it
    return yield* journalModule.withJournal(location, body).pipe(Effect.mapError((error) => new SourceError({ detail: error.detail })))
  })
  const decide = (decision: Decision): Effect.Effect<string, SourceError> =>
    Effect.gen(function*() {
      if (!options.allowDecisions) return yield* new SourceError({ detail: "decisions are off: start the inspector with --allow-decisions" })
      const [durable, journalModule] = yield* loadDurable
      const agent = durable.DurableAgent.make<never>({ name: decision.workflow, tools: noTools })
      const client = location._tag === "Sqlite"
        ? durable.Runner.layerSqliteClient({ filename: location.filename })
        : durable.Runner.layerPostgresClient({ url: Redacted.make(location.url) })
      const of = decision._tag === "Cancel"
        ? `run ${decision.runId}`
        : decision._tag === "Answer" || decision._tag === "Decline"
        ? `question ${decision.question} of call ${decision.callId} of run ${decision.runId}`
        : `call ${decision.callId} of run ${decision.runId}`
      /** A refusal as worded above; any other failure in one line, without a password. */
      const keep = (cause: Cause.Cause<unknown>): Effect.Effect<never, SourceError> => {
        if (Cause.hasInterruptsOnly(cause)) return Effect.failCause(cause as Cause.Cause<never>)
        const error = Cause.squash(cause)
        return Effect.fail(error instanceof SourceError ? error : new SourceError({ detail: `cannot decide ${of}: ${journalModule.failureLine(location, cause)}` }))
      }
      if (decision._tag === "Cancel") {
        return yield* Effect.scoped(agent.cancel(decision.runId, { reason: decision.reason }).pipe(Effect.provide(client))).pipe(
          Effect.as(`cancelled run ${decision.runId}`),
          Effect.catchTag("RunNotCancellable", (error) => Effect.fail(new SourceError({ detail: `run ${decision.runId} cannot be cancelled: ${error.reason}` }))),
          Effect.catchCause(keep)
        )
      }
      if (decision._tag === "Answer" || decision._tag === "Decline") {
        const reply = decision._tag === "Answer"
          ? Ask.answer(decision.value, "inspector")
          : Ask.decline(decision.reason, "inspector")
        return yield* Effect.scoped(agent.answer(decision.runId, decision.callId, reply, { question: decision.question }).pipe(Effect.provide(client))).pipe(
          Effect.as(`${decision._tag === "Answer" ? "answered" : "declined"} ${of}`),
          // the agent's own check is the authority: a refused answer leaves the question open
          Effect.catchTags({
            AnswerRefused: (error) => Effect.fail(new SourceError({ detail: `answer refused (the question stays open): ${error.reason}` })),
            QuestionNotPending: (error) => Effect.fail(new SourceError({ detail: `${of}: ${error.reason}` }))
          }),
          Effect.catchCause(keep)
        )
      }
      const sent = decision._tag === "Approve"
        ? { _tag: "Approve" as const, decidedBy: "inspector" }
        : { _tag: "Deny" as const, reason: decision.reason, decidedBy: "inspector" }
      return yield* Effect.scoped(agent.approve(decision.runId, decision.callId, sent).pipe(Effect.provide(client))).pipe(
        Effect.as(`${decision._tag === "Approve" ? "approved" : "denied"} ${decision.callId} of run ${decision.runId}`),
        Effect.catchTag("ApprovalNotPending", (error) => Effect.fail(new SourceError({ detail: `${of}: ${error.reason}` }))),
        Effect.catchCause(keep)
      )
    })
  return {
    kind: "journal",
    label,
    // a SQLite journal is read again only once it changed; Postgres at every request
    read: location._tag === "Sqlite" ? cached(() => sqliteStamp(location.filename), () => read) : read,
    changes: location._tag === "Sqlite"
      ? polled(() => sqliteStamp(location.filename))
      : Stream.tick("2 seconds").pipe(Stream.map(() => changed)),
    ...(options.allowDecisions ? { decide } : {})
  }
}

// ---------------------------------------------------------------------------
// live runs
// ---------------------------------------------------------------------------

/**
 * A live source: an `EventSink` that keeps every event it is handed (as its encoded JSON, decoded
 * again as any source's lines are) and pings the page (`changed`) for each one.
 */
export const live = (label = "live run"): Effect.Effect<{ readonly source: Source; readonly sink: EventSinkShape }> =>
  Effect.gen(function*() {
    const entries: Array<Model.Entry> = []
    const pubsub = yield* PubSub.unbounded<string>()
    let memo: { readonly size: number; readonly value: Snapshot } | undefined
    const sink: EventSinkShape = {
      emit: (event) =>
        Effect.gen(function*() {
          const line = yield* ToolEvent.encodeJson(event)
          entries.push(eventEntry(line, entries.length + 1))
          yield* PubSub.publish(pubsub, changed)
        })
    }
    const source: Source = {
      kind: "live",
      label,
      read: Effect.sync(() => {
        if (memo === undefined || memo.size !== entries.length) memo = { size: entries.length, value: { inspection: Model.build(entries) } }
        return memo.value
      }),
      changes: Stream.fromPubSub(pubsub)
    }
    return { source, sink }
  })

// ---------------------------------------------------------------------------
// which source
// ---------------------------------------------------------------------------

const sqliteHeader = "SQLite format 3\u0000"

/**
 * The source `spec` names: a `postgres://` URL (a durable journal), a SQLite file (a durable
 * journal when it has the engine's tables, else an audit database with `tinyagents_receipts`), or
 * any other file (JSON-lines events).
 */
export const open = (spec: string, options: { readonly allowDecisions: boolean }): Effect.Effect<Source, SourceError> =>
  Effect.gen(function*() {
    if (/^postgres(ql)?:\/\//.test(spec)) {
      if (!URL.canParse(spec)) return yield* new SourceError({ detail: "not a URL (postgres://user:password@host:port/db)" })
      return journal({ _tag: "Postgres", url: spec }, options)
    }
    const file = resolve(spec)
    const stat = statSync(file, { throwIfNoEntry: false })
    if (stat === undefined || !stat.isFile()) return yield* new SourceError({ detail: `no such file: ${spec}` })
    const header = Buffer.alloc(16)
    const fd = openSync(file, "r")
    try {
      readSync(fd, header, 0, 16, 0)
    } finally {
      closeSync(fd)
    }
    if (header.toString("latin1") !== sqliteHeader) return jsonl(file, spec)
    const tables = yield* Effect.gen(function*() {
      const sql = yield* SqliteClient.SqliteClient
      return new Set((yield* sql<{ readonly name: string }>`SELECT name FROM sqlite_master WHERE type = 'table'`).map((row) => row.name))
    }).pipe(
      Effect.provide(SqliteClient.layer({ filename: file, readonly: true })),
      Effect.mapError((error) => new SourceError({ detail: `cannot open ${spec}: ${firstLine(String((error as { message?: unknown }).message ?? error))}` }))
    )
    if (tables.has("cluster_messages")) return journal({ _tag: "Sqlite", filename: file, given: spec }, options)
    if (tables.has("tinyagents_receipts")) return audit(file, spec)
    return yield* new SourceError({ detail: `${spec} is a SQLite database with neither a durable journal nor a tinyagents_receipts table` })
  })

