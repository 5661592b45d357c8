/**
 * `McpServe.runStdio` in a real subprocess (fixtures/serve-stdio.ts, run
 * with `process.execPath --conditions=tinyagents-source`) against the
 * official SDK `Client` over `StdioClientTransport`: list, valid and invalid
 * calls, a tool failure, an unknown tool, cancellation, a client that goes
 * away (stdin ends: the server cancels its calls and exits), artifacts read
 * back, and a stdout that carries only the protocol (a tool's `console.log`
 * and Effect log lines go to stderr). Events go to a JSON-lines file,
 * audit receipts to another: every call ran through the executor.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { getDefaultEnvironment, StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { compileCache } from "../support/compileCache.ts"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, beforeAll, describe, expect, it } from "vitest"

const fixture = fileURLToPath(new URL("./fixtures/serve-stdio.ts", import.meta.url))

const readLines = (path: string): Array<Record<string, unknown>> => {
  try {
    return readFileSync(path, "utf8").split("\n").filter((line) => line.length > 0).map((line) => JSON.parse(line))
  } catch {
    return []
  }
}

const until = async <A>(what: string, probe: () => A | undefined, ms = 10_000): Promise<A> => {
  const deadline = Date.now() + ms
  for (;;) {
    const found = probe()
    if (found !== undefined) return found
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

const textOf = (result: unknown) =>
  (result as { content: ReadonlyArray<{ type: string; text?: string }> }).content.filter((block) => block.type === "text")
    .map((block) => block.text).join("")

interface Server {
  readonly client: Client
  readonly transport: StdioClientTransport
  readonly events: () => Array<Record<string, unknown>>
  readonly receipts: () => Array<Record<string, unknown>>
  readonly stderr: () => string
}

const directory = mkdtempSync(join(tmpdir(), "tinyagents-mcp-stdio-"))
let servers = 0

const start = async (): Promise<Server> => {
  const n = ++servers
  const eventsPath = join(directory, `events-${n}.jsonl`)
  const receiptsPath = join(directory, `receipts-${n}.jsonl`)
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: ["--conditions=tinyagents-source", fixture, eventsPath, receiptsPath],
    env: { ...getDefaultEnvironment(), ...compileCache },
    stderr: "pipe"
  })
  let stderr = ""
  transport.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")))
  const client = new Client({ name: "serve-stdio-test", version: "1.0.0" })
  // Anything on stdout that is not a JSON-RPC message fails the transport.
  const protocolErrors: Array<unknown> = []
  client.onerror = (error) => protocolErrors.push(error)
  await client.connect(transport)
  return {
    client,
    transport,
    events: () => readLines(eventsPath),
    receipts: () => readLines(receiptsPath),
    stderr: () => {
      expect(protocolErrors).toEqual([])
      return stderr
    }
  }
}

describe("McpServe.runStdio in a subprocess, with the official SDK client", () => {
  let server: Server

  beforeAll(async () => {
    server = await start()
  })

  afterAll(async () => {
    await server?.client.close()
    rmSync(directory, { recursive: true, force: true })
  })

  it("lists the registry with explicit annotations and server info", async () => {
    expect(server.client.getServerVersion()).toMatchObject({ name: "fixture", version: "1.2.3" })
    // the artifacts are resources, none of which changes: no subscriptions advertised
    expect(server.client.getServerCapabilities()?.resources).toEqual({ listChanged: true, subscribe: false })
    const { tools } = await server.client.listTools()
    expect(tools.map((tool) => tool.name)).toEqual(["echo", "jam", "wipe", "fetch_rate", "slow", "big", "noisy", "crash", "stop_run"])
    expect(tools.find((tool) => tool.name === "wipe")!.annotations).toEqual({
      readOnlyHint: false,
      destructiveHint: true,
      idempotentHint: false,
      openWorldHint: false
    })
    expect(tools.find((tool) => tool.name === "echo")!.outputSchema).toMatchObject({ type: "object" })
  })

  it("calls through the executor: valid, invalid, failing and unknown", async () => {
    const ok = await server.client.callTool({ name: "echo", arguments: { text: "over stdio" } })
    expect(ok).toMatchObject({ isError: false, structuredContent: { echoed: "over stdio", length: 10 } })
    const invalid = await server.client.callTool({ name: "echo", arguments: { text: 7 } })
    expect(invalid.isError).toBe(true)
    expect(textOf(invalid)).toBe("echo: invalid arguments: at \"text\": Expected string, got 7")
    const failed = await server.client.callTool({ name: "jam", arguments: {} })
    expect(failed.isError).toBe(true)
    expect(textOf(failed)).toContain("the widget is jammed")
    await expect(server.client.callTool({ name: "nope", arguments: {} })).rejects.toMatchObject({ code: -32602 })
    const receipts = await until("receipts", () => {
      const all = server.receipts()
      return all.length >= 3 ? all : undefined
    })
    expect(receipts.map((receipt) => [receipt.tool, receipt.status, receipt.runId])).toEqual([
      ["echo", "ok", "mcp-run"],
      ["echo", "schema_violation", "mcp-run"],
      ["jam", "executor_error", "mcp-run"]
    ])
  })

  it("keeps stdout for the protocol: console.log and Effect logs go to stderr", async () => {
    const result = await server.client.callTool({ name: "noisy", arguments: {} })
    expect(textOf(result)).toBe("quiet answer")
    await until("the noise on stderr", () => server.stderr().includes("noise from a tool") || undefined)
    await until("the log line on stderr", () => server.stderr().includes("a log line from a tool") || undefined)
  })

  it("serves artifacts through resources/read", async () => {
    const result = await server.client.callTool({ name: "big", arguments: { lines: 300 } })
    const link = (result.content as ReadonlyArray<Record<string, unknown>>).find((block) => block.type === "resource_link")!
    expect(link.uri).toMatch(/^tinyagents:\/\/artifacts\/artifacts\/mcp-run%2F/)
    const read = await server.client.readResource({ uri: link.uri as string })
    const text = (read.contents[0] as { text: string }).text
    expect(text.split("\n")).toHaveLength(300)
    expect(text.endsWith("line 300 of the report")).toBe(true)
  })

  it("notifications/cancelled interrupts the running call", async () => {
    const controller = new AbortController()
    const call = server.client.callTool({ name: "slow", arguments: { ms: 30_000 } }, undefined, { signal: controller.signal })
      .then(() => "answered", (error: unknown) => String(error))
    const id = await until("slow to start", () =>
      server.events().find((event) => event._tag === "tool.started" && event.toolName === "slow")?.toolCallId)
    controller.abort("stop now")
    expect(await call).toContain("stop now")
    const end = await until("slow to end", () =>
      server.events().find((event) => event._tag === "tool.failed" && event.toolCallId === id))
    expect(end).toMatchObject({ reason: "cancelled" })
  })

  it("a client that disconnects cancels its calls", async () => {
    const other = await start()
    const call = other.client.callTool({ name: "slow", arguments: { ms: 30_000 } }).catch(() => "gone")
    const id = await until("slow to start", () =>
      other.events().find((event) => event._tag === "tool.started" && event.toolName === "slow")?.toolCallId)
    const exited = new Promise<number | null>((resolve) =>
      (other.transport as unknown as { _process: import("node:child_process").ChildProcess })._process
        .once("exit", (code) => resolve(code)))
    await other.client.close() // ends stdin; the SDK would signal a server that lingers for 2 s
    await call
    expect(await exited).toBe(0)
    const end = await until("slow to end", () =>
      other.events().find((event) => event._tag === "tool.failed" && event.toolCallId === id))
    expect(end).toMatchObject({ reason: "cancelled" })
  })
})
