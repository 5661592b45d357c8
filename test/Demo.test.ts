import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { execFile } from "node:child_process"
import { readFileSync, rmSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { Model, Sources } from "../src/cli/inspect/index.ts"
import { type Reply, serve } from "./models/support/loopback.ts"
import { completion, runNode } from "./models/support/node.ts"

const repo = fileURLToPath(new URL("..", import.meta.url))
const row = (out: string, label: string) => new RegExp(`│ ${label} +│ +(\\d+) │`).exec(out)?.[1]

/** `node scratchpad/main.ts` with this process's environment; asynchronous, so the other runs below overlap it. */
const demo = () =>
  new Promise<{ readonly status: number | null; readonly stdout: string; readonly stderr: string }>((done) => {
    execFile(process.execPath, ["scratchpad/main.ts"], { cwd: repo, encoding: "utf8", timeout: 60_000 }, (error, stdout, stderr) => {
      done({ status: error === null ? 0 : typeof error.code === "number" ? error.code : null, stdout, stderr })
    })
  })

// Each test below is a run of the demo (a Node process, its temporary files named by its pid and a
// fresh temporary directory) against a loopback server of its own: they run concurrently, as most of
// a run is waiting on its scripted model's and tools' timers.
describe.concurrent("npm start (the demo agent)", () => {
  it("exits 0 and its summary matches the scripted scenario", async () => {
    const run = await demo()
    expect(run.stderr).toBe("")
    expect(run.status).toBe(0)
    const out = run.stdout
    expect(row(out, "tool calls")).toBe("8")
    expect(row(out, "completed")).toBe("7")
    expect(row(out, "failed: repairable")).toBe("1")
    expect(row(out, "failed: fatal")).toBe("0")
    expect(row(out, "retries")).toBe("1")
    expect(row(out, "artifacts")).toBe("1")
    expect(row(out, "turns")).toBe("5")
    // The scenario's milestones, in the live event lines.
    expect(out).toMatch(/rejected +calc +call_total_bad \[repair\] calc: invalid arguments: at "expr"/)
    expect(out).toMatch(/retrying +fetch_rate call_rate attempt 2/)
    expect(out).toMatch(/artifact +read_file +call_read_log stored as artifacts\/demo-run\/call_read_log/)
    expect(out).toContain("Revenue: 1245 kEUR = 1344.6 kUSD (rate 1.08).")
    expect(out).toContain("── finished: final_answer after 5 turn(s)")
    // Turns are numbered as the receipts number them (from 0): write_file runs in the turn the
    // demo prints as "turn 3", and its receipt (the last one printed) says "turn":3.
    let turn: string | undefined
    let turnOfWrite: string | undefined
    for (const line of out.split("\n")) {
      turn = /── turn (\d+) \(advertised/.exec(line)?.[1] ?? turn
      if (/started +write_file/.test(line)) turnOfWrite = turn
    }
    expect(turnOfWrite).toBe("3")
    expect(out).toMatch(/"tool":"write_file","callId":"call_write","runId":"demo-run","threadId":"demo-thread","turn":3,/)
    expect(out).toContain("── turn 0 (advertised")
    // Streamed: the model's text (word by word, one line per answer), and the long-running tool's
    // progress as one plain line per update (stdout is not a terminal here).
    expect(out).toMatch(/model: I'll read the notes, the sales data and the log, and index the documents\. → 4 tool call\(s\)\n/)
    expect(out).toMatch(/model: Q3 revenue was 1245 kEUR .* Report written to report\.md\. \(final answer\)\n/)
    const progress = out.split("\n").filter((line) => / progress +index_documents call_index /.test(line))
    expect(progress.map((line) => line.replace(/^.*call_index /, ""))).toEqual([
      "1/5 indexed notes.md",
      "2/5 indexed data/sales.csv",
      "3/5 indexed logs/app.log",
      "4/5 indexed report-template.md",
      "5/5 indexed glossary.md"
    ])
    expect(out).not.toContain("\r")
    expect(out).toMatch(/completed index_documents call_index in \d+ ms/)
    // Governance: consent asked for the writing tool (answered automatically, and said so, without a
    // terminal) and one hashed audit receipt per call, refused ones included.
    expect(out).toContain("write_file: auto-approved (stdin is not a terminal)")
    expect(out).toMatch(/audit +write_file +call_write audit_log:ok consent:ok/)
    expect(out).toMatch(/audit log: 8 receipts in demo-run\.jsonl/)
    expect(out).toMatch(/"argumentsSha256":"[0-9a-f]{64}"/)
    // the second part: a nested agent (its events indented), a state update, a typed final answer
    expect(out).toContain("── part 2: a typed final answer, agent state, a nested agent and a tool that asks")
    // a tool that asks: its question and the rule's answer, between the call's start and end
    const scope = out.split("\n").filter((line) => /call_scope/.test(line)).map((line) => line.replace(/^\+ +\d+ms +/, ""))
    expect(scope).toEqual([
      `started   confirm_scope call_scope {"report":"report.md"}`,
      `question  confirm_scope call_scope "Which quarter does report.md cover?"`,
      `answered  confirm_scope call_scope answered {"quarter":"Q3"} by rule:finance-policy`,
      expect.stringMatching(/^completed confirm_scope call_scope in \d+ ms$/)
    ])
    expect(out).toMatch(/\n {4}\+ +\d+ms {4}started {3}calc {7}check_sum \{"expression":"380 \+ 410 \+ 455"\}/)
    expect(out).toMatch(/completed check_figures call_check in \d+ ms/)
    expect(out).toMatch(/state after note_fact call_fact: \{"facts":\["Q3 revenue 1245 kEUR, target 1200 kEUR"\]\}/)
    expect(out).toContain(
      `Typed answer: {"revenueKeur":1245,"targetMet":true,"facts":["July to September sum to 1245 kEUR: the figure is correct."]}`
    )
    expect(out).toContain(`State: {"facts":["Q3 revenue 1245 kEUR, target 1200 kEUR"]}`)
    // the one command that opens the recorded runs in the inspector; every line of its file reads
    const file = /\nSee the runs in a browser: npm run tinyagents -- inspect (\S+\.jsonl)\n/.exec(out)?.[1]
    expect(file).toBeDefined()
    const inspection = Model.build(Sources.jsonlEntries(readFileSync(file!, "utf8")))
    rmSync(file!)
    expect(inspection.unreadable).toEqual([])
    expect(inspection.byId.get("demo-run")?.calls.length).toBe(8)
    // part 2 is a run of its own, with its nested checker's run under its call
    const review = inspection.byId.get("demo-review")
    expect(review?.calls.map((c) => c.toolName)).toEqual(expect.arrayContaining(["note_fact", "check_figures"]))
    expect(review?.children.length).toBe(1)
  })
})

/**
 * `npm start -- --live` against a loopback OpenAI-compatible server (the real
 * HTTP adapter, no network, no key from the machine): every unhappy path ends
 * with the summary or one `tinyagents demo:` line, never a stack trace.
 */
describe.concurrent("npm start -- --live (unhappy paths)", () => {
  const key = "sk-test-demo-live-0a1b2c3d4e5f"
  const live = (replies: ReadonlyArray<Reply>) =>
    Effect.gen(function*() {
      const server = yield* serve(replies)
      const run = yield* Effect.promise(() =>
        runNode(["scratchpad/main.ts", "--live"], { OPENAI_API_KEY: key, OPENAI_BASE_URL: `${server.origin}/v1` })
      )
      return { ...run, requests: server.requests }
    })

  it("no key: one line naming both variables, exit code 2", async () => {
    const run = await runNode(["scratchpad/main.ts", "--live"])
    expect(run.status).toBe(2)
    expect(run.stdout).toBe("")
    expect(run.stderr).toBe(
      `tinyagents demo: --live needs OPENAI_API_KEY (OpenAI or a compatible server) or ANTHROPIC_API_KEY; neither is set (see README "Environment variables")\n`
    )
  })

  it.live("no call passes validation (invalid arguments, unknown tool, malformed JSON): summary, a receipt each, exit code 0", () =>
    Effect.gen(function*() {
      const run = yield* live([
        {
          json: completion("Trying the tools.", [
            ["call_bad_args", "calc", "{\"expr\":\"1 + 1\"}"],
            ["call_unknown", "delete_everything", "{}"],
            ["call_malformed", "read_file", "{\"path\": \"notes.md\""]
          ])
        },
        { json: completion("I could not use the tools, so I cannot summarise Q3 revenue.") }
      ])
      expect(run.stderr).toBe("")
      expect(run.status).toBe(0)
      expect(run.stdout).toContain("tinyagents demo: live model")
      expect(run.stdout).toMatch(/rejected +calc +call_bad_args \[repair\]/)
      expect(run.stdout).toMatch(/rejected +delete_everything call_unknown \[repair\]/)
      expect(run.stdout).toMatch(/rejected +read_file +call_malformed \[repair\]/)
      expect(run.stdout).toContain("Answer: I could not use the tools, so I cannot summarise Q3 revenue.")
      expect(run.stdout).toMatch(/audit log: 3 receipts in demo-run\.jsonl/)
      expect(row(run.stdout, "tool calls")).toBe("3")
      expect(row(run.stdout, "completed")).toBe("0")
      expect(row(run.stdout, "failed: repairable")).toBe("3")
      expect(row(run.stdout, "turns")).toBe("2")
      expect(run.requests.map((r) => r.path)).toEqual(["/v1/chat/completions", "/v1/chat/completions"])
      // The model was told about every failure.
      const messages = (run.requests[1]!.json as { messages: ReadonlyArray<{ role: string }> }).messages
      expect(messages.filter((m) => m.role === "tool")).toHaveLength(3)
    }).pipe(Effect.scoped))

  it.live("every executed call fails (a missing file, a directory): summary, exit code 0", () =>
    Effect.gen(function*() {
      const run = yield* live([
        {
          json: completion(null, [
            ["call_missing", "read_file", "{\"path\":\"missing.txt\"}"],
            ["call_directory", "read_file", "{\"path\":\"data\"}"]
          ])
        },
        { json: completion("Neither file could be read.") }
      ])
      expect(run.stderr).toBe("")
      expect(run.status).toBe(0)
      expect(run.stdout).toMatch(/failed +read_file +call_missing \[repair\] .*no such file or directory/)
      expect(run.stdout).toMatch(/failed +read_file +call_directory \[repair\] .*it is a directory/)
      expect(run.stdout).toContain("Answer: Neither file could be read.")
      expect(run.stdout).toMatch(/audit log: 2 receipts in demo-run\.jsonl/)
      expect(row(run.stdout, "tool calls")).toBe("2")
      expect(row(run.stdout, "completed")).toBe("0")
      expect(row(run.stdout, "turns")).toBe("2")
      expect(run.stdout).toMatch(/│ elapsed \(ms\) +│ +\d+ │/)
    }).pipe(Effect.scoped))

  it.live("the model always answers HTTP 500: retried, then the summary and one line on stderr, exit code 1", () =>
    Effect.gen(function*() {
      const serverError: Reply = { status: 500, json: { error: { message: "The server had an error.", type: "server_error" } } }
      const run = yield* live(Array.from({ length: 10 }, () => serverError))
      expect(run.status).toBe(1)
      expect(run.stderr).toBe(
        "tinyagents demo: agent run failed (model) in turn 0: openai-chat: HTTP 500 server_error: The server had an error.\n"
      )
      // The default policy: the first attempt and 3 retries, each failure one indented warning line.
      expect(run.requests).toHaveLength(4)
      expect(run.stdout.match(/warning: chat model request failed \(openai-chat: HTTP 500/g)).toHaveLength(4)
      expect(run.stdout).toContain("── finished: failed after 1 turn(s)")
      expect(run.stdout).toContain("audit log: no receipts")
      expect(row(run.stdout, "tool calls")).toBe("0")
      expect(run.stdout).not.toMatch(/ENOENT|at .*\.ts:\d+/)
    }).pipe(Effect.scoped))
})
