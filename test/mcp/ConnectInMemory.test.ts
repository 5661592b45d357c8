/**
 * McpConnect's mapping and refresh against an in-process MCP SDK server (in-memory
 * transport), where the test controls the tool list exactly: conservative safety
 * for tools without annotations, skipped tools, result mapping, `isError`,
 * interruption sent as `notifications/cancelled`, and `tools/list_changed`.
 */
import { Server } from "@modelcontextprotocol/sdk/server/index.js"
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js"
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js"
import { Effect, Fiber, Scope, Stream } from "effect"
import { describe, expect, it } from "vitest"
import * as ToolResult from "../../src/contract/ToolResult.ts"
import type { EventLog } from "../../src/runtime/EventSink.ts"
import * as Executor from "../../src/runtime/Executor.ts"
import * as ToolServices from "../../src/runtime/ToolServices.ts"
import { McpConnect } from "../../src/mcp/index.ts"
import { mapResult } from "../../src/mcp/internal/connectMapping.ts"

type ToolDef = { name: string; inputSchema: { type: "object"; [k: string]: unknown }; annotations?: object; description?: string }

/** A server whose tool list and behaviour the test sets. */
const fakeServer = () => {
  const tools: Array<ToolDef> = [
    { name: "raw.tool", description: "no annotations", inputSchema: { type: "object", properties: { n: { type: "integer" } }, required: ["n"] } },
    { name: "fails", inputSchema: { type: "object", properties: {} }, annotations: { readOnlyHint: true } },
    { name: "hangs", inputSchema: { type: "object", properties: {} }, annotations: { readOnlyHint: true } },
    { name: "get-x", inputSchema: { type: "object", properties: {} } },
    { name: "get_x", inputSchema: { type: "object", properties: {} } }
  ]
  const cancelled: Array<string> = []
  const server = new Server({ name: "fake", version: "1.0.0" }, { capabilities: { tools: { listChanged: true } } })
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [...tools] }))
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    switch (request.params.name) {
      case "raw.tool":
        return { content: [{ type: "text", text: `n=${String(request.params.arguments?.n)}` }] }
      case "fails":
        return { content: [{ type: "text", text: "disk on fire" }], structuredContent: { code: 7 }, isError: true }
      case "hangs":
        return await new Promise((_, reject) =>
          extra.signal.addEventListener("abort", () => {
            cancelled.push(String(extra.requestId))
            reject(new Error("aborted"))
          })
        )
      default:
        return { content: [{ type: "text", text: "ok" }] }
    }
  })
  const connect = (options: McpConnect.Options = {}) =>
    McpConnect.transport(async () => {
      const [client, serverSide] = InMemoryTransport.createLinkedPair()
      await server.connect(serverSide)
      return client
    }, options)
  return { server, tools, cancelled, connect }
}

const run = <A, E>(effect: Effect.Effect<A, E, Scope.Scope | ToolServices.Hidden | EventLog>) =>
  Effect.runPromise(effect.pipe(Effect.scoped, Effect.provide(ToolServices.layerTest())))

const call = (id: string, name: string, args: unknown) => ({ id, name, arguments: JSON.stringify(args) })

describe("McpConnect.safetyOf", () => {
  it("treats a tool with no hints as possibly destructive and open-world", () => {
    expect(McpConnect.safetyOf(undefined, "s")).toEqual({
      access: "mutate",
      idempotent: false,
      networked: true,
      destructive: true,
      tags: ["mcp", "mcp:s"]
    })
    expect(McpConnect.safetyOf({ destructiveHint: false }, "s")).toMatchObject({ access: "network", destructive: false, networked: true })
    expect(McpConnect.safetyOf({ readOnlyHint: true }, "s")).toMatchObject({ access: "read", idempotent: true, networked: true })
    expect(McpConnect.safetyOf({ readOnlyHint: true, destructiveHint: true }, "s")).toMatchObject({ access: "read", destructive: false })
  })
})

describe("mapResult", () => {
  it("maps every content kind: audio and embedded resources as blocks of their own", () => {
    const mapped = mapResult({
      content: [
        { type: "text", text: "a" },
        { type: "audio", data: "AAAA", mimeType: "audio/wav" },
        { type: "resource", resource: { uri: "file:///x.txt", text: "inside" } },
        { type: "resource", resource: { uri: "file:///y.bin", blob: "AAAA", mimeType: "application/zip" } },
        { type: "audio", mimeType: "audio/wav" },
        { type: "resource", resource: { text: "no uri" } },
        { type: "other", x: 1 }
      ]
    })
    expect(mapped.content).toEqual([
      ToolResult.text("a"),
      ToolResult.audio("AAAA", "audio/wav"),
      ToolResult.resource({ uri: "file:///x.txt", text: "inside" }),
      ToolResult.resource({ uri: "file:///y.bin", mimeType: "application/zip", blob: "AAAA" }),
      ToolResult.text("[audio block without data or MIME type]"),
      ToolResult.text("[resource block without a URI and a text or blob]"),
      ToolResult.text(`{"type":"other","x":1}`)
    ])
    expect(mapResult({ content: [], structuredContent: { t: 1 } })).toMatchObject({ value: { t: 1 }, content: [{ type: "text", text: `{"t":1}` }] })
  })

  it("structured content that repeats a media block's data (read_media_file): the media, and its JSON with a note in place of the data", () => {
    const png = "iVBORw0KGgo".repeat(400)
    const image = { type: "image", data: png, mimeType: "image/png" }
    const mapped = mapResult({ content: [image], structuredContent: { content: [image] } })
    expect(mapped.content).toEqual([
      ToolResult.text(
        `{"content":[{"type":"image","data":"[image: image/png, 3 KB; sent as a block]","mimeType":"image/png"}]}`
      ),
      ToolResult.image(png, "image/png")
    ])
    expect(ToolResult.textOf(mapped)).not.toContain(png)
    // the value stays as the server sent it
    expect(mapped.value).toEqual({ content: [image] })
    const blob = { type: "resource", resource: { uri: "file:///tmp/a.bin", mimeType: "application/octet-stream", blob: "AAECAw==" } }
    expect(ToolResult.textOf(mapResult({ content: [blob], structuredContent: { content: [blob] } }))).toBe(
      `{"content":[{"type":"resource","resource":{"uri":"file:///tmp/a.bin","mimeType":"application/octet-stream",` +
        `"blob":"[resource: file:///tmp/a.bin, application/octet-stream, 4 bytes; sent as a block]"}}]}`
    )
  })

  it("structured content reaches the model when the only text is a resource link's note or an unknown block's JSON", () => {
    const link = { type: "resource_link", uri: "file:///a.txt", name: "a" }
    expect(mapResult({ content: [link], structuredContent: { t: 1 } }).content).toEqual([
      ToolResult.text(`{"t":1}`),
      ToolResult.text("[resource link: a <file:///a.txt>]")
    ])
    expect(ToolResult.textOf(mapResult({ content: [{ type: "other" }], structuredContent: { t: 2 } }))).toContain(`{"t":2}`)
  })

  it("a text block that repeats a media block's data (the structured JSON sent as text too) has a note in its place", () => {
    const png = "iVBORw0KGgo".repeat(400)
    const image = { type: "image", data: png, mimeType: "image/png" }
    const mapped = mapResult({ content: [{ type: "text", text: JSON.stringify({ content: [image] }) }, image], structuredContent: { content: [image] } })
    expect(mapped.content).toEqual([
      ToolResult.text(`{"content":[{"type":"image","data":"[image: image/png, 3 KB; sent as a block]","mimeType":"image/png"}]}`),
      ToolResult.image(png, "image/png")
    ])
    // short data is left alone: it could be a word of the text
    expect(ToolResult.textOf(mapResult({ content: [{ type: "text", text: "AAAA" }, { type: "image", data: "AAAA", mimeType: "image/png" }] }))).toContain("AAAA")
  })
})

describe("McpConnect over an in-memory SDK server", () => {
  it("imports conservatively, keeps foreign names, skips collisions", () =>
    run(Effect.gen(function*() {
      const fake = fakeServer()
      const connection = yield* fake.connect()
      const registry = yield* connection.registry
      expect(connection.name).toBe("fake")
      expect(registry.names).toEqual(["raw_tool", "fails", "hangs", "get_x"])
      expect(connection.skipped()).toEqual([{ name: "get_x", reason: `its canonical name get_x is taken by "get-x"` }])
      expect(registry.get("raw.tool")!.spec.safety).toMatchObject({ access: "mutate", destructive: true, networked: true })
      const executor = yield* Executor.make(registry)
      expect(ToolResult.textOf(yield* executor.run(call("c1", "raw.tool", { n: 4 })))).toBe("n=4")
      expect(ToolResult.textOf(yield* executor.run(call("c2", "raw_tool", { n: 5 })))).toBe("n=5")
    })))

  it("prefixes names when asked", () =>
    run(Effect.gen(function*() {
      const connection = yield* fakeServer().connect({ prefix: "fk", name: "fake-1" })
      const registry = yield* connection.registry
      expect(registry.names).toContain("fk_raw_tool")
      expect(registry.get("fk_raw_tool")!.spec.originalName).toBe("fk.raw.tool")
      expect(registry.get("fk_raw_tool")!.spec.safety.tags).toEqual(["mcp", "mcp:fake-1"])
    })))

  it("an isError result is a repairable ToolFailure with the server's text and structured detail", () =>
    run(Effect.gen(function*() {
      const connection = yield* fakeServer().connect()
      const executor = yield* Executor.make(yield* connection.registry)
      const result = yield* executor.run(call("c1", "fails", {}))
      expect(result.isError).toBe(true)
      expect(ToolResult.textOf(result)).toBe("fails: disk on fire")
      expect(result.error).toMatchObject({ _tag: "ToolFailure", detail: { code: 7 } })
    })))

  it("interrupting a call sends notifications/cancelled", () =>
    run(Effect.gen(function*() {
      const fake = fakeServer()
      const connection = yield* fake.connect()
      const executor = yield* Executor.make(yield* connection.registry)
      const fiber = yield* Effect.forkChild(executor.run(call("c1", "hangs", {})))
      yield* Effect.sleep("100 millis")
      yield* Fiber.interrupt(fiber)
      for (let i = 0; i < 40 && fake.cancelled.length === 0; i++) yield* Effect.sleep("25 millis")
      expect(fake.cancelled).toHaveLength(1)
    })))

  it("tools/list_changed replaces the registry", () =>
    run(Effect.gen(function*() {
      const fake = fakeServer()
      const connection = yield* fake.connect()
      const next = yield* Effect.forkChild(Stream.runHead(Stream.drop(connection.changes, 1)))
      yield* Effect.sleep("10 millis")
      fake.tools.push({ name: "later", inputSchema: { type: "object", properties: {} }, annotations: { readOnlyHint: true } })
      fake.tools.splice(0, 1)
      yield* Effect.promise(() => fake.server.sendToolListChanged())
      const updated = yield* Fiber.join(next)
      expect(updated._tag).toBe("Some")
      const registry = yield* connection.registry
      expect(registry.names).toEqual(["fails", "hangs", "get_x", "later"])
      expect(registry.get("raw.tool")).toBeUndefined()
      expect(yield* connection.listChanged).toBe(1)
    })))
})
