/**
 * `tinyagents durable` in process (`Cli.run`): its help, the usage errors it refuses before touching
 * a journal, and the refusals and listings it reads from a real SQLite journal. The journal is made
 * once by a runner in this process (`Runner.layerSqlite`, stopped before any command runs): run
 * `run-1` of workflow `mailer` waits for the approval of two `send` calls (`c1`, `c2`; `to` is
 * redacted), run `done-1` of workflow `plain` has finished, run `queued-1` of `plain` was started by
 * a client after the runner stopped (queued), and run `state-1` of workflow `counting` (with a state)
 * has finished. The command approving a run whose
 * runner was killed, from another process, is tested end to end in `test/durable/Approve.test.ts`.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Result, Schedule, Schema } from "effect"
import { TestConsole } from "effect/testing"
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll } from "vitest"
import * as AgentState from "../../src/agent/AgentState.ts"
import * as ChatModel from "../../src/agent/ChatModel.ts"
import * as Cli from "../../src/cli/Cli.ts"
import * as Ask from "../../src/governance/Ask.ts"
import * as Tool from "../../src/contract/Tool.ts"
import * as ToolRegistry from "../../src/contract/ToolRegistry.ts"
import { DurableAgent, Runner } from "../../src/durable/index.ts"
import { Stores } from "../../src/stores/index.ts"

const ansi = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, "g")
const lines = (entries: ReadonlyArray<unknown>) => entries.map((line) => String(line).replace(ansi, "")).join("\n")

const cli = (...args: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const exit = yield* Effect.exit(Cli.run(args, { version: "1.2.3" }))
    return { code: Cli.exitCode(exit), stdout: lines(yield* TestConsole.logLines), stderr: lines(yield* TestConsole.errorLines) }
  }).pipe(Effect.provide([Cli.layer, Layer.fresh(TestConsole.layer)]))

const send = Tool.make("send", {
  description: "Sends a message.",
  input: Schema.Struct({ to: Schema.String, body: Schema.String }),
  safety: { access: "write", redact: { keys: ["to"] } },
  handler: ({ body }) => Effect.succeed(`sent ${body}`)
})
const registry = Result.getOrThrow(ToolRegistry.makeResult([send]))

/** Asks for two sends, then answers `done` once it has read their results. */
const model = ChatModel.fromFunction((request) =>
  Effect.succeed(
    request.messages.some((m) => m.role === "tool") || request.messages.some((m) => m.role === "user" && m.content === "finish")
      ? ChatModel.answer("done")
      : ChatModel.callTools([
        ["c1", "send", { to: "alice@example.com", body: "one" }],
        ["c2", "send", { to: "bob@example.com", body: "two" }]
      ])
  )
)

const dir = mkdtempSync(join(tmpdir(), "tinyagents-cli-durable-"))
const db = join(dir, "journal.db")

const mailer = DurableAgent.make({ name: "mailer", tools: registry, approval: () => true, pollInterval: "20 millis" })
const plain = DurableAgent.make({ name: "plain", tools: registry, pollInterval: "20 millis" })
/** Counts the sends its runs make (Agent.run's state): run `state-1` finishes with `{ sent: 2 }`. */
const Sent = AgentState.make({
  schema: Schema.Struct({ sent: Schema.Int }),
  update: Schema.Struct({ one: Schema.Literal(true) }),
  initial: { sent: 0 },
  reduce: (state) => ({ sent: state.sent + 1 })
})
const counted = Tool.make("send", {
  description: "Sends a message.",
  input: Schema.Struct({ to: Schema.String, body: Schema.String }),
  services: [AgentState.AgentState],
  handler: ({ body }) => Effect.as(Sent.update({ one: true }), `sent ${body}`)
})
const counting = DurableAgent.make({
  name: "counting",
  tools: Result.getOrThrow(ToolRegistry.makeResult([counted])),
  state: Sent,
  pollInterval: "20 millis"
})
/** Asks which branch to deploy: run `ask-1` of workflow `asker` waits for the answer of call `d1`. */
const deploy = Tool.make("deploy", {
  description: "Deploys; asks which branch.",
  input: Schema.Struct({ service: Schema.String }),
  failure: Ask.NotAnswered,
  services: [Ask.Ask],
  handler: ({ service }) =>
    Effect.map(
      Ask.question({
        message: `Which branch of ${service}?`,
        answer: Schema.Struct({ branch: Schema.Literals(["main", "staging"]) }),
        choices: [{ branch: "main" }]
      }),
      ({ branch }) => `deployed ${branch}`
    )
})
const asker = DurableAgent.make({ name: "asker", tools: Result.getOrThrow(ToolRegistry.makeResult([deploy])), pollInterval: "20 millis" })
const askModel = ChatModel.fromFunction((request) =>
  Effect.succeed(
    request.messages.some((m) => m.role === "tool") ? ChatModel.answer("done") : ChatModel.callTools([["d1", "deploy", { service: "api" }]])
  )
)
/** A runner on the journal with the agents (stopped when the effect it is provided to ends). */
const live = () =>
  Layer.mergeAll(mailer.layer, plain.layer, counting.layer, asker.layer.pipe(Layer.provide(askModel))).pipe(
    Layer.provide([model, Stores.layerSqlite({ filename: join(dir, "stores.db") })]),
    Layer.provideMerge(
      Runner.layerSqlite({ filename: db, pollInterval: "20 millis", lockExpiration: "2 seconds", shutdownTimeout: "1 second" })
    )
  )

beforeAll(async () => {
  await Effect.runPromise(
    Effect.gen(function*() {
      yield* plain.start("done-1", [{ role: "user", content: "finish" }])
      yield* plain.result("done-1")
      yield* counting.start("state-1", [{ role: "user", content: "mail them" }])
      yield* counting.result("state-1")
      yield* asker.start("ask-1", [{ role: "user", content: "deploy" }])
      yield* asker.questions("ask-1").pipe(
        Effect.repeat({ until: (open) => open.length === 1, schedule: Schedule.spaced("20 millis") }),
        Effect.timeout("20 seconds")
      )
      for (const runId of ["run-1", "cancel-1"]) {
        yield* mailer.start(runId, [{ role: "user", content: "mail them" }])
        yield* mailer.pending(runId).pipe(
          Effect.repeat({ until: (pending) => pending.length === 2, schedule: Schedule.spaced("20 millis") }),
          Effect.timeout("20 seconds")
        )
      }
    }).pipe(Effect.provide(live()))
  )
  // started while no runner runs: queued
  await Effect.runPromise(
    plain.start("queued-1", [{ role: "user", content: "finish" }]).pipe(
      Effect.provide(Runner.layerSqliteClient({ filename: db, pollInterval: "20 millis" }))
    )
  )
}, 40_000)
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** The journal's bytes (its file and its write-ahead log, when there is one): what a read-only command leaves alone. */
const journalFiles = () => [db, `${db}-wal`].map((file) => existsSync(file) ? readFileSync(file) : undefined)

const journal = (workflow = "mailer") => ["--db", db, "--workflow", workflow]

describe("tinyagents durable", () => {
  it.effect("help lists approve and status, and approve's flags", () =>
    Effect.gen(function*() {
      const group = yield* cli("durable", "--help")
      assert.strictEqual(group.code, 0)
      for (const text of ["approve", "answer", "cancel", "status", "list", "pending"]) assert.include(group.stdout, text)
      const answer = yield* cli("durable", "answer", "--help")
      assert.strictEqual(answer.code, 0)
      for (const text of ["<run-id>", "<call-id>", "--json", "--decline", "--reason", "--question", "--by"]) assert.include(answer.stdout, text)
      const approve = yield* cli("durable", "approve", "--help")
      assert.strictEqual(approve.code, 0)
      for (const text of ["<run-id>", "<call-id>", "--db", "--postgres", "--workflow", "--deny", "--reason", "--by"]) {
        assert.include(approve.stdout, text)
      }
    }))

  it.effect("usage errors exit 2 with the reason: no journal, two journals, a missing file, --reason without --deny", () =>
    Effect.gen(function*() {
      const cases = [
        [["durable", "approve", "r1", "c1", "--workflow", "w"], "name one journal: --db <sqlite file> or --postgres <url>"],
        [
          ["durable", "approve", "r1", "c1", "--workflow", "w", "--db", "x.db", "--postgres", "postgres://localhost/db"],
          "name one journal"
        ],
        [["durable", "status", "r1", "--workflow", "w", "--db", "/nonexistent/journal.db"], "no such journal file: /nonexistent/journal.db"],
        [["durable", "approve", "r1", "c1", "--workflow", "w", "--db", "x.db", "--reason", "why"], "--reason goes with --deny"],
        [["durable", "approve", "r1", "--workflow", "w", "--db", "x.db"], "Missing required argument"],
        [["durable", "answer", "r1", "c1", "--workflow", "w", "--db", "x.db"], "give the answer with --json '<object>', or --decline"],
        [["durable", "answer", "r1", "c1", "--workflow", "w", "--db", "x.db", "--json", "{}", "--decline"], "give the answer with --json"],
        [["durable", "answer", "r1", "c1", "--workflow", "w", "--db", "x.db", "--json", "{nope"], "--json: not JSON"],
        [["durable", "answer", "r1", "c1", "--workflow", "w", "--db", "x.db", "--json", "{}", "--reason", "x"], "--reason goes with --decline"]
      ] as const
      for (const [args, message] of cases) {
        const { code, stderr } = yield* cli(...args)
        assert.strictEqual(code, 2, `${args.join(" ")}: ${stderr}`)
        assert.include(stderr, message)
      }
    }))

  it.live("a run waiting for an answer: status, list and pending show the question; answer refuses a wrong answer, then answers", () =>
    Effect.gen(function*() {
      const status = yield* cli("durable", "status", "ask-1", ...journal("asker"))
      assert.strictEqual(status.code, 0, status.stderr)
      assert.include(
        status.stdout,
        `waiting for an answer: d1 #1 deploy: "Which branch of api?" answer: {"type":"object","properties":{"branch":{"type":"string","enum":["main","staging"]}},"required":["branch"],"additionalProperties":false} choices: [{"branch":"main"}]`
      )
      assert.include((yield* cli("durable", "list", ...journal("asker"))).stdout, "ask-1  awaiting answer (1)")
      assert.include((yield* cli("durable", "pending", ...journal("asker"))).stdout, "ask-1  asks: d1 #1 deploy")
      const wrong = yield* cli("durable", "answer", "ask-1", "d1", ...journal("asker"), "--json", `{"branch":"prod"}`)
      assert.strictEqual(wrong.code, 1)
      assert.include(wrong.stderr, `answer refused (the question stays open): the answer does not match the question's schema: at "branch"`)
      const other = yield* cli("durable", "answer", "ask-1", "d9", ...journal("asker"), "--json", `{"branch":"main"}`)
      assert.strictEqual(other.code, 1)
      assert.include(other.stderr, `no open question for call "d9" of run "ask-1" (open: d1 #1)`)
      assert.include((yield* cli("durable", "status", "ask-1", ...journal("asker"))).stdout, "waiting for an answer: d1 #1")
      const answered = yield* cli("durable", "answer", "ask-1", "d1", ...journal("asker"), "--json", `{"branch":"main"}`, "--by", "gus")
      assert.strictEqual(answered.code, 0, answered.stderr)
      assert.include(answered.stdout, "answered the question of d1 of run ask-1")
      assert.notInclude((yield* cli("durable", "status", "ask-1", ...journal("asker"))).stdout, "waiting for an answer")
      const again = yield* cli("durable", "answer", "ask-1", "d1", ...journal("asker"), "--decline")
      assert.strictEqual(again.code, 1)
      assert.include(again.stderr, "is already answered")
    }))

  it.live("status lists a running run's pending approvals (call id, tool, redacted arguments), and a finished run's answer", () =>
    Effect.gen(function*() {
      const running = yield* cli("durable", "status", "run-1", ...journal())
      assert.strictEqual(running.code, 0, running.stderr)
      assert.include(running.stdout, "run-1: running")
      assert.include(running.stdout, `waiting for approval: c1 send {"to":"[redacted]","body":"one"}`)
      assert.include(running.stdout, "waiting for approval: c2 send")
      assert.notInclude(running.stdout, "alice@example.com")
      const finished = yield* cli("durable", "status", "done-1", ...journal("plain"))
      assert.strictEqual(finished.code, 0, finished.stderr)
      assert.include(finished.stdout, "done-1: finished (final_answer, 1 turns): done")
      assert.notInclude(finished.stdout, "state:")
      const stateful = yield* cli("durable", "status", "state-1", ...journal("counting"))
      assert.strictEqual(stateful.code, 0, stateful.stderr)
      assert.include(stateful.stdout, "state-1: finished (final_answer, 2 turns): done")
      assert.include(stateful.stdout, `state: {"sent":2}`)
    }))

  it.live("list prints each run's status, turn and start, newest first; pending every waiting call across runs; both read only", () =>
    Effect.gen(function*() {
      const before = journalFiles()
      const started = /started (\S+)/
      const listed = yield* cli("durable", "list", ...journal())
      assert.strictEqual(listed.code, 0, listed.stderr)
      const rows = listed.stdout.split("\n").filter((line) => line !== "")
      // cancel-1 was started after run-1
      assert.deepStrictEqual(rows.map((line) => line.split("  ").slice(0, 3)), [
        ["cancel-1", "awaiting approval (2)", "turn 0"],
        ["run-1", "awaiting approval (2)", "turn 0"]
      ])
      for (const line of rows) assert.isFalse(Number.isNaN(Date.parse(started.exec(line)![1]!)), line)
      const plainRuns = yield* cli("durable", "list", ...journal("plain"))
      assert.match(plainRuns.stdout, /^done-1  finished  turn 0  started \S+Z$/m)
      assert.match(plainRuns.stdout, /^queued-1  queued  no turn yet  started \S+Z$/m)
      const stateful = yield* cli("durable", "list", ...journal("counting"))
      assert.match(stateful.stdout, /^state-1  finished  turn 1  started /m)
      const one = yield* cli("durable", "list", ...journal(), "--limit", "1")
      assert.include(one.stdout, "cancel-1  awaiting approval (2)")
      assert.notInclude(one.stdout, "run-1")
      assert.include(one.stdout, "(the newest 1 of 2 runs: --limit to see more)")

      const pending = yield* cli("durable", "pending", ...journal())
      assert.strictEqual(pending.code, 0, pending.stderr)
      assert.deepStrictEqual(pending.stdout.split("\n").filter((line) => line !== ""), [
        `cancel-1  c1  send  {"to":"[redacted]","body":"one"}`,
        `cancel-1  c2  send  {"to":"[redacted]","body":"two"}`,
        `run-1  c1  send  {"to":"[redacted]","body":"one"}`,
        `run-1  c2  send  {"to":"[redacted]","body":"two"}`
      ])
      const none = yield* cli("durable", "pending", ...journal("plain"))
      assert.strictEqual(none.stdout.trim(), "no calls of workflow plain wait for approval")

      for (const args of [["list", ...journal("mailr")], ["pending", ...journal("mailr")]]) {
        const unknown = yield* cli("durable", ...args)
        assert.strictEqual(unknown.code, 1, unknown.stderr)
        assert.include(unknown.stderr, `no workflow "mailr" in the journal ${db} (its workflows: asker, counting, mailer, plain)`)
      }
      const bad = yield* cli("durable", "list", ...journal(), "--limit", "0")
      assert.strictEqual(bad.code, 2, bad.stderr)
      assert.include(bad.stderr, "--limit: at least 1")
      assert.deepStrictEqual(journalFiles(), before, "the journal was written to")
    }))

  it.live("status and approve exit 1 in one line for an unknown run or workflow, and send nothing", () =>
    Effect.gen(function*() {
      const before = journalFiles()
      const cases = [
        [["durable", "status", "nope", ...journal()], `no run "nope" of workflow "mailer"`],
        [["durable", "status", "run-1", ...journal("mailr")], `no workflow "mailr" in the journal ${db} (its workflows: asker, counting, mailer, plain)`],
        [["durable", "approve", "nope", "c1", ...journal()], `no run "nope" of workflow "mailer"`],
        [["durable", "approve", "run-1", "c1", ...journal("mailr")], `no workflow "mailr"`]
      ] as const
      for (const [args, message] of cases) {
        const { code, stderr, stdout } = yield* cli(...args)
        assert.strictEqual(code, 1, `${args.join(" ")}: ${stderr}`)
        assert.include(stderr, message)
        assert.notInclude(stdout, "approved")
        assert.notInclude(stderr, "    at ")
      }
      assert.deepStrictEqual(journalFiles(), before, "the journal was written to")
    }))

  it.live("approve refuses a call that is not pending (listing those that are), a finished run, and a second decision", () =>
    Effect.gen(function*() {
      const typo = yield* cli("durable", "approve", "run-1", "c_typo", ...journal())
      assert.strictEqual(typo.code, 1, typo.stderr)
      assert.include(typo.stderr, `no pending approval for call "c_typo" of run "run-1" (pending: c1, c2)`)

      const finished = yield* cli("durable", "approve", "done-1", "c1", ...journal("plain"), "--deny")
      assert.strictEqual(finished.code, 1, finished.stderr)
      assert.include(finished.stderr, `run "done-1" has finished: nothing to decide`)
      assert.notInclude(finished.stdout, "denied")

      const approved = yield* cli("durable", "approve", "run-1", "c1", ...journal(), "--by", "alice")
      assert.strictEqual(approved.code, 0, approved.stderr)
      assert.include(approved.stdout, "approved c1 of run run-1")
      const denied = yield* cli("durable", "approve", "run-1", "c1", ...journal(), "--deny", "--reason", "changed my mind")
      assert.strictEqual(denied.code, 1, denied.stderr)
      assert.include(denied.stderr, `call "c1" of run "run-1" is already decided`)
      assert.notInclude(denied.stdout, "denied")

      // only c2 still waits
      const status = yield* cli("durable", "status", "run-1", ...journal())
      assert.notInclude(status.stdout, "waiting for approval: c1")
      assert.include(status.stdout, "waiting for approval: c2")
    }))

  it.live("a journal that is empty, not SQLite, or unreachable: exit 1, one line, no stack, no password, nothing written", () =>
    Effect.gen(function*() {
      const empty = join(dir, "empty.db")
      const junk = join(dir, "junk.db")
      writeFileSync(empty, "")
      writeFileSync(junk, "this is not a database, just some text that is long enough\n".repeat(10))
      const cases = [
        [["durable", "status", "run-1", "--db", empty, "-w", "mailer"], `no durable journal in ${empty} (the file is empty)`],
        [["durable", "approve", "run-1", "c1", "--db", empty, "-w", "mailer"], "no durable journal"],
        [["durable", "status", "run-1", "--db", junk, "-w", "mailer"], `cannot read the journal ${junk}: `],
        [["durable", "approve", "run-1", "c1", "--db", junk, "-w", "mailer"], "cannot read the journal"],
        [
          ["durable", "status", "run-1", "--postgres", "postgres://u:s3cretpw@127.0.0.1:1/db", "-w", "mailer"],
          "cannot read the journal postgres://u:[redacted]@127.0.0.1:1/db: "
        ]
      ] as const
      for (const [args, message] of cases) {
        const { code, stderr } = yield* cli(...args)
        assert.strictEqual(code, 1, `${args.join(" ")}: ${stderr}`)
        assert.include(stderr, message)
        assert.notInclude(stderr, "s3cretpw")
        assert.notInclude(stderr, "    at ")
        assert.strictEqual(stderr.trim().split("\n").filter((line) => line.trim() !== "").length, 2, stderr) // "ERROR" and the line
      }
      assert.strictEqual(statSync(empty).size, 0, "the empty file was written to")
    }))

  // last: it restarts a runner, which resumes the other runs too
  it.live("cancel: refuses a finished or unknown run; cancels a run whose runner is down; the restarted runner ends it cancelled", () =>
    Effect.gen(function*() {
      const finished = yield* cli("durable", "cancel", "done-1", ...journal("plain"))
      assert.strictEqual(finished.code, 1, finished.stderr)
      assert.include(finished.stderr, `run "done-1" has finished: nothing to cancel`)
      const unknown = yield* cli("durable", "cancel", "nope", ...journal())
      assert.strictEqual(unknown.code, 1, unknown.stderr)
      assert.include(unknown.stderr, `no run "nope" of workflow "mailer"`)

      const cancelled = yield* cli("durable", "cancel", "cancel-1", ...journal(), "--reason", "wrong customer")
      assert.strictEqual(cancelled.code, 0, cancelled.stderr)
      assert.include(cancelled.stdout, "cancelled run cancel-1")
      const cancelling = yield* cli("durable", "status", "cancel-1", ...journal())
      assert.include(cancelling.stdout, "cancel-1: running, cancelling: wrong customer")

      const error = yield* Effect.flip(mailer.result("cancel-1")).pipe(Effect.provide(live()))
      assert.instanceOf(error, DurableAgent.RunCancelled)
      assert.strictEqual(error.reason, "wrong customer")
      const status = yield* cli("durable", "status", "cancel-1", ...journal())
      assert.strictEqual(status.code, 0, status.stderr)
      assert.include(status.stdout, "cancel-1: cancelled: wrong customer")
      assert.notInclude(status.stdout, "waiting for approval")
      const listed = yield* cli("durable", "list", ...journal())
      assert.match(listed.stdout, /^cancel-1  cancelled  turn 0  /m)
      const pending = yield* cli("durable", "pending", ...journal())
      assert.notInclude(pending.stdout, "cancel-1")
      const again = yield* cli("durable", "cancel", "cancel-1", ...journal())
      assert.strictEqual(again.code, 0, again.stderr)
      const approve = yield* cli("durable", "approve", "cancel-1", "c2", ...journal())
      assert.strictEqual(approve.code, 1, approve.stderr)
      assert.include(approve.stderr, `run "cancel-1" has been cancelled: nothing to decide`)
    }), 30_000)
})
