/**
 * Progress over stdio: the real binary's `mcp serve` (fixtures/progressTools.ts,
 * a tools module whose tools report `ToolProgress`) launched by the official
 * SDK client's `StdioClientTransport`. A call that asks (`_meta.progressToken`) gets a
 * `notifications/progress` for each report, redacted, with increasing
 * `progress`, all before its result (none arrives after it); a call that does not ask gets none, though the tool
 * still reported (the server's `tool.progress` events, as JSON lines on its
 * stderr); concurrent calls each get their own. Also imported back with
 * `McpConnect.stdio`: the notifications are `tool.progress` events of the local
 * call.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { getDefaultEnvironment, StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { compileCache } from "../support/compileCache.ts"
import type { Progress } from "@modelcontextprotocol/sdk/types.js"
import { Effect } from "effect"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as ToolResult from "../../src/contract/ToolResult.ts"
import { EventLog } from "../../src/runtime/EventSink.ts"
import * as Executor from "../../src/runtime/Executor.ts"
import * as ToolServices from "../../src/runtime/ToolServices.ts"
import { McpConnect } from "../../src/mcp/index.ts"

const repo = fileURLToPath(new URL("../..", import.meta.url))
const fixture = fileURLToPath(new URL("./fixtures/progressTools.ts", import.meta.url))
const serve = ["--conditions=tinyagents-source", join(repo, "src", "cli", "bin.ts"), "mcp", "serve", fixture, "--events", "jsonl"]

const textOf = (result: unknown) =>
  (result as { content: ReadonlyArray<{ type: string; text?: string }> }).content.map((block) => block.text).join("")

/** The server's events: the JSON lines of its stderr. */
const eventsOf = (stderr: string): Array<Record<string, unknown>> =>
  stderr.split("\n").filter((line) => line.startsWith("{")).map((line) => JSON.parse(line) as Record<string, unknown>)

const until = async <A>(what: string, probe: () => A | undefined, ms = 10_000): Promise<A> => {
  const deadline = Date.now() + ms
  for (;;) {
    const found = probe()
    if (found !== undefined) return found
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

describe("progress over stdio (mcp serve), with the official SDK client", () => {
  let client: Client
  let stderr = ""
  /** Errors of the client: a progress notification after its result, or anything on stdout that is not the protocol. */
  const clientErrors: Array<unknown> = []
  /** Notifications the client has no handler for (progress without `onprogress` would land here). */
  const unhandled: Array<{ readonly method: string }> = []

  // Progress is recorded as each message arrives, by the transport's own `onmessage` (which the SDK's
  // client calls first), not through the SDK's `onprogress`: the SDK runs notification handlers a
  // microtask late but a response at once, so on a loaded machine reports that arrive in the same
  // chunk as the result were lost to the test (see McpConnect). Outgoing calls map request ids to
  // tokens, so a report that arrives after its call's result is caught.
  const progressOf = new Map<string, Array<Progress>>()
  const tokenOfRequest = new Map<string | number, string>()
  const answered = new Set<string>()
  const late: Array<unknown> = []
  let tokens = 0

  /** Calls `name`, asking for progress with a token of its own; the reports as they arrived. */
  const callWithProgress = async (name: string, args: Record<string, unknown>) => {
    const token = `progress-${++tokens}`
    const received: Array<Progress> = []
    progressOf.set(token, received)
    const result = await client.callTool({ name, arguments: args, _meta: { progressToken: token } })
    return { result, received, atResult: received.length }
  }

  beforeAll(async () => {
    const transport = new StdioClientTransport({ command: process.execPath, args: serve, cwd: repo, stderr: "pipe", env: { ...getDefaultEnvironment(), ...compileCache } })
    transport.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")))
    const send = transport.send.bind(transport)
    transport.send = (message) => {
      const m = message as { id?: string | number; method?: string; params?: { _meta?: { progressToken?: unknown } } }
      const token = m.params?._meta?.progressToken
      if (m.method === "tools/call" && m.id !== undefined && typeof token === "string") tokenOfRequest.set(m.id, token)
      return send(message)
    }
    transport.onmessage = (message) => {
      const m = message as { id?: string | number; method?: string; params?: Record<string, unknown> }
      if (m.method === "notifications/progress") {
        const { message: text, progress, progressToken, total } = m.params as Record<string, unknown>
        if (typeof progressToken !== "string" || !progressOf.has(progressToken)) return void unhandled.push({ method: "notifications/progress" })
        if (answered.has(progressToken)) return void late.push(m)
        progressOf.get(progressToken)!.push({
          progress: progress as number,
          ...(total === undefined ? {} : { total: total as number }),
          ...(text === undefined ? {} : { message: text as string })
        })
      } else if (m.method === undefined && m.id !== undefined && tokenOfRequest.has(m.id)) {
        answered.add(tokenOfRequest.get(m.id)!)
      }
    }
    client = new Client({ name: "progress-stdio-test", version: "1.0.0" })
    // The SDK reports our tokens as unknown (it did not make them); anything else is an error of the test.
    client.onerror = (error) => {
      if (!String(error).includes("progress notification for an unknown token")) clientErrors.push(error)
    }
    client.fallbackNotificationHandler = async (notification) => void unhandled.push(notification)
    await client.connect(transport)
  }, 60_000)

  afterAll(async () => {
    await client?.close()
  })

  it("a call that asks receives each report, redacted, in increasing order, before the result", async () => {
    const { atResult, received, result } = await callWithProgress("index_documents", { n: 3 })
    expect(textOf(result)).toBe("indexed 3 documents")
    expect(received).toEqual([
      { progress: 1, total: 3, message: "indexed doc-1 ([redacted])" },
      { progress: 2, total: 3, message: "indexed doc-2 ([redacted])" },
      { progress: 3, total: 3, message: "indexed doc-3 ([redacted])" }
    ])
    expect(atResult).toBe(3)
    // Nothing came after the result.
    await new Promise((resolve) => setTimeout(resolve, 300))
    expect(received).toHaveLength(3)
    expect(late).toEqual([])
    expect(clientErrors).toEqual([])
  }, 30_000)

  it("fractions are progress of a total of 1", async () => {
    const { received, result } = await callWithProgress("download", {})
    expect(textOf(result)).toBe("downloaded")
    expect(received).toEqual([
      { progress: 0.25, total: 1, message: "25% downloaded" },
      { progress: 0.5, total: 1, message: "50% downloaded" },
      { progress: 0.75, total: 1, message: "75% downloaded" },
      { progress: 1, total: 1, message: "100% downloaded" }
    ])
    expect(clientErrors).toEqual([])
  }, 30_000)

  it("a call that does not ask gets no notification, though the tool reported", async () => {
    const result = await client.callTool({ name: "index_documents", arguments: { n: 2 } })
    expect(textOf(result)).toBe("indexed 2 documents")
    // The server's events of that call (the last index_documents): its reports were made.
    const progress = await until("the server's events of the call", () => {
      const events = eventsOf(stderr)
      const last = events.filter((e) => e._tag === "tool.completed" && e.toolName === "index_documents").at(-1)
      const of = events.filter((e) => e._tag === "tool.progress" && e.toolCallId === last?.toolCallId)
      return of.length === 2 ? of : undefined
    })
    expect(progress.map((e) => [e.count, e.total, e.message])).toEqual([
      [1, 2, "indexed doc-1 ([redacted])"],
      [2, 2, "indexed doc-2 ([redacted])"]
    ])
    // None of them reached the client, with or without a handler.
    expect(unhandled.filter((n) => n.method === "notifications/progress")).toEqual([])
    expect(clientErrors).toEqual([])
  }, 30_000)

  it("concurrent calls each get their own progress", async () => {
    const [{ received: a, result: ra }, { received: b, result: rb }] = await Promise.all([
      callWithProgress("index_documents", { n: 2 }),
      callWithProgress("download", {})
    ])
    expect(textOf(ra)).toBe("indexed 2 documents")
    expect(textOf(rb)).toBe("downloaded")
    expect(late).toEqual([])
    expect(a.map((p) => [p.progress, p.total])).toEqual([[1, 2], [2, 2]])
    expect(b.map((p) => [p.progress, p.total])).toEqual([[0.25, 1], [0.5, 1], [0.75, 1], [1, 1]])
    expect(clientErrors).toEqual([])
  }, 30_000)
})

describe("progress over stdio, imported with McpConnect.stdio", () => {
  it("the server's notifications are tool.progress events of the local call", () =>
    Effect.runPromise(
      Effect.gen(function*() {
        const connection = yield* McpConnect.stdio({ command: process.execPath, args: serve, cwd: repo })
        const executor = yield* Executor.make(yield* connection.registry, { progress: { interval: 0 } })
        const result = yield* executor.run({ id: "c1", name: "index_documents", arguments: JSON.stringify({ n: 3 }) })
        expect(ToolResult.textOf(result)).toBe("indexed 3 documents")
        const events = yield* (yield* EventLog).all
        expect(events.map((event) => event._tag)).toEqual([
          "tool.started",
          "tool.progress",
          "tool.progress",
          "tool.progress",
          "tool.completed"
        ])
        expect(events.flatMap((event) => event._tag === "tool.progress" ? [[event.count, event.total, event.message]] : []))
          .toEqual([
            [1, 3, "indexed doc-1 ([redacted])"],
            [2, 3, "indexed doc-2 ([redacted])"],
            [3, 3, "indexed doc-3 ([redacted])"]
          ])
      }).pipe(Effect.scoped, Effect.provide(ToolServices.layerTest({ runId: "stdio-client" })))
    ), 60_000)

  // The SDK's client runs notification handlers a microtask after a message arrives, and a response
  // at once: a report sent just before the result used to find its handler gone, and was lost.
  it("a report sent just before the result is not lost", () =>
    Effect.runPromise(
      Effect.gen(function*() {
        const connection = yield* McpConnect.stdio({ command: process.execPath, args: serve, cwd: repo })
        const executor = yield* Executor.make(yield* connection.registry, { progress: { interval: 0 } })
        for (let round = 0; round < 5; round++) {
          const id = `burst-${round}`
          const result = yield* executor.run({ id, name: "burst", arguments: "{}" })
          expect(ToolResult.textOf(result)).toBe("done")
          const events = yield* (yield* EventLog).all
          // The server's executor bounds its rate (100 ms): the first report and the last are sent.
          expect(events.flatMap((event) => event._tag === "tool.progress" && event.toolCallId === id ? [event.count] : []))
            .toEqual([1, 3])
        }
      }).pipe(Effect.scoped, Effect.provide(ToolServices.layerTest({ runId: "stdio-burst" })))
    ), 60_000)
})
