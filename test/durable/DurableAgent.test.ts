import { afterAll, assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Layer, Option, Schedule, Scope, Stream } from "effect"
import { consent } from "../../src/governance/middleware/index.ts"
import { Agent, Approval, ToolServices } from "../../src/index.ts"
import * as Stores from "../../src/stores/Stores.ts"
import { DurableAgent, Runner } from "../../src/durable/index.ts"
import * as Core from "./support/core.ts"

afterAll(Core.cleanup)

const user = (content: string) => [{ role: "user" as const, content }]
const sqliteRunner = (filename: string) =>
  Runner.layerSqlite({ filename, pollInterval: "50 millis", lockExpiration: "2 seconds", shutdownTimeout: "50 millis" })
const sqliteClient = (filename: string) => Runner.layerSqliteClient({ filename, pollInterval: "50 millis" })

describe("DurableAgent on the memory engine", () => {
  it.live("a full run: tools run once, the model answers each turn once, result and journaled events", () => {
    const counters = Core.makeCounters()
    const agent = DurableAgent.make({ name: "full", tools: Core.makeTools(counters), pollInterval: "10 millis" })
    return Effect.gen(function*() {
      yield* agent.start("r1", user("plan: plain_write,read_value;keyed_write"))
      const result = yield* agent.result("r1")
      assert.strictEqual(result.reason, "final_answer")
      assert.strictEqual(result.turns, 3)
      assert.strictEqual(result.text, "done: wrote k1")
      assert.deepStrictEqual(result.results.map((r) => r.toolCallId), ["0-0", "0-1", "1-0"])
      assert.deepStrictEqual(result.transcript.map((m) => m.role), ["user", "assistant", "tool", "assistant", "tool", "assistant"])
      assert.deepStrictEqual(result.usage, { inputTokens: 0, outputTokens: 0 })
      assert.strictEqual(counters.get("model"), 3)
      assert.strictEqual(counters.get("plain_write:0-0"), 1)
      assert.strictEqual(counters.get("keyed_write:k1"), 1)
      const events = Array.from(yield* Stream.runCollect(agent.events("r1")))
      assert.deepStrictEqual(events.map((e) => e.sequence), events.map((_, i) => i))
      assert.deepStrictEqual(events.map((e) => e._tag), [
        "agent.turn_started",
        "agent.model_responded",
        "tool.started",
        "tool.completed",
        "tool.started",
        "tool.completed",
        "agent.turn_started",
        "agent.model_responded",
        "tool.started",
        "tool.completed",
        "agent.turn_started",
        "agent.model_responded",
        "agent.finished"
      ])
      assert.isTrue(events.every((e) => e.runId === "r1"))
      // poll: finished
      const polled = yield* agent.poll("r1")
      assert.isTrue(Option.isSome(polled) && Exit.isSuccess(polled.value))
      // the same runId again is the same run: nothing runs again
      yield* agent.start("r1", user("plan: plain_write"))
      assert.strictEqual((yield* agent.result("r1")).text, "done: wrote k1")
      assert.strictEqual(counters.get("model"), 3)
    }).pipe(Effect.provide(Core.runner(agent, Core.memoryEngine(), counters)))
  })

  it.live("events resume after a sequence number", () => {
    const counters = Core.makeCounters()
    const agent = DurableAgent.make({ name: "since", tools: Core.makeTools(counters), pollInterval: "10 millis" })
    return Effect.gen(function*() {
      yield* agent.start("r", user("plan: read_value;read_value"))
      yield* agent.result("r")
      const all = Array.from(yield* Stream.runCollect(agent.events("r")))
      const tail = Array.from(yield* Stream.runCollect(agent.events("r", { since: 4 })))
      assert.deepStrictEqual(tail, all.slice(5))
      assert.strictEqual(tail.at(-1)?._tag, "agent.finished")
    }).pipe(Effect.provide(Core.runner(agent, Core.memoryEngine(), counters)))
  })

  it.live("a live reader sees events as they are journaled, up to agent.finished", () => {
    const counters = Core.makeCounters()
    const agent = DurableAgent.make({ name: "live", tools: Core.makeTools(counters), pollInterval: "10 millis" })
    return Effect.gen(function*() {
      const reader = yield* Effect.forkChild(Stream.runCollect(agent.events("r")))
      yield* agent.start("r", user("plan: read_value"))
      const events = Array.from(yield* Fiber.join(reader))
      assert.deepStrictEqual(events.map((e) => e._tag), [
        "agent.turn_started",
        "agent.model_responded",
        "tool.started",
        "tool.completed",
        "agent.turn_started",
        "agent.model_responded",
        "agent.finished"
      ])
    }).pipe(Effect.provide(Core.runner(agent, Core.memoryEngine(), counters)))
  })

  it.live("a model failure ends the run with AgentFailed (from the journal)", () => {
    const counters = Core.makeCounters()
    const agent = DurableAgent.make({ name: "fails", tools: Core.makeTools(counters), pollInterval: "10 millis" })
    return Effect.gen(function*() {
      yield* agent.start("r", user("model fails"))
      const error = yield* Effect.flip(agent.result("r"))
      assert.instanceOf(error, Agent.AgentFailed)
      assert.strictEqual(error.reason, "model")
      assert.strictEqual(error.error._tag, "ChatModelError")
      assert.strictEqual(error.error.message, "no model today")
      const events = Array.from(yield* Stream.runCollect(agent.events("r")))
      const last = events.at(-1)
      assert.strictEqual(last?._tag === "agent.finished" ? last.reason : undefined, "failed")
    }).pipe(Effect.provide(Core.runner(agent, Core.memoryEngine(), counters)))
  })
})

describe("DurableAgent on a SQLite runner", () => {
  it.live("a fatal tool error ends the run with AgentFailed; a restarted runner does not run anything again", () =>
    Effect.gen(function*() {
      const counters = Core.makeCounters()
      const agent = DurableAgent.make({ name: "fatal", tools: Core.makeTools(counters), pollInterval: "20 millis" })
      const filename = Core.tempFile("fatal")
      const run = Effect.flip(Effect.andThen(agent.start("r", user("plan: read_value,crash")), agent.result("r")))
      const first = yield* Effect.provide(run, Core.runner(agent, sqliteRunner(filename), counters))
      assert.instanceOf(first, Agent.AgentFailed)
      assert.strictEqual(first.reason, "tool")
      assert.strictEqual(first.error._tag, "ToolDefect")
      assert.deepStrictEqual(first.results.map((r) => r.toolCallId), ["0-0", "0-1"])
      const second = yield* Effect.provide(run, Core.runner(agent, sqliteRunner(filename), counters))
      assert.instanceOf(second, Agent.AgentFailed)
      assert.strictEqual(second.error._tag, "ToolDefect")
      assert.strictEqual(counters.get("crash"), 1)
      assert.strictEqual(counters.get("read_value"), 1)
      assert.strictEqual(counters.get("model"), 1)
    }), 30_000)

  it.live("journal replay: a restarted runner answers a finished run from the journal; nothing runs again", () =>
    Effect.gen(function*() {
      const counters = Core.makeCounters()
      const agent = DurableAgent.make({ name: "replay", tools: Core.makeTools(counters), pollInterval: "20 millis" })
      const filename = Core.tempFile("replay")
      const first = yield* Effect.provide(
        Effect.andThen(agent.start("r", user("plan: plain_write,keyed_write;read_value")), agent.result("r")),
        Core.runner(agent, sqliteRunner(filename), counters)
      )
      const counts = new Map(counters.counts)
      const second = yield* Effect.provide(
        Effect.andThen(agent.start("r", user("plan: plain_write,keyed_write;read_value")), agent.result("r")),
        Core.runner(agent, sqliteRunner(filename), counters)
      )
      assert.deepStrictEqual(second, first)
      assert.deepStrictEqual(counters.counts, counts)
      assert.strictEqual(counters.get("model"), 3)
      assert.strictEqual(counters.get("plain_write:0-0"), 1)
    }), 30_000)

  it.live("an approval: pending, approved from a client on the same file, the tool runs once", () =>
    Effect.gen(function*() {
      const counters = Core.makeCounters()
      const agent = DurableAgent.make({
        name: "approve",
        tools: Core.makeTools(counters),
        pollInterval: "20 millis",
        approval: (call) => call.name === "plain_write"
      })
      const filename = Core.tempFile("approve")
      const result = yield* Effect.gen(function*() {
        yield* agent.start("r", user("plan: plain_write"))
        const pending = yield* agent.events("r").pipe(
          Stream.filter((e) => e._tag === "agent.approval_requested"),
          Stream.runHead
        )
        assert.isTrue(Option.isSome(pending))
        assert.strictEqual(counters.get("plain_write:0-0"), 0, "not run before the decision")
        assert.isTrue(Option.isNone(yield* agent.poll("r")), "unfinished while the approval is pending")
        yield* Effect.provide(agent.approve("r", "0-0", Approval.approve("alice")), sqliteClient(filename))
        return yield* agent.result("r")
      }).pipe(Effect.provide(Core.runner(agent, sqliteRunner(filename), counters)))
      assert.strictEqual(result.text, "done: appended 0-0")
      assert.strictEqual(counters.get("plain_write:0-0"), 1)
    }), 30_000)

  it.live("an approval survives a restart: approved while no runner runs, the restarted runner finishes", () =>
    Effect.gen(function*() {
      const counters = Core.makeCounters()
      const agent = DurableAgent.make({
        name: "approve-restart",
        tools: Core.makeTools(counters),
        pollInterval: "20 millis",
        approval: (call) => call.name !== "read_value"
      })
      const filename = Core.tempFile("approve-restart")
      const scope = yield* Scope.make()
      const context = yield* Layer.buildWithScope(Core.runner(agent, sqliteRunner(filename), counters), scope)
      // the first process's reader got as far as the approval request
      const delivered = yield* Effect.provide(
        Effect.andThen(
          agent.start("r", user("plan: read_value,plain_write")),
          Stream.runCollect(Stream.takeUntil(agent.events("r"), (e) => e._tag === "agent.approval_requested"))
        ),
        context
      ).pipe(Effect.map((chunk) => Array.from(chunk)))
      yield* Scope.close(scope, Exit.void)
      assert.strictEqual(counters.get("plain_write:0-1"), 0)
      yield* Effect.provide(agent.approve("r", "0-1", Approval.approve("bob")), sqliteClient(filename))
      const { rest, result, all } = yield* Effect.provide(
        Effect.gen(function*() {
          // a reader resuming after the restart from the last sequence number it delivered
          const rest = Array.from(yield* Stream.runCollect(agent.events("r", { since: delivered.at(-1)!.sequence })))
          return { rest, result: yield* agent.result("r"), all: Array.from(yield* Stream.runCollect(agent.events("r"))) }
        }),
        Core.runner(agent, sqliteRunner(filename), counters)
      )
      assert.deepStrictEqual([...delivered, ...rest], all)
      assert.deepStrictEqual(all.map((e) => e.sequence), all.map((_, i) => i))
      assert.deepStrictEqual(rest.map((e) => e._tag), [
        "tool.started",
        "tool.completed",
        "tool.started",
        "tool.completed",
        "agent.turn_started",
        "agent.model_responded",
        "agent.finished"
      ])
      assert.strictEqual(result.text, "done: value of 0-0 | appended 0-1")
      assert.strictEqual(counters.get("plain_write:0-1"), 1)
      assert.strictEqual(counters.get("read_value"), 1)
    }), 30_000)

  it.live("a denied call is answered ApprovalDenied and never runs", () =>
    Effect.gen(function*() {
      const counters = Core.makeCounters()
      const agent = DurableAgent.make({
        name: "deny",
        tools: Core.makeTools(counters),
        pollInterval: "20 millis",
        approval: () => true
      })
      const filename = Core.tempFile("deny")
      const result = yield* Effect.gen(function*() {
        yield* agent.start("r", user("plan: plain_write"))
        yield* Stream.runHead(Stream.filter(agent.events("r"), (e) => e._tag === "agent.approval_requested"))
        yield* agent.approve("r", "0-0", Approval.deny("not today", "carol"))
        return yield* agent.result("r")
      }).pipe(Effect.provide(Core.runner(agent, sqliteRunner(filename), counters)))
      assert.strictEqual(result.results[0]?.error?._tag, "ApprovalDenied")
      assert.strictEqual(counters.get("plain_write:0-0"), 0)
    }), 30_000)
})


describe("DurableAgent approvals with the consent middleware", () => {
  it.live("consent reads the journaled decision: an edit runs the call with the edited arguments, once", () =>
    Effect.gen(function*() {
      const counters = Core.makeCounters()
      const agent = DurableAgent.make({
        name: "consent",
        tools: Core.makeTools(counters),
        middleware: [consent({ when: (invocation) => invocation.spec.name === "plain_write" })],
        pollInterval: "20 millis",
        approval: (call) => call.name === "plain_write"
      })
      const filename = Core.tempFile("consent")
      const result = yield* Effect.gen(function*() {
        yield* agent.start("r", user("plan: plain_write"))
        const pending = yield* Stream.runHead(
          Stream.filter(agent.events("r"), (e) => e._tag === "agent.approval_requested")
        )
        assert.isTrue(Option.isSome(pending))
        if (Option.isSome(pending) && pending.value._tag === "agent.approval_requested") {
          assert.strictEqual(pending.value.toolCallId, "0-0")
          assert.strictEqual(pending.value.toolName, "plain_write")
          assert.deepStrictEqual(pending.value.arguments, { line: "0-0" })
        }
        yield* Effect.provide(
          agent.approve("r", "0-0", Approval.edit({ line: "edited" }, "dave")),
          sqliteClient(filename)
        )
        return yield* agent.result("r")
      }).pipe(
        // no Approval layer at all: the only answer consent can get is the journaled decision
        Effect.provide(Core.runner(agent, sqliteRunner(filename), counters))
      )
      assert.strictEqual(result.text, "done: appended edited")
      assert.strictEqual(counters.get("plain_write:edited"), 1)
      assert.strictEqual(counters.get("plain_write:0-0"), 0)
      assert.strictEqual(result.results[0]?.audit?.consent?.decidedBy, "dave")
    }), 30_000)

  it.live("the journaled decision answers only its call: another question asked during the call is not approved by it", () =>
    Effect.gen(function*() {
      const counters = Core.makeCounters()
      const answers: Array<Approval.Decision> = []
      // what an MCP server's elicitation does during the call: ask `Approval` about something else
      const askOther = (tool: string) =>
        tool !== "plain_write" ? Effect.void : Effect.gen(function*() {
          const approval = yield* Effect.serviceOption(Approval.Approval)
          if (Option.isNone(approval)) return
          const other = yield* approval.value.decide({
            toolName: "plain_write",
            callId: "0-0:elicitation:1",
            arguments: {},
            spec: undefined as never,
            why: "a server asks"
          })
          answers.push(other)
        })
      const agent = DurableAgent.make({
        name: "elicit",
        tools: Core.makeTools(counters, { afterApply: askOther }),
        pollInterval: "20 millis",
        approval: (call) => call.name === "plain_write"
      })
      const filename = Core.tempFile("elicit")
      const result = yield* Effect.gen(function*() {
        yield* agent.start("r", user("plan: plain_write"))
        yield* Stream.runHead(Stream.filter(agent.events("r"), (e) => e._tag === "agent.approval_requested"))
        yield* Effect.provide(agent.approve("r", "0-0", Approval.approve("dave")), sqliteClient(filename))
        return yield* agent.result("r")
      }).pipe(Effect.provide(Core.runner(agent, sqliteRunner(filename), counters)))
      assert.strictEqual(result.text, "done: appended 0-0")
      assert.deepStrictEqual(answers, [Approval.deny("no one can answer it during a durable run", "durable")])
    }), 30_000)
})

/** Waits (bounded) until run `runId` has at least `n` pending approvals, and returns them. */
const pendingAtLeast = <R, MR>(agent: DurableAgent.DurableAgent<R, MR>, runId: string, n: number) =>
  Effect.suspend(() => agent.pending(runId)).pipe(
    Effect.repeat({ until: (pending) => pending.length >= n, schedule: Schedule.spaced("10 millis") }),
    Effect.timeoutOrElse({ duration: "10 seconds", orElse: () => Effect.die(new Error(`fewer than ${n} pending approvals`)) })
  )

describe("DurableAgent approvals answer exactly one request", () => {
  it.live("a decision for a call id does not approve a later call with the same id; approve fails when nothing waits", () => {
    const counters = Core.makeCounters()
    const agent = DurableAgent.make({
      name: "bypass",
      tools: Core.makeTools(counters),
      pollInterval: "10 millis",
      approval: (call) => call.name === "plain_write"
    })
    return Effect.gen(function*() {
      // Gemini-style positional ids repeat every turn: the same id, other arguments
      yield* agent.start("r", user("plan: plain_write@g=alice;plain_write@g=mallory"))
      const first = yield* pendingAtLeast(agent, "r", 1)
      assert.deepStrictEqual(first, [{ callId: "g", toolName: "plain_write", arguments: { line: "alice" }, turn: 0, index: 0 }])
      // a mistyped id pre-approves nothing
      const typo = yield* Effect.flip(agent.approve("r", "c_typo", Approval.approve("bob")))
      assert.instanceOf(typo, DurableAgent.ApprovalNotPending)
      assert.strictEqual(typo.reason, "not pending")
      assert.strictEqual((yield* Effect.flip(agent.approve("unknown-run", "g", Approval.approve("bob")))).reason, "no such run")
      yield* agent.approve("r", "g", Approval.approve("bob"))
      // the same decision again is a retry (succeeds); another decision for the decided request fails
      yield* agent.approve("r", "g", Approval.approve("bob"))
      // turn 1's call with the same id waits for its own decision
      const second = yield* pendingAtLeast(agent, "r", 1).pipe(
        Effect.repeat({ until: (p) => p[0]?.turn === 1, schedule: Schedule.spaced("10 millis") })
      )
      assert.deepStrictEqual(second, [{ callId: "g", toolName: "plain_write", arguments: { line: "mallory" }, turn: 1, index: 0 }])
      assert.strictEqual(counters.get("plain_write:alice"), 1)
      assert.strictEqual(counters.get("plain_write:mallory"), 0)
      yield* agent.approve("r", "g", Approval.deny("no", "bob"))
      assert.strictEqual((yield* Effect.flip(agent.approve("r", "g", Approval.approve("eve")))).reason, "already decided")
      const result = yield* agent.result("r")
      assert.strictEqual(counters.get("plain_write:mallory"), 0)
      assert.strictEqual(result.results[1]?.error?._tag, "ApprovalDenied")
      assert.strictEqual((yield* Effect.flip(agent.approve("r", "g", Approval.approve("eve")))).reason, "finished")
      assert.deepStrictEqual(yield* agent.pending("r"), [])
    }).pipe(Effect.provide(Core.runner(agent, Core.memoryEngine(), counters)))
  })

  it.live("every approval of a turn is requested before any is decided", () => {
    const counters = Core.makeCounters()
    const agent = DurableAgent.make({ name: "together", tools: Core.makeTools(counters), pollInterval: "10 millis", approval: () => true })
    return Effect.gen(function*() {
      yield* agent.start("r", user("plan: plain_write,keyed_write"))
      const pending = yield* pendingAtLeast(agent, "r", 2)
      assert.deepStrictEqual(pending.map((p) => [p.callId, p.toolName, p.index]), [["0-0", "plain_write", 0], ["0-1", "keyed_write", 1]])
      const requested = yield* agent.events("r").pipe(
        Stream.filter((e) => e._tag === "agent.approval_requested"),
        Stream.take(2),
        Stream.runCollect
      )
      assert.deepStrictEqual(Array.from(requested).map((e) => e._tag === "agent.approval_requested" ? e.toolCallId : ""), ["0-0", "0-1"])
      // decided in reverse order
      yield* agent.approve("r", "0-1", Approval.approve("bob"))
      yield* agent.approve("r", "0-0", Approval.approve("bob"))
      const result = yield* agent.result("r")
      assert.strictEqual(result.text, "done: appended 0-0 | wrote k0")
    }).pipe(Effect.provide(Core.runner(agent, Core.memoryEngine(), counters)))
  })

  it.live("an Edit runs the call with the edited arguments without the consent middleware; invalid edits are refused", () => {
    const counters = Core.makeCounters()
    const agent = DurableAgent.make({ name: "edit", tools: Core.makeTools(counters), pollInterval: "10 millis", approval: () => true })
    return Effect.gen(function*() {
      yield* agent.start("r", user("plan: plain_write;plain_write"))
      yield* pendingAtLeast(agent, "r", 1)
      yield* agent.approve("r", "0-0", Approval.edit({ line: "edited" }, "dave"))
      yield* pendingAtLeast(agent, "r", 1).pipe(
        Effect.repeat({ until: (p) => p[0]?.turn === 1, schedule: Schedule.spaced("10 millis") })
      )
      yield* agent.approve("r", "1-0", Approval.edit({ line: 5 }, "dave"))
      const result = yield* agent.result("r")
      assert.strictEqual(counters.get("plain_write:edited"), 1)
      assert.strictEqual(counters.get("plain_write:0-0"), 0)
      assert.strictEqual(counters.get("plain_write:1-0"), 0)
      assert.isFalse(result.results[0]!.isError)
      assert.isTrue(result.results[1]!.isError)
    }).pipe(Effect.provide(Core.runner(agent, Core.memoryEngine(), counters)))
  })
})

describe("DurableAgent calls, runs and context", () => {
  it.live("two calls with the same id in one turn both run, as in Agent.run", () => {
    const counters = Core.makeCounters()
    const agent = DurableAgent.make({ name: "dup", tools: Core.makeTools(counters), pollInterval: "10 millis" })
    const plan = user("plan: plain_write@c1=alice,plain_write@c1=bob")
    return Effect.gen(function*() {
      yield* agent.start("r", plan)
      const durable = yield* agent.result("r")
      assert.strictEqual(counters.get("plain_write:alice"), 1)
      assert.strictEqual(counters.get("plain_write:bob"), 1)
      assert.strictEqual(durable.text, "done: appended alice | appended bob")
      // Agent.run with the same model: the same answers
      const direct = yield* Agent.run({ tools: Core.makeTools(Core.makeCounters()), messages: plan }).pipe(
        Effect.provide([Core.model(Core.makeCounters()), ToolServices.layerTest()])
      )
      assert.strictEqual(direct.text, durable.text)
      assert.deepStrictEqual(direct.results.map((r) => [r.toolCallId, r.isError]), durable.results.map((r) => [r.toolCallId, r.isError]))
    }).pipe(Effect.provide(Core.runner(agent, Core.memoryEngine(), counters)))
  })

  it.live("two workflows running the same runId on one journal keep their events apart", () => {
    const counters = Core.makeCounters()
    const alpha = DurableAgent.make({ name: "alpha", tools: Core.makeTools(counters), pollInterval: "10 millis" })
    const beta = DurableAgent.make({ name: "beta", tools: Core.makeTools(counters), pollInterval: "10 millis" })
    const filename = Core.tempFile("two-workflows")
    const layer = Layer.mergeAll(alpha.layer, beta.layer).pipe(
      Layer.provide([Core.model(counters), Stores.layerMemory]),
      Layer.provideMerge(sqliteRunner(filename))
    )
    return Effect.gen(function*() {
      yield* alpha.start("run-1", user("plan: read_value"))
      yield* beta.start("run-1", user("plan: plain_write;plain_write"))
      const a = yield* alpha.result("run-1")
      const b = yield* beta.result("run-1")
      assert.strictEqual(a.text, "done: value of 0-0")
      assert.strictEqual(b.text, "done: appended 1-0")
      for (const [agent, tool, finished] of [[alpha, "read_value", a.text], [beta, "plain_write", b.text]] as const) {
        const events = Array.from(yield* Stream.runCollect(agent.events("run-1")))
        assert.deepStrictEqual(events.map((e) => e.sequence), events.map((_, i) => i))
        assert.isTrue(events.every((e) => !("toolName" in e) || e.toolName === tool))
        const last = events.at(-1)
        assert.strictEqual(last?._tag === "agent.finished" ? last.text : undefined, finished)
      }
    }).pipe(Effect.provide(layer))
  }, 30_000)

  it.live("start's threadId and user are the handlers' RunContext", () => {
    const counters = Core.makeCounters()
    const agent = DurableAgent.make({ name: "context", tools: Core.makeTools(counters), pollInterval: "10 millis" })
    return Effect.gen(function*() {
      yield* agent.start("r", user("plan: whoami"), { threadId: "t-9", user: { id: "u1" } })
      assert.strictEqual((yield* agent.result("r")).text, `done: r|t-9|0|{"id":"u1"}`)
      yield* agent.start("plain", user("plan: read_value;whoami"))
      assert.strictEqual((yield* agent.result("plain")).text, "done: plain|plain|1|null")
    }).pipe(Effect.provide(Core.runner(agent, Core.memoryEngine(), counters)))
  })
})
