/**
 * The audit trail: recorded layers appear outermost first with times from
 * Clock; a refusal is an error result that outer layers record; failures are
 * recorded by every layer they pass and raised again; foreign middleware's
 * own audit is kept.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { Middleware, ToolError, ToolResult } from "../../src/index.ts"
import * as AuditTrail from "../../src/governance/middleware/AuditTrail.ts"
import { advance, call, eventsOf, executorOf, layersOf, makeCounter, makeTools, services, tagsOf } from "./fixtures.ts"

/** A recorded layer that sleeps `millis` on the way in. */
const timed = (name: string, millis = 0) =>
  AuditTrail.make(name, (invocation, next) => Effect.andThen(Effect.sleep(millis), next(invocation)))

const refuser = AuditTrail.make("refuser", (invocation) =>
  AuditTrail.refuse(invocation, new ToolError.ApprovalDenied({ toolName: invocation.spec.name, reason: "no" })))

describe("AuditTrail", () => {
  it.effect("layers read outermost first, with start and end times from Clock", () =>
    Effect.gen(function*() {
      const tools = makeTools(makeCounter())
      const executor = yield* executorOf(tools.all, [timed("outer", 100), timed("middle", 10), timed("inner")])
      const fiber = yield* Effect.forkChild(executor.run(call("c1", "echo", { text: "hi" })))
      yield* advance(200, 10)
      const result = yield* Fiber.join(fiber)
      assert.deepStrictEqual(layersOf(result), ["outer:ok", "middle:ok", "inner:ok"])
      const [outer, middle, inner] = result.audit!.layers
      assert.deepStrictEqual([outer!.startedAt, middle!.startedAt, inner!.startedAt], [0, 100, 110])
      assert.isTrue(outer!.endedAt >= middle!.endedAt && middle!.endedAt >= inner!.endedAt)
      const events = yield* eventsOf
      assert.deepStrictEqual(tagsOf(events), ["tool.started", "tool.audit", "tool.completed"])
    }).pipe(Effect.provide(services)))

  it.effect("a refusal is an error result: outer layers record its status, the handler never runs", () =>
    Effect.gen(function*() {
      const counter = makeCounter()
      const tools = makeTools(counter)
      const executor = yield* executorOf(tools.all, [timed("outer"), refuser, timed("inner")])
      const result = yield* executor.run(call("c1", "echo", { text: "hi" }))
      assert.isTrue(result.isError)
      assert.strictEqual(result.error?._tag, "ApprovalDenied")
      assert.deepStrictEqual(layersOf(result), ["outer:consent_denied", "refuser:consent_denied"])
      assert.include(result.audit!.layers[1]!.error!, "not approved")
      assert.strictEqual(counter.count("echo"), 0)
      assert.deepStrictEqual(tagsOf(yield* eventsOf), ["tool.started", "tool.audit", "tool.completed"])
    }).pipe(Effect.provide(services)))

  it.effect("a failure is recorded by every layer it passes and raised again unchanged", () =>
    Effect.gen(function*() {
      const seen: Array<AuditTrail.Settled> = []
      const watcher = AuditTrail.make("watcher", (invocation, next) => next(invocation), (settled) =>
        Effect.sync(() => void seen.push(settled)))
      const tools = makeTools(makeCounter())
      const executor = yield* executorOf(tools.all, [watcher, timed("inner")])
      const error = yield* Effect.flip(executor.run(call("c1", "crash")))
      assert.strictEqual(error._tag, "ToolDefect")
      assert.strictEqual(seen.length, 1)
      assert.deepStrictEqual(layersOf(seen[0]!), ["watcher:exception", "inner:exception"])
      assert.strictEqual(seen[0]!.layer.error, "internal error in tool crash")
      assert.deepStrictEqual(tagsOf(yield* eventsOf), ["tool.started", "tool.failed"])
    }).pipe(Effect.provide(services)))

  it.effect("a layer's own mark wins over the derived status; annotations reach the audit", () =>
    Effect.gen(function*() {
      const marker = AuditTrail.make("marker", (invocation, next, recorder) =>
        Effect.gen(function*() {
          yield* recorder.mark("redacted")
          yield* recorder.annotate({ kind: "search", metadata: { a: 1 } })
          yield* AuditTrail.annotate({ metadata: { b: 2 } })
          return yield* next(invocation)
        }))
      const tools = makeTools(makeCounter())
      const executor = yield* executorOf(tools.all, [marker])
      const result = yield* executor.run(call("c1", "echo", { text: "hi" }))
      assert.deepStrictEqual(layersOf(result), ["marker:redacted"])
      assert.strictEqual(result.audit?.kind, "search")
      assert.deepStrictEqual(result.audit?.metadata, { a: 1, b: 2 })
    }).pipe(Effect.provide(services)))

  it.effect("audit set by foreign middleware is kept after the recorded layers", () =>
    Effect.gen(function*() {
      const foreign = Middleware.make({
        name: "foreign",
        after: (_, result) =>
          Effect.succeed({
            ...result,
            audit: { summary: "from foreign", layers: [{ name: "foreign", status: "ok", startedAt: 0, endedAt: 0 }] }
          })
      })
      const tools = makeTools(makeCounter())
      const executor = yield* executorOf(tools.all, [timed("outer"), foreign])
      const result = yield* executor.run(call("c1", "echo", { text: "hi" }))
      assert.deepStrictEqual(layersOf(result), ["outer:ok", "foreign:ok"])
      assert.strictEqual(result.audit?.summary, "from foreign")
      assert.strictEqual(ToolResult.textOf(result), "{\"text\":\"hi\"}")
    }).pipe(Effect.provide(services)))

  it("statusOf maps every error family to a reserved status", () => {
    const cases: ReadonlyArray<readonly [ToolError.ToolError, string]> = [
      [new ToolError.ApprovalDenied({ toolName: "t", reason: "r" }), "consent_denied"],
      [new ToolError.PolicyBlocked({ toolName: "t", reason: "r", status: "scope_violation", repairable: true }), "scope_violation"],
      [new ToolError.ToolTimeout({ toolName: "t", timeoutMillis: 1, idempotent: true }), "timeout"],
      [new ToolError.InvalidArguments({ toolName: "t", issues: [] }), "schema_violation"],
      [new ToolError.ToolNotFound({ toolName: "t", advertised: [] }), "tool_not_found"],
      [ToolError.repairable("x"), "executor_error"]
    ]
    for (const [error, status] of cases) assert.strictEqual(AuditTrail.statusOf(error), status)
  })
})
