// Idempotency keys: a write tool applied at most once per key, the key handed to the handler.
import { Effect, Schema } from "effect"
import { Executor, Tool, ToolCallContext, ToolRegistry, ToolResult, ToolServices } from "tinyagents"

let charges = 0 // what the payment API saw

const charge = Tool.make("charge_card", {
  description: "Charges a card once per request id.",
  input: Schema.Struct({ requestId: Schema.String, cents: Schema.Int }),
  output: Schema.Struct({ charged: Schema.Int, receipt: Schema.String }),
  safety: { access: "write" },
  idempotency: ({ requestId }) => requestId,
  retry: Executor.backoff({ maxAttempts: 3 }),
  services: [ToolCallContext.ToolCallContext],
  handler: ({ cents }) =>
    Effect.gen(function*() {
      const { idempotencyKey } = yield* ToolCallContext.ToolCallContext // pass it on to the payment API
      charges++
      return { charged: cents, receipt: `rcpt-${idempotencyKey}` }
    })
})

const program = Effect.gen(function*() {
  const executor = yield* Executor.make(yield* ToolRegistry.make([charge]))
  const args = JSON.stringify({ requestId: "order-17", cents: 1250 })
  const first = yield* executor.run({ id: "call_1", name: "charge_card", arguments: args })
  const again = yield* executor.run({ id: "call_2", name: "charge_card", arguments: args }) // the model repeats itself
  console.log(ToolResult.textOf(first), first.idempotency)
  console.log(ToolResult.textOf(again), again.idempotency)
  console.log(`charges: ${charges}`)
})

Effect.runPromise(program.pipe(Effect.provide(ToolServices.layerTest())))
