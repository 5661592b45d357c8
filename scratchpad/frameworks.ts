// A tinyagents tool under the AI SDK: generateText (its mock model here) calls it through the executor.
import { generateText, stepCountIs } from "ai"
import { MockLanguageModelV3 } from "ai/test"
import { Effect, ManagedRuntime, Schema } from "effect"
import { Executor, Tool, ToolRegistry, ToolServices } from "tinyagents"
import { toolSet } from "tinyagents/ai-sdk"

const add = Tool.make("add", { description: "Adds two integers.", input: Schema.Struct({ a: Schema.Int, b: Schema.Int }), handler: ({ a, b }) => Effect.succeed(a + b) })
const runtime = ManagedRuntime.make(ToolServices.layerTest()) // the executor's hidden services, in memory
const { tools } = toolSet({ executor: await runtime.runPromise(Effect.flatMap(ToolRegistry.make([add]), Executor.make)), services: runtime })
const usage = { inputTokens: { total: 9, noCache: 9, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 3, text: 3, reasoning: 0 } }
const turn = <C,>(content: C, unified: "tool-calls" | "stop") => ({ content, finishReason: { unified, raw: undefined }, usage, warnings: [] })
const model = new MockLanguageModelV3({ doGenerate: [turn([
  { type: "tool-call" as const, toolCallId: "call_1", toolName: "add", input: `{"a":2,"b":3}` },
  { type: "tool-call" as const, toolCallId: "call_2", toolName: "add", input: `{"a":"2","b":3}` } // repairable: the model reads why
], "tool-calls"), turn([{ type: "text" as const, text: "2 + 3 = 5" }], "stop")] })
const result = await generateText({ model, tools, prompt: "What is 2 + 3?", stopWhen: stepCountIs(3) })
for (const p of result.steps[0]!.content) if (p.type === "tool-result" || p.type === "tool-error") console.log(p.toolCallId, p.type === "tool-result" ? p.output : `error: ${(p.error as Error).message}`)
console.log(result.text); await runtime.dispose()
