// An agent behind a chat route: the AI SDK's useChat transport posts the chat, the route answers with the run as a UI message stream.
import { DefaultChatTransport, isToolUIPart, readUIMessageStream } from "ai"
import { Effect, Layer, ManagedRuntime, Schema } from "effect"
import { Agent, ChatModel, Tool, ToolProgress, ToolRegistry, ToolServices } from "tinyagents"
import { fromUIMessages, type Message, toUIMessageStreamResponse } from "tinyagents/ai-sdk"

const index = Tool.make("index_documents", {
  description: "Indexes `n` documents, reporting progress.",
  input: Schema.Struct({ n: Schema.Int }),
  services: [ToolProgress.ToolProgress],
  handler: ({ n }) => Effect.as(Effect.forEach([...Array(n).keys()], (i) => ToolProgress.report({ count: i + 1, total: n })), `indexed ${n}`)
})
const model = ChatModel.scripted([ChatModel.callTools([["c1", "index_documents", { n: 2 }], ["c2", "index_documents", { n: "two" }]], "Indexing."), ChatModel.answer("Done.")])
const runtime = ManagedRuntime.make(Layer.merge(model, ToolServices.layerTest()))

// The route (Next.js, Hono, Bun, ...: a web `Request` in, a `Response` out).
const POST = async (request: Request): Promise<Response> => {
  const { messages } = await request.json() as { messages: Array<Message> } // the whole chat, as useChat posts it
  return runtime.runPromise(Effect.flatMap(ToolRegistry.make([index]), (tools) =>
    toUIMessageStreamResponse(Agent.stream({ messages: fromUIMessages(messages), tools }))))
}

// The browser side, as useChat runs it: its transport posts the chat (here straight to the route), its reader assembles the message.
const transport = new DefaultChatTransport<Message>({ api: "/api/chat", fetch: (url, init) => POST(new Request(new URL(String(url), "http://localhost"), init)) })
const stream = await transport.sendMessages({ trigger: "submit-message", chatId: "c", messageId: undefined, abortSignal: undefined, messages: [{ id: "u1", role: "user", parts: [{ type: "text", text: "Index my documents" }] }] })
let message: Message | undefined
for await (const snapshot of readUIMessageStream<Message>({ stream })) message = snapshot
for (const part of message!.parts) {
  if (part.type === "text") console.log(`text: ${part.text}`)
  else if (part.type === "data-tool-progress") console.log(`progress ${part.data.toolCallId}: ${part.data.count}/${part.data.total}`)
  else if (isToolUIPart(part)) console.log(`${part.type} ${part.toolCallId}: ${part.state} ${part.state === "output-error" ? part.errorText : JSON.stringify(part.output)}`)
  else console.log(part.type)
}
console.log(JSON.stringify(message!.metadata))
await runtime.dispose()
