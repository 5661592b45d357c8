/**
 * `Ask` in the agent loop: a tool the model calls asks, the application's
 * answerer answers, and the model reads the tool's output (`Agent.run`); with
 * `Agent.stream`, the question is an event a front-end renders (its message and
 * the answer's JSON Schema), and the front-end's answer resumes the tool.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Schema, Stream } from "effect"
import { Agent, Ask, ChatModel, Tool, ToolRegistry, ToolResult, ToolServices } from "../../src/index.ts"
import type { ToolEvent } from "../../src/index.ts"

const deploy = Tool.make("deploy", {
  description: "Deploys a service; asks the user which branch.",
  input: Schema.Struct({ service: Schema.String }),
  failure: Ask.NotAnswered,
  services: [Ask.Ask],
  handler: ({ service }) =>
    Effect.map(
      Ask.question({
        message: `Which branch of ${service} should I deploy?`,
        answer: Schema.Struct({ branch: Schema.Literals(["main", "staging"]) }),
        choices: [{ branch: "main" }, { branch: "staging" }]
      }),
      ({ branch }) => `deployed ${service}@${branch}`
    )
})

const script = ChatModel.scripted([
  ChatModel.callTools([["c1", "deploy", { service: "api" }]]),
  ChatModel.answer("Deployed.")
])

const user = (content: string) => ({ role: "user" as const, content })

describe("Ask in the agent loop", () => {
  it.effect("Agent.run: the tool asks, the application's layer answers, the model reads the output", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry.make([deploy])
      const result = yield* Agent.run({ messages: [user("deploy api")], tools }).pipe(
        Effect.provide(Ask.layerFunction((request) =>
          Effect.succeed(Ask.answer({ branch: request.message.includes("api") ? "staging" : "main" }, "ops"))
        ))
      )
      assert.strictEqual(result.text, "Deployed.")
      assert.deepStrictEqual(result.results.map((r) => r.value), ["deployed api@staging"])
    }).pipe(Effect.provide(script), Effect.provide(ToolServices.layerTest())))

  it.effect("Agent.run without an answerer: the model reads that no one could answer", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry.make([deploy])
      const result = yield* Agent.run({ messages: [user("deploy api")], tools })
      assert.strictEqual(result.results[0]?.error?._tag, "ToolFailure")
      assert.include(ToolResult.textOf(result.results[0]!), "no-answerer")
    }).pipe(Effect.provide(script), Effect.provide(ToolServices.layerTest())))

  it.effect("Agent.stream: the front-end sees tool.question (message, schema, choices) and its answer resumes the tool", () =>
    Effect.gen(function*() {
      const tools = yield* ToolRegistry.make([deploy])
      // The front-end's answer: the answerer waits for it; the stream's consumer gives it.
      const reply = yield* Deferred.make<Ask.Reply>()
      const events = yield* Agent.stream({ messages: [user("deploy api")], tools }).pipe(
        Stream.tap((event) =>
          event._tag === "tool.question"
            ? Deferred.succeed(reply, Ask.answer(event.choices?.[1], "front-end"))
            : Effect.void
        ),
        Stream.runCollect,
        Effect.provide(Ask.layerFunction(() => Deferred.await(reply)))
      )
      const tags = events.map((e) => e._tag)
      const at = (tag: string) => tags.indexOf(tag as ToolEvent.Event["_tag"])
      assert.isTrue(at("tool.started") < at("tool.question"))
      assert.isTrue(at("tool.question") < at("tool.answered"))
      assert.isTrue(at("tool.answered") < at("tool.completed"))
      const question = events[at("tool.question")] as ToolEvent.ToolQuestion
      assert.strictEqual(question.message, "Which branch of api should I deploy?")
      assert.deepStrictEqual(question.schema, {
        type: "object",
        properties: { branch: { type: "string", enum: ["main", "staging"] } },
        required: ["branch"],
        additionalProperties: false
      })
      const answered = events[at("tool.answered")] as ToolEvent.ToolAnswered
      assert.deepStrictEqual([answered.outcome, answered.answer, answered.answeredBy], [
        "answered",
        { branch: "staging" },
        "front-end"
      ])
      assert.strictEqual((events.at(-1) as ToolEvent.AgentFinished).text, "Deployed.")
    }).pipe(Effect.provide(script), Effect.provide(ToolServices.layerTest())))
})
