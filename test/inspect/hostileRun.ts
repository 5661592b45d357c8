/**
 * A run whose every string is markup, for the inspector's tests (test/inspect/Hostile.test.ts, and
 * Browser.test.ts in chromium): a real `Agent.stream` run on a scripted model whose run and thread
 * ids, call ids, arguments, a tool name (a call of an unknown tool), the model's text, a result, a
 * progress message and an error message are all `hostile`; its events through
 * `EventSink.layerJsonl`.
 */
import { Effect, Layer, Schema, Stream } from "effect"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import { Agent, ChatModel, EventSink, Tool, ToolError, ToolProgress, ToolRegistry, ToolServices } from "../../src/index.ts"

/** What a model (or a tool's result) may put in any string the inspector shows. */
export const payloads = [
  `"><img src=x onerror=alert(1)>`,
  `</script><script>alert(1)</script>`,
  `javascript:alert(1)`,
  `" autofocus onfocus="alert(1)`,
  `' onmouseover='alert(1)`,
  `'><svg onload=alert(1)>`,
  `<!--`,
  `</style><style>body{display:none}</style>`
] as const
/** Every payload, in one string. */
export const hostile = payloads.join(" ")

/** The recorded run's id. */
export const hostileRunId = `run ${hostile}`

const echo = Tool.make("echo", {
  description: "Echoes its text.",
  input: Schema.Struct({ text: Schema.String }),
  services: [ToolProgress.ToolProgress],
  handler: ({ text }) => Effect.as(ToolProgress.report({ message: text, count: 1, total: 2 }), text)
})
const boom = Tool.make("boom", {
  description: "Fails with its text.",
  input: Schema.Struct({ text: Schema.String }),
  handler: ({ text }) => Effect.fail(new ToolError.ToolFailure({ message: text }))
})

/** A real run on a scripted model whose every string is `hostile`, its events in `file`. */
export const recordHostile = (file: string) =>
  Effect.gen(function*() {
    const tools = yield* ToolRegistry.make([echo, boom])
    yield* Stream.runDrain(Agent.stream({ messages: [{ role: "user", content: hostile }], tools }))
  }).pipe(
    Effect.provide(Layer.mergeAll(
      ChatModel.scripted([
        ChatModel.callTools([
          [`c1 ${hostile}`, "echo", { text: hostile }],
          [`c2 ${hostile}`, "boom", { text: hostile }],
          [`c3 ${hostile}`, hostile, { [hostile]: hostile }],
          [`c4 ${hostile}`, "echo", { text: 1, [hostile]: hostile }]
        ], hostile),
        ChatModel.answer(hostile)
      ]),
      ToolServices.layerTest({ runId: hostileRunId, threadId: `thread ${hostile}` }),
      EventSink.EventSink.layerJsonl(file).pipe(Layer.provide(NodeFileSystem.layer))
    ))
  )

