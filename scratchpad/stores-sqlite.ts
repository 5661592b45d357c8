// Stores in one SQLite file (the embedded default): idempotency keys, artifacts, notes and rate limits
// survive a restart and are shared by every process that opens the file. Run it twice: the second run
// answers from the first run's stored result instead of charging again.
import { Effect, Layer, Schema } from "effect"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { EventSink, Executor, RunContext, Tool, ToolRegistry, ToolResult } from "tinyagents"
import { Stores } from "tinyagents/stores"

const charge = Tool.make("charge_card", {
  description: "Charges a card once per request id.",
  input: Schema.Struct({ requestId: Schema.String, cents: Schema.Int }),
  output: Schema.Struct({ charged: Schema.Int, pid: Schema.Int }),
  safety: { access: "write" },
  idempotency: ({ requestId }) => requestId,
  handler: ({ cents }) => Effect.succeed({ charged: cents, pid: process.pid })
})

// StoreRegistry and RateLimiter in one file; opened on first use, tables created when missing.
// Artifacts (large outputs) are capped at 8 MiB and expire after 7 days.
const stores = Stores.layerSqlite({
  filename: process.env["STORES_FILE"] ?? join(tmpdir(), "tinyagents-example.db"),
  artifacts: { maxBytes: 8 * 1024 * 1024, ttl: "7 days" }
})

const program = Effect.gen(function*() {
  const executor = yield* Executor.make(yield* ToolRegistry.make([charge]))
  const result = yield* executor.run({ id: "call_1", name: "charge_card", arguments: { requestId: "order-17", cents: 1250 } })
  console.log(ToolResult.textOf(result), result.idempotency)
})

const services = Layer.mergeAll(
  stores,
  RunContext.RunContext.layer({ threadId: "shop", runId: `run-${process.pid}`, turn: 0 }),
  EventSink.EventSink.layerMemory
)
Effect.runPromise(program.pipe(Effect.provide(services)))
