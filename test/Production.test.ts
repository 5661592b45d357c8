/**
 * The production set-up (scratchpad/production.ts, shown in the README) run as a child process in an
 * empty working directory, against a loopback OpenAI-compatible server: the note lands in
 * `.tinyagents/stores.sqlite`, every event in `.tinyagents/events.jsonl`, and a second run appends to both.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { DatabaseSync } from "node:sqlite"
import { serve } from "./models/support/loopback.ts"
import { completion, repo, type Run, runNode } from "./models/support/node.ts"

const script = join(repo, "scratchpad/production.ts")
const key = "sk-test-production-0a1b2c3d4e5f"

/** Runs the example with `cwd` as its working directory and exactly `env` (plus PATH). */
const runIn = (cwd: string, env: Readonly<Record<string, string>>): Promise<Run> => runNode([script], env, 60_000, cwd)

const tempDir = Effect.acquireRelease(
  Effect.sync(() => mkdtempSync(join(tmpdir(), "tinyagents-production-"))),
  (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
)

describe("the production set-up (scratchpad/production.ts)", () => {
  it.live("without OPENAI_API_KEY: one line naming the variable, exit code 1", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const run = yield* Effect.promise(() => runIn(dir, {}))
      assert.strictEqual(run.status, 1)
      assert.strictEqual(run.stdout, "")
      assert.match(run.stderr, /^tinyagents production: missing environment variable OPENAI_API_KEY [^\n]*\n$/)
    }).pipe(Effect.scoped))

  it.live("against a loopback model: the note in .tinyagents/stores.sqlite, the events in .tinyagents/events.jsonl, twice", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const turns = (text: string) => [
        { json: completion(null, [["call_1", "save_note", JSON.stringify({ key: "plumber", text })]]) },
        { json: completion("Noted.") }
      ]
      const server = yield* serve([...turns("Tuesday"), ...turns("Wednesday")])
      const env = { OPENAI_API_KEY: key, OPENAI_BASE_URL: `${server.origin}/v1`, OPENAI_MODEL: "loopback-model" }
      const first = yield* Effect.promise(() => runIn(dir, env))
      assert.strictEqual(first.stderr, "")
      assert.strictEqual(first.status, 0)
      const [answer, summary] = first.stdout.trimEnd().split("\n")
      assert.strictEqual(answer, "Noted.")
      assert.match(summary!, /^run-[0-9a-f-]{36}: 1 tool call\(s\); events in \.tinyagents\/events\.jsonl$/)
      const runId = summary!.split(":")[0]!

      const second = yield* Effect.promise(() => runIn(dir, env))
      assert.strictEqual(second.status, 0, second.stderr)
      const secondRunId = second.stdout.trimEnd().split("\n")[1]!.split(":")[0]!
      assert.notStrictEqual(secondRunId, runId)

      const db = new DatabaseSync(join(dir, ".tinyagents", "stores.sqlite"), { readOnly: true })
      const notes = db.prepare("SELECT id, value FROM tinyagents_store WHERE id LIKE 'notes/%'").all()
      const limits = db.prepare("SELECT count(*) AS n FROM tinyagents_rate_limits").get() as { n: number }
      db.close()
      assert.deepStrictEqual(notes.map((row) => [row["id"], Buffer.from(row["value"] as Uint8Array).toString("utf8")]), [
        ["notes/household/plumber", "Wednesday"]
      ])
      assert.isAtLeast(limits.n, 1)

      const events = readFileSync(join(dir, ".tinyagents", "events.jsonl"), "utf8").trimEnd().split("\n")
        .map((line) => JSON.parse(line) as { _tag: string; runId: string; threadId: string })
      const tagsOf = (id: string) => events.filter((e) => e.runId === id).map((e) => e._tag)
      for (const id of [runId, secondRunId]) {
        assert.deepStrictEqual(tagsOf(id), [
          "agent.turn_started",
          "agent.model_responded",
          "tool.started",
          "tool.audit",
          "tool.completed",
          "agent.turn_started",
          "agent.model_responded",
          "agent.finished"
        ])
      }
      assert.isTrue(events.every((e) => e.threadId === "household"))
    }).pipe(Effect.scoped))
})
