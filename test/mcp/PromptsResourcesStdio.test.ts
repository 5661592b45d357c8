/**
 * Prompts and resources over stdio, with spawned servers (full tier): `McpConnect`
 * against the official `@modelcontextprotocol/server-everything` (prompts with
 * arguments, templated text and blob resources, a subscription whose updates
 * start when a tool is called), and subscriptions end to end with `tinyagents mcp
 * serve` of a module that exports prompts and resources
 * (test/mcp/fixtures/promptsResources.ts), where Effect's own stdio
 * subscriptions serve.
 */
import { Effect, type Scope, Stream } from "effect"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"
import { McpConnect } from "../../src/mcp/index.ts"
import type { EventLog } from "../../src/runtime/EventSink.ts"
import * as Executor from "../../src/runtime/Executor.ts"
import * as ToolServices from "../../src/runtime/ToolServices.ts"

const everything = fileURLToPath(new URL("../../node_modules/@modelcontextprotocol/server-everything/dist/index.js", import.meta.url))

const run = <A, E>(effect: Effect.Effect<A, E, Scope.Scope | ToolServices.Hidden | EventLog>) =>
  Effect.runPromise(effect.pipe(Effect.scoped, Effect.provide(ToolServices.layerTest())))

describe("McpConnect prompts and resources: server-everything over stdio", () => {
  it("lists and gets its prompts", () =>
    run(Effect.gen(function*() {
      const connection = yield* McpConnect.stdio({ command: process.execPath, args: [everything, "stdio"] })
      const listed = yield* connection.prompts
      const args = listed.find((prompt) => prompt.name === "args-prompt")
      expect(args?.arguments).toEqual([
        { name: "city", description: "Name of the city", required: true },
        // (its optional argument's description is lost on the server's side: zod's describe before optional)
        expect.objectContaining({ name: "state", required: false })
      ])
      const got = yield* connection.getPrompt("args-prompt", { city: "Lyon" })
      expect(got.messages).toEqual([{ role: "user", content: { type: "text", text: "What's weather in Lyon?" } }])
    })), 30_000)

  it("lists, reads and subscribes to its resources", () =>
    run(Effect.gen(function*() {
      const connection = yield* McpConnect.stdio({ command: process.execPath, args: [everything, "stdio"] })
      const listed = yield* connection.resources
      expect(listed.templates.map((template) => template.uriTemplate)).toEqual(
        expect.arrayContaining(["demo://resource/dynamic/text/{resourceId}", "demo://resource/dynamic/blob/{resourceId}"])
      )
      const [text] = yield* connection.readResource("demo://resource/dynamic/text/7")
      expect(text).toMatchObject({ uri: "demo://resource/dynamic/text/7", mimeType: "text/plain" })
      expect((text as { readonly text: string }).text).toMatch(/^Resource 7: This is a plaintext resource/)
      const [blob] = yield* connection.readResource("demo://resource/dynamic/blob/7")
      expect(typeof (blob as { readonly blob: string }).blob).toBe("string")
      // Its updates start when a tool is called; subscribed when `subscribe` returns.
      const uri = "demo://resource/dynamic/text/7"
      const updates = yield* connection.subscribe(uri)
      const executor = yield* Executor.make(yield* connection.registry)
      const toggled = yield* executor.run({ id: "t1", name: "toggle-subscriber-updates", arguments: "{}" })
      expect(toggled.isError).toBe(false)
      const received = yield* Stream.runCollect(Stream.take(updates, 1)).pipe(Effect.timeout("10 seconds"))
      expect(received).toEqual([uri])
    })), 30_000)
})

const bin = fileURLToPath(new URL("../../src/cli/bin.ts", import.meta.url))
const module = fileURLToPath(new URL("./fixtures/promptsResources.ts", import.meta.url))

describe("tinyagents mcp serve of a module with prompts and resources, over stdio", () => {
  it("serves them, and sends updates of a resource with changes to a subscriber", () =>
    run(Effect.gen(function*() {
      const connection = yield* McpConnect.stdio({
        command: process.execPath,
        args: ["--conditions=tinyagents-source", bin, "mcp", "serve", module]
      })
      expect((yield* connection.prompts).map((prompt) => prompt.name)).toEqual(["review"])
      const review = yield* connection.getPrompt("review", { path: "src/a.ts", focus: "bugs" })
      expect(review.messages[0]!.content).toEqual({ type: "text", text: "Review src/a.ts for bugs (thread cli)." })
      expect(yield* connection.readResource("notes://note/a")).toEqual([{ uri: "notes://note/a", mimeType: "text/plain", text: "note a" }])
      const updates = yield* Stream.runCollect(Stream.take(Stream.unwrap(connection.subscribe("notes://clock")), 3)).pipe(
        Effect.timeout("10 seconds")
      )
      expect(updates).toEqual(["notes://clock", "notes://clock", "notes://clock"])
      const [read] = yield* connection.readResource("notes://clock")
      expect((read as { readonly text: string }).text).toMatch(/^version [1-9]\d*$/)
    })), 30_000)
})
