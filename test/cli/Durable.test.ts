/**
 * `tinyagents durable` in process (`Cli.run`): its help, and the usage errors it refuses before
 * touching a journal. The command at work (approving a run whose runner was killed, from another
 * process) is tested end to end in `test/durable/Approve.test.ts`.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { TestConsole } from "effect/testing"
import * as Cli from "../../src/cli/Cli.ts"

const ansi = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, "g")
const lines = (entries: ReadonlyArray<unknown>) => entries.map((line) => String(line).replace(ansi, "")).join("\n")

const cli = (...args: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const exit = yield* Effect.exit(Cli.run(args, { version: "1.2.3" }))
    return { code: Cli.exitCode(exit), stdout: lines(yield* TestConsole.logLines), stderr: lines(yield* TestConsole.errorLines) }
  }).pipe(Effect.provide([Cli.layer, Layer.fresh(TestConsole.layer)]))

describe("tinyagents durable", () => {
  it.effect("help lists approve and status, and approve's flags", () =>
    Effect.gen(function*() {
      const group = yield* cli("durable", "--help")
      assert.strictEqual(group.code, 0)
      for (const text of ["approve", "status"]) assert.include(group.stdout, text)
      const approve = yield* cli("durable", "approve", "--help")
      assert.strictEqual(approve.code, 0)
      for (const text of ["<run-id>", "<call-id>", "--db", "--postgres", "--workflow", "--deny", "--reason", "--by"]) {
        assert.include(approve.stdout, text)
      }
    }))

  it.effect("usage errors exit 2 with the reason: no journal, two journals, a missing file, --reason without --deny", () =>
    Effect.gen(function*() {
      const cases = [
        [["durable", "approve", "r1", "c1", "--workflow", "w"], "name one journal: --db <sqlite file> or --postgres <url>"],
        [
          ["durable", "approve", "r1", "c1", "--workflow", "w", "--db", "x.db", "--postgres", "postgres://localhost/db"],
          "name one journal"
        ],
        [["durable", "status", "r1", "--workflow", "w", "--db", "/nonexistent/journal.db"], "no such journal file: /nonexistent/journal.db"],
        [["durable", "approve", "r1", "c1", "--workflow", "w", "--db", "x.db", "--reason", "why"], "--reason goes with --deny"],
        [["durable", "approve", "r1", "--workflow", "w", "--db", "x.db"], "Missing required argument"]
      ] as const
      for (const [args, message] of cases) {
        const { code, stderr } = yield* cli(...args)
        assert.strictEqual(code, 2, `${args.join(" ")}: ${stderr}`)
        assert.include(stderr, message)
      }
    }))
})
