import { afterAll, assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Layer, Result, Schema, Scope, Stream } from "effect"
import { DatabaseSync } from "node:sqlite"
import { Approval, Cancellation, Tool, ToolRegistry } from "../../src/index.ts"
import { DurableDeferred } from "effect/workflow"
import { DurableAgent, Runner } from "../../src/durable/index.ts"
import * as Core from "./support/core.ts"

afterAll(Core.cleanup)

const user = (content: string) => [{ role: "user" as const, content }]
const sqliteRunner = (filename: string) =>
  Runner.layerSqlite({ filename, pollInterval: "50 millis", lockExpiration: "2 seconds", shutdownTimeout: "50 millis" })
const sqliteClient = (filename: string) => Runner.layerSqliteClient({ filename, pollInterval: "50 millis" })

const tags = (events: ReadonlyArray<{ readonly _tag: string }>) => events.map((e) => e._tag)

describe("DurableAgent.cancel", () => {
  it.live("cancelling a run waiting for an approval ends it: RunCancelled, the tool never runs, events end with agent.finished", () =>
    Effect.gen(function*() {
      const counters = Core.makeCounters()
      const agent = DurableAgent.make({
        name: "cancel-approval",
        tools: Core.makeTools(counters),
        pollInterval: "20 millis",
        approval: (call) => call.name === "plain_write"
      })
      const filename = Core.tempFile("cancel-approval")
      const { error, events, pending, approve, again } = yield* Effect.gen(function*() {
        yield* agent.start("r", user("plan: read_value;plain_write;read_value"))
        yield* Stream.runHead(Stream.filter(agent.events("r"), (e) => e._tag === "agent.approval_requested"))
        yield* Effect.provide(agent.cancel("r", { reason: "the user changed their mind" }), sqliteClient(filename))
        const error = yield* Effect.flip(agent.result("r"))
        return {
          error,
          events: Array.from(yield* Stream.runCollect(agent.events("r"))),
          pending: yield* agent.pending("r"),
          approve: yield* Effect.flip(agent.approve("r", "1-0", Approval.approve("alice"))),
          again: yield* Effect.exit(agent.cancel("r", { reason: "twice" }))
        }
      }).pipe(Effect.provide(Core.runner(agent, sqliteRunner(filename), counters)))
      assert.instanceOf(error, DurableAgent.RunCancelled)
      assert.strictEqual(error.reason, "the user changed their mind")
      assert.strictEqual(error.message, "run r was cancelled: the user changed their mind")
      assert.strictEqual(counters.get("plain_write:1-0"), 0)
      assert.strictEqual(counters.get("model"), 2, "no turn after the cancellation")
      // the call a cancel kept from starting ends with its own event
      assert.deepStrictEqual(tags(events).slice(-3), ["agent.approval_requested", "tool.rejected", "agent.finished"])
      const finished = events.at(-1)!
      assert.strictEqual(finished._tag === "agent.finished" && finished.reason, "cancelled")
      assert.strictEqual(finished._tag === "agent.finished" && finished.turns, 2)
      assert.deepStrictEqual(events.map((e) => e.sequence), events.map((_, i) => i))
      assert.deepStrictEqual(pending, [])
      assert.strictEqual(approve.reason, "finished")
      assert.isTrue(Exit.isSuccess(again), "cancelling a cancelled run again succeeds")
    }), 30_000)

  it.live("a call running when the run is cancelled finishes and is journaled; no new turn starts", () =>
    Effect.gen(function*() {
      const counters = Core.makeCounters()
      const entered = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      const agent = DurableAgent.make({
        name: "cancel-running",
        tools: Core.makeTools(counters, {
          afterApply: (tool) =>
            tool === "plain_write" ? Effect.andThen(Deferred.succeed(entered, undefined), Deferred.await(release)) : Effect.void
        }),
        pollInterval: "20 millis"
      })
      const filename = Core.tempFile("cancel-running")
      const { error, events } = yield* Effect.gen(function*() {
        yield* agent.start("r", user("plan: plain_write;read_value"))
        yield* Deferred.await(entered)
        yield* agent.cancel("r")
        yield* Deferred.succeed(release, undefined)
        const error = yield* Effect.flip(agent.result("r"))
        return { error, events: Array.from(yield* Stream.runCollect(agent.events("r"))) }
      }).pipe(Effect.provide(Core.runner(agent, sqliteRunner(filename), counters)))
      assert.instanceOf(error, DurableAgent.RunCancelled)
      assert.strictEqual(error.reason, "cancelled")
      assert.strictEqual(counters.get("plain_write:0-0"), 1)
      assert.strictEqual(counters.get("read_value"), 0, "the next turn's call never ran")
      assert.strictEqual(counters.get("model"), 1, "the model was not asked again")
      assert.strictEqual(tags(events).at(-1), "agent.finished")
    }), 30_000)

  it.live("a cancellation made while no runner runs holds after the restart: nothing new runs", () =>
    Effect.gen(function*() {
      const counters = Core.makeCounters()
      const agent = DurableAgent.make({
        name: "cancel-restart",
        tools: Core.makeTools(counters),
        pollInterval: "20 millis",
        approval: (call) => call.name === "plain_write"
      })
      const filename = Core.tempFile("cancel-restart")
      const scope = yield* Scope.make()
      const context = yield* Layer.buildWithScope(Core.runner(agent, sqliteRunner(filename), counters), scope)
      yield* Effect.provide(
        Effect.andThen(
          agent.start("r", user("plan: read_value,plain_write;read_value")),
          Stream.runHead(Stream.filter(agent.events("r"), (e) => e._tag === "agent.approval_requested"))
        ),
        context
      )
      yield* Scope.close(scope, Exit.void)
      yield* Effect.provide(agent.cancel("r", { reason: "deploy" }), sqliteClient(filename))
      const { error, events } = yield* Effect.provide(
        Effect.gen(function*() {
          const error = yield* Effect.flip(agent.result("r"))
          return { error, events: Array.from(yield* Stream.runCollect(agent.events("r"))) }
        }),
        Core.runner(agent, sqliteRunner(filename), counters)
      )
      assert.instanceOf(error, DurableAgent.RunCancelled)
      assert.strictEqual(error.reason, "deploy")
      assert.strictEqual(counters.get("plain_write:0-1"), 0)
      assert.strictEqual(counters.get("read_value"), 0, "the turn's other call did not start either")
      assert.strictEqual(counters.get("model"), 1)
      assert.strictEqual(tags(events).at(-1), "agent.finished")
      assert.strictEqual(tags(events).filter((t) => t === "agent.finished").length, 1)
    }), 30_000)

  it.live("cancel fails with RunNotCancellable for an unknown run and for a run that finished", () =>
    Effect.gen(function*() {
      const counters = Core.makeCounters()
      const agent = DurableAgent.make({ name: "cancel-finished", tools: Core.makeTools(counters), pollInterval: "20 millis" })
      const { unknown, finished, result } = yield* Effect.gen(function*() {
        const unknown = yield* Effect.flip(agent.cancel("nobody"))
        yield* agent.start("r", user("plan: read_value"))
        const result = yield* agent.result("r")
        return { unknown, finished: yield* Effect.flip(agent.cancel("r")), result }
      }).pipe(Effect.provide(Core.runner(agent, Core.memoryEngine(), counters)))
      assert.strictEqual(unknown.reason, "no such run")
      assert.strictEqual(finished.reason, "finished")
      assert.strictEqual(finished.message, "run r cannot be cancelled: finished")
      assert.strictEqual(result.text, "done: value of 0-0")
    }), 30_000)

  it.live("on the memory engine too: a pending approval is cancelled", () =>
    Effect.gen(function*() {
      const counters = Core.makeCounters()
      const agent = DurableAgent.make({
        name: "cancel-memory",
        tools: Core.makeTools(counters),
        pollInterval: "20 millis",
        approval: () => true
      })
      const error = yield* Effect.gen(function*() {
        yield* agent.start("r", user("plan: plain_write"))
        yield* Stream.runHead(Stream.filter(agent.events("r"), (e) => e._tag === "agent.approval_requested"))
        yield* agent.cancel("r")
        return yield* Effect.flip(agent.result("r"))
      }).pipe(Effect.provide(Core.runner(agent, Core.memoryEngine(), counters)))
      assert.instanceOf(error, DurableAgent.RunCancelled)
      assert.strictEqual(counters.get("plain_write:0-0"), 0)
    }), 30_000)

  it.live("cancelling run X leaves alone a run whose id merely starts with X/ (only runs nested in X's calls are cancelled with it)", () =>
    Effect.gen(function*() {
      const counters = Core.makeCounters()
      const agent = DurableAgent.make({
        name: "cancel-prefix",
        tools: Core.makeTools(counters),
        pollInterval: "20 millis",
        approval: (call) => call.name === "plain_write"
      })
      const { other, pending } = yield* Effect.gen(function*() {
        for (const id of ["tenant", "tenant/order-7"]) {
          yield* agent.start(id, user("plan: plain_write"))
          yield* Stream.runHead(Stream.filter(agent.events(id), (e) => e._tag === "agent.approval_requested"))
        }
        yield* agent.cancel("tenant", { reason: "tenant closed" })
        const pending = yield* agent.pending("tenant/order-7")
        yield* agent.approve("tenant/order-7", "0-0", Approval.approve("alice"))
        return { pending, other: yield* agent.result("tenant/order-7") }
      }).pipe(Effect.provide(Core.runner(agent, Core.memoryEngine(), counters)))
      assert.deepStrictEqual(pending.map((p) => p.callId), ["0-0"])
      assert.strictEqual(other.reason, "final_answer")
      assert.strictEqual(counters.get("plain_write:0-0"), 1)
    }), 30_000)
})

describe("DurableAgent.cancel: what a cancelled run keeps", () => {
  it.live("a batch larger than `concurrency`: the call that ran keeps its events; the one not started never runs", () =>
    Effect.gen(function*() {
      const counters = Core.makeCounters()
      const entered = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      const agent = DurableAgent.make({
        name: "cancel-batch",
        tools: Core.makeTools(counters, {
          afterApply: (tool) =>
            tool === "plain_write" ? Effect.andThen(Deferred.succeed(entered, undefined), Deferred.await(release)) : Effect.void
        }),
        pollInterval: "20 millis",
        concurrency: 1
      })
      const filename = Core.tempFile("cancel-batch")
      const { error, events } = yield* Effect.gen(function*() {
        yield* agent.start("r", user("plan: plain_write,read_value;read_value"))
        yield* Deferred.await(entered)
        yield* agent.cancel("r", { reason: "stop" })
        yield* Deferred.succeed(release, undefined)
        const error = yield* Effect.flip(agent.result("r"))
        return { error, events: Array.from(yield* Stream.runCollect(agent.events("r"))) }
      }).pipe(Effect.provide(Core.runner(agent, sqliteRunner(filename), counters)))
      assert.instanceOf(error, DurableAgent.RunCancelled)
      assert.strictEqual(counters.get("plain_write:0-0"), 1)
      assert.strictEqual(counters.get("read_value"), 0)
      assert.deepStrictEqual(error.results.map((r) => [r.toolCallId, r.error?._tag]), [["0-0", undefined], ["0-1", "ToolCancelled"]])
      assert.strictEqual(error.turns, 1)
      assert.deepStrictEqual(tags(events), [
        "agent.turn_started",
        "agent.model_responded",
        "tool.started",
        "tool.completed",
        "tool.rejected",
        "agent.finished"
      ])
      const rejected = events.find((e) => e._tag === "tool.rejected")
      assert.deepStrictEqual(rejected?._tag === "tool.rejected" && [rejected.toolCallId, rejected.error._tag], ["0-1", "ToolCancelled"])
      const finished = events.at(-1)!
      assert.strictEqual(finished._tag === "agent.finished" && finished.turns, 1, "the turns the model answered")
    }), 30_000)

  it.live("cancelled while no runner runs, mid-batch: after the restart the journaled call keeps its events and the call in flight is answered as unknown", () =>
    Effect.gen(function*() {
      const counters = Core.makeCounters()
      const entered = yield* Deferred.make<void>()
      const agent = DurableAgent.make({
        name: "cancel-midbatch",
        tools: Core.makeTools(counters, {
          afterApply: (tool) => tool === "plain_write" ? Effect.andThen(Deferred.succeed(entered, undefined), Effect.never) : Effect.void
        }),
        pollInterval: "20 millis"
      })
      const filename = Core.tempFile("cancel-midbatch")
      const scope = yield* Scope.make()
      const context = yield* Layer.buildWithScope(Core.runner(agent, sqliteRunner(filename), counters), scope)
      yield* Effect.provide(Effect.andThen(agent.start("r", user("plan: read_value,plain_write;read_value")), Deferred.await(entered)), context)
      yield* Scope.close(scope, Exit.void)
      yield* Effect.provide(agent.cancel("r", { reason: "deploy" }), sqliteClient(filename))
      const { error, events } = yield* Effect.provide(
        Effect.gen(function*() {
          const error = yield* Effect.flip(agent.result("r"))
          return { error, events: Array.from(yield* Stream.runCollect(agent.events("r"))) }
        }),
        Core.runner(agent, sqliteRunner(filename), counters)
      )
      assert.instanceOf(error, DurableAgent.RunCancelled)
      assert.strictEqual(counters.get("read_value"), 1)
      assert.strictEqual(counters.get("plain_write:0-1"), 1, "never run again")
      assert.strictEqual(counters.get("model"), 1)
      const failed = events.find((e) => e._tag === "tool.failed")
      assert.strictEqual(failed?._tag === "tool.failed" && failed.outcome, "unknown")
      assert.deepStrictEqual(tags(events).filter((t) => t.startsWith("tool.")), ["tool.started", "tool.completed", "tool.failed"])
      assert.strictEqual(tags(events).at(-1), "agent.finished")
      assert.deepStrictEqual(events.map((e) => e.sequence), events.map((_, i) => i))
    }), 30_000)

  it.live("after cancel, pending() is empty and approve fails with `cancelled`, also while no runner runs", () =>
    Effect.gen(function*() {
      const counters = Core.makeCounters()
      const agent = DurableAgent.make({ name: "cancel-pending", tools: Core.makeTools(counters), pollInterval: "20 millis", approval: () => true })
      const filename = Core.tempFile("cancel-pending")
      const scope = yield* Scope.make()
      const context = yield* Layer.buildWithScope(Core.runner(agent, sqliteRunner(filename), counters), scope)
      yield* Effect.provide(
        Effect.andThen(
          agent.start("r", user("plan: plain_write")),
          Stream.runHead(Stream.filter(agent.events("r"), (e) => e._tag === "agent.approval_requested"))
        ),
        context
      )
      yield* Scope.close(scope, Exit.void)
      const { before, after, approve } = yield* Effect.provide(
        Effect.gen(function*() {
          const before = yield* agent.pending("r")
          yield* agent.cancel("r")
          return { before, after: yield* agent.pending("r"), approve: yield* Effect.flip(agent.approve("r", "0-0", Approval.approve("eve"))) }
        }),
        sqliteClient(filename)
      )
      assert.strictEqual(before.length, 1)
      assert.deepStrictEqual(after, [])
      assert.strictEqual(approve.reason, "cancelled")
    }), 30_000)

  it.live("a run started while no runner runs can be cancelled before it is picked up: the model is never asked", () =>
    Effect.gen(function*() {
      const counters = Core.makeCounters()
      const agent = DurableAgent.make({ name: "cancel-queued", tools: Core.makeTools(counters), pollInterval: "20 millis" })
      const filename = Core.tempFile("cancel-queued")
      // the journal's tables exist once a runner has opened the file
      yield* Effect.provide(Effect.void, Core.runner(agent, sqliteRunner(filename), counters))
      yield* Effect.provide(Effect.andThen(agent.start("q", user("plan: plain_write")), agent.cancel("q", { reason: "queued" })), sqliteClient(filename))
      const error = yield* Effect.flip(Effect.provide(agent.result("q"), Core.runner(agent, sqliteRunner(filename), counters)))
      assert.instanceOf(error, DurableAgent.RunCancelled)
      assert.strictEqual(error.reason, "queued")
      assert.strictEqual(error.turns, 0)
      assert.strictEqual(counters.get("model"), 0)
    }), 30_000)

  it.live("a runner idle longer than pollInterval reads the cancellations again before a run starts: one recorded by another process meanwhile holds", () =>
    Effect.gen(function*() {
      const counters = Core.makeCounters()
      const agent = DurableAgent.make({ name: "cancel-idle", tools: Core.makeTools(counters), pollInterval: "20 millis" })
      const filename = Core.tempFile("cancel-idle")
      const error = yield* Effect.gen(function*() {
        // no run in flight: the runner's watcher does not read; another process records a
        // cancellation (its row, as `cancel` in that process writes it) while this one idles
        yield* Effect.sleep("300 millis")
        const db = new DatabaseSync(filename)
        db.prepare("INSERT INTO tinyagents_durable_cancels (workflow, run_id, reason, at) VALUES (?, ?, ?, ?)")
          .run(agent.workflow._tag, "r", "from elsewhere", Date.now())
        db.close()
        yield* agent.start("r", user("plan: plain_write"))
        return yield* Effect.flip(agent.result("r"))
      }).pipe(Effect.provide(Core.runner(agent, sqliteRunner(filename), counters)))
      assert.instanceOf(error, DurableAgent.RunCancelled)
      assert.strictEqual(error.reason, "from elsewhere")
      assert.strictEqual(counters.get("model"), 0)
    }), 30_000)

  it.live("a cancellation that reached only the deferred (the process died before the row) still ends a run waiting for approval", () =>
    Effect.gen(function*() {
      const counters = Core.makeCounters()
      const agent = DurableAgent.make({ name: "cancel-half", tools: Core.makeTools(counters), pollInterval: "20 millis", approval: () => true })
      const filename = Core.tempFile("cancel-half")
      const error = yield* Effect.gen(function*() {
        yield* agent.start("r", user("plan: plain_write"))
        yield* Stream.runHead(Stream.filter(agent.events("r"), (e) => e._tag === "agent.approval_requested"))
        const executionId = yield* agent.workflow.executionId({ runId: "r", messages: [] })
        const token = DurableDeferred.tokenFromExecutionId(DurableAgent.cancelDeferred, { workflow: agent.workflow, executionId })
        yield* DurableDeferred.succeed(DurableAgent.cancelDeferred, { token, value: "half-way" })
        return yield* Effect.flip(agent.result("r"))
      }).pipe(Effect.provide(Core.runner(agent, sqliteRunner(filename), counters)))
      assert.instanceOf(error, DurableAgent.RunCancelled)
      assert.strictEqual(error.reason, "half-way")
      assert.strictEqual(counters.get("plain_write:0-0"), 0)
    }), 30_000)
})

describe("Cancellation.cancelRun in a durable run", () => {
  it.live("a handler's cancelRun ends the run cancelled, also when the run is replayed after its call was journaled", () =>
    Effect.gen(function*() {
      const counters = Core.makeCounters()
      const stop = Tool.make("stop", {
        description: "Stops the run.",
        input: Schema.Struct({ line: Schema.String }),
        services: [Cancellation.Cancellation],
        safety: { access: "read", idempotent: true },
        handler: () => Effect.andThen(Effect.sync(() => counters.bump("stop")), Effect.as(Cancellation.cancelRun("enough"), "stopping"))
      })
      const agent = DurableAgent.make({
        name: "cancel-run",
        tools: Result.getOrThrow(ToolRegistry.makeResult([stop])),
        pollInterval: "20 millis"
      })
      const filename = Core.tempFile("cancel-run")
      const run = Effect.andThen(agent.start("r", user("plan: stop;stop")), agent.result("r"))
      const first = yield* Effect.provide(run, Core.runner(agent, sqliteRunner(filename), counters))
      assert.strictEqual(first.reason, "cancelled")
      assert.strictEqual(counters.get("model"), 1)
      // as if the runner died after the call's journal write and before the run's: the run's reply is
      // removed, so the restarted runner replays the run (its call answers from the journal)
      const db = new DatabaseSync(filename)
      db.exec(`DELETE FROM cluster_replies WHERE request_id IN (SELECT id FROM cluster_messages WHERE tag = 'run')`)
      db.exec(`UPDATE cluster_messages SET processed = FALSE WHERE tag = 'run'`)
      db.close()
      const second = yield* Effect.provide(agent.result("r"), Core.runner(agent, sqliteRunner(filename), counters))
      assert.strictEqual(second.reason, "cancelled")
      assert.strictEqual(counters.get("stop"), 1, "the call was not run again")
      assert.strictEqual(counters.get("model"), 1, "the model was not asked for another turn")
    }), 30_000)
})
