/**
 * The official MCP conformance suite's client scenarios (other than authorization, see
 * ConformanceAuth.test.ts) against `McpConnect.http` (test/mcp/fixtures/conformance/client.ts):
 * `initialize`, `tools_call`, `sse-retry` (the SDK transport reconnects with GET after the `retry`
 * delay and sends `Last-Event-ID`) and `elicitation-sep1034-client-defaults` (accepted with every
 * default, through an `Approval` that approves). Each runs as `conformance client --scenario
 * <name> -o <dir>`; its `checks.json` must hold the scenario's checks, and every check that is
 * not informational must be a SUCCESS. Full tier: it spawns the suite once per scenario.
 */
import { spawn } from "node:child_process"
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, describe, expect, it } from "vitest"

const repo = fileURLToPath(new URL("../..", import.meta.url))
const cli = join(repo, "node_modules/@modelcontextprotocol/conformance/dist/index.js")
const client = join(repo, "test/mcp/fixtures/conformance/client.ts")
const command = `${process.execPath} --conditions=tinyagents-source ${client}`

/** Each scenario and the checks it must report as passed. */
const scenarios: Record<string, ReadonlyArray<string>> = {
  initialize: ["mcp-client-initialization"],
  tools_call: ["tool-add-numbers"],
  "sse-retry": ["client-sse-graceful-reconnect", "client-sse-retry-timing", "client-sse-last-event-id"],
  "elicitation-sep1034-client-defaults": [
    "client-elicitation-sep1034-string-default",
    "client-elicitation-sep1034-integer-default",
    "client-elicitation-sep1034-number-default",
    "client-elicitation-sep1034-enum-default",
    "client-elicitation-sep1034-boolean-default"
  ]
}

const work = mkdtempSync(join(tmpdir(), "conformance-client-"))
afterAll(() => rmSync(work, { recursive: true, force: true }))

interface Check {
  readonly id: string
  readonly status: "SUCCESS" | "FAILURE" | "WARNING" | "INFO" | "SKIPPED"
  readonly errorMessage?: string
}

/** Runs one scenario with its results in a directory of its own; resolves to its checks and the suite's output. */
const runScenario = (scenario: string) =>
  new Promise<{ readonly checks: ReadonlyArray<Check>; readonly output: string; readonly code: number | null }>((resolve) => {
    const results = join(work, scenario)
    const child = spawn(
      process.execPath,
      [cli, "client", "--command", command, "--scenario", scenario, "--timeout", "60000", "-o", results],
      { cwd: work, env: { PATH: process.env["PATH"] ?? "", HOME: process.env["HOME"] ?? "" } }
    )
    let output = ""
    child.stdout.on("data", (chunk) => (output += String(chunk)))
    child.stderr.on("data", (chunk) => (output += String(chunk)))
    child.on("close", (code) => {
      // the suite writes <results>/<scenario>-<timestamp>/checks.json
      const dirs = existsSync(results) ? readdirSync(results) : []
      const file = dirs.map((dir) => join(results, dir, "checks.json")).find(existsSync)
      resolve({ checks: file === undefined ? [] : JSON.parse(readFileSync(file, "utf8")), output, code })
    })
  })

describe.skipIf(!existsSync(cli))("MCP conformance: client scenarios", () => {
  for (const [scenario, expected] of Object.entries(scenarios)) {
    it(scenario, async () => {
      const { checks, code, output } = await runScenario(scenario)
      const context = output.slice(-4000)
      expect(checks.length, context).toBeGreaterThan(0)
      const graded = checks.filter((check) => check.status !== "INFO")
      expect(graded.filter((check) => check.status !== "SUCCESS"), context).toEqual([])
      expect(graded.map((check) => check.id).sort()).toEqual([...expected].sort())
      expect(code, context).toBe(0)
    }, 120_000)
  }
})

// Registered only when the suite is missing (a describe.runIf still counts its test as skipped).
if (!existsSync(cli)) {
  describe("MCP conformance: client scenarios", () => {
    it.skip("skipped: no @modelcontextprotocol/conformance installed", () => {})
  })
}
