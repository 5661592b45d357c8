/**
 * A "full governance" stack: audit outermost, consent / reason /
 * redaction in the middle, rate limit and dry run innermost (idempotency is
 * the executor's, per keyed tool, and spans are the executor's, per call: not
 * layers). Layers appear in stack order; the audit log sees every call,
 * including the ones inner layers short-circuited.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Tracer } from "effect"
import { Approval } from "../../src/governance/Approval.ts"
import { Executor, Middleware, RunContext, ToolRegistry, ToolResult } from "../../src/index.ts"
import {
  AuditLog,
  auditLog,
  consent,
  dryRun,
  rateLimit,
  RateLimit,
  redaction,
  Redaction,
  requiredReason,
  stage,
  stack,
  summary
} from "../../src/governance/middleware/index.ts"
import * as Policy from "../../src/governance/middleware/Policy.ts"
import * as ToolTransform from "../../src/contract/ToolTransform.ts"
import { call, eventsOf, layersOf, makeCounter, makeTools, services } from "./fixtures.ts"

const order = [
  "audit_log",
  "summary",
  "consent",
  "required_reason",
  "redaction",
  "rate_limit",
  "dry_run"
]

const approver = Approval.layerRules([
  { name: "no-deletes", match: (r) => r.toolName === "delete_all", decide: "deny", reason: "not in this session" },
  { name: "rest", match: () => true, decide: "approve" }
])

const spans: Array<Tracer.NativeSpan> = []
const tracer = Layer.succeed(
  Tracer.Tracer,
  Tracer.make({ span: (options) => (spans.push(new Tracer.NativeSpan(options)), spans.at(-1)!) })
)

const governed = Effect.gen(function*() {
  const counter = makeCounter()
  const receipts: Array<AuditLog.Receipt> = []
  const reason = requiredReason({})
  const registry = yield* ToolTransform.apply(yield* ToolRegistry.make(makeTools(counter).all), [reason.transform])
  const executor = yield* Executor.make(registry, {
    middleware: stack(
      auditLog((r) => receipts.push(r), { redact: ["token"] }),
      summary((inv, _, audit) => `${inv.spec.name}: ${audit.summary ?? ""}`),
      consent(),
      reason.middleware,
      redaction(Redaction.keys({ keys: ["token"] })),
      rateLimit({ maxCalls: 3, window: "1 hour" }),
      dryRun({ only: ["write_note"] })
    )
  })
  return { counter, receipts, executor }
})

describe("full governance stack", () => {
  it.effect("layers appear in stack order, outermost first, each with its status", () =>
    Effect.gen(function*() {
      const { counter, executor, receipts } = yield* governed
      const result = yield* executor.run(call("c1", "echo", { text: "hi", token: "sk-1", reason: "greeting the user" }))
      assert.isFalse(result.isError)
      assert.deepStrictEqual(result.audit!.layers.map((l) => l.name), order)
      assert.deepStrictEqual(
        layersOf(result),
        // dry_run only acts on the tools it is given: for the others it records `skipped`.
        order.map((name) => `${name}:${name === "redaction" ? "redacted" : name === "dry_run" ? "skipped" : "ok"}`)
      )
      assert.strictEqual(result.audit?.summary, "echo: greeting the user")
      assert.strictEqual(result.audit?.consent?.decision, "approved")
      assert.deepStrictEqual(counter.runs.get("echo"), [{ text: "hi", token: "[redacted]" }])
      assert.strictEqual(receipts.length, 1)
      assert.deepStrictEqual(receipts[0]!.audit.layers.map((l) => l.name), order)
      const audits = (yield* eventsOf).filter((e) => e._tag === "tool.audit")
      assert.strictEqual(audits.length, 1)
    }).pipe(Effect.provide([services, approver, RateLimit.layerMemory, tracer])))

  it.effect("the audit log sees every short-circuited call; every answered call has an execute_tool span", () =>
    Effect.gen(function*() {
      spans.length = 0
      const { counter, executor, receipts } = yield* governed
      const calls = [
        call("c1", "delete_all", { reason: "cleaning up" }), // consent denied
        call("c2", "echo", { text: "a" }), // schema: no reason (rejected before middleware)
        call("c3", "write_note", { key: "k", text: "t", reason: "saving" }), // dry run
        call("c4", "echo", { text: "a", reason: "first" }), // runs
        call("c6", "echo", { text: "b", reason: "third" }), // runs (3rd counted call)
        call("c7", "echo", { text: "c", reason: "fourth" }) // rate limited
      ]
      const results = yield* executor.runBatch(calls, { concurrency: 1 })
      assert.deepStrictEqual(results.map((r) => r.audit?.layers[0]?.status ?? "rejected"), [
        "consent_denied",
        "rejected",
        "ok",
        "ok",
        "ok",
        "rate_limited"
      ])
      // the call refused before any middleware ran has its receipt too (from the `rejected` hook)
      assert.deepStrictEqual(receipts.map((r) => [r.callId, r.status, r.refused ?? false]), [
        ["c1", "consent_denied", false],
        ["c2", "schema_violation", true],
        ["c3", "ok", false],
        ["c4", "ok", false],
        ["c6", "ok", false],
        ["c7", "rate_limited", false]
      ])
      assert.deepStrictEqual(receipts.map((r) => r.emitOrder), [0, 1, 2, 3, 4, 5])
      const denied = receipts[0]!.audit.layers
      assert.deepStrictEqual(denied.map((l) => l.name), ["audit_log", "summary", "consent"])
      assert.deepStrictEqual(layersOf(results[2]!).slice(-1), ["dry_run:dry_run"])
      assert.deepStrictEqual(layersOf(results[5]!).slice(-1), ["rate_limit:rate_limited"])
      assert.include(ToolResult.textOf(results[5]!), "rate limit of 3 tool calls per 1h")
      assert.strictEqual(counter.count("echo"), 2)
      assert.strictEqual(counter.count("delete_all") + counter.count("write_note"), 0)
      // Default spans: one per answered call, the rejected c2 included.
      assert.strictEqual(spans.filter((s) => s.name.startsWith("execute_tool")).length, 6)
    }).pipe(Effect.provide([services, approver, RateLimit.layerMemory, tracer])))

  it.effect("a crash inside the stack: every layer records it, the receipt is written, the error is raised", () =>
    Effect.gen(function*() {
      const { receipts, executor } = yield* governed
      const error = yield* Effect.flip(executor.run(call("c1", "crash", { reason: "testing a crash" })))
      assert.strictEqual(error._tag, "ToolDefect")
      assert.strictEqual(receipts.length, 1)
      assert.strictEqual(receipts[0]!.status, "exception")
      // Every layer that acted records the crash; dry_run, which does not act on this tool, says `skipped`.
      assert.deepStrictEqual(
        receipts[0]!.audit.layers.map((l) => l.status),
        order.map((name) => name === "dry_run" ? "skipped" : "exception")
      )
    }).pipe(Effect.provide([services, approver, RateLimit.layerMemory, tracer])))

  it.effect("scope and policy compose with the rest: audit outermost, scope, then policy", () =>
    Effect.gen(function*() {
      const receipts: Array<AuditLog.Receipt> = []
      const registry = yield* ToolRegistry.make(makeTools(makeCounter()).all)
      const executor = yield* Executor.make(registry, {
        middleware: stack(
          auditLog((r) => receipts.push(r)),
          stage({ name: "review", allowedTools: ["echo", "write_note"] }),
          Policy.middleware({ stages: { review: "read" } })
        )
      })
      const blocked = yield* executor.run(call("c1", "write_note", { key: "k", text: "t" }))
      const outside = yield* executor.run(call("c2", "delete_all"))
      const ok = yield* executor.run(call("c3", "echo", { text: "hi" }))
      assert.deepStrictEqual(layersOf(blocked), ["audit_log:policy_blocked", "stage:policy_blocked", "policy:policy_blocked"])
      assert.include(ToolResult.textOf(blocked), "stage \"review\" allows side effects up to read")
      assert.deepStrictEqual(layersOf(outside), ["audit_log:scope_violation", "stage:scope_violation"])
      assert.deepStrictEqual(layersOf(ok), ["audit_log:ok", "stage:ok", "policy:ok"])
      assert.deepStrictEqual(receipts.map((r) => r.status), ["policy_blocked", "scope_violation", "ok"])
    }).pipe(Effect.provide([services, approver])))
})

describe("the `rejected` hook", () => {
  it.effect("refused calls reach only the hooks, outermost first, with the call, name, error and turn", () =>
    Effect.gen(function*() {
      const seen: Array<string> = []
      const watcher = (name: string) =>
        Middleware.make({
          name,
          before: (invocation) => Effect.sync(() => (seen.push(`${name}:before:${invocation.call.id}`), invocation)),
          rejected: ({ call, error, toolName, turn }) =>
            Effect.sync(() => void seen.push(`${name}:rejected:${call.id}:${toolName}:${error._tag}:${turn}`))
        })
      const registry = yield* ToolRegistry.make(makeTools(makeCounter()).all)
      const executor = yield* Executor.make(registry, {
        middleware: [watcher("outer"), Middleware.make({ name: "plain" }), watcher("inner")]
      })
      yield* executor.run(call("c1", "echo", { text: "hi" }))
      yield* executor.run(call("c2", "nope"))
      yield* executor.run(call("c3", "echo", { text: 1 })).pipe(RunContext.withTurn(4))
      assert.deepStrictEqual(seen, [
        "outer:before:c1",
        "inner:before:c1",
        "outer:rejected:c2:nope:ToolNotFound:0",
        "inner:rejected:c2:nope:ToolNotFound:0",
        "outer:rejected:c3:echo:InvalidArguments:4",
        "inner:rejected:c3:echo:InvalidArguments:4"
      ])
    }).pipe(Effect.provide(services)))
})
