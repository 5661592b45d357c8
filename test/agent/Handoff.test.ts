import { assert, describe, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { ChatModel, EventSink, Handoff, Tool, ToolResult, ToolServices } from "../../src/index.ts"
import type { ToolEvent } from "../../src/index.ts"
import { lastResult, refund, registryOf, transfer, user } from "./support/handoffs.ts"

const usage = (inputTokens: number, outputTokens: number) => ({ inputTokens, outputTokens })
const events = EventSink.EventLog.use((log) => log.all)

/** Triage hands over to `to`, then (when refused) answers with what it read. */
const triageTo = (to: string) => ({
  system: "You triage.",
  tools: registryOf([transfer]),
  model: ChatModel.scripted([
    { ...ChatModel.callTools([["t1", "transfer", { to, task: "refund order 42" }]]), usage: usage(10, 2) },
    (request: ChatModel.Request) => ChatModel.answer(`triage read: ${lastResult(request)}`)
  ])
})

/** Billing, recording what it is asked. */
const billing = (seen: Array<ChatModel.Request>) => ({
  system: "You do billing.",
  tools: registryOf([refund]),
  model: ChatModel.make({
    generate: (request) =>
      Effect.sync(() => {
        seen.push({ ...request, messages: [...request.messages] })
        return seen.length === 1
          ? { ...ChatModel.callTools([["b1", "refund", { order: 42 }]]), usage: usage(20, 4) }
          : { ...ChatModel.answer(`billing: ${lastResult(request)}`), usage: usage(30, 6) }
      })
  })
})

describe("Handoff.run", () => {
  it.effect("a handoff to a registered agent: it goes on with its own tools and instructions and the whole history", () =>
    Effect.gen(function*() {
      const seen: Array<ChatModel.Request> = []
      const result = yield* Handoff.run({
        agents: { triage: triageTo("billing"), billing: billing(seen) },
        start: "triage",
        messages: [user("I want my money back for order 42")]
      })
      assert.strictEqual(result.agent, "billing")
      assert.strictEqual(result.reason, "final_answer")
      assert.strictEqual(result.text, "billing: order 42 refunded")
      assert.deepStrictEqual(result.transfers, [{ from: "triage", to: "billing", task: "refund order 42", toolCallId: "t1" }])
      assert.deepStrictEqual(result.usage, usage(60, 12))
      // billing's instructions, then the whole conversation (the handing call and its result included)
      const first = seen[0]!
      assert.deepStrictEqual(first.messages.map((m) => m.role), ["system", "user", "assistant", "tool"])
      assert.deepStrictEqual(first.messages[0], { role: "system", content: "You do billing." })
      assert.deepStrictEqual(first.tools.map((t) => t.name), ["refund"])

      const log = yield* events
      const handoff = log.find((e) => e._tag === "agent.handoff") as ToolEvent.AgentHandoff
      assert.deepStrictEqual(
        [handoff.runId, handoff.toolCallId, handoff.toolName, handoff.target, handoff.task, handoff.source],
        ["run", "t1", "transfer", "billing", "refund order 42", "triage"]
      )
      const finished = log.filter((e): e is ToolEvent.AgentFinished => e._tag === "agent.finished")
      assert.deepStrictEqual(finished.map((e) => [e.runId, e.reason]), [["run", "handoff"], ["run/handoff-1", "final_answer"]])
      // each agent's run keeps its own gap-free sequence
      for (const runId of ["run", "run/handoff-1"]) {
        const own = log.filter((e) => e.runId === runId)
        assert.deepStrictEqual(own.map((e) => e.sequence), own.map((_, i) => i))
      }
    }).pipe(Effect.provide([ToolServices.layerTest({ runId: "run" }), ChatModel.scripted([])])))

  it.effect("a handoff to an unknown agent is refused (repairable, naming the registered ones); nothing is handed over", () =>
    Effect.gen(function*() {
      const seen: Array<ChatModel.Request> = []
      const result = yield* Handoff.run({
        agents: { triage: triageTo("legal"), billing: billing(seen) },
        start: "triage",
        messages: [user("sue them")]
      })
      assert.strictEqual(result.agent, "triage")
      assert.deepStrictEqual(result.transfers, [])
      assert.strictEqual(seen.length, 0)
      const refused = result.results[0]!
      assert.strictEqual(refused.error?._tag, "ToolFailure")
      assert.strictEqual(refused.error?.disposition, "repair")
      assert.strictEqual(
        result.text,
        "triage read: transfer: handoff refused: no agent named \"legal\"; the agents you may hand over to: billing; nothing was handed over"
      )
      assert.isFalse((yield* events).some((e) => e._tag === "agent.handoff"))
    }).pipe(Effect.provide([ToolServices.layerTest({ runId: "run" }), ChatModel.scripted([])])))

  it.effect("a handoff to the running agent itself, and one past maxHandoffs, are refused", () =>
    Effect.gen(function*() {
      const self = yield* Handoff.run({
        agents: { triage: triageTo("triage"), billing: billing([]) },
        start: "triage",
        messages: [user("hi")]
      })
      assert.match(self.text, /handoff refused: triage is the agent running now/)
      const limited = yield* Handoff.run({
        agents: { triage: triageTo("billing"), billing: billing([]) },
        start: "triage",
        messages: [user("hi")],
        maxHandoffs: 0
      })
      assert.strictEqual(limited.agent, "triage")
      assert.match(limited.text, /handoff refused: the limit of 0 handoffs is reached; answer yourself/)
    }).pipe(Effect.provide([ToolServices.layerTest({ runId: "run" }), ChatModel.scripted([])])))

  it.effect("an input filter decides what the receiving agent sees", () =>
    Effect.gen(function*() {
      const onlyTask: Array<ChatModel.Request> = []
      yield* Handoff.run({
        agents: { triage: triageTo("billing"), billing: billing(onlyTask) },
        start: "triage",
        messages: [user("I want my money back for order 42")],
        inputFilter: Handoff.taskOnly
      })
      assert.deepStrictEqual(onlyTask[0]!.messages, [{ role: "system", content: "You do billing." }, user("refund order 42")])

      const noTools: Array<ChatModel.Request> = []
      yield* Handoff.run({
        agents: { triage: triageTo("billing"), billing: billing(noTools) },
        start: "triage",
        messages: [user("I want my money back for order 42")],
        inputFilter: Handoff.withoutTools
      })
      assert.deepStrictEqual(noTools[0]!.messages, [
        { role: "system", content: "You do billing." },
        user("I want my money back for order 42")
      ])

      const custom: Array<ChatModel.Request> = []
      yield* Handoff.run({
        agents: { triage: triageTo("billing"), billing: billing(custom) },
        start: "triage",
        messages: [user("I want my money back for order 42")],
        inputFilter: ({ from, handoff, to }) => [user(`${from} -> ${to}: ${handoff.task}`)]
      })
      assert.deepStrictEqual(custom[0]!.messages.at(-1), user("triage -> billing: refund order 42"))
    }).pipe(Effect.provide([ToolServices.layerTest({ runId: "run" }), ChatModel.scripted([])])))

  it.effect("a `handoff` field that is not a handoff payload is a plain result: neither refused nor handed over", () =>
    Effect.gen(function*() {
      // a ticketing tool whose output legitimately has a field named `handoff`
      const ticket = Tool.make("ticket", {
        description: "Opens a ticket.",
        input: Schema.Struct({ title: Schema.String }),
        handler: ({ title }) => Effect.succeed({ id: 7, title, handoff: { status: "queued", team: "support" } })
      })
      const flag = Tool.make("flag", {
        description: "Flags a ticket.",
        input: Schema.Struct({ id: Schema.Int }),
        handler: ({ id }) => Effect.succeed({ id, handoff: "pending" })
      })
      const result = yield* Handoff.run({
        agents: {
          triage: {
            tools: registryOf([ticket, flag]),
            model: ChatModel.scripted([
              ChatModel.callTools([["c1", "ticket", { title: "broken" }], ["c2", "flag", { id: 7 }]]),
              (request: ChatModel.Request) => {
                const last = request.messages.at(-1)
                return ChatModel.answer(last?.role === "tool" ? last.results.map(ToolResult.textOf).join(" | ") : "?")
              }
            ])
          },
          billing: billing([])
        },
        start: "triage",
        messages: [user("open a ticket")]
      })
      assert.strictEqual(result.agent, "triage")
      assert.strictEqual(result.reason, "final_answer")
      assert.deepStrictEqual(result.transfers, [])
      assert.deepStrictEqual(result.results.map((r) => [r.isError, r.value]), [
        [false, { id: 7, title: "broken", handoff: { status: "queued", team: "support" } }],
        [false, { id: 7, handoff: "pending" }]
      ])
      assert.notMatch(result.text, /refused/)
      assert.isFalse((yield* events).some((e) => e._tag === "agent.handoff"))
    }).pipe(Effect.provide([ToolServices.layerTest({ runId: "run" }), ChatModel.scripted([])])))

  it.effect("a well-formed payload under `handoff` hands over; a malformed one under the `__handoff` marker is refused", () =>
    Effect.gen(function*() {
      const route = Tool.make("route", {
        description: "Routes the conversation.",
        input: Schema.Struct({ to: Schema.String }),
        handler: ({ to }) => Effect.succeed({ handoff: { target: to, task: "refund order 42" } })
      })
      const named = yield* Handoff.run({
        agents: {
          triage: { tools: registryOf([route]), model: ChatModel.scripted([ChatModel.callTools([["r1", "route", { to: "billing" }]])]) },
          billing: billing([])
        },
        start: "triage",
        messages: [user("refund please")]
      })
      assert.deepStrictEqual(named.transfers, [{ from: "triage", to: "billing", task: "refund order 42", toolCallId: "r1" }])
      assert.strictEqual(named.text, "billing: order 42 refunded")

      const broken = Tool.make("broken", {
        description: "Hands over without a target.",
        input: Schema.Struct({}),
        handler: () => Effect.succeed({ __handoff: { task: "refund order 42" } })
      })
      const marker = yield* Handoff.run({
        agents: {
          triage: {
            tools: registryOf([broken]),
            model: ChatModel.scripted([
              ChatModel.callTools([["x1", "broken", {}]]),
              (request: ChatModel.Request) => ChatModel.answer(lastResult(request))
            ])
          },
          billing: billing([])
        },
        start: "triage",
        messages: [user("refund please")]
      })
      assert.deepStrictEqual(marker.transfers, [])
      assert.strictEqual(marker.results[0]?.error?.disposition, "repair")
      assert.match(marker.text, /^broken: handoff refused: malformed \(.*target.*\); nothing was handed over$/)
    }).pipe(Effect.provide([ToolServices.layerTest({ runId: "run" }), ChatModel.scripted([])])))
})
