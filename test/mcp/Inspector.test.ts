/**
 * A second client nobody here wrote: the official MCP Inspector's CLI
 * (`@modelcontextprotocol/inspector-cli`, `mcp-inspector-cli --cli`) against
 * `tinyagents mcp serve --http` of a module with tools, prompts and resources
 * (test/mcp/fixtures/promptsResources.ts): tools/list, tools/call,
 * prompts/list, prompts/get, resources/list, resources/templates/list and
 * resources/read, each asserted on the JSON the Inspector prints.
 *
 * Both run on the project's Node (node_modules/.bin/node: the Inspector's
 * launcher spawns `node` from PATH). The Inspector is run from its own build
 * folder: it looks for its package.json relative to the working directory.
 * Full tier: it spawns a server and a process per request.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process"
import { existsSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"
import { afterAll, beforeAll, describe, expect, it } from "vitest"

const repo = fileURLToPath(new URL("../..", import.meta.url))
const bin = join(repo, "node_modules", ".bin")
const inspector = join(bin, "mcp-inspector-cli")
const localNode = join(bin, "node")
const node = existsSync(localNode) ? localNode : process.execPath
const module = fileURLToPath(new URL("./fixtures/promptsResources.ts", import.meta.url))
const missing = existsSync(inspector) ? undefined : "skipped: no @modelcontextprotocol/inspector-cli"

let server: ChildProcess | undefined
let url = ""

beforeAll(async () => {
  if (missing !== undefined) return
  const child = spawn(node, ["--conditions=tinyagents-source", join(repo, "src", "cli", "bin.ts"), "mcp", "serve", module, "--http", "0"], {
    stdio: ["ignore", "ignore", "pipe"]
  })
  server = child
  url = await new Promise<string>((resolve, reject) => {
    let stderr = ""
    child.stderr!.on("data", (chunk) => {
      stderr += String(chunk)
      const found = /http:\/\/127\.0\.0\.1:\d+\/mcp/.exec(stderr)
      if (found !== null) resolve(found[0])
    })
    child.once("exit", (code) => reject(new Error(`mcp serve exited with ${code}: ${stderr}`)))
  })
}, 60_000)

afterAll(() => {
  server?.kill("SIGINT")
})

/** Runs the Inspector's CLI on our server with `args`; its stdout as JSON. */
const inspect = async (...args: ReadonlyArray<string>): Promise<any> => {
  const { stdout } = await promisify(execFile)(inspector, ["--cli", url, "--transport", "http", ...args], {
    cwd: join(repo, "node_modules", "@modelcontextprotocol", "inspector-cli", "build"),
    env: { ...process.env, PATH: `${bin}:${process.env["PATH"] ?? ""}` },
    timeout: 30_000
  })
  return JSON.parse(stdout)
}

describe(`the MCP Inspector's CLI against tinyagents mcp serve${missing === undefined ? "" : ` (${missing})`}`, () => {
  it.skipIf(missing !== undefined)("lists and calls the tools", async () => {
    const listed = await inspect("--method", "tools/list")
    expect(listed.tools).toEqual([{
      name: "add",
      description: "Adds two numbers.",
      inputSchema: {
        type: "object",
        properties: { a: { type: "number" }, b: { type: "number" } },
        required: ["a", "b"],
        additionalProperties: false
      },
      annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false }
    }])
    const called = await inspect("--method", "tools/call", "--tool-name", "add", "--tool-arg", "a=2", "b=40")
    expect(called).toEqual({ content: [{ type: "text", text: "42" }], isError: false })
  }, 60_000)

  it.skipIf(missing !== undefined)("lists and gets the prompts", async () => {
    const listed = await inspect("--method", "prompts/list")
    expect(listed.prompts).toEqual([{
      name: "review",
      title: "Code review",
      description: "Asks for a review of one file.",
      arguments: [
        { name: "path", description: "the file to review", required: true },
        { name: "focus", description: "what to look at", required: false }
      ]
    }])
    const got = await inspect("--method", "prompts/get", "--prompt-name", "review", "--prompt-args", "path=src/a.ts", "focus=bugs")
    expect(got.messages).toEqual([{ role: "user", content: { type: "text", text: "Review src/a.ts for bugs (thread cli)." } }])
  }, 60_000)

  it.skipIf(missing !== undefined)("lists and reads the resources", async () => {
    const listed = await inspect("--method", "resources/list")
    expect(listed.resources).toEqual([
      { name: "readme", uri: "notes://readme", description: "The project's readme.", mimeType: "text/markdown" },
      { name: "clock", uri: "notes://clock", description: "Changes every 200 ms." }
    ])
    const templates = await inspect("--method", "resources/templates/list")
    expect(templates.resourceTemplates.map((template: { readonly uriTemplate: string }) => template.uriTemplate)).toEqual(
      expect.arrayContaining(["notes://note/{key}", "tinyagents://artifacts/{store}/{key}"])
    )
    expect(await inspect("--method", "resources/read", "--uri", "notes://readme")).toEqual({
      contents: [{ uri: "notes://readme", mimeType: "text/markdown", text: "# Notes\nTwo notes." }]
    })
    expect(await inspect("--method", "resources/read", "--uri", "notes://note/x")).toEqual({
      contents: [{ uri: "notes://note/x", mimeType: "text/plain", text: "note x" }]
    })
  }, 60_000)
})
