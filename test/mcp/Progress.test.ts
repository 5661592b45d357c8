/**
 * Progress over MCP: a tool's `ToolProgress` reports reach the official SDK
 * client as `notifications/progress` for the request that asked for them
 * (`onprogress`, which sends `_meta.progressToken`), before the result, with the
 * values the tool reported (a first 0 included; a later message that would not
 * raise progress comes as a log message); a request that did not ask gets none,
 * and the result is the same.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { type LoggingMessageNotification, LoggingMessageNotificationSchema, type Progress } from "@modelcontextprotocol/sdk/types.js"
import { Effect, Schema } from "effect"
import { describe, expect, it } from "vitest"
import * as Tool from "../../src/contract/Tool.ts"
import * as ToolRegistry from "../../src/contract/ToolRegistry.ts"
import type { Event } from "../../src/contract/ToolEvent.ts"
import { EventLog } from "../../src/runtime/EventSink.ts"
import * as ToolProgress from "../../src/runtime/ToolProgress.ts"
import * as ToolServices from "../../src/runtime/ToolServices.ts"
import { McpServe } from "../../src/mcp/index.ts"

/** Indexes `n` documents, 120 ms apart (beyond the rate bound, so each report is its own event). */
const index = Tool.make("index_documents", {
  description: "Indexes documents, reporting progress.",
  input: Schema.Struct({ n: Schema.Int }),
  safety: { access: "read", idempotent: true, redact: { patterns: [/secret-\w+/] } },
  services: [ToolProgress.ToolProgress],
  handler: ({ n }) =>
    Effect.gen(function*() {
      for (let i = 1; i <= n; i++) {
        yield* ToolProgress.report({ message: `indexed doc-${i} (secret-${i})`, count: i, total: n })
        yield* Effect.sleep(120)
      }
      return `indexed ${n} documents`
    })
})

/** Reports a message, counts, a fraction and repeats, 120 ms apart: not every report increases progress. */
const mixed = Tool.make("mixed_progress", {
  description: "Reports progress of every kind.",
  input: Schema.Struct({}),
  safety: { access: "read", idempotent: true },
  services: [ToolProgress.ToolProgress],
  handler: () =>
    Effect.gen(function*() {
      const reports: ReadonlyArray<ToolProgress.Update> = [
        { message: "starting" },
        { message: "counted", count: 5, total: 10 },
        { message: "still going" },
        { message: "a fraction", fraction: 0.6 },
        { count: 7, total: 10 },
        { message: "the same count", count: 7, total: 10 },
        { message: "done", count: 10, total: 10 }
      ]
      for (const update of reports) {
        yield* ToolProgress.report(update)
        yield* Effect.sleep(120)
      }
      return "mixed"
    })
})

/** Reports 0, 50 and 100 of 100, as the conformance suite's progress scenario asks. */
const fromZero = Tool.make("from_zero", {
  description: "Reports 0, 50 and 100 of 100.",
  input: Schema.Struct({}),
  safety: { access: "read", idempotent: true },
  services: [ToolProgress.ToolProgress],
  handler: () =>
    Effect.gen(function*() {
      for (const count of [0, 50, 100]) {
        yield* ToolProgress.report({ count, total: 100, message: `Completed step ${count} of 100` })
        yield* Effect.sleep(120)
      }
      return "done"
    })
})

const withServer = <A>(test: (client: Client, events: () => Promise<ReadonlyArray<Event>>) => Promise<A>): Promise<A> =>
  Effect.runPromise(
    Effect.gen(function*() {
      const server = yield* McpServe.serveHttp(yield* ToolRegistry.make([index, mixed, fromZero]), { port: 0 })
      const log = yield* EventLog
      return yield* Effect.promise(async () => {
        const client = new Client({ name: "progress-test", version: "1.0.0" })
        await client.connect(new StreamableHTTPClientTransport(new URL(server.url)))
        try {
          return await test(client, () => Effect.runPromise(log.all))
        } finally {
          await client.close()
        }
      })
    }).pipe(Effect.scoped, Effect.provide(ToolServices.layerTest({ runId: "mcp-progress" })))
  )

const textOf = (result: unknown) =>
  (result as { content: ReadonlyArray<{ type: string; text?: string }> }).content.map((block) => block.text).join("")

describe("McpServe: tool progress as notifications/progress", () => {
  it("a client that passes onprogress receives each report of its call, redacted, before the result", () =>
    withServer(async (client, events) => {
      const received: Array<Progress> = []
      let resultAt = -1
      const result = await client.callTool({ name: "index_documents", arguments: { n: 3 } }, undefined, {
        onprogress: (progress) => received.push(progress)
      })
      resultAt = received.length
      expect(textOf(result)).toBe("indexed 3 documents")
      expect(received).toEqual([
        { progress: 1, total: 3, message: "indexed doc-1 ([redacted])" },
        { progress: 2, total: 3, message: "indexed doc-2 ([redacted])" },
        { progress: 3, total: 3, message: "indexed doc-3 ([redacted])" }
      ])
      expect(resultAt).toBe(3)
      // The same reports are tool.progress events of the call, between its start and its end.
      const tags = (await events()).map((e) => e._tag)
      expect(tags).toEqual(["tool.started", "tool.progress", "tool.progress", "tool.progress", "tool.completed"])
    }), 30_000)

  it("progress is what the tool reported, increasing: a later message with no higher value is a log message instead", () =>
    withServer(async (client, events) => {
      const received: Array<Progress> = []
      const logs: Array<LoggingMessageNotification["params"]> = []
      client.setNotificationHandler(LoggingMessageNotificationSchema, (notification) => {
        logs.push(notification.params)
      })
      const result = await client.callTool({ name: "mixed_progress", arguments: {} }, undefined, {
        onprogress: (progress) => received.push(progress)
      })
      expect(textOf(result)).toBe("mixed")
      expect(received).toEqual([
        { progress: 0, message: "starting" },
        { progress: 5, total: 10, message: "counted" },
        { progress: 7, total: 10 },
        { progress: 10, total: 10, message: "done" }
      ])
      for (let i = 1; i < received.length; i++) expect(received[i]!.progress).toBeGreaterThan(received[i - 1]!.progress)
      expect(logs).toEqual([
        { level: "info", logger: "mixed_progress", data: "still going" },
        { level: "info", logger: "mixed_progress", data: "a fraction" },
        { level: "info", logger: "mixed_progress", data: "the same count" }
      ])
      // Every report is still a tool.progress event of the server.
      expect((await events()).filter((e) => e._tag === "tool.progress")).toHaveLength(7)
    }), 30_000)

  it("a first report of 0 (of a total) is sent as reported", () =>
    withServer(async (client) => {
      const received: Array<Progress> = []
      await client.callTool({ name: "from_zero", arguments: {} }, undefined, {
        onprogress: (progress) => received.push(progress)
      })
      expect(received).toEqual([
        { progress: 0, total: 100, message: "Completed step 0 of 100" },
        { progress: 50, total: 100, message: "Completed step 50 of 100" },
        { progress: 100, total: 100, message: "Completed step 100 of 100" }
      ])
    }), 30_000)

  it("a client that did not ask for progress gets the same result and no notification", () =>
    withServer(async (client) => {
      const notifications: Array<unknown> = []
      client.fallbackNotificationHandler = async (notification) => void notifications.push(notification)
      const result = await client.callTool({ name: "index_documents", arguments: { n: 2 } })
      expect(textOf(result)).toBe("indexed 2 documents")
      expect(notifications.filter((n) => (n as { method: string }).method === "notifications/progress")).toEqual([])
    }), 30_000)

  it("concurrent calls each get their own progress", () =>
    withServer(async (client) => {
      const a: Array<Progress> = []
      const b: Array<Progress> = []
      const [ra, rb] = await Promise.all([
        client.callTool({ name: "index_documents", arguments: { n: 2 } }, undefined, { onprogress: (p) => a.push(p) }),
        client.callTool({ name: "index_documents", arguments: { n: 4 } }, undefined, { onprogress: (p) => b.push(p) })
      ])
      expect(textOf(ra)).toBe("indexed 2 documents")
      expect(textOf(rb)).toBe("indexed 4 documents")
      expect(a.map((p) => [p.progress, p.total])).toEqual([[1, 2], [2, 2]])
      expect(b.map((p) => [p.progress, p.total])).toEqual([[1, 4], [2, 4], [3, 4], [4, 4]])
    }), 30_000)
})
