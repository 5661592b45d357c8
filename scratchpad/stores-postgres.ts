// Stores on Postgres: every process connected to the database shares idempotency keys, claims,
// artifacts and rate limits. Set DATABASE_URL (e.g. postgres://user:pass@127.0.0.1:5432/app).
import { Effect, Layer, Redacted, Schema } from "effect"
import { EventSink, Executor, RunContext, Tool, ToolRegistry, ToolResult } from "tinyagents"
import * as Postgres from "tinyagents/stores/postgres"

const charge = Tool.make("charge_card", {
  description: "Charges a card once per request id.",
  input: Schema.Struct({ requestId: Schema.String, cents: Schema.Int }),
  output: Schema.Struct({ charged: Schema.Int, pid: Schema.Int }),
  safety: { access: "write" },
  idempotency: ({ requestId }) => requestId,
  handler: ({ cents }) => Effect.succeed({ charged: cents, pid: process.pid })
})

const program = Effect.gen(function*() {
  const executor = yield* Executor.make(yield* ToolRegistry.make([charge]))
  const result = yield* executor.run({ id: "call_1", name: "charge_card", arguments: { requestId: "order-17", cents: 1250 } })
  // while the server is down this is an error result whose StoreFailed has disposition "retry"
  console.log(ToolResult.textOf(result), result.idempotency)
})

const url = process.env["DATABASE_URL"]
if (url === undefined) {
  console.log("set DATABASE_URL (e.g. postgres://postgres@127.0.0.1:5432/postgres) to run this against Postgres")
} else {
  // a pool of connections; the database is opened on first use and reopened after a restart
  const stores = Postgres.layer({ url: Redacted.make(url), maxConnections: 10 })
  const services = Layer.mergeAll(stores, RunContext.RunContext.layer({ threadId: "shop", runId: `run-${process.pid}`, turn: 0 }), EventSink.EventSink.layerMemory)
  Effect.runPromise(program.pipe(Effect.provide(services)))
}
