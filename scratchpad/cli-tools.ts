// A tools module for the command line: the default export is the tools (an array, or a ToolRegistry),
// and `layer` provides the services they need. `npm run tinyagents -- tools scratchpad/cli-tools.ts`
import { Context, Effect, Layer, Schema } from "effect"
import { Tool } from "tinyagents"

/** The application's own service, hidden from the model like RunContext. */
class Orders extends Context.Service<Orders, {
  readonly status: (orderId: string) => Effect.Effect<string | undefined>
}>()("example/Orders") {}

class OrderNotFound extends Schema.TaggedError<OrderNotFound>()("OrderNotFound", { orderId: Schema.String }) {
  override get message() {
    return `no order ${this.orderId}`
  }
}

const findOrder = Tool.make("find_order", {
  description: "Looks up an order's status by its id.",
  input: Schema.Struct({ orderId: Schema.String.annotate({ description: "an order id, e.g. A-17" }) }),
  output: Schema.Struct({ status: Schema.String }),
  failure: OrderNotFound,
  services: [Orders],
  safety: { access: "read", idempotent: true },
  handler: ({ orderId }) =>
    Effect.gen(function*() {
      const status = yield* (yield* Orders).status(orderId)
      if (status === undefined) return yield* new OrderNotFound({ orderId })
      return { status }
    })
})

const refundOrder = Tool.make("refund_order", {
  description: "Refunds an order, once per order id.",
  input: Schema.Struct({ orderId: Schema.String, cents: Schema.Int.check(Schema.isGreaterThan(0)) }),
  safety: { access: "mutate", spend: true, requiresConfirmation: true },
  idempotency: ({ orderId }) => `refund/${orderId}`,
  handler: ({ orderId, cents }) => Effect.succeed(`refunded ${cents} cents on ${orderId}`)
})

export default [findOrder, refundOrder]

/** What the tools need: here a fixed order book; an application's would reach its database. */
export const layer = Layer.succeed(Orders, {
  status: (orderId) => Effect.succeed(new Map([["A-17", "shipped"], ["A-18", "packing"]]).get(orderId))
})
