/**
 * The real binary, end to end: `src/cli/bin.ts` run by Node 24 (which strips types) as a separate
 * process on a fixture tools module; checks stdout, stderr and the exit code.
 */
import { spawn, spawnSync } from "node:child_process"
import { existsSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"

const repo = fileURLToPath(new URL("../..", import.meta.url))
const bin = join(repo, "src", "cli", "bin.ts")
const local = join(repo, "node_modules", ".bin", "node") // the project's Node 24 (the `node` devDependency)
const node = existsSync(local) ? local : process.execPath

// In the repository, `tinyagents` (imported by the fixtures) resolves to src/ through this condition.
const tinyagents = (...args: ReadonlyArray<string>) => {
  const run = spawnSync(node, ["--conditions=tinyagents-source", bin, ...args], {
    cwd: repo,
    encoding: "utf8",
    timeout: 60_000,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", NO_COLOR: "1" }
  })
  return { code: run.status, stdout: run.stdout, stderr: run.stderr }
}

describe("mcp serve guards", () => {
  it("stdio: output printed while the tools module is imported goes to stderr, never the protocol's stdout", () => {
    // stdin is empty, so the server sees the client go away at once and exits.
    const run = spawnSync(node, ["--conditions=tinyagents-source", bin, "mcp", "serve", "test/cli/fixtures/noisy.ts"], {
      cwd: repo,
      encoding: "utf8",
      timeout: 60_000,
      input: "",
      env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", NO_COLOR: "1" }
    })
    expect(run.stdout).not.toContain("hello from module load")
    expect(run.stderr).toContain("hello from module load")
  })

  it("--http outside 0..65535 is a usage error (exit 2)", () => {
    for (const port of ["99999", "-5"]) {
      const run = tinyagents("mcp", "serve", "test/cli/fixtures/tools.ts", "--http", port)
      expect(run.code, `${port}: ${run.stderr}`).toBe(2)
      expect(run.stderr).not.toContain("RangeError")
    }
  })
})

describe("the tinyagents binary", () => {
  it("starts with a shebang for node", () => {
    expect(readFileSync(bin, "utf8").split("\n")[0]).toBe("#!/usr/bin/env node")
  })

  it("runs a call: the result on stdout, the live events on stderr, exit 0", () => {
    const { code, stderr, stdout } = tinyagents("call", "test/cli/fixtures/tools.ts", "add", "--input", "{\"a\":20,\"b\":22}")
    expect(stdout).toBe("42\n")
    expect(stderr).toMatch(/^started {3}add call_1 \{"a":20,"b":22\}\ncompleted add call_1 in \d+ ms\n$/)
    expect(code).toBe(0)
  })

  it("a failed call exits 1; a usage error exits 2; --version exits 0", () => {
    const failed = tinyagents("call", "test/cli/fixtures/tools.ts", "greet", "-i", "{}")
    expect(failed.code).toBe(1)
    expect(failed.stdout).toBe("greet: invalid arguments: at \"name\": Missing key\n")
    expect(failed.stderr).toContain("rejected  greet call_1 [repair]")

    const usage = tinyagents("call", "test/cli/fixtures/tools.ts", "nope")
    expect(usage.code).toBe(2)
    expect(usage.stdout).toBe("")
    expect(usage.stderr).toContain("unknown tool \"nope\"; the module has: add, greet, fail, crash")

    const version = tinyagents("--version")
    const { version: expected } = JSON.parse(readFileSync(join(repo, "package.json"), "utf8")) as { version: string }
    expect(version).toEqual({ code: 0, stdout: `tinyagents v${expected}\n`, stderr: "" })
  })

  it("a defect exits 1 with what the model reads on stdout; its own message only in the events", () => {
    const crashed = tinyagents("call", "test/cli/fixtures/tools.ts", "crash")
    expect(crashed.code).toBe(1)
    expect(crashed.stdout).toBe("internal error in tool crash\n")
    expect(crashed.stderr).toContain("failed    crash call_1 after")
    expect(crashed.stderr).toContain("Error: kaboom")
    expect(crashed.stderr).toMatch(/\nERROR\n {2}crash: internal error in tool crash\n$/)

    const quiet = tinyagents("call", "test/cli/fixtures/tools.ts", "crash", "--events", "none")
    expect(quiet.code).toBe(1)
    expect(quiet.stdout).toBe("internal error in tool crash\n")
    expect(quiet.stderr).not.toContain("kaboom")
    expect(quiet.stderr.trim()).toBe("ERROR\n  crash: internal error in tool crash")
  })

  it("mcp serve --http runs until SIGINT, then exits 130", async () => {
    const child = spawn(node, ["--conditions=tinyagents-source", bin, "mcp", "serve", "test/cli/fixtures/tools.ts", "--http", "0"], {
      cwd: repo,
      env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", NO_COLOR: "1" }
    })
    let stderr = ""
    let stdout = ""
    child.stdout.on("data", (chunk) => (stdout += String(chunk)))
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no address after 30 s: ${stderr}`)), 30_000)
      child.stderr.on("data", (chunk) => {
        stderr += String(chunk)
        const found = /http:\/\/127\.0\.0\.1:\d+\/mcp/.exec(stderr)
        if (found !== null) {
          clearTimeout(timer)
          resolve(found[0])
        }
      })
    })
    const listed = tinyagents("mcp", "tools", "--url", url)
    expect(listed.code).toBe(0)
    expect(listed.stdout).toContain("add    read     idempotent,#mcp,#mcp:tinyagents  Adds two integers.")
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)))
    child.kill("SIGINT")
    expect(await exited).toBe(130)
    expect(stdout).toBe("")
  }, 60_000)
})
