/**
 * Typed final output (`Agent.run`'s `output`): the answer asked for through the model's structured
 * output (`ChatModel.structuredOutput`) or a final-answer tool, decoded by the schema into
 * `AgentResult.output`; a rejected answer sent back for repair in the tool repair messages' words,
 * at most `outputRetries` times, then `AgentFailed` with `OutputInvalid`; `Agent.stream` reports the
 * partial answer (`agent.output_delta`) and the decoded one once (`agent.output`).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Schema, Stream } from "effect"
import { Agent, ChatModel, EventSink, Tool, ToolRegistry, ToolServices } from "../../src/index.ts"
import type { ToolEvent } from "../../src/index.ts"
import { everyDeltaUpTo, parsePartial, partials } from "../../src/agent/internal/partialJson.ts"

const Weather = Schema.Struct({
  city: Schema.String,
  celsius: Schema.Number,
  tags: Schema.Array(Schema.String)
}).annotate({ description: "The weather report." })

const lookup = Tool.make("lookup", {
  description: "Looks up the temperature of a city.",
  input: Schema.Struct({ city: Schema.String }),
  handler: ({ city }) => Effect.succeed(city === "Oslo" ? 4 : 20)
})

const registry = ToolRegistry.makeResult([lookup]).pipe((r) => {
  if (r._tag === "Failure") throw r.failure
  return r.success
})

const user = (content: string): ChatModel.Message => ({ role: "user", content })
const services = ToolServices.layerTest({ runId: "output-run", threadId: "t" })
const sinkEvents = EventSink.EventLog.use((log) => log.all)
const good = { city: "Oslo", celsius: 4, tags: ["cold"] }

describe("Agent.run with output", () => {
  it.effect("a model without structured output answers through the final-answer tool; output is typed", () => {
    const requests: Array<ChatModel.Request> = []
    return Effect.gen(function*() {
      const result = yield* Agent.run({ messages: [user("weather in Oslo?")], tools: registry, output: Weather })
      // the type flows from the schema
      const output: { readonly city: string; readonly celsius: number; readonly tags: ReadonlyArray<string> } | undefined =
        result.output
      assert.deepStrictEqual(output, good)
      assert.strictEqual(result.reason, "final_answer")
      assert.strictEqual(result.text, JSON.stringify(good))
      // the final-answer tool is advertised beside the registry's tools, with the schema's description
      assert.deepStrictEqual(requests[0]!.tools.map((t) => t.name), ["lookup", "final_answer"])
      assert.strictEqual(requests[0]!.tools[1]!.description, "The weather report.")
      assert.isUndefined(requests[0]!.output)
      assert.strictEqual(requests[0]!.answerTool, "final_answer")
      // the transcript answers the final call; results hold only the tools that ran
      const last = result.transcript.at(-1)!
      assert.deepStrictEqual(last.role === "tool" ? last.results.map((r) => [r.toolCallId, r.isError]) : [], [["f", false]])
      assert.deepStrictEqual(result.results.map((r) => r.name), ["lookup"])
      const events = yield* sinkEvents
      const out = events.filter((e) => e._tag === "agent.output")
      assert.deepStrictEqual(out.map((e) => e._tag === "agent.output" && e.output), [good])
    }).pipe(Effect.provide(Layer.merge(
      ChatModel.scripted([
        (request) => (requests.push({ ...request, messages: [...request.messages] }), ChatModel.callTools([["c1", "lookup", { city: "Oslo" }]])),
        (request) => (requests.push({ ...request, messages: [...request.messages] }), ChatModel.callTools([["f", "final_answer", good]]))
      ]),
      services
    )))
  })

  it.effect("a model with structured output is sent the schema and answers with JSON text", () => {
    const requests: Array<ChatModel.Request> = []
    return Effect.gen(function*() {
      const result = yield* Agent.run({ messages: [user("weather?")], tools: registry, output: Weather, outputName: "weather" })
      assert.deepStrictEqual(result.output, good)
      assert.deepStrictEqual(requests[0]!.tools.map((t) => t.name), ["lookup"])
      assert.isUndefined(requests[0]!.answerTool)
      const format = requests[0]!.output!
      assert.strictEqual(format.name, "weather")
      assert.deepStrictEqual(format.schema.required, ["city", "celsius", "tags"])
      assert.strictEqual(format.schema.additionalProperties, false)
    }).pipe(Effect.provide(Layer.merge(
      ChatModel.scripted([(request) => (requests.push({ ...request, messages: [...request.messages] }), ChatModel.answerJson(good))], { structuredOutput: true }),
      services
    )))
  })

  it.effect("a rejected answer goes back for repair, worded as tool repairs are, and the repaired one is taken", () => {
    const requests: Array<ChatModel.Request> = []
    return Effect.gen(function*() {
      const result = yield* Agent.run({ messages: [user("weather?")], tools: registry, output: Weather })
      assert.deepStrictEqual(result.output, good)
      assert.strictEqual(result.turns, 3)
      // structured output: the repair is a user message naming the issues
      const repair = requests[1]!.messages.at(-1)!
      assert.strictEqual(repair.role, "user")
      assert.strictEqual(
        repair.role === "user" && repair.content,
        "final_answer: invalid answer: at \"celsius\": Expected number, got \"4\". Answer again with only a JSON object that matches the output schema."
      )
      const notJson = requests[2]!.messages.at(-1)!
      assert.match(notJson.role === "user" ? notJson.content : "", /^final_answer: malformed answer: the arguments are not valid JSON/)
    }).pipe(Effect.provide(Layer.merge(
      ChatModel.scripted([
        (request) => (requests.push({ ...request, messages: [...request.messages] }), ChatModel.answerJson({ ...good, celsius: "4" })),
        (request) => (requests.push({ ...request, messages: [...request.messages] }), ChatModel.answer("It is 4 degrees in Oslo.")),
        (request) => (requests.push({ ...request, messages: [...request.messages] }), ChatModel.answerJson(good))
      ], { structuredOutput: true }),
      services
    )))
  })

  it.effect("through the final-answer tool, a rejected call is answered with the tool repair message", () => {
    const requests: Array<ChatModel.Request> = []
    return Effect.gen(function*() {
      const result = yield* Agent.run({ messages: [user("weather?")], tools: registry, output: Weather })
      assert.deepStrictEqual(result.output, good)
      const answered = requests[1]!.messages.at(-1)!
      assert.strictEqual(answered.role, "tool")
      const rejected = answered.role === "tool" ? answered.results[0]! : undefined
      assert.isTrue(rejected?.isError)
      assert.strictEqual(rejected?.error?._tag, "InvalidArguments")
      assert.match(rejected?.content[0]?.type === "text" ? rejected.content[0].text : "", /^final_answer: invalid arguments: at "tags"/)
      // a text answer where the tool was expected is told to call it
      const told = requests[2]!.messages.at(-1)!
      assert.strictEqual(
        told.role === "user" && told.content,
        "final_answer: malformed answer: the answer is text, not a call of the final_answer tool. Give your final answer by calling the final_answer tool with arguments that match its schema."
      )
    }).pipe(Effect.provide(Layer.merge(
      ChatModel.scripted([
        (request) => (requests.push({ ...request, messages: [...request.messages] }), ChatModel.callTools([["f1", "final_answer", { city: "Oslo", celsius: 4 }]])),
        (request) => (requests.push({ ...request, messages: [...request.messages] }), ChatModel.answer("Oslo: 4 degrees")),
        (request) => (requests.push({ ...request, messages: [...request.messages] }), ChatModel.callTools([["f2", "final_answer", good]]))
      ]),
      services
    )))
  })

  it.effect("a final-answer call beside other calls is not read; the other calls run", () =>
    Effect.gen(function*() {
      const result = yield* Agent.run({ messages: [user("weather?")], tools: registry, output: Weather })
      assert.deepStrictEqual(result.output, good)
      const tool = result.transcript[2]!
      assert.deepStrictEqual(tool.role === "tool" ? tool.results.map((r) => [r.toolCallId, r.isError]) : [], [
        ["c1", false],
        ["f1", true]
      ])
    }).pipe(Effect.provide(Layer.merge(
      ChatModel.scripted([
        ChatModel.callTools([["c1", "lookup", { city: "Oslo" }], ["f1", "final_answer", good]]),
        ChatModel.callTools([["f2", "final_answer", good]])
      ]),
      services
    ))))

  it.effect("after outputRetries repairs the run fails with OutputInvalid, carrying the transcript", () =>
    Effect.gen(function*() {
      const failed = yield* Effect.flip(Agent.run({ messages: [user("weather?")], tools: registry, output: Weather, outputRetries: 1 }))
      assert.strictEqual(failed.reason, "output")
      assert.strictEqual(failed.turns, 2)
      assert.instanceOf(failed.error, Agent.OutputInvalid)
      const invalid = failed.error as Agent.OutputInvalid
      assert.strictEqual(invalid.attempts, 2)
      assert.strictEqual(invalid.error._tag, "InvalidArguments")
      assert.strictEqual(
        failed.message,
        "agent run failed (output) in turn 1: the final answer did not match the output schema after 2 attempts: final_answer: invalid arguments: at \"city\": Missing key"
      )
      // both answers and the repair between them are in the transcript
      assert.deepStrictEqual(failed.transcript.map((m) => m.role), ["user", "assistant", "user", "assistant", "user"])
      const finished = (yield* sinkEvents).filter((e) => e._tag === "agent.finished")
      assert.deepStrictEqual(finished.map((e) => e._tag === "agent.finished" && e.reason), ["failed"])
    }).pipe(Effect.provide(Layer.merge(
      ChatModel.scripted([ChatModel.answerJson({ celsius: 1, tags: [] }), ChatModel.answerJson({ celsius: 2, tags: [] })], {
        structuredOutput: true
      }),
      services
    ))))

  it.effect("an output schema whose root is not an object is refused when the run starts", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.exit(Agent.run({ messages: [user("x")], tools: registry, output: Schema.String as never }))
      assert.isTrue(exit._tag === "Failure")
    }).pipe(Effect.provide(Layer.merge(ChatModel.scripted([]), services))))
})

describe("Agent.stream with output", () => {
  const chunks = ["{\"city\":\"Os", "lo\",\"celsius\":4", ",\"tags\":[\"co", "ld\"]}"]
  const streamed = (structuredOutput: boolean) =>
    Layer.succeed(
      ChatModel.ChatModel,
      ChatModel.make({
        stream: () =>
          Stream.fromIterable<ChatModel.StreamPart>(
            structuredOutput
              ? [
                ...chunks.map((text) => ({ _tag: "TextDelta" as const, text })),
                { _tag: "Finished", response: ChatModel.answer(chunks.join("")) }
              ]
              : [
                { _tag: "ToolCallStarted", id: "f", name: "final_answer" },
                ...chunks.map((argumentsDelta) => ({ _tag: "ToolCallDelta" as const, id: "f", argumentsDelta })),
                { _tag: "Finished", response: ChatModel.callTools([["f", "final_answer", chunks.join("")]]) }
              ]
          )
      }, { structuredOutput })
    )
  const partials = [
    { city: "Os" },
    { city: "Oslo" },
    // `4` is read once a delimiter follows it (it could have been `42`)
    { city: "Oslo", celsius: 4, tags: ["co"] },
    { city: "Oslo", celsius: 4, tags: ["cold"] }
  ]

  for (const structuredOutput of [true, false]) {
    it.effect(`emits the partial answer as it arrives and the decoded one once (${structuredOutput ? "structured output" : "final-answer tool"})`, () =>
      Effect.gen(function*() {
        const events: ReadonlyArray<ToolEvent.Event> = yield* Stream.runCollect(
          Agent.stream({ messages: [user("weather?")], tools: registry, output: Weather })
        )
        assert.deepStrictEqual(events.flatMap((e) => e._tag === "agent.output_delta" ? [e.partial] : []), partials)
        assert.deepStrictEqual(events.flatMap((e) => e._tag === "agent.output" ? [e.output] : []), [good])
        const tags = events.map((e) => e._tag)
        assert.isBelow(tags.lastIndexOf("agent.output_delta"), tags.indexOf("agent.output"))
        assert.strictEqual(tags.at(-1), "agent.finished")
      }).pipe(Effect.provide(Layer.merge(streamed(structuredOutput), services))))
  }
})

describe("partials", () => {
  it("parse work over a long answer streamed in small deltas stays linear in its length (counted, not timed)", () => {
    const value = { items: Array.from({ length: 3_000 }, (_, i) => ({ id: i, text: `item number ${i}` })) }
    const text = JSON.stringify(value)
    const growing = partials()
    let shown = 0
    let last: unknown
    for (let i = 0; i < text.length; i += 4) {
      const partial = growing.push(text.slice(i, i + 4))
      if (partial !== undefined) {
        shown++
        last = partial
      }
    }
    const final = growing.flush()
    assert.deepStrictEqual(final ?? last, value)
    const n = text.length
    assert.isAbove(n, 70_000)
    // every delta parsing the whole text again reads about n² / 8 characters (about 7·10⁸ here)
    assert.isAtMost(growing.parsed(), everyDeltaUpTo ** 2 / 4 + 10 * n)
    // and a short text is still parsed on every delta
    assert.isAtLeast(shown, everyDeltaUpTo / 4)
  })

  it("a short answer is parsed on every delta; flush parses only what grew since", () => {
    const growing = partials()
    assert.deepStrictEqual(growing.push("{\"a\":\"x"), { a: "x" })
    assert.deepStrictEqual(growing.push("y\"}"), { a: "xy" })
    assert.strictEqual(growing.flush(), undefined)
    assert.strictEqual(growing.parsed(), "{\"a\":\"xy\"}".length * 2 - 3)
  })
})

describe("Agent.stream with a long output", () => {
  it.effect("the last agent.output_delta is the whole answer, though not every delta was parsed", () =>
    Effect.gen(function*() {
      const answer = { city: "Oslo", celsius: 4, tags: Array.from({ length: 1_000 }, (_, i) => `tag ${i}`) }
      const text = JSON.stringify(answer)
      const chunks = Array.from({ length: Math.ceil(text.length / 7) }, (_, i) => text.slice(i * 7, i * 7 + 7))
      const model = Layer.succeed(
        ChatModel.ChatModel,
        ChatModel.make({
          stream: () =>
            Stream.fromIterable<ChatModel.StreamPart>([
              ...chunks.map((text) => ({ _tag: "TextDelta" as const, text })),
              { _tag: "Finished", response: ChatModel.answer(text) }
            ])
        }, { structuredOutput: true })
      )
      const events: ReadonlyArray<ToolEvent.Event> = yield* Stream.runCollect(
        Agent.stream({ messages: [user("weather?")], tools: registry, output: Weather })
      ).pipe(Effect.provide(model))
      const deltas = events.flatMap((e) => e._tag === "agent.output_delta" ? [e.partial] : [])
      assert.deepStrictEqual(deltas.at(-1), answer)
      assert.isBelow(deltas.length, chunks.length)
    }).pipe(Effect.provide(services)))
})

describe("parsePartial", () => {
  it("closes open strings and containers and leaves out what is unfinished", () => {
    const cases: ReadonlyArray<readonly [string, unknown]> = [
      ["", undefined],
      ["{", {}],
      ["{\"ci", {}],
      ["{\"city\"", {}],
      ["{\"city\":", {}],
      ["{\"city\":\"O", { city: "O" }],
      ["{\"a\":1", { }],
      ["{\"a\":12,", { a: 12 }],
      ["{\"a\":tr", {}],
      ["{\"a\":true}", { a: true }],
      ["{\"a\":[1,2", { a: [1] }],
      ["{\"a\":[1,2]", { a: [1, 2] }],
      ["{\"a\":{\"b\":\"x\\\"y", { a: { b: "x\"y" } }],
      ["{\"a\":\"x\\u00", { a: "x" }],
      ["{\"a\":\"x\\u004", { a: "x" }],
      ["{\"a\":\"x\\u0041", { a: "xA" }],
      ["{\"a\":\"\\u00e9t\\n", { a: "ét\n" }],
      ["{\"a\":\"x\\", { a: "x" }],
      ["[\"a\",\"b", ["a", "b"]]
    ]
    for (const [text, expected] of cases) assert.deepStrictEqual(parsePartial(text), expected, text)
  })
})
