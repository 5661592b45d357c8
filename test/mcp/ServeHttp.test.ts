/**
 * `McpServe.serveHttp` against the official `@modelcontextprotocol/sdk`
 * `Client` over a real loopback Streamable HTTP server: list, valid and
 * invalid calls, a tool failure, an unknown tool, cancellation, a client that
 * goes away, and artifacts read back through `resources/read`. Every call runs
 * through the executor: `auditLog` (a middleware) writes a receipt for each.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { Effect, Logger, Schema } from "effect"
import { describe, expect, it } from "vitest"
import * as Tool from "../../src/contract/Tool.ts"
import type { Event } from "../../src/contract/ToolEvent.ts"
import { StoreFailed } from "../../src/contract/ToolError.ts"
import * as ToolRegistry from "../../src/contract/ToolRegistry.ts"
import { auditLog, type Receipt } from "../../src/governance/middleware/AuditLog.ts"
import { EventLog } from "../../src/runtime/EventSink.ts"
import * as StoreRegistry from "../../src/runtime/StoreRegistry.ts"
import * as ToolServices from "../../src/runtime/ToolServices.ts"
import { McpConnect, McpServe } from "../../src/mcp/index.ts"
import { registry } from "./fixtures/serveTools.ts"

interface Harness {
  readonly url: string
  readonly client: Client
  readonly transport: StreamableHTTPClientTransport
  readonly events: () => Promise<ReadonlyArray<Event>>
  readonly receipts: Array<Receipt>
}

const withServer = <A>(test: (harness: Harness) => Promise<A>): Promise<A> => {
  const receipts: Array<Receipt> = []
  return Effect.runPromise(
    Effect.gen(function*() {
      const server = yield* McpServe.serveHttp(yield* registry, {
        port: 0,
        name: "fixture",
        version: "1.2.3",
        executor: { middleware: [auditLog((receipt) => receipts.push(receipt))], artifacts: { threshold: 2_000 } }
      })
      const log = yield* EventLog
      return yield* Effect.promise(async () => {
        const client = new Client({ name: "serve-test", version: "1.0.0" })
        const transport = new StreamableHTTPClientTransport(new URL(server.url))
        await client.connect(transport)
        try {
          return await test({ url: server.url, client, transport, events: () => Effect.runPromise(log.all), receipts })
        } finally {
          await client.close()
        }
      })
    }).pipe(Effect.scoped, Effect.provide(ToolServices.layerTest({ runId: "mcp-run" })))
  )
}

const until = async <A>(what: string, probe: () => Promise<A | undefined>, ms = 10_000): Promise<A> => {
  const deadline = Date.now() + ms
  for (;;) {
    const found = await probe()
    if (found !== undefined) return found
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

const started = (harness: Harness, tool: string) =>
  until(`${tool} to start`, async () =>
    (await harness.events()).find((event) => event._tag === "tool.started" && event.toolName === tool))

const terminal = (harness: Harness, tool: string) =>
  until(`${tool} to end`, async () =>
    (await harness.events()).find((event) =>
      (event._tag === "tool.failed" || event._tag === "tool.completed") && event.toolName === tool
    ))

const textOf = (result: unknown) =>
  (result as { content: ReadonlyArray<{ type: string; text?: string }> }).content.filter((block) => block.type === "text")
    .map((block) => block.text).join("")

describe("McpServe.serveHttp with the official SDK client", () => {
  it("lists the registry: canonical names, schemas, and every annotation from Safety", () =>
    withServer(async ({ client, url }) => {
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/)
      expect(client.getServerVersion()).toMatchObject({ name: "fixture", version: "1.2.3" })
      const { tools } = await client.listTools()
      expect(tools.map((tool) => tool.name)).toEqual(["echo", "jam", "wipe", "fetch_rate", "slow", "big", "noisy", "crash", "stop_run"])
      const byName = new Map(tools.map((tool) => [tool.name, tool]))
      const echo = byName.get("echo")!
      expect(echo.description).toBe("Echoes a text back.")
      expect(echo.inputSchema).toMatchObject({
        type: "object",
        properties: { text: { type: "string", description: "what to echo" } },
        required: ["text"],
        additionalProperties: false
      })
      expect(echo.outputSchema).toMatchObject({ type: "object", required: ["echoed", "length"] })
      // Explicit hints, never the protocol's defaults (destructive and open-world when absent).
      expect(echo.annotations).toEqual({ readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false })
      expect(byName.get("jam")!.annotations).toEqual({ readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false })
      expect(byName.get("wipe")!.annotations).toEqual({ readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false })
      expect(byName.get("fetch_rate")!.annotations).toEqual({ readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: true })
      expect(byName.get("jam")!.outputSchema).toBeUndefined()
    }))

  it("lists each tool's title (Tool.make's by default; the title option overrides it), and McpConnect imports it", async () => {
    const titled = Tool.make("read_notes", {
      title: "Read the notes",
      description: "Reads the notes.",
      input: Schema.Struct({}),
      safety: { access: "read", idempotent: true },
      handler: () => Effect.succeed("notes")
    })
    const untitled = Tool.make("plain", {
      description: "No title.",
      input: Schema.Struct({}),
      safety: { access: "read", idempotent: true },
      handler: () => Effect.succeed("plain")
    })
    const list = (options: { readonly title?: (spec: Tool.ToolSpec) => string | undefined }) =>
      Effect.runPromise(
        Effect.gen(function*() {
          const server = yield* McpServe.serveHttp(yield* ToolRegistry.make([titled, untitled]), { port: 0, ...options })
          // And back: McpConnect imports each title into the spec.
          const imported = yield* (yield* McpConnect.http({ url: server.url })).registry
          const tools = yield* Effect.promise(async () => {
            const client = new Client({ name: "serve-test", version: "1.0.0" })
            await client.connect(new StreamableHTTPClientTransport(new URL(server.url)))
            try {
              return (await client.listTools()).tools
            } finally {
              await client.close()
            }
          })
          return { tools, imported: imported.specs.map((spec) => [spec.name, spec.title]) }
        }).pipe(Effect.scoped, Effect.provide(ToolServices.layerTest()))
      )
    const { tools: byDefault, imported } = await list({})
    expect(imported).toEqual([["read_notes", "Read the notes"], ["plain", undefined]])
    expect(byDefault.map((tool) => [tool.name, tool.title])).toEqual([["read_notes", "Read the notes"], ["plain", undefined]])
    // Also as `annotations.title`, for clients of revisions before the top-level field.
    expect(byDefault[0]!.annotations).toEqual({
      title: "Read the notes",
      readOnlyHint: true,
      destructiveHint: false,
      idempotentHint: true,
      openWorldHint: false
    })
    expect(byDefault[1]!.annotations).not.toHaveProperty("title")
    const overridden = await list({ title: (spec) => spec.name === "plain" ? "Plain tool" : undefined })
    expect(overridden.tools.map((tool) => [tool.name, tool.title])).toEqual([["read_notes", undefined], ["plain", "Plain tool"]])
    expect(overridden.imported).toEqual([["read_notes", undefined], ["plain", "Plain tool"]])
  })

  it("runs a valid call through the executor: structuredContent, events, an audit receipt", () =>
    withServer(async (harness) => {
      const result = await harness.client.callTool({ name: "echo", arguments: { text: "hello" } })
      expect(result.isError).toBe(false)
      expect(result.structuredContent).toEqual({ echoed: "hello", length: 5 })
      expect(JSON.parse(textOf(result))).toEqual({ echoed: "hello", length: 5 })
      const events = await harness.events()
      expect(events.map((event) => event._tag)).toEqual(["tool.started", "tool.audit", "tool.completed"])
      expect(events[0]).toMatchObject({ toolName: "echo", runId: "mcp-run", arguments: { text: "hello" } })
      expect(harness.receipts).toHaveLength(1)
      expect(harness.receipts[0]).toMatchObject({ tool: "echo", status: "ok", isError: false, runId: "mcp-run" })
      expect(harness.receipts[0]!.callId).toBe((events[0] as { toolCallId: string }).toolCallId)
      // A tool without an output schema sends no structuredContent.
      const plain = await harness.client.callTool({ name: "wipe", arguments: { area: "tmp" } })
      expect(plain).toMatchObject({ isError: false, content: [{ type: "text", text: "wiped tmp" }] })
      expect(plain.structuredContent).toBeUndefined()
    }))

  it("answers invalid arguments and tool failures with isError results carrying the repair message", () =>
    withServer(async (harness) => {
      const invalid = await harness.client.callTool({ name: "echo", arguments: { text: 1, extra: true } })
      expect(invalid.isError).toBe(true)
      expect(textOf(invalid)).toBe("echo: invalid arguments: at \"extra\": Unexpected key with value true; at \"text\": Expected string, got 1")
      expect(invalid.structuredContent).toBeUndefined()
      const missing = await harness.client.callTool({ name: "echo" })
      expect(missing.isError).toBe(true)
      expect(textOf(missing)).toContain("at \"text\": Missing key")
      const failed = await harness.client.callTool({ name: "jam", arguments: {} })
      expect(failed.isError).toBe(true)
      expect(textOf(failed)).toContain("the widget is jammed; call unjam first")
      // The refused call got a receipt too (auditLog's `rejected` hook), the failure a normal one.
      expect(harness.receipts.map((receipt) => [receipt.tool, receipt.status, receipt.refused ?? false])).toEqual([
        ["echo", "schema_violation", true],
        ["echo", "schema_violation", true],
        ["jam", "executor_error", false]
      ])
      expect(harness.receipts[2]!.isError).toBe(true)
    }))

  it("answers a fatal error (a defect) with an isError result that hides the defect", () =>
    withServer(async (harness) => {
      const crashed = await harness.client.callTool({ name: "crash", arguments: {} })
      expect(crashed).toMatchObject({ isError: true, content: [{ type: "text", text: "internal error in tool crash" }] })
      expect(JSON.stringify(crashed)).not.toContain("secret stack detail")
      const events = await harness.events()
      expect(events.at(-1)).toMatchObject({ _tag: "tool.failed", reason: "error" })
      // The server keeps serving.
      expect((await harness.client.callTool({ name: "echo", arguments: { text: "still here" } })).isError).toBe(false)
    }))

  it("a tool that cancels the run ends its call, and the server keeps serving with a fresh executor", () =>
    withServer(async (harness) => {
      const stopped = await harness.client.callTool({ name: "stop_run", arguments: {} })
      expect(stopped.isError).toBe(true)
      expect(textOf(stopped)).toContain("stop_run")
      expect((await harness.events()).at(-1)).toMatchObject({ _tag: "tool.failed", reason: "cancelled" })
      expect(await harness.client.callTool({ name: "echo", arguments: { text: "again" } }))
        .toMatchObject({ isError: false, structuredContent: { echoed: "again", length: 5 } })
    }))

  it("refuses an unknown tool with JSON-RPC error -32602 (nothing runs)", () =>
    withServer(async (harness) => {
      await expect(harness.client.callTool({ name: "no_such_tool", arguments: {} })).rejects.toMatchObject({ code: -32602 })
      expect(await harness.events()).toEqual([])
      expect(harness.receipts).toEqual([])
    }))

  it("notifications/cancelled interrupts the running call", () =>
    withServer(async (harness) => {
      const controller = new AbortController()
      const call = harness.client.callTool({ name: "slow", arguments: { ms: 30_000 } }, undefined, { signal: controller.signal })
      const outcome = call.then(() => "answered", (error: unknown) => String(error))
      await started(harness, "slow")
      controller.abort("the user pressed stop") // the SDK sends notifications/cancelled
      expect(await outcome).toContain("the user pressed stop")
      const end = await terminal(harness, "slow")
      expect(end).toMatchObject({ _tag: "tool.failed", reason: "cancelled" })
      // The server is still serving.
      expect((await harness.client.callTool({ name: "echo", arguments: { text: "after" } })).isError).toBe(false)
    }))

  it("a client that ends its session cancels its calls", () =>
    withServer(async (harness) => {
      const call = harness.client.callTool({ name: "slow", arguments: { ms: 30_000 } }).catch(() => "gone")
      await started(harness, "slow")
      await harness.transport.terminateSession() // DELETE with the session id
      expect(await terminal(harness, "slow")).toMatchObject({ _tag: "tool.failed", reason: "cancelled" })
      await call
    }))

  it("a client that drops its connection cancels its calls", () =>
    withServer(async (harness) => {
      const call = harness.client.callTool({ name: "slow", arguments: { ms: 30_000 } }).catch(() => "gone")
      await started(harness, "slow")
      await harness.transport.close() // aborts the POST whose response streams the answer
      expect(await terminal(harness, "slow")).toMatchObject({ _tag: "tool.failed", reason: "cancelled" })
      await call
    }))

  it("offloads large outputs as resource_link content that resources/read serves", () =>
    withServer(async (harness) => {
      const full = Array.from({ length: 400 }, (_, i) => `line ${i + 1} of the report`).join("\n")
      const result = await harness.client.callTool({ name: "big", arguments: { lines: 400 } })
      expect(result.isError).toBe(false)
      const content = result.content as ReadonlyArray<Record<string, unknown>>
      const link = content.find((block) => block.type === "resource_link")!
      expect(link).toMatchObject({ mimeType: "text/plain", name: expect.stringMatching(/^mcp-run\//) })
      expect(link.uri).toMatch(/^tinyagents:\/\/artifacts\/artifacts\/mcp-run%2F/)
      expect(textOf(result).length).toBeLessThan(full.length)
      expect(textOf(result)).toContain("line 1 of the report")
      const read = await harness.client.readResource({ uri: link.uri as string })
      expect(read.contents).toEqual([{ uri: link.uri, mimeType: "text/plain", text: full }])
      // Only artifacts of this server's calls are readable.
      await expect(harness.client.readResource({ uri: "tinyagents://artifacts/artifacts/other%2Fkey" })).rejects
        .toMatchObject({ code: -32602 })
      // ... and only by the session whose call produced them: another client that has the link (or
      // guesses the next call's, the ids count up) is told it does not exist.
      const other = new Client({ name: "serve-test-other", version: "1.0.0" })
      await other.connect(new StreamableHTTPClientTransport(new URL(harness.url)))
      try {
        await expect(other.readResource({ uri: link.uri as string })).rejects
          .toMatchObject({ code: -32602, message: expect.stringContaining("Resource not found") })
        const second = await harness.client.callTool({ name: "big", arguments: { lines: 300 } })
        const next = (second.content as ReadonlyArray<Record<string, unknown>>).find((block) => block.type === "resource_link")!
        const guessed = (link.uri as string).replace(/-(\d+)$/, (_, n: string) => `-${Number(n) + 1}`)
        expect(next.uri).toBe(guessed)
        await expect(other.readResource({ uri: guessed })).rejects.toMatchObject({ code: -32602 })
        expect((await harness.client.readResource({ uri: guessed })).contents).toHaveLength(1)
        // Its own artifacts it reads.
        const own = await other.callTool({ name: "big", arguments: { lines: 300 } })
        const ownLink = (own.content as ReadonlyArray<Record<string, unknown>>).find((block) => block.type === "resource_link")!
        expect((await other.readResource({ uri: ownLink.uri as string })).contents).toHaveLength(1)
        await expect(harness.client.readResource({ uri: ownLink.uri as string })).rejects.toMatchObject({ code: -32602 })
      } finally {
        await other.close()
      }
      const { resourceTemplates } = await harness.client.listResourceTemplates()
      expect(resourceTemplates.map((template) => template.uriTemplate)).toEqual(["tinyagents://artifacts/{store}/{key}"])
    }))
})

describe("McpServe.serveHttp: resources/read never serves an artifact unredacted", () => {
  const sk = { patterns: [/sk-[A-Z0-9]+/g] }
  const big = Tool.make("big_sk", {
    description: "A large text output with a key in the middle.",
    input: Schema.Struct({}),
    safety: { access: "read", redact: sk },
    handler: () => Effect.succeed(`${"x".repeat(10_000)} sk-PLANTED123 ${"y".repeat(10_000)}`)
  })
  const json = Tool.make("big_json", {
    description: "A large JSON output holding a redacted key and echoing a redacted argument.",
    input: Schema.Struct({ password: Schema.String }),
    output: Schema.Struct({ rows: Schema.Array(Schema.String), token: Schema.String, echo: Schema.String }),
    safety: { access: "read", redact: { keys: ["token", "password"], patterns: [/sk-[A-Z0-9]+/g] } },
    handler: ({ password }) =>
      Effect.succeed({
        rows: Array.from({ length: 300 }, (_, i) => `row ${i} sk-ROW${i}`),
        token: "tok-PLANTED-TOKEN",
        echo: `you typed ${password}`
      })
  })
  const serve = <A>(test: (client: Client) => Promise<A>): Promise<A> =>
    Effect.runPromise(
      Effect.gen(function*() {
        const server = yield* McpServe.serveHttp(yield* ToolRegistry.make([big, json]), {
          port: 0,
          executor: { artifacts: { threshold: 2_000 } }
        })
        return yield* Effect.promise(async () => {
          const client = new Client({ name: "serve-redact-test", version: "1.0.0" })
          await client.connect(new StreamableHTTPClientTransport(new URL(server.url)))
          try {
            return await test(client)
          } finally {
            await client.close()
          }
        })
      }).pipe(Effect.scoped, Effect.provide(ToolServices.layerTest({ runId: "mcp-run" })))
    )
  const follow = async (client: Client, name: string, args: Record<string, unknown>) => {
    const result = await client.callTool({ name, arguments: args })
    expect(result.isError).toBe(false)
    const link = (result.content as ReadonlyArray<Record<string, unknown>>).find((block) => block.type === "resource_link")
    expect(link).toBeDefined()
    const read = await client.readResource({ uri: link!.uri as string })
    return { result, read, text: (read.contents[0] as { text: string }).text }
  }

  it("a pattern match in a large text output is redacted in resources/read as in tools/call", () =>
    serve(async (client) => {
      const { read, result, text } = await follow(client, "big_sk", {})
      expect(JSON.stringify(result)).not.toContain("PLANTED")
      expect(JSON.stringify(read)).not.toContain("sk-PLANTED123")
      expect(text).toBe(`${"x".repeat(10_000)} [redacted] ${"y".repeat(10_000)}`)
    }))

  it("a store that fails to open: the client reads only that the artifact could not be read (the server logs why)", () => {
    const logged: Array<string> = []
    return Effect.runPromise(
      Effect.gen(function*() {
        const base = yield* StoreRegistry.StoreRegistry
        let opens = 0
        // The first open (the executor's write) works; later ones fail, saying more than a client should read.
        const failing = StoreRegistry.StoreRegistry.of({
          claims: base.claims,
          store: (name) =>
            ++opens === 1
              ? base.store(name)
              : Effect.fail(new StoreFailed({ store: name, operation: "open", cause: new Error("postgres://admin:pw-PLANTED@db refused") }))
        })
        const server = yield* McpServe.serveHttp(yield* ToolRegistry.make([big]), {
          port: 0,
          executor: { artifacts: { threshold: 2_000 } }
        }).pipe(Effect.provideService(StoreRegistry.StoreRegistry, failing))
        yield* Effect.promise(async () => {
          const client = new Client({ name: "serve-store-test", version: "1.0.0" })
          await client.connect(new StreamableHTTPClientTransport(new URL(server.url)))
          try {
            const result = await client.callTool({ name: "big_sk", arguments: {} })
            const link = (result.content as ReadonlyArray<Record<string, unknown>>).find((block) => block.type === "resource_link")!
            const error = await client.readResource({ uri: link.uri as string }).then(() => undefined, (error: Error) => error)
            expect(error).toMatchObject({ code: -32603, message: expect.stringMatching(/artifact mcp-run\/mcp-[0-9a-f]{8}-1 could not be read$/) })
            expect(String(error?.message)).not.toContain("PLANTED")
          } finally {
            await client.close()
          }
        })
      }).pipe(
        Effect.scoped,
        Effect.provide(ToolServices.layerTest({ runId: "mcp-run" })),
        Effect.provide(Logger.layer([Logger.make(({ cause, message }) => logged.push(`${String(message)} ${String(cause)}`))]))
      )
    ).then(() => expect(logged.join("\n")).toContain("pw-PLANTED"))
  })

  it("a large JSON output: redacted keys, patterns and echoed arguments are redacted, and it stays JSON", () =>
    serve(async (client) => {
      const { read, text } = await follow(client, "big_json", { password: "hunter2-pw" })
      const served = JSON.stringify(read)
      for (const secret of ["tok-PLANTED-TOKEN", "sk-ROW", "hunter2-pw"]) expect(served).not.toContain(secret)
      const value = JSON.parse(text) as { rows: Array<string>; token: string; echo: string }
      expect(value.token).toBe("[redacted]")
      expect(value.echo).toBe("you typed [redacted]")
      expect(value.rows[7]).toBe("row 7 [redacted]")
      expect(read.contents[0]).toMatchObject({ mimeType: "application/json" })
    }))
})
