/**
 * `tinyagents inspect` (src/cli/inspect/): the events → runs model on a recorded run, the source
 * readers (a JSON-lines file with foreign and garbled lines, a SQLite audit database, a durable
 * journal on SQLite), and the HTTP routes over a real loopback server: the pages' content, redacted
 * values shown redacted (the secrets never on a page), pagination, unknown runs, and decisions
 * (refused when off or from another origin; an approval and a cancel reaching the durable run when
 * allowed).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Result, Schedule, Schema, Stream } from "effect"
import { SqlClient } from "effect/sql"
import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { request as httpRequest } from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll } from "vitest"
import * as Cli from "../../src/cli/Cli.ts"
import { Html, Model, Server, Sources } from "../../src/cli/inspect/index.ts"
import * as ChatModel from "../../src/agent/ChatModel.ts"
import * as Tool from "../../src/contract/Tool.ts"
import * as ToolEvent from "../../src/contract/ToolEvent.ts"
import * as ToolRegistry from "../../src/contract/ToolRegistry.ts"
import { DurableAgent, Runner } from "../../src/durable/index.ts"
import { Agent, Approval, Ask, EventSink, Executor, ToolServices } from "../../src/index.ts"
import * as AnswerForm from "../../src/cli/inspect/answerForm.ts"
import { auditLog, consent, stack } from "../../src/governance/middleware/index.ts"
import { SqlAudit, SqliteClient, Stores } from "../../src/stores/index.ts"
import { record, secrets } from "./fixtures.ts"

const dir = mkdtempSync(join(tmpdir(), "tinyagents-inspect-"))
const events = join(dir, "events.jsonl")
const garbled = join(dir, "garbled.jsonl")
const auditDb = join(dir, "audit.db")
const journalDb = join(dir, "journal.db")
const asksDb = join(dir, "asks.db")

// ---------------------------------------------------------------------------
// a durable journal: run-1 of workflow mailer waits for the approval of two sends (`to` redacted)
// ---------------------------------------------------------------------------

const send = Tool.make("send", {
  description: "Sends a message.",
  input: Schema.Struct({ to: Schema.String, body: Schema.String }),
  safety: { access: "write", redact: { keys: ["to"] } },
  handler: ({ body }) => Effect.succeed(`sent ${body}`)
})
const mailer = DurableAgent.make({
  name: "mailer",
  tools: Result.getOrThrow(ToolRegistry.makeResult([send])),
  approval: () => true,
  pollInterval: "20 millis"
})
const mailModel = ChatModel.fromFunction((request) =>
  Effect.succeed(
    request.messages.some((m) => m.role === "tool")
      ? ChatModel.answer("done")
      : ChatModel.callTools([
        ["c1", "send", { to: "alice@example.com", body: "one" }],
        ["c2", "send", { to: "bob@example.com", body: "two" }]
      ])
  )
)
const runner = () =>
  mailer.layer.pipe(
    Layer.provide([mailModel, Stores.layerSqlite({ filename: join(dir, "stores.db") })]),
    Layer.provideMerge(Runner.layerSqlite({ filename: journalDb, pollInterval: "20 millis", lockExpiration: "2 seconds", shutdownTimeout: "1 second" }))
  )

// ---------------------------------------------------------------------------
// a durable journal of questions: `deploy` asks which branch (choices main / staging)
// ---------------------------------------------------------------------------

const deploy = Tool.make("deploy", {
  description: "Deploys a service; asks which branch.",
  input: Schema.Struct({ service: Schema.String }),
  failure: Ask.NotAnswered,
  services: [Ask.Ask],
  handler: ({ service }) =>
    Ask.question({
      message: `Which branch of ${service}?`,
      answer: Schema.Struct({ branch: Schema.Literals(["main", "staging"]) }),
      choices: [{ branch: "main" }, { branch: "staging" }]
    }).pipe(
      Effect.map(({ branch }) => `deployed ${service}@${branch}`),
      Effect.catchTag("AskDeclined", (e) => Effect.succeed(`declined: ${e.reason}`))
    )
})
const deployer = DurableAgent.make({ name: "deployer", tools: Result.getOrThrow(ToolRegistry.makeResult([deploy])), pollInterval: "20 millis" })
const deployModel = ChatModel.fromFunction((request) => {
  const tool = request.messages.findLast((m) => m.role === "tool")
  return Effect.succeed(
    tool?.role === "tool"
      ? ChatModel.answer(`done: ${tool.results.map((r) => r.content.map((b) => b.type === "text" ? b.text : "").join("")).join("")}`)
      : ChatModel.callTools([["q1", "deploy", { service: "api" }]])
  )
})
const deployRunner = deployer.layer.pipe(
  Layer.provide([deployModel, Stores.layerMemory]),
  Layer.provideMerge(Runner.layerSqlite({ filename: asksDb, pollInterval: "20 millis", lockExpiration: "2 seconds", shutdownTimeout: "1 second" }))
)
/** Starts run `runId` of the deployer and waits until its question is open. */
const asking = (runId: string) =>
  Effect.gen(function*() {
    yield* deployer.start(runId, [{ role: "user", content: "deploy the api" }])
    yield* deployer.questions(runId).pipe(
      Effect.repeat({ until: (open) => open.length === 1, schedule: Schedule.spaced("20 millis") }),
      Effect.timeout("20 seconds")
    )
  })

beforeAll(async () => {
  await Effect.runPromise(record(events))
  // a foreign line (JSON, not an event), a garbled one, then the run
  writeFileSync(garbled, `{"kind":"something else"}\nnot json at all\n${readFileSync(events, "utf8")}`)
  // an audit database, written by the audit middleware (SqlAudit.sink), with one damaged row
  const dropTable = Tool.make("drop_table", {
    description: "Drops a table.",
    input: Schema.Struct({ table: Schema.String }),
    safety: { access: "mutate" },
    handler: ({ table }) => Effect.succeed(`dropped ${table}`)
  })
  await Effect.runPromise(
    Effect.gen(function*() {
      const executor = yield* Executor.make(yield* ToolRegistry.make([dropTable]), { middleware: stack(auditLog(SqlAudit.sink()), consent()) })
      yield* executor.run({ id: "d1", name: "drop_table", arguments: { table: "sessions" } })
      yield* executor.run({ id: "d2", name: "drop_table", arguments: { table: "users" } })
      const sql = yield* SqlClient.SqlClient
      yield* sql`INSERT INTO tinyagents_receipts (tool, call_id, run_id, thread_id, turn, status, is_error, started_at, ended_at, duration_millis, emit_order, arguments_sha256, refused, destructive, audit, receipt) VALUES ('x', 'x', 'x', 'x', 0, 'ok', 0, 0, 0, 0, 99, '', 0, 0, '{}', '{"not":"a receipt"}')`
    }).pipe(Effect.provide(Layer.mergeAll(
      ToolServices.layerTest(),
      Approval.layerRules([
        { name: "keep-users", match: (r) => JSON.stringify(r.arguments).includes("users"), decide: "deny", reason: "not the users" },
        { name: "rest", match: () => true, decide: "approve" }
      ]),
      SqliteClient.layer({ filename: auditDb })
    )))
  )
  await Effect.runPromise(
    Effect.gen(function*() {
      for (const runId of ["run-1", "run-2"]) {
        yield* mailer.start(runId, [{ role: "user", content: "mail them" }])
        yield* mailer.pending(runId).pipe(
          Effect.repeat({ until: (pending) => pending.length === 2, schedule: Schedule.spaced("20 millis") }),
          Effect.timeout("20 seconds")
        )
      }
    }).pipe(Effect.provide(runner()))
  )
}, 60_000)
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const readJsonl = (file: string) => Effect.map(Sources.jsonl(file).read, (snapshot) => snapshot.inspection)

describe("the run model", () => {
  it.effect("a recorded run: turns with their text and usage, each call's state, the nested run under its call", () =>
    Effect.gen(function*() {
      const inspection = yield* readJsonl(events)
      assert.strictEqual(inspection.unreadable.length, 0)
      const [run, ...others] = Model.topLevel(inspection)
      assert.strictEqual(others.length, 0)
      assert.strictEqual(run!.id, "test-run")
      assert.deepStrictEqual(run!.turns.map((t) => [t.index, t.text, t.usage?.inputTokens, t.calls.length]), [
        [0, "Indexing and mailing.", 10, 5],
        [1, "Asking the researcher.", 15, 1],
        [2, "Done: 3 documents, mail sent.", 20, 0]
      ])
      const state = (id: string) => run!.calls.find((c) => c.id === id)!
      assert.strictEqual(state("c1").state, "completed")
      assert.deepStrictEqual([state("c1").progress?.count, state("c1").progress?.total], [3, 3])
      assert.strictEqual(state("c2").state, "rejected")
      assert.match(state("c2").errorMessage!, /invalid arguments/)
      assert.strictEqual(state("c3").state, "error")
      assert.strictEqual(state("c3").errorMessage, "no record for x")
      assert.strictEqual(state("c4").output, "your token is [redacted]")
      assert.deepStrictEqual(state("c5").arguments, { to: "[redacted]", body: "hello" })
      const nested = inspection.byId.get(state("c6").children[0]!)!
      assert.strictEqual(nested.parentRunId, "test-run")
      assert.strictEqual(nested.depth, 1)
      assert.deepStrictEqual(nested.calls.map((c) => [c.toolName, c.state]), [["add", "completed"]])
      assert.strictEqual(run!.finished?.reason, "final_answer")
      assert.ok(state("c1").elapsed! >= 0)
    }))

  it("a call id reused in a later turn is a new call; a call the model decided but that has not started is queued", () => {
    const stamp = { runId: "r", threadId: "t", sequence: 0 }
    const evs: Array<ToolEvent.Event> = [
      { _tag: "agent.turn_started", ...stamp, timestamp: 1, turn: 0, advertised: [] },
      { _tag: "tool.started", ...stamp, timestamp: 2, toolCallId: "a", toolName: "x", attempt: 1, arguments: {} },
      { _tag: "tool.completed", ...stamp, timestamp: 3, toolCallId: "a", toolName: "x", attempt: 1, elapsed: 1, isError: false, output: "1", artifacts: [] },
      { _tag: "agent.turn_started", ...stamp, timestamp: 4, turn: 1, advertised: [] },
      { _tag: "tool.started", ...stamp, timestamp: 5, toolCallId: "a", toolName: "x", attempt: 1, arguments: {} },
      { _tag: "tool.retrying", ...stamp, timestamp: 6, toolCallId: "a", toolName: "x", attempt: 1, delay: 10, error: new (class extends Error {})("x") as never },
      { _tag: "agent.tool_call", ...stamp, timestamp: 7, turn: 1, toolCallId: "b", toolName: "y", arguments: {} }
    ]
    const inspection = Model.build(evs.map((event, i) => ({ _tag: "Event", line: i + 1, event })))
    const run = inspection.byId.get("r")!
    assert.deepStrictEqual(run.calls.map((c) => [c.key, c.state]), [["0/a", "completed"], ["1/a", "retrying"], ["1/b", "queued"]])
  })
})

describe("questions in the run model", () => {
  it.effect("an in-process question (a live run): the call's details show it, its choices and who answered", () =>
    Effect.gen(function*() {
      const { sink, source } = yield* Sources.live()
      const tools = yield* ToolRegistry.make([deploy])
      yield* Stream.runDrain(Agent.stream({ messages: [{ role: "user", content: "deploy" }], tools })).pipe(
        Effect.provide(Layer.mergeAll(
          ChatModel.scripted([ChatModel.callTools([["a1", "deploy", { service: "web" }]]), ChatModel.answer("ok")]),
          Ask.layerFunction(() => Effect.succeed(Ask.answer({ branch: "main" }, "front-end")))
        )),
        Effect.provideService(EventSink.EventSink, sink),
        Effect.provide(ToolServices.layerTest())
      )
      const snapshot = yield* source.read
      const call = snapshot.inspection.runs[0]!.calls[0]!
      assert.strictEqual(call.state, "completed")
      assert.deepStrictEqual(
        call.questions.map((q) => [q.number, q.message, q.choices, q.outcome, q.answer, q.answeredBy]),
        [[1, "Which branch of web?", [{ branch: "main" }, { branch: "staging" }], "answered", { branch: "main" }, "front-end"]]
      )
      const page = Html.runPage(snapshot, source, snapshot.inspection.runs[0]!.id, { page: 1, allowDecisions: false })!
      assert.include(page, `<div class="k">question 1</div>`)
      assert.include(page, "choices: <code>{&quot;branch&quot;:&quot;main&quot;}</code>")
      assert.include(page, "by front-end")
    }))

  it("a question with no answer yet: the call awaits an answer, and so does the run", () => {
    const stamp = { runId: "r", threadId: "t", sequence: 0, toolCallId: "a", toolName: "x", attempt: 1 }
    const evs: Array<ToolEvent.Event> = [
      { _tag: "tool.started", ...stamp, timestamp: 1, arguments: {} },
      { _tag: "tool.question", ...stamp, timestamp: 2, question: 1, message: "which?", schema: {} }
    ]
    const run = Model.build(evs.map((event, i) => ({ _tag: "Event", line: i + 1, event }))).byId.get("r")!
    assert.strictEqual(run.calls[0]!.state, "awaiting_answer")
    assert.strictEqual(Model.statusOf(run), "awaiting answer")
  })

  it("the answer form: a flat schema's fields, read back by kind; a nested schema has none (JSON instead)", () => {
    const fields = AnswerForm.fieldsOf({
      type: "object",
      properties: {
        branch: { type: "string", enum: ["main", "staging"] },
        replicas: { type: "integer" },
        force: { type: "boolean" },
        note: { anyOf: [{ type: "string" }, { type: "null" }] },
        label: { type: "string" }
      },
      required: ["branch", "replicas", "force", "label"]
    })!
    assert.deepStrictEqual(fields.map((f) => [f.name, f.kind, f.required]), [
      ["branch", "json", true],
      ["replicas", "number", true],
      ["force", "json", true],
      ["note", "string", false],
      ["label", "string", true]
    ])
    const form = new URLSearchParams({ fields: AnswerForm.specOf(fields), "field.branch": `"main"`, "field.replicas": "3", "field.force": "false", "field.note": "", "field.label": "" })
    assert.deepStrictEqual(AnswerForm.valueOf(form), { branch: "main", replicas: 3, force: false, label: "" })
    form.set("field.replicas", "three")
    assert.strictEqual((AnswerForm.valueOf(form) as Record<string, unknown>)["replicas"], "three")
    assert.strictEqual(AnswerForm.fieldsOf({ type: "object", properties: { to: { type: "object", properties: {} } } }), undefined)
    // on the page: a nested answer gets a JSON textarea; a flat one its fields
    const nested = { type: "object", properties: { to: { type: "object", properties: {} } } }
    const durable = (schema: unknown): Sources.Snapshot => ({
      inspection: Model.build([]),
      durable: new Map([["r", {
        workflow: "w",
        runId: "r",
        status: "awaiting answer (1)",
        open: true,
        pending: [],
        questions: [{ callId: "c", toolName: "t", turn: 0, question: 1, message: "where?", schema, choices: undefined }],
        rows: []
      }]])
    })
    const nestedPage = Html.runPage(durable(nested), { kind: "journal", label: "j" }, "r", { page: 1, allowDecisions: true })!
    assert.include(nestedPage, `<textarea name="answer"`)
    assert.notInclude(nestedPage, `class="answer-fields"`)
    const flatPage = Html.runPage(durable({ type: "object", properties: { n: { type: "integer" } }, required: ["n"] }), { kind: "journal", label: "j" }, "r", { page: 1, allowDecisions: true })!
    assert.include(flatPage, `<input name="field.n" type="number" step="1">`)
    assert.notInclude(flatPage, "<textarea")
  })
})

describe("the source readers", () => {
  it.effect("JSONL: a foreign and a garbled line are unreadable with their line numbers; the events around them still read", () =>
    Effect.gen(function*() {
      const inspection = yield* readJsonl(garbled)
      assert.deepStrictEqual(inspection.unreadable.map((u) => u.line), [1, 2])
      assert.strictEqual(inspection.byId.get("test-run")?.calls.length, 6)
      // a torn last line (a write in progress) is not reported
      appendFileSync(garbled, `{"_tag":"agent.turn_sta`)
      assert.strictEqual((yield* readJsonl(garbled)).unreadable.length, 2)
    }))

  it.effect("a SQLite audit database: its receipts as calls (status, consent), a damaged row unreadable", () =>
    Effect.gen(function*() {
      const source = yield* Sources.open(auditDb, { allowDecisions: false })
      assert.strictEqual(source.kind, "audit")
      const { inspection } = yield* source.read
      assert.strictEqual(inspection.unreadable.length, 1)
      const calls = inspection.runs.flatMap((r) => r.calls)
      assert.deepStrictEqual(calls.map((c) => [c.id, c.state]).sort(), [["d1", "completed"], ["d2", "failed"]])
      assert.strictEqual(calls.find((c) => c.id === "d2")!.receipt!.status, "consent_denied")
      assert.strictEqual(Model.statusOf(inspection.runs[0]!), "audited")
      const page = Html.runPage(yield* source.read, source, inspection.runs[0]!.id, { page: 1, allowDecisions: false })!
      assert.match(page, /<div class="k">consent<\/div><div>denied by /)
    }))

  it.effect("a durable journal on SQLite: its runs, journaled events, status and pending approvals (arguments redacted)", () =>
    Effect.gen(function*() {
      const source = yield* Sources.open(journalDb, { allowDecisions: false })
      assert.strictEqual(source.kind, "journal")
      assert.strictEqual(source.decide, undefined)
      const snapshot = yield* source.read
      const durable = snapshot.durable!.get("run-1")!
      assert.strictEqual(durable.workflow, "mailer")
      assert.strictEqual(durable.status, "awaiting approval (2)")
      assert.deepStrictEqual(durable.pending.map((p) => [p.callId, p.arguments]), [
        ["c1", { to: "[redacted]", body: "one" }],
        ["c2", { to: "[redacted]", body: "two" }]
      ])
      assert.ok(durable.rows.length > 0)
      const run = snapshot.inspection.byId.get("run-1")!
      assert.deepStrictEqual(run.calls.map((c) => [c.id, c.state]), [["c1", "awaiting_approval"], ["c2", "awaiting_approval"]])
    }))

  it.effect("not a source: a missing file, a SQLite file with neither table", () =>
    Effect.gen(function*() {
      assert.match((yield* Effect.flip(Sources.open(join(dir, "nope.jsonl"), { allowDecisions: false }))).detail, /no such file/)
      const other = join(dir, "other.db")
      yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* sql`CREATE TABLE t (x INTEGER)`
      }).pipe(Effect.provide(SqliteClient.layer({ filename: other })))
      assert.match((yield* Effect.flip(Sources.open(other, { allowDecisions: false }))).detail, /neither a durable journal nor/)
    }))
})

/** Serves `source` on a free loopback port for the test's scope. */
const served = (source: Sources.Source) => Server.serve(source)

const get = (url: string, init?: RequestInit) => Effect.promise(() => fetch(url, { redirect: "manual", ...init }))
const text = (response: Response) => Effect.promise(() => response.text())

describe("the HTTP routes", () => {
  it.effect("the runs list and a run's page, over loopback: calls, states, repair messages, nested rows; secrets never shown", () =>
    Effect.gen(function*() {
      const { url } = yield* served(Sources.jsonl(garbled, "garbled.jsonl"))
      assert.match(url, /^http:\/\/127\.0\.0\.1:\d+$/)
      const index = yield* get(`${url}/`)
      assert.strictEqual(index.status, 200)
      assert.match(index.headers.get("content-type")!, /text\/html/)
      const list = yield* text(index)
      assert.include(list, `href="/run?id=test-run"`)
      assert.include(list, "test-run/1/c6") // the nested run, under its parent
      assert.include(list, "line 1: unreadable")
      assert.include(list, "line 2: unreadable")
      const page = yield* text(yield* get(`${url}/run?id=test-run`))
      for (const name of ["index_documents", "lookup", "token", "send", "researcher"]) assert.include(page, `<b>${name}</b>`)
      assert.include(page, `data-state="rejected"`)
      assert.include(page, "invalid arguments")
      assert.include(page, "no record for x")
      assert.include(page, `data-nested-run="test-run/1/c6"`)
      assert.include(page, "10 in / 4 out tokens")
      assert.include(page, "Indexing and mailing.")
      assert.include(page, `<span class="redacted" title="redacted in the events">[redacted]</span>`)
      for (const secret of secrets) assert.notInclude(page + list, secret)
      const missing = yield* get(`${url}/run?id=nope`)
      assert.strictEqual(missing.status, 404)
      // another host name (DNS rebinding) is refused; localhost is the same server
      const status = (host: string) =>
        Effect.callback<number>((resume) => {
          const req = httpRequest(`${url}/`, { headers: { host } }, (res) => {
            res.resume()
            resume(Effect.succeed(res.statusCode ?? 0))
          })
          req.end()
        })
      const port = new URL(url).port
      assert.strictEqual(yield* status(`evil.example:${port}`), 403)
      assert.strictEqual(yield* status(`localhost:${port}`), 200)
      const refused = yield* get(`${url}/decide`, { method: "POST", body: "workflow=w&run=r&decision=cancel", headers: { "content-type": "application/x-www-form-urlencoded" } })
      assert.strictEqual(refused.status, 403)
    }).pipe(Effect.scoped))

  it.effect("a 1,000-call run is paged: 200 calls a page, with its turns", () =>
    Effect.gen(function*() {
      const stamp = { runId: "big", threadId: "t" }
      const evs: Array<Model.Entry> = [{ _tag: "Event", line: 1, event: { _tag: "agent.turn_started", ...stamp, sequence: 0, timestamp: 0, turn: 0, advertised: [] } }]
      for (let i = 0; i < 1000; i++) {
        evs.push({ _tag: "Event", line: evs.length + 1, event: { _tag: "tool.started", ...stamp, sequence: evs.length, timestamp: i, toolCallId: `k${i}`, toolName: "t", attempt: 1, arguments: { i } } })
        evs.push({ _tag: "Event", line: evs.length + 1, event: { _tag: "tool.completed", ...stamp, sequence: evs.length, timestamp: i + 1, toolCallId: `k${i}`, toolName: "t", attempt: 1, elapsed: 1, isError: false, output: `${i}`, artifacts: [] } })
      }
      const snapshot = { inspection: Model.build(evs) }
      const page = Html.runPage(snapshot, { kind: "jsonl", label: "big" }, "big", { page: 2, allowDecisions: false })!
      assert.include(page, "calls 201–400 of 1000 · page 2 of 5")
      assert.strictEqual(page.split(`<details class="call`).length - 1, Html.callsPerPage)
      assert.include(page, `data-call="k200"`)
      assert.notInclude(page, `data-call="k199"`)
      assert.include(page, `data-turn="0"`)
    }))

  it.effect("a durable journal with --allow-decisions: an approval posted from the page's origin reaches the run; another origin is refused", () =>
    Effect.gen(function*() {
      const source = yield* Sources.open(journalDb, { allowDecisions: true })
      const { url } = yield* served(source)
      const page = yield* text(yield* get(`${url}/run?id=run-1`))
      assert.include(page, "Pending approvals")
      assert.include(page, `value="approve"`)
      assert.notInclude(page, "alice@example.com")
      const form = { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded", origin: url } }
      const foreign = yield* get(`${url}/decide`, { ...form, headers: { ...form.headers, origin: "http://evil.example" }, body: "workflow=mailer&run=run-1&call=c1&decision=approve" })
      assert.strictEqual(foreign.status, 403)
      const approved = yield* get(`${url}/decide`, { ...form, body: "workflow=mailer&run=run-1&call=c1&decision=approve" })
      assert.strictEqual(approved.status, 303)
      assert.include(decodeURIComponent(approved.headers.get("location")!), "approved c1 of run run-1")
      const unknown = yield* get(`${url}/decide`, { ...form, body: "workflow=mailer&run=run-1&call=c9&decision=approve" })
      assert.match(decodeURIComponent(unknown.headers.get("location")!), /ok=0&flash=call c9 of run run-1: not pending/)
      // the decision is the run's: the agent's own pending list no longer has c1
      const pending = yield* Effect.scoped(mailer.pending("run-1").pipe(Effect.provide(Runner.layerSqliteClient({ filename: journalDb }))))
      assert.deepStrictEqual(pending.map((p) => p.callId), ["c2"])
      // cancel, from the page: journaled for the runner that owns the run; it waits for no approval any more
      const cancelled = yield* get(`${url}/decide`, { ...form, body: "workflow=mailer&run=run-2&decision=cancel&reason=wrong+customer" })
      assert.include(decodeURIComponent(cancelled.headers.get("location")!), "cancelled run run-2")
      const after = yield* source.read
      assert.strictEqual(after.durable!.get("run-2")!.status, "running, cancelling: wrong customer")
      assert.deepStrictEqual(after.durable!.get("run-2")!.pending, [])
    }).pipe(Effect.scoped))

  it.live("a durable question: listed with its message, choices and fields; refused without --allow-decisions; a wrong answer refused with its reason (still open); an answer reaches the run, which finishes", () =>
    Effect.gen(function*() {
      yield* asking("release-1")
      yield* asking("release-2")
      const form = (origin: string) => ({ method: "POST", headers: { "content-type": "application/x-www-form-urlencoded", origin } })
      const post = (url: string, fields: Record<string, string>) => get(`${url}/decide`, { ...form(url), body: new URLSearchParams(fields).toString() })
      const flashOf = (response: Response) => {
        const location = new URL(response.headers.get("location")!, "http://x")
        return { ok: location.searchParams.get("ok"), text: location.searchParams.get("flash") ?? "" }
      }
      const ids = { workflow: "deployer", run: "release-1", call: "q1", question: "1" }
      // read-only: shown, with the controls disabled; a post is refused
      yield* Effect.scoped(Effect.gen(function*() {
        const { url } = yield* served(yield* Sources.open(asksDb, { allowDecisions: false }))
        const list = yield* text(yield* get(`${url}/`))
        assert.include(list, "awaiting answer (1)")
        const page = yield* text(yield* get(`${url}/run?id=release-1`))
        assert.include(page, "Open questions")
        assert.include(page, "Which branch of api?")
        assert.include(page, `<code>branch</code>: &quot;main&quot; | &quot;staging&quot;`)
        assert.include(page, `<button class="choice" name="answer" value="{&quot;branch&quot;:&quot;main&quot;}" disabled>main</button>`)
        // the suspended call, on the timeline (it has journaled no event yet), with its open question
        assert.include(page, `data-call="q1" data-state="awaiting_answer"`)
        assert.include(page, "→ waiting for an answer")
        const refused = yield* post(url, { ...ids, decision: "answer", answer: `{"branch":"main"}` })
        assert.strictEqual(refused.status, 403)
        assert.include(yield* text(refused), "decisions are off")
      }))
      const source = yield* Sources.open(asksDb, { allowDecisions: true })
      const { url } = yield* served(source)
      const page = yield* text(yield* get(`${url}/run?id=release-1`))
      assert.notInclude(page, " disabled>")
      // the flat schema's form: a select of the enum's values (as JSON)
      assert.include(page, `<select name="field.branch"><option value="">choose…</option><option value="&quot;main&quot;">main</option>`)
      // another origin is refused, as approvals are
      const foreign = yield* get(`${url}/decide`, { ...form("http://evil.example"), body: new URLSearchParams({ ...ids, decision: "answer", answer: `{"branch":"main"}` }).toString() })
      assert.strictEqual(foreign.status, 403)
      // a wrong answer (the textarea's JSON): refused with the reason; the question stays open, the page says why
      const wrong = flashOf(yield* post(url, { ...ids, decision: "answer", answer: `{"branch":"prod"}` }))
      assert.strictEqual(wrong.ok, "0")
      assert.match(wrong.text, /^answer refused \(the question stays open\): .*branch/)
      const notJson = flashOf(yield* post(url, { ...ids, decision: "answer", answer: `{branch` }))
      assert.match(notJson.text, /not JSON/)
      assert.strictEqual((yield* Effect.provide(deployer.questions("release-1"), Runner.layerSqliteClient({ filename: asksDb }))).length, 1)
      const shownRefusal = yield* text(yield* get(`${url}/run?id=release-1&ok=0&flash=${encodeURIComponent(wrong.text)}`))
      assert.include(shownRefusal, `<div class="flash bad">${Html.escape(wrong.text)}</div>`)
      assert.include(shownRefusal, `<tr class="question" data-call="q1" data-question="1">`)
      // the form's fields: the run resumes and finishes with the answer
      const answered = flashOf(yield* post(url, { ...ids, decision: "fields", fields: AnswerForm.specOf(AnswerForm.fieldsOf((yield* source.read).durable!.get("release-1")!.questions[0]!.schema)!), "field.branch": `"staging"` }))
      assert.deepStrictEqual(answered, { ok: "1", text: "answered question 1 of call q1 of run release-1" })
      const result = yield* deployer.result("release-1").pipe(Effect.timeout("20 seconds"))
      assert.strictEqual(result.text, "done: deployed api@staging")
      // answered again: not pending any more
      assert.strictEqual(flashOf(yield* post(url, { ...ids, decision: "answer", answer: `{"branch":"main"}` })).ok, "0")
      // declined, with a reason: the handler reads it
      const declined = flashOf(yield* post(url, { ...ids, run: "release-2", decision: "decline", reason: "ask ops" }))
      assert.deepStrictEqual(declined, { ok: "1", text: "declined question 1 of call q1 of run release-2" })
      assert.strictEqual((yield* deployer.result("release-2").pipe(Effect.timeout("20 seconds"))).text, "done: declined: ask ops")
      // the finished run's call shows its question and how it was answered, from the journaled events
      const after = yield* source.read
      assert.strictEqual(after.durable!.get("release-1")!.status, "finished")
      assert.deepStrictEqual(after.durable!.get("release-1")!.questions, [])
      const done = yield* text(yield* get(`${url}/run?id=release-1`))
      assert.notInclude(done, "Open questions")
      assert.include(done, `<div class="k">question 1</div>`)
      assert.include(done, `answered <code>{&quot;branch&quot;:&quot;staging&quot;}</code> by inspector`)
    }).pipe(Effect.scoped, Effect.provide(deployRunner)), 60_000)

  it.effect("the command line: an unreadable source exits 1 in one line; --allow-decisions only for a journal, on a loopback host", () =>
    Effect.gen(function*() {
      const exitOf = (...args: ReadonlyArray<string>) => Effect.map(Effect.exit(Cli.run(["inspect", ...args], { version: "1" })), Cli.exitCode)
      assert.strictEqual(yield* exitOf(join(dir, "missing.jsonl")), 1)
      assert.strictEqual(yield* exitOf(events, "--allow-decisions"), 2)
      // no login on the page: decisions only where no other machine reaches it
      assert.strictEqual(yield* exitOf(events, "--allow-decisions", "--host", "0.0.0.0"), 2)
      assert.strictEqual(yield* exitOf(events, "--allow-decisions", "--host", "192.168.1.20"), 2)
    }).pipe(Effect.provide(Cli.layer)))
})
