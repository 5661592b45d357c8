/**
 * A remote server's progress through McpConnect: tools served with
 * `McpServe.serveHttp` (which sends `notifications/progress` for `ToolProgress`
 * reports, redacted by the server's policy) and imported back with
 * `McpConnect.http`. A call run by a local `Executor` asks for progress, and
 * each notification becomes a `tool.progress` event of the local call, between
 * its `tool.started` and its terminal event, also when the call fails. A tool
 * that reports nothing, or a handler called without a `ToolProgress`, works as
 * before.
 */
import { Effect, Schema, type Scope } from "effect"
import { describe, expect, it } from "vitest"
import * as Tool from "../../src/contract/Tool.ts"
import * as ToolError from "../../src/contract/ToolError.ts"
import type { Event } from "../../src/contract/ToolEvent.ts"
import * as ToolRegistry from "../../src/contract/ToolRegistry.ts"
import * as ToolResult from "../../src/contract/ToolResult.ts"
import { EventLog } from "../../src/runtime/EventSink.ts"
import * as Executor from "../../src/runtime/Executor.ts"
import * as ToolProgress from "../../src/runtime/ToolProgress.ts"
import * as ToolServices from "../../src/runtime/ToolServices.ts"
import { McpConnect, McpServe } from "../../src/mcp/index.ts"

/** Indexes `n` documents; its messages hold a value the server's policy redacts. */
const index = Tool.make("index_documents", {
  description: "Indexes documents, reporting progress.",
  input: Schema.Struct({ n: Schema.Int }),
  safety: { access: "read", idempotent: true, redact: { patterns: [/secret-\w+/] } },
  services: [ToolProgress.ToolProgress],
  handler: ({ n }) =>
    Effect.gen(function*() {
      for (let i = 1; i <= n; i++) {
        yield* ToolProgress.report({ message: `indexed doc-${i} (secret-${i})`, count: i, total: n })
        yield* Effect.sleep(50)
      }
      return `indexed ${n} documents`
    })
})

/** Reports twice, then fails. */
const flaky = Tool.make("flaky", {
  description: "Starts, then jams.",
  input: Schema.Struct({}),
  safety: { access: "read", idempotent: true },
  services: [ToolProgress.ToolProgress],
  handler: () =>
    Effect.gen(function*() {
      yield* ToolProgress.report({ message: "warming up", count: 1, total: 4 })
      yield* Effect.sleep(50)
      yield* ToolProgress.report({ message: "almost", count: 2, total: 4 })
      yield* Effect.sleep(50)
      return yield* Effect.fail(ToolError.repairable("the widget is jammed"))
    })
})

/** Reports nothing. */
const greet = Tool.make("greet", {
  description: "Greets someone.",
  input: Schema.Struct({ name: Schema.String }),
  safety: { access: "read", idempotent: true },
  handler: ({ name }) => Effect.succeed(`hello, ${name}`)
})

interface Harness {
  readonly imported: ToolRegistry.ToolRegistry<never>
  /** Runs one call through the client's executor; returns its result and the client's events of it. */
  readonly run: (name: string, args: unknown) => Effect.Effect<
    { readonly result: ToolResult.ToolResult; readonly events: ReadonlyArray<Event> },
    never,
    Executor.Requirements<never>
  >
}

/**
 * A server with its own services (its events stay out of the client's log), imported with
 * McpConnect; the client's executor makes an event of every report (interval 0), so each
 * notification is one event however close together they arrive.
 */
const withImported = <A>(
  test: (harness: Harness) => Effect.Effect<A, unknown, Scope.Scope | ToolServices.Hidden | EventLog>
): Promise<A> =>
  Effect.runPromise(
    Effect.gen(function*() {
      const server = yield* McpServe.serveHttp(yield* ToolRegistry.make([index, flaky, greet]), {
        port: 0,
        name: "remote",
        executor: { progress: { interval: 0 } }
      }).pipe(Effect.provide(ToolServices.layerTest({ runId: "server" })))
      const connection = yield* McpConnect.http({ url: server.url })
      const imported = yield* connection.registry
      const executor = yield* Executor.make(imported, { progress: { interval: 0 } })
      const log = yield* EventLog
      let n = 0
      const run = (name: string, args: unknown) =>
        Effect.gen(function*() {
          const id = `call_${++n}`
          const result = yield* executor.run({ id, name, arguments: JSON.stringify(args) })
          const events = (yield* log.all).filter((event) => "toolCallId" in event && event.toolCallId === id)
          return { result, events }
        }).pipe(Effect.orDie)
      return yield* test({ imported, run })
    }).pipe(Effect.scoped, Effect.provide(ToolServices.layerTest({ runId: "client" })))
  )

const progressOf = (events: ReadonlyArray<Event>) =>
  events.flatMap((event) =>
    event._tag === "tool.progress" ? [{ message: event.message, count: event.count, total: event.total }] : []
  )

describe("McpConnect: a remote server's progress as tool.progress events", () => {
  it("each notifications/progress is a tool.progress of the local call, after it starts and before it completes", () =>
    withImported(({ run }) =>
      Effect.gen(function*() {
        const { events, result } = yield* run("index_documents", { n: 3 })
        expect(ToolResult.textOf(result)).toBe("indexed 3 documents")
        expect(events.map((event) => event._tag)).toEqual([
          "tool.started",
          "tool.progress",
          "tool.progress",
          "tool.progress",
          "tool.completed"
        ])
        // The server redacted its messages by its tool's policy; the counts and totals are the remote ones.
        expect(progressOf(events)).toEqual([
          { message: "indexed doc-1 ([redacted])", count: 1, total: 3 },
          { message: "indexed doc-2 ([redacted])", count: 2, total: 3 },
          { message: "indexed doc-3 ([redacted])", count: 3, total: 3 }
        ])
        expect(events.filter((event) => event._tag === "tool.progress")).toEqual(
          events.filter((event) => event._tag === "tool.progress").map((event) =>
            expect.objectContaining({ toolName: "index_documents", attempt: 1, reports: 1 })
          )
        )
      })), 30_000)

  it("progress reported before a failure arrives before the call's terminal event", () =>
    withImported(({ run }) =>
      Effect.gen(function*() {
        const { events, result } = yield* run("flaky", {})
        expect(result.isError).toBe(true)
        expect(ToolResult.textOf(result)).toContain("the widget is jammed")
        expect(events.map((event) => event._tag)).toEqual(["tool.started", "tool.progress", "tool.progress", "tool.failed"])
        expect(progressOf(events)).toEqual([
          { message: "warming up", count: 1, total: 4 },
          { message: "almost", count: 2, total: 4 }
        ])
      })), 30_000)

  it("a tool that reports nothing works as before, with no tool.progress", () =>
    withImported(({ run }) =>
      Effect.gen(function*() {
        const { events, result } = yield* run("greet", { name: "Ada" })
        expect(ToolResult.textOf(result)).toBe("hello, Ada")
        expect(events.map((event) => event._tag)).toEqual(["tool.started", "tool.completed"])
      })), 30_000)

  it("a handler called directly: without ToolProgress it does not ask; with one it gets each update as sent", () =>
    withImported(({ imported }) =>
      Effect.gen(function*() {
        const handler = imported.get("index_documents")!.tool.handler
        // No ToolProgress in context (no executor): the call runs as before.
        const plain = yield* handler({ n: 2 })
        expect(plain).toMatchObject([{ type: "text", text: "indexed 2 documents" }])
        // A ToolProgress of its own: MCP progress/total/message are the update's count/total/message.
        const updates: Array<ToolProgress.Update> = []
        yield* handler({ n: 2 }).pipe(Effect.provide(ToolProgress.layerCallback((update) => updates.push(update))))
        expect(updates).toEqual([
          { count: 1, total: 2, message: "indexed doc-1 ([redacted])" },
          { count: 2, total: 2, message: "indexed doc-2 ([redacted])" }
        ])
      })), 30_000)
})
