/**
 * `Ask`: a handler that lists it asks a question and gets the decoded answer
 * from the application's `Answerer` (a function, rules), or a typed `Declined`
 * / `Unanswerable` (no answerer, the question's timeout, an answer the schema
 * refuses, a schema that cannot be asked). Each question is a `tool.question`
 * (message, the answer's JSON Schema, choices) and a `tool.answered` of its
 * call, between `tool.started` and the terminal event, redacted like the call.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Schema } from "effect"
import { TestClock } from "effect/testing"
import { Ask, EventSink, Executor, Tool, ToolError, ToolEvent, ToolRegistry, ToolResult, ToolServices } from "../../src/index.ts"

const call = (id: string, name: string, args: unknown = {}) => ({ id, name, arguments: args })
const events = EventSink.EventLog.use((log) => log.all)
const tagsOf = (all: ReadonlyArray<ToolEvent.Event>) => all.map((e) => e._tag)
const questionOf = (all: ReadonlyArray<ToolEvent.Event>) =>
  all.find((e): e is ToolEvent.ToolQuestion => e._tag === "tool.question")!
const answeredOf = (all: ReadonlyArray<ToolEvent.Event>) =>
  all.find((e): e is ToolEvent.ToolAnswered => e._tag === "tool.answered")!

const Branch = Schema.Struct({
  branch: Schema.String.annotate({ description: "The branch to deploy" }),
  dryRun: Schema.optionalKey(Schema.Boolean)
})

/** Asks which branch to deploy; the model reads a refusal (declared failure). */
const deploy = Tool.make("deploy", {
  description: "Deploys a branch the user picks.",
  input: Schema.Struct({ service: Schema.String, token: Schema.String }),
  failure: Ask.NotAnswered,
  services: [Ask.Ask],
  safety: { access: "write", redact: { keys: ["token"] } },
  handler: ({ service, token }) =>
    Effect.map(
      Ask.question({
        message: `Which branch of ${service} (token ${token})?`,
        answer: Branch,
        choices: [{ branch: "main" }, { branch: "staging", dryRun: true }]
      }),
      (answer) => `deploying ${service}@${answer.branch}${answer.dryRun === true ? " (dry run)" : ""}`
    )
})

const executorWith = (answerer: Layer.Layer<Ask.Answerer> | undefined) =>
  Effect.gen(function*() {
    const executor = yield* Executor.make(yield* ToolRegistry.make([deploy]))
    const run = executor.run(call("c1", "deploy", { service: "api", token: "tok-SECRET-1" }))
    return answerer === undefined ? run : Effect.provide(run, answerer)
  })

const test = ToolServices.layerTest({ runId: "ask-run" })

describe("Ask", () => {
  it.effect("the application's function answers: the handler gets the decoded answer; question and answer are events", () =>
    Effect.gen(function*() {
      const asked: Array<Ask.Request> = []
      const result = yield* Effect.flatten(executorWith(Ask.layerFunction((request) =>
        Effect.sync(() => {
          asked.push(request)
          return Ask.answer({ branch: "staging", dryRun: true }, "ops")
        })
      )))
      assert.strictEqual(result.value, "deploying api@staging (dry run)")
      const all = yield* events
      assert.deepStrictEqual(tagsOf(all), ["tool.started", "tool.question", "tool.answered", "tool.completed"])
      const [request] = asked
      assert.strictEqual(request?.toolName, "deploy")
      assert.strictEqual(request?.toolCallId, "c1")
      assert.strictEqual(request?.question, 1)
      assert.deepStrictEqual(request?.choices, [{ branch: "main" }, { branch: "staging", dryRun: true }])
      assert.deepStrictEqual(request?.schema, {
        type: "object",
        properties: {
          branch: { type: "string", description: "The branch to deploy" },
          dryRun: { type: "boolean" }
        },
        required: ["branch"],
        additionalProperties: false
      })
      const question = questionOf(all)
      assert.deepStrictEqual(question.schema, request?.schema)
      assert.strictEqual(question.question, 1)
      assert.deepStrictEqual(question.choices, request?.choices)
      const answered = answeredOf(all)
      assert.strictEqual(answered.outcome, "answered")
      assert.deepStrictEqual(answered.answer, { branch: "staging", dryRun: true })
      assert.strictEqual(answered.answeredBy, "ops")
      assert.strictEqual(answered.toolCallId, "c1")
      assert.strictEqual(answered.runId, "ask-run")
    }).pipe(Effect.provide(test)))

  it.effect("the question's message shows no argument held under a redacted key, in the event or to the answerer", () =>
    Effect.gen(function*() {
      let seen = ""
      yield* Effect.flatten(executorWith(Ask.layerFunction((request) =>
        Effect.sync(() => {
          seen = request.message
          return Ask.answer({ branch: "main" })
        })
      )))
      const question = questionOf(yield* events)
      assert.notInclude(question.message, "tok-SECRET-1")
      assert.include(question.message, "Which branch of api")
      assert.strictEqual(seen, question.message)
    }).pipe(Effect.provide(test)))

  it.effect("offered choices show no secret argument value, in the event or to the answerer (durable runs journal the same)", () =>
    Effect.gen(function*() {
      const pick = Tool.make("pick_branch", {
        description: "Asks which branch, offering one named after the token.",
        input: Schema.Struct({ token: Schema.String }),
        failure: Ask.NotAnswered,
        services: [Ask.Ask],
        safety: { access: "read", redact: { keys: ["token"] } },
        handler: ({ token }) =>
          Effect.map(
            Ask.question({ message: "Which branch?", answer: Branch, choices: [{ branch: "main" }, { branch: `feature-${token}` }] }),
            (answer) => answer.branch
          )
      })
      let offered: ReadonlyArray<unknown> = []
      const executor = yield* Executor.make(yield* ToolRegistry.make([pick]))
      const result = yield* executor.run(call("c1", "pick_branch", { token: "tok-SECRET-3" })).pipe(
        Effect.provide(Ask.layerFunction((request) =>
          Effect.sync(() => {
            offered = request.choices ?? []
            return Ask.answer({ branch: "main" })
          })
        ))
      )
      assert.strictEqual(result.value, "main")
      assert.strictEqual(offered.length, 2)
      assert.notInclude(JSON.stringify(offered), "tok-SECRET-3")
      assert.deepStrictEqual(offered[0], { branch: "main" })
      const question = questionOf(yield* events)
      assert.deepStrictEqual(question.choices, offered)
    }).pipe(Effect.provide(test)))

  it.effect("redacted keys of the answer stay redacted in tool.answered; the handler gets the value", () =>
    Effect.gen(function*() {
      const login = Tool.make("login", {
        description: "Asks for a password.",
        input: Schema.Struct({}),
        failure: Ask.NotAnswered,
        services: [Ask.Ask],
        safety: { access: "read", redact: { keys: ["password"] } },
        handler: () =>
          Effect.map(
            Ask.question({ message: "Password?", answer: Schema.Struct({ user: Schema.String, password: Schema.String }) }),
            (a) => `${a.user}:${a.password.length}`
          )
      })
      const executor = yield* Executor.make(yield* ToolRegistry.make([login]))
      const result = yield* executor.run(call("c1", "login")).pipe(
        Effect.provide(Ask.layerFunction(() => Effect.succeed(Ask.answer({ user: "ann", password: "hunter2-ask" }))))
      )
      assert.strictEqual(result.value, "ann:11")
      const all = yield* events
      const answered = answeredOf(all)
      assert.strictEqual((answered.answer as { user: string }).user, "ann")
      assert.notInclude(JSON.stringify(all.map((e) => Schema.encodeSync(ToolEvent.EventJson)(e))), "hunter2-ask")
    }).pipe(Effect.provide(test)))

  it.effect("no answerer: Unanswerable (no-answerer), which the model reads as the declared failure", () =>
    Effect.gen(function*() {
      const result = yield* Effect.flatten(executorWith(undefined))
      assert.strictEqual(result.error?._tag, "ToolFailure")
      assert.include(ToolResult.textOf(result), "could not be answered (no-answerer)")
      const answered = answeredOf(yield* events)
      assert.strictEqual(answered.outcome, "unanswerable")
      assert.include(answered.reason ?? "", "no Ask.Answerer")
      assert.strictEqual(answered.answeredBy, undefined)
    }).pipe(Effect.provide(test)))

  it.effect("a rule declines: Declined with the rule's reason; the handler may catch it", () =>
    Effect.gen(function*() {
      const polite = Tool.make("polite", {
        description: "Asks, and copes with a refusal.",
        input: Schema.Struct({}),
        services: [Ask.Ask],
        handler: () =>
          Ask.question({ message: "Name?", answer: Schema.Struct({ name: Schema.String }) }).pipe(
            Effect.map((a) => `hello ${a.name}`),
            Effect.catchTag("AskDeclined", (e) => Effect.succeed(`no name: ${e.reason}`)),
            Effect.catchTag("AskUnanswerable", (e) => Effect.fail(ToolError.repairable(e.message)))
          )
      })
      const executor = yield* Executor.make(yield* ToolRegistry.make([polite]))
      const rules = Ask.layerRules([
        { name: "names", match: (r) => r.message.startsWith("Nick"), reply: { answer: { name: "nick" } } },
        { name: "private", match: (r) => r.message.startsWith("Name"), reply: { decline: "names are private" } }
      ])
      const result = yield* executor.run(call("c1", "polite")).pipe(Effect.provide(rules))
      assert.strictEqual(result.value, "no name: names are private")
      const answered = answeredOf(yield* events)
      assert.strictEqual(answered.outcome, "declined")
      assert.strictEqual(answered.reason, "names are private")
      assert.strictEqual(answered.answeredBy, "rule:private")
    }).pipe(Effect.provide(test)))

  it.effect("rules with no match decline by default", () =>
    Effect.gen(function*() {
      const result = yield* Effect.flatten(executorWith(Ask.layerRules([{ match: () => false, reply: { answer: {} } }])))
      assert.include(ToolResult.textOf(result), "no rule answers this question")
      assert.strictEqual(answeredOf(yield* events).answeredBy, "rules")
    }).pipe(Effect.provide(test)))

  it.effect("the question's timeout: Unanswerable (timeout) once it passes without an answer", () =>
    Effect.gen(function*() {
      const waiting = Tool.make("waiting", {
        description: "Asks with a bound.",
        input: Schema.Struct({}),
        failure: Ask.NotAnswered,
        services: [Ask.Ask],
        handler: () => Ask.question({ message: "Ok?", answer: Schema.Struct({ ok: Schema.Boolean }), timeout: "30 seconds" })
      })
      const executor = yield* Executor.make(yield* ToolRegistry.make([waiting]))
      const fiber = yield* executor.run(call("c1", "waiting")).pipe(
        Effect.provide(Ask.layerFunction(() => Effect.never)),
        Effect.forkChild
      )
      yield* Effect.yieldNow
      yield* TestClock.adjust("31 seconds")
      const result = yield* Fiber.join(fiber)
      assert.include(ToolResult.textOf(result), "no answer within 30s")
      const answered = answeredOf(yield* events)
      assert.strictEqual(answered.outcome, "unanswerable")
      assert.strictEqual(answered.elapsed, 30_000)
    }).pipe(Effect.provide(test)))

  it.effect("an answer the schema refuses: Unanswerable (invalid-answer)", () =>
    Effect.gen(function*() {
      const result = yield* Effect.flatten(executorWith(Ask.layerFunction(() => Effect.succeed(Ask.answer({ branch: 7 })))))
      assert.include(ToolResult.textOf(result), "invalid-answer")
      assert.include(answeredOf(yield* events).reason ?? "", "does not match the schema")
    }).pipe(Effect.provide(test)))

  it.effect("a question whose answer is not an object schema is refused before anyone is asked", () =>
    Effect.gen(function*() {
      let asked = 0
      const exit = yield* Ask.question({ message: "How many?", answer: Schema.Number }).pipe(
        Effect.flip,
        Effect.provide(Ask.Ask.layerDirect),
        Effect.provide(Ask.layerFunction(() => Effect.sync(() => (asked++, Ask.answer(1)))))
      )
      assert.strictEqual(exit._tag, "AskUnanswerable")
      assert.strictEqual((exit as Ask.Unanswerable).reason, "invalid-question")
      assert.include(exit.message, "the root must be an object schema")
      assert.strictEqual(asked, 0)
    }))

  it.effect("called directly (ToolServices.layerTest), a handler asks the Answerer in context", () =>
    Effect.gen(function*() {
      const out = yield* deploy.handler({ service: "web", token: "t" }).pipe(
        Effect.provide(Ask.layerFunction(() => Effect.succeed(Ask.answer({ branch: "main" }))))
      )
      assert.strictEqual(out, "deploying web@main")
    }).pipe(Effect.provide(test)))

  it("a handler that ignores Declined / Unanswerable does not compile", () => {
    const make = () =>
      Tool.make("careless", {
        description: "Ignores a refusal.",
        input: Schema.Struct({}),
        services: [Ask.Ask],
        // @ts-expect-error: AskDeclined | AskUnanswerable are neither declared nor handled
        handler: () => Ask.question({ message: "Ok?", answer: Schema.Struct({ ok: Schema.Boolean }) })
      })
    assert.isFunction(make)
  })
})
