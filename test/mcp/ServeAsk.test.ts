/**
 * `Ask` over MCP, server side, against the official SDK `Client` over a real loopback Streamable
 * HTTP server: a served tool's question is an `elicitation/create` (form mode, the answer's schema
 * as MCP's flat form), `accept` is the answer, `decline` / `cancel` are `Declined`; a client
 * without the elicitation capability leaves it to the application's `Ask.Answerer` (or
 * `Unanswerable`); a schema MCP cannot show is refused before the client is asked.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { type ClientCapabilities, ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js"
import { Effect, Layer, Logger, Schema } from "effect"
import { describe, expect, it } from "vitest"
import { Ask, EventSink, Tool, ToolEvent, ToolRegistry, ToolResult, ToolServices } from "../../src/index.ts"
import { McpServe } from "../../src/mcp/index.ts"
import { elicitSchemaOf } from "../../src/mcp/internal/serveAsk.ts"

const Deploy = Schema.Struct({
  branch: Schema.Literals(["main", "staging"]).annotate({ description: "The branch" }),
  replicas: Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 5 })),
  note: Schema.optionalKey(Schema.String),
  notify: Schema.optional(Schema.Boolean)
})

const deploy = Tool.make("deploy", {
  description: "Deploys; asks the user how.",
  input: Schema.Struct({ service: Schema.String }),
  failure: Ask.NotAnswered,
  services: [Ask.Ask],
  safety: { access: "write" },
  handler: ({ service }) =>
    Effect.map(
      Ask.question({ message: `How should I deploy ${service}?`, answer: Deploy }),
      (a) => `${service}@${a.branch} x${a.replicas}${a.notify === true ? " (notify)" : ""}`
    ),
  toModelOutput: (out) => ToolResult.text(String(out))
})

const nested = Tool.make("nested", {
  description: "Asks for something MCP forms cannot hold.",
  input: Schema.Struct({}),
  failure: Ask.NotAnswered,
  services: [Ask.Ask],
  safety: { access: "read" },
  handler: () => Ask.question({ message: "Where?", answer: Schema.Struct({ at: Schema.Struct({ x: Schema.Number }) }) })
})

const withServer = <A>(
  answerer: Layer.Layer<Ask.Answerer> | undefined,
  test: (url: string, events: () => Promise<ReadonlyArray<ToolEvent.Event>>) => Promise<A>
): Promise<A> =>
  Effect.runPromise(
    Effect.gen(function*() {
      const server = yield* McpServe.serveHttp(yield* ToolRegistry.make([deploy, nested]), { port: 0 })
      const log = yield* EventSink.EventLog
      const context = yield* Effect.context<never>()
      return yield* Effect.promise(() => test(server.url, () => Effect.runPromiseWith(context)(log.all)))
    }).pipe(
      Effect.scoped,
      Effect.provide(answerer === undefined ? Layer.empty : answerer),
      Effect.provide(ToolServices.layerTest({ runId: "serve-ask" })),
      Effect.provideService(Logger.CurrentLoggers, new Set())
    )
  )

const connect = async (url: string, capabilities: ClientCapabilities = {}) => {
  const client = new Client({ name: "serve-ask-test", version: "1.0.0" }, { capabilities })
  await client.connect(new StreamableHTTPClientTransport(new URL(url)))
  return client
}

const textOf = (result: unknown) =>
  (result as { content: ReadonlyArray<{ type: string; text?: string }> }).content.map((block) => block.text).join("")

describe("Ask over MCP (McpServe): a served tool's question is an elicitation", () => {
  it("elicitation/create carries the message and the answer's schema as MCP's form; accept answers", () =>
    withServer(undefined, async (url, events) => {
      const client = await connect(url, { elicitation: {} })
      const requests: Array<unknown> = []
      client.setRequestHandler(ElicitRequestSchema, (request) => {
        requests.push(request.params)
        return { action: "accept", content: { branch: "staging", replicas: 3, notify: true } }
      })
      const result = await client.callTool({ name: "deploy", arguments: { service: "api" } })
      expect(textOf(result)).toBe("api@staging x3 (notify)")
      expect(requests).toEqual([{
        mode: "form",
        message: "How should I deploy api?",
        requestedSchema: {
          type: "object",
          properties: {
            branch: { type: "string", description: "The branch", enum: ["main", "staging"] },
            replicas: { type: "integer", minimum: 1, maximum: 5 },
            note: { type: "string" },
            notify: { type: "boolean" }
          },
          required: ["branch", "replicas"]
        }
      }])
      const answered = (await events()).find((e): e is ToolEvent.ToolAnswered => e._tag === "tool.answered")
      expect([answered?.outcome, answered?.answeredBy]).toEqual(["answered", "mcp-client"])
      await client.close()
    }), 30_000)

  it("decline and cancel are Declined; an accepted answer the schema refuses is Unanswerable (invalid-answer)", () =>
    withServer(undefined, async (url) => {
      const client = await connect(url, { elicitation: {} })
      client.setRequestHandler(ElicitRequestSchema, () => ({ action: "decline" }))
      const declined = await client.callTool({ name: "deploy", arguments: { service: "api" } })
      expect(declined.isError).toBe(true)
      expect(textOf(declined)).toContain("the user declined")
      client.setRequestHandler(ElicitRequestSchema, () => ({ action: "cancel" }))
      expect(textOf(await client.callTool({ name: "deploy", arguments: { service: "api" } }))).toContain("the user cancelled")
      client.setRequestHandler(ElicitRequestSchema, () => ({ action: "accept", content: { branch: "main", replicas: 9 } }))
      const invalid = await client.callTool({ name: "deploy", arguments: { service: "api" } })
      expect(textOf(invalid)).toContain("invalid-answer")
      await client.close()
    }), 30_000)

  it("a client without elicitation: Unanswerable (unsupported), or the application's answerer when it provides one", async () => {
    await withServer(undefined, async (url) => {
      const client = await connect(url)
      const result = await client.callTool({ name: "deploy", arguments: { service: "api" } })
      expect(result.isError).toBe(true)
      expect(textOf(result)).toContain("(unsupported): the MCP client did not declare the elicitation capability")
      await client.close()
    })
    await withServer(Ask.layerFunction(() => Effect.succeed(Ask.answer({ branch: "main", replicas: 1 }, "ops"))), async (url) => {
      const client = await connect(url)
      expect(textOf(await client.callTool({ name: "deploy", arguments: { service: "api" } }))).toBe("api@main x1")
      await client.close()
    })
  }, 30_000)

  it("an answer schema MCP forms cannot hold is refused before the client is asked", () =>
    withServer(undefined, async (url) => {
      const client = await connect(url, { elicitation: {} })
      let asked = 0
      client.setRequestHandler(ElicitRequestSchema, () => (asked++, { action: "cancel" }))
      const result = await client.callTool({ name: "nested", arguments: {} })
      expect(textOf(result)).toContain("(invalid-question): cannot ask over MCP elicitation: field \"at\" is of type \"object\"")
      expect(asked).toBe(0)
      await client.close()
    }), 30_000)
})

describe("elicitSchemaOf", () => {
  it("maps flat primitive fields, refuses what MCP forms do not take", () => {
    expect(elicitSchemaOf({ type: "object", properties: { n: { type: "number", minimum: 0, pattern: "x" } } })).toEqual({
      _tag: "form",
      form: { type: "object", properties: { n: { type: "number", minimum: 0 } } }
    })
    const refused = (property: unknown) =>
      elicitSchemaOf({ type: "object", properties: { f: property } })
    expect(refused({ type: "array", items: { type: "string" } })).toMatchObject({ _tag: "refused" })
    expect(refused({ enum: [1, 2] })).toEqual({ _tag: "refused", reason: "field \"f\" is an enum of non-strings; MCP elicitation enums are strings" })
    expect(refused({ anyOf: [{ type: "string" }, { type: "number" }] })).toMatchObject({ _tag: "refused" })
    expect(refused({ type: "string", format: "ipv4" })).toMatchObject({ _tag: "refused" })
    expect(refused({ type: "string", format: "email" })).toMatchObject({ _tag: "form" })
  })
})
