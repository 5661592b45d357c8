/**
 * consent and the Approval service: approve, deny (consent_denied, handler
 * never runs), edit (re-validated with the tool's decoder), the `when` filter,
 * the rule-based approver and the terminal approver (TTY and not).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { PassThrough } from "node:stream"
import { Approval } from "../../src/governance/Approval.ts"
import * as ApprovalModule from "../../src/governance/Approval.ts"
import { ToolResult } from "../../src/index.ts"
import { consent, TerminalApproval } from "../../src/governance/middleware/index.ts"
import { call, executorOf, layersOf, makeCounter, makeTools, services } from "./fixtures.ts"

const decideWith = (decide: (request: ApprovalModule.Request) => ApprovalModule.Decision) =>
  Approval.layer((request) => Effect.succeed(decide(request)))

describe("consent", () => {
  it.effect("approved: the call runs; audit.consent records decision, decider and time", () =>
    Effect.gen(function*() {
      const counter = makeCounter()
      const executor = yield* executorOf(makeTools(counter).all, [consent()])
      const result = yield* executor.run(call("c1", "write_note", { key: "k", text: "t" }))
      assert.isFalse(result.isError)
      assert.strictEqual(counter.count("write_note"), 1)
      assert.deepStrictEqual(result.audit?.consent, { decision: "approved", decidedBy: "tester", decidedAt: 0 })
      assert.deepStrictEqual(layersOf(result), ["consent:ok"])
    }).pipe(Effect.provide([services, decideWith(() => ApprovalModule.approve("tester"))])))

  it.effect("denied: a repairable ApprovalDenied result with status consent_denied; the handler never runs", () =>
    Effect.gen(function*() {
      const counter = makeCounter()
      const executor = yield* executorOf(makeTools(counter).all, [consent()])
      const result = yield* executor.run(call("c1", "write_note", { key: "k", text: "t" }))
      assert.isTrue(result.isError)
      assert.strictEqual(result.error?._tag, "ApprovalDenied")
      assert.strictEqual(result.error?.disposition, "repair")
      assert.strictEqual(ToolResult.textOf(result), "write_note: the call was not approved: not today")
      assert.deepStrictEqual(layersOf(result), ["consent:consent_denied"])
      assert.strictEqual(result.audit?.consent?.decision, "denied")
      assert.strictEqual(counter.count("write_note"), 0)
    }).pipe(Effect.provide([services, decideWith(() => ApprovalModule.deny("not today", "tester"))])))

  it.effect("edited: valid new arguments run; invalid ones are refused with schema_violation", () =>
    Effect.gen(function*() {
      const counter = makeCounter()
      const executor = yield* executorOf(makeTools(counter).all, [consent()])
      const edited = yield* executor.run(call("c1", "write_note", { key: "k", text: "rm -rf" }))
      assert.isFalse(edited.isError)
      assert.deepStrictEqual(counter.runs.get("write_note"), [{ key: "k", text: "safe" }])
      assert.strictEqual(edited.audit?.consent?.decision, "edited")
      const invalid = yield* executor.run(call("c2", "write_note", { key: "bad", text: "x" }))
      assert.strictEqual(invalid.error?._tag, "InvalidArguments")
      assert.deepStrictEqual(layersOf(invalid), ["consent:schema_violation"])
      assert.strictEqual(counter.count("write_note"), 1)
    }).pipe(Effect.provide([
      services,
      decideWith((r) =>
        (r.arguments as { key: string }).key === "bad"
          ? ApprovalModule.edit({ key: 1 }, "tester")
          : ApprovalModule.edit({ key: "k", text: "safe" }, "tester")
      )
    ])))

  it.effect("`when` limits which calls are asked about", () =>
    Effect.gen(function*() {
      const asked: Array<string> = []
      const executor = yield* executorOf(makeTools(makeCounter()).all, [
        consent({ when: (inv) => inv.spec.safety.access !== "read" })
      ])
      const approver = Approval.layer((r) => Effect.sync(() => (asked.push(r.toolName), ApprovalModule.approve())))
      const read = yield* executor.run(call("c1", "echo", { text: "hi" })).pipe(Effect.provide(approver))
      const write = yield* executor.run(call("c2", "write_note", { key: "k", text: "t" })).pipe(Effect.provide(approver))
      assert.deepStrictEqual(asked, ["write_note"])
      assert.isUndefined(read.audit?.consent)
      // a call `when` excludes was not approved: the layer records `skipped`, not `ok`
      assert.deepStrictEqual(layersOf(read), ["consent:skipped"])
      assert.deepStrictEqual(layersOf(write), ["consent:ok"])
    }).pipe(Effect.provide(services)))
})

describe("Approval.layerRules", () => {
  it.effect("the first matching rule decides; no match denies", () =>
    Effect.gen(function*() {
      const approval = yield* Approval
      const request = (toolName: string): ApprovalModule.Request => ({
        toolName,
        callId: "c",
        arguments: {},
        spec: { safety: {} } as ApprovalModule.Request["spec"],
        why: "test"
      })
      assert.deepStrictEqual(yield* approval.decide(request("echo")), ApprovalModule.approve("rule:reads"))
      assert.deepStrictEqual(
        yield* approval.decide(request("delete_all")),
        ApprovalModule.deny("refused by rule 1", "rule:1")
      )
      assert.deepStrictEqual(
        yield* approval.decide(request("other")),
        ApprovalModule.deny("no approval rule matched this call", "rules")
      )
    }).pipe(Effect.provide(Approval.layerRules([
      { name: "reads", match: (r) => r.toolName === "echo", decide: "approve" },
      { match: (r) => r.toolName.startsWith("delete"), decide: "deny" }
    ]))))
})

describe("TerminalApproval.layer", () => {
  const request: ApprovalModule.Request = {
    toolName: "write_note",
    callId: "c1",
    arguments: { key: "k", token: "s3cret" },
    spec: { safety: { redact: { keys: ["token"] } } } as unknown as ApprovalModule.Request["spec"],
    why: "the tool mutates state"
  }
  const terminal = (isTTY: boolean, fallback?: "approve" | "deny") => {
    const input = Object.assign(new PassThrough(), { isTTY })
    const output = new PassThrough()
    let written = ""
    output.on("data", (chunk) => void (written += String(chunk)))
    const layer = TerminalApproval.layer({ input, output, ...(fallback === undefined ? {} : { fallback }) })
    return { input, layer, written: () => written }
  }

  it.effect("not a terminal: answers by the fallback rule and says so", () => {
    const approving = terminal(false, "approve")
    const denying = terminal(false)
    return Effect.gen(function*() {
      const yes = yield* Approval.use((a) => a.decide(request)).pipe(Effect.provide(approving.layer))
      const no = yield* Approval.use((a) => a.decide(request)).pipe(Effect.provide(denying.layer))
      assert.deepStrictEqual(yes, ApprovalModule.approve("auto (stdin is not a terminal)"))
      assert.strictEqual(no._tag, "Deny")
      assert.include(approving.written(), "write_note: auto-approved (stdin is not a terminal)")
      assert.include(denying.written(), "write_note: auto-denied (stdin is not a terminal)")
    })
  })

  it.live("a terminal: y approves, n denies with the reason typed, e edits; arguments shown redacted", () => {
    const t = terminal(true)
    return Effect.gen(function*() {
      const approval = yield* Approval
      t.input.write("y\n")
      const yes = yield* approval.decide(request)
      t.input.write("n too risky\n")
      const no = yield* approval.decide(request)
      t.input.write("e\n{\"key\":\"other\"}\n")
      const edited = yield* approval.decide(request)
      assert.deepStrictEqual(yes, ApprovalModule.approve("user"))
      assert.deepStrictEqual(no, ApprovalModule.deny("too risky", "user"))
      assert.deepStrictEqual(edited, ApprovalModule.edit({ key: "other" }, "user"))
      assert.include(t.written(), "Allow write_note (the tool mutates state) with {\"key\":\"k\",\"token\":\"[redacted]\"}?")
      assert.notInclude(t.written(), "s3cret")
    }).pipe(Effect.provide(t.layer))
  })
})
