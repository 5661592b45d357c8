import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Layer, Schema, Stream } from "effect"
import { Agent, ChatModel, EventSink, Tool, ToolEvent, ToolRegistry, ToolResult, ToolServices } from "../../src/index.ts"

const add = Tool.make("add", {
  description: "Adds two integers.",
  input: Schema.Struct({ a: Schema.Int, b: Schema.Int }),
  safety: { access: "read", idempotent: true },
  handler: ({ a, b }) => Effect.succeed(a + b)
})

const registryOf = <const T extends ReadonlyArray<Tool.Any>>(tools: T) => {
  const r = ToolRegistry.makeResult(tools)
  if (r._tag === "Failure") throw r.failure
  return r.success
}

const Task = Schema.Struct({ task: Schema.String })
const user = (content: string): ChatModel.Message => ({ role: "user", content })
const usage = (inputTokens: number, outputTokens: number) => ({ inputTokens, outputTokens })
const services = ToolServices.layerTest({ runId: "run" })
const events = EventSink.EventLog.use((log) => log.all)
/** The text of the last tool result the model was sent. */
const lastResult = (request: ChatModel.Request): string => {
  const last = request.messages.at(-1)
  return last?.role === "tool" ? ToolResult.textOf(last.results[0]!) : "?"
}

/** A researcher agent with its own scripted model: it adds 2 and 3, then answers with the sum. */
const researcher = Agent.asTool({
  system: "You research.",
  tools: registryOf([add]),
  model: ChatModel.scripted([
    { ...ChatModel.callTools([["n1", "add", { a: 2, b: 3 }]]), usage: usage(100, 50) },
    (request) => ({ ...ChatModel.answer(`sum is ${lastResult(request)}`), usage: usage(7, 3) })
  ])
}, { name: "researcher", description: "Researches a task.", input: Task })

describe("Agent.asTool", () => {
  it.effect("a nested run: its answer is the tool's output, its events form a tree, its usage adds to the parent's", () =>
    Effect.gen(function*() {
      const result = yield* Agent.run({ messages: [user("go")], tools: registryOf([researcher]) })
      assert.strictEqual(result.text, "parent read: sum is 5")
      assert.deepStrictEqual(result.results.map((r) => [r.name, r.isError, r.value]), [["researcher", false, "sum is 5"]])
      // 10+100+7+1 in, 5+50+3+1 out
      assert.deepStrictEqual(result.usage, usage(118, 59))

      const log = yield* events
      const nested = log.filter((e) => e.runId === "run/0/c1")
      const top = log.filter((e) => e.runId === "run")
      assert.deepStrictEqual(nested.map((e) => e._tag), [
        "agent.turn_started",
        "agent.model_responded",
        "tool.started",
        "tool.completed",
        "agent.turn_started",
        "agent.model_responded",
        "agent.finished"
      ])
      for (const e of nested) {
        assert.deepStrictEqual([e.parentRunId, e.parentCallId, e.depth], ["run", "c1", 1])
      }
      for (const e of top) assert.deepStrictEqual([e.parentRunId, e.parentCallId, e.depth], [undefined, undefined, undefined])
      assert.strictEqual(top.length + nested.length, log.length)
      // each run's sequence is its own, gap-free
      assert.deepStrictEqual(nested.map((e) => e.sequence), nested.map((_, i) => i))
      assert.deepStrictEqual(top.map((e) => e.sequence), top.map((_, i) => i))
      // the nested run happens inside its call: between the call's start and its end
      const started = log.findIndex((e) => e._tag === "tool.started" && e.toolCallId === "c1" && e.runId === "run")
      const completed = log.findIndex((e) => e._tag === "tool.completed" && e.toolCallId === "c1" && e.runId === "run")
      assert.isTrue(started < log.indexOf(nested[0]!) && log.indexOf(nested.at(-1)!) < completed)
      const finished = nested.at(-1) as ToolEvent.AgentFinished
      assert.deepStrictEqual(finished.usage, usage(107, 53))
      const parentFinished = top.at(-1) as ToolEvent.AgentFinished
      assert.deepStrictEqual(parentFinished.usage, usage(118, 59))
      // the tree fields survive the JSON codec
      const line = yield* ToolEvent.encodeJson(nested[0]!)
      const [decoded] = yield* ToolEvent.decodeJsonl(line)
      assert.deepStrictEqual([decoded!.parentRunId, decoded!.parentCallId, decoded!.depth], ["run", "c1", 1])
    }).pipe(Effect.provide(Layer.merge(
      ChatModel.scripted([
        { ...ChatModel.callTools([["c1", "researcher", { task: "add 2 and 3" }]]), usage: usage(10, 5) },
        (request) => ({ ...ChatModel.answer(`parent read: ${lastResult(request)}`), usage: usage(1, 1) })
      ]),
      services
    ))))

  it.effect("the nested agent gets the prompt its input makes, and the calling run's model when it names none", () =>
    Effect.gen(function*() {
      const seen: Array<ReadonlyArray<ChatModel.Message>> = []
      const echo = Agent.asTool({ system: "Echo.", tools: registryOf([]) }, {
        name: "echo",
        description: "Echoes.",
        input: Schema.Struct({ word: Schema.String }),
        prompt: ({ word }) => `say ${word}`
      })
      const result = yield* Agent.run({ messages: [user("go")], tools: registryOf([echo]) }).pipe(
        Effect.provide(ChatModel.fromFunction((request) => {
          seen.push([...request.messages])
          if (seen.length === 1) return Effect.succeed(ChatModel.callTools([["c1", "echo", { word: "hi" }]]))
          if (seen.length === 2) return Effect.succeed(ChatModel.answer("hi!"))
          return Effect.succeed(ChatModel.answer(`echoed ${lastResult(request)}`))
        }))
      )
      assert.strictEqual(result.text, "echoed hi!")
      assert.deepStrictEqual(seen[1], [{ role: "system", content: "Echo." }, user("say hi")])
    }).pipe(Effect.provide(services)))

  it.effect("a nested agent with a typed output: the tool's output is the decoded value", () =>
    Effect.gen(function*() {
      const summer = Agent.asTool({
        tools: registryOf([]),
        output: Schema.Struct({ sum: Schema.Int }),
        model: ChatModel.scripted([ChatModel.callTools([["f1", "final_answer", { sum: 5 }]])])
      }, { name: "summer", description: "Sums.", input: Task })
      const result = yield* Agent.run({ messages: [user("go")], tools: registryOf([summer]) })
      assert.deepStrictEqual(result.results[0]!.value, { sum: 5 })
      assert.strictEqual(ToolResult.textOf(result.results[0]!), "{\"sum\":5}")
    }).pipe(Effect.provide(Layer.merge(
      ChatModel.scripted([ChatModel.callTools([["c1", "summer", { task: "2+3" }]]), ChatModel.answer("5")]),
      services
    ))))

  it.effect("a nested agent with a typed output that ends by return_direct: its text is the output when it decodes, else a repairable failure", () =>
    Effect.gen(function*() {
      const lookup = Tool.make("lookup", {
        description: "Looks up; its answer ends the run.",
        input: Schema.Struct({ json: Schema.Boolean }),
        returnDirect: true,
        handler: ({ json }) => Effect.succeed(json ? "{\"sum\":5}" : "the sum is five")
      })
      const summer = Agent.asTool({
        tools: registryOf([lookup]),
        output: Schema.Struct({ sum: Schema.Int }),
        model: ChatModel.fromFunction((request) => {
          const user = request.messages.find((m) => m.role === "user")
          return Effect.succeed(ChatModel.callTools([["l1", "lookup", { json: user?.content === "json" }]]))
        })
      }, { name: "summer", description: "Sums.", input: Task })
      const result = yield* Agent.run({ messages: [user("go")], tools: registryOf([summer]) })
      assert.strictEqual(result.reason, "final_answer")
      const [text, json] = result.results
      assert.isTrue(text!.isError)
      assert.strictEqual(text!.error?._tag, "ToolFailure")
      assert.strictEqual(text!.error?.disposition, "repair")
      assert.match(
        ToolResult.textOf(text!),
        /^agent summer ended \(return_direct\) without its typed answer, and the text it ended with is not one \(malformed answer: /
      )
      assert.deepStrictEqual([json!.isError, json!.value], [false, { sum: 5 }])
    }).pipe(Effect.provide(Layer.merge(
      ChatModel.scripted([
        ChatModel.callTools([["c1", "summer", { task: "text" }]]),
        ChatModel.callTools([["c2", "summer", { task: "json" }]]),
        ChatModel.answer("ok")
      ]),
      services
    ))))

  it.effect("the nested agent's failure is the call's repairable ToolFailure; the parent goes on", () =>
    Effect.gen(function*() {
      const broken = Agent.asTool({ tools: registryOf([]), model: ChatModel.scripted([]) }, {
        name: "broken",
        description: "Fails.",
        input: Task
      })
      const result = yield* Agent.run({ messages: [user("go")], tools: registryOf([broken]) })
      const failed = result.results[0]!
      assert.isTrue(failed.isError)
      assert.strictEqual(failed.error?._tag, "ToolFailure")
      assert.strictEqual(failed.error?.disposition, "repair")
      assert.match(ToolResult.textOf(failed), /^agent broken failed: agent run failed \(model\) in turn 0: the script has 0 turns/)
      assert.strictEqual(result.text, "it failed")
      const nestedEnd = (yield* events).find((e) => e._tag === "agent.finished" && e.depth === 1) as ToolEvent.AgentFinished
      assert.strictEqual(nestedEnd.reason, "failed")
    }).pipe(Effect.provide(Layer.merge(
      ChatModel.scripted([ChatModel.callTools([["c1", "broken", { task: "x" }]]), ChatModel.answer("it failed")]),
      services
    ))))

  it.effect("a nested run over its agent's maxTurns is a repairable failure", () =>
    Effect.gen(function*() {
      const looping = Agent.asTool({
        tools: registryOf([add]),
        maxTurns: 1,
        model: ChatModel.scripted([ChatModel.callTools([["n1", "add", { a: 1, b: 1 }]])])
      }, { name: "looping", description: "Loops.", input: Task })
      const result = yield* Agent.run({ messages: [user("go")], tools: registryOf([looping]) })
      assert.strictEqual(ToolResult.textOf(result.results[0]!), "agent looping gave no answer within its 1 turns")
      assert.strictEqual(result.results[0]!.error?.disposition, "repair")
    }).pipe(Effect.provide(Layer.merge(
      ChatModel.scripted([ChatModel.callTools([["c1", "looping", { task: "x" }]]), ChatModel.answer("ok")]),
      services
    ))))

  it.effect("depth limit: a call that would nest deeper than maxDepth is refused, nothing runs", () =>
    Effect.gen(function*() {
      // `inner` may sit at depth 1 at most; `outer` (depth 1) calls it, which would be depth 2
      const inner = Agent.asTool({ tools: registryOf([]), model: ChatModel.scripted([]) }, {
        name: "inner",
        description: "Inner.",
        input: Task,
        maxDepth: 1
      })
      const outer = Agent.asTool({
        tools: registryOf([inner]),
        model: ChatModel.scripted([
          ChatModel.callTools([["o1", "inner", { task: "deeper" }]]),
          (request) => ChatModel.answer(`outer saw: ${lastResult(request)}`)
        ])
      }, { name: "outer", description: "Outer.", input: Task })
      const result = yield* Agent.run({ messages: [user("go")], tools: registryOf([outer]) })
      assert.strictEqual(
        ToolResult.textOf(result.results[0]!),
        "outer saw: agent inner was not run: it would run at depth 2, over the limit of 1; answer without it"
      )
      const log = yield* events
      // the refused call is an error result in the depth-1 run; no run at depth 2 exists
      const refused = log.find((e) => e._tag === "tool.failed" && e.toolName === "inner") as ToolEvent.ToolFailed
      assert.deepStrictEqual([refused.error._tag, refused.disposition, refused.depth, refused.runId], [
        "ToolFailure",
        "repair",
        1,
        "run/0/c1"
      ])
      assert.isFalse(log.some((e) => e.depth === 2))
    }).pipe(Effect.provide(Layer.merge(
      ChatModel.scripted([
        ChatModel.callTools([["c1", "outer", { task: "go deep" }]]),
        (request) => ChatModel.answer(lastResult(request))
      ]),
      services
    ))))

  it.effect("the default depth limit (3) stops an agent that calls itself", () =>
    Effect.gen(function*() {
      // every model turn calls `recurse` again until refused, then answers with what it read
      const model = ChatModel.fromFunction((request) =>
        Effect.succeed(
          request.messages.at(-1)?.role === "tool"
            ? ChatModel.answer(lastResult(request))
            : ChatModel.callTools([["r", "recurse", { task: "again" }]])
        )
      )
      const tools: { registry?: ToolRegistry.ToolRegistry<never> } = {}
      const recurse = Agent.asTool({
        get tools() {
          return tools.registry!
        }
      }, { name: "recurse", description: "Recurses.", input: Task })
      tools.registry = registryOf([recurse]) as ToolRegistry.ToolRegistry<never>
      const result = yield* Agent.run({ messages: [user("go")], tools: tools.registry }).pipe(Effect.provide(model))
      assert.match(result.text, /it would run at depth 4, over the limit of 3/)
      const depths = new Set((yield* events).map((e) => e.depth ?? 0))
      assert.deepStrictEqual([...depths].sort(), [0, 1, 2, 3])
    }).pipe(Effect.provide(services)))

  it.effect("interrupting the parent run interrupts the nested run's tool", () =>
    Effect.gen(function*() {
      const started = yield* Deferred.make<void>()
      const interrupted = yield* Deferred.make<void>()
      const block = Tool.make("block", {
        description: "Blocks.",
        input: Schema.Struct({}),
        handler: () =>
          Deferred.succeed(started, undefined).pipe(
            Effect.andThen(Effect.never),
            Effect.onInterrupt(() => Deferred.succeed(interrupted, undefined))
          )
      })
      const worker = Agent.asTool({
        tools: registryOf([block]),
        model: ChatModel.scripted([ChatModel.callTools([["n1", "block", {}]])])
      }, { name: "worker", description: "Works.", input: Task })
      const fiber = yield* Agent.run({ messages: [user("go")], tools: registryOf([worker]) }).pipe(Effect.forkChild)
      yield* Deferred.await(started)
      yield* Fiber.interrupt(fiber)
      yield* Deferred.await(interrupted)
      const log = yield* events
      const nestedFailed = log.find((e) => e._tag === "tool.failed" && e.toolName === "block") as ToolEvent.ToolFailed
      assert.deepStrictEqual([nestedFailed.reason, nestedFailed.depth, nestedFailed.parentCallId], ["cancelled", 1, "c1"])
      const parentFailed = log.find((e) => e._tag === "tool.failed" && e.toolName === "worker") as ToolEvent.ToolFailed
      assert.deepStrictEqual([parentFailed.reason, parentFailed.depth], ["cancelled", undefined])
    }).pipe(Effect.provide(Layer.merge(
      ChatModel.scripted([ChatModel.callTools([["c1", "worker", { task: "x" }]])]),
      services
    ))))

  it.effect("cancelling the parent run (cancelWhen) cancels the nested run's model call", () =>
    Effect.gen(function*() {
      const asked = yield* Deferred.make<void>()
      const interrupted = yield* Deferred.make<void>()
      const stop = yield* Deferred.make<void>()
      const slow = Agent.asTool({
        tools: registryOf([]),
        model: Layer.succeed(ChatModel.ChatModel, ChatModel.make({
          generate: () =>
            Deferred.succeed(asked, undefined).pipe(
              Effect.andThen(Effect.never),
              Effect.onInterrupt(() => Deferred.succeed(interrupted, undefined))
            )
        }))
      }, { name: "slow", description: "Thinks slowly.", input: Task })
      const fiber = yield* Agent.run({ messages: [user("go")], tools: registryOf([slow]), cancelWhen: Deferred.await(stop) })
        .pipe(Effect.forkChild)
      yield* Deferred.await(asked)
      yield* Deferred.succeed(stop, undefined)
      const result = yield* Fiber.join(fiber)
      assert.isTrue(yield* Deferred.isDone(interrupted))
      assert.strictEqual(result.reason, "cancelled")
      assert.strictEqual(result.results[0]!.error?._tag, "ToolCancelled")
    }).pipe(Effect.provide(Layer.merge(
      ChatModel.scripted([ChatModel.callTools([["c1", "slow", { task: "x" }]])]),
      services
    ))))

  it.effect("a call id the provider repeats every turn (Gemini's call_0) names a distinct nested run each turn", () =>
    Effect.gen(function*() {
      const answering = Agent.asTool({
        tools: registryOf([]),
        model: ChatModel.fromFunction(() => Effect.succeed(ChatModel.answer("done")))
      }, { name: "helper", description: "Helps.", input: Task })
      yield* Agent.run({ messages: [user("go")], tools: registryOf([answering]) })
      const log = yield* events
      const nestedRuns = [...new Set(log.filter((e) => e.depth === 1).map((e) => e.runId))]
      assert.deepStrictEqual(nestedRuns, ["run/0/call_0", "run/1/call_0"])
      // each nested run's sequence is its own, gap-free (one shared run id would interleave two runs)
      for (const runId of nestedRuns) {
        const own = log.filter((e) => e.runId === runId)
        assert.deepStrictEqual(own.map((e) => e.sequence), own.map((_, i) => i))
        assert.deepStrictEqual(own.map((e) => e._tag), ["agent.turn_started", "agent.model_responded", "agent.finished"])
      }
    }).pipe(Effect.provide(Layer.merge(
      ChatModel.scripted([
        ChatModel.callTools([["call_0", "helper", { task: "one" }]]),
        ChatModel.callTools([["call_0", "helper", { task: "two" }]]),
        ChatModel.answer("ok")
      ]),
      services
    ))))

  it.effect("usage at depth 2 reaches the top when the parent is cancelled in the middle of the depth-1 run's batch", () =>
    Effect.gen(function*() {
      const started = yield* Deferred.make<void>()
      const block = Tool.make("block", {
        description: "Blocks.",
        input: Schema.Struct({}),
        handler: () => Effect.andThen(Deferred.succeed(started, undefined), Effect.never)
      })
      const grand = Agent.asTool({
        tools: registryOf([]),
        model: ChatModel.scripted([{ ...ChatModel.answer("found"), usage: usage(1000, 100) }])
      }, { name: "grand", description: "Finds.", input: Task })
      // one call at a time: `grand` has answered (its usage counted) when `block` starts
      const child = Agent.asTool({
        tools: registryOf([grand, block]),
        concurrency: 1,
        model: ChatModel.scripted([
          { ...ChatModel.callTools([["g1", "grand", { task: "find" }], ["b1", "block", {}]]), usage: usage(10, 1) }
        ])
      }, { name: "child", description: "Delegates.", input: Task })
      const result = yield* Agent.run({
        messages: [user("go")],
        tools: registryOf([child]),
        cancelWhen: Deferred.await(started)
      })
      assert.strictEqual(result.reason, "cancelled")
      assert.deepStrictEqual(result.usage, usage(1011, 102))
      const finished = (yield* events).filter((e) => e._tag === "agent.finished") as Array<ToolEvent.AgentFinished>
      assert.deepStrictEqual(finished.map((e) => [e.depth ?? 0, e.usage]), [[2, usage(1000, 100)], [0, usage(1011, 102)]])
    }).pipe(Effect.provide(Layer.merge(
      ChatModel.scripted([{ ...ChatModel.callTools([["c1", "child", { task: "x" }]]), usage: usage(1, 1) }]),
      services
    ))))

  it.effect("Agent.stream carries the nested run's events", () =>
    Effect.gen(function*() {
      const streamed = yield* Stream.runCollect(Agent.stream({ messages: [user("go")], tools: registryOf([researcher]) }))
      const nested = streamed.filter((e) => e.depth === 1)
      assert.strictEqual(nested.at(-1)?._tag, "agent.finished")
      assert.strictEqual(streamed.at(-1)?._tag, "agent.finished")
      assert.strictEqual((streamed.at(-1) as ToolEvent.AgentFinished).text, "parent read: sum is 5")
    }).pipe(Effect.provide(Layer.merge(
      ChatModel.scripted([
        ChatModel.callTools([["c1", "researcher", { task: "add" }]]),
        (request) => ChatModel.answer(`parent read: ${lastResult(request)}`)
      ]),
      services
    ))))
})
