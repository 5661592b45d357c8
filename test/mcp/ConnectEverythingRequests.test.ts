/**
 * McpConnect's local policy for what the official `@modelcontextprotocol/server-everything` asks
 * and tells (a real subprocess over stdio): its elicitation tool answered through `Approval` (an
 * edit accepted with the schema's defaults, defaults alone declined for want of the required name),
 * its sampling tool answered by the `ChatModel`, its simulated logging at the level asked for, and
 * its long-running operation's progress as `tool.progress` events.
 */
import { fileURLToPath } from "node:url"
import { Effect, Layer, Logger, References, Scope, Stream } from "effect"
import { describe, expect, it } from "vitest"
import * as ChatModel from "../../src/agent/ChatModel.ts"
import * as ToolResult from "../../src/contract/ToolResult.ts"
import * as Approval from "../../src/governance/Approval.ts"
import { McpConnect } from "../../src/mcp/index.ts"
import { EventLog } from "../../src/runtime/EventSink.ts"
import * as Executor from "../../src/runtime/Executor.ts"
import * as ToolServices from "../../src/runtime/ToolServices.ts"

const server = fileURLToPath(new URL("../../node_modules/@modelcontextprotocol/server-everything/dist/index.js", import.meta.url))

const run = <A, E>(effect: Effect.Effect<A, E, Scope.Scope | ToolServices.Hidden | EventLog>) =>
  Effect.runPromise(effect.pipe(Effect.scoped, Effect.provide(ToolServices.layerTest())))

const call = (id: string, name: string, args: unknown) => ({ id, name, arguments: JSON.stringify(args) })

/** Connects, then waits for `tool` (the server registers its client-dependent tools after initialization). */
const connectWith = (tool: string, options: McpConnect.Options) =>
  Effect.gen(function*() {
    const connection = yield* McpConnect.stdio({
      command: process.execPath,
      args: [server, "stdio"],
      name: "everything",
      stderr: "ignore",
      ...options
    })
    const registry = yield* connection.changes.pipe(
      Stream.filter((registry) => registry.get(tool) !== undefined),
      Stream.runHead,
      Effect.timeout("10 seconds")
    )
    if (registry._tag === "None") throw new Error(`no ${tool}`)
    return { connection, executor: yield* Executor.make(registry.value) }
  })

describe("McpConnect: server-everything's requests through local policy", () => {
  it("elicitation: an edit is accepted with the schema's defaults; the defaults alone lack the required name and are declined", () => {
    const asked: Array<Approval.Request> = []
    const answers = [Approval.edit({ name: "Ada Lovelace", check: true }, "test"), Approval.approve("test")]
    const approval = Approval.layer((request) => Effect.sync(() => (asked.push(request), answers.shift()!)))
    return run(Effect.gen(function*() {
      const { executor } = yield* connectWith("trigger-elicitation-request", { elicitation: "approval" })
      const edited = yield* executor.run(call("c1", "trigger-elicitation-request", {}))
      expect(edited.isError).toBe(false)
      const text = ToolResult.textOf(edited)
      expect(text).toContain("User provided the requested information")
      expect(text).toContain("- Name: Ada Lovelace")
      expect(text).toContain("- Favorite Integer: 42")
      expect(asked[0]).toMatchObject({
        toolName: "trigger_elicitation_request",
        why: `MCP server "everything" asks: Please provide inputs for the following fields:`,
        arguments: { firstLine: "It was a dark and stormy night.", integer: 42, untitledMultipleSelectEnum: ["Guitar"] }
      })
      const defaultsOnly = yield* executor.run(call("c2", "trigger-elicitation-request", {}))
      expect(ToolResult.textOf(defaultsOnly)).toContain("User declined")
    }).pipe(Effect.provide(approval)))
  })

  it("sampling: answered by the ChatModel in context", () => {
    const asked: Array<ChatModel.Request> = []
    const model = ChatModel.fromFunction((request) =>
      Effect.sync(() => (asked.push(request), { ...ChatModel.answer("Sampled by tinyagents."), finishReason: "stop" as const }))
    )
    return run(Effect.gen(function*() {
      const { executor } = yield* connectWith("trigger-sampling-request", { sampling: { maxTokens: 200 } })
      const result = yield* executor.run(call("c1", "trigger-sampling-request", { prompt: "Say hi", maxTokens: 50 }))
      expect(result.isError).toBe(false)
      expect(ToolResult.textOf(result)).toContain(`"text": "Sampled by tinyagents."`)
      expect(asked[0]?.messages).toEqual([
        { role: "system", content: "You are a helpful test server." },
        { role: "user", content: "Resource trigger-sampling-request context: Say hi" }
      ])
      const over = yield* executor.run(call("c2", "trigger-sampling-request", { prompt: "Say hi", maxTokens: 5000 }))
      expect(over.isError).toBe(true)
      expect(ToolResult.textOf(over)).toContain("maxTokens 5000 is over this client's limit of 200")
    }).pipe(Effect.provide(model)))
  })

  it("logging: the server's messages reach Effect's logger at the level asked for", () => {
    const logged: Array<{ level: string; message: string; server: unknown }> = []
    const logger = Logger.make((options) =>
      void logged.push({
        level: options.logLevel,
        message: (options.message as ReadonlyArray<unknown>).map(String).join(" "),
        server: options.fiber.getRef(References.CurrentLogAnnotations)["mcpServer"]
      })
    )
    return run(Effect.gen(function*() {
      const { executor } = yield* connectWith("toggle-simulated-logging", { logLevel: "debug" })
      yield* executor.run(call("c1", "toggle-simulated-logging", {}))
      for (let i = 0; i < 100 && logged.length === 0; i++) yield* Effect.sleep("20 millis")
      expect(logged[0]).toMatchObject({ message: expect.stringMatching(/-level message|level-message/), server: "everything" })
      yield* executor.run(call("c2", "toggle-simulated-logging", {}))
    }).pipe(Effect.provide(Layer.mergeAll(Logger.layer([logger]), Layer.succeed(References.MinimumLogLevel, "All")))))
  })

  it("progress: each notification is a tool.progress event of the call", () =>
    run(Effect.gen(function*() {
      const { executor } = yield* connectWith("trigger-long-running-operation", {})
      const result = yield* executor.run(call("c1", "trigger-long-running-operation", { duration: 0.4, steps: 2 }))
      expect(result.isError).toBe(false)
      const progress = (yield* (yield* EventLog).all).flatMap((event) =>
        event._tag === "tool.progress" && event.toolCallId === "c1" ? [{ count: event.count, total: event.total }] : []
      )
      expect(progress).toEqual([{ count: 1, total: 2 }, { count: 2, total: 2 }])
    })))
})
