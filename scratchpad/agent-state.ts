// Agent state: tools read a typed state and return updates; the loop applies them in call order after each batch.
import { Effect, Schema } from "effect"
import { Agent, AgentState, ChatModel, Tool, ToolRegistry, ToolResult, ToolServices } from "tinyagents"

// The state, its updates, where it starts, and the pure reducer that applies an update.
const Cart = AgentState.make({
  schema: Schema.Struct({ items: Schema.Array(Schema.String).check(Schema.isMaxLength(3)) }),
  update: Schema.Struct({ add: Schema.String }),
  initial: { items: [] as ReadonlyArray<string> },
  reduce: (cart, update) => ({ items: [...cart.items, update.add] })
})

// A tool lists AgentState in its services (never in its input): it reads the state, and records an update.
const addItem = Tool.make("add_item", {
  description: "Adds an item to the cart (at most 3).",
  input: Schema.Struct({ item: Schema.String }),
  services: [AgentState.AgentState],
  handler: ({ item }) =>
    Effect.gen(function*() {
      const cart = yield* Cart.get // the state as this turn's calls started
      yield* Effect.sleep(item === "bread" ? "20 millis" : "1 millis") // finishes last; its update still applies first
      yield* Cart.update({ add: item })
      return `added ${item} to a cart of ${cart.items.length}`
    })
})

const model = ChatModel.scripted([
  // two concurrent calls: updates apply in call order, whichever finishes first
  ChatModel.callTools([["c1", "add_item", { item: "bread" }], ["c2", "add_item", { item: "milk" }]]),
  // a fourth item: the new state would break the schema, so the update is refused and the model told
  ChatModel.callTools([["c3", "add_item", { item: "eggs" }], ["c4", "add_item", { item: "jam" }]]),
  ChatModel.answer("Your cart is ready.")
])

const program = Effect.gen(function*() {
  const tools = yield* ToolRegistry.make([addItem])
  const result = yield* Agent.run({
    messages: [{ role: "user", content: "Buy bread, milk, eggs and jam." }],
    tools,
    state: Cart,
    // the system prompt and the tool selection of each turn see the state the previous turns left
    system: (cart) => `You fill a cart. It holds: ${cart.items.join(", ") || "nothing"}.`,
    selectTools: ({ state }) => state.items.length < 3 ? ["add_item"] : []
  }).pipe(Effect.provide(model))
  for (const r of result.results) console.log(`${r.toolCallId}: ${ToolResult.textOf(r).split("\n")[0]}`)
  const first = result.transcript[0]
  if (first?.role === "system") console.log(`last system prompt: ${first.content}`)
  console.log(`state: ${JSON.stringify(result.state)}`) // typed: { readonly items: ReadonlyArray<string> }
})
Effect.runPromise(program.pipe(Effect.provide(ToolServices.layerTest())))
