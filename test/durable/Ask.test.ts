/**
 * Durable questions in process (SQLite single runner): a tool's `Ask.question` suspends the run,
 * journaled; `questions` / `questionsAll` / `list` show it; an answer that does not match the
 * question's schema is refused and the question stays open; an answer from a client on the same file
 * resumes the run and the call runs again from its start, getting the journaled answer; a decline
 * reaches the handler as `Ask.Declined`; an answer given while no runner runs finishes the run once
 * one restarts; a cancel closes the open question (the handler reads it declined).
 */
import { afterAll, assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Layer, Option, Schedule, Schema, Scope, Stream } from "effect"
import { Ask, ChatModel, Tool, ToolRegistry } from "../../src/index.ts"
import { DurableAgent, Runner } from "../../src/durable/index.ts"
import * as Stores from "../../src/stores/Stores.ts"
import * as Core from "./support/core.ts"

afterAll(Core.cleanup)

const sqliteRunner = (filename: string) =>
  Runner.layerSqlite({ filename, pollInterval: "50 millis", lockExpiration: "2 seconds", shutdownTimeout: "50 millis" })
const sqliteClient = (filename: string) => Runner.layerSqliteClient({ filename, pollInterval: "50 millis" })

/** `deploy` asks which branch (and, for `twice`, then a yes/no); it counts its starts and what it got. */
const makeAgent = (name: string) => {
  const seen = { starts: 0, got: [] as Array<string> }
  const deploy = Tool.make("deploy", {
    description: "Deploys a service; asks which branch.",
    input: Schema.Struct({ service: Schema.String, twice: Schema.optionalKey(Schema.Boolean) }),
    failure: Ask.NotAnswered,
    services: [Ask.Ask],
    handler: ({ service, twice }) =>
      Effect.gen(function*() {
        seen.starts++
        const { branch } = yield* Ask.question({
          message: `Which branch of ${service}?`,
          answer: Schema.Struct({ branch: Schema.Literals(["main", "staging"]) }),
          choices: [{ branch: "main" }, { branch: "staging" }]
        })
        seen.got.push(branch)
        if (twice === true) {
          const { sure } = yield* Ask.question({ message: `Really ${branch}?`, answer: Schema.Struct({ sure: Schema.Boolean }) })
          if (!sure) return `not deployed ${service}`
        }
        return `deployed ${service}@${branch}`
      }).pipe(Effect.catchTag("AskDeclined", (e) => Effect.succeed(`declined: ${e.reason}`)))
  })
  const model = ChatModel.fromFunction((request) => {
    const tool = request.messages.findLast((m) => m.role === "tool")
    if (tool?.role === "tool") {
      return Effect.succeed(ChatModel.answer(`done: ${tool.results.map((r) => r.content.map((b) => b.type === "text" ? b.text : "").join("")).join(" | ")}`))
    }
    const user = request.messages.find((m) => m.role === "user")
    const twice = user?.role === "user" && user.content.includes("twice")
    if (user?.role === "user" && user.content === "deploy both") {
      return Effect.succeed(ChatModel.callTools([["q1", "deploy", { service: "api" }], ["q2", "deploy", { service: "web" }]]))
    }
    return Effect.succeed(ChatModel.callTools([["q1", "deploy", twice ? { service: "api", twice: true } : { service: "api" }]]))
  })
  const tools = Effect.runSync(ToolRegistry.make([deploy]))
  const agent = DurableAgent.make({ name, tools, pollInterval: "20 millis" })
  const runnerOn = (filename: string) =>
    agent.layer.pipe(Layer.provide([model, Stores.layerMemory]), Layer.provideMerge(sqliteRunner(filename))) as Layer.Layer<Runner.Services>
  const inMemory = () =>
    agent.layer.pipe(Layer.provide([model, Stores.layerMemory]), Layer.provideMerge(Core.memoryEngine())) as Layer.Layer<Runner.Services>
  return { agent, seen, runnerOn, inMemory, model }
}

const user = (content: string) => [{ role: "user" as const, content }]

/** Waits (bounded) until run `runId` has at least `n` open questions, and returns them. */
const questionsAtLeast = <R, MR>(agent: DurableAgent.DurableAgent<R, MR>, runId: string, n: number) =>
  Effect.suspend(() => agent.questions(runId)).pipe(
    Effect.repeat({ until: (open) => open.length >= n, schedule: Schedule.spaced("20 millis") }),
    Effect.timeoutOrElse({ duration: "15 seconds", orElse: () => Effect.die(new Error(`fewer than ${n} open questions`)) })
  )

describe("durable questions", () => {
  it.live("a question suspends the run; listed; a wrong answer is refused; an answer from a client resumes it", () =>
    Effect.gen(function*() {
      const { agent, runnerOn, seen } = makeAgent("ask-answer")
      const filename = Core.tempFile("ask-answer")
      const result = yield* Effect.gen(function*() {
        yield* agent.start("r", user("deploy"))
        const [open] = yield* questionsAtLeast(agent, "r", 1)
        assert.deepStrictEqual(open, {
          callId: "q1",
          toolName: "deploy",
          question: 1,
          message: "Which branch of api?",
          schema: {
            type: "object",
            properties: { branch: { type: "string", enum: ["main", "staging"] } },
            required: ["branch"],
            additionalProperties: false
          },
          choices: [{ branch: "main" }, { branch: "staging" }],
          turn: 0,
          index: 0
        })
        assert.deepStrictEqual((yield* agent.questionsAll()).map((q) => [q.runId, q.callId, q.question]), [["r", "q1", 1]])
        const listed = (yield* agent.list()).runs[0]!
        assert.strictEqual(listed.status, "awaiting_answer")
        assert.strictEqual(listed.pendingQuestions, 1)
        assert.isTrue(Option.isNone(yield* agent.poll("r")), "unfinished while the question is open")
        // a wrong answer: refused with the reason, nothing sent, the question stays open
        const refused = yield* Effect.flip(agent.answer("r", "q1", Ask.answer({ branch: "prod" }, "alice")))
        assert.strictEqual(refused._tag, "AnswerRefused")
        assert.include(refused.message, "branch")
        const extra = yield* Effect.flip(agent.answer("r", "q1", Ask.answer({ branch: "main", also: 1 }, "alice")))
        assert.strictEqual(extra._tag, "AnswerRefused")
        assert.strictEqual((yield* agent.questions("r")).length, 1)
        const unknown = yield* Effect.flip(agent.answer("r", "nope", Ask.answer({ branch: "main" })))
        assert.deepStrictEqual([unknown._tag, unknown._tag === "QuestionNotPending" ? unknown.reason : ""], ["QuestionNotPending", "not pending"])
        // answered from another client of the same journal
        yield* Effect.provide(agent.answer("r", "q1", Ask.answer({ branch: "staging" }, "alice")), sqliteClient(filename))
        const done = yield* agent.result("r")
        // the same reply again re-delivers it; another is refused
        yield* agent.answer("r", "q1", Ask.answer({ branch: "staging" }, "alice")).pipe(
          Effect.catchTag("QuestionNotPending", (e) => Effect.succeed(assert.strictEqual(e.reason, "finished")))
        )
        const events = Array.from(yield* Stream.runCollect(agent.events("r")))
        return { done, events }
      }).pipe(Effect.provide(runnerOn(filename)))
      assert.strictEqual(result.done.text, "done: deployed api@staging")
      // the handler ran up to the question, then again from its start once answered
      assert.strictEqual(seen.starts, 2)
      assert.deepStrictEqual(seen.got, ["staging"])
      const answered = result.events.find((e) => e._tag === "tool.answered")
      assert.isDefined(answered)
      if (answered?._tag === "tool.answered") {
        assert.strictEqual(answered.outcome, "answered")
        assert.deepStrictEqual(answered.answer, { branch: "staging" })
        assert.strictEqual(answered.answeredBy, "alice")
      }
      assert.deepStrictEqual(
        result.events.filter((e) => "toolCallId" in e && e.toolCallId === "q1").map((e) => e._tag),
        ["tool.started", "tool.question", "tool.answered", "tool.completed"]
      )
    }), 60_000)

  it.live("two questions of one call, one after the other; a decline reaches the handler", () =>
    Effect.gen(function*() {
      const { agent, runnerOn, seen } = makeAgent("ask-twice")
      const filename = Core.tempFile("ask-twice")
      const [twice, declined] = yield* Effect.gen(function*() {
        yield* agent.start("t", user("deploy twice"))
        yield* questionsAtLeast(agent, "t", 1)
        yield* agent.answer("t", "q1", Ask.answer({ branch: "main" }, "bob"))
        // the call runs again, gets its first answer from the journal and asks its second question
        const second = yield* Effect.suspend(() => agent.questions("t")).pipe(
          Effect.repeat({ until: (open) => open[0]?.question === 2, schedule: Schedule.spaced("20 millis") }),
          Effect.timeout("15 seconds")
        )
        assert.strictEqual(second[0]!.message, "Really main?")
        yield* agent.answer("t", "q1", Ask.answer({ sure: true }, "bob"))
        const first = yield* agent.result("t")
        yield* agent.start("d", user("deploy"))
        yield* questionsAtLeast(agent, "d", 1)
        yield* agent.answer("d", "q1", Ask.decline("not now", "carol"))
        return [first, yield* agent.result("d")] as const
      }).pipe(Effect.provide(runnerOn(filename)))
      assert.strictEqual(twice.text, "done: deployed api@main")
      assert.strictEqual(declined.text, "done: declined: not now")
      // t: asked, re-run to the second question, re-run to the end; d: asked, re-run
      assert.strictEqual(seen.starts, 5)
    }), 60_000)

  it.live("two calls of one turn ask at once: both are listed, answered in either order, the run finishes", () =>
    Effect.gen(function*() {
      const { agent, runnerOn, seen } = makeAgent("ask-both")
      const filename = Core.tempFile("ask-both")
      const result = yield* Effect.gen(function*() {
        yield* agent.start("b", user("deploy both"))
        // the turn's calls run concurrently: both usually ask before the run suspends; one that had not
        // asked yet asks once the run resumes
        const first = yield* questionsAtLeast(agent, "b", 1)
        const answerEach = (open: ReadonlyArray<DurableAgent.PendingQuestion>) =>
          Effect.forEach(open, (q) => agent.answer("b", q.callId, Ask.answer({ branch: q.callId === "q1" ? "main" : "staging" }, "erin")))
        yield* answerEach([...first].reverse())
        const answered = new Set(first.map((q) => q.callId))
        if (answered.size < 2) {
          const rest = yield* Effect.suspend(() => agent.questions("b")).pipe(
            Effect.repeat({ until: (open) => open.some((q) => !answered.has(q.callId)), schedule: Schedule.spaced("20 millis") }),
            Effect.timeout("15 seconds")
          )
          yield* answerEach(rest.filter((q) => !answered.has(q.callId)))
        }
        return yield* agent.result("b")
      }).pipe(Effect.provide(runnerOn(filename)))
      assert.strictEqual(result.text, "done: deployed api@main | deployed web@staging")
      assert.deepStrictEqual([...seen.got].sort(), ["main", "staging"])
    }), 60_000)

  it.live("on the in-memory engine too", () =>
    Effect.gen(function*() {
      const { agent, inMemory } = makeAgent("ask-memory")
      const result = yield* Effect.gen(function*() {
        yield* agent.start("m", user("deploy"))
        yield* questionsAtLeast(agent, "m", 1)
        yield* agent.answer("m", "q1", Ask.answer({ branch: "main" }))
        return yield* agent.result("m")
      }).pipe(Effect.provide(inMemory()))
      assert.strictEqual(result.text, "done: deployed api@main")
    }), 60_000)

  it.live("a question in a nested durable run (asTool) suspends the parent; answered through the nested agent", () =>
    Effect.gen(function*() {
      const { agent: child, model: childModel, seen } = makeAgent("ask-nested-child")
      const parent = DurableAgent.make({
        name: "ask-nested",
        tools: yield* ToolRegistry.make([
          DurableAgent.asTool(child, {
            name: "deployer",
            description: "Deploys.",
            input: Schema.Struct({ task: Schema.String }),
            prompt: ({ task }) => task
          })
        ]),
        pollInterval: "20 millis"
      })
      const parentModel = ChatModel.fromFunction((request) =>
        Effect.succeed(
          request.messages.some((m) => m.role === "tool")
            ? ChatModel.answer("parent done")
            : ChatModel.callTools([["h1", "deployer", { task: "deploy" }]])
        )
      )
      const filename = Core.tempFile("ask-nested")
      const layer = Layer.mergeAll(
        parent.layer.pipe(Layer.provide([parentModel, Stores.layerMemory])),
        child.layer.pipe(Layer.provide([childModel, Stores.layerMemory]))
      ).pipe(Layer.provideMerge(sqliteRunner(filename)))
      const result = yield* Effect.gen(function*() {
        yield* parent.start("p", user("go"))
        const [open] = yield* questionsAtLeast(child, "p/0/0", 1)
        assert.strictEqual(open!.message, "Which branch of api?")
        assert.deepStrictEqual(yield* parent.questions("p"), [], "the parent's own calls ask nothing")
        yield* child.answer("p/0/0", "q1", Ask.answer({ branch: "main" }, "frank"))
        return yield* parent.result("p")
      }).pipe(Effect.provide(layer))
      assert.strictEqual(result.text, "parent done")
      assert.strictEqual(result.results[0]?.content.map((b) => b.type === "text" ? b.text : "").join(""), "done: deployed api@main")
      assert.deepStrictEqual(seen.got, ["main"])
    }), 60_000)

  it.live("answered while no runner runs: the restarted runner finishes the run", () =>
    Effect.gen(function*() {
      const { agent, runnerOn, seen } = makeAgent("ask-restart")
      const filename = Core.tempFile("ask-restart")
      const scope = yield* Scope.make()
      const context = yield* Layer.buildWithScope(runnerOn(filename), scope)
      yield* Effect.provide(Effect.andThen(agent.start("r", user("deploy")), questionsAtLeast(agent, "r", 1)), context)
      yield* Scope.close(scope, Exit.void)
      yield* Effect.provide(agent.answer("r", "q1", Ask.answer({ branch: "main" }, "dave")), sqliteClient(filename))
      const result = yield* Effect.provide(agent.result("r"), runnerOn(filename))
      assert.strictEqual(result.text, "done: deployed api@main")
      assert.deepStrictEqual(seen.got, ["main"])
    }), 60_000)

  it.live("a cancel closes the open question: the handler reads it declined, the run ends cancelled", () =>
    Effect.gen(function*() {
      const { agent, runnerOn, seen } = makeAgent("ask-cancel")
      const filename = Core.tempFile("ask-cancel")
      const exit = yield* Effect.gen(function*() {
        yield* agent.start("r", user("deploy"))
        yield* questionsAtLeast(agent, "r", 1)
        yield* agent.cancel("r", { reason: "wrong service" })
        assert.deepStrictEqual(yield* agent.questions("r"), [])
        const late = yield* Effect.flip(agent.answer("r", "q1", Ask.answer({ branch: "main" })))
        assert.strictEqual(late._tag === "QuestionNotPending" ? late.reason : late._tag, "cancelled")
        return yield* Effect.exit(agent.result("r"))
      }).pipe(Effect.provide(runnerOn(filename)))
      assert.isTrue(Exit.isFailure(exit))
      if (Exit.isFailure(exit)) {
        const error = exit.cause.reasons.find((r) => r._tag === "Fail")
        assert.strictEqual(error?._tag === "Fail" ? (error.error as { _tag: string })._tag : undefined, "RunCancelled")
        if (error?._tag === "Fail") {
          const cancelled = error.error as DurableAgent.RunCancelled
          assert.strictEqual(cancelled.results[0]?.content.map((b) => b.type === "text" ? b.text : "").join(""), "declined: the run was cancelled: wrong service")
        }
      }
      assert.deepStrictEqual(seen.got, [])
      assert.strictEqual(seen.starts, 2)
    }), 60_000)
})
