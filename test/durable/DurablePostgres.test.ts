/**
 * DurableAgent on a real Postgres server started for this file (full tier: `npm run test:full`):
 * a runner and a client, an approval decided and a run cancelled by the client, runs and pending
 * approvals listed by the client, a tool's question answered by the client (refused first), the
 * engine's rows after a run (final replies are saved in one statement here: internal/messageStorage.ts).
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Effect, Layer, Redacted, Schedule, Schema, Stream } from "effect"
import { SqlClient } from "effect/sql"
import { Approval, Ask, ChatModel, Tool, ToolRegistry } from "../../src/index.ts"
import { DurableAgent, Runner } from "../../src/durable/index.ts"
import * as Stores from "../../src/stores/Stores.ts"
import * as Core from "./support/core.ts"
import { type PostgresServer, postgresSkipReason, startPostgres } from "../support/postgres.ts"

afterAll(Core.cleanup)

const user = (content: string) => [{ role: "user" as const, content }]

// A real Postgres server started for this file (PGlite cannot host a runner: one session behind its socket).
let pg: PostgresServer | undefined
beforeAll(async () => {
  if (postgresSkipReason === undefined) pg = await startPostgres()
}, 60_000)
afterAll(() => pg?.destroy())

describe.skipIf(postgresSkipReason !== undefined)(`DurableAgent on Postgres${postgresSkipReason === undefined ? "" : ` (skipped: ${postgresSkipReason})`}`, () => {
  it.live("a runner and a client on Postgres: a run with an approval decided by the client", () =>
    Effect.gen(function*() {
      const counters = Core.makeCounters()
      const agent = DurableAgent.make({
        name: "pg",
        tools: Core.makeTools(counters),
        pollInterval: "20 millis",
        approval: (call) => call.name === "plain_write"
      })
      const url = Redacted.make(pg!.url)
      const runId = `pg-${Date.now()}`
      const port = 40_000 + Math.floor(Math.random() * 10_000)
      const runner = Runner.layerPostgres({
        url,
        address: { host: "127.0.0.1", port },
        pollInterval: "50 millis",
        lockExpiration: "3 seconds",
        shutdownTimeout: "50 millis"
      })
      const result = yield* Effect.gen(function*() {
        yield* agent.start(runId, user("plan: keyed_write,plain_write;read_value"))
        yield* Stream.runHead(Stream.filter(agent.events(runId), (e) => e._tag === "agent.approval_requested"))
        yield* Effect.provide(
          agent.approve(runId, "0-1", Approval.approve("erin")),
          Runner.layerPostgresClient({ url, pollInterval: "50 millis" })
        )
        const result = yield* agent.result(runId)
        const events = Array.from(yield* Stream.runCollect(agent.events(runId)))
        return { result, events }
      }).pipe(Effect.provide(Core.runner(agent, runner, counters)))
      assert.strictEqual(result.result.text, "done: value of 1-0")
      assert.strictEqual(counters.get("plain_write:0-1"), 1)
      assert.strictEqual(counters.get("keyed_write:k0"), 1)
      assert.strictEqual(result.events.at(-1)?._tag, "agent.finished")
      assert.deepStrictEqual(result.events.map((e) => e.sequence), result.events.map((_, i) => i))
    }), 60_000)

  it.live("final replies on Postgres (one statement each): every request of a finished run is processed, its last reply its one exit reply", () =>
    Effect.gen(function*() {
      const counters = Core.makeCounters()
      const agent = DurableAgent.make({ name: "pg-replies", tools: Core.makeTools(counters), pollInterval: "20 millis" })
      const url = Redacted.make(pg!.url)
      const port = 40_000 + Math.floor(Math.random() * 10_000)
      const runner = Runner.layerPostgres({ url, address: { host: "127.0.0.1", port }, pollInterval: "50 millis", shutdownTimeout: "50 millis" })
      const { result, rows } = yield* Effect.gen(function*() {
        yield* agent.start("r", user("plan: read_value,plain_write;read_value"))
        const result = yield* agent.result("r")
        const sql = yield* SqlClient.SqlClient
        const rows = yield* sql<{ readonly tag: string; readonly processed: boolean; readonly matches: boolean; readonly exits: number | string; readonly payload: string | null }>`
          SELECT m.tag, m.processed, m.last_reply_id = r.id AS matches,
            (SELECT COUNT(*) FROM cluster_replies x WHERE x.request_id = m.id AND x.kind = 0) AS exits, r.payload
          FROM cluster_messages m LEFT JOIN cluster_replies r ON r.id = m.last_reply_id
          WHERE m.entity_type = 'Workflow/tinyagents/pg-replies' AND m.kind = 0`
        return { result, rows }
      }).pipe(Effect.provide(Core.runner(agent, runner, counters)))
      assert.strictEqual(result.text, "done: value of 1-0")
      // the run and its activities: three turns, three calls
      assert.deepStrictEqual(rows.map((r) => r.tag).sort(), [...Array.from({ length: 6 }, () => "activity"), "run"])
      for (const row of rows) {
        assert.isTrue(row.processed, `${row.tag} processed`)
        assert.isTrue(row.matches, `${row.tag}: last_reply_id is its reply`)
        assert.strictEqual(Number(row.exits), 1, `${row.tag}: one exit reply`)
        assert.strictEqual((JSON.parse(row.payload!) as { readonly _tag: string })._tag, "Success")
      }
    }), 60_000)

  it.live("a runner and a client on Postgres: the client cancels a run waiting for approval", () =>
    Effect.gen(function*() {
      const counters = Core.makeCounters()
      const agent = DurableAgent.make({
        name: "pg-cancel",
        tools: Core.makeTools(counters),
        pollInterval: "20 millis",
        approval: (call) => call.name === "plain_write"
      })
      const url = Redacted.make(pg!.url)
      const runId = `pg-cancel-${Date.now()}`
      const port = 40_000 + Math.floor(Math.random() * 10_000)
      const runner = Runner.layerPostgres({
        url,
        address: { host: "127.0.0.1", port },
        pollInterval: "50 millis",
        lockExpiration: "3 seconds",
        shutdownTimeout: "50 millis"
      })
      const { error, events } = yield* Effect.gen(function*() {
        yield* agent.start(runId, user("plan: read_value,plain_write;read_value"))
        yield* Stream.runHead(Stream.filter(agent.events(runId), (e) => e._tag === "agent.approval_requested"))
        yield* Effect.provide(
          agent.cancel(runId, { reason: "from the client" }),
          Runner.layerPostgresClient({ url, pollInterval: "50 millis" })
        )
        const error = yield* Effect.flip(agent.result(runId))
        return { error, events: Array.from(yield* Stream.runCollect(agent.events(runId))) }
      }).pipe(Effect.provide(Core.runner(agent, runner, counters)))
      assert.instanceOf(error, DurableAgent.RunCancelled)
      assert.strictEqual(error.reason, "from the client")
      assert.strictEqual(counters.get("plain_write:0-1"), 0)
      assert.strictEqual(counters.get("read_value"), 0)
      assert.strictEqual(events.at(-1)?._tag, "agent.finished")
      assert.deepStrictEqual(events.map((e) => e.sequence), events.map((_, i) => i))
    }), 60_000)

  it.live("a client on Postgres lists the runs (status, turn, pending approvals, pages), every pending approval, and a snapshot of events", () =>
    Effect.gen(function*() {
      const counters = Core.makeCounters()
      const agent = DurableAgent.make({
        name: `pg-list-${Date.now()}`,
        tools: Core.makeTools(counters),
        pollInterval: "20 millis",
        approval: (call) => call.name === "plain_write"
      })
      const url = Redacted.make(pg!.url)
      const port = 40_000 + Math.floor(Math.random() * 10_000)
      const runner = Runner.layerPostgres({
        url,
        address: { host: "127.0.0.1", port },
        pollInterval: "50 millis",
        lockExpiration: "3 seconds",
        shutdownTimeout: "50 millis"
      })
      const client = Runner.layerPostgresClient({ url, pollInterval: "50 millis" })
      const before = Date.now()
      const seen = yield* Effect.gen(function*() {
        yield* agent.start("done", user("plan: read_value"))
        yield* agent.result("done")
        yield* agent.start("waits", user("plan: plain_write,plain_write"))
        yield* Stream.runHead(Stream.filter(agent.events("waits"), (e) => e._tag === "agent.approval_requested"))
        yield* agent.pending("waits").pipe(Effect.repeat({ until: (p) => p.length === 2 }))
        return yield* Effect.gen(function*() {
          const first = yield* agent.list({ limit: 1 })
          const second = yield* agent.list({ limit: 1, cursor: first.next! })
          const pending = yield* agent.pendingAll()
          const snapshot = Array.from(yield* Stream.runCollect(agent.events("waits", { follow: false })))
          const outcome = yield* agent.outcome("done")
          return { first, second, pending, snapshot, outcome }
        }).pipe(Effect.provide(client))
      }).pipe(Effect.provide(Core.runner(agent, runner, counters)))
      assert.deepStrictEqual(seen.first.runs.map((r) => [r.runId, r.status, r.turn, r.pendingApprovals]), [["waits", "awaiting_approval", 0, 2]])
      assert.deepStrictEqual(seen.second.runs.map((r) => [r.runId, r.status, r.turn, r.pendingApprovals]), [["done", "finished", 1, 0]])
      assert.strictEqual(seen.second.next, undefined)
      assert.isTrue(seen.second.runs[0]!.startedAt >= before && seen.first.runs[0]!.startedAt >= seen.second.runs[0]!.startedAt)
      assert.deepStrictEqual(seen.pending.map((p) => [p.runId, p.callId]), [["waits", "0-0"], ["waits", "0-1"]])
      assert.strictEqual(seen.snapshot.at(-1)?._tag, "agent.approval_requested")
      assert.strictEqual(seen.outcome.status, "finished")
    }), 60_000)

  it.live("a tool's question on Postgres: listed and answered by a client (a wrong answer refused first); the call runs again and finishes", () =>
    Effect.gen(function*() {
      let starts = 0
      const deploy = Tool.make("deploy", {
        description: "Deploys; asks which branch.",
        input: Schema.Struct({ service: Schema.String }),
        failure: Ask.NotAnswered,
        services: [Ask.Ask],
        handler: ({ service }) =>
          Effect.gen(function*() {
            starts++
            const { branch } = yield* Ask.question({ message: `Which branch of ${service}?`, answer: Schema.Struct({ branch: Schema.Literals(["main"]) }) })
            return `deployed ${service}@${branch}`
          })
      })
      const model = ChatModel.fromFunction(({ messages }) =>
        Effect.succeed(messages.some((m) => m.role === "tool") ? ChatModel.answer("ok") : ChatModel.callTools([["d1", "deploy", { service: "api" }]]))
      )
      const agent = DurableAgent.make({ name: "pg-ask", tools: yield* ToolRegistry.make([deploy]), pollInterval: "20 millis" })
      const url = Redacted.make(pg!.url)
      const runId = `pg-ask-${Date.now()}`
      const port = 40_000 + Math.floor(Math.random() * 10_000)
      const runner = Runner.layerPostgres({
        url,
        address: { host: "127.0.0.1", port },
        pollInterval: "50 millis",
        lockExpiration: "3 seconds",
        shutdownTimeout: "50 millis"
      })
      const client = Runner.layerPostgresClient({ url, pollInterval: "50 millis" })
      const result = yield* Effect.gen(function*() {
        yield* agent.start(runId, user("deploy"))
        const open = yield* Effect.provide(
          agent.questionsAll().pipe(Effect.repeat({ until: (all) => all.some((q) => q.runId === runId), schedule: Schedule.spaced("50 millis") })),
          client
        )
        assert.strictEqual(open.find((q) => q.runId === runId)?.message, "Which branch of api?")
        const refused = yield* Effect.flip(Effect.provide(agent.answer(runId, "d1", Ask.answer({ branch: "dev" })), client))
        assert.strictEqual(refused._tag, "AnswerRefused")
        yield* Effect.provide(agent.answer(runId, "d1", Ask.answer({ branch: "main" }, "erin")), client)
        return yield* agent.result(runId)
      }).pipe(Effect.provide(agent.layer.pipe(Layer.provide([model, Stores.layerMemory]), Layer.provideMerge(runner))))
      assert.strictEqual(result.results[0]?.content.map((b) => b.type === "text" ? b.text : "").join(""), "deployed api@main")
      assert.strictEqual(starts, 2)
    }), 60_000)
})
