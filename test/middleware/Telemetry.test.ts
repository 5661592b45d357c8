/** telemetry: one span per call with gen_ai.tool.* attributes and timing; payloads only as hashes. */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Tracer } from "effect"
import { hash } from "../../src/internal/canonical.ts"
import { consent, telemetry } from "../../src/middleware/index.ts"
import { Approval } from "../../src/Approval.ts"
import * as ApprovalModule from "../../src/Approval.ts"
import { advance, call, executorOf, makeCounter, makeTools, services } from "./fixtures.ts"

const recording = () => {
  const spans: Array<Tracer.NativeSpan> = []
  const tracer = Tracer.make({
    span: (options) => {
      const span = new Tracer.NativeSpan(options)
      spans.push(span)
      return span
    }
  })
  return { spans, layer: Layer.succeed(Tracer.Tracer, tracer) }
}

describe("telemetry", () => {
  it.effect("one span per call named after the tool, with gen_ai attributes and timing from Clock", () => {
    const { spans, layer } = recording()
    return Effect.gen(function*() {
      const executor = yield* executorOf(makeTools(makeCounter()).all, [telemetry()])
      const fiber = yield* Effect.forkChild(executor.run(call("c1", "slow", { millis: 300 })))
      yield* advance(400)
      yield* Fiber.join(fiber)
      const toolSpans = spans.filter((s) => s.name.startsWith("execute_tool"))
      assert.strictEqual(toolSpans.length, 1)
      const span = toolSpans[0]!
      assert.strictEqual(span.name, "execute_tool slow")
      assert.strictEqual(span.status._tag, "Ended")
      const attributes = Object.fromEntries(span.attributes)
      assert.strictEqual(attributes["gen_ai.operation.name"], "execute_tool")
      assert.strictEqual(attributes["gen_ai.tool.name"], "slow")
      assert.strictEqual(attributes["gen_ai.tool.call.id"], "c1")
      assert.strictEqual(attributes["tinyagents.tool.status"], "ok")
      assert.strictEqual(attributes["tinyagents.tool.duration_ms"], 300)
      assert.strictEqual(attributes["tinyagents.tool.arguments_sha256"], hash({ millis: 300 }))
      assert.isUndefined(attributes["error.type"])
    }).pipe(Effect.provide([services, layer]))
  })

  it.effect("arguments and results are never attached: only hashes, or nothing with hashes: false", () => {
    const { spans, layer } = recording()
    return Effect.gen(function*() {
      const hashed = yield* executorOf(makeTools(makeCounter()).all, [telemetry()])
      const bare = yield* executorOf(makeTools(makeCounter()).all, [telemetry({ hashes: false })])
      yield* hashed.run(call("c1", "echo", { text: "top secret", token: "sk-1" }))
      yield* bare.run(call("c2", "echo", { text: "top secret", token: "sk-1" }))
      const [withHashes, without] = spans.filter((s) => s.name.startsWith("execute_tool"))
      const dump = JSON.stringify([...withHashes!.attributes, ...without!.attributes])
      assert.notInclude(dump, "top secret")
      assert.notInclude(dump, "sk-1")
      assert.isString(withHashes!.attributes.get("tinyagents.tool.result_sha256"))
      assert.isFalse(without!.attributes.has("tinyagents.tool.arguments_sha256"))
      assert.isFalse(without!.attributes.has("tinyagents.tool.result_sha256"))
    }).pipe(Effect.provide([services, layer]))
  })

  it.effect("a refused call and a crashed call are marked with error.type; the crash ends the span with a failure", () => {
    const { spans, layer } = recording()
    return Effect.gen(function*() {
      const executor = yield* executorOf(makeTools(makeCounter()).all, [telemetry(), consent()])
      yield* executor.run(call("c1", "delete_all"))
      yield* Effect.flip(executor.run(call("c2", "crash")))
      const [denied, crashed] = spans.filter((s) => s.name.startsWith("execute_tool"))
      assert.strictEqual(denied!.attributes.get("error.type"), "ApprovalDenied")
      assert.strictEqual(denied!.attributes.get("tinyagents.tool.status"), "consent_denied")
      assert.strictEqual(crashed!.attributes.get("error.type"), "exception")
      assert.strictEqual(crashed!.status._tag === "Ended" && crashed!.status.exit._tag, "Failure")
    }).pipe(Effect.provide([
      services,
      layer,
      Approval.layer((r) => Effect.succeed(r.toolName === "delete_all" ? ApprovalModule.deny("no") : ApprovalModule.approve()))
    ]))
  })
})
