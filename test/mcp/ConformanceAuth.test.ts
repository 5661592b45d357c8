/**
 * The official MCP conformance suite's authorization scenarios against `McpConnect.http` with
 * `McpAuth` (test/mcp/fixtures/conformance/authClient.ts): every `auth/*` client scenario the
 * installed suite lists, each run as `conformance client --scenario <name>` (the suite starts its
 * own authorization and MCP servers), must pass every check, except those listed in `notApplicable`
 * with the reason. Full tier: it spawns the suite once per scenario.
 */
import { spawn, spawnSync } from "node:child_process"
import { existsSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, describe, expect, it } from "vitest"

const repo = fileURLToPath(new URL("../..", import.meta.url))
const cli = join(repo, "node_modules/@modelcontextprotocol/conformance/dist/index.js")
const client = join(repo, "test/mcp/fixtures/conformance/authClient.ts")
const command = `${process.execPath} --conditions=tinyagents-source ${client}`

/** Scenarios the client does not attempt, and why (none today: all 22 of 0.1.16 pass). */
const notApplicable: Record<string, string> = {}

const work = mkdtempSync(join(tmpdir(), "conformance-auth-"))
afterAll(() => rmSync(work, { recursive: true, force: true }))

/** The `auth/*` client scenarios of the installed suite (`conformance list`). */
const scenarios = (): Array<string> => {
  if (!existsSync(cli)) return []
  const listed = spawnSync(process.execPath, [cli, "list"], { cwd: work, encoding: "utf8", timeout: 60_000 })
  return [...listed.stdout.matchAll(/^\s+- (auth\/\S+)/gm)].map((m) => m[1]!)
}

/** Runs one scenario; resolves to the suite's exit code and output. */
const runScenario = (scenario: string) =>
  new Promise<{ readonly code: number | null; readonly output: string }>((resolve) => {
    const child = spawn(process.execPath, [cli, "client", "--command", command, "--scenario", scenario, "--timeout", "60000"], {
      cwd: work,
      env: { PATH: process.env["PATH"] ?? "", HOME: process.env["HOME"] ?? "" }
    })
    let output = ""
    child.stdout.on("data", (chunk) => (output += String(chunk)))
    child.stderr.on("data", (chunk) => (output += String(chunk)))
    child.on("close", (code) => resolve({ code, output }))
  })

const listed = scenarios()

describe.skipIf(!existsSync(cli))("MCP conformance: authorization scenarios (client)", () => {
  it("the suite lists the authorization scenarios", () => {
    expect(listed.length).toBeGreaterThanOrEqual(14)
    for (const name of Object.keys(notApplicable)) expect(listed).toContain(name)
  })

  for (const scenario of listed) {
    const reason = notApplicable[scenario]
    it.skipIf(reason !== undefined)(`${scenario}${reason === undefined ? "" : ` (skipped: ${reason})`}`, async () => {
      const { code, output } = await runScenario(scenario)
      const summary = /Passed: (\d+)\/(\d+), (\d+) failed, (\d+) warnings/.exec(output)
      expect(summary, output.slice(-4000)).not.toBeNull()
      const [, passed, total, failed, warnings] = summary!.map(Number)
      expect({ failed, warnings, code }, output.slice(-4000)).toEqual({ failed: 0, warnings: 0, code: 0 })
      expect(passed).toBe(total)
      expect(passed).toBeGreaterThan(0)
    }, 120_000)
  }
})

if (!existsSync(cli)) {
  describe("MCP conformance: authorization scenarios (client)", () => {
    it.skip("skipped: no @modelcontextprotocol/conformance installed", () => {})
  })
}
