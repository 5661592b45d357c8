/**
 * A recorded run for the inspector's tests: a real `Agent.stream` run on a scripted model, its
 * events through `EventSink.layerJsonl`. It has a call with progress, a refused call (invalid
 * arguments: the repair message), a repairable failure, a call whose arguments are redacted (`to`),
 * one whose output is redacted (a token pattern), and a nested agent (`Agent.asTool`) whose own call
 * runs inside the outer one.
 */
import { Effect, Layer, Schema, Stream } from "effect"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import { Agent, ChatModel, EventSink, Tool, ToolError, ToolProgress, ToolRegistry, ToolServices } from "../../src/index.ts"

const index = Tool.make("index_documents", {
  description: "Indexes `n` documents, reporting progress.",
  input: Schema.Struct({ n: Schema.Int }),
  services: [ToolProgress.ToolProgress],
  handler: ({ n }) =>
    Effect.as(
      Effect.forEach([...Array(n).keys()], (i) => ToolProgress.report({ message: `doc ${i + 1}`, count: i + 1, total: n })),
      `indexed ${n}`
    )
})
const lookup = Tool.make("lookup", {
  description: "Looks a record up.",
  input: Schema.Struct({ q: Schema.String }),
  handler: ({ q }) => Effect.fail(new ToolError.ToolFailure({ message: `no record for ${q}` }))
})
const token = Tool.make("token", {
  description: "Returns an access token.",
  input: Schema.Struct({}),
  safety: { access: "read", idempotent: true, redact: { patterns: [/sk-live-[A-Za-z0-9]+/] } },
  handler: () => Effect.succeed("your token is sk-live-abc123")
})
const send = Tool.make("send", {
  description: "Sends a message.",
  input: Schema.Struct({ to: Schema.String, body: Schema.String }),
  safety: { access: "write", redact: { keys: ["to"] } },
  handler: ({ body }) => Effect.succeed(`sent ${body}`)
})
const add = Tool.make("add", {
  description: "Adds two numbers.",
  input: Schema.Struct({ a: Schema.Number, b: Schema.Number }),
  safety: { access: "read" },
  handler: ({ a, b }) => Effect.succeed(a + b)
})

const usage = (inputTokens: number, outputTokens: number) => ({ inputTokens, outputTokens })

/** The secrets the run handles, which no page may show. */
export const secrets = ["alice@example.com", "sk-live-abc123"] as const

/** Runs the recorded run, appending its events to `file`. */
export const record = (file: string) =>
  Effect.gen(function*() {
    const researcher = Agent.asTool({
      system: "You research with arithmetic.",
      tools: yield* ToolRegistry.make([add]),
      model: ChatModel.scripted([
        { ...ChatModel.callTools([["r1", "add", { a: 1200, b: 45 }]]), usage: usage(40, 8) },
        { ...ChatModel.answer("Q3 revenue is 1245 kEUR."), usage: usage(60, 9) }
      ])
    }, { name: "researcher", description: "Answers a research question.", input: Schema.Struct({ task: Schema.String }) })
    const tools = yield* ToolRegistry.make([index, lookup, token, send, researcher])
    yield* Stream.runDrain(Agent.stream({ messages: [{ role: "user", content: "Index and mail" }], tools }))
  }).pipe(
    Effect.provide(Layer.mergeAll(
      ChatModel.scripted([
        {
          ...ChatModel.callTools([
            ["c1", "index_documents", { n: 3 }],
            ["c2", "index_documents", { n: "three" }],
            ["c3", "lookup", { q: "x" }],
            ["c4", "token", {}],
            ["c5", "send", { to: "alice@example.com", body: "hello" }]
          ], "Indexing and mailing."),
          usage: usage(10, 4)
        },
        { ...ChatModel.callTools([["c6", "researcher", { task: "Q3 revenue" }]], "Asking the researcher."), usage: usage(15, 3) },
        { ...ChatModel.answer("Done: 3 documents, mail sent."), usage: usage(20, 5) }
      ]),
      ToolServices.layerTest(),
      EventSink.EventSink.layerJsonl(file).pipe(Layer.provide(NodeFileSystem.layer))
    ))
  )
