import "../support/otelResolve.ts"
import { generateText, stepCountIs } from "ai"
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

describe("AiSdk.toolSet", () => {
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
    const pending = tools.slow!.execute!({}, { toolCallId: "call_slow", messages: [], abortSignal: controller.signal })
    await new Promise((resolve) => setTimeout(resolve, 50))
    controller.abort()
    const error = await (pending as Promise<unknown>).then(() => undefined, (e: unknown) => e)
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
    const result = await generateText({ model, tools, prompt: "chart", stopWhen: stepCountIs(3) })
    expect(result.steps[0]!.toolResults[0]!.output).toEqual({ title: "sales", points: 3 })
    const toolMessage = model.doGenerateCalls[1]!.prompt.find((m) => m.role === "tool")!
    expect((toolMessage.content[0] as { output: unknown }).output).toEqual({
      type: "content",
      value: [{ type: "text", text: "sales: 3 points" }, { type: "image-data", data: "iVBORw0KGgo=", mediaType: "image/png" }]
    })
    await runtime.dispose()
  })

  it("uses ToolCallContext ids from the SDK", async () => {
    const whoami = (await import("./support.ts")).whoami
    const { runtime, executor } = await setUp([whoami])
    const { tools } = AiSdk.toolSet({ executor, services: runtime })
    const output = await tools.whoami!.execute!({}, { toolCallId: "sdk-call-7", messages: [] })
    expect(output).toEqual({ toolCallId: "sdk-call-7" })
    await runtime.dispose()
  })
})

void [Layer, Schema, ToolCallContext, ToolError, ToolRegistry]
