import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit, Layer, Schema, Stream } from "effect"
import { LanguageModel, Prompt, type Response, Tool as AiTool, Toolkit } from "effect/ai"
import * as EffectAi from "../../src/integrations/EffectAi.ts"
import { EventSink, Executor, ToolRegistry, ToolResult, ToolServices } from "../../src/index.ts"
import { add, echoSecret, explode, registryOf } from "./support.ts"

const usage = { inputTokens: { total: 10 }, outputTokens: { total: 5 } }
const finish = (reason: "tool-calls" | "stop"): Response.PartEncoded =>
  ({ type: "finish", reason, usage }) as unknown as Response.PartEncoded
const toolCall = (id: string, name: string, params: unknown): Response.PartEncoded =>
  ({ type: "tool-call", id, name, params }) as Response.PartEncoded

/** A test `LanguageModel` that plays turns and records the prompts it was sent. */
const scripted = (turns: ReadonlyArray<ReadonlyArray<Response.PartEncoded>>) => {
  const prompts: Array<Prompt.Prompt> = []
  const tools: Array<ReadonlyArray<string>> = []
  let turn = 0
  const layer = Layer.effect(
    LanguageModel.LanguageModel,
    LanguageModel.make({
      generateText: (options) =>
        Effect.sync(() => {
          prompts.push(options.prompt)
          tools.push(options.tools.map((t) => t.name))
          return [...(turns[turn++] ?? [{ type: "text", text: "(no more turns)" } as Response.PartEncoded])]
        }),
      streamText: () => Stream.empty
    })
  )
  return { layer, prompts, tools }
}

const events = EventSink.EventLog.use((log) => log.all)

describe("EffectAi: a registry as a Toolkit", () => {
  it.effect("the toolkit carries each spec's name, description and JSON Schema", () =>
    Effect.gen(function*() {
      const registry = yield* registryOf([add, echoSecret])
      const toolkit = EffectAi.toolkit(registry)
      const spec = registry.specs[0]!
      assert.deepStrictEqual(Object.keys(toolkit.tools), ["add", "echo_secret"])
      assert.strictEqual(toolkit.tools.add!.description, spec.description)
      assert.deepStrictEqual(AiTool.getJsonSchema(toolkit.tools.add!), spec.inputSchema)
    }))

  it.effect("LanguageModel.generateText resolves calls through the executor: results, repairable failures, events", () =>
    Effect.gen(function*() {
      const executor = yield* Executor.make(yield* registryOf([add, echoSecret]))
      const toolkit = yield* EffectAi.toToolkit(executor)
      const model = scripted([
        [
          toolCall("call_1", "add", { a: 2, b: 3 }),
          toolCall("call_2", "add", { a: "two", b: 3 }),
          toolCall("call_3", "echo_secret", { token: "sk-live-123" }),
          finish("tool-calls")
        ],
        [{ type: "text", text: "5" } as Response.PartEncoded, finish("stop")]
      ])
      const first = yield* LanguageModel.generateText({ prompt: "2 + 3?", toolkit }).pipe(Effect.provide(model.layer))
      assert.deepStrictEqual(model.tools[0], ["add", "echo_secret"])
      const results = first.toolResults.map((r) => [r.id, r.isFailure, r.encodedResult] as const)
      assert.deepStrictEqual([...results].sort((x, y) => x[0].localeCompare(y[0])), [
        ["call_1", false, 5],
        ["call_2", true, "add: invalid arguments: at \"a\": Expected number, got \"two\""],
        ["call_3", false, { token: "[redacted]", length: 11 }]
      ])
      const ok = first.toolResults.find((r) => r.id === "call_1")!.result
      assert.isTrue(ok instanceof EffectAi.Rendered && ok.result.toolCallId === "call_1")

      // the next turn: the results go back in the prompt, the model answers
      const second = yield* LanguageModel.generateText({
        prompt: Prompt.concat(Prompt.make("2 + 3?"), Prompt.fromResponseParts(first.content)),
        toolkit
      }).pipe(Effect.provide(model.layer))
      assert.strictEqual(second.text, "5")
      const toolMessage = model.prompts[1]!.content.find((m) => m.role === "tool")!
      const sent = JSON.stringify(toolMessage)
      assert.include(sent, "Expected number, got")
      assert.include(sent, "[redacted]")
      assert.notInclude(sent, "sk-live-123")

      const log = yield* events
      const byCall = log.map((e) => [e._tag, (e as { toolCallId?: string }).toolCallId ?? ""] as const)
      assert.deepStrictEqual([...byCall].sort((x, y) => x[1].localeCompare(y[1])), [
        ["tool.started", "call_1"],
        ["tool.completed", "call_1"],
        ["tool.rejected", "call_2"],
        ["tool.started", "call_3"],
        ["tool.completed", "call_3"]
      ])
    }).pipe(Effect.provide(ToolServices.layerTest())))

  it.effect("a fatal error ends generateText as a defect holding the ToolError, never its cause text for the model", () =>
    Effect.gen(function*() {
      const executor = yield* Executor.make(yield* registryOf([explode]))
      const toolkit = yield* EffectAi.toToolkit(executor)
      const model = scripted([[toolCall("call_x", "explode", {}), finish("tool-calls")]])
      const exit = yield* Effect.exit(LanguageModel.generateText({ prompt: "go", toolkit }).pipe(Effect.provide(model.layer)))
      assert.isTrue(Exit.isFailure(exit))
      if (Exit.isFailure(exit)) {
        const defect = Cause.squash(exit.cause) as { _tag?: string; message?: string }
        assert.strictEqual(defect._tag, "ToolDefect")
        assert.strictEqual(defect.message, "internal error in tool explode")
      }
      const log = yield* events
      assert.isTrue(log.some((e) => e._tag === "tool.failed"))
    }).pipe(Effect.provide(ToolServices.layerTest())))
})

// ---------------------------------------------------------------------------

class NotInStock extends Schema.TaggedError<NotInStock>()("NotInStock", { productId: Schema.String }) {}

const GetInventory = AiTool.make("GetInventory", {
  description: "Check current stock level for a product",
  parameters: Schema.Struct({ productId: Schema.String }),
  success: Schema.Struct({ productId: Schema.String, available: Schema.Int }),
  failure: NotInStock
}).annotate(AiTool.Readonly, true)
const Shop = Toolkit.make(GetInventory)
const ShopLayer = Shop.toLayer({
  GetInventory: ({ productId }, context) =>
    productId === "p-0"
      ? Effect.fail(new NotInStock({ productId }))
      : Effect.succeed({ productId: `${productId}@${context.toolCallId}`, available: 42 })
})

describe("EffectAi.toModelOutput", () => {
  it("text parts; images, audio and binary resources (named by their URI) as file parts; a text resource as text, in order", () => {
    const parts = EffectAi.toModelOutput([
      ToolResult.text("take 1"),
      ToolResult.image("iVBO", "image/png"),
      ToolResult.audio("UklG", "audio/wav"),
      ToolResult.resource({ uri: "rec://1/notes.txt", text: "hello" }),
      ToolResult.resource({ uri: "rec://1/take.pdf", mimeType: "application/pdf", blob: "JVBE" })
    ])
    assert.deepStrictEqual(parts.map((part) => ({ ...part })), [
      { type: "text", text: "take 1" },
      { type: "file", mediaType: "image/png", data: "iVBO" },
      { type: "file", mediaType: "audio/wav", data: "UklG" },
      { type: "text", text: "[resource: rec://1/notes.txt]\nhello" },
      { type: "file", mediaType: "application/pdf", data: "JVBE", fileName: "take.pdf" }
    ] as unknown as typeof parts)
  })
})

describe("EffectAi: a Toolkit as tinyagents tools", () => {
  it.effect("handlers run under the executor: validation, call ids, declared failures as repairable, events", () =>
    Effect.gen(function*() {
      const tools = yield* EffectAi.fromToolkit(Shop)
      const registry = yield* ToolRegistry.make(tools)
      const spec = registry.specs[0]!
      assert.strictEqual(spec.name, "get_inventory")
      assert.strictEqual(spec.originalName, "GetInventory")
      assert.strictEqual(spec.safety.access, "read")
      const executor = yield* Executor.make(registry)
      const ok = yield* executor.run({ id: "c1", name: "GetInventory", arguments: "{\"productId\":\"p-1\"}" })
      assert.deepStrictEqual(ok.value, { productId: "p-1@c1", available: 42 })
      const invalid = yield* executor.run({ id: "c2", name: "get_inventory", arguments: { productId: 7 } })
      assert.isTrue(invalid.isError)
      assert.strictEqual(invalid.error?._tag, "InvalidArguments")
      const declared = yield* executor.run({ id: "c3", name: "get_inventory", arguments: { productId: "p-0" } })
      assert.isTrue(declared.isError)
      assert.strictEqual(ToolResult.textOf(declared), "GetInventory: {\"_tag\":\"NotInStock\",\"productId\":\"p-0\"}")
      const log = yield* events
      assert.deepStrictEqual(log.map((e) => e._tag), [
        "tool.started",
        "tool.completed",
        "tool.rejected",
        "tool.started",
        "tool.failed"
      ])
    }).pipe(Effect.provide([ToolServices.layerTest(), ShopLayer])))

  it.effect("round trip: an imported toolkit exported again answers LanguageModel.generateText", () =>
    Effect.gen(function*() {
      const executor = yield* Executor.make(yield* ToolRegistry.make(yield* EffectAi.fromToolkit(Shop)))
      const toolkit = yield* EffectAi.toToolkit(executor)
      const model = scripted([[toolCall("call_9", "get_inventory", { productId: "p-2" }), finish("tool-calls")]])
      const response = yield* LanguageModel.generateText({ prompt: "stock of p-2?", toolkit }).pipe(
        Effect.provide(model.layer)
      )
      assert.deepStrictEqual(response.toolResults.map((r) => r.encodedResult), [{ productId: "p-2@call_9", available: 42 }])
    }).pipe(Effect.provide([ToolServices.layerTest(), ShopLayer])))
})
