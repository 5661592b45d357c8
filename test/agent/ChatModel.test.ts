/**
 * The chat model's contract as data: every message kind, a response and every
 * `ChatModelError` reason survive a trip through JSON (the form durable runs
 * journal), and come back as what they were (an error as an instance of its class).
 */
import { assert, describe, it } from "@effect/vitest"
import { Schema } from "effect"
import { ChatModel, ToolError, ToolResult } from "../../src/index.ts"

/** `value` through the schema's JSON codec and back, by way of JSON text. */
const roundTrip = <S extends Schema.Top>(schema: S, value: S["Type"]): S["Type"] => {
  const codec = Schema.toCodecJson(schema)
  const text = JSON.stringify(Schema.encodeSync(codec as never)(value as never))
  return Schema.decodeUnknownSync(codec as never)(JSON.parse(text)) as S["Type"]
}

const result: ToolResult.ToolResult = {
  toolCallId: "c1",
  name: "search",
  content: [ToolResult.text("two hits")],
  value: { hits: 2 },
  artifacts: [],
  isError: false,
  provider: { signature: "s1" },
  elapsed: 12
}

const failed: ToolResult.ToolResult = ToolResult.fromError(
  { id: "c2", name: "search" },
  new ToolError.ToolTransient({ message: "the index is busy" }),
  3
)

/** One of each kind, so a kind added to `Message` without a schema member fails to compile here. */
const messages: { readonly [Role in ChatModel.Message["role"]]: Extract<ChatModel.Message, { readonly role: Role }> } = {
  system: { role: "system", content: "Answer briefly." },
  user: { role: "user", content: "Find the docs." },
  assistant: {
    role: "assistant",
    content: "Searching.",
    toolCalls: [
      { id: "c1", name: "search", arguments: { query: "docs", limit: 2 }, provider: { signature: "s1" } },
      { id: "c2", name: "search", arguments: "{\"query\":\"docs\"}" }
    ]
  },
  tool: { role: "tool", results: [result, failed] }
}

const reasons = ChatModel.ChatModelError.fields.reason.literals

describe("ChatModel schemas", () => {
  for (const message of Object.values(messages)) {
    it(`a ${message.role} message round-trips through JSON`, () => {
      assert.deepStrictEqual(roundTrip(ChatModel.Message, message), message)
    })
  }

  it("a tool message's error result comes back with an instance of its error class", () => {
    const back = roundTrip(ChatModel.Message, messages.tool)
    assert.strictEqual(back.role, "tool")
    const error = back.role === "tool" ? back.results[1]?.error : undefined
    assert.instanceOf(error, ToolError.ToolTransient)
  })

  it("a response round-trips through JSON, with its finish reason and passthrough items", () => {
    const response: ChatModel.Response = {
      text: "Searching.",
      toolCalls: messages.assistant.toolCalls,
      usage: { inputTokens: 120, outputTokens: 8 },
      finishReason: "tool_calls",
      passthrough: [{ type: "web_search_call", id: "ws_1", status: "completed" }]
    }
    assert.deepStrictEqual(roundTrip(ChatModel.Response, response), response)
    assert.deepStrictEqual(roundTrip(ChatModel.Response, ChatModel.answer("done")), ChatModel.answer("done"))
  })

  it("covers every error reason", () => {
    assert.deepStrictEqual([...reasons].sort(), [
      "decode",
      "http",
      "provider",
      "rate_limited",
      "script_exhausted",
      "timeout",
      "transport"
    ])
  })

  for (const reason of reasons) {
    it(`a ${reason} error round-trips through JSON as a ChatModelError`, () => {
      const error = new ChatModel.ChatModelError({
        reason,
        message: `the model failed: ${reason}`,
        retryable: reason !== "decode",
        ...(reason === "http" || reason === "rate_limited" ? { status: reason === "http" ? 503 : 429 } : {})
      })
      const back = roundTrip(ChatModel.ChatModelError, error)
      assert.instanceOf(back, ChatModel.ChatModelError)
      assert.strictEqual(back._tag, "ChatModelError")
      assert.strictEqual(back.reason, reason)
      assert.strictEqual(back.message, error.message)
      assert.strictEqual(back.retryable, error.retryable)
      assert.strictEqual(back.status, error.status)
      assert.strictEqual("status" in back, error.status !== undefined)
    })
  }

  it("encodes an error as its fields and tag, as journals store it", () => {
    const error = new ChatModel.ChatModelError({ reason: "http", message: "HTTP 503", status: 503, retryable: true })
    assert.deepStrictEqual(Schema.encodeSync(Schema.toCodecJson(ChatModel.ChatModelError))(error), {
      _tag: "ChatModelError",
      reason: "http",
      message: "HTTP 503",
      status: 503,
      retryable: true
    })
  })
})
