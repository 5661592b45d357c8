/**
 * Runs you can list and watch: `list` (status, turn, pending approvals, start; pages), `pendingAll`,
 * `outcome` (a run's end as data), `events(runId, { follow: false })` (a snapshot of a live run), and
 * the `tool.rejected` event of a call a cancel kept from starting. In process, on a SQLite runner.
 */
import { afterAll, assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Layer, Option, Result, Schema, Stream } from "effect"
import { DatabaseSync } from "node:sqlite"
import { Approval, type ToolEvent, ToolRegistry } from "../../src/index.ts"
import * as Stores from "../../src/stores/Stores.ts"
import { DurableAgent, Runner } from "../../src/durable/index.ts"
import * as Core from "./support/core.ts"

afterAll(Core.cleanup)

const user = (content: string) => [{ role: "user" as const, content }]
const sqliteRunner = (filename: string) =>
  Runner.layerSqlite({ filename, pollInterval: "20 millis", lockExpiration: "2 seconds", shutdownTimeout: "50 millis" })

/** Waits until the run has journaled an event of kind `tag`. */
const reached = <R, MR>(agent: DurableAgent.DurableAgent<R, MR>, runId: string, tag: ToolEvent.Event["_tag"]) =>
  Stream.runHead(Stream.filter(agent.events(runId), (e) => e._tag === tag))

describe("DurableAgent.list and pendingAll", () => {
  it.live("lists each run's status, turn, pending approvals and start, newest first, a page at a time", () =>
    Effect.gen(function*() {
      const counters = Core.makeCounters()
      const entered = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      const agent = DurableAgent.make({
        name: "list-runs",
        tools: Core.makeTools(counters, {
          afterApply: (tool) => tool === "keyed_write" ? Effect.andThen(Deferred.succeed(entered, undefined), Deferred.await(release)) : Effect.void
        }),
        pollInterval: "20 millis",
        approval: (call) => call.name === "plain_write"
      })
      const filename = Core.tempFile("list-runs")
      const before = Date.now()
      const { all, pages, pendingAll, afterApprove, badCursor } = yield* Effect.gen(function*() {
        yield* agent.start("finished", user("plan: read_value;read_value"))
        yield* agent.result("finished")
        yield* agent.start("failed", user("plan: crash"))
        yield* Effect.flip(agent.result("failed"))
        yield* agent.start("cancelled", user("plan: plain_write"))
        yield* reached(agent, "cancelled", "agent.approval_requested")
        yield* agent.cancel("cancelled", { reason: "no" })
        yield* Effect.flip(agent.result("cancelled"))
        yield* agent.start("waiting", user("plan: read_value;plain_write,plain_write"))
        yield* reached(agent, "waiting", "agent.approval_requested")
        yield* agent.pending("waiting").pipe(Effect.repeat({ until: (p) => p.length === 2 }))
        yield* agent.start("running", user("plan: keyed_write"))
        yield* Deferred.await(entered)
        const all = yield* agent.list()
        const pages: Array<DurableAgent.RunPage> = [yield* agent.list({ limit: 2 })]
        while (pages.at(-1)!.next !== undefined) pages.push(yield* agent.list({ limit: 2, cursor: pages.at(-1)!.next! }))
        const pendingAll = yield* agent.pendingAll()
        yield* agent.approve("waiting", "1-0", Approval.approve("alice"))
        const afterApprove = yield* agent.pendingAll()
        const badCursor = yield* Effect.flip(agent.list({ cursor: "not-a-cursor" }))
        yield* Deferred.succeed(release, undefined)
        return { all, pages, pendingAll, afterApprove, badCursor }
      }).pipe(Effect.provide(Core.runner(agent, sqliteRunner(filename), counters)))

      const byId = new Map(all.runs.map((run) => [run.runId, run]))
      const view = (id: string) => {
        const { startedAt: _, ...rest } = byId.get(id)!
        return rest
      }
      assert.deepStrictEqual(view("finished"), { runId: "finished", status: "finished", turn: 2, pendingApprovals: 0, pendingQuestions: 0 })
      assert.deepStrictEqual(view("failed"), { runId: "failed", status: "failed", turn: 0, pendingApprovals: 0, pendingQuestions: 0 })
      assert.deepStrictEqual(view("cancelled"), { runId: "cancelled", status: "cancelled", turn: 0, pendingApprovals: 0, pendingQuestions: 0 })
      assert.deepStrictEqual(view("waiting"), { runId: "waiting", status: "awaiting_approval", turn: 1, pendingApprovals: 2, pendingQuestions: 0 })
      assert.deepStrictEqual(view("running"), { runId: "running", status: "running", turn: 0, pendingApprovals: 0, pendingQuestions: 0 })
      assert.strictEqual(all.next, undefined)
      for (const run of all.runs) assert.isTrue(run.startedAt >= before && run.startedAt <= Date.now(), run.runId)
      // newest first (ties by run id, descending); the pages are the whole list, in order, without repeats
      const order = [...all.runs].sort((a, b) => b.startedAt - a.startedAt || (a.runId < b.runId ? 1 : -1))
      assert.deepStrictEqual(all.runs.map((r) => r.runId), order.map((r) => r.runId))
      assert.strictEqual(all.runs[0]!.runId, "running")
      assert.deepStrictEqual(pages.map((p) => p.runs.length), [2, 2, 1])
      assert.deepStrictEqual(pages.flatMap((p) => p.runs.map((r) => r.runId)), all.runs.map((r) => r.runId))

      assert.deepStrictEqual(pendingAll.map((p) => [p.runId, p.callId, p.toolName, p.turn, p.index]), [
        ["waiting", "1-0", "plain_write", 1, 0],
        ["waiting", "1-1", "plain_write", 1, 1]
      ])
      assert.deepStrictEqual(pendingAll[0]!.arguments, { line: "1-0" })
      assert.deepStrictEqual(afterApprove.map((p) => p.callId), ["1-1"])
      assert.instanceOf(badCursor, DurableAgent.InvalidCursor)
      assert.strictEqual(badCursor.message, `not a cursor of DurableAgent.list: "not-a-cursor"`)
    }), 30_000)

  it.live("a run cancelled while it waits is listed `running` with the cancel's reason until it ends (pendingAll leaves it out); a run started while no runner runs is `queued`", () =>
    Effect.gen(function*() {
      const counters = Core.makeCounters()
      const agent = DurableAgent.make({ name: "list-cancelling", tools: Core.makeTools(counters), pollInterval: "20 millis", approval: () => true })
      const filename = Core.tempFile("list-cancelling")
      const { page, pending } = yield* Effect.gen(function*() {
        yield* agent.start("r", user("plan: plain_write"))
        yield* reached(agent, "r", "agent.approval_requested")
        return { page: yield* agent.list(), pending: yield* agent.pendingAll() }
      }).pipe(Effect.provide(Core.runner(agent, sqliteRunner(filename), counters)))
      assert.strictEqual(page.runs[0]?.status, "awaiting_approval")
      assert.strictEqual(pending.length, 1)
      // the runner is down: the cancel is recorded, the run has not acted on it; a run started now waits for a runner
      const after = yield* Effect.gen(function*() {
        yield* agent.cancel("r", { reason: "later" })
        yield* agent.start("q", user("plan: "))
        return { page: yield* agent.list(), pending: yield* agent.pendingAll() }
      }).pipe(Effect.provide(Runner.layerSqliteClient({ filename, pollInterval: "20 millis" })))
      assert.deepStrictEqual(after.page.runs.map(({ startedAt: _, ...run }) => run), [
        { runId: "q", status: "queued", turn: undefined, pendingApprovals: 0, pendingQuestions: 0 },
        { runId: "r", status: "running", turn: 0, pendingApprovals: 0, pendingQuestions: 0, cancelling: "later" }
      ])
      // a runner picks the queued run up: it keeps its start
      const picked = yield* Effect.andThen(agent.result("q"), agent.list()).pipe(
        Effect.provide(Core.runner(agent, sqliteRunner(filename), counters))
      )
      const queued = (page: DurableAgent.RunPage) => page.runs.find((run) => run.runId === "q")!
      assert.strictEqual(queued(picked).status, "finished")
      assert.strictEqual(queued(picked).startedAt, queued(after.page).startedAt)
      assert.deepStrictEqual(after.pending, [])
    }), 30_000)

  it.live("on the memory engine too", () =>
    Effect.gen(function*() {
      const counters = Core.makeCounters()
      const agent = DurableAgent.make({ name: "list-memory", tools: Core.makeTools(counters), pollInterval: "20 millis" })
      const page = yield* Effect.gen(function*() {
        yield* agent.start("m", user("plan: read_value"))
        yield* agent.result("m")
        return yield* agent.list({ limit: 1 })
      }).pipe(Effect.provide(Core.runner(agent, Core.memoryEngine(), counters)))
      assert.deepStrictEqual(page.runs.map((r) => [r.runId, r.status, r.turn]), [["m", "finished", 1]])
      assert.strictEqual(page.next, undefined)
    }), 30_000)
})

describe("DurableAgent.list: nested runs", () => {
  it.live("a durable agent's run nested in another's call is listed by its own agent, with the calling run as its parent", () =>
    Effect.gen(function*() {
      const counters = Core.makeCounters()
      const child = DurableAgent.make({ name: "list-child", tools: Core.makeTools(counters), pollInterval: "20 millis" })
      const helper = DurableAgent.asTool(child, {
        name: "helper",
        description: "Helps.",
        input: Schema.Struct({ line: Schema.String }),
        prompt: ({ line }) => `plan: read_value=${line}`
      })
      const parent = DurableAgent.make({
        name: "list-parent",
        tools: Result.getOrThrow(ToolRegistry.makeResult([helper])),
        pollInterval: "20 millis"
      })
      const layer = Layer.mergeAll(
        parent.layer.pipe(Layer.provide([Core.model(counters), Stores.layerMemory])),
        child.layer.pipe(Layer.provide([Core.model(counters), Stores.layerMemory]))
      ).pipe(Layer.provideMerge(Core.memoryEngine()))
      const { parents, children } = yield* Effect.gen(function*() {
        yield* parent.start("p", user("plan: helper=x"))
        yield* parent.result("p")
        return { parents: yield* parent.list(), children: yield* child.list() }
      }).pipe(Effect.provide(layer))
      assert.deepStrictEqual(parents.runs.map(({ startedAt: _, ...run }) => run), [
        { runId: "p", status: "finished", turn: 1, pendingApprovals: 0, pendingQuestions: 0 }
      ])
      assert.deepStrictEqual(children.runs.map(({ startedAt: _, ...run }) => run), [
        { runId: "p/0/0", status: "finished", turn: 1, pendingApprovals: 0, pendingQuestions: 0, parentRunId: "p" }
      ])
    }), 30_000)
})

describe("DurableAgent.outcome", () => {
  it.live("says running, finished, failed or cancelled as data; `wait: true` waits for the end", () =>
    Effect.gen(function*() {
      const counters = Core.makeCounters()
      const agent = DurableAgent.make({
        name: "outcome",
        tools: Core.makeTools(counters),
        pollInterval: "20 millis",
        approval: (call) => call.name === "plain_write"
      })
      const filename = Core.tempFile("outcome")
      const got = yield* Effect.gen(function*() {
        const unknown = yield* agent.outcome("nobody")
        yield* agent.start("ok", user("plan: read_value"))
        const ok = yield* agent.outcome("ok", { wait: true })
        yield* agent.start("bad", user("plan: crash"))
        const bad = yield* agent.outcome("bad", { wait: true })
        yield* agent.start("stop", user("plan: plain_write"))
        yield* reached(agent, "stop", "agent.approval_requested")
        const waiting = yield* agent.outcome("stop")
        yield* agent.cancel("stop", { reason: "enough" })
        const stopped = yield* agent.outcome("stop", { wait: true })
        const polled = DurableAgent.outcomeOf(yield* agent.poll("stop"))
        return { unknown, ok, bad, waiting, stopped, polled }
      }).pipe(Effect.provide(Core.runner(agent, sqliteRunner(filename), counters)))
      assert.deepStrictEqual(got.unknown, { status: "running" })
      assert.deepStrictEqual(got.waiting, { status: "running" })
      assert.strictEqual(got.ok.status === "finished" && got.ok.result.text, "done: value of 0-0")
      assert.strictEqual(got.bad.status, "failed")
      if (got.bad.status === "failed") {
        assert.strictEqual(got.bad.error?.reason, "tool")
        assert.strictEqual(got.bad.error?.error._tag, "ToolDefect")
      }
      assert.strictEqual(got.stopped.status === "cancelled" && got.stopped.error.reason, "enough")
      assert.strictEqual(got.polled.status, "cancelled")
    }), 30_000)
})

describe("DurableAgent.events with follow: false", () => {
  it.live("reads what a live run has journaled now and ends, from `since` on; the follow mode waits for the end", () =>
    Effect.gen(function*() {
      const counters = Core.makeCounters()
      const agent = DurableAgent.make({ name: "snapshot", tools: Core.makeTools(counters), pollInterval: "20 millis", approval: () => true })
      const filename = Core.tempFile("snapshot")
      const { now, since, followed, unknown } = yield* Effect.gen(function*() {
        yield* agent.start("r", user("plan: read_value;plain_write"))
        yield* reached(agent, "r", "agent.approval_requested")
        const now = Array.from(yield* Stream.runCollect(agent.events("r", { follow: false })))
        const since = Array.from(yield* Stream.runCollect(agent.events("r", { since: 2, follow: false })))
        // the follow mode is still waiting for the run to end
        const followed = yield* Stream.runCollect(agent.events("r")).pipe(Effect.timeoutOption("300 millis"))
        const unknown = Array.from(yield* Stream.runCollect(agent.events("nobody", { follow: false })))
        return { now, since, followed, unknown }
      }).pipe(Effect.provide(Core.runner(agent, sqliteRunner(filename), counters)))
      assert.strictEqual(now.at(-1)?._tag, "agent.approval_requested")
      assert.notInclude(now.map((e) => e._tag), "agent.finished")
      assert.deepStrictEqual(now.map((e) => e.sequence), now.map((_, i) => i))
      assert.deepStrictEqual(since.map((e) => e.sequence), now.slice(3).map((e) => e.sequence))
      assert.isTrue(Option.isNone(followed), "the follow mode ended before the run did")
      assert.deepStrictEqual(unknown, [])
    }), 30_000)
})

describe("a call a cancel kept from starting", () => {
  it.live("ends with a journaled tool.rejected carrying ToolCancelled (started: false), once, also after a replay", () =>
    Effect.gen(function*() {
      const counters = Core.makeCounters()
      const agent = DurableAgent.make({
        name: "not-started",
        tools: Core.makeTools(counters),
        pollInterval: "20 millis",
        approval: (call) => call.name === "plain_write"
      })
      const filename = Core.tempFile("not-started")
      const first = yield* Effect.gen(function*() {
        yield* agent.start("r", user("plan: plain_write,read_value"))
        yield* reached(agent, "r", "agent.approval_requested")
        yield* agent.cancel("r", { reason: "stop" })
        yield* Effect.flip(agent.result("r"))
        return Array.from(yield* Stream.runCollect(agent.events("r")))
      }).pipe(Effect.provide(Core.runner(agent, sqliteRunner(filename), counters)))
      // as if the runner died after the calls' journal writes and before the run's: the restarted
      // runner replays the run, its calls answering from the journal
      const db = new DatabaseSync(filename)
      db.exec(`DELETE FROM cluster_replies WHERE request_id IN (SELECT id FROM cluster_messages WHERE tag = 'run')`)
      db.exec(`UPDATE cluster_messages SET processed = FALSE WHERE tag = 'run'`)
      db.close()
      const events = yield* Effect.andThen(Effect.flip(agent.result("r")), Stream.runCollect(agent.events("r"))).pipe(
        Effect.map(Array.from<ToolEvent.Event>),
        Effect.provide(Core.runner(agent, sqliteRunner(filename), counters))
      )
      assert.deepStrictEqual(events, first)
      const rejected = events.filter((e): e is ToolEvent.ToolRejected => e._tag === "tool.rejected")
      assert.deepStrictEqual(rejected.map((e) => [e.toolCallId, e.toolName, e.error._tag]), [
        ["0-0", "plain_write", "ToolCancelled"],
        ["0-1", "read_value", "ToolCancelled"]
      ])
      for (const e of rejected) assert.isTrue(e.error._tag === "ToolCancelled" && !e.error.started)
      assert.deepStrictEqual(events.map((e) => e._tag).slice(-3), ["tool.rejected", "tool.rejected", "agent.finished"])
      assert.notInclude(events.map((e) => e._tag), "tool.started")
      assert.deepStrictEqual(events.map((e) => e.sequence), events.map((_, i) => i))
      assert.strictEqual(counters.get("read_value") + counters.get("plain_write:0-0"), 0)
    }), 30_000)
})
