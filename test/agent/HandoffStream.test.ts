/**
 * `Handoff.stream`: the conversation of `Handoff.run` as one stream of every agent's events, with the
 * same checks (a refused handoff is a repairable result the handing model reads) and the same end as
 * `Agent.stream` (the last `agent.finished`, or a failure with `AgentFailed`).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Stream } from "effect"
import { ChatModel, EventSink, Handoff, ToolServices } from "../../src/index.ts"
import type { ToolEvent } from "../../src/index.ts"
import { lastResult, refund, registryOf, transfer, user } from "./support/handoffs.ts"

const sinkEvents = EventSink.EventLog.use((log) => log.all)

const triageTo = (to: string) => ({
  tools: registryOf([transfer]),
  model: ChatModel.scripted([
    ChatModel.callTools([["t1", "transfer", { to, task: "refund order 42" }]], "Let me transfer you."),
    (request: ChatModel.Request) => ChatModel.answer(`triage read: ${lastResult(request)}`)
  ])
})
const billing = (asked: { count: number }) => ({
  tools: registryOf([refund]),
  model: ChatModel.make({
    generate: (request) =>
      Effect.sync(() => {
        asked.count++
        return asked.count > 1
          ? ChatModel.answer(`billing: ${lastResult(request)}`)
          : ChatModel.callTools([["b1", "refund", { order: 42 }]])
      })
  })
})

const tags = (events: ReadonlyArray<ToolEvent.Event>, runId: string) =>
  events.filter((e) => e.runId === runId).map((e) => e._tag)

describe("Handoff.stream", () => {
  it.effect("one stream: the handing agent's events, agent.handoff, then the receiving agent's, ending with its agent.finished", () =>
    Effect.gen(function*() {
      const asked = { count: 0 }
      const streamed = Array.from(yield* Stream.runCollect(Handoff.stream({
        agents: { triage: triageTo("billing"), billing: billing(asked) },
        start: "triage",
        messages: [user("I want my money back for order 42")],
        bufferSize: 1
      })))
      assert.deepStrictEqual(tags(streamed, "run"), [
        "agent.turn_started",
        "agent.text_delta",
        "agent.tool_call",
        "agent.model_responded",
        "tool.started",
        "tool.audit",
        "tool.completed",
        "agent.handoff",
        "agent.finished"
      ])
      assert.deepStrictEqual(tags(streamed, "run/handoff-1"), [
        "agent.turn_started",
        "agent.tool_call",
        "agent.model_responded",
        "tool.started",
        "tool.completed",
        "agent.turn_started",
        "agent.text_delta",
        "agent.model_responded",
        "agent.finished"
      ])
      // the handing agent's events all come first
      const firstReceiving = streamed.findIndex((e) => e.runId === "run/handoff-1")
      assert.isTrue(streamed.slice(firstReceiving).every((e) => e.runId === "run/handoff-1"))
      const handoff = streamed.find((e): e is ToolEvent.AgentHandoff => e._tag === "agent.handoff")!
      assert.deepStrictEqual([handoff.target, handoff.task, handoff.source, handoff.toolCallId], ["billing", "refund order 42", "triage", "t1"])
      const last = streamed.at(-1)!
      assert.strictEqual(last._tag, "agent.finished")
      assert.deepStrictEqual(
        last._tag === "agent.finished" ? [last.runId, last.reason, last.text] : [],
        ["run/handoff-1", "final_answer", "billing: order 42 refunded"]
      )
      assert.strictEqual(asked.count, 2)
      // the application's sink got the same events, in the same order
      assert.deepStrictEqual(yield* sinkEvents, streamed)
    }).pipe(Effect.provide([ToolServices.layerTest({ runId: "run" }), ChatModel.scripted([])])))

  it.effect("the same checks: a handoff to an unknown agent, or past maxHandoffs, is refused and the handing agent answers", () =>
    Effect.gen(function*() {
      const asked = { count: 0 }
      for (const [to, maxHandoffs, why] of [
        ["legal", undefined, /no agent named "legal"; the agents you may hand over to: billing/],
        ["billing", 0, /the limit of 0 handoffs is reached/]
      ] as const) {
        const streamed = Array.from(yield* Stream.runCollect(Handoff.stream({
          agents: { triage: triageTo(to), billing: billing(asked) },
          start: "triage",
          messages: [user("hi")],
          ...(maxHandoffs === undefined ? {} : { maxHandoffs })
        })))
        assert.isFalse(streamed.some((e) => e._tag === "agent.handoff" || e.runId !== "run"))
        const failed = streamed.find((e): e is ToolEvent.ToolFailed => e._tag === "tool.failed")!
        assert.strictEqual(failed.disposition, "repair")
        const last = streamed.at(-1)!
        assert.isTrue(last._tag === "agent.finished" && last.reason === "final_answer")
        assert.match(last._tag === "agent.finished" ? last.text : "", why)
      }
      assert.strictEqual(asked.count, 0)
    }).pipe(Effect.provide([ToolServices.layerTest({ runId: "run" }), ChatModel.scripted([])])))

  it.effect("the receiving agent's failure fails the stream with AgentFailed, after the handoff's events", () =>
    Effect.gen(function*() {
      const seen: Array<ToolEvent.Event> = []
      const exit = yield* Handoff.stream({
        agents: {
          triage: triageTo("billing"),
          billing: {
            tools: registryOf([refund]),
            model: ChatModel.make({
              generate: () => Effect.fail(new ChatModel.ChatModelError({ reason: "http", message: "down", retryable: false }))
            })
          }
        },
        start: "triage",
        messages: [user("hi")]
      }).pipe(Stream.runForEach((e) => Effect.sync(() => void seen.push(e))), Effect.exit)
      assert.isTrue(Exit.isFailure(exit))
      const error = Exit.isFailure(exit) ? exit.cause.reasons[0] : undefined
      assert.strictEqual(error?._tag === "Fail" ? error.error._tag : undefined, "AgentFailed")
      assert.strictEqual(error?._tag === "Fail" ? error.error.reason : undefined, "model")
      assert.deepStrictEqual(
        seen.filter((e) => e._tag === "agent.handoff" || e._tag === "agent.finished").map((e) => [e._tag, e.runId]),
        [["agent.handoff", "run"], ["agent.finished", "run"], ["agent.finished", "run/handoff-1"]]
      )
    }).pipe(Effect.provide([ToolServices.layerTest({ runId: "run" }), ChatModel.scripted([])])))

  it.live("ending the stream at the handoff stops the conversation: the receiving agent's model is never asked", () =>
    Effect.gen(function*() {
      const asked = { count: 0 }
      const taken = Array.from(yield* Handoff.stream({
        agents: { triage: triageTo("billing"), billing: billing(asked) },
        start: "triage",
        messages: [user("hi")],
        bufferSize: 1
      }).pipe(Stream.takeUntil((e) => e._tag === "agent.handoff"), Stream.runCollect))
      assert.strictEqual(taken.at(-1)?._tag, "agent.handoff")
      yield* Effect.sleep("20 millis")
      assert.strictEqual(asked.count, 0)
      // the receiving agent reported at most the turn it was starting when the consumer left
      const receiving = (yield* sinkEvents).filter((e) => e.runId === "run/handoff-1").map((e) => e._tag)
      assert.isTrue(receiving.every((tag) => tag === "agent.turn_started"), receiving.join(", "))
    }).pipe(Effect.provide([ToolServices.layerTest({ runId: "run" }), ChatModel.scripted([])])), { timeout: 10_000 })
})
