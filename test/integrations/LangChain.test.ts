import { AIMessage, type ToolMessage } from "@langchain/core/messages"
import { convertToOpenAITool } from "@langchain/core/utils/function_calling"
import { Effect, Layer, ManagedRuntime } from "effect"
import { describe, expect, it } from "vitest"
import * as LangChain from "../../src/integrations/LangChain.ts"
import { EventSink, Executor, type Tool, ToolServices } from "../../src/index.ts"
import { add, echoSecret, explode, recording, registryOf, slow } from "./support.ts"

const setUp = async (tools: ReadonlyArray<Tool.Any>) => {
  const runtime = ManagedRuntime.make(ToolServices.layerTest())
  const executor = await runtime.runPromise(Effect.flatMap(registryOf(tools), (r) => Executor.make(r)))
  const events = () => runtime.runPromise(EventSink.EventLog.use((log) => log.all))
  return { runtime, executor, events }
}

/** What LangGraph's `ToolNode` does with the last AI message: invoke each tool with its `ToolCall`. */
const toolNode = (tools: ReadonlyArray<LangChain.TinyagentsTool>) => async (message: AIMessage) => {
  const byName = new Map(tools.map((t) => [t.name, t]))
  return Promise.all((message.tool_calls ?? []).map((call) => byName.get(call.name)!.invoke(call) as Promise<ToolMessage>))
}

describe("LangChain.tools", () => {
  it("exposes the canonical JSON Schema to bindTools / convertToOpenAITool", async () => {
    const { runtime, executor } = await setUp([add])
    const { tools } = LangChain.tools({ executor, services: runtime })
    const spec = executor.registry.specs[0]!
    expect(convertToOpenAITool(tools[0]!)).toEqual({
      type: "function",
      function: { name: "add", description: spec.description, parameters: spec.inputSchema }
    })
    await runtime.dispose()
  })

  it("a ToolNode-style invocation: ToolMessages with the call ids, repairable errors as status error", async () => {
    const { runtime, executor, events } = await setUp([add, echoSecret])
    const { tools } = LangChain.tools({ executor, services: runtime })
    const ai = new AIMessage({
      content: "",
      tool_calls: [
        { id: "call_1", name: "add", args: { a: 2, b: 3 }, type: "tool_call" },
        { id: "call_2", name: "add", args: { a: "two", b: 3 }, type: "tool_call" },
        { id: "call_3", name: "echo_secret", args: { token: "sk-live-123" }, type: "tool_call" }
      ]
    })
    const messages = await toolNode(tools)(ai)
    expect(messages.map((m) => [m.tool_call_id, m.status, m.content])).toEqual([
      ["call_1", "success", "5"],
      ["call_2", "error", "add: invalid arguments: at \"a\": Expected number, got \"two\""],
      ["call_3", "success", "{\"token\":\"[redacted]\",\"length\":11}"]
    ])
    expect(messages[0]!.artifact).toMatchObject({ toolCallId: "call_1", value: 5, isError: false })
    const log = await events() // the calls ran concurrently: each call's events in order, calls by id
    const byCall = log.map((e) => [e._tag, (e as { toolCallId?: string }).toolCallId ?? ""] as const)
    expect([...byCall].sort((x, y) => x[1].localeCompare(y[1]))).toEqual([
      ["tool.started", "call_1"],
      ["tool.completed", "call_1"],
      ["tool.rejected", "call_2"],
      ["tool.started", "call_3"],
      ["tool.completed", "call_3"]
    ])
    await runtime.dispose()
  })

  it("audio and a binary resource become standard audio and file blocks, in order; a text resource is text", async () => {
    const { runtime, executor } = await setUp([recording])
    const { tools } = LangChain.tools({ executor, services: runtime })
    const [message] = await toolNode(tools)(new AIMessage({
      content: "",
      tool_calls: [{ id: "call_r", name: "recording", args: { line: "hello" }, type: "tool_call" }]
    }))
    expect(message!.content).toEqual([
      { type: "text", text: "recorded: hello" },
      { type: "audio", mimeType: "audio/wav", data: "UklGRg==" },
      { type: "text", text: "[resource: rec://1/transcript.txt, text/plain]\nhello" },
      {
        type: "file",
        mimeType: "application/pdf",
        data: "JVBERg==",
        metadata: { filename: "take.pdf", uri: "rec://1/take.pdf" }
      }
    ])
    expect(LangChain.toContent([{ type: "resource", resource: { uri: "file:///n.md", text: "# N" } }])).toBe("[resource: file:///n.md]\n# N")
    await runtime.dispose()
  })

  it("plain arguments return the content; errors throw ToolCallError", async () => {
    const { runtime, executor } = await setUp([add, explode])
    const { tools } = LangChain.tools({ executor, services: runtime })
    expect(await tools[0]!.invoke({ a: 1, b: 2 })).toBe("3")
    const error = await tools[0]!.invoke({ a: "x", b: 2 }).then(() => undefined, (e: unknown) => e)
    expect(LangChain.isToolCallError(error) && error.disposition).toBe("repair")
    const fatal = await tools[1]!.invoke({ id: "call_x", name: "explode", args: {}, type: "tool_call" })
      .then(() => undefined, (e: unknown) => e)
    expect(LangChain.isToolCallError(fatal) && fatal.fatal).toBe(true)
    expect((fatal as Error).message).toBe("internal error in tool explode")
    await runtime.dispose()
  })

  it("services as a Context; with repair off, a repairable error is still an error ToolMessage", async () => {
    const context = await Effect.runPromise(Effect.scoped(Layer.build(ToolServices.layerTest())))
    const executor = await Effect.runPromise(Effect.flatMap(registryOf([add]), (r) => Executor.make(r, { repair: false })))
    const { tools } = LangChain.tools({ executor, services: context })
    const ok = await tools[0]!.invoke({ id: "c1", name: "add", args: { a: 1, b: 1 }, type: "tool_call" }) as ToolMessage
    expect([ok.status, ok.content]).toEqual(["success", "2"])
    const bad = await tools[0]!.invoke({ id: "c2", name: "add", args: { a: 1 }, type: "tool_call" }) as ToolMessage
    expect([bad.status, bad.content]).toEqual(["error", "add: invalid arguments: at \"b\": Missing key"])
    expect((bad.artifact as { _tag?: string })._tag).toBe("InvalidArguments")
  })

  it("the run config's signal cancels the call", async () => {
    const { runtime, executor, events } = await setUp([slow])
    const { tools } = LangChain.tools({ executor, services: runtime })
    const controller = new AbortController()
    const pending = tools[0]!.invoke({ id: "call_slow", name: "slow", args: {}, type: "tool_call" }, {
      signal: controller.signal
    }).then(() => undefined, (e: unknown) => e)
    await new Promise((resolve) => setTimeout(resolve, 50))
    controller.abort()
    const error = await pending
    expect(error).toBeDefined()
    await new Promise((resolve) => setTimeout(resolve, 20))
    const log = await events()
    expect(log.find((e) => e._tag === "tool.failed")).toMatchObject({ reason: "cancelled", toolCallId: "call_slow" })
    await runtime.dispose()
  })
})
