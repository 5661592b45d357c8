/**
 * What a server asks of an McpConnect client, against an in-process MCP SDK server (in-memory
 * transport): elicitation answered through `Approval` (approve with the schema's defaults, a valid
 * or invalid edit, deny, nobody to ask, not advertised), sampling answered by the `ChatModel`
 * (mapping, limits, refusals, not advertised), and the server's log messages to Effect's logger
 * with `logLevel` sent as `logging/setLevel`.
 */
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js"
import { Server } from "@modelcontextprotocol/sdk/server/index.js"
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js"
import { Effect, Layer, Logger, References, Scope } from "effect"
import { describe, expect, it } from "vitest"
import * as ChatModel from "../../src/agent/ChatModel.ts"
import * as ToolResult from "../../src/contract/ToolResult.ts"
import * as Approval from "../../src/governance/Approval.ts"
import { McpConnect } from "../../src/mcp/index.ts"
import type { EventLog } from "../../src/runtime/EventSink.ts"
import * as Executor from "../../src/runtime/Executor.ts"
import * as ToolServices from "../../src/runtime/ToolServices.ts"

const requestedSchema = {
  type: "object" as const,
  properties: {
    name: { type: "string" as const, default: "Ada" },
    age: { type: "integer" as const, minimum: 0, default: 36 },
    role: { type: "string" as const, enum: ["admin", "user"], default: "user" },
    verified: { type: "boolean" as const, default: true },
    note: { type: "string" as const }
  },
  required: ["name"]
}

/** A server whose tools ask the client: `ask` (elicitation), `sample` (sampling), `log` (two log messages). */
const fakeServer = () => {
  const server = new Server({ name: "asker", version: "1.0.0" }, { capabilities: { tools: {}, logging: {} } })
  const answer = (value: unknown) => ({ content: [{ type: "text" as const, text: JSON.stringify(value) }] })
  const failed = (error: unknown) => ({
    content: [{ type: "text" as const, text: error instanceof Error ? error.message : String(error) }],
    isError: true
  })
  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: [
      { name: "ask", inputSchema: { type: "object" as const, properties: { schema: { type: "object" } } } },
      { name: "sample", inputSchema: { type: "object" as const, properties: { maxTokens: { type: "integer" } } } },
      { name: "log", inputSchema: { type: "object" as const, properties: {} } }
    ]
  }))
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const args = (request.params.arguments ?? {}) as { maxTokens?: number; schema?: object }
    try {
      switch (request.params.name) {
        case "ask":
          return answer(await server.elicitInput({ message: "Who are you?", requestedSchema: args.schema ?? requestedSchema } as never))
        case "sample":
          return answer(
            await server.createMessage({
              messages: [
                { role: "user", content: { type: "text", text: "Describe this" } },
                { role: "user", content: { type: "image", data: "iVBORw0KGgo=", mimeType: "image/png" } },
                { role: "assistant", content: { type: "text", text: "A picture." } },
                { role: "user", content: [{ type: "text", text: "More" }, { type: "text", text: "please" }] }
              ],
              systemPrompt: "Be brief.",
              maxTokens: args.maxTokens ?? 50
            })
          )
        case "log":
          await server.sendLoggingMessage({ level: "warning", logger: "db", data: "disk low" })
          await server.sendLoggingMessage({ level: "critical", data: { code: 7 } })
          return answer("logged")
      }
    } catch (error) {
      return failed(error)
    }
    return failed(`unknown tool ${request.params.name}`)
  })
  const connect = (options: McpConnect.Options = {}) =>
    McpConnect.transport(async () => {
      const [client, serverSide] = InMemoryTransport.createLinkedPair()
      await server.connect(serverSide)
      return client
    }, { name: "asker", ...options })
  return { server, connect }
}

const run = <A, E>(effect: Effect.Effect<A, E, Scope.Scope | ToolServices.Hidden | EventLog>) =>
  Effect.runPromise(effect.pipe(Effect.scoped, Effect.provide(ToolServices.layerTest())))

const call = (id: string, name: string, args: unknown = {}) => ({ id, name, arguments: JSON.stringify(args) })

/** Calls `name` through an executor and returns its text (JSON answers parsed). */
const callText = (connection: McpConnect.Connection, id: string, name: string, args: unknown = {}) =>
  Effect.gen(function*() {
    const executor = yield* Executor.make(yield* connection.registry)
    const result = yield* executor.run(call(id, name, args))
    return { isError: result.isError, text: ToolResult.textOf(result) }
  })

/** An approver that answers `decide` and records what it was asked. */
const approver = (decide: (request: Approval.Request) => Approval.Decision) => {
  const asked: Array<Approval.Request> = []
  const layer = Approval.layer((request) => Effect.sync(() => (asked.push(request), decide(request))))
  return { asked, layer }
}

/** Captures what is logged, with its level and annotations. */
const capture = () => {
  const logged: Array<{ level: string; message: string; annotations: Record<string, unknown> }> = []
  const logger = Logger.make((options) =>
    void logged.push({
      level: options.logLevel,
      message: (options.message as ReadonlyArray<unknown>).map(String).join(" "),
      annotations: { ...options.fiber.getRef(References.CurrentLogAnnotations) }
    })
  )
  return { logged, layer: Layer.mergeAll(Logger.layer([logger]), Layer.succeed(References.MinimumLogLevel, "All")) }
}

describe("McpConnect: elicitation through Approval", () => {
  it("is not advertised unless configured: the server cannot ask", () => {
    const fake = fakeServer()
    return run(Effect.gen(function*() {
      const connection = yield* fake.connect()
      expect(fake.server.getClientCapabilities()?.elicitation).toBeUndefined()
      const asked = yield* callText(connection, "c1", "ask")
      expect(asked.isError).toBe(true)
      expect(asked.text).toContain("does not support form elicitation")
    }))
  })

  it("Approve accepts every default the schema declares; the request names the call, the server's message and the schema", () => {
    const fake = fakeServer()
    const { asked, layer } = approver(() => Approval.approve("test"))
    return run(Effect.gen(function*() {
      const connection = yield* fake.connect({ elicitation: "approval" })
      expect(fake.server.getClientCapabilities()?.elicitation).toEqual({ form: {} })
      const result = yield* callText(connection, "c1", "ask").pipe(Effect.provide(layer))
      expect(JSON.parse(result.text)).toEqual({
        action: "accept",
        content: { name: "Ada", age: 36, role: "user", verified: true }
      })
      expect(asked).toHaveLength(1)
      const request = asked[0]!
      expect(request.toolName).toBe("ask")
      expect(request.callId).toMatch(/^c1:elicitation:/)
      expect(request.why).toBe(`MCP server "asker" asks: Who are you?`)
      expect(request.arguments).toEqual({ name: "Ada", age: 36, role: "user", verified: true })
      expect(request.spec.inputSchema).toMatchObject({ type: "object", properties: { age: { type: "integer" } } })
      expect(request.spec.safety.tags).toEqual(["mcp", "mcp:asker", "mcp:elicitation"])
    }))
  })

  it("Edit accepts valid content with the defaults filled in; invalid content and Deny decline", () => {
    const fake = fakeServer()
    const answers: Array<Approval.Decision> = [
      Approval.edit({ name: "Grace", note: "hi" }, "test"),
      Approval.edit({ age: "old" }, "test"),
      Approval.edit({ unknown: 1 }, "test"),
      Approval.deny("no", "test")
    ]
    const { layer } = approver(() => answers.shift()!)
    const logs = capture()
    return run(Effect.gen(function*() {
      const connection = yield* fake.connect({ elicitation: "approval" })
      const results = []
      for (const id of ["c1", "c2", "c3", "c4"]) results.push(JSON.parse((yield* callText(connection, id, "ask")).text))
      expect(results).toEqual([
        { action: "accept", content: { name: "Grace", age: 36, role: "user", verified: true, note: "hi" } },
        { action: "decline" },
        { action: "decline" },
        { action: "decline" }
      ])
      // an answer that does not fit is logged with where, never with what the user typed
      expect(logs.logged.filter((l) => l.level === "Warn")).toEqual([
        {
          level: "Warn",
          message: `tinyagents mcp: declined an elicitation: the answer does not fit the requested schema (at "age")`,
          annotations: { mcpServer: "asker" }
        },
        {
          level: "Warn",
          message: `tinyagents mcp: declined an elicitation: the answer does not fit the requested schema (at "unknown")`,
          annotations: { mcpServer: "asker" }
        }
      ])
    }).pipe(Effect.provide([layer, logs.layer])))
  })

  it("Approve declines when the defaults leave a required field empty", () => {
    const fake = fakeServer()
    const schema = { type: "object", properties: { name: { type: "string" }, n: { type: "number", default: 1 } }, required: ["name"] }
    return run(Effect.gen(function*() {
      const connection = yield* fake.connect({ elicitation: "approval" })
      const result = yield* callText(connection, "c1", "ask", { schema })
      expect(JSON.parse(result.text)).toEqual({ action: "decline" })
    }).pipe(Effect.provide(Approval.layer(() => Effect.succeed(Approval.approve())))))
  })

  it("declines when no Approval is in context", () => {
    const fake = fakeServer()
    return run(Effect.gen(function*() {
      const connection = yield* fake.connect({ elicitation: "approval" })
      expect(JSON.parse((yield* callText(connection, "c1", "ask")).text)).toEqual({ action: "decline" })
    }))
  })

  it("outside any call, asks the Approval the connection was made with, naming the server", () => {
    const fake = fakeServer()
    const { asked, layer } = approver(() => Approval.approve("test"))
    return run(Effect.gen(function*() {
      yield* fake.connect({ elicitation: "approval" })
      const result = yield* Effect.promise(() => fake.server.elicitInput({ message: "Now?", requestedSchema } as never))
      expect(result).toMatchObject({ action: "accept", content: { name: "Ada" } })
      expect(asked[0]).toMatchObject({ toolName: "mcp:asker", why: `MCP server "asker" asks: Now?` })
      expect(asked[0]!.callId).toMatch(/^asker:elicitation:/)
    }).pipe(Effect.provide(layer)))
  })

  it("an Approval that dies is declined; the defect is logged here, never sent to the server", () => {
    const fake = fakeServer()
    const { logged, layer: logs } = capture()
    const dying = Approval.layer(() => Effect.die(new Error("approver crashed: internal detail")))
    return run(Effect.gen(function*() {
      const connection = yield* fake.connect({ elicitation: "approval" })
      const result = yield* callText(connection, "c1", "ask")
      expect(JSON.parse(result.text)).toEqual({ action: "decline" })
      expect(logged.some((entry) => entry.message.includes("answering an elicitation failed"))).toBe(true)
    }).pipe(Effect.provide(Layer.mergeAll(dying, logs))))
  })
})

describe("McpConnect: sampling through the ChatModel", () => {
  const model = () => {
    const requests: Array<ChatModel.Request> = []
    const layer = ChatModel.fromFunction((request) =>
      Effect.sync(() => {
        requests.push(request)
        return { text: "It is a cat.", toolCalls: [], usage: { inputTokens: 10, outputTokens: 4 }, finishReason: "stop" as const }
      })
    )
    return { requests, layer }
  }

  it("is not advertised unless configured", () => {
    const fake = fakeServer()
    return run(Effect.gen(function*() {
      const connection = yield* fake.connect()
      expect(fake.server.getClientCapabilities()?.sampling).toBeUndefined()
      const result = yield* callText(connection, "c1", "sample")
      expect(result.isError).toBe(true)
      // the SDK client has no handler for it
      expect(result.text).toContain("Method not found")
    }))
  })

  it("answers with the model in context: the system prompt first, images described, the text and stop reason back", () => {
    const fake = fakeServer()
    const { layer, requests } = model()
    return run(Effect.gen(function*() {
      const connection = yield* fake.connect({ sampling: { maxTokens: 100, model: "test-model" } })
      expect(fake.server.getClientCapabilities()?.sampling).toEqual({})
      const result = yield* callText(connection, "c1", "sample")
      expect(JSON.parse(result.text)).toEqual({
        role: "assistant",
        content: { type: "text", text: "It is a cat." },
        model: "test-model",
        stopReason: "endTurn"
      })
      expect(requests).toEqual([{
        messages: [
          { role: "system", content: "Be brief." },
          { role: "user", content: "Describe this" },
          { role: "user", content: "[image image/png, 8 bytes, not shown]" },
          { role: "assistant", content: "A picture.", toolCalls: [] },
          { role: "user", content: "More\nplease" }
        ],
        tools: []
      }])
    }).pipe(Effect.provide(layer)))
  })

  it("refuses a request over maxTokens, over the connection's budget, or that allow rejects; the model is not asked", () => {
    const fake = fakeServer()
    const { layer, requests } = model()
    const seen: Array<McpConnect.SamplingRequest> = []
    return run(Effect.gen(function*() {
      const connection = yield* fake.connect({
        sampling: {
          maxTokens: 100,
          maxRequests: 1,
          allow: (request) => (seen.push(request), request.maxTokens !== 13)
        }
      })
      const over = yield* callText(connection, "c1", "sample", { maxTokens: 500 })
      expect(over).toEqual({ isError: true, text: expect.stringContaining("maxTokens 500 is over this client's limit of 100") })
      const disallowed = yield* callText(connection, "c2", "sample", { maxTokens: 13 })
      expect(disallowed.text).toContain("sampling refused: not allowed by this client's policy")
      expect(seen[0]).toMatchObject({ server: "asker", toolName: "sample", maxTokens: 13 })
      expect((yield* callText(connection, "c3", "sample")).isError).toBe(false)
      const spent = yield* callText(connection, "c4", "sample")
      expect(spent.text).toContain("this connection's budget of 1 requests is spent")
      expect(requests).toHaveLength(1)
    }).pipe(Effect.provide(layer)))
  })

  it("a defect (a throwing allow, a model that dies) is -32603 'the model could not answer', its message logged here only", () => {
    const fake = fakeServer()
    const { logged, layer: logs } = capture()
    const dying = ChatModel.fromFunction(() => Effect.die(new Error("model crashed: internal detail")))
    return run(Effect.gen(function*() {
      const throwing = yield* fake.connect({
        sampling: {
          maxTokens: 100,
          allow: () => {
            throw new Error("policy crashed: internal detail")
          }
        }
      })
      const refused = yield* callText(throwing, "c1", "sample")
      expect(refused.isError).toBe(true)
      expect(refused.text).toContain("the model could not answer")
      expect(refused.text).not.toContain("internal detail")
      const died = yield* callText(yield* fakeServer().connect({ sampling: { maxTokens: 100 } }), "c2", "sample")
      expect(died.text).toContain("the model could not answer")
      expect(died.text).not.toContain("internal detail")
      expect(logged.filter((entry) => entry.message.includes("answering a sampling request failed"))).toHaveLength(2)
    }).pipe(Effect.provide(Layer.mergeAll(dying, logs))))
  })

  it("refuses when no ChatModel is in context", () => {
    const fake = fakeServer()
    return run(Effect.gen(function*() {
      const connection = yield* fake.connect({ sampling: { maxTokens: 100 } })
      const result = yield* callText(connection, "c1", "sample")
      expect(result.text).toContain("sampling refused: no model is available to this client")
    }))
  })
})

describe("McpConnect: server log messages", () => {
  it("go to Effect's logger at the mapped level, annotated with the server (and logger)", () => {
    const fake = fakeServer()
    const { logged, layer } = capture()
    return run(Effect.gen(function*() {
      const connection = yield* fake.connect()
      yield* callText(connection, "c1", "log")
      for (let i = 0; i < 50 && logged.length < 2; i++) yield* Effect.sleep("10 millis")
      expect(logged).toEqual([
        { level: "Warn", message: "disk low", annotations: { mcpServer: "asker", mcpLogger: "db" } },
        { level: "Fatal", message: `{"code":7}`, annotations: { mcpServer: "asker" } }
      ])
    }).pipe(Effect.provide(layer)))
  })

  it("logLevel asks the server for that level and above (logging/setLevel)", () => {
    const fake = fakeServer()
    const { logged, layer } = capture()
    return run(Effect.gen(function*() {
      const connection = yield* fake.connect({ logLevel: "error" })
      yield* callText(connection, "c1", "log")
      for (let i = 0; i < 50 && logged.length < 1; i++) yield* Effect.sleep("10 millis")
      yield* Effect.sleep("20 millis")
      expect(logged.map((l) => l.message)).toEqual([`{"code":7}`])
    }).pipe(Effect.provide(layer)))
  })
})
