import { describe, expect, it } from "@effect/vitest"
import { spawnSync } from "node:child_process"
import { fileURLToPath } from "node:url"

const repo = fileURLToPath(new URL("..", import.meta.url))

describe("npm start (the demo agent)", () => {
  it("exits 0 and its summary matches the scripted scenario", () => {
    const run = spawnSync(process.execPath, ["scratchpad/main.ts"], { cwd: repo, encoding: "utf8", timeout: 60_000 })
    expect(run.stderr).toBe("")
    expect(run.status).toBe(0)
    const out = run.stdout
    const row = (label: string) => new RegExp(`│ ${label} +│ +(\\d+) │`).exec(out)?.[1]
    expect(row("tool calls")).toBe("7")
    expect(row("completed")).toBe("6")
    expect(row("failed: repairable")).toBe("1")
    expect(row("failed: fatal")).toBe("0")
    expect(row("retries")).toBe("1")
    expect(row("artifacts")).toBe("1")
    expect(row("turns")).toBe("5")
    // The scenario's milestones, in the live event lines.
    expect(out).toMatch(/rejected +calc +call_total_bad \[repair\] calc: invalid arguments: at "expr"/)
    expect(out).toMatch(/retrying +fetch_rate call_rate attempt 2/)
    expect(out).toMatch(/artifact +read_file +call_read_log stored as artifacts\/demo-run\/call_read_log/)
    expect(out).toContain("Revenue: 1245 kEUR = 1344.6 kUSD (rate 1.08).")
    expect(out).toContain("── finished: final_answer after 5 turn(s)")
    // Governance: consent asked for the writing tool (answered automatically, and said so, without a
    // terminal) and one hashed audit receipt per executed call.
    expect(out).toContain("write_file: auto-approved (stdin is not a terminal)")
    expect(out).toMatch(/audit +write_file +call_write audit_log:ok consent:ok/)
    expect(out).toMatch(/audit log: 6 receipts in demo-run\.jsonl/)
    expect(out).toMatch(/"argumentsSha256":"[0-9a-f]{64}"/)
  })
})
