/**
 * `ToolServices.layer`: an application's hidden services in one layer, with the embedded defaults
 * (stores in a SQLite file, events in a JSON-lines file under `.tinyagents/`), and clear errors for
 * options it cannot use.
 */
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"
import { RateLimiter } from "effect/persistence"
import { TestConsole } from "effect/testing"
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { DatabaseSync } from "node:sqlite"
import { EventSink, Executor, RunContext, StoreRegistry, Tool, ToolRegistry, ToolResult, ToolServices } from "../src/index.ts"

const saveNote = Tool.make("save_note", {
  description: "Saves a note.",
  input: Schema.Struct({ key: Schema.String, text: Schema.String }),
  output: Schema.Struct({ saved: Schema.String, thread: Schema.String }),
  services: [RunContext.RunContext, StoreRegistry.StoreRegistry],
  safety: { access: "write", idempotent: true },
  handler: ({ key, text }) =>
    Effect.gen(function*() {
      const run = yield* RunContext.RunContext
      yield* Effect.orDie((yield* StoreRegistry.store("notes")).set(`${run.threadId}/${key}`, text))
      return { saved: key, thread: run.threadId }
    })
})

const saveOnce = Effect.gen(function*() {
  const executor = yield* Executor.make(yield* ToolRegistry.make([saveNote]))
  return yield* executor.run({ id: "call_1", name: "save_note", arguments: { key: "todo", text: "milk" } })
})

/** A fresh directory that becomes the working directory for `f`, then is removed. */
const inTempDir = <A, E>(f: (dir: string) => Effect.Effect<A, E>) =>
  Effect.acquireUseRelease(
    Effect.sync(() => {
      const dir = mkdtempSync(join(tmpdir(), "tinyagents-services-"))
      const previous = process.cwd()
      process.chdir(dir)
      return { dir, previous }
    }),
    ({ dir }) => f(dir),
    ({ dir, previous }) =>
      Effect.sync(() => {
        process.chdir(previous)
        rmSync(dir, { recursive: true, force: true })
      })
  )

const rows = (file: string, sql: string): Array<Record<string, unknown>> => {
  const db = new DatabaseSync(file, { readOnly: true })
  try {
    return db.prepare(sql).all() as Array<Record<string, unknown>>
  } finally {
    db.close()
  }
}

describe("ToolServices.layer", () => {
  it.live("defaults: stores in .tinyagents/stores.sqlite, events in .tinyagents/events.jsonl, a generated run id", () =>
    inTempDir((dir) =>
      Effect.gen(function*() {
        const { result, run } = yield* Effect.all({ result: saveOnce, run: RunContext.RunContext }).pipe(
          Effect.provide(ToolServices.layer())
        )
        assert.strictEqual(ToolResult.textOf(result), `{"saved":"todo","thread":"${run.runId}"}`)
        assert.match(run.runId, /^run-[0-9a-f-]{36}$/)
        assert.strictEqual(run.threadId, run.runId)
        assert.strictEqual(run.turn, 0)

        const stored = rows(join(dir, ".tinyagents", "stores.sqlite"), "SELECT id, value FROM tinyagents_store")
        assert.deepStrictEqual(stored.map((row) => [row["id"], Buffer.from(row["value"] as Uint8Array).toString("utf8")]), [
          [`notes/${run.runId}/todo`, "milk"]
        ])

        const events = yield* EventSink.readJsonl(join(dir, ".tinyagents", "events.jsonl")).pipe(Effect.provide(NodeFileSystem.layer))
        assert.deepStrictEqual(events.map((e) => [e._tag, e.runId, "toolCallId" in e ? e.toolCallId : ""]), [
          ["tool.started", run.runId, "call_1"],
          ["tool.completed", run.runId, "call_1"]
        ])
      })
    ))

  it.live("the files outlive the layer: a second layer on the same directory reads the notes and appends events", () =>
    inTempDir((dir) =>
      Effect.gen(function*() {
        const options = { run: { threadId: "shop", runId: "run-1" } }
        yield* Effect.provide(saveOnce, ToolServices.layer(options))
        const read = Effect.flatMap(StoreRegistry.store("notes"), (notes) => notes.get("shop/todo"))
        assert.strictEqual(yield* Effect.provide(read, ToolServices.layer({ ...options, run: { runId: "run-2" } })), "milk")
        yield* Effect.provide(saveOnce, ToolServices.layer({ run: { threadId: "shop", runId: "run-2" } }))
        const lines = readFileSync(join(dir, ".tinyagents", "events.jsonl"), "utf8").trimEnd().split("\n")
        assert.deepStrictEqual(lines.map((line) => (JSON.parse(line) as { runId: string }).runId), ["run-1", "run-1", "run-2", "run-2"])
      })
    ))

  it.live("a chosen SQLite file and JSON-lines file, parent directories created; the rate limiter shares the file", () =>
    inTempDir((dir) =>
      Effect.gen(function*() {
        const layer = ToolServices.layer({
          stores: { filename: "data/app.sqlite" },
          events: { jsonl: "logs/today/events.jsonl", sync: true },
          run: { threadId: "t", runId: "r", user: { id: "u1" } }
        })
        const { result, run, limited } = yield* Effect.all({
          result: saveOnce,
          run: RunContext.RunContext,
          limited: Effect.flatMap(RateLimiter.RateLimiter, (limiter) =>
            limiter.consume({ key: "k", limit: 1, window: "1 minute", onExceeded: "fail", algorithm: "fixed-window" }))
        }).pipe(Effect.provide(layer))
        assert.isFalse(result.isError)
        assert.deepStrictEqual(run, { threadId: "t", runId: "r", turn: 0, user: { id: "u1" } })
        assert.isDefined(limited)
        assert.isFalse(existsSync(join(dir, ".tinyagents")))
        assert.deepStrictEqual(rows(join(dir, "data", "app.sqlite"), "SELECT id FROM tinyagents_store").map((r) => r["id"]), ["notes/t/todo"])
        assert.isTrue(rows(join(dir, "data", "app.sqlite"), "SELECT count(*) AS n FROM tinyagents_rate_limits")[0]!["n"] as number >= 1)
        const lines = readFileSync(join(dir, "logs", "today", "events.jsonl"), "utf8").trimEnd().split("\n")
        assert.deepStrictEqual(lines.map((line) => (JSON.parse(line) as { _tag: string })._tag), ["tool.started", "tool.completed"])
      })
    ))

  it.effect("memory stores and console events: nothing is written to disk, each event is one JSON line on stderr", () =>
    inTempDir((dir) =>
      Effect.gen(function*() {
        const result = yield* Effect.provide(saveOnce, ToolServices.layer({ stores: "memory", events: "console", run: { runId: "r" } }))
        assert.isFalse(result.isError)
        assert.isFalse(existsSync(join(dir, ".tinyagents")))
        const lines = yield* TestConsole.errorLines
        assert.deepStrictEqual(lines.map((line) => (JSON.parse(String(line)) as { _tag: string; runId: string })).map((e) => [e._tag, e.runId]), [
          ["tool.started", "r"],
          ["tool.completed", "r"]
        ])
      })
    ))

  it.live("a run of its own: RunContext provided inside the layer's scope wins, stores and events are shared", () =>
    inTempDir((dir) =>
      Effect.gen(function*() {
        const perRun = (runId: string) => Effect.provideService(saveOnce, RunContext.RunContext, { threadId: runId, runId, turn: 0 })
        yield* Effect.all([perRun("run-a"), perRun("run-b")], { concurrency: 2 }).pipe(Effect.provide(ToolServices.layer({ run: { runId: "server" } })))
        const stored = rows(join(dir, ".tinyagents", "stores.sqlite"), "SELECT id FROM tinyagents_store ORDER BY id").map((r) => r["id"])
        assert.deepStrictEqual(stored, ["notes/run-a/todo", "notes/run-b/todo"])
        const lines = readFileSync(join(dir, ".tinyagents", "events.jsonl"), "utf8").trimEnd().split("\n")
        assert.deepStrictEqual(lines.map((line) => (JSON.parse(line) as { runId: string }).runId).sort(), ["run-a", "run-a", "run-b", "run-b"])
      })
    ))

  it.live("events: none writes no event file", () =>
    inTempDir((dir) =>
      Effect.gen(function*() {
        yield* Effect.provide(saveOnce, ToolServices.layer({ events: "none" }))
        assert.isTrue(existsSync(join(dir, ".tinyagents", "stores.sqlite")))
        assert.isFalse(existsSync(join(dir, ".tinyagents", "events.jsonl")))
      })
    ))

  const failure = (options: ToolServices.LayerOptions) =>
    Effect.flip(Effect.provide(Effect.map(RunContext.RunContext, (run) => run.runId), ToolServices.layer(options)))

  it.live("bad options fail the layer with a ToolServicesError naming the option", () =>
    inTempDir((dir) =>
      Effect.gen(function*() {
        writeFileSync(join(dir, "a-file"), "")
        const cases: ReadonlyArray<readonly [ToolServices.LayerOptions, string]> = [
          [{ run: { turn: -1 } }, "ToolServices.layer: run.turn: expected a whole number from 0, got -1"],
          [{ run: { runId: "" } }, `ToolServices.layer: run.runId: expected a non-empty string, got ""`],
          [{ run: { threadId: " " } }, `ToolServices.layer: run.threadId: expected a non-empty string, got " "`],
          [{ directory: "" }, `ToolServices.layer: directory: expected a non-empty string, got ""`],
          [{ stores: { filename: "" } }, `ToolServices.layer: stores.filename: expected a non-empty string, got ""`],
          [{ stores: { busyTimeout: -5 } }, "ToolServices.layer: stores.busyTimeout: expected milliseconds from 0, got -5"],
          [{ stores: "sqlite" as never }, `ToolServices.layer: stores: expected "memory" or { filename?, busyTimeout?, artifacts? }, got "sqlite"`],
          [{ events: "stderr" as never }, `ToolServices.layer: events: expected "console", "none" or { jsonl?, sync? }, got "stderr"`],
          [{ events: { jsonl: "" } }, `ToolServices.layer: events.jsonl: expected a non-empty string, got ""`]
        ]
        for (const [options, message] of cases) {
          const error = yield* failure(options)
          assert.strictEqual(error._tag, "ToolServicesError")
          assert.strictEqual(error.message, message)
        }
        const artifacts = yield* failure({ stores: { artifacts: { maxBytes: 10 } } })
        assert.strictEqual(artifacts.option, "stores.artifacts")
        assert.match(artifacts.message, /^ToolServices\.layer: stores\.artifacts: .*1024/)
        const blocked = yield* failure({ directory: "a-file/state" })
        assert.strictEqual(blocked.option, "stores.filename")
        assert.match(blocked.message, /^ToolServices\.layer: stores\.filename: cannot create the directory .*a-file\/state/)
        const unopenable = yield* failure({ stores: "memory", events: { jsonl: "." } })
        assert.strictEqual(unopenable.option, "events.jsonl")
        assert.match(unopenable.message, /^ToolServices\.layer: events\.jsonl: cannot open /)
      })
    ))

  it.effect("provides what the executor and the rateLimit middleware read, and nothing a call owns", () =>
    Effect.sync(() => {
      const layer: Layer.Layer<
        RunContext.RunContext | StoreRegistry.StoreRegistry | RateLimiter.RateLimiter | EventSink.EventSink,
        ToolServices.ToolServicesError
      > = ToolServices.layer()
      assert.isTrue(Layer.isLayer(layer))
    }))
})
