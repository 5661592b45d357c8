/**
 * The model sees what the tool chooses: `toModelOutput` renders an output as
 * text, JSON or content blocks (text, images, audio, embedded resources) while
 * the structured value stays on the result; redaction and artifact offloading
 * still apply to the text blocks (redaction also to text resources), media are
 * kept; every provider renders every block kind (Chat Completions, text only,
 * gets a placeholder for an image).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { Executor, Tool, ToolRegistry, ToolResult, ToolServices } from "../../src/index.ts"
import type { ToolEvent } from "../../src/index.ts"
import { Anthropic, Gemini, Mcp, OpenAiChat, OpenAiResponses } from "../../src/providers/index.ts"
import { EventSink } from "../../src/index.ts"

const call = (id: string, name: string, args: unknown = {}) => ({ id, name, arguments: args })
const test = ToolServices.layerTest({ runId: "run-1", threadId: "thread-1" })
const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"

const Weather = Schema.Struct({ city: Schema.String, celsius: Schema.Number, token: Schema.String })
const weather = Tool.make("weather", {
  description: "Current weather.",
  input: Schema.Struct({ city: Schema.String, as: Schema.Literals(["text", "json", "chart", "image"]) }),
  output: Weather,
  safety: { access: "read", redact: { keys: ["token"], patterns: [/sk-[a-z0-9]+/] } },
  toModelOutput: (w) => {
    // the handler's typed output; `as` is smuggled through the city for the test
    const [city, as] = w.city.split("|") as [string, string]
    switch (as) {
      case "text":
        return `${city}: ${w.celsius} °C (key sk-abc123)`
      case "json":
        return ToolResult.json({ city, c: w.celsius })
      case "chart":
        return [ToolResult.text(`${city}: chart below`), ToolResult.image(png, "image/png")]
      default:
        return ToolResult.image(png, "image/png")
    }
  },
  handler: ({ as, city }) => Effect.succeed({ city: `${city}|${as}`, celsius: 21.5, token: "sk-secret1" })
})

const run = (as: string) =>
  Effect.gen(function*() {
    const executor = yield* Executor.make(yield* ToolRegistry.make([weather]))
    return yield* executor.run(call(`c-${as}`, "weather", { city: "Oslo", as }))
  })

describe("toModelOutput", () => {
  it.effect("text: the model reads the tool's text, the structured value stays (redacted) for the application", () =>
    Effect.gen(function*() {
      const result = yield* run("text")
      assert.deepStrictEqual(result.content, [ToolResult.text("Oslo: 21.5 °C (key [redacted])")])
      assert.deepStrictEqual(result.value, { city: "Oslo|text", celsius: 21.5, token: "[redacted]" })
      const completed = (yield* EventSink.EventLog.use((log) => log.all)).at(-1) as ToolEvent.ToolCompleted
      assert.strictEqual(completed.output, "Oslo: 21.5 °C (key [redacted])")
    }).pipe(Effect.provide(test)))

  it.effect("JSON of the tool's choosing", () =>
    Effect.gen(function*() {
      const result = yield* run("json")
      assert.deepStrictEqual(result.content, [ToolResult.text("{\"city\":\"Oslo\",\"c\":21.5}")])
    }).pipe(Effect.provide(test)))

  it.effect("text and an image, in order; an image alone", () =>
    Effect.gen(function*() {
      const chart = yield* run("chart")
      assert.deepStrictEqual(chart.content, [
        ToolResult.text("Oslo: chart below"),
        { type: "image", data: png, mimeType: "image/png" }
      ])
      const image = yield* run("image")
      assert.deepStrictEqual(image.content, [{ type: "image", data: png, mimeType: "image/png" }])
      assert.strictEqual(ToolResult.textOf(image), "")
    }).pipe(Effect.provide(test)))

  it.effect("redaction keeps the blocks in their order: an image before the text stays first", () =>
    Effect.gen(function*() {
      const captioned = Tool.make("captioned", {
        description: "A figure, then a caption that quotes a key.",
        input: Schema.Struct({}),
        safety: { access: "read", redact: { patterns: [/sk-[a-z0-9]+/] } },
        toModelOutput: (caption) => [ToolResult.image(png, "image/png"), ToolResult.text(String(caption))],
        handler: () => Effect.succeed("made with sk-abc123")
      })
      const executor = yield* Executor.make(yield* ToolRegistry.make([captioned]))
      const result = yield* executor.run(call("c1", "captioned"))
      assert.deepStrictEqual(result.content, [ToolResult.image(png, "image/png"), ToolResult.text("made with [redacted]")])
    }).pipe(Effect.provide(test)))

  it.effect("a text block that is the value's JSON, among other blocks, loses the values of redacted keys", () =>
    Effect.gen(function*() {
      const session = Tool.make("session", {
        description: "The session as JSON, then a note.",
        input: Schema.Struct({}),
        output: Schema.Struct({ user: Schema.String, token: Schema.String }),
        safety: { access: "read", redact: { keys: ["token"], patterns: [/sk-[a-z0-9]+/] } },
        toModelOutput: (session) => [ToolResult.json(session), ToolResult.text("signed in with sk-abc123")],
        handler: () => Effect.succeed({ user: "ann", token: "tok-secret" })
      })
      const executor = yield* Executor.make(yield* ToolRegistry.make([session]))
      const result = yield* executor.run(call("c1", "session"))
      assert.deepStrictEqual(result.content, [
        ToolResult.json({ user: "ann", token: "[redacted]" }),
        ToolResult.text("signed in with [redacted]")
      ])
    }).pipe(Effect.provide(test)))

  it.effect("large text is offloaded to an artifact and images are kept", () =>
    Effect.gen(function*() {
      const report = Tool.make("report", {
        description: "A long report with a figure.",
        input: Schema.Struct({}),
        toModelOutput: (text) => [ToolResult.text(String(text)), ToolResult.image(png, "image/png")],
        handler: () => Effect.succeed("line\n".repeat(10_000))
      })
      const executor = yield* Executor.make(yield* ToolRegistry.make([report]), { artifacts: { threshold: 1_000 } })
      const result = yield* executor.run(call("c1", "report"))
      assert.lengthOf(result.artifacts, 1)
      assert.strictEqual(result.artifacts[0]!.mimeType, "text/plain")
      assert.lengthOf(result.content, 2)
      assert.isAtMost(ToolResult.textOf(result).length, 1_000)
      assert.include(ToolResult.textOf(result), "stored as artifact")
      assert.deepStrictEqual(result.content[1], { type: "image", data: png, mimeType: "image/png" })
    }).pipe(Effect.provide(test)))

  it.effect("audio and embedded resources: kept in order; a text resource's text is redacted, also after an offload", () =>
    Effect.gen(function*() {
      const recording = Tool.make("recording", {
        description: "A long transcript, the audio, the transcript as a resource and the raw file.",
        input: Schema.Struct({}),
        safety: { access: "read", redact: { patterns: [/sk-[a-z0-9]+/] } },
        toModelOutput: (transcript) => [
          ToolResult.text(String(transcript)),
          ToolResult.audio("UklGRg==", "audio/wav"),
          ToolResult.resource({ uri: "rec://1/transcript", mimeType: "text/plain", text: "said sk-abc123 aloud" }),
          ToolResult.resource({ uri: "rec://1/raw", blob: "UklGRg==" })
        ],
        handler: () => Effect.succeed("word ".repeat(1_000))
      })
      const executor = yield* Executor.make(yield* ToolRegistry.make([recording]), { artifacts: { threshold: 1_000 } })
      const result = yield* executor.run(call("c1", "recording"))
      assert.lengthOf(result.artifacts, 1)
      assert.include(ToolResult.textOf(result), "stored as artifact")
      assert.deepStrictEqual(result.content.slice(1), [
        ToolResult.audio("UklGRg==", "audio/wav"),
        ToolResult.resource({ uri: "rec://1/transcript", mimeType: "text/plain", text: "said [redacted] aloud" }),
        ToolResult.resource({ uri: "rec://1/raw", blob: "UklGRg==" })
      ])
      // the result's schema (journals, durable runs) keeps every block
      const encoded = Schema.encodeSync(ToolResult.ToolResult)(result)
      assert.deepStrictEqual(Schema.decodeUnknownSync(ToolResult.ToolResult)(JSON.parse(JSON.stringify(encoded))).content, result.content)
    }).pipe(Effect.provide(test)))

  it.effect("a keyed tool's replay returns its audio and resources as stored", () =>
    Effect.gen(function*() {
      let runs = 0
      const speak = Tool.make("speak", {
        description: "Speaks a line once per id.",
        input: Schema.Struct({ id: Schema.String }),
        safety: { access: "write" },
        idempotency: ({ id }) => id,
        toModelOutput: (id) => [ToolResult.audio("UklGRg==", "audio/wav"), ToolResult.resource({ uri: `line://${id}`, text: "hi" })],
        handler: ({ id }) => Effect.sync(() => (runs++, id))
      })
      const executor = yield* Executor.make(yield* ToolRegistry.make([speak]))
      const first = yield* executor.run(call("c1", "speak", { id: "a" }))
      const again = yield* executor.run(call("c2", "speak", { id: "a" }))
      assert.strictEqual(runs, 1)
      assert.isTrue(again.idempotency?.replayed)
      assert.deepStrictEqual(again.content, first.content)
      assert.deepStrictEqual(again.content, [ToolResult.audio("UklGRg==", "audio/wav"), ToolResult.resource({ uri: "line://a", text: "hi" })])
    }).pipe(Effect.provide(test)))

  it.effect("a toModelOutput that throws is a ToolDefect", () =>
    Effect.gen(function*() {
      const broken = Tool.make("broken_render", {
        description: "Its renderer throws.",
        input: Schema.Struct({}),
        toModelOutput: (): string => {
          throw new Error("render failed")
        },
        handler: () => Effect.succeed(1)
      })
      const executor = yield* Executor.make(yield* ToolRegistry.make([broken]))
      const error = yield* Effect.flip(executor.run(call("c1", "broken_render")))
      assert.strictEqual(error._tag, "ToolDefect")
    }).pipe(Effect.provide(test)))

  it.effect("every provider renders text and image blocks (Chat Completions: a placeholder for the image)", () =>
    Effect.gen(function*() {
      const result = yield* run("chart")
      const chat = OpenAiChat.toolMessages([result])[0]!
      assert.strictEqual(chat.content, "Oslo: chart below\n[image: image/png, 45 bytes; not sent: a Chat Completions tool message carries text only]")
      const responses = OpenAiResponses.toolMessages([result])[0]!
      assert.deepStrictEqual(responses.output, [
        { type: "input_text", text: "Oslo: chart below" },
        { type: "input_image", image_url: `data:image/png;base64,${png}`, detail: "auto" }
      ])
      const anthropic = Anthropic.toolMessages([result]).content[0]!
      assert.deepStrictEqual((anthropic as { content: unknown }).content, [
        { type: "text", text: "Oslo: chart below" },
        { type: "image", source: { type: "base64", media_type: "image/png", data: png } }
      ])
      const gemini = Gemini.toolMessages([result]).parts[0]!.functionResponse
      assert.deepStrictEqual(gemini.parts, [{ inlineData: { mimeType: "image/png", data: png } }])
      const mcp = Mcp.toolMessages([result])[0]!
      assert.deepStrictEqual(mcp.content, [
        { type: "text", text: "Oslo: chart below" },
        { type: "image", data: png, mimeType: "image/png" }
      ])
    }).pipe(Effect.provide(test)))
})
