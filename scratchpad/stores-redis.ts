// Stores on Redis: idempotency keys and rate limits shared by every process on the same Redis.
// Run it twice with REDIS_URL set: the second run answers from the first run's stored result.
import { Effect, Layer, Schema } from "effect"
import { EventSink, Executor, RunContext, Tool, ToolRegistry, ToolResult } from "tinyagents"
import { rateLimit } from "tinyagents/middleware"
import * as RedisStores from "tinyagents/stores/redis"

const charge = Tool.make("charge_card", {
  description: "Charges a card once per request id.",
  input: Schema.Struct({ requestId: Schema.String, cents: Schema.Int }),
  output: Schema.Struct({ charged: Schema.Int, pid: Schema.Int }),
  safety: { access: "write" },
  idempotency: ({ requestId }) => requestId,
  handler: ({ cents }) => Effect.succeed({ charged: cents, pid: process.pid })
})

// StoreRegistry (stores, idempotency claims) and the RateLimiter, on one Redis; it connects on first use.
const stores = RedisStores.layer({ url: process.env["REDIS_URL"], prefix: "shop:" })

const program = Effect.gen(function*() {
  const executor = yield* Executor.make(yield* ToolRegistry.make([charge]), {
    middleware: [rateLimit({ maxCalls: 100, window: "1 minute" })] // counted across every process
  })
  const result = yield* executor.run({ id: "call_1", name: "charge_card", arguments: { requestId: "order-17", cents: 1250 } })
  console.log(ToolResult.textOf(result), result.idempotency)
})

if (process.env["REDIS_URL"] === undefined) {
  console.log("set REDIS_URL (e.g. redis://127.0.0.1:6379) to run this against Redis")
} else {
  const services = Layer.mergeAll(stores, RunContext.RunContext.layer({ threadId: "shop", runId: `run-${process.pid}`, turn: 0 }), EventSink.EventSink.layerMemory)
  Effect.runPromise(program.pipe(Effect.provide(services)))
}
