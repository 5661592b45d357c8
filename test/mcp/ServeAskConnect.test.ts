/**
 * `Ask` on both sides of MCP: a tool served by `McpServe` asks; `McpConnect` (with
 * `elicitation: "approval"`) imports it, and the server's `elicitation/create` during the imported
 * call is asked through that call's `Ask`: the client's `Ask.Answerer` answers (its
 * `tool.question` / `tool.answered` events belong to the client's call), ahead of `Approval`,
 * which stays the answer when no answerer is provided.
 */
import { Effect, Layer, Logger, Schema } from "effect"
import { describe, expect, it } from "vitest"
import { Approval, Ask, EventSink, Executor, Tool, ToolEvent, ToolRegistry, ToolResult, ToolServices } from "../../src/index.ts"
import { McpConnect, McpServe } from "../../src/mcp/index.ts"

const pick = Tool.make("pick", {
  description: "Asks the user for a colour.",
  input: Schema.Struct({}),
  failure: Ask.NotAnswered,
  services: [Ask.Ask],
  safety: { access: "read" },
  handler: () =>
    Effect.map(
      Ask.question({
        message: "Which colour?",
        answer: Schema.Struct({ colour: Schema.Literals(["red", "blue"]), shade: Schema.optionalKey(Schema.Int) })
      }),
      ({ colour, shade }) => `picked ${colour}${shade === undefined ? "" : ` ${shade}`}`
    ),
  toModelOutput: (out) => ToolResult.text(String(out))
})

/** Serves `pick`, imports it back, calls it once with `answering` provided to the client's call. */
const callThrough = <A>(answering: Layer.Layer<A>) =>
  Effect.runPromise(
    Effect.gen(function*() {
      const server = yield* McpServe.serveHttp(yield* ToolRegistry.make([pick]), { port: 0, name: "asker" })
      const connection = yield* McpConnect.http({ url: server.url, elicitation: "approval" })
      const executor = yield* Executor.make(yield* connection.registry)
      const result = yield* executor.run({ id: "c1", name: "pick", arguments: {} }).pipe(Effect.provide(answering))
      const events = yield* EventSink.EventLog.use((log) => log.all)
      // the client's call (the server's executor shares the test's sink, under its own call ids)
      return { result, events: events.filter((e) => "toolCallId" in e && e.toolCallId === "c1") }
    }).pipe(
      Effect.scoped,
      Effect.provide(ToolServices.layerTest({ runId: "client" })),
      Effect.provideService(Logger.CurrentLoggers, new Set())
    )
  )

describe("Ask across MCP: McpServe asks, McpConnect answers through Ask", () => {
  it("the client's Ask.Answerer answers the served tool's question; the question is an event of the client's call", async () => {
    const requests: Array<Ask.Request> = []
    const { events, result } = await callThrough(Ask.layerFunction((request) =>
      Effect.sync(() => {
        requests.push(request)
        return Ask.answer({ colour: "blue", shade: 3 }, "user")
      })
    ))
    expect(ToolResult.textOf(result)).toBe("picked blue 3")
    expect(requests[0]?.message).toBe(`MCP server "asker" asks: Which colour?`)
    expect(requests[0]?.schema).toMatchObject({
      type: "object",
      properties: { colour: { type: "string", enum: ["red", "blue"] }, shade: { type: "integer" } },
      required: ["colour"]
    })
    expect(events.map((e) => e._tag)).toEqual(["tool.started", "tool.question", "tool.answered", "tool.completed"])
    const answered = events.find((e): e is ToolEvent.ToolAnswered => e._tag === "tool.answered")
    expect([answered?.outcome, answered?.answer, answered?.answeredBy]).toEqual(["answered", { colour: "blue", shade: 3 }, "user"])
  }, 30_000)

  it("a declined question declines the elicitation: the served tool reads Declined", async () => {
    const { result } = await callThrough(Ask.layerFunction(() => Effect.succeed(Ask.decline("not now", "user"))))
    expect(result.isError).toBe(true)
    expect(ToolResult.textOf(result)).toContain("the user declined")
  }, 30_000)

  it("without an Ask.Answerer, Approval still answers (Edit: the edited content)", async () => {
    const { events, result } = await callThrough(
      Approval.layer(() => Effect.succeed(Approval.edit({ colour: "red" }, "user")))
    )
    expect(ToolResult.textOf(result)).toBe("picked red")
    expect(events.some((e) => e._tag === "tool.question")).toBe(false)
  }, 30_000)
})
