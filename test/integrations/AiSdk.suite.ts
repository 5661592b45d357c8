/**
 * The AI SDK adapter's suite, run once per supported major of `ai`: `AiSdk.test.ts`
 * runs it on the installed `ai` (7), `AiSdk.v6.test.ts` on `ai-v6` (`npm:ai@^6`) by
 * mocking the module `ai` (and `ai/test`) as that package, for this suite and the
 * adapter alike. `tsconfig.ai-v6.json` type-checks the adapter and this suite against
 * 6's declarations (`npm run typecheck` runs both).
 */
import "../support/otelResolve.ts"
import { generateText, stepCountIs, type ToolSet } from "ai"
import * as Ai from "ai"
import { MockLanguageModelV3 } from "ai/test"
import { Effect, Layer, ManagedRuntime, Schema } from "effect"
import { describe, expect, it } from "vitest"
import * as AiSdk from "../../src/integrations/AiSdk.ts"
import { EventSink, Executor, ToolCallContext, ToolError, ToolEvent, ToolRegistry, ToolServices } from "../../src/index.ts"
import { add, echoSecret, explode, registryOf, slow } from "./support.ts"

type GenerateResult = Awaited<ReturnType<MockLanguageModelV3["doGenerate"]>>
const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined }
}
const callTurn = (calls: ReadonlyArray<readonly [string, string, unknown]>): GenerateResult => ({
  content: calls.map(([toolCallId, toolName, input]) => ({
    type: "tool-call" as const,
    toolCallId,
    toolName,
    input: typeof input === "string" ? input : JSON.stringify(input)
  })),
  finishReason: { unified: "tool-calls", raw: "tool_calls" },
  usage,
  warnings: []
})
const answer = (text: string): GenerateResult => ({
  content: [{ type: "text", text }],
  finishReason: { unified: "stop", raw: "stop" },
  usage,
  warnings: []
})

const setUp = async (tools: Parameters<typeof registryOf>[0], executorOptions: Executor.Options = {}) => {
  const runtime = ManagedRuntime.make(ToolServices.layerTest())
  const executor = await runtime.runPromise(Effect.flatMap(registryOf(tools), (r) => Executor.make(r, executorOptions)))
  const events = () => runtime.runPromise(EventSink.EventLog.use((log) => log.all))
  return { runtime, executor, events }
}

/**
 * Calls a tool's `execute` with the options the SDK passes (7 adds `context`): `ToolSet`
 * types the input of `execute` as `never` in 7, so a direct call goes through `unknown`.
 */
const execute = (
  tool: ToolSet[string] | undefined,
  input: unknown,
  options: { readonly toolCallId: string; readonly abortSignal?: AbortSignal }
): Promise<unknown> =>
  Promise.resolve((tool!.execute as unknown as (input: unknown, options: object) => unknown)(input, {
    messages: [],
    context: undefined,
    ...options
  }))

/** What differs between the majors. */
interface Major {
  readonly major: 6 | 7
  /** The image part of a tool result as the (V3) mock model reads it. */
  readonly image: unknown
}

export const majors: Record<6 | 7, Major> = {
  6: { major: 6, image: { type: "image-data", data: "iVBORw0KGgo=", mediaType: "image/png" } },
  // the adapter writes 7's `file` part; the SDK hands a V3 model its `file-data` form
  7: { major: 7, image: { type: "file-data", data: "iVBORw0KGgo=", mediaType: "image/png" } }
}

/** The `recording` tool's result (text, audio, a text resource, a PDF) as the (V3) mock model reads it, in 6 and 7. */
const recordingParts = [
  { type: "text", text: "recorded: hello" },
  { type: "file-data", data: "UklGRg==", mediaType: "audio/wav" },
  { type: "text", text: "[resource: rec://1/transcript.txt, text/plain]\nhello" },
  { type: "file-data", data: "JVBERg==", mediaType: "application/pdf", filename: "take.pdf" }
]

export const suite = ({ major, image }: Major) => describe(`AiSdk.toolSet (ai ${major})`, () => {
  it(`runs against ai ${major}`, () => {
    // `isStepCount` (7's name for `stepCountIs`) and `file` tool-result parts arrived with 7
    expect("isStepCount" in Ai).toBe(major === 7)
    expect(AiSdk.imageParts()).toBe(major === 7 ? "file" : "image-data")
  })

  it("exports each tool with its canonical JSON Schema", async () => {
    const { runtime, executor } = await setUp([add])
    const { tools } = AiSdk.toolSet({ executor, services: runtime })
    const spec = executor.registry.specs[0]!
    expect(Object.keys(tools)).toEqual(["add"])
    expect(tools.add!.description).toBe(spec.description)
    expect((tools.add!.inputSchema as { jsonSchema: unknown }).jsonSchema).toEqual(spec.inputSchema)
    await runtime.dispose()
  })

  it("a multi-step generateText: calls run through the executor, an invalid call is repaired, the model answers", async () => {
    const { runtime, executor, events } = await setUp([add])
    const { tools } = AiSdk.toolSet({ executor, services: runtime })
    const model = new MockLanguageModelV3({
      doGenerate: [
        callTurn([["call_1", "add", { a: 2, b: 3 }], ["call_2", "add", { a: "two", b: 3 }]]),
        callTurn([["call_3", "add", { a: 2, b: 3 }]]),
        answer("2 + 3 = 5")
      ]
    })
    const result = await generateText({ model, tools, prompt: "2 + 3?", stopWhen: stepCountIs(5) })

    expect(result.text).toBe("2 + 3 = 5")
    expect(result.steps).toHaveLength(3)
    const first = result.steps[0]!
    expect(first.toolResults.map((r) => [r.toolCallId, r.output])).toEqual([["call_1", 5]])
    const errors = first.content.filter((p) => p.type === "tool-error")
    expect(errors).toHaveLength(1)
    const error = (errors[0] as { error: unknown }).error
    expect(AiSdk.isToolCallError(error) && error.disposition).toBe("repair")

    // what the model read on the second step: the result, and the repairable error as error-text
    const secondPrompt = model.doGenerateCalls[1]!.prompt
    const toolMessage = secondPrompt.find((m) => m.role === "tool")!
    expect(toolMessage.content).toEqual([
      expect.objectContaining({ toolCallId: "call_1", output: { type: "json", value: 5 } }),
      expect.objectContaining({
        toolCallId: "call_2",
        output: { type: "error-text", value: "add: invalid arguments: at \"a\": Expected number, got \"two\"" }
      })
    ])
    // the SDK's call ids are the executor's, and every call is in the event log
    const log = await events()
    expect(log.map((e) => [e._tag, (e as { toolCallId?: string }).toolCallId])).toEqual([
      ["tool.started", "call_1"],
      ["tool.completed", "call_1"],
      ["tool.rejected", "call_2"],
      ["tool.started", "call_3"],
      ["tool.completed", "call_3"]
    ])
    await runtime.dispose()
  })

  it("the SDK's abortSignal cancels the call: the handler's signal aborts and tool.failed says cancelled", async () => {
    const { runtime, executor, events } = await setUp([slow])
    const { tools } = AiSdk.toolSet({ executor, services: runtime })
    const controller = new AbortController()
    const pending = execute(tools.slow, {}, { toolCallId: "call_slow", abortSignal: controller.signal })
    await new Promise((resolve) => setTimeout(resolve, 50))
    controller.abort()
    const error = await pending.then(() => undefined, (e: unknown) => e)
    expect(AiSdk.isToolCallError(error) && error.fatal).toBe(true)
    const log = await events()
    const failed = log.find((e): e is ToolEvent.ToolFailed => e._tag === "tool.failed")
    expect(failed?.reason).toBe("cancelled")
    expect(slow.aborted()).toBe(true)
    await runtime.dispose()
  })

  it("a fatal error throws a ToolCallError without its cause; stopOnFatal ends the loop", async () => {
    const { runtime, executor } = await setUp([explode, add])
    const { tools } = AiSdk.toolSet({ executor, services: runtime })
    const model = new MockLanguageModelV3({
      doGenerate: [callTurn([["call_x", "explode", {}]]), answer("never reached")]
    })
    const result = await generateText({
      model,
      tools,
      prompt: "go",
      stopWhen: [AiSdk.stopOnFatal(), stepCountIs(5)]
    })
    expect(result.steps).toHaveLength(1)
    const [fatal] = AiSdk.fatalErrors(result.steps)
    expect(fatal?.message).toBe("internal error in tool explode")
    expect(fatal?.error?._tag).toBe("ToolDefect")
    expect(String(fatal?.message)).not.toContain("kaboom")
    await runtime.dispose()
  })

  it("services from a Layer, redaction applied to what the model reads", async () => {
    const layer = ToolServices.layerTest()
    const executor = Effect.runSync(Effect.flatMap(registryOf([echoSecret]), (r) => Executor.make(r)))
    const set = AiSdk.toolSet({ executor, services: layer })
    const model = new MockLanguageModelV3({
      doGenerate: [callTurn([["call_s", "echo_secret", { token: "sk-live-123" }]]), answer("done")]
    })
    const result = await generateText({ model, tools: set.tools, prompt: "echo", stopWhen: stepCountIs(3) })
    expect(result.text).toBe("done")
    const toolMessage = model.doGenerateCalls[1]!.prompt.find((m) => m.role === "tool")!
    expect(JSON.stringify(toolMessage)).not.toContain("sk-live-123")
    await set.dispose()
  })

  it("the model reads the executor's rendering (a tool's toModelOutput: text and an image); the app gets the value", async () => {
    const { chart } = await import("./support.ts")
    const { runtime, executor } = await setUp([chart])
    const { tools } = AiSdk.toolSet({ executor, services: runtime })
    const model = new MockLanguageModelV3({
      doGenerate: [callTurn([["call_c", "chart", { title: "sales" }]]), answer("drawn")]
    })
    // the SDK's warnings (7 still reads 6's `image-data` part, with a deprecation warning) go to a logger of ours
    const warnings: Array<unknown> = []
    const logger = globalThis as { AI_SDK_LOG_WARNINGS?: unknown }
    logger.AI_SDK_LOG_WARNINGS = (logged: { readonly warnings: ReadonlyArray<unknown> }) => warnings.push(...logged.warnings)
    const result = await generateText({ model, tools, prompt: "chart", stopWhen: stepCountIs(3) }).finally(() => {
      delete logger.AI_SDK_LOG_WARNINGS
    })
    expect(warnings).toEqual([])
    expect(result.steps[0]!.toolResults[0]!.output).toEqual({ title: "sales", points: 3 })
    const toolMessage = model.doGenerateCalls[1]!.prompt.find((m) => m.role === "tool")!
    expect((toolMessage.content[0] as { output: unknown }).output).toEqual({
      type: "content",
      value: [{ type: "text", text: "sales: 3 points" }, image]
    })
    await runtime.dispose()
  })

  it("audio and embedded resources reach the model as media parts in order, a text resource as text", async () => {
    const { recording } = await import("./support.ts")
    const { runtime, executor } = await setUp([recording])
    const { tools } = AiSdk.toolSet({ executor, services: runtime })
    const model = new MockLanguageModelV3({
      doGenerate: [callTurn([["call_r", "recording", { line: "hello" }]]), answer("heard")]
    })
    await generateText({ model, tools, prompt: "record", stopWhen: stepCountIs(3) })
    const toolMessage = model.doGenerateCalls[1]!.prompt.find((m) => m.role === "tool")!
    expect((toolMessage.content[0] as { output: unknown }).output).toEqual({ type: "content", value: recordingParts })
    await runtime.dispose()
  })

  it("uses ToolCallContext ids from the SDK", async () => {
    const whoami = (await import("./support.ts")).whoami
    const { runtime, executor } = await setUp([whoami])
    const { tools } = AiSdk.toolSet({ executor, services: runtime })
    const output = await execute(tools.whoami, {}, { toolCallId: "sdk-call-7" })
    expect(output).toEqual({ toolCallId: "sdk-call-7" })
    await runtime.dispose()
  })

  it("toModelOutput writes the image parts asked for, by default those the installed ai takes", () => {
    const content = [{ type: "image" as const, data: "AA==", mimeType: "image/png" }]
    expect(AiSdk.toModelOutput(content, "file")).toEqual({
      type: "content",
      value: [{ type: "file", mediaType: "image/png", data: { type: "data", data: "AA==" } }]
    })
    expect(AiSdk.toModelOutput(content, "image-data")).toEqual({
      type: "content",
      value: [{ type: "image-data", data: "AA==", mediaType: "image/png" }]
    })
    expect(AiSdk.toModelOutput(content)).toEqual(AiSdk.toModelOutput(content, AiSdk.imageParts()))
  })

  it("toModelOutput writes audio and binary resources as file parts (6: file-data), a text resource as text", () => {
    const content = [
      { type: "audio" as const, data: "UklG", mimeType: "audio/wav" },
      { type: "resource" as const, resource: { uri: "file:///r/notes.md", text: "# Notes" } },
      { type: "resource" as const, resource: { uri: "file:///r/a.pdf", mimeType: "application/pdf", blob: "JVBE" } }
    ]
    expect(AiSdk.toModelOutput(content, "file")).toEqual({
      type: "content",
      value: [
        { type: "file", mediaType: "audio/wav", data: { type: "data", data: "UklG" } },
        { type: "text", text: "[resource: file:///r/notes.md]\n# Notes" },
        { type: "file", mediaType: "application/pdf", data: { type: "data", data: "JVBE" }, filename: "a.pdf" }
      ]
    })
    expect(AiSdk.toModelOutput(content, "image-data")).toEqual({
      type: "content",
      value: [
        { type: "file-data", data: "UklG", mediaType: "audio/wav" },
        { type: "text", text: "[resource: file:///r/notes.md]\n# Notes" },
        { type: "file-data", data: "JVBE", mediaType: "application/pdf", filename: "a.pdf" }
      ]
    })
    expect(AiSdk.toModelOutput([{ type: "resource", resource: { uri: "file:///r/notes.md", text: "# Notes" } }])).toEqual({
      type: "text",
      value: "[resource: file:///r/notes.md]\n# Notes"
    })
  })
})

void [Layer, Schema, ToolCallContext, ToolError, ToolRegistry]
