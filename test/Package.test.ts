/**
 * The package as a user installs it: `npm pack` (which builds `dist/` through
 * `prepack`), a fresh consumer project outside the repository that installs the
 * tarball and `effect`, a file importing every entry point, type-checked with
 * strict settings and run on Node. Nothing here reads the repository's sources
 * from the consumer: it sees only what the tarball ships.
 */
import { spawnSync } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, beforeAll, describe, expect, it } from "vitest"

const repo = fileURLToPath(new URL("..", import.meta.url))
const work = mkdtempSync(join(tmpdir(), "tinyagents-pack-"))
const consumer = join(work, "consumer")

const run = (command: string, args: ReadonlyArray<string>, cwd: string) => {
  const result = spawnSync(command, args, { cwd, encoding: "utf8", timeout: 240_000, env: { ...process.env, npm_config_fund: "false", npm_config_audit: "false" } })
  if (result.status !== 0) {
    throw new Error(`${command} ${args.join(" ")} exited ${result.status}\n${result.stdout}\n${result.stderr}`)
  }
  return result.stdout
}

const versionOf = (name: string): string =>
  (JSON.parse(readFileSync(join(repo, "node_modules", name, "package.json"), "utf8")) as { version: string }).version

// Every entry point, used the way the README uses it.
const consumerSource = `
import { Effect, Layer, Schema } from "effect"
import { Agent, ChatModel, Executor, Tool, ToolRegistry, ToolResult, ToolServices } from "tinyagents"
import { calc } from "tinyagents/tools"
import { OpenAiChat } from "tinyagents/providers"
import { OpenAiChatModel } from "tinyagents/models"
import { summary } from "tinyagents/middleware"
import { McpConnect, McpServe } from "tinyagents/mcp"
import { toToolkit } from "tinyagents/effect-ai"
import { Stores } from "tinyagents/stores"
import { layerLive } from "tinyagents/inspect"
import { tmpdir } from "node:os"
import { join } from "node:path"

const add = Tool.make("add", {
  description: "Adds two integers.",
  input: Schema.Struct({ a: Schema.Int, b: Schema.Int }),
  safety: { access: "read", idempotent: true },
  handler: ({ a, b }) => Effect.succeed(a + b)
})

const keyed = Tool.make("keyed", {
  description: "Applied once per key.",
  input: Schema.Struct({ key: Schema.String }),
  idempotency: ({ key }) => key,
  handler: ({ key }) => Effect.succeed(key)
})

// the embedded default store (node:sqlite): a replay answers the second call
const stored = Effect.gen(function*() {
  const executor = yield* Executor.make(yield* ToolRegistry.make([keyed]))
  yield* executor.run({ id: "k1", name: "keyed", arguments: { key: "once" } })
  const again = yield* executor.run({ id: "k2", name: "keyed", arguments: { key: "once" } })
  return again.idempotency?.replayed === true
}).pipe(Effect.provide(Stores.layerSqlite({ filename: join(tmpdir(), \`tinyagents-consumer-\${process.pid}.db\`) })))

const program = Effect.gen(function*() {
  const registry = yield* ToolRegistry.make([add, calc])
  const definitions = yield* OpenAiChat.toolDefinitions(ToolRegistry.all(registry).specs)
  const executor = yield* Executor.make(registry, { middleware: [summary(() => "added")] })
  const result = yield* executor.run({ id: "call_1", name: "add", arguments: "{\\"a\\":2,\\"b\\":3}" })
  const agent = yield* Agent.run({ messages: [{ role: "user", content: "2 + 3?" }], tools: registry }).pipe(
    Effect.provide(ChatModel.scripted([ChatModel.callTools([["c1", "add", { a: 2, b: 3 }]]), ChatModel.answer("5")]))
  )
  const model = OpenAiChatModel.layerConfig()
  const replayed = yield* stored
  const optional = [typeof McpConnect.stdio, typeof McpServe.serveHttp, typeof toToolkit, typeof layerLive] // loadable without their optional peers
  console.log(JSON.stringify({ tools: definitions.map((d) => d.function.name), content: ToolResult.textOf(result), answer: agent.text, layer: Layer.isLayer(model), replayed, optional }))
})

Effect.runPromise(program.pipe(Effect.provide(ToolServices.layerTest()))).catch((error) => {
  console.error(error)
  process.exit(1)
})
`

describe("the packed package", () => {
  let files: ReadonlyArray<string> = []

  beforeAll(() => {
    const packed = JSON.parse(run("npm", ["pack", "--json", "--pack-destination", work], repo)) as ReadonlyArray<{
      filename: string
      files: ReadonlyArray<{ path: string }>
    }>
    const tarball = join(work, packed[0]!.filename)
    files = packed[0]!.files.map((f) => f.path)
    mkdirSync(consumer)
    writeFileSync(join(consumer, "package.json"), JSON.stringify({ name: "consumer", private: true, type: "module" }))
    run("npm", [
      "install",
      "--prefer-offline",
      "--no-audit",
      "--no-fund",
      tarball,
      `effect@${versionOf("effect")}`,
      `@types/node@${versionOf("@types/node")}`,
      `typescript@${versionOf("typescript")}`
    ], consumer)
    writeFileSync(join(consumer, "index.ts"), consumerSource)
    writeFileSync(join(consumer, "tsconfig.json"), JSON.stringify({
      compilerOptions: {
        target: "ES2023",
        lib: ["ES2023", "DOM"],
        module: "NodeNext",
        moduleResolution: "NodeNext",
        strict: true,
        exactOptionalPropertyTypes: true,
        noUncheckedIndexedAccess: true,
        types: ["node"],
        noEmit: true
      },
      include: ["index.ts"]
    }))
  }, 300_000)

  afterAll(() => rmSync(work, { recursive: true, force: true }))

  it("ships the build, its declarations and maps, the sources they map to, and the license", () => {
    for (const entry of ["index", "tools/index", "providers/index", "agent/models/index", "governance/middleware/index", "mcp/index", "integrations/AiSdk", "integrations/LangChain", "integrations/EffectAi", "stores/index", "stores/Postgres", "stores/Redis", "durable/index", "cli/inspect/index"]) {
      expect(files).toContain(`dist/${entry}.js`)
      expect(files).toContain(`dist/${entry}.d.ts`)
      expect(files).toContain(`dist/${entry}.d.ts.map`)
      expect(files).toContain(`src/${entry}.ts`)
    }
    expect(files).toContain("LICENSE")
    expect(files).toContain("README.md")
    expect(files).toContain("docs/README.md") // the README links to the docs
    expect(files.filter((f) => f.startsWith("test/") || f.startsWith("scratchpad/") || f.startsWith("bench/"))).toEqual([])
  })

  it("installs with effect as its only required dependency", () => {
    const manifest = JSON.parse(readFileSync(join(consumer, "node_modules/tinyagents/package.json"), "utf8"))
    expect(manifest.dependencies ?? {}).toEqual({})
    // effect is the one required peer; every integration's framework is an optional peer of its own entry point.
    expect(manifest.peerDependencies.effect).toBe("^4.1.0")
    for (const name of Object.keys(manifest.peerDependencies).filter((n) => n !== "effect")) {
      expect(manifest.peerDependenciesMeta?.[name]?.optional, name).toBe(true)
    }
    for (const absent of ["@effect/platform-node", "@effect/sql-pg", "redis", "ws", "undici", "ai", "@langchain/core", "@modelcontextprotocol/sdk"]) {
      expect(existsSync(join(consumer, "node_modules", absent)), absent).toBe(false)
    }
  })

  it("type-checks a strict consumer importing every entry point, with no skipLibCheck", () => {
    run(join(consumer, "node_modules/.bin/tsc"), ["-p", "tsconfig.json"], consumer)
  })

  it("installs the tinyagents command, which runs from the build", () => {
    expect(existsSync(join(consumer, "node_modules/.bin/tinyagents"))).toBe(true)
    const version = run(process.execPath, [join(consumer, "node_modules/tinyagents/dist/cli/bin.js"), "--version"], consumer)
    expect(version).toContain("0.1.0")
  })

  // The machine's own Node (Debian's, when it is older than 22.18) cannot strip types: a .ts tools
  // module given to the command must be refused with the Node it needs, not only "Unknown file extension".
  const olderNode = ["/usr/bin/node", "/bin/node"].find((path) => {
    if (!existsSync(path)) return false
    const version = spawnSync(path, ["--version"], { encoding: "utf8" }).stdout.trim()
    const [major = 0, minor = 0] = version.replace(/^v/, "").split(".").map(Number)
    return major < 22 || (major === 22 && minor < 18)
  })
  it.skipIf(olderNode === undefined)(
    `a .ts tools module under a Node that cannot load TypeScript names the Node it needs${olderNode === undefined ? " (skipped: no Node older than 22.18 on this machine)" : ""}`,
    () => {
      writeFileSync(join(consumer, "tools.ts"), "export default []\n")
      const result = spawnSync(olderNode!, [join(consumer, "node_modules/tinyagents/dist/cli/bin.js"), "tools", "tools.ts"], { cwd: consumer, encoding: "utf8" })
      expect(result.status).toBe(2)
      expect(result.stderr).toContain("Unknown file extension")
      expect(result.stderr).toMatch(/this Node, v\d+\.\d+\.\d+, cannot load TypeScript: run the tools module with Node 24 or later/)
    }
  )

  it("runs", () => {
    const output = run(process.execPath, ["index.ts"], consumer)
    expect(JSON.parse(output)).toEqual({
      tools: ["add", "calc"],
      content: "5",
      answer: "5",
      layer: true,
      replayed: true,
      optional: ["function", "function", "function", "function"]
    })
  })
})
