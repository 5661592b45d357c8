import { Effect, Schema } from "effect"
import { Cancellation, Tool, ToolCallContext, ToolRegistry, ToolResult } from "../../src/index.ts"

export const add = Tool.make("add", {
  description: "Adds two numbers.",
  input: Schema.Struct({ a: Schema.Number, b: Schema.Number }),
  safety: { access: "read", idempotent: true },
  handler: ({ a, b }) => Effect.succeed(a + b)
})

let abortedFlag = false
const slowTool = Tool.make("slow", {
  description: "Waits a long time.",
  input: Schema.Struct({}),
  services: [Cancellation.Cancellation],
  handler: () =>
    Effect.gen(function*() {
      const signal = yield* Cancellation.signal
      signal.addEventListener("abort", () => (abortedFlag = true))
      yield* Effect.sleep("10 seconds")
      return "done"
    })
})
export const slow = Object.assign(slowTool, { aborted: () => abortedFlag })

export const explode = Tool.make("explode", {
  description: "Always crashes.",
  input: Schema.Struct({}),
  handler: () => Effect.die(new Error("kaboom: secret internals"))
})

export const echoSecret = Tool.make("echo_secret", {
  description: "Echoes a token.",
  input: Schema.Struct({ token: Schema.String }),
  output: Schema.Struct({ token: Schema.String, length: Schema.Number }),
  safety: { access: "read", redact: { keys: ["token"] } },
  handler: ({ token }) => Effect.succeed({ token, length: token.length })
})

export const whoami = Tool.make("whoami", {
  description: "Returns the call id it runs for.",
  input: Schema.Struct({}),
  output: Schema.Struct({ toolCallId: Schema.String }),
  services: [ToolCallContext.ToolCallContext],
  handler: () => Effect.map(ToolCallContext.current, (info) => ({ toolCallId: info.toolCallId }))
})

export const chart = Tool.make("chart", {
  description: "Draws a chart.",
  input: Schema.Struct({ title: Schema.String }),
  output: Schema.Struct({ title: Schema.String, points: Schema.Number }),
  toModelOutput: ({ title, points }) => [ToolResult.text(`${title}: ${points} points`), ToolResult.image("iVBORw0KGgo=", "image/png")],
  handler: ({ title }) => Effect.succeed({ title, points: 3 })
})

/** A tool whose rendering has every other block kind: audio, a text resource and a binary one. */
export const recording = Tool.make("recording", {
  description: "Records a line.",
  input: Schema.Struct({ line: Schema.String }),
  toModelOutput: (line) => [
    ToolResult.text(`recorded: ${line}`),
    ToolResult.audio("UklGRg==", "audio/wav"),
    ToolResult.resource({ uri: "rec://1/transcript.txt", mimeType: "text/plain", text: String(line) }),
    ToolResult.resource({ uri: "rec://1/take.pdf", mimeType: "application/pdf", blob: "JVBERg==" })
  ],
  handler: ({ line }) => Effect.succeed(line)
})

export const registryOf = (tools: ReadonlyArray<Tool.Any>) => ToolRegistry.make(tools)
