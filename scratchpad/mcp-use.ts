// Use an MCP server's tools: spawn the reference filesystem server confined to a temporary directory, import its tools, call one.
import { Effect } from "effect"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { Executor, ToolResult, ToolServices } from "tinyagents"
import { McpConnect } from "tinyagents/mcp"
const root = mkdtempSync(join(tmpdir(), "mcp-use-"))
writeFileSync(join(root, "notes.txt"), "buy milk\n")
const server = fileURLToPath(import.meta.resolve("@modelcontextprotocol/server-filesystem/dist/index.js")) // or: npx -y @modelcontextprotocol/server-filesystem
const program = Effect.gen(function*() {
  const files = yield* McpConnect.stdio({ command: process.execPath, args: [server, root], name: "files" }) // closed with the scope
  const registry = yield* files.registry
  console.log("write_file:", JSON.stringify(registry.get("write_file")!.spec.safety)) // from the server's annotations
  const result = yield* (yield* Executor.make(registry)).run({ id: "call_1", name: "read_text_file", arguments: { path: join(root, "notes.txt") } })
  console.log(`${files.name}: ${ToolResult.textOf(result).trim()}`)
})
await Effect.runPromise(program.pipe(Effect.scoped, Effect.provide(ToolServices.layerTest()), Effect.ensuring(Effect.sync(() => rmSync(root, { recursive: true })))))
