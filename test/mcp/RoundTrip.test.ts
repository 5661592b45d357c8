/**
 * Our client against our own server: a registry served with `McpServe.serveHttp`
 * and imported back with `McpConnect.http`. Every tool is called twice through
 * an `Executor`, once over the local registry and once over the imported one,
 * and the two results are compared, modulo the documented differences:
 *
 * - `result.value` of a tool without an output schema is the content blocks as
 *   sent (no `structuredContent`); with an output schema it is the same value.
 * - A large output: the server stores the artifact and sends the bounded text
 *   plus a `resource_link`; McpConnect describes the link in text, and only
 *   `McpConnect.middleware` records it as the result's `artifacts`.
 * - Names: the server lists canonical names, so a dotted original name
 *   (`math.factorial`) comes back as `math_factorial`.
 * - Safety: what the four MCP hints carry, plus the tags `mcp`, `mcp:<server>`.
 * - A failure (`isError`): the same repairable `ToolFailure`, its text prefixed
 *   with the tool's name by McpConnect.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { Effect, Logger, Result, Schema, type Scope } from "effect"
import { describe, expect, it } from "vitest"
import * as Safety from "../../src/contract/Safety.ts"
import * as Tool from "../../src/contract/Tool.ts"
import * as ToolError from "../../src/contract/ToolError.ts"
import * as ToolRegistry from "../../src/contract/ToolRegistry.ts"
import * as ToolResult from "../../src/contract/ToolResult.ts"
import { auditLog, type Receipt } from "../../src/governance/middleware/AuditLog.ts"
import type { EventLog } from "../../src/runtime/EventSink.ts"
import * as Executor from "../../src/runtime/Executor.ts"
import * as ToolServices from "../../src/runtime/ToolServices.ts"
import { McpConnect, McpServe } from "../../src/mcp/index.ts"

/** A 1x1 PNG. */
const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="

/** Both executors (the server's and the client's local one) offload text over this many characters. */
const threshold = 2_000

const greet = Tool.make("greet", {
  title: "Greeter",
  description: "Greets someone.",
  input: Schema.Struct({ name: Schema.String.annotate({ description: "who to greet" }) }),
  safety: { access: "read", idempotent: true },
  handler: ({ name }) => Effect.succeed(`hello, ${name}`)
})

const measure = Tool.make("measure", {
  description: "Counts the characters and words of a text.",
  input: Schema.Struct({ text: Schema.String }),
  output: Schema.Struct({ chars: Schema.Int, words: Schema.Int }),
  safety: { access: "read", idempotent: true },
  handler: ({ text }) => Effect.succeed({ chars: text.length, words: text.split(/\s+/).filter((w) => w !== "").length })
})

const pixel = Tool.make("pixel", {
  description: "Renders a red dot.",
  input: Schema.Struct({}),
  output: Schema.Struct({ width: Schema.Int, height: Schema.Int }),
  safety: { access: "read", idempotent: true },
  handler: () => Effect.succeed({ width: 1, height: 1 }),
  toModelOutput: ({ height, width }) => [ToolResult.text(`a ${width}x${height} red dot`), ToolResult.image(PNG, "image/png")]
})

/** A short WAV header, as base64. */
const WAV = "UklGRiQAAABXQVZFZm10IA=="

const clip = Tool.make("clip", {
  description: "Returns a sound with its transcript and its source files.",
  input: Schema.Struct({}),
  safety: { access: "read", idempotent: true },
  handler: () => Effect.succeed("beep"),
  toModelOutput: (transcript) => [
    ToolResult.text("a short beep"),
    ToolResult.audio(WAV, "audio/wav"),
    ToolResult.resource({ uri: "clip://beep/transcript", mimeType: "text/plain", text: String(transcript) }),
    ToolResult.resource({ uri: "clip://beep/source.wav", mimeType: "audio/wav", blob: WAV })
  ]
})

const report = Tool.make("report", {
  description: "Returns a long report.",
  input: Schema.Struct({ lines: Schema.Int }),
  safety: { access: "read", idempotent: true },
  handler: ({ lines }) => Effect.succeed(Array.from({ length: lines }, (_, i) => `line ${i + 1} of the report`).join("\n"))
})

const jam = Tool.make("jam", {
  description: "Always jams.",
  input: Schema.Struct({}),
  safety: { access: "write", idempotent: true },
  handler: () => Effect.fail(ToolError.repairable("the widget is jammed; call unjam first"))
})

const wipe = Tool.make("wipe", {
  description: "Wipes a scratch area.",
  input: Schema.Struct({ area: Schema.String }),
  safety: { access: "mutate" },
  handler: ({ area }) => Effect.succeed(`wiped ${area}`)
})

const fetchRate = Tool.make("fetch_rate", {
  description: "Fetches an exchange rate.",
  input: Schema.Struct({ from: Schema.String, to: Schema.String }),
  safety: { access: "network", idempotent: true },
  handler: () => Effect.succeed(1.08)
})

const factorialOf = (n: number): number => (n <= 1 ? 1 : n * factorialOf(n - 1))

/** An imported tool with a foreign (dotted) name: canonical `math_factorial`. */
const factorial = Result.getOrThrow(Tool.fromJsonSchema("math.factorial", {
  title: "Factorial",
  description: "n! for a small n.",
  inputSchema: {
    type: "object",
    properties: { n: { type: "integer", minimum: 0, maximum: 20 } },
    required: ["n"]
  },
  safety: { access: "read", idempotent: true },
  handler: (input) => Effect.succeed(factorialOf(input.n as number))
}))

const tools = [greet, measure, pixel, clip, report, jam, wipe, fetchRate, factorial] as const

interface Harness {
  readonly local: Executor.Executor<never>
  readonly remote: Executor.Executor<never>
  readonly registry: ToolRegistry.ToolRegistry<never>
  readonly imported: ToolRegistry.ToolRegistry<never>
  readonly connection: McpConnect.Connection
  readonly url: string
  /** Receipts of the server's executor: one per call that reached it. */
  readonly receipts: Array<Receipt>
  /** Calls `name` with `args` locally and through the server. */
  readonly both: (
    name: string,
    args: unknown
  ) => Effect.Effect<
    { readonly local: ToolResult.ToolResult; readonly remote: ToolResult.ToolResult },
    ToolError.ToolError,
    Executor.Requirements<never>
  >
}

const roundTrip = <A>(
  test: (harness: Harness) => Effect.Effect<A, unknown, Scope.Scope | ToolServices.Hidden | EventLog>,
  options: {
    /** Put `McpConnect.middleware` on the client's executor. */
    readonly clientMiddleware?: boolean
    /** Drop log output (the server logs the defects it answers with -32603). */
    readonly quiet?: boolean
  } = {}
): Promise<A> =>
  Effect.runPromise(
    Effect.gen(function*() {
      const registry = yield* ToolRegistry.make([...tools])
      const receipts: Array<Receipt> = []
      const server = yield* McpServe.serveHttp(registry, {
        port: 0,
        name: "self",
        executor: { middleware: [auditLog((receipt) => receipts.push(receipt))], artifacts: { threshold } }
      })
      const connection = yield* McpConnect.http({ url: server.url })
      const imported = yield* connection.registry
      const local = yield* Executor.make(registry, { artifacts: { threshold } })
      const remote = yield* Executor.make(imported, {
        artifacts: { threshold },
        ...(options.clientMiddleware === true ? { middleware: [McpConnect.middleware] } : {})
      })
      let n = 0
      const both = (name: string, args: unknown) =>
        Effect.gen(function*() {
          const id = `call_${++n}`
          const arguments_ = JSON.stringify(args)
          return {
            local: yield* local.run({ id, name, arguments: arguments_ }),
            remote: yield* remote.run({ id, name, arguments: arguments_ })
          }
        })
      return yield* test({ local, remote, registry, imported, connection, url: server.url, receipts, both })
    }).pipe(
      Effect.scoped,
      (effect) => options.quiet === true ? Effect.provide(effect, Logger.layer([])) : effect,
      Effect.provide(ToolServices.layerTest({ runId: "round-trip" }))
    )
  )

/** The SDK's own client, for what McpConnect does not expose (the tool list as sent, `resources/read`). */
const sdkClient = <A>(url: string, use: (client: Client) => Promise<A>) =>
  Effect.promise(async () => {
    const client = new Client({ name: "round-trip", version: "1.0.0" })
    await client.connect(new StreamableHTTPClientTransport(new URL(url)))
    try {
      return await use(client)
    } finally {
      await client.close()
    }
  })

/** What an error result says about its error. */
const errorOf = (result: ToolResult.ToolResult) => {
  const error = result.error as (ToolError.ToolError & { readonly issues?: unknown }) | undefined
  return { _tag: error?._tag, disposition: error?.disposition, message: error?.message, issues: error?.issues }
}

describe("round trip: McpConnect against McpServe", () => {
  it("imports every tool with its name, title, description and schemas as served", () =>
    roundTrip(({ connection, imported, registry, url }) =>
      Effect.gen(function*() {
        expect(connection.name).toBe("self")
        expect(connection.skipped()).toEqual([])
        expect(imported.names).toEqual(registry.names)
        const shape = (spec: Tool.ToolSpec) => ({
          name: spec.name,
          title: spec.title,
          description: spec.description,
          inputSchema: spec.inputSchema,
          outputSchema: spec.outputSchema,
          idempotency: spec.idempotency
        })
        expect(imported.specs.map(shape)).toEqual(registry.specs.map(shape))
        // Titles: Tool.make's and Tool.fromJsonSchema's, and none where none was given.
        expect(imported.specs.map((spec) => [spec.name, spec.title]).filter(([, title]) => title !== undefined))
          .toEqual([["greet", "Greeter"], ["math_factorial", "Factorial"]])
        // Output schemas: only the tools that have one.
        expect(imported.specs.filter((spec) => spec.outputSchema !== undefined).map((spec) => spec.name))
          .toEqual(["measure", "pixel"])
        const listed = yield* sdkClient(url, async (client) => (await client.listTools()).tools)
        expect(listed.map((tool) => [tool.name, tool.title])).toEqual(imported.specs.map((spec) => [spec.name, spec.title]))
      })
    ))

  it("annotations and safety survive the trip: read stays read and idempotent, mutate stays mutate and destructive", () =>
    roundTrip(({ imported, registry }) =>
      Effect.gen(function*() {
        // The four MCP hints are a fixed point: served, imported, and served again, they are the same.
        for (const spec of registry.specs) {
          expect([spec.name, Safety.toMcpAnnotations(imported.get(spec.name)!.spec.safety)])
            .toEqual([spec.name, Safety.toMcpAnnotations(spec.safety)])
        }
        const safetyOf = (name: string) => imported.get(name)!.spec.safety
        const tags = ["mcp", "mcp:self"]
        expect(safetyOf("greet")).toEqual({ access: "read", idempotent: true, networked: false, destructive: false, tags })
        expect(safetyOf("math_factorial")).toEqual({ access: "read", idempotent: true, networked: false, destructive: false, tags })
        expect(safetyOf("wipe")).toEqual({ access: "mutate", idempotent: false, networked: false, destructive: true, tags })
        expect(safetyOf("jam")).toEqual({ access: "write", idempotent: true, networked: false, destructive: false, tags })
        expect(safetyOf("fetch_rate")).toEqual({ access: "network", idempotent: true, networked: true, destructive: false, tags })
        expect(imported.get("wipe")!.spec.idempotency).toBe("none")
      })
    ))

  it("a text result: the same content; the value is the content blocks as sent (no structuredContent)", () =>
    roundTrip(({ both, receipts }) =>
      Effect.gen(function*() {
        const { local, remote } = yield* both("greet", { name: "Ada" })
        expect(local).toMatchObject({ isError: false, content: [{ type: "text", text: "hello, Ada" }], value: "hello, Ada" })
        expect(remote).toMatchObject({ name: "greet", isError: false, artifacts: [] })
        expect(remote.content).toEqual(local.content)
        expect(remote.value).toEqual([{ type: "text", text: "hello, Ada" }])
        // A number, and a mutate tool: the same text.
        const rate = yield* both("fetch_rate", { from: "EUR", to: "USD" })
        expect(rate.remote.content).toEqual(rate.local.content)
        expect(ToolResult.textOf(rate.remote)).toBe("1.08")
        expect(rate.local.value).toBe(1.08)
        expect(rate.remote.value).toEqual([{ type: "text", text: "1.08" }])
        const wiped = yield* both("wipe", { area: "tmp" })
        expect(wiped.remote.content).toEqual(wiped.local.content)
        expect(ToolResult.textOf(wiped.remote)).toBe("wiped tmp")
        expect(receipts.map((receipt) => [receipt.tool, receipt.status])).toEqual([["greet", "ok"], ["fetch_rate", "ok"], ["wipe", "ok"]])
      })
    ))

  it("a structured result: structuredContent becomes result.value, the text is the same JSON", () =>
    roundTrip(({ both }) =>
      Effect.gen(function*() {
        const { local, remote } = yield* both("measure", { text: "the quick brown fox" })
        expect(local.value).toEqual({ chars: 19, words: 4 })
        expect(remote.isError).toBe(false)
        expect(remote.value).toEqual(local.value)
        expect(remote.content).toEqual(local.content)
        expect(JSON.parse(ToolResult.textOf(remote))).toEqual({ chars: 19, words: 4 })
      })
    ))

  // Found by this test: the server passed base64 text where Effect's `ImageContent.data` wants bytes.
  it("an image result: the image and its text arrive as the local call gives them", () =>
    roundTrip(({ both }) =>
      Effect.gen(function*() {
        const { local, remote } = yield* both("pixel", {})
        expect(local.content).toEqual([ToolResult.text("a 1x1 red dot"), ToolResult.image(PNG, "image/png")])
        expect(errorOf(remote)).toEqual(errorOf(local))
        expect(remote.isError).toBe(false)
        expect(remote.content).toEqual(local.content)
        expect(remote.value).toEqual({ width: 1, height: 1 })
      }), { quiet: true }))

  it("audio and embedded resources: served as MCP audio and resource blocks, imported back as the local call gives them", () =>
    roundTrip(({ both, url }) =>
      Effect.gen(function*() {
        const { local, remote } = yield* both("clip", {})
        expect(local.content.map((block) => block.type)).toEqual(["text", "audio", "resource", "resource"])
        expect(remote.isError).toBe(false)
        expect(remote.content).toEqual(local.content)
        const sent = yield* sdkClient(url, async (client) => (await client.callTool({ name: "clip", arguments: {} })).content)
        expect(sent).toEqual([
          { type: "text", text: "a short beep" },
          { type: "audio", data: WAV, mimeType: "audio/wav" },
          { type: "resource", resource: { uri: "clip://beep/transcript", mimeType: "text/plain", text: "beep" } },
          { type: "resource", resource: { uri: "clip://beep/source.wav", mimeType: "audio/wav", blob: WAV } }
        ])
      })
    ))

  it("a large output: the server's artifact comes back as its head and tail plus a described resource_link", () =>
    roundTrip(({ both, connection, url }) =>
      Effect.gen(function*() {
        const { local, remote } = yield* both("report", { lines: 400 })
        const full = local.value as string
        expect(full.length).toBeGreaterThan(threshold)
        // Locally: the head and tail, and the whole text in the `artifacts` store.
        expect(local.artifacts).toEqual([{ store: "artifacts", key: "round-trip/call_1", bytes: full.length, mimeType: "text/plain" }])
        // Through the server: its executor stored the artifact under its own call id, sent the same
        // head and tail (the note names its key) and a resource_link. McpConnect keeps the bounded
        // text and describes the link in a second text block; the value is the blocks as sent.
        expect(remote.isError).toBe(false)
        expect(remote.content).toHaveLength(2)
        const [head, link] = remote.content as ReadonlyArray<{ readonly type: "text"; readonly text: string }>
        const serverKey = /stored as artifact "([^"]+)"/.exec(head!.text)![1]!
        expect(serverKey).toMatch(/^round-trip\/mcp-[0-9a-f]{8}-1$/)
        expect(head).toEqual({ type: "text", text: ToolResult.textOf(local).replace("round-trip/call_1", serverKey) })
        const uri = McpServe.artifactUri({ store: "artifacts", key: serverKey, bytes: full.length, mimeType: "text/plain" })
        expect(link).toEqual({ type: "text", text: `[resource link: ${serverKey} <${uri}> (text/plain)]` })
        expect(remote.value).toEqual([
          head,
          {
            type: "resource_link",
            uri,
            name: serverKey,
            description: expect.stringContaining(`(${full.length} bytes)`),
            mimeType: "text/plain",
            size: full.length
          }
        ])
        // Without McpConnect.middleware the client records no artifact; the text was not offloaded again.
        expect(remote.artifacts).toEqual([])
        // The link serves the whole text to the session that made the call (McpConnect does not
        // follow links itself; its connection reads them); another client is told it does not exist.
        const read = yield* connection.readResource(uri)
        expect(read).toEqual([{ uri, mimeType: "text/plain", text: full }])
        const other = yield* sdkClient(url, (client) => client.readResource({ uri }).then(() => "read", (error) => error.code))
        expect(other).toBe(-32602)
      })
    ))

  it("a large output with McpConnect.middleware: the resource link becomes the result's artifact", () =>
    roundTrip(({ both }) =>
      Effect.gen(function*() {
        const { local, remote } = yield* both("report", { lines: 400 })
        const link = (remote.value as ReadonlyArray<{ readonly type: string; readonly uri?: string }>)
          .find((block) => block.type === "resource_link")!
        expect(link.uri).toMatch(/^tinyagents:\/\/artifacts\/artifacts\/round-trip%2Fmcp-/)
        expect(remote.artifacts).toEqual([
          { store: "mcp:self", key: link.uri, bytes: (local.value as string).length, mimeType: "text/plain" }
        ])
        expect(remote.content).toHaveLength(2)
      }), { clientMiddleware: true }))

  it("a repairable failure: isError comes back as a repairable ToolFailure with the same text (prefixed with the tool name)", () =>
    roundTrip(({ both, receipts }) =>
      Effect.gen(function*() {
        const { local, remote } = yield* both("jam", {})
        expect(errorOf(local)).toEqual({
          _tag: "ToolFailure",
          disposition: "repair",
          message: "the widget is jammed; call unjam first",
          issues: undefined
        })
        expect(remote.isError).toBe(true)
        // McpConnect names the tool in front of the server's text (connectMapping.resultError).
        expect(errorOf(remote)).toEqual({ ...errorOf(local), message: `jam: ${local.error!.message}` })
        expect(ToolResult.textOf(remote)).toBe(`jam: ${ToolResult.textOf(local)}`)
        expect(receipts.map((receipt) => [receipt.tool, receipt.status, receipt.isError])).toEqual([["jam", "executor_error", true]])
      })
    ))

  it("invalid arguments: refused by McpConnect before sending, with the local call's error; nothing reaches the server", () =>
    roundTrip(({ both, local, receipts, remote }) =>
      Effect.gen(function*() {
        const cases: ReadonlyArray<readonly [string, unknown]> = [
          ["greet", { name: 1 }],
          ["greet", {}],
          ["measure", { text: "x", extra: true }],
          ["wipe", { area: ["a"] }],
          ["math_factorial", { n: 2.5 }],
          ["math_factorial", { n: -1 }],
          ["math_factorial", { n: 3, m: 1 }]
        ]
        for (const [name, args] of cases) {
          const { local, remote } = yield* both(name, args)
          expect(local.isError).toBe(true)
          expect(errorOf(local)._tag).toBe("InvalidArguments")
          expect([name, errorOf(remote)]).toEqual([name, errorOf(local)])
          expect(remote.content).toEqual(local.content)
        }
        // Malformed JSON too.
        const malformed = { id: "bad", name: "greet", arguments: "{\"name\":" }
        const localBad = yield* local.run(malformed)
        const remoteBad = yield* remote.run(malformed)
        expect(errorOf(localBad)._tag).toBe("MalformedArguments")
        expect(errorOf(remoteBad)).toEqual(errorOf(localBad))
        expect(receipts).toEqual([]) // not one call reached the server
        // The counter works: a valid call leaves a receipt.
        yield* both("greet", { name: "Ada" })
        expect(receipts.map((receipt) => receipt.tool)).toEqual(["greet"])
      })
    ))

  it("a dotted original name: served and re-imported under its canonical name", () =>
    roundTrip(({ both, imported, registry, url }) =>
      Effect.gen(function*() {
        // Locally the registry keeps the alias both ways.
        expect(registry.get("math.factorial")!.spec).toMatchObject({ name: "math_factorial", originalName: "math.factorial" })
        // The server lists the canonical name (README: "tools/list: the registry's canonical names"),
        // so the dotted name does not come back: the imported tool is plain `math_factorial`.
        const listed = yield* sdkClient(url, async (client) => (await client.listTools()).tools.map((tool) => tool.name))
        expect(listed).toContain("math_factorial")
        expect(listed).not.toContain("math.factorial")
        expect(imported.get("math_factorial")!.spec.originalName).toBeUndefined()
        expect(McpConnect.sourceOf(imported.get("math_factorial")!.tool)).toEqual({ server: "self", tool: "math_factorial" })
        const { local, remote } = yield* both("math_factorial", { n: 5 })
        expect(local).toMatchObject({ isError: false, value: 120, content: [{ type: "text", text: "120" }] })
        expect(remote.content).toEqual(local.content)
        // The foreign name resolves locally, not through the server's tools.
        expect(imported.get("math.factorial")).toBeUndefined()
        const dotted = yield* both("math.factorial", { n: 5 })
        expect(dotted.local).toMatchObject({ isError: false, name: "math_factorial", value: 120 })
        expect(dotted.remote).toMatchObject({ isError: true, error: { _tag: "ToolNotFound", toolName: "math.factorial" } })
      })
    ))
})
