// Spans over OTLP: an agent run exported by Effect's own OTLP tracer to a collector (here a loopback one).
import { Effect, Layer, Schema } from "effect"
import { FetchHttpClient } from "effect/http"
import { OtlpSerialization, OtlpTracer } from "effect/observability"
import { createServer } from "node:http"
import { Agent, ChatModel, Tool, ToolRegistry, ToolServices } from "tinyagents"

const received: Array<string> = [] // span names the collector got
const collector = createServer((request, response) => {
  let body = ""
  request.on("data", (chunk) => (body += chunk)).on("end", () => {
    const { resourceSpans } = JSON.parse(body) as { resourceSpans: Array<{ scopeSpans: Array<{ spans: Array<{ name: string }> }> }> }
    received.push(...resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans.map((span) => span.name))))
    response.writeHead(200, { "content-type": "application/json" }).end("{}")
  })
}).listen(0, "127.0.0.1")
await new Promise((resolve) => collector.once("listening", resolve))
const port = (collector.address() as { port: number }).port

const TracingLive = OtlpTracer.layer({
  url: `http://127.0.0.1:${port}/v1/traces`, // an OTLP/HTTP collector: Jaeger, Tempo, Honeycomb, ...
  resource: { serviceName: "my-agent" }
}).pipe(Layer.provide([OtlpSerialization.layerJson, FetchHttpClient.layer]))

const add = Tool.make("add", {
  description: "Adds two integers.",
  input: Schema.Struct({ a: Schema.Int, b: Schema.Int }),
  safety: { access: "read", idempotent: true },
  handler: ({ a, b }) => Effect.succeed(a + b)
})
const model = ChatModel.scripted([ChatModel.callTools([["call_1", "add", { a: 2, b: 3 }]]), ChatModel.answer("5")])

const program = Effect.gen(function*() {
  const tools = yield* ToolRegistry.make([add])
  return yield* Agent.run({ name: "calculator", messages: [{ role: "user", content: "2 + 3?" }], tools })
})

await Effect.runPromise(program.pipe(Effect.provide([TracingLive, model, ToolServices.layerTest()])))
collector.close()
console.log(received.sort().join("\n"))
