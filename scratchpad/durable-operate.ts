// Durable agents in production: the runner processes (the agent's layer on a runner) and the clients
// (every other process on the same journal: an API server, a dashboard, `tinyagents durable`), and
// what an operator sees: the runs with their status, the calls waiting for approval, what a live run
// has journaled so far, and each run's end as data. Both sides run in this one process here.
import { Effect, Layer, Redacted, Result, Schedule, Schema, Stream } from "effect"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Approval, ChatModel, Tool, ToolRegistry } from "tinyagents"
import { DurableAgent, Runner } from "tinyagents/durable"
import { Stores } from "tinyagents/stores"
import * as PostgresStores from "tinyagents/stores/postgres"

const sendEmail = Tool.make("send_email", {
  description: "Sends an email, once per recipient.",
  input: Schema.Struct({ to: Schema.String }),
  safety: { access: "write", redact: { keys: ["to"] } },
  idempotency: ({ to }) => to,
  handler: ({ to }) => Effect.succeed(`sent to ${to}`)
})

// Emails the address the user gives, then answers (a function of the transcript, as a durable run needs).
const model = ChatModel.fromFunction(({ messages }) => {
  const to = messages[0]?.role === "user" ? messages[0].content : ""
  return Effect.succeed(
    messages.some((m) => m.role === "tool") ? ChatModel.answer("sent") : ChatModel.callTools([["c1", "send_email", { to }]])
  )
})

const mailer = DurableAgent.make({
  name: "mailer",
  tools: Result.getOrThrow(ToolRegistry.makeResult([sendEmail])),
  approval: (call) => call.name === "send_email",
  pollInterval: "50 millis"
})

// The wiring. A runner: the agent's layer, given its model and the keyed tools' stores, on a runner
// layer (it owns runs and resumes them after a crash). A client: a client layer of the same journal
// (it starts, lists, approves, cancels and reads runs; it owns none).
const wiring = (env: { readonly DATABASE_URL?: string | undefined; readonly RUNNER_HOST?: string | undefined }) => {
  if (env.DATABASE_URL !== undefined) {
    // Postgres: runners share the runs by shard (each with an address the others reach), and the keyed
    // tools' claims live in the same database, so that every runner sees them
    const url = Redacted.make(env.DATABASE_URL)
    return {
      runner: mailer.layer.pipe(
        Layer.provide(Layer.mergeAll(model, PostgresStores.layer({ url, maxConnections: 10 }))),
        Layer.provideMerge(Runner.layerPostgres({ url, address: { host: env.RUNNER_HOST ?? "127.0.0.1", port: 34431 } }))
      ),
      client: Runner.layerPostgresClient({ url })
    }
  }
  // SQLite: one runner on one file; clients are processes on the same machine
  const db = join(mkdtempSync(join(tmpdir(), "tinyagents-operate-")), "journal.db")
  return {
    runner: mailer.layer.pipe(
      Layer.provide(Layer.mergeAll(model, Stores.layerSqlite({ filename: `${db}.stores` }))),
      Layer.provideMerge(Runner.layerSqlite({ filename: db, pollInterval: "50 millis" }))
    ),
    client: Runner.layerSqliteClient({ filename: db, pollInterval: "50 millis" })
  }
}

const waitingFor = (count: number) =>
  mailer.pendingAll().pipe(Effect.repeat({ until: (pending) => pending.length === count, schedule: Schedule.spaced("50 millis") }))

// What an operator does, from a client.
const operate = Effect.gen(function*() {
  yield* mailer.start("order-1", [{ role: "user", content: "alice@example.com" }])
  yield* waitingFor(1)
  yield* mailer.start("order-2", [{ role: "user", content: "bob@example.com" }])
  // every call waiting for a decision, across runs (arguments redacted as the tool says)
  for (const p of yield* waitingFor(2)) console.log(`waiting: ${p.runId} ${p.callId} ${p.toolName} ${JSON.stringify(p.arguments)}`)
  // the runs, newest first, a page at a time (`next`: the cursor of the next page)
  const page = yield* mailer.list({ limit: 20 })
  for (const run of page.runs) console.log(`${run.runId}: ${run.status}, turn ${run.turn}, ${run.pendingApprovals} pending`)
  // what a live run has journaled so far (a snapshot: it ends now; without `follow: false` it follows the run to its end)
  const sofar = yield* Stream.runCollect(mailer.events("order-1", { follow: false }))
  console.log(`order-1 so far: ${sofar.map((e) => e._tag).join(", ")}`)

  yield* mailer.approve("order-1", "c1", Approval.approve("alice"))
  yield* mailer.cancel("order-2", { reason: "the customer left" })
  // each run's end as data: switch on `status`
  for (const runId of ["order-1", "order-2"]) {
    const end = yield* mailer.outcome(runId, { wait: true })
    switch (end.status) {
      case "finished":
        console.log(`${runId}: finished: ${end.result.text}`)
        break
      case "cancelled":
        console.log(`${runId}: cancelled: ${end.error.reason}`)
        break
      case "failed":
        console.log(`${runId}: failed: ${end.error?.message ?? "a defect"}`)
        break
      case "running":
        break
    }
  }
  // the cancelled run's call that never started ends with its own event (ToolCancelled, started: false)
  const events = yield* Stream.runCollect(mailer.events("order-2"))
  console.log(`order-2: ${events.map((e) => e._tag).join(", ")}`)
})

const { client, runner } = wiring(process.env)
// the runner serves while the operator works through a client (two processes in production)
Effect.runPromise(Effect.scoped(Effect.andThen(Layer.build(runner), Effect.provide(operate, client))))
  .then(() => process.exit(0))
