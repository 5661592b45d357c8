/**
 * What a served tool can do with its client, against the official SDK `Client` over a real
 * loopback Streamable HTTP server: ask it (`McpServe.Client`: elicitation and sampling, refused
 * when the client did not declare the capability, absent outside MCP serving), log to it
 * (`notifications/message` at the client's level, redacted), and what the HTTP transport accepts
 * (DNS-rebinding protection with `allowedOrigins`, any supported `MCP-Protocol-Version` on a
 * session) and advertises (no `completions` when nothing completes).
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import {
  type ClientCapabilities,
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  type LoggingMessageNotification,
  LoggingMessageNotificationSchema
} from "@modelcontextprotocol/sdk/types.js"
import { Effect, Logger, Option, Schema } from "effect"
import { request } from "node:http"
import { describe, expect, it } from "vitest"
import * as Tool from "../../src/contract/Tool.ts"
import * as ToolError from "../../src/contract/ToolError.ts"
import * as ToolRegistry from "../../src/contract/ToolRegistry.ts"
import * as ToolResult from "../../src/contract/ToolResult.ts"
import * as Executor from "../../src/runtime/Executor.ts"
import * as ToolServices from "../../src/runtime/ToolServices.ts"
import { McpPrompt, McpServe } from "../../src/mcp/index.ts"

const text = (value: unknown) => ToolResult.text(String(value))

const clientOf = Effect.flatMap(
  Effect.serviceOption(McpServe.Client),
  Option.match({
    onNone: () => Effect.fail(ToolError.repairable("no MCP client")),
    onSome: Effect.succeed
  })
)

const askName = Tool.make("ask_name", {
  description: "Asks the user for a name.",
  input: Schema.Struct({}),
  safety: { access: "read" },
  handler: () =>
    Effect.gen(function*() {
      const client = yield* clientOf
      const answer = yield* client.elicit("Who are you?", {
        type: "object",
        properties: { name: { type: "string", description: "Your name", default: "Ada" } },
        required: ["name"]
      }).pipe(Effect.mapError((error) => ToolError.repairable(`${error.reason}: ${error.message}`)))
      return answer.action === "accept" ? `hello ${String(answer.content?.["name"])}` : answer.action
    }),
  toModelOutput: text
})

const summarize = Tool.make("summarize", {
  description: "Asks the client's model for a summary.",
  input: Schema.Struct({ text: Schema.String }),
  safety: { access: "read" },
  handler: ({ text }) =>
    Effect.gen(function*() {
      const client = yield* clientOf
      const result = yield* client.createMessage({
        messages: [{ role: "user", content: { type: "text", text: `Summarize: ${text}` } }],
        maxTokens: 50,
        systemPrompt: "Be brief."
      }).pipe(Effect.mapError((error) => ToolError.repairable(`${error.reason}: ${error.message}`)))
      const block = Array.isArray(result.content) ? result.content[0] : result.content
      return `${result.model}: ${block?.type === "text" ? block.text : "?"}`
    }),
  toModelOutput: text
})

/** Logs at four levels, one message holding a secret its policy redacts. */
const chatty = Tool.make("chatty", {
  description: "Logs while it works.",
  input: Schema.Struct({ token: Schema.String }),
  safety: { access: "read", redact: { keys: ["token"], patterns: [/sk-\w+/] } },
  handler: ({ token }) =>
    Effect.gen(function*() {
      yield* Effect.logDebug("debugging")
      yield* Effect.logInfo(`using ${token} and sk-abc123`)
      yield* Effect.logWarning("careful")
      yield* Effect.logError("it broke", new Error("boom"))
      return "done"
    }),
  toModelOutput: text
})

/**
 * Logs plainly (`Effect.log`, at Effect's default level), an object holding a redacted key, and two
 * of the library's own warnings, which stay on the server.
 */
const plain = Tool.make("plain", {
  description: "Logs plainly.",
  input: Schema.Struct({}),
  safety: { access: "read", redact: { keys: ["apiKey"] } },
  handler: () =>
    Effect.gen(function*() {
      yield* Effect.log("plain-info")
      yield* Effect.log("config", { apiKey: "AKIA-PLANTED-KEY", region: "eu" })
      yield* Effect.logWarning("tinyagents: an executor warning")
      yield* Effect.logWarning("tinyagents mcp: an imported tool's warning")
      return "done"
    }),
  toModelOutput: text
})

const registry = ToolRegistry.make([askName, summarize, chatty, plain])

const withServer = <A>(
  options: Partial<McpServe.HttpOptions>,
  test: (url: string) => Promise<A>
): Promise<A> =>
  Effect.runPromise(
    Effect.gen(function*() {
      const server = yield* McpServe.serveHttp(yield* registry, { port: 0, ...options })
      return yield* Effect.promise(() => test(server.url))
    }).pipe(
      Effect.scoped,
      Effect.provide(ToolServices.layerTest({ runId: "mcp-client" })),
      // the tools' logs reach the client; the test's own output stays quiet
      Effect.provideService(Logger.CurrentLoggers, new Set())
    )
  )

const connect = async (url: string, capabilities: ClientCapabilities = {}) => {
  const client = new Client({ name: "serve-client-test", version: "1.0.0" }, { capabilities })
  await client.connect(new StreamableHTTPClientTransport(new URL(url)))
  return client
}

const textOf = (result: unknown) =>
  (result as { content: ReadonlyArray<{ type: string; text?: string }> }).content.map((block) => block.text).join("")

describe("McpServe.Client: a served tool asks its client", () => {
  it("elicit sends elicitation/create (form mode, the schema as given) and returns what the user did", () =>
    withServer({}, async (url) => {
      const client = await connect(url, { elicitation: {} })
      const requests: Array<unknown> = []
      client.setRequestHandler(ElicitRequestSchema, (request) => {
        requests.push(request.params)
        return { action: "accept", content: { name: "Grace" } }
      })
      const result = await client.callTool({ name: "ask_name", arguments: {} })
      expect(textOf(result)).toBe("hello Grace")
      expect(requests).toEqual([{
        mode: "form",
        message: "Who are you?",
        requestedSchema: {
          type: "object",
          properties: { name: { type: "string", description: "Your name", default: "Ada" } },
          required: ["name"]
        }
      }])
      client.setRequestHandler(ElicitRequestSchema, () => ({ action: "decline" }))
      expect(textOf(await client.callTool({ name: "ask_name", arguments: {} }))).toBe("decline")
      await client.close()
    }), 30_000)

  it("createMessage sends sampling/createMessage and returns the client's message", () =>
    withServer({}, async (url) => {
      const client = await connect(url, { sampling: {} })
      const requests: Array<unknown> = []
      client.setRequestHandler(CreateMessageRequestSchema, (request) => {
        requests.push(request.params)
        return { role: "assistant", content: { type: "text", text: "short" }, model: "test-model", stopReason: "endTurn" }
      })
      const result = await client.callTool({ name: "summarize", arguments: { text: "a long story" } })
      expect(textOf(result)).toBe("test-model: short")
      expect(requests).toEqual([{
        messages: [{ role: "user", content: { type: "text", text: "Summarize: a long story" } }],
        maxTokens: 50,
        systemPrompt: "Be brief."
      }])
      await client.close()
    }), 30_000)

  it("a client without the capability is not asked: the tool gets ClientRequestError 'unsupported'", () =>
    withServer({}, async (url) => {
      const client = await connect(url)
      const elicited = await client.callTool({ name: "ask_name", arguments: {} })
      expect(elicited.isError).toBe(true)
      expect(textOf(elicited)).toContain("unsupported: elicitation/create: the client did not declare the elicitation capability")
      const sampled = await client.callTool({ name: "summarize", arguments: { text: "x" } })
      expect(textOf(sampled)).toContain("unsupported: sampling/createMessage")
      await client.close()
    }), 30_000)

  it("outside MCP serving there is no McpServe.Client", async () => {
    const result = await Effect.runPromise(
      Effect.gen(function*() {
        const executor = yield* Executor.make(yield* registry)
        return yield* executor.run({ id: "c1", name: "ask_name", arguments: {} })
      }).pipe(Effect.provide(ToolServices.layerTest({ runId: "local" })))
    )
    expect(result.isError).toBe(true)
    expect(ToolResult.textOf(result)).toContain("no MCP client")
  })
})

describe("McpServe: a served tool's logs as notifications/message", () => {
  it("at or above the client's level, in order, redacted, before the result", () =>
    withServer({}, async (url) => {
      const client = await connect(url)
      const logs: Array<LoggingMessageNotification["params"]> = []
      client.setNotificationHandler(LoggingMessageNotificationSchema, (notification) => {
        logs.push(notification.params)
      })
      await client.setLoggingLevel("info")
      await client.callTool({ name: "chatty", arguments: { token: "hunter2" } })
      expect(logs).toEqual([
        { level: "info", logger: "chatty", data: "using [redacted] and [redacted]" },
        { level: "warning", logger: "chatty", data: "careful" },
        { level: "error", logger: "chatty", data: "it broke Error: boom" }
      ])
      logs.length = 0
      await client.setLoggingLevel("debug")
      await client.callTool({ name: "chatty", arguments: { token: "hunter2" } })
      expect(logs.map((log) => log.level)).toEqual(["debug", "info", "warning", "error"])
      logs.length = 0
      await client.setLoggingLevel("error")
      await client.callTool({ name: "chatty", arguments: { token: "hunter2" } })
      expect(logs.map((log) => log.data)).toEqual(["it broke Error: boom"])
      await client.close()
    }), 30_000)

  it("a plain Effect.log is info (the client's level filters it); objects are redacted by key; the library's warnings stay", () =>
    withServer({}, async (url) => {
      const client = await connect(url)
      const logs: Array<LoggingMessageNotification["params"]> = []
      client.setNotificationHandler(LoggingMessageNotificationSchema, (notification) => {
        logs.push(notification.params)
      })
      await client.setLoggingLevel("error")
      await client.callTool({ name: "plain", arguments: {} })
      expect(logs).toEqual([])
      await client.setLoggingLevel("debug")
      await client.callTool({ name: "plain", arguments: {} })
      expect(logs).toEqual([
        { level: "info", logger: "plain", data: "plain-info" },
        { level: "info", logger: "plain", data: "config {\"apiKey\":\"[redacted]\",\"region\":\"eu\"}" }
      ])
      await client.close()
    }), 30_000)
})

/** A raw POST to the server, with the headers given (undici's fetch would not send a Host of our choosing). */
const post = (url: string, headers: Record<string, string>, body: unknown) =>
  new Promise<{ status: number; body: string; headers: Record<string, unknown> }>((resolve, reject) => {
    const req = request(url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers }
    }, (res) => {
      let text = ""
      res.on("data", (chunk) => (text += String(chunk)))
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text, headers: res.headers }))
    })
    req.on("error", reject)
    req.end(JSON.stringify(body))
  })

const initialize = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "raw", version: "1" } }
}

describe("McpServe.serveHttp: what the transport accepts and advertises", () => {
  it("DNS-rebinding protection: a foreign Host or Origin gets 403; the server's own Origin and allowedOrigins pass", () =>
    withServer({ allowedOrigins: ["http://localhost:3000"] }, async (url) => {
      const host = new URL(url).host
      expect((await post(url, { host: "evil.example.com", origin: "http://evil.example.com" }, initialize)).status)
        .toBe(403)
      expect((await post(url, { host: "evil.example.com" }, initialize)).status).toBe(403)
      const foreign = await post(url, { origin: "http://evil.example.com" }, initialize)
      expect(foreign.status).toBe(403)
      expect(foreign.body).toContain("Origin \\\"http://evil.example.com\\\" is not allowed")
      expect((await post(url, { host, origin: `http://${host}` }, initialize)).status).toBe(200)
      const port = new URL(url).port
      expect((await post(url, { host: `localhost:${port}`, origin: `http://127.0.0.1:${port}` }, initialize)).status)
        .toBe(200)
      expect((await post(url, { host, origin: `http://localhost:${Number(port) + 1}` }, initialize)).status).toBe(403)
      expect((await post(url, { host, origin: `https://localhost:${port}` }, initialize)).status).toBe(403)
      expect((await post(url, { origin: "http://localhost:3000" }, initialize)).status).toBe(200)
      expect((await post(url, { origin: "http://localhost:3001" }, initialize)).status).toBe(403)
    }), 30_000)

  it("allowedOrigins must be origins as browsers send them: \"null\", upper case, a path or a trailing / are refused", async () => {
    for (const origin of ["null", "http://LocalHost:3000", "http://localhost:3000/", "https://app.example.com/x", "localhost:3000"]) {
      const refused = await withServer({ allowedOrigins: [origin] }, async () => "served").then(String, (error: Error) => error)
      expect(refused, origin).toBeInstanceOf(Error)
      expect(String(refused)).toContain(`allowedOrigins: ${JSON.stringify(origin)} is not an origin`)
    }
    expect(await withServer({ allowedOrigins: ["https://app.example.com", "http://[::1]:3000"] }, async () => "served")).toBe("served")
  })

  it("a session's request may name any supported protocol version; an unsupported one gets 400", () =>
    withServer({}, async (url) => {
      const init = await post(url, {}, initialize)
      const session = String(init.headers["mcp-session-id"])
      const list = { jsonrpc: "2.0", id: 2, method: "tools/list", params: {} }
      const older = await post(url, { "mcp-session-id": session, "mcp-protocol-version": "2025-03-26" }, list)
      expect(older.status).toBe(200)
      expect(older.body).toContain("ask_name")
      const unknown = await post(url, { "mcp-session-id": session, "mcp-protocol-version": "1999-01-01" }, list)
      expect(unknown.status).toBe(400)
    }), 30_000)

  it("advertises tools and logging, and completions only when something completes", () =>
    withServer({}, async (url) => {
      const client = await connect(url)
      const capabilities = client.getServerCapabilities()
      expect(capabilities?.tools).toBeDefined()
      expect(capabilities?.logging).toEqual({})
      expect(capabilities?.completions).toBeUndefined()
      await client.close()
    }), 30_000)

  it("advertises completions when a prompt completes an argument, and answers completion/complete", () =>
    withServer({
      prompts: [McpPrompt.make("greet", {
        arguments: Schema.Struct({ city: Schema.String }),
        completions: { city: (input) => Effect.succeed(["paris", "park", "rome"].filter((c) => c.startsWith(input))) },
        handler: ({ city }) => Effect.succeed(`Hello from ${city}`)
      })]
    }, async (url) => {
      const client = await connect(url)
      expect(client.getServerCapabilities()?.completions).toEqual({})
      const completed = await client.complete({ ref: { type: "ref/prompt", name: "greet" }, argument: { name: "city", value: "pa" } })
      expect(completed.completion.values).toEqual(["paris", "park"])
      await client.close()
    }), 30_000)
})
