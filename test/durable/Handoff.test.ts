/**
 * Durable handoffs (`DurableAgent.make({ handoffs })`): the receiving agent's turns and calls are
 * activities of the same run (named under `handoff-<k>/`), so a run resumed after its runner stopped
 * goes on with the receiving agent without asking any answered turn again; the `agent.handoff` event
 * is in the run's event journal, and `result`/`poll` answer the last agent's result.
 */
import { afterAll, assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Layer, Option, Result, Schema, Scope, Stream } from "effect"
import { Approval, ChatModel, Tool, ToolRegistry, ToolResult } from "../../src/index.ts"
import type { ToolEvent } from "../../src/index.ts"
import * as Stores from "../../src/stores/Stores.ts"
import { DurableAgent, Runner } from "../../src/durable/index.ts"
import * as Core from "./support/core.ts"

afterAll(Core.cleanup)

const registryOf = <const T extends ReadonlyArray<Tool.Any>>(tools: T) => Result.getOrThrow(ToolRegistry.makeResult(tools))

const applied: Array<string> = []
const transfer = Tool.make("transfer", {
  description: "Hands the conversation to another agent.",
  input: Schema.Struct({ to: Schema.String, task: Schema.String }),
  safety: { access: "read", idempotent: true },
  handler: ({ task, to }) => Effect.sync(() => (applied.push("transfer"), { __handoff: { target: to, task } }))
})
const refund = Tool.make("refund", {
  description: "Refunds an order.",
  input: Schema.Struct({ order: Schema.Int }),
  safety: { access: "mutate" },
  handler: ({ order }) => Effect.sync(() => (applied.push(`refund ${order}`), `order ${order} refunded`))
})

const user = (content: string) => [{ role: "user" as const, content }]
const asked = { triage: 0, billing: 0 }

/** Triage: hands over to billing (its only turn when the handoff is accepted). */
const triageModel = ChatModel.fromFunction((request) => {
  asked.triage++
  const last = request.messages.at(-1)
  return Effect.succeed(
    last?.role === "tool"
      ? ChatModel.answer(`triage read: ${ToolResult.textOf(last.results[0]!)}`)
      : { ...ChatModel.callTools([["t1", "transfer", { to: "billing", task: "refund order 42" }]]), usage: { inputTokens: 10, outputTokens: 2 } }
  )
})
/** Billing: refunds, then answers (a function of the transcript: a resumed run replays it). */
const billing = {
  system: "You do billing.",
  tools: registryOf([refund]),
  model: ChatModel.make({
    generate: (request) =>
      Effect.sync(() => {
        asked.billing++
        const last = request.messages.at(-1)
        return last?.role === "tool" && last.results[0]?.name === "refund"
          ? { ...ChatModel.answer(`billing: ${ToolResult.textOf(last.results[0])}`), usage: { inputTokens: 30, outputTokens: 6 } }
          : { ...ChatModel.callTools([["b1", "refund", { order: 42 }]]), usage: { inputTokens: 20, outputTokens: 4 } }
      })
  })
}

const reset = () => {
  applied.length = 0
  asked.triage = 0
  asked.billing = 0
}

describe("DurableAgent with handoffs", () => {
  it.live("the run hands over: the receiving agent's turns and calls are journaled under handoff-1/, a second start asks nothing again", () => {
    reset()
    const agent = DurableAgent.make({
      name: "triage",
      tools: registryOf([transfer]),
      handoffs: { agents: { billing } },
      pollInterval: "10 millis"
    })
    return Effect.gen(function*() {
      yield* agent.start("h1", user("I want my money back for order 42"))
      const result = yield* agent.result("h1")
      assert.strictEqual(result.reason, "final_answer")
      assert.strictEqual(result.text, "billing: order 42 refunded")
      assert.strictEqual(result.agent, "billing")
      assert.deepStrictEqual(result.transfers, [{ from: "triage", to: "billing", task: "refund order 42", toolCallId: "t1" }])
      // the last agent's transcript: its system prompt, then the whole conversation
      assert.deepStrictEqual(result.transcript[0], { role: "system", content: "You do billing." })
      assert.deepStrictEqual(result.usage, { inputTokens: 60, outputTokens: 12 })
      assert.deepStrictEqual(applied, ["transfer", "refund 42"])
      assert.deepStrictEqual(asked, { triage: 1, billing: 2 })

      const events = Array.from(yield* Stream.runCollect(agent.events("h1")))
      const handoff = events.find((e): e is ToolEvent.AgentHandoff => e._tag === "agent.handoff")!
      assert.deepStrictEqual([handoff.runId, handoff.target, handoff.task, handoff.source], ["h1", "billing", "refund order 42", "triage"])
      // the stream goes on past the handing agent's end, to the receiving agent's
      assert.deepStrictEqual(
        events.filter((e) => e._tag === "agent.finished").map((e) => [e.runId, e._tag === "agent.finished" ? e.reason : ""]),
        [["h1", "handoff"], ["h1/handoff-1", "final_answer"]]
      )
      assert.deepStrictEqual(events.map((e) => e.sequence), events.map((_, i) => i))

      // the same run id again: nothing runs or is asked again
      yield* agent.start("h1", user("I want my money back for order 42"))
      assert.strictEqual((yield* agent.result("h1")).text, "billing: order 42 refunded")
      assert.deepStrictEqual(asked, { triage: 1, billing: 2 })
      assert.deepStrictEqual(applied, ["transfer", "refund 42"])
    }).pipe(
      Effect.provide(agent.layer.pipe(Layer.provide([triageModel, Stores.layerMemory]), Layer.provideMerge(Core.memoryEngine())))
    )
  })

  it.live("a run stopped after the handoff resumes with the receiving agent: no answered turn is asked again, no call run again", () =>
    Effect.gen(function*() {
      reset()
      const agent = DurableAgent.make({
        name: "triage",
        tools: registryOf([transfer]),
        handoffs: { agents: { billing } },
        // billing's refund waits for a person: the first runner stops while it waits
        approval: (call) => call.name === "refund",
        pollInterval: "20 millis"
      })
      const filename = Core.tempFile("handoff")
      const runner = agent.layer.pipe(
        Layer.provide([triageModel, Stores.layerMemory]),
        Layer.provideMerge(Runner.layerSqlite({ filename, pollInterval: "50 millis", lockExpiration: "2 seconds", shutdownTimeout: "50 millis" }))
      )
      const client = Runner.layerSqliteClient({ filename, pollInterval: "50 millis" })
      const scope = yield* Scope.make()
      const first = yield* Layer.buildWithScope(runner, scope)
      yield* Effect.provide(
        Effect.andThen(
          agent.start("h2", user("I want my money back for order 42")),
          Stream.runDrain(Stream.takeUntil(agent.events("h2"), (e) => e._tag === "agent.approval_requested"))
        ),
        first
      )
      yield* Scope.close(scope, Exit.void)
      assert.deepStrictEqual(asked, { triage: 1, billing: 1 })
      assert.deepStrictEqual(applied, ["transfer"])

      // another process decides the receiving agent's pending call
      const pending = yield* Effect.provide(agent.pending("h2"), client)
      assert.deepStrictEqual(pending.map((p) => [p.callId, p.toolName, p.turn, p.index]), [["b1", "refund", 0, 0]])
      yield* Effect.provide(agent.approve("h2", "b1", Approval.approve("alice")), client)

      // a second runner resumes: triage's turn and call, and billing's first turn, answer from the journal
      const { result, events } = yield* Effect.provide(
        Effect.gen(function*() {
          const result = yield* agent.result("h2")
          return { result, events: Array.from(yield* Stream.runCollect(agent.events("h2"))) }
        }),
        runner
      )
      assert.strictEqual(result.text, "billing: order 42 refunded")
      assert.deepStrictEqual(asked, { triage: 1, billing: 2 })
      assert.deepStrictEqual(applied, ["transfer", "refund 42"])
      assert.deepStrictEqual(result.usage, { inputTokens: 60, outputTokens: 12 })
      assert.deepStrictEqual(
        events.filter((e) => e._tag === "agent.handoff" || e._tag === "agent.finished" || e._tag === "agent.approval_requested")
          .map((e) => [e._tag, e.runId]),
        [
          ["agent.handoff", "h2"],
          ["agent.finished", "h2"],
          ["agent.approval_requested", "h2/handoff-1"],
          ["agent.finished", "h2/handoff-1"]
        ]
      )
      // read back by another process
      const polled = yield* Effect.provide(agent.poll("h2"), client)
      const exit = Option.getOrThrow(polled)
      assert.deepStrictEqual(
        Exit.isSuccess(exit) ? [exit.value.text, exit.value.agent, exit.value.transfers?.map((t) => `${t.from} -> ${t.to}`)] : [],
        ["billing: order 42 refunded", "billing", ["triage -> billing"]]
      )
    }), 30_000)

  it.live("after a handoff, approve answers the receiving agent's request, not an earlier one with the same call id and turn", () =>
    Effect.gen(function*() {
      reset()
      // ids as a provider that numbers calls per response gives them: both agents call "c0" in their turn 0
      const sent = (request: ChatModel.Request) => request.messages.filter((m) => m.role === "tool").length
      const triage = ChatModel.fromFunction((request) =>
        Effect.succeed(
          sent(request) === 0
            ? ChatModel.callTools([["c0", "refund", { order: 1 }]])
            : ChatModel.callTools([["c0", "transfer", { to: "billing", task: "refund order 2" }]])
        )
      )
      const billingAgent = {
        tools: registryOf([refund]),
        model: ChatModel.fromFunction((request) => {
          const last = request.messages.at(-1)
          return Effect.succeed(
            last?.role === "tool" && last.results[0]?.name === "refund"
              ? ChatModel.answer(`billing: ${ToolResult.textOf(last.results[0])}`)
              : ChatModel.callTools([["c0", "refund", { order: 2 }]])
          )
        })
      }
      const agent = DurableAgent.make({
        name: "triage",
        tools: registryOf([transfer, refund]),
        handoffs: { agents: { billing: billingAgent } },
        approval: (call) => call.name === "refund",
        pollInterval: "10 millis"
      })
      yield* Effect.gen(function*() {
        const requested = Stream.filter(agent.events("h6"), (e) => e._tag === "agent.approval_requested")
        yield* agent.start("h6", user("refund"))
        yield* Stream.runDrain(Stream.take(requested, 1))
        yield* agent.approve("h6", "c0", Approval.approve("alice"))
        yield* Stream.runDrain(Stream.take(requested, 2))
        const pending = yield* agent.pending("h6")
        assert.deepStrictEqual(pending.map((p) => [p.callId, p.arguments]), [["c0", { order: 2 }]])
        yield* agent.approve("h6", "c0", Approval.approve("alice"))
        // before the fix the decision went to triage's decided request again and billing's waited forever
        const result = yield* Effect.timeout(agent.result("h6"), "10 seconds")
        assert.strictEqual(result.text, "billing: order 2 refunded")
        assert.deepStrictEqual(applied, ["refund 1", "transfer", "refund 2"])
      }).pipe(
        Effect.provide(agent.layer.pipe(Layer.provide([triage, Stores.layerMemory]), Layer.provideMerge(Core.memoryEngine())))
      )
    }), 30_000)

  it.live("a handoff to an agent the durable agent does not list is refused; the model reads why", () => {
    reset()
    const agent = DurableAgent.make({
      name: "triage",
      tools: registryOf([transfer]),
      handoffs: { agents: { accounts: billing } },
      pollInterval: "10 millis"
    })
    return Effect.gen(function*() {
      yield* agent.start("h3", user("refund"))
      const result = yield* agent.result("h3")
      assert.strictEqual(
        result.text,
        "triage read: transfer: handoff refused: no agent named \"billing\"; the agents you may hand over to: accounts; nothing was handed over"
      )
      assert.strictEqual(asked.billing, 0)
      const events = Array.from(yield* Stream.runCollect(agent.events("h3")))
      assert.isFalse(events.some((e) => e._tag === "agent.handoff"))
    }).pipe(
      Effect.provide(agent.layer.pipe(Layer.provide([triageModel, Stores.layerMemory]), Layer.provideMerge(Core.memoryEngine())))
    )
  })

  it.live("a receiving agent may hand back to the durable agent by its name (a second handoff, under handoff-2/); maxHandoffs bounds them", () =>
    Effect.gen(function*() {
      reset()
      // triage: hands over to billing first; once billing hands back, answers with the task it got
      const triage = ChatModel.fromFunction((request) => {
        asked.triage++
        const transfers = request.messages.filter((m) => m.role === "tool" && m.results[0]?.name === "transfer").length
        const last = request.messages.at(-1)
        return Effect.succeed(
          transfers === 0
            ? ChatModel.callTools([[`t${transfers}`, "transfer", { to: "billing", task: "refund order 42" }]])
            : ChatModel.answer(`triage again: ${last?.role === "tool" ? ToolResult.textOf(last.results[0]!) : "?"}`)
        )
      })
      // billing: hands back to triage (it cannot refund), then answers with what it read
      const handsBack = {
        tools: registryOf([transfer]),
        model: ChatModel.make({
          generate: (request) =>
            Effect.sync(() => {
              asked.billing++
              const last = request.messages.at(-1)
              return last?.role === "tool" && last.results[0]?.toolCallId === "b1"
                ? ChatModel.answer(`billing read: ${ToolResult.textOf(last.results[0])}`)
                : ChatModel.callTools([["b1", "transfer", { to: "triage", task: "not a billing matter" }]])
            })
        })
      }
      const run = (maxHandoffs: number | undefined, runId: string) => {
        const agent = DurableAgent.make({
          name: "triage",
          tools: registryOf([transfer]),
          handoffs: { agents: { billing: handsBack }, ...(maxHandoffs === undefined ? {} : { maxHandoffs }) },
          pollInterval: "10 millis"
        })
        return Effect.gen(function*() {
          yield* agent.start(runId, user("refund"))
          const result = yield* agent.result(runId)
          const events = Array.from(yield* Stream.runCollect(agent.events(runId)))
          return { result, events }
        }).pipe(Effect.provide(agent.layer.pipe(Layer.provide([triage, Stores.layerMemory]), Layer.provideMerge(Core.memoryEngine()))))
      }
      const back = yield* run(undefined, "h4")
      assert.strictEqual(back.result.text, "triage again: {\"__handoff\":{\"target\":\"triage\",\"task\":\"not a billing matter\"}}")
      assert.deepStrictEqual(
        back.events.filter((e) => e._tag === "agent.handoff").map((e) => e._tag === "agent.handoff" ? [e.runId, e.target] : []),
        [["h4", "billing"], ["h4/handoff-1", "triage"]]
      )
      assert.deepStrictEqual(back.events.at(-1)?._tag === "agent.finished" ? back.events.at(-1)?.runId : undefined, "h4/handoff-2")
      assert.deepStrictEqual(asked, { triage: 2, billing: 1 })
      assert.deepStrictEqual([back.result.agent, back.result.transfers?.map((t) => t.to)], ["triage", ["billing", "triage"]])

      // one handoff allowed: billing's hand-back is refused, and billing answers
      reset()
      const bounded = yield* run(1, "h5")
      assert.strictEqual(
        bounded.result.text,
        "billing read: transfer: handoff refused: the limit of 1 handoffs is reached; answer yourself; nothing was handed over"
      )
      assert.deepStrictEqual(asked, { triage: 1, billing: 2 })
    }), 30_000)
})
