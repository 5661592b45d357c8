/**
 * `McpServe`'s `toolSearch`: a registry served as a deferred catalogue, against the official SDK
 * `Client` over a loopback Streamable HTTP server. `tools/list` answers the loaded tools and
 * `search_tools`; a call to a deferred tool the session has not found is an `isError` result that
 * says to search first; a search lists what it found with the input schemas, sends
 * `notifications/tools/list_changed` to that session, and the found tools join its `tools/list`
 * and can be called; another session still sees (and may call) only the short list. The command
 * line's `mcp serve --defer` serves a tools module so.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js"
import { Effect, Exit, Fiber, Layer, Logger, Result, Schedule, Schema } from "effect"
import { TestConsole } from "effect/testing"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"
import * as Cli from "../../src/cli/Cli.ts"
import * as Tool from "../../src/contract/Tool.ts"
import * as ToolRegistry from "../../src/contract/ToolRegistry.ts"
import * as ToolServices from "../../src/runtime/ToolServices.ts"
import { McpServe } from "../../src/mcp/index.ts"
import * as ToolSearch from "../../src/agent/ToolSearch.ts"
import * as ServeCatalogue from "../../src/mcp/internal/serveCatalogue.ts"
import type * as ToolResult from "../../src/contract/ToolResult.ts"

const tool = (name: string, description: string) =>
  Tool.make(name, {
    description,
    input: Schema.Struct({ city: Schema.String.annotate({ description: "the city" }) }),
    safety: { access: "read" },
    handler: ({ city }) => Effect.succeed(`${name}(${city})`)
  })

const registry = ToolRegistry.make([
  tool("get_weather", "Current weather for a city: temperature and sky."),
  tool("book_hotel", "Book a hotel room in a city."),
  tool("find_restaurant", "Find restaurants in a city by cuisine."),
  tool("convert_currency", "Convert an amount between currencies.")
])

const withServer = <A>(
  options: Partial<McpServe.HttpOptions>,
  test: (url: string) => Promise<A>
): Promise<A> =>
  Effect.runPromise(
    Effect.gen(function*() {
      const server = yield* McpServe.serveHttp(yield* registry, { port: 0, ...options })
      return yield* Effect.promise(() => test(server.url))
    }).pipe(
      Effect.scoped,
      Effect.provide(ToolServices.layerTest({ runId: "mcp-tool-search" })),
      Effect.provideService(Logger.CurrentLoggers, new Set())
    )
  )

const connect = async (url: string) => {
  const client = new Client({ name: "serve-tool-search-test", version: "1.0.0" })
  const changes: Array<unknown> = []
  client.setNotificationHandler(ToolListChangedNotificationSchema, (notification) => {
    changes.push(notification.method)
  })
  await client.connect(new StreamableHTTPClientTransport(new URL(url)))
  return { client, changes }
}

const listed = async (client: Client) => (await client.listTools()).tools.map((t) => t.name)

const textOf = (result: unknown) =>
  (result as { content: ReadonlyArray<{ type: string; text?: string }> }).content.map((block) => block.text).join("")

/** Waits until `check` holds (a notification travels on its own), at most `ms`. */
const until = async (check: () => boolean, ms = 2_000) => {
  const deadline = Date.now() + ms
  while (!check() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10))
}

describe("McpServe toolSearch: a deferred catalogue per session", () => {
  it("lists loaded + search, refuses an unfound tool, reveals what a search finds to that session only", () =>
    withServer({ toolSearch: { loaded: ["convert_currency"], maxResults: 1 } }, async (url) => {
      const a = await connect(url)
      const b = await connect(url)
      expect(a.client.getServerCapabilities()?.tools?.listChanged).toBe(true)
      expect(await listed(a.client)).toEqual(["convert_currency", "search_tools"])

      const refused = await a.client.callTool({ name: "get_weather", arguments: { city: "Oslo" } })
      expect(refused.isError).toBe(true)
      expect(textOf(refused)).toBe(
        "tool \"get_weather\" is not loaded yet: call search_tools first with what you need, then call a tool it " +
          "returns; available tools: convert_currency, search_tools"
      )

      const found = await a.client.callTool({ name: "search_tools", arguments: { query: "weather in a city" } })
      expect(found.isError).toBe(false)
      expect(found.structuredContent).toEqual({
        query: "weather in a city",
        tools: [{ name: "get_weather", description: "Current weather for a city: temperature and sky." }]
      })
      // the portable form: each tool found with its input schema
      const text = textOf(found)
      expect(text).toMatch(/^Found 1 tool; you can call it from your next step:\n/)
      const [listedTool] = JSON.parse(text.slice(text.indexOf("\n") + 1)) as Array<
        { name: string; parameters: { properties: Record<string, unknown> } }
      >
      expect(listedTool!.name).toBe("get_weather")
      expect(listedTool!.parameters.properties["city"]).toEqual({ type: "string", description: "the city" })

      await until(() => a.changes.length > 0)
      expect(a.changes).toEqual(["notifications/tools/list_changed"])
      expect(await listed(a.client)).toEqual(["get_weather", "convert_currency", "search_tools"])
      const called = await a.client.callTool({ name: "get_weather", arguments: { city: "Oslo" } })
      expect(called.isError).toBe(false)
      expect(textOf(called)).toBe("get_weather(Oslo)")

      // a search finding nothing new changes nothing
      await a.client.callTool({ name: "search_tools", arguments: { query: "weather" } })
      await new Promise((resolve) => setTimeout(resolve, 50))
      expect(a.changes).toHaveLength(1)

      // the other session found nothing (and, with no request open then, heard nothing): its list is short
      expect(b.changes).toEqual([])
      expect(await listed(b.client)).toEqual(["convert_currency", "search_tools"])
      const other = await b.client.callTool({ name: "get_weather", arguments: { city: "Oslo" } })
      expect(other.isError).toBe(true)
      expect(textOf(other)).toContain("call search_tools first")
      // its own search reveals to it alone, independently
      await b.client.callTool({ name: "search_tools", arguments: { query: "book a hotel room" } })
      await until(() => b.changes.length > 0)
      expect(b.changes).toEqual(["notifications/tools/list_changed"])
      expect(await listed(b.client)).toEqual(["book_hotel", "convert_currency", "search_tools"])
      expect(await listed(a.client)).toEqual(["get_weather", "convert_currency", "search_tools"])
      const hotel = await a.client.callTool({ name: "book_hotel", arguments: { city: "Oslo" } })
      expect(hotel.isError).toBe(true)
      await a.client.close()
      await b.client.close()
    }), 30_000)

  it("a catalogue of at most minTools tools is served whole, with no search tool", () =>
    withServer({ toolSearch: { minTools: 10 } }, async (url) => {
      const { client } = await connect(url)
      expect(await listed(client)).toEqual(["get_weather", "book_hotel", "find_restaurant", "convert_currency"])
      await client.close()
    }), 30_000)

  it("a session's call is checked without walking the catalogue; its lists are made when read", async () => {
    const tools = await Effect.runPromise(registry)
    const plan = Result.getOrThrow(ToolSearch.plan(tools, { loaded: ["convert_currency"] }))!
    let asked = 0
    const catalogue = ServeCatalogue.make({ ...plan, isDeferred: (name) => (asked++, plan.isDeferred(name)) })
    const found: ToolResult.ToolResult = {
      toolCallId: "s1",
      name: "search_tools",
      content: [],
      value: { query: "weather", tools: [{ name: "get_weather", description: "w" }] },
      artifacts: [],
      isError: false,
      elapsed: 0
    }
    expect(catalogue.record("a", found)).toBe(true)
    asked = 0
    const advertised = catalogue.advertised("a")
    expect([advertised.has("get_weather"), advertised.has("convert_currency"), advertised.has("search_tools")])
      .toEqual([true, true, true])
    expect(advertised.has("book_hotel")).toBe(false)
    expect(catalogue.advertised("b").has("get_weather")).toBe(false)
    expect(asked).toBe(0)
    expect(advertised.names).toEqual(["get_weather", "convert_currency", "search_tools"])
    expect(catalogue.advertised("b").specs.map((spec) => spec.name)).toEqual(["convert_currency", "search_tools"])
  })

  it("options naming a tool the registry lacks fail serving with InvalidToolSearch", async () => {
    const error = await Effect.runPromise(
      Effect.gen(function*() {
        return yield* Effect.flip(McpServe.serveHttp(yield* registry, { port: 0, toolSearch: { loaded: ["nope"] } }))
      }).pipe(Effect.scoped, Effect.provide(ToolServices.layerTest({ runId: "mcp-tool-search" })))
    )
    expect(error._tag).toBe("InvalidToolSearch")
    expect(error.message).toBe("tool search names tools the registry lacks: nope")
  })
})

const toolsModule = fileURLToPath(new URL("../cli/fixtures/tools.ts", import.meta.url))

/** Runs the command line on `args` with a console of its own: the exit code and stderr. */
const cli = (...args: ReadonlyArray<string>) =>
  Effect.runPromise(
    Effect.gen(function*() {
      const exit = yield* Effect.exit(Cli.run(args, { version: "1.2.3" }))
      return { code: Cli.exitCode(exit), stderr: (yield* TestConsole.errorLines).map(String).join("\n") }
    }).pipe(Effect.provide([Cli.layer, Layer.fresh(TestConsole.layer)]))
  )

describe("tinyagents mcp serve --defer", () => {
  it("serves a tools module as a deferred catalogue: --loaded tools and search_tools listed, the rest found by search", () =>
    Effect.runPromise(
      Effect.gen(function*() {
        const serving = yield* Cli.run(
          ["mcp", "serve", toolsModule, "--http", "0", "--defer", "--loaded", "add", "--search-results", "1", "--events", "none"],
          { version: "1.2.3" }
        ).pipe(Effect.forkChild)
        const announced = yield* TestConsole.errorLines.pipe(
          Effect.map((lines) => lines.map(String).find((line) => line.includes("over MCP at"))),
          Effect.flatMap((line) => line === undefined ? Effect.fail("not yet") : Effect.succeed(line)),
          Effect.retry(Schedule.spaced("50 millis").pipe(Schedule.upTo({ times: 200 })))
        )
        expect(announced).toMatch(/^tinyagents: serving 4 tool\(s\) \(3 deferred behind search_tools\) over MCP at http:/)
        const url = announced.slice(announced.indexOf("http://"))
        yield* Effect.promise(async () => {
          const { changes, client } = await connect(url)
          expect(await listed(client)).toEqual(["add", "search_tools"])
          const refused = await client.callTool({ name: "greet", arguments: { name: "Ada" } })
          expect(refused.isError).toBe(true)
          expect(textOf(refused)).toContain("is not loaded yet: call search_tools first")
          await client.callTool({ name: "search_tools", arguments: { query: "greet someone" } })
          await until(() => changes.length > 0)
          expect(await listed(client)).toEqual(["add", "greet", "search_tools"])
          const greeted = await client.callTool({ name: "greet", arguments: { name: "Ada" } })
          expect(greeted.isError).toBe(false)
          expect(greeted.structuredContent).toEqual({ text: "Hello, Ada!" })
          await client.close()
        })
        yield* Fiber.interrupt(serving)
        expect(Exit.isFailure(yield* Fiber.await(serving))).toBe(true)
      }).pipe(Effect.provide([Cli.layer, Layer.fresh(TestConsole.layer)]))
    ), 30_000)

  it("--loaded, --defer-over and --search-results go with --defer; an unknown --loaded tool is a usage error", async () => {
    const without = await cli("mcp", "serve", toolsModule, "--loaded", "add")
    expect(without.code).toBe(2)
    expect(without.stderr).toContain("--loaded, --defer-over and --search-results go with --defer")
    const unknown = await cli("mcp", "serve", toolsModule, "--http", "0", "--defer", "--loaded", "nope")
    expect(unknown.code).toBe(2)
    expect(unknown.stderr).toContain("tool search names tools the registry lacks: nope")
    const zero = await cli("mcp", "serve", toolsModule, "--http", "0", "--defer", "--search-results", "0")
    expect(zero.code).toBe(2)
    expect(zero.stderr).toContain("--search-results takes a number of at least 1, not 0")
  })
})
