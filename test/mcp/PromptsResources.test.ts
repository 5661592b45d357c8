/**
 * Prompts and resources both ways: `McpPrompt` / `McpResource` served by
 * `McpServe` (in process, Streamable HTTP) and read back with `McpConnect`
 * (arguments derived from the schema and validated, messages of every kind,
 * static / binary / templated reads, errors that say what failed and never
 * what a defect held, capabilities only when there are some, completions,
 * subscriptions over HTTP). Over stdio, with spawned servers:
 * PromptsResourcesStdio.test.ts (full tier).
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { Data, Effect, Logger, Schema, type Scope, Stream } from "effect"
import { describe, expect, it } from "vitest"
import * as Tool from "../../src/contract/Tool.ts"
import * as ToolRegistry from "../../src/contract/ToolRegistry.ts"
import { McpConnect, McpPrompt, McpResource, McpServe } from "../../src/mcp/index.ts"
import { RunContext } from "../../src/runtime/RunContext.ts"
import * as StoreRegistry from "../../src/runtime/StoreRegistry.ts"
import * as ToolServices from "../../src/runtime/ToolServices.ts"

const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="

class Jammed extends Data.TaggedError("Jammed")<{ readonly message: string }> {}

const echo = Tool.make("echo", {
  description: "Echoes.",
  input: Schema.Struct({ text: Schema.String }),
  safety: { access: "read", idempotent: true },
  handler: ({ text }) => Effect.succeed(text)
})

const prompts = [
  McpPrompt.make("summarize", {
    title: "Summarize",
    description: "Summarize a note.",
    arguments: Schema.Struct({
      key: Schema.String.annotate({ description: "the note's key" }),
      words: Schema.optionalKey(Schema.FiniteFromString).annotate({ description: "at most this many words" })
    }),
    // the same services as the tools: the note comes from the server's store
    handler: ({ key, words }) =>
      Effect.gen(function*() {
        const notes = yield* StoreRegistry.store("notes")
        const text = yield* Effect.orDie(notes.get(key))
        const run = yield* RunContext
        return {
          description: `summary of ${key}`,
          messages: [
            { role: "user", content: { type: "text", text: `Summarize in ${words ?? 50} words (${run.runId}):` } },
            { role: "user", content: { type: "resource", resource: { uri: `notes://note/${key}`, mimeType: "text/plain", text: text ?? "" } } },
            { role: "assistant", content: { type: "image", data: PNG, mimeType: "image/png" } }
          ]
        } as const
      })
  }),
  McpPrompt.make("jammed", {
    description: "Always fails.",
    handler: () => Effect.fail(new Jammed({ message: "the widget is jammed" }))
  }),
  McpPrompt.make("broken", {
    description: "Always dies.",
    handler: () => Effect.die(new Error("secret internals at /srv/db"))
  })
]

const withCompletions = McpPrompt.make("pick", {
  arguments: Schema.Struct({ key: Schema.String }),
  completions: { key: (prefix) => Effect.succeed(["groceries", "garden"].filter((key) => key.startsWith(prefix))) },
  handler: ({ key }) => Effect.succeed(key)
})

const resources = [
  McpResource.make("notes://readme", {
    name: "readme",
    title: "Readme",
    description: "About the notes.",
    mimeType: "text/markdown",
    read: Effect.succeed("# Notes")
  }),
  McpResource.make("notes://logo", {
    name: "logo",
    mimeType: "image/png",
    read: Effect.sync(() => Uint8Array.from(Buffer.from(PNG, "base64")))
  }),
  McpResource.template("notes://note/{key}", {
    name: "note",
    description: "One note by key.",
    mimeType: "text/plain",
    read: ({ key }, uri) =>
      Effect.flatMap(StoreRegistry.store("notes"), (notes) => Effect.orDie(notes.get(key))).pipe(
        Effect.flatMap((text) => text === undefined ? Effect.fail(new McpResource.ResourceNotFound({ uri })) : Effect.succeed(text))
      )
  }),
  McpResource.make("notes://broken", { name: "broken", read: Effect.die(new Error("secret internals at /srv/db")) }),
  McpResource.template("notes://folder/{folder}/{key}", {
    name: "filed",
    read: ({ folder, key }) => Effect.succeed(`${folder}/${key}`),
    completions: { folder: (prefix) => Effect.succeed(["inbox", "archive", "ideas"].filter((f) => f.startsWith(prefix))) }
  })
]

const withServer = <A, E>(
  options: Pick<McpServe.HttpOptions<RunContext | StoreRegistry.StoreRegistry>, "prompts" | "resources">,
  use: (connection: McpConnect.Connection, url: string) => Effect.Effect<A, E, Scope.Scope>
) =>
  Effect.runPromise(
    Effect.gen(function*() {
      const notes = yield* StoreRegistry.store("notes")
      yield* notes.set("groceries", "eggs, milk, bread")
      const server = yield* McpServe.serveHttp(yield* ToolRegistry.make([echo]), { port: 0, ...options })
      const connection = yield* McpConnect.http({ url: server.url })
      return yield* use(connection, server.url)
    }).pipe(Effect.scoped, Effect.provide(ToolServices.layerTest({ runId: "prompts-run" })))
  )

const failure = <A, E>(effect: Effect.Effect<A, E>) => Effect.map(Effect.flip(effect), (error) => String((error as Error).message))

describe("McpServe prompts and resources, read with McpConnect", () => {
  it("lists prompts with their arguments derived from the schema", () =>
    withServer({ prompts, resources }, (connection) =>
      Effect.gen(function*() {
        const listed = yield* connection.prompts
        expect(listed.map((prompt) => prompt.name)).toEqual(["summarize", "jammed", "broken"])
        expect(listed[0]).toEqual({
          name: "summarize",
          title: "Summarize",
          description: "Summarize a note.",
          arguments: [
            { name: "key", description: "the note's key", required: true },
            { name: "words", description: "at most this many words", required: false }
          ]
        })
        expect(listed[1]!.arguments).toEqual([])
      })))

  it("gets a prompt: arguments decoded, services provided, text, resource and image messages", () =>
    withServer({ prompts, resources }, (connection) =>
      Effect.gen(function*() {
        const result = yield* connection.getPrompt("summarize", { key: "groceries", words: "5" })
        expect(result).toEqual({
          description: "summary of groceries",
          messages: [
            { role: "user", content: { type: "text", text: "Summarize in 5 words (prompts-run):" } },
            {
              role: "user",
              content: { type: "resource", resource: { uri: "notes://note/groceries", mimeType: "text/plain", text: "eggs, milk, bread" } }
            },
            { role: "assistant", content: { type: "image", data: PNG, mimeType: "image/png" } }
          ]
        })
      })))

  it("refuses invalid arguments, and reports failures and defects as errors that say which prompt", () =>
    withServer({ prompts, resources }, (connection) =>
      Effect.gen(function*() {
        const missing = yield* failure(connection.getPrompt("summarize", {}))
        expect(missing).toContain("Invalid arguments for prompt summarize")
        expect(missing).toContain('["key"]')
        expect(yield* failure(connection.getPrompt("summarize", { key: "groceries", words: "many" })))
          .toContain("Invalid arguments for prompt summarize")
        expect(yield* failure(connection.getPrompt("jammed"))).toContain("prompt jammed failed: the widget is jammed")
        const broken = yield* failure(connection.getPrompt("broken"))
        expect(broken).toContain("internal error in prompt broken")
        expect(broken).not.toContain("secret")
        expect(yield* failure(connection.getPrompt("nope"))).toContain("cannot get a prompt from")
      })))

  it("lists resources and templates (the artifacts' template included), and reads text, bytes and templates", () =>
    withServer({ prompts, resources }, (connection) =>
      Effect.gen(function*() {
        const listed = yield* connection.resources
        expect(listed.resources).toEqual([
          { uri: "notes://readme", name: "readme", title: "Readme", description: "About the notes.", mimeType: "text/markdown" },
          { uri: "notes://logo", name: "logo", mimeType: "image/png" },
          { uri: "notes://broken", name: "broken" }
        ])
        expect(listed.templates.map((template) => template.uriTemplate)).toEqual(
          expect.arrayContaining(["notes://note/{key}", "notes://folder/{folder}/{key}", "tinyagents://artifacts/{store}/{key}"])
        )
        expect(yield* connection.readResource("notes://readme")).toEqual([
          { uri: "notes://readme", mimeType: "text/markdown", text: "# Notes" }
        ])
        expect(yield* connection.readResource("notes://logo")).toEqual([
          { uri: "notes://logo", mimeType: "image/png", blob: PNG }
        ])
        expect(yield* connection.readResource("notes://note/groceries")).toEqual([
          { uri: "notes://note/groceries", mimeType: "text/plain", text: "eggs, milk, bread" }
        ])
        expect(yield* failure(connection.readResource("notes://note/nothing"))).toContain("Resource not found: notes://note/nothing")
        const broken = yield* failure(connection.readResource("notes://broken"))
        expect(broken).toContain("internal error reading resource notes://broken")
        expect(broken).not.toContain("secret")
      })))

  it("completes a prompt's argument and a template's parameter; reads a template of two parameters", () =>
    withServer({ prompts: [...prompts, withCompletions], resources }, (connection, url) =>
      Effect.gen(function*() {
        const client = new Client({ name: "probe", version: "1" })
        yield* Effect.promise(() => client.connect(new StreamableHTTPClientTransport(new URL(url))))
        const folder = yield* Effect.promise(() =>
          client.complete({
            ref: { type: "ref/resource", uri: "notes://folder/{folder}/{key}" },
            argument: { name: "folder", value: "i" }
          })
        )
        const key = yield* Effect.promise(() =>
          client.complete({ ref: { type: "ref/prompt", name: "pick" }, argument: { name: "key", value: "gr" } })
        )
        yield* Effect.promise(() => client.close())
        expect(folder.completion).toEqual({ values: ["inbox", "ideas"], total: 2, hasMore: false })
        expect(key.completion).toEqual({ values: ["groceries"], total: 1, hasMore: false })
        expect(yield* connection.readResource("notes://folder/inbox/a%20b")).toEqual([{ uri: "notes://folder/inbox/a%20b", text: "inbox/a b" }])
      })))

  it("a scoped read's finalizers run when its request ends, not when the server stops", async () => {
    const finalized: Array<string> = []
    const scoped = McpResource.template("notes://scoped/{key}", {
      name: "scoped",
      read: ({ key }) =>
        Effect.as(Effect.addFinalizer(() => Effect.sync(() => void finalized.push(key))), `read ${key}`)
    })
    const during = await Effect.runPromise(
      Effect.gen(function*() {
        const server = yield* McpServe.serveHttp(yield* ToolRegistry.make([echo]), { port: 0, resources: [scoped] })
        const connection = yield* McpConnect.http({ url: server.url })
        expect(yield* connection.readResource("notes://scoped/a")).toEqual([{ uri: "notes://scoped/a", text: "read a" }])
        expect(yield* connection.readResource("notes://scoped/b")).toEqual([{ uri: "notes://scoped/b", text: "read b" }])
        return [...finalized]
      }).pipe(Effect.scoped, Effect.provide(ToolServices.layerTest({ runId: "prompts-run" })))
    )
    expect(during).toEqual(["a", "b"])
  })

  it("a handler's plain Effect.log is info on the server, whatever level the client set with logging/setLevel", async () => {
    const levels: Array<string> = []
    const logs = Logger.make(({ logLevel, message }) => {
      if (String(message).includes("handler says")) levels.push(logLevel)
    })
    const loud = McpPrompt.make("loud", { handler: () => Effect.as(Effect.log("handler says hi"), "hi") })
    const read = McpResource.make("notes://loud", { name: "loud", read: Effect.as(Effect.log("handler says hi"), "hi") })
    await Effect.runPromise(
      Effect.gen(function*() {
        const server = yield* McpServe.serveHttp(yield* ToolRegistry.make([echo]), { port: 0, prompts: [loud], resources: [read] })
        yield* Effect.promise(async () => {
          const client = new Client({ name: "probe", version: "1" })
          await client.connect(new StreamableHTTPClientTransport(new URL(server.url)))
          await client.setLoggingLevel("emergency")
          await client.getPrompt({ name: "loud" })
          await client.readResource({ uri: "notes://loud" })
          await client.close()
        })
      }).pipe(
        Effect.scoped,
        Effect.provide(ToolServices.layerTest({ runId: "prompts-run" })),
        Effect.provide(Logger.layer([logs]))
      )
    )
    expect(levels).toEqual(["Info", "Info"])
  })

  it("advertises prompts only when some are served", () =>
    withServer({}, (connection, url) =>
      Effect.gen(function*() {
        expect(yield* connection.prompts).toEqual([])
        const client = new Client({ name: "probe", version: "1" })
        yield* Effect.promise(() => client.connect(new StreamableHTTPClientTransport(new URL(url))))
        const capabilities = client.getServerCapabilities()
        yield* Effect.promise(() => client.close())
        expect(capabilities?.prompts).toBeUndefined()
        // the artifacts' template is always there
        expect(capabilities?.resources).toBeDefined()
      })))

  it("subscriptions over HTTP: advertised when a resource can change, updates to the sessions that subscribed", () => {
    let version = 0
    const clock = McpResource.make("notes://clock", {
      name: "clock",
      read: Effect.sync(() => `version ${version}`),
      changes: Stream.tick("100 millis").pipe(Stream.map(() => void version++))
    })
    return withServer({ resources: [...resources, clock] }, (connection, url) =>
      Effect.gen(function*() {
        const client = new Client({ name: "probe", version: "1" })
        yield* Effect.promise(() => client.connect(new StreamableHTTPClientTransport(new URL(url))))
        expect(client.getServerCapabilities()?.resources).toEqual({ listChanged: true, subscribe: true })
        // a session that never subscribed to the URI gets nothing (one subscribed to a prefix of it neither)
        const unsubscribed: Array<string> = []
        client.fallbackNotificationHandler = async (notification) => {
          unsubscribed.push(notification.method)
        }
        yield* Effect.promise(() => client.subscribeResource({ uri: "notes://" }))
        const updates = yield* Stream.runCollect(Stream.take(Stream.unwrap(connection.subscribe("notes://clock")), 3)).pipe(
          Effect.timeout("10 seconds")
        )
        expect(updates).toEqual(["notes://clock", "notes://clock", "notes://clock"])
        yield* Effect.promise(() => client.close())
        expect(unsubscribed).not.toContain("notifications/resources/updated")
        const raw = yield* Effect.promise(() =>
          fetch(url, {
            method: "POST",
            headers: { "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-session-id": "no-such-session" },
            body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "resources/subscribe", params: { uri: "notes://clock" } })
          })
        )
        // an unknown session is refused by Effect's server, as any request of it
        expect(raw.status).toBe(404)
      }))
  })

  it("refuses a URI template that is not made of simple {param}s, and two prompts of one name", async () => {
    const exit = await Effect.runPromiseExit(
      Effect.flatMap(ToolRegistry.make([echo]), (registry) =>
        McpServe.serveHttp(registry, {
          port: 0,
          resources: [McpResource.template("notes://{+path}", { name: "bad", read: () => Effect.succeed("") })]
        })).pipe(Effect.scoped, Effect.provide(ToolServices.layerTest()))
    )
    expect(exit._tag).toBe("Failure")
    expect(JSON.stringify(exit)).toContain("is not a simple {param} expression")
    const twice = await Effect.runPromiseExit(
      Effect.flatMap(ToolRegistry.make([echo]), (registry) =>
        McpServe.serveHttp(registry, { port: 0, prompts: [withCompletions, withCompletions] })).pipe(
          Effect.scoped,
          Effect.provide(ToolServices.layerTest())
        )
    )
    expect(JSON.stringify(twice)).toContain("two prompts named pick")
  })
})
