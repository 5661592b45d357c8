/**
 * The journal's stored format: rows written before the chat model's contract
 * became `ChatModel`'s schemas (when the journal had its own copies and
 * converters) still decode, to the values a run uses (a model failure as a
 * `ChatModelError`), and encode back to the same JSON.
 */
import { assert, describe, it } from "@effect/vitest"
import { Schema } from "effect"
import * as SchemaBinary from "effect/encoding/SchemaBinary"
import { ChatModel, ToolError } from "../../src/index.ts"
import { Journal } from "../../src/durable/index.ts"

const assistant =
  `{"role":"assistant","content":"a","toolCalls":[{"id":"c1","name":"t","arguments":{"x":1},"provider":{"sig":"abc"}},{"id":"c2","name":"t","arguments":"{\\"x\\":1}"}]}`
const toolResult =
  `{"toolCallId":"c1","name":"t","content":[{"type":"text","text":"hi"}],"artifacts":[],"isError":true,"error":{"_tag":"ToolTransient","message":"x","disposition":"retry"},"provider":{"sig":"abc"},"elapsed":3}`
const transcript = `[{"role":"system","content":"s"},{"role":"user","content":"u"},${assistant},{"role":"tool","results":[${toolResult}]}]`

/** Rows as the journal wrote them before (`Schema.toCodecJson` of its own schemas). */
const stored = {
  payload: `{"runId":"r","messages":${transcript}}`,
  answered:
    `{"_tag":"Answered","response":{"text":"t","toolCalls":[{"id":"c1","name":"t","arguments":{"x":1},"provider":{"sig":"abc"}},{"id":"c2","name":"t","arguments":"{\\"x\\":1}"}],"usage":{"inputTokens":1,"outputTokens":2},"finishReason":"stop"}}`,
  failedHttp: `{"_tag":"Failed","error":{"_tag":"ChatModelError","reason":"http","message":"m","status":503,"retryable":true}}`,
  failedTimeout: `{"_tag":"Failed","error":{"_tag":"ChatModelError","reason":"timeout","message":"m","retryable":false}}`,
  outcome:
    `{"_tag":"Failed","reason":"model","error":{"_tag":"ChatModelError","reason":"decode","message":"m","retryable":false},"turns":1,"transcript":${transcript},"results":[${toolResult}]}`
}

const decode = <S extends Schema.Top>(schema: S, text: string): S["Type"] =>
  Schema.decodeUnknownSync(Schema.toCodecJson(schema) as never)(JSON.parse(text)) as S["Type"]

/** Decodes a stored row and checks that it encodes back to the same JSON. */
const reread = <S extends Schema.Top>(schema: S, text: string): S["Type"] => {
  const value = decode(schema, text)
  assert.deepStrictEqual(Schema.encodeSync(Schema.toCodecJson(schema) as never)(value as never), JSON.parse(text))
  return value
}

describe("Journal stored rows", () => {
  it("a payload's transcript decodes to ChatModel messages", () => {
    const payload = reread(Journal.Payload, stored.payload)
    assert.deepStrictEqual(payload.messages.map((m) => m.role), ["system", "user", "assistant", "tool"])
    const tool = payload.messages[3]
    assert.instanceOf(tool?.role === "tool" ? tool.results[0]?.error : undefined, ToolError.ToolTransient)
  })

  it("an answered turn decodes to a ChatModel response", () => {
    const turn = reread(Journal.Turn, stored.answered)
    assert.strictEqual(turn._tag, "Answered")
    if (turn._tag !== "Answered") return
    assert.deepStrictEqual(turn.response.toolCalls[0], {
      id: "c1",
      name: "t",
      arguments: { x: 1 },
      provider: { sig: "abc" }
    })
    assert.strictEqual(turn.response.finishReason, "stop")
  })

  it("a failed turn decodes to the ChatModelError it was, with or without a status", () => {
    for (const [text, reason, status] of [[stored.failedHttp, "http", 503], [stored.failedTimeout, "timeout", undefined]] as const) {
      const turn = reread(Journal.Turn, text)
      assert.strictEqual(turn._tag, "Failed")
      if (turn._tag !== "Failed") continue
      assert.instanceOf(turn.error, ChatModel.ChatModelError)
      assert.strictEqual(turn.error.reason, reason)
      assert.strictEqual(turn.error.status, status)
    }
  })

  it("a call row from before usage and nesting were journaled decodes, and one with them round-trips", () => {
    const old = `{"result":${toolResult},"events":[]}`
    const call = reread(Journal.Call, old)
    assert.strictEqual(call.usage, undefined)
    const withUsage = reread(Journal.Call, `{"result":${toolResult},"events":[],"usage":{"inputTokens":5,"outputTokens":2}}`)
    assert.deepStrictEqual(withUsage.usage, { inputTokens: 5, outputTokens: 2 })
    const nested = reread(
      Journal.Payload,
      `{"runId":"r/0/1","messages":[],"nesting":{"parentRunId":"r","parentCallId":"c1","depth":1,"within":[{"workflow":"tinyagents/p","runId":"r"}]}}`
    )
    assert.deepStrictEqual(nested.nesting?.within, [{ workflow: "tinyagents/p", runId: "r" }])
    assert.strictEqual(reread(Journal.Payload, stored.payload).nesting, undefined)
  })

  it("a run that failed on the model decodes with its ChatModelError", () => {
    const outcome = reread(Journal.Outcome, stored.outcome)
    assert.strictEqual(outcome._tag, "Failed")
    if (outcome._tag !== "Failed") return
    assert.instanceOf(outcome.error, ChatModel.ChatModelError)
    assert.strictEqual(outcome.transcript.length, 4)
  })
})

// Durable runs send these through the cluster, whose messages use Effect's binary encoding: a union
// whose members no literal field tells apart has no binary layout, and fails only at run time (an
// embedded resource's `text` / `blob` contents once did, in a multi-runner run).
describe("Journal schemas on the cluster's wire", () => {
  for (const [name, schema] of Object.entries({
    Turn: Journal.Turn,
    Call: Journal.Call,
    Decision: Journal.Decision,
    Waited: Journal.Waited,
    RunResult: Journal.RunResult,
    Outcome: Journal.Outcome,
    Payload: Journal.Payload
  })) {
    it(`${name} has a binary layout`, () => {
      const codec = SchemaBinary.toCodec(schema as never)
      assert.isDefined(codec)
    })
  }

  it("an outcome whose result holds text, image, audio and both kinds of embedded resource round-trips", () => {
    const result = {
      ...JSON.parse(toolResult),
      content: [
        { type: "text", text: "t" },
        { type: "image", data: "aGk=", mimeType: "image/png" },
        { type: "audio", data: "aGk=", mimeType: "audio/wav" },
        { type: "resource", resource: { uri: "test://a", mimeType: "text/plain", text: "x" } },
        { type: "resource", resource: { uri: "test://b", blob: "aGk=" } }
      ]
    }
    const outcome = decode(
      Journal.Outcome,
      `{"_tag":"Failed","reason":"model","error":{"_tag":"ChatModelError","reason":"decode","message":"m","retryable":false},"turns":1,"transcript":[],"results":[${JSON.stringify(result)}]}`
    )
    const codec = SchemaBinary.toCodec(Journal.Outcome as never) as unknown as Schema.Codec<unknown, Uint8Array>
    const bytes = Schema.encodeSync(codec)(outcome)
    assert.deepStrictEqual(Schema.decodeSync(codec)(bytes), outcome)
  })
})
