/**
 * McpConnect against the official `@modelcontextprotocol/server-everything`,
 * run as a real subprocess (stdio) and as a Streamable HTTP server: import,
 * aliases, annotations, calls (text, structured content, images, resource
 * links), local validation before sending, timeouts sent as
 * `notifications/cancelled`, list changes, and the scoped lifetime.
 */
import { getDefaultEnvironment, StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { compileCache } from "../support/compileCache.ts"
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js"
import { type ChildProcess, spawn } from "node:child_process"
import { createServer } from "node:net"
import { fileURLToPath } from "node:url"
import { Effect, Scope } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as Executor from "../../src/runtime/Executor.ts"
import * as ToolResult from "../../src/contract/ToolResult.ts"
import type { EventLog } from "../../src/runtime/EventSink.ts"
import * as ToolServices from "../../src/runtime/ToolServices.ts"
import { McpConnect } from "../../src/mcp/index.ts"

const server = fileURLToPath(new URL("../../node_modules/@modelcontextprotocol/server-everything/dist/index.js", import.meta.url))

/** A stdio transport to the everything server that records what the client sends. */
const recorded = () => {
  const sent: Array<JSONRPCMessage> = []
  let pid: number | null = null
  const make = () => {
    const transport = new StdioClientTransport({ command: process.execPath, args: [server, "stdio"], stderr: "ignore", env: { ...getDefaultEnvironment(), ...compileCache } })
    const send = transport.send.bind(transport)
    transport.send = (message: JSONRPCMessage) => {
      sent.push(message)
      return send(message)
    }
    const start = transport.start.bind(transport)
    transport.start = async () => {
      await start()
      pid = transport.pid
    }
    return transport
  }
  return { sent, make, pid: () => pid }
}

const run = <A, E>(effect: Effect.Effect<A, E, Scope.Scope | ToolServices.Hidden | EventLog>) =>
  Effect.runPromise(effect.pipe(Effect.scoped, Effect.provide(ToolServices.layerTest())))

const call = (id: string, name: string, args: unknown) => ({ id, name, arguments: JSON.stringify(args) })

const calls = (sent: ReadonlyArray<JSONRPCMessage>, method: string) =>
  sent.filter((m) => "method" in m && m.method === method)

describe("McpConnect: server-everything over stdio", () => {
  it("imports its tools under canonical aliases with safety from the annotations", () =>
    run(Effect.gen(function*() {
      const connection = yield* McpConnect.stdio({ command: process.execPath, args: [server, "stdio"], name: "everything" })
      const registry = yield* connection.registry
      expect(connection.serverInfo?.name).toBe("mcp-servers/everything")
      expect(registry.names).toEqual(expect.arrayContaining(["echo", "get_sum", "get_structured_content", "get_tiny_image"]))
      expect(connection.skipped()).toEqual([])
      const sum = registry.get("get-sum")!
      expect(sum.spec.name).toBe("get_sum")
      expect(sum.spec.originalName).toBe("get-sum")
      expect(sum.spec.safety).toEqual({
        access: "read",
        idempotent: true,
        networked: false,
        destructive: false,
        tags: ["mcp", "mcp:everything"]
      })
      expect(sum.spec.inputSchema).toMatchObject({ type: "object", required: ["a", "b"], additionalProperties: false })
      const toggle = registry.get("toggle-simulated-logging")!.spec.safety
      expect(toggle).toMatchObject({ access: "write", destructive: false, networked: false, idempotent: false })
      expect(McpConnect.sourceOf(sum.tool)).toEqual({ server: "everything", tool: "get-sum" })
    })))

  it("calls tools: text, structured content, images, embedded resources, resource links as artifacts", () =>
    run(Effect.gen(function*() {
      const connection = yield* McpConnect.stdio({ command: process.execPath, args: [server, "stdio"], name: "everything" })
      const executor = yield* Executor.make(yield* connection.registry, { middleware: [McpConnect.middleware] })
      const sum = yield* executor.run(call("c1", "get_sum", { a: 2, b: 3 }))
      expect(sum.isError).toBe(false)
      expect(ToolResult.textOf(sum)).toBe("The sum of 2 and 3 is 5.")
      const weather = yield* executor.run(call("c2", "get-structured-content", { location: "Chicago" }))
      expect(weather.isError).toBe(false)
      expect(weather.value).toMatchObject({ temperature: expect.any(Number), conditions: expect.any(String) })
      const image = yield* executor.run(call("c3", "get_tiny_image", {}))
      expect(image.content.some((b) => b.type === "image" && b.mimeType === "image/png")).toBe(true)
      const links = yield* executor.run(call("c4", "get_resource_links", { count: 2 }))
      expect(links.isError).toBe(false)
      expect(links.artifacts).toEqual([
        { store: "mcp:everything", key: "demo://resource/dynamic/blob/1", bytes: 0, mimeType: "text/plain" },
        { store: "mcp:everything", key: "demo://resource/dynamic/text/2", bytes: 0, mimeType: "text/plain" }
      ])
      expect(ToolResult.textOf(links)).toContain("[resource link: Text Resource 2 <demo://resource/dynamic/text/2> (text/plain)]")
      // embedded resources, text and blob: resource blocks between the server's two texts
      const text = yield* executor.run(call("c5", "get-resource-reference", { resourceType: "Text", resourceId: 2 }))
      expect(text.content.map((b) => b.type)).toEqual(["text", "resource", "text"])
      expect(text.content[1]).toEqual(ToolResult.resource({
        uri: "demo://resource/dynamic/text/2",
        mimeType: "text/plain",
        text: expect.stringMatching(/^Resource 2: This is a plaintext resource created at /) as unknown as string
      }))
      const blob = yield* executor.run(call("c6", "get-resource-reference", { resourceType: "Blob", resourceId: 1 }))
      const [, resource] = blob.content
      expect(resource).toMatchObject({ type: "resource", resource: { uri: "demo://resource/dynamic/blob/1", mimeType: "text/plain" } })
      const data = resource?.type === "resource" && "blob" in resource.resource ? resource.resource.blob : ""
      expect(Buffer.from(data, "base64").toString()).toMatch(/^Resource 1: This is a base64 blob created at /)
    })))

  it("validates arguments locally: an invalid call is refused and never sent", () => {
    const wire = recorded()
    return run(Effect.gen(function*() {
      const connection = yield* McpConnect.transport(wire.make, { name: "everything" })
      const executor = yield* Executor.make(yield* connection.registry)
      const bad = yield* executor.run(call("c1", "get_sum", { a: "x", extra: 1 }))
      expect(bad.isError).toBe(true)
      expect(bad.error?._tag).toBe("InvalidArguments")
      expect(ToolResult.textOf(bad)).toContain(`at "a"`)
      expect(calls(wire.sent, "tools/call")).toEqual([])
      const good = yield* executor.run(call("c2", "get_sum", { a: 1, b: 1 }))
      expect(good.isError).toBe(false)
      expect(calls(wire.sent, "tools/call")).toHaveLength(1)
    }))
  })

  it("a timeout interrupts the call and sends notifications/cancelled for its request", () => {
    const wire = recorded()
    return run(Effect.gen(function*() {
      const connection = yield* McpConnect.transport(wire.make, { name: "everything", timeout: "300 millis" })
      const executor = yield* Executor.make(yield* connection.registry)
      const slow = yield* executor.run(call("c1", "trigger-long-running-operation", { duration: 5, steps: 5 }))
      expect(slow.isError).toBe(true)
      expect(slow.error?._tag).toBe("ToolTimeout")
      const [request] = calls(wire.sent, "tools/call") as unknown as Array<{ id: number }>
      const cancelled = calls(wire.sent, "notifications/cancelled") as unknown as Array<{ params: { requestId: number } }>
      expect(cancelled.map((n) => n.params.requestId)).toEqual([request!.id])
      // the connection stays usable
      const sum = yield* executor.run(call("c2", "get_sum", { a: 1, b: 2 }))
      expect(ToolResult.textOf(sum)).toBe("The sum of 1 and 2 is 3.")
    }))
  })

  it("refreshes the registry on tools/list_changed (the server adds tools after initialization)", () =>
    run(Effect.gen(function*() {
      const connection = yield* McpConnect.stdio({ command: process.execPath, args: [server, "stdio"], name: "everything" })
      for (let i = 0; i < 100 && (yield* connection.listChanged) === 0; i++) yield* Effect.sleep("50 millis")
      expect(yield* connection.listChanged).toBeGreaterThan(0)
      yield* connection.refresh // at least one refresh after the notification
      expect((yield* connection.registry).names).toContain("simulate_research_query")
    })))

  it("is a scoped resource: closing the scope stops the server process", async () => {
    const wire = recorded()
    await run(Effect.gen(function*() {
      const connection = yield* McpConnect.transport(wire.make, { name: "everything" })
      expect((yield* connection.registry).names.length).toBeGreaterThan(5)
      expect(wire.pid()).not.toBeNull()
    }))
    const pid = wire.pid()!
    let alive = true
    for (let i = 0; i < 50 && alive; i++) {
      try {
        process.kill(pid, 0)
        await new Promise((resolve) => setTimeout(resolve, 50))
      } catch {
        alive = false
      }
    }
    expect(alive).toBe(false)
  })

  it("fails to connect with a typed error that quotes the server's stderr", async () => {
    const exit = await Effect.runPromiseExit(
      McpConnect.stdio({
        command: process.execPath,
        args: ["-e", "console.error('no such server here'); process.exit(3)"],
        name: "broken"
      }).pipe(Effect.scoped)
    )
    expect(exit._tag).toBe("Failure")
    const error = exit._tag === "Failure" ? (exit.cause.reasons[0] as { error?: McpConnect.McpConnectError }).error : undefined
    expect(error?._tag).toBe("McpConnectError")
    expect(error?.operation).toBe("connect")
    expect(error?.message).toContain(`cannot connect to the MCP server "broken"`)
    expect(error?.message).toContain("no such server here")
  })
})

describe("McpConnect: server-everything over Streamable HTTP", () => {
  let child: ChildProcess | undefined
  let port = 0
  beforeAll(async () => {
    port = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, "127.0.0.1", () => {
        const p = (probe.address() as { port: number }).port
        probe.close(() => resolve(p))
      })
    })
    child = spawn(process.execPath, [server, "streamableHttp"], { env: { ...process.env, PORT: String(port) }, stdio: ["ignore", "ignore", "pipe"] })
    await new Promise<void>((resolve, reject) => {
      child!.stderr!.on("data", (chunk) => String(chunk).includes("listening") && resolve())
      child!.once("exit", (code) => reject(new Error(`server exited with ${code}`)))
    })
  })
  afterAll(() => void child?.kill())

  it("imports and calls over HTTP", () =>
    run(Effect.gen(function*() {
      const connection = yield* McpConnect.http({ url: `http://127.0.0.1:${port}/mcp` })
      expect(connection.name).toBe("mcp-servers/everything")
      const executor = yield* Executor.make(yield* connection.registry)
      const sum = yield* executor.run(call("c1", "get-sum", { a: 20, b: 22 }))
      expect(ToolResult.textOf(sum)).toBe("The sum of 20 and 22 is 42.")
      expect(sum.name).toBe("get_sum")
    })))
})
