/**
 * The official MCP conformance suite's server scenarios against `tinyagents mcp serve
 * test/mcp/fixtures/conformance/server.ts --http 0`, a real process: the suite runs once
 * (`conformance server --url <url> --suite all -o <dir>`, in a temporary directory), and each
 * scenario's `checks.json` must hold no FAILURE, except the scenarios listed in `expectedFailures`
 * with the reason (a listed scenario that passes fails too, so that the list stays true). Every
 * scenario the suite lists must have run. Full tier: it spawns the server and the suite.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process"
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, beforeAll, describe, expect, it } from "vitest"

const repo = fileURLToPath(new URL("../..", import.meta.url))
const suite = join(repo, "node_modules/@modelcontextprotocol/conformance/dist/index.js")
const bin = join(repo, "src/cli/bin.ts")
const tools = join(repo, "test/mcp/fixtures/conformance/server.ts")
const local = join(repo, "node_modules/.bin/node") // the project's Node 24 (the `node` devDependency)
const node = existsSync(local) ? local : process.execPath
const missing = existsSync(suite) ? undefined : "skipped: no @modelcontextprotocol/conformance"

/** Scenarios that may fail, each with why (none today: all 32 pass). */
const expectedFailures: Readonly<Record<string, string>> = {}

interface Check {
  readonly id: string
  readonly status: "SUCCESS" | "FAILURE" | "WARNING" | "INFO" | "SKIPPED"
  readonly errorMessage?: string
}

const env = { PATH: process.env["PATH"] ?? "", HOME: process.env["HOME"] ?? "", NO_COLOR: "1" }
const work = mkdtempSync(join(tmpdir(), "conformance-server-"))
let server: ChildProcess | undefined
let output = ""
/** The checks of each scenario that ran, by scenario. */
const results = new Map<string, ReadonlyArray<Check>>()

/** The server scenarios the suite lists (`conformance list --server`). */
const listed = (): ReadonlyArray<string> => {
  const list = spawnSync(node, [suite, "list", "--server"], { encoding: "utf8", env })
  return [...list.stdout.matchAll(/^\s+- (\S+)/gm)].map((match) => match[1]!)
}

/** Starts the server; resolves to the URL it prints on stderr. */
const startServer = () =>
  new Promise<string>((resolve, reject) => {
    const child = spawn(node, ["--conditions=tinyagents-source", bin, "mcp", "serve", tools, "--http", "0"], {
      cwd: repo,
      env
    })
    server = child
    let stderr = ""
    const timer = setTimeout(() => reject(new Error(`no address after 30 s: ${stderr}`)), 30_000)
    child.stderr.on("data", (chunk) => {
      stderr += String(chunk)
      const found = /http:\/\/127\.0\.0\.1:\d+\/mcp/.exec(stderr)
      if (found !== null) {
        clearTimeout(timer)
        resolve(found[0])
      }
    })
    child.once("exit", (code) => reject(new Error(`the server exited (${code}): ${stderr}`)))
  })

/** Runs the whole suite against `url`; fills `results` from `<work>/results/server-<scenario>-<time>/checks.json`. */
const runSuite = (url: string) =>
  new Promise<void>((resolve) => {
    const child = spawn(node, [suite, "server", "--url", url, "--suite", "all", "-o", "results"], { cwd: work, env })
    child.stdout.on("data", (chunk) => (output += String(chunk)))
    child.stderr.on("data", (chunk) => (output += String(chunk)))
    child.on("close", () => {
      const dir = join(work, "results")
      for (const entry of existsSync(dir) ? readdirSync(dir) : []) {
        const scenario = /^server-(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$/.exec(entry)?.[1]
        const file = join(dir, entry, "checks.json")
        if (scenario !== undefined && existsSync(file)) results.set(scenario, JSON.parse(readFileSync(file, "utf8")))
      }
      resolve()
    })
  })

const scenarios = missing === undefined ? listed() : []

beforeAll(async () => {
  if (missing !== undefined) return
  await runSuite(await startServer())
}, 240_000)

afterAll(() => {
  server?.kill("SIGINT")
  rmSync(work, { recursive: true, force: true })
})

describe("the MCP conformance suite's server scenarios against tinyagents mcp serve --http", () => {
  it.skipIf(missing !== undefined)("the suite lists server scenarios, and every one of them ran", () => {
    expect(scenarios.length).toBeGreaterThanOrEqual(30)
    expect([...results.keys()].sort(), output).toEqual([...scenarios].sort())
    for (const scenario of Object.keys(expectedFailures)) expect(scenarios).toContain(scenario)
  })

  for (const scenario of missing === undefined ? scenarios : ["(none)"]) {
    it.skipIf(missing !== undefined)(scenario, () => {
      const checks = results.get(scenario)
      expect(checks, `no checks.json for ${scenario}:\n${output}`).toBeDefined()
      expect(checks!.length).toBeGreaterThan(0)
      const failures = checks!.filter((check) => check.status === "FAILURE")
        .map((check) => `${check.id}: ${check.errorMessage ?? ""}`)
      const reason = expectedFailures[scenario]
      if (reason === undefined) expect(failures).toEqual([])
      else expect(failures, `${scenario} passes now: remove it from expectedFailures (${reason})`).not.toEqual([])
    })
  }
})
