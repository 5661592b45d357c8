/**
 * A deferred catalogue over stdio: the real binary's `mcp serve --defer` (test/cli/fixtures/tools.ts)
 * launched by the official SDK client's `StdioClientTransport`. The stdio client is the session: it
 * lists `add` and `search_tools`, is refused a deferred tool before it searches, gets
 * `notifications/tools/list_changed` from its search, then lists and calls the tool found. Full tier
 * (it spawns a process).
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { getDefaultEnvironment, StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { compileCache } from "../support/compileCache.ts"
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"

const repo = fileURLToPath(new URL("../..", import.meta.url))
const tools = fileURLToPath(new URL("../cli/fixtures/tools.ts", import.meta.url))
const serve = [
  "--conditions=tinyagents-source",
  join(repo, "src", "cli", "bin.ts"),
  "mcp",
  "serve",
  tools,
  "--defer",
  "--loaded",
  "add",
  "--events",
  "none"
]

const textOf = (result: unknown) =>
  (result as { content: ReadonlyArray<{ type: string; text?: string }> }).content.map((block) => block.text).join("")

const listed = async (client: Client) => (await client.listTools()).tools.map((t) => t.name)

describe("mcp serve --defer over stdio, with the official SDK client", () => {
  it("the stdio client is the session: refused, searches, is told the list changed, lists and calls what it found", async () => {
    const client = new Client({ name: "serve-tool-search-stdio", version: "1.0.0" })
    const changes: Array<string> = []
    client.setNotificationHandler(ToolListChangedNotificationSchema, (notification) => {
      changes.push(notification.method)
    })
    await client.connect(new StdioClientTransport({ command: process.execPath, args: serve, cwd: repo, stderr: "pipe", env: { ...getDefaultEnvironment(), ...compileCache } }))
    try {
      expect(client.getServerCapabilities()?.tools?.listChanged).toBe(true)
      expect(await listed(client)).toEqual(["add", "search_tools"])
      const refused = await client.callTool({ name: "greet", arguments: { name: "Ada" } })
      expect(refused.isError).toBe(true)
      expect(textOf(refused)).toBe(
        "tool \"greet\" is not loaded yet: call search_tools first with what you need, then call a tool it returns; " +
          "available tools: add, search_tools"
      )
      const found = await client.callTool({ name: "search_tools", arguments: { query: "greet someone" } })
      expect(found.structuredContent).toEqual({
        query: "greet someone",
        tools: [{ name: "greet", description: "Greets someone with the configured word." }]
      })
      const deadline = Date.now() + 5_000
      while (changes.length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20))
      expect(changes).toEqual(["notifications/tools/list_changed"])
      expect(await listed(client)).toEqual(["add", "greet", "search_tools"])
      const greeted = await client.callTool({ name: "greet", arguments: { name: "Ada" } })
      expect(greeted.structuredContent).toEqual({ text: "Hello, Ada!" })
    } finally {
      await client.close()
    }
  }, 60_000)
})
