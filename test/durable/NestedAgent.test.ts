/**
 * Agents nested in durable runs: `Agent.asTool` (the nested run is part of its call's activity; its
 * usage journaled with the call, so a replayed call adds it again) and `DurableAgent.asTool` (the
 * nested agent's run is a durable child run `<run>/<turn>/<index>` with its own journal: a runner
 * that stops mid-nested-run is resumed by the next one without asking the nested model again for the
 * turns it answered or running its completed calls again). The SIGKILL version is CrashNested.test.ts.
 */
import { afterAll, assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Layer, Schema, Scope, Stream } from "effect"
import { Agent, Approval, ChatModel, Tool, ToolRegistry, ToolResult, ToolServices } from "../../src/index.ts"
import * as Stores from "../../src/stores/Stores.ts"
import { DurableAgent, Runner } from "../../src/durable/index.ts"
import * as Core from "./support/core.ts"

afterAll(Core.cleanup)

const user = (content: string) => [{ role: "user" as const, content }]
const sqliteRunner = (filename: string) =>
  Runner.layerSqlite({ filename, pollInterval: "50 millis", lockExpiration: "2 seconds", shutdownTimeout: "50 millis" })
const sqliteClient = (filename: string) => Runner.layerSqliteClient({ filename, pollInterval: "50 millis" })

/**
 * The nested agent's model: its user message is the line; it calls `read_value` (turn 0), then, when
 * `approved` is set, `plain_write` (turn 1, which waits for an approval), then answers
 * `nested read <line>: <last tool text>`. Each answer costs 5 + 2 tokens; counted as `nested model`.
 */
const nestedModel = (counters: Core.Counters, options: { readonly approved?: boolean } = {}) =>
  ChatModel.fromFunction((request) => {
    counters.bump("nested model")
    const line = request.messages.find((m) => m.role === "user")
    const text = line?.role === "user" ? line.content : "?"
    const turn = request.messages.filter((m) => m.role === "tool").length
    const last = request.messages.findLast((m) => m.role === "tool")
    const usage = { inputTokens: 5, outputTokens: 2 }
    if (turn === 0) return Effect.succeed({ ...ChatModel.callTools([["n0", "read_value", { name: text }]]), usage })
    if (turn === 1 && options.approved === true) {
      return Effect.succeed({ ...ChatModel.callTools([["n1", "plain_write", { line: text }]]), usage })
    }
    const seen = last?.role === "tool" ? last.results.map((r) => r.content.map((b) => b.type === "text" ? b.text : "").join("")).join() : ""
    return Effect.succeed({ ...ChatModel.answer(`nested read ${text}: ${seen}`), usage })
  })

const registry = (tools: ReadonlyArray<Parameters<typeof ToolRegistry.makeResult>[0][number]>) => {
  const made = ToolRegistry.makeResult(tools)
  if (made._tag === "Failure") throw made.failure
  return made.success
}

describe("DurableAgent with an agent as a tool (Agent.asTool)", () => {
  it.live("the nested run is part of its call's activity: its answer and its events are journaled with the call", () => {
    const counters = Core.makeCounters()
    const nested = Agent.asTool({
      tools: registry([]),
      model: ChatModel.fromFunction((request) => {
        counters.bump("nested model")
        const last = request.messages.at(-1)
        return Effect.succeed({
          ...ChatModel.answer(`nested read ${last?.role === "user" ? last.content : "?"}`),
          usage: { inputTokens: 5, outputTokens: 2 }
        })
      })
    }, {
      name: "helper",
      description: "Helps.",
      input: Schema.Struct({ line: Schema.String }),
      prompt: ({ line }) => line
    })
    const agent = DurableAgent.make({ name: "nested", tools: registry([nested]), pollInterval: "10 millis" })
    return Effect.gen(function*() {
      yield* agent.start("r1", user("plan: helper=x"))
      const result = yield* agent.result("r1")
      assert.strictEqual(result.text, "done: nested read x")
      assert.strictEqual(counters.get("nested model"), 1)
      // the nested run's usage adds to the run's (the durable model's own turns use none)
      assert.deepStrictEqual(result.usage, { inputTokens: 5, outputTokens: 2 })
      const events = Array.from(yield* Stream.runCollect(agent.events("r1")))
      const inner = events.filter((e) => e.depth === 1)
      assert.deepStrictEqual(inner.map((e) => [e._tag, e.parentRunId, e.parentCallId]), [
        ["agent.turn_started", "r1", "0-0"],
        ["agent.model_responded", "r1", "0-0"],
        ["agent.finished", "r1", "0-0"]
      ])
      // the same run id again: nothing runs again, the nested model included
      yield* agent.start("r1", user("plan: helper=x"))
      assert.strictEqual((yield* agent.result("r1")).text, "done: nested read x")
      assert.strictEqual(counters.get("nested model"), 1)
    }).pipe(Effect.provide(Core.runner(agent, Core.memoryEngine(), counters)))
  })

  it.live("a call replayed from the journal adds its nested run's usage: a resumed run's usage is the uncrashed run's", () =>
    Effect.gen(function*() {
      const counters = Core.makeCounters()
      const nested = Agent.asTool({ tools: Core.makeTools(counters), model: nestedModel(counters) }, {
        name: "helper",
        description: "Helps.",
        input: Schema.Struct({ line: Schema.String }),
        prompt: ({ line }) => line
      })
      const write = Tool.make("plain_write", {
        description: "Appends a line.",
        input: Schema.Struct({ line: Schema.String }),
        handler: ({ line }) => Effect.succeed(`appended ${line}`)
      })
      const agent = DurableAgent.make({
        name: "nested-usage",
        tools: registry([nested, write]),
        pollInterval: "20 millis",
        approval: (call) => call.name === "plain_write"
      })
      // uncrashed: the same run in one process
      const whole = yield* Effect.provide(
        Effect.andThen(agent.start("u", user("plan: helper=x;plain_write")), Effect.andThen(
          Stream.runDrain(Stream.takeUntil(agent.events("u"), (e) => e._tag === "agent.approval_requested")),
          Effect.andThen(agent.approve("u", "1-0", Approval.approve("alice")), agent.result("u"))
        )),
        Core.runner(agent, Core.memoryEngine(), counters)
      )
      assert.deepStrictEqual(whole.usage, { inputTokens: 10, outputTokens: 4 })
      // stopped at turn 1's approval, resumed by another runner: turn 0's call is replayed from the journal
      const filename = Core.tempFile("nested-usage")
      const runner = () => Core.runner(agent, sqliteRunner(filename), counters)
      const scope = yield* Scope.make()
      yield* Effect.provide(
        Effect.andThen(
          agent.start("s", user("plan: helper=x;plain_write")),
          Stream.runDrain(Stream.takeUntil(agent.events("s"), (e) => e._tag === "agent.approval_requested"))
        ),
        yield* Layer.buildWithScope(runner(), scope)
      )
      yield* Scope.close(scope, Exit.void)
      const asked = counters.get("nested model")
      yield* Effect.provide(agent.approve("s", "1-0", Approval.approve("alice")), sqliteClient(filename))
      const resumed = yield* Effect.provide(agent.result("s"), runner())
      assert.strictEqual(counters.get("nested model"), asked, "the nested run was not run again")
      assert.deepStrictEqual(resumed.usage, whole.usage)
    }), 30_000)
})

describe("DurableAgent.asTool: a nested durable agent", () => {
  const make = (
    counters: Core.Counters,
    name: string,
    options: { readonly approved?: boolean; readonly hooks?: Core.Hooks } = {}
  ) => {
    const child = DurableAgent.make({
      name: `${name}-child`,
      tools: Core.makeTools(counters, options.hooks),
      pollInterval: "20 millis",
      approval: (call) => options.approved === true && call.name === "plain_write"
    })
    const parent = DurableAgent.make({
      name,
      tools: registry([
        DurableAgent.asTool(child, {
          name: "helper",
          description: "Helps.",
          input: Schema.Struct({ line: Schema.String }),
          prompt: ({ line }) => line
        })
      ]),
      pollInterval: "20 millis"
    })
    const layer = (engine: Layer.Layer<Runner.Services>) =>
      Layer.mergeAll(
        parent.layer.pipe(Layer.provide([Core.model(counters), Stores.layerMemory])),
        child.layer.pipe(Layer.provide([nestedModel(counters, options), Stores.layerMemory]))
      ).pipe(Layer.provideMerge(engine))
    return { child, parent, layer }
  }

  it.live("the nested run is a durable run of its own, named <run>/<turn>/<index>: its events and usage reach the parent's", () => {
    const counters = Core.makeCounters()
    const { child, layer, parent } = make(counters, "durable-nested")
    return Effect.gen(function*() {
      yield* parent.start("r1", user("plan: helper=x"))
      const result = yield* parent.result("r1")
      assert.strictEqual(result.text, "done: nested read x: value of x")
      assert.strictEqual(counters.get("nested model"), 2)
      assert.strictEqual(counters.get("read_value"), 1)
      assert.deepStrictEqual(result.usage, { inputTokens: 10, outputTokens: 4 })
      // the child run, read as any durable run
      assert.strictEqual((yield* child.result("r1/0/0")).text, "nested read x: value of x")
      const events = Array.from(yield* Stream.runCollect(parent.events("r1")))
      const inner = events.filter((e) => e.depth === 1)
      assert.deepStrictEqual(inner.map((e) => e._tag), [
        "agent.turn_started",
        "agent.model_responded",
        "tool.started",
        "tool.completed",
        "agent.turn_started",
        "agent.model_responded",
        "agent.finished"
      ])
      for (const e of inner) assert.deepStrictEqual([e.runId, e.parentRunId, e.parentCallId], ["r1/0/0", "r1", "0-0"])
      // inside the parent's call: between its tool.started and its tool.completed
      const at = (tag: string) => events.findIndex((e) => e.depth === undefined && e._tag === tag && "toolName" in e && e.toolName === "helper")
      assert.isTrue(at("tool.started") < events.indexOf(inner[0]!) && events.indexOf(inner.at(-1)!) < at("tool.completed"))
      // the same run again: nothing runs again
      yield* parent.start("r1", user("plan: helper=x"))
      assert.strictEqual((yield* parent.result("r1")).text, "done: nested read x: value of x")
      assert.strictEqual(counters.get("nested model"), 2)
    }).pipe(Effect.provide(layer(Core.memoryEngine())))
  })

  it.live("a runner that stops mid-nested-run: the next one resumes the nested run from its journal", () =>
    Effect.gen(function*() {
      const counters = Core.makeCounters()
      const { child, layer, parent } = make(counters, "durable-nested-resume", { approved: true })
      const filename = Core.tempFile("nested-resume")
      // the first runner runs the nested run's turn 0 and its call, then the nested run waits for an approval
      const scope = yield* Scope.make()
      yield* Effect.provide(
        Effect.gen(function*() {
          yield* parent.start("p", user("plan: helper=x"))
          yield* Stream.runDrain(Stream.takeUntil(child.events("p/0/0"), (e) => e._tag === "agent.approval_requested"))
        }),
        yield* Layer.buildWithScope(layer(sqliteRunner(filename)), scope)
      )
      yield* Scope.close(scope, Exit.void)
      assert.deepStrictEqual([counters.get("model"), counters.get("nested model"), counters.get("read_value")], [1, 2, 1])
      yield* Effect.provide(child.approve("p/0/0", "n1", Approval.approve("alice")), sqliteClient(filename))
      const result = yield* Effect.provide(parent.result("p"), layer(sqliteRunner(filename)))
      assert.strictEqual(result.text, "done: nested read x: appended x")
      // the nested model was asked once per turn, its calls ran once each
      assert.deepStrictEqual(
        [counters.get("model"), counters.get("nested model"), counters.get("read_value"), counters.get("plain_write:x")],
        [2, 3, 1, 1]
      )
      assert.deepStrictEqual(result.usage, { inputTokens: 15, outputTokens: 6 })
    }), 30_000)

  it.live("two nested runs in one turn, on a SQLite runner: each its own run, named by its call's position", () =>
    Effect.gen(function*() {
      const counters = Core.makeCounters()
      const { child, layer, parent } = make(counters, "durable-nested-two")
      const filename = Core.tempFile("nested-two")
      const result = yield* Effect.provide(
        Effect.andThen(parent.start("t", user("plan: helper=x,helper=y")), parent.result("t")),
        layer(sqliteRunner(filename))
      )
      assert.strictEqual(result.text, "done: nested read x: value of x | nested read y: value of y")
      assert.deepStrictEqual([counters.get("nested model"), counters.get("read_value")], [4, 2])
      const nested = yield* Effect.provide(Effect.all([child.result("t/0/0"), child.result("t/0/1")]), sqliteClient(filename))
      assert.deepStrictEqual(nested.map((r) => r.text), ["nested read x: value of x", "nested read y: value of y"])
    }), 30_000)

  it.live("called by an inline agent (Agent.asTool) inside a durable call, the tool is refused: no run is shared or started", () => {
    const counters = Core.makeCounters()
    const child = DurableAgent.make({ name: "durable-nested-inline-child", tools: Core.makeTools(counters), pollInterval: "20 millis" })
    const helper = DurableAgent.asTool(child, {
      name: "helper",
      description: "Helps.",
      input: Schema.Struct({ line: Schema.String }),
      prompt: ({ line }) => line
    })
    // an inline planner whose model calls the durable helper twice in one turn
    const planner = Agent.asTool({
      tools: registry([helper]),
      model: ChatModel.fromFunction((request) => {
        const last = request.messages.at(-1)
        return Effect.succeed(
          last?.role === "tool"
            ? ChatModel.answer(last.results.map((r) => ToolResult.textOf(r)).join(" | "))
            : ChatModel.callTools([["a", "helper", { line: "alpha" }], ["b", "helper", { line: "beta" }]])
        )
      })
    }, { name: "planner", description: "Plans.", input: Schema.Struct({ line: Schema.String }), prompt: ({ line }) => line })
    const parent = DurableAgent.make({ name: "durable-nested-inline", tools: registry([planner]), pollInterval: "20 millis" })
    const layer = Layer.mergeAll(
      parent.layer.pipe(Layer.provide([Core.model(counters), Stores.layerMemory])),
      child.layer.pipe(Layer.provide([nestedModel(counters), Stores.layerMemory]))
    ).pipe(Layer.provideMerge(Core.memoryEngine()))
    return Effect.gen(function*() {
      yield* parent.start("i", user("plan: planner=x"))
      const result = yield* parent.result("i")
      // before, both calls were named i/0/0 by the durable call's position: "nested read alpha" twice
      const refused = "agent helper was not run: a durable agent tool must be called directly by a durable agent"
      assert.strictEqual(result.text.split(" | ").filter((text) => text.includes(refused)).length, 2)
      assert.strictEqual(counters.get("nested model"), 0)
    }).pipe(Effect.provide(layer))
  })

  it.live("a nested run that hands over: every agent's usage reaches the parent, not only the first leg's", () => {
    const counters = Core.makeCounters()
    const transfer = Tool.make("transfer", {
      description: "Hands over.",
      input: Schema.Struct({ to: Schema.String, task: Schema.String }),
      safety: { access: "read", idempotent: true },
      handler: ({ task, to }) => Effect.succeed({ __handoff: { target: to, task } })
    })
    // triage hands over (10 + 2 tokens); billing answers (30 + 6 tokens)
    const triage = ChatModel.fromFunction(() =>
      Effect.succeed({ ...ChatModel.callTools([["t1", "transfer", { to: "billing", task: "refund" }]]), usage: { inputTokens: 10, outputTokens: 2 } })
    )
    const billing = {
      tools: registry([]),
      model: ChatModel.fromFunction(() => Effect.succeed({ ...ChatModel.answer("billing done"), usage: { inputTokens: 30, outputTokens: 6 } }))
    }
    const child = DurableAgent.make({
      name: "durable-nested-handoff-child",
      tools: registry([transfer]),
      handoffs: { agents: { billing } },
      pollInterval: "20 millis"
    })
    const helper = DurableAgent.asTool(child, { name: "helper", description: "Helps.", input: Schema.Struct({ line: Schema.String }), prompt: ({ line }) => line })
    const parent = DurableAgent.make({ name: "durable-nested-handoff", tools: registry([helper]), pollInterval: "20 millis" })
    const layer = Layer.mergeAll(
      parent.layer.pipe(Layer.provide([Core.model(counters), Stores.layerMemory])),
      child.layer.pipe(Layer.provide([triage, Stores.layerMemory]))
    ).pipe(Layer.provideMerge(Core.memoryEngine()))
    return Effect.gen(function*() {
      yield* parent.start("h", user("plan: helper=x"))
      const result = yield* parent.result("h")
      assert.strictEqual(result.text, "done: billing done")
      assert.deepStrictEqual((yield* child.result("h/0/0")).usage, { inputTokens: 40, outputTokens: 8 })
      assert.deepStrictEqual(result.usage, { inputTokens: 40, outputTokens: 8 })
    }).pipe(Effect.provide(layer))
  })

  it.live("a call that times out cancels its nested run (reason \"timed out\"): it starts nothing more", () => {
    const counters = Core.makeCounters()
    const child = DurableAgent.make({ name: "durable-nested-timeout-child", tools: Core.makeTools(counters), pollInterval: "20 millis" })
    const helper = DurableAgent.asTool(child, {
      name: "helper",
      description: "Helps.",
      input: Schema.Struct({ line: Schema.String }),
      prompt: ({ line }) => line,
      timeout: "100 millis"
    })
    const parent = DurableAgent.make({ name: "durable-nested-timeout", tools: registry([helper]), pollInterval: "20 millis" })
    // the nested model takes 400 ms to call read_value: the call times out while it thinks
    const slow = ChatModel.fromFunction((request) =>
      Effect.as(Effect.sleep("400 millis"), request.messages.some((m) => m.role === "tool")
        ? ChatModel.answer("nested done")
        : ChatModel.callTools([["n0", "read_value", { name: "x" }]]))
    )
    const layer = Layer.mergeAll(
      parent.layer.pipe(Layer.provide([Core.model(counters), Stores.layerMemory])),
      child.layer.pipe(Layer.provide([slow, Stores.layerMemory]))
    ).pipe(Layer.provideMerge(Core.memoryEngine()))
    return Effect.gen(function*() {
      yield* parent.start("t", user("plan: helper=x"))
      const result = yield* parent.result("t")
      assert.match(result.text, /helper: timed out after 100 ms/)
      const nested = yield* Effect.flip(Effect.timeout(child.result("t/0/0"), "5 seconds"))
      assert.strictEqual(nested._tag === "RunCancelled" ? nested.reason : nested._tag, "timed out")
      assert.strictEqual(counters.get("read_value"), 0)
    }).pipe(Effect.provide(layer))
  })

  it.live("cancelling the parent while the nested run waits for an approval cancels it too: nothing waits on", () =>
    Effect.gen(function*() {
      const counters = Core.makeCounters()
      const { child, layer, parent } = make(counters, "durable-nested-cancel-wait", { approved: true })
      const filename = Core.tempFile("nested-cancel-wait")
      const { nested, result } = yield* Effect.provide(
        Effect.gen(function*() {
          yield* parent.start("w", user("plan: helper=x"))
          yield* Stream.runDrain(Stream.takeUntil(child.events("w/0/0"), (e) => e._tag === "agent.approval_requested"))
          yield* parent.cancel("w", { reason: "user left" })
          const nested = yield* Effect.flip(child.result("w/0/0"))
          return { result: yield* Effect.flip(parent.result("w")), nested }
        }),
        layer(sqliteRunner(filename))
      )
      assert.deepStrictEqual([result._tag, result._tag === "RunCancelled" ? result.reason : ""], ["RunCancelled", "user left"])
      assert.deepStrictEqual([nested._tag, nested._tag === "RunCancelled" ? nested.reason : ""], ["RunCancelled", "user left"])
      assert.strictEqual(counters.get("plain_write:x"), 0, "the call waiting for its approval never ran")
      assert.deepStrictEqual(yield* Effect.provide(child.pending("w/0/0"), sqliteClient(filename)), [])
    }), 30_000)

  it.live("a nested agent with a typed output: the tool's output is the decoded value", () => {
    const counters = Core.makeCounters()
    const child = DurableAgent.make({
      name: "durable-nested-typed-child",
      tools: registry([]),
      output: Schema.Struct({ city: Schema.String, nights: Schema.Int }),
      pollInterval: "20 millis"
    })
    const parent = DurableAgent.make({
      name: "durable-nested-typed",
      tools: registry([
        DurableAgent.asTool(child, { name: "helper", description: "Plans.", input: Schema.Struct({ line: Schema.String }), prompt: (i) => i.line })
      ]),
      pollInterval: "20 millis"
    })
    const childModel = ChatModel.fromFunction(() => Effect.succeed(ChatModel.answerJson({ city: "Lisbon", nights: 3 })), { structuredOutput: true })
    const layer = Layer.mergeAll(
      parent.layer.pipe(Layer.provide([Core.model(counters), Stores.layerMemory])),
      child.layer.pipe(Layer.provide([childModel, Stores.layerMemory]))
    ).pipe(Layer.provideMerge(Core.memoryEngine()))
    return Effect.gen(function*() {
      yield* parent.start("o", user("plan: helper=x"))
      const result = yield* parent.result("o")
      assert.deepStrictEqual(result.results[0]?.value, { city: "Lisbon", nights: 3 })
      assert.deepStrictEqual((yield* child.result("o/0/0")).output, { city: "Lisbon", nights: 3 })
    }).pipe(Effect.provide(layer))
  })

  it.live("nested two deep: the depth-2 run's events reach the top run stamped with depth 2, its usage adds at every level", () => {
    const counters = Core.makeCounters()
    const line = Schema.Struct({ line: Schema.String })
    const grandchild = DurableAgent.make({ name: "durable-deep-2", tools: Core.makeTools(counters), pollInterval: "20 millis" })
    const child = DurableAgent.make({
      name: "durable-deep-1",
      tools: registry([DurableAgent.asTool(grandchild, { name: "deeper", description: "Reads.", input: line, prompt: (i) => i.line })]),
      pollInterval: "20 millis"
    })
    const parent = DurableAgent.make({
      name: "durable-deep-0",
      tools: registry([
        DurableAgent.asTool(child, { name: "helper", description: "Helps.", input: line, prompt: (i) => `plan: deeper=${i.line}` })
      ]),
      pollInterval: "20 millis"
    })
    const layer = Layer.mergeAll(
      parent.layer.pipe(Layer.provide([Core.model(counters), Stores.layerMemory])),
      child.layer.pipe(Layer.provide([Core.model(counters), Stores.layerMemory])),
      grandchild.layer.pipe(Layer.provide([nestedModel(counters), Stores.layerMemory]))
    ).pipe(Layer.provideMerge(Core.memoryEngine()))
    return Effect.gen(function*() {
      yield* parent.start("d2", user("plan: helper=x"))
      const result = yield* parent.result("d2")
      assert.strictEqual(result.text, "done: done: nested read x: value of x")
      assert.deepStrictEqual(result.usage, { inputTokens: 10, outputTokens: 4 })
      assert.deepStrictEqual((yield* child.result("d2/0/0")).usage, { inputTokens: 10, outputTokens: 4 })
      const events = Array.from(yield* Stream.runCollect(parent.events("d2")))
      const deepest = events.filter((e) => e.depth === 2)
      assert.isAbove(deepest.length, 0)
      for (const e of deepest) assert.deepStrictEqual([e.runId, e.parentRunId, e.parentCallId], ["d2/0/0/0/0", "d2/0/0", "0-0"])
      assert.isTrue(events.some((e) => e.depth === 1 && e.runId === "d2/0/0"))
    }).pipe(Effect.provide(layer))
  })

  it.live("cancelling the parent run stops the nested run at its next step", () => {
    const counters = Core.makeCounters()
    const started = Deferred.makeUnsafe<void>()
    const release = Deferred.makeUnsafe<void>()
    const hooks: Core.Hooks = {
      afterApply: () => Effect.andThen(Deferred.succeed(started, undefined), Deferred.await(release))
    }
    const { child, layer, parent } = make(counters, "durable-nested-cancel", { hooks })
    return Effect.gen(function*() {
      yield* parent.start("c", user("plan: helper=x"))
      // the nested run's first call is running: cancel the parent, then let the call end
      yield* Deferred.await(started)
      yield* parent.cancel("c", { reason: "user left" })
      yield* Deferred.succeed(release, undefined)
      const failed = yield* Effect.flip(parent.result("c"))
      assert.strictEqual(failed._tag, "RunCancelled")
      const nested = yield* Effect.flip(child.result("c/0/0"))
      assert.strictEqual(nested._tag, "RunCancelled")
      assert.strictEqual(nested._tag === "RunCancelled" ? nested.reason : undefined, "user left")
      // the nested model was not asked for the turn after the call
      assert.strictEqual(counters.get("nested model"), 1)
      const helper = failed._tag === "RunCancelled" ? failed.results.find((r) => r.name === "helper") : undefined
      assert.match(helper === undefined ? "" : ToolResult.textOf(helper), /cancelled before it answered/)
    }).pipe(Effect.provide(layer(Core.memoryEngine())))
  })

  it.live("a nested run deeper than maxDepth is refused (nothing runs); outside a durable run the tool dies", () => {
    const counters = Core.makeCounters()
    const child = DurableAgent.make({ name: "durable-nested-deep-child", tools: Core.makeTools(counters), pollInterval: "20 millis" })
    const helper = DurableAgent.asTool(child, {
      name: "helper",
      description: "Helps.",
      input: Schema.Struct({ line: Schema.String }),
      prompt: ({ line }) => line,
      maxDepth: 0
    })
    const parent = DurableAgent.make({ name: "durable-nested-deep", tools: registry([helper]), pollInterval: "20 millis" })
    const layer = Layer.mergeAll(
      parent.layer.pipe(Layer.provide([Core.model(counters), Stores.layerMemory])),
      child.layer.pipe(Layer.provide([nestedModel(counters), Stores.layerMemory]))
    ).pipe(Layer.provideMerge(Core.memoryEngine()))
    return Effect.gen(function*() {
      yield* parent.start("d", user("plan: helper=x"))
      const result = yield* parent.result("d")
      assert.match(ToolResult.textOf(result.results[0]!), /would run at depth 1, over the limit of 0/)
      assert.strictEqual(counters.get("nested model"), 0)
      // in Agent.run there is no durable call to nest in: a defect, the run fails
      const failed = yield* Effect.flip(Agent.run({
        messages: user("plan: helper=x"),
        tools: registry([DurableAgent.asTool(child, { name: "helper", description: "Helps.", input: Schema.Struct({ line: Schema.String }), prompt: ({ line }) => line })])
      }).pipe(Effect.provide(Core.model(counters))))
      assert.strictEqual(failed._tag, "AgentFailed")
      // the model reads "internal error in tool helper"; the cause names the mistake
      assert.strictEqual(failed.error._tag, "ToolDefect")
      assert.match(failed.error._tag === "ToolDefect" ? String(failed.error.cause) : "", /NotInDurableRun|can only be called by a durable agent's run/)
    }).pipe(Effect.provide(layer), Effect.provide(ToolServices.layerTest()))
  })
})
