/**
 * `scratchpad/mcp-agent.ts` as a subprocess: an agent (scripted model) on the
 * filesystem reference server's tools under `consent` and `auditLog`. Its
 * output is deterministic (no paths, no times), it exits 0, and it removes
 * its temporary directory (it gets a `TMPDIR` of its own, checked empty after).
 */
import { spawnSync } from "node:child_process"
import { mkdtempSync, readdirSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, describe, expect, it } from "vitest"

const repo = fileURLToPath(new URL("../..", import.meta.url))
const scratch = mkdtempSync(join(tmpdir(), "mcp-agent-test-"))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

describe("scratchpad/mcp-agent.ts", () => {
  it("runs the agent on MCP tools: titles imported, a denial the model reads, an approved write, a receipt per call", () => {
    const run = spawnSync(process.execPath, ["--conditions=tinyagents-source", "scratchpad/mcp-agent.ts"], {
      cwd: repo,
      encoding: "utf8",
      timeout: 60_000,
      env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", TMPDIR: scratch }
    })
    expect(run.stderr).toBe("")
    expect(run.status).toBe(0)
    expect(run.stdout).toBe([
      "titles: List Directory, Read Text File, Write File",
      "answer (final_answer, 4 turns): Of notes.txt and todo.md, notes.txt is kept as it was (notes.txt is the user's); " +
      "the list with eggs is in shopping.txt.",
      "c1 list_directory ok mcpServer=files",
      "c2 read_text_file ok mcpServer=files",
      "c3 write_file consent_denied mcpServer=files denied by rule:keep-notes: " +
      "write_file: the call was not approved: notes.txt is the user's",
      "c4 write_file ok mcpServer=files approved by rule:new-files",
      "notes.txt: \"buy milk\\n\"",
      "shopping.txt: \"buy milk, eggs\\n\"",
      ""
    ].join("\n"))
    expect(run.stdout).not.toContain(scratch)
    expect(readdirSync(scratch)).toEqual([]) // the example removed its directory
  })
})
