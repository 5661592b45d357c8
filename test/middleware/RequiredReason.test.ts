/**
 * requiredReason: the transform asks every tool for a reason (and the decoder
 * accepts it); the middleware checks it, strips it before the handler and
 * records it as the summary. Covers the strip + required-schema pitfall (every call rejected).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Result, Schema } from "effect"
import { Executor, Tool, ToolRegistry, ToolResult } from "../../src/index.ts"
import { requiredReason } from "../../src/governance/middleware/index.ts"
import * as ToolTransform from "../../src/contract/ToolTransform.ts"
import { call, eventsOf, layersOf, makeCounter, makeTools, services, tagsOf } from "./fixtures.ts"

const setup = (options: Parameters<typeof requiredReason>[0], transform = true) =>
  Effect.gen(function*() {
    const counter = makeCounter()
    const tools = makeTools(counter)
    const reason = requiredReason(options)
    const base = yield* ToolRegistry.make(tools.all)
    const registry = transform ? yield* ToolTransform.apply(base, [reason.transform]) : base
    const executor = yield* Executor.make(registry, { middleware: [reason.middleware] })
    return { counter, executor, registry }
  })

describe("requiredReason", () => {
  it.effect("the transform advertises a required reason on every tool", () =>
    Effect.gen(function*() {
      const { registry } = yield* setup({})
      for (const spec of registry.specs) {
        const properties = spec.inputSchema.properties as Record<string, { type?: string; minLength?: number }>
        assert.strictEqual(properties["reason"]?.type, "string", spec.name)
        assert.include(spec.inputSchema.required as ReadonlyArray<string>, "reason")
      }
    }).pipe(Effect.provide(services)))

  it.effect("happy path: the handler never sees the reason; the audit summary holds it", () =>
    Effect.gen(function*() {
      const { counter, executor } = yield* setup({})
      const result = yield* executor.run(call("c1", "echo", { text: "hi", reason: " Checking the echo tool " }))
      assert.isFalse(result.isError)
      assert.deepStrictEqual(counter.runs.get("echo"), [{ text: "hi" }])
      assert.strictEqual(result.audit?.summary, "Checking the echo tool")
      assert.deepStrictEqual(layersOf(result), ["required_reason:ok"])
    }).pipe(Effect.provide(services)))

  it.effect("strip + required schema: calls with a reason run, calls without are rejected by the decoder", () =>
    Effect.gen(function*() {
      const { counter, executor } = yield* setup({ strip: true, schemaRequired: true })
      const ok = yield* executor.run(call("c1", "write_note", { key: "k", text: "t", reason: "saving" }))
      assert.isFalse(ok.isError)
      const missing = yield* executor.run(call("c2", "write_note", { key: "k", text: "t" }))
      assert.strictEqual(missing.error?._tag, "InvalidArguments")
      assert.include(ToolResult.textOf(missing), "\"reason\"")
      assert.strictEqual(counter.count("write_note"), 1)
      assert.deepStrictEqual(tagsOf(yield* eventsOf), ["tool.started", "tool.audit", "tool.completed", "tool.rejected"])
    }).pipe(Effect.provide(services)))

  it.effect("short-circuit: an optional reason that is missing is refused by the middleware with schema_violation", () =>
    Effect.gen(function*() {
      const { counter, executor } = yield* setup({ schemaRequired: false, minLength: 5 })
      const missing = yield* executor.run(call("c1", "echo", { text: "hi" }))
      assert.strictEqual(missing.error?._tag, "InvalidArguments")
      assert.deepStrictEqual(layersOf(missing), ["required_reason:schema_violation"])
      assert.include(ToolResult.textOf(missing), "at least 5 character(s)")
      // A reason that is present but short fails the schema's own minimum length, before any middleware.
      const short = yield* executor.run(call("c2", "echo", { text: "hi", reason: "why" }))
      assert.strictEqual(short.error?._tag, "InvalidArguments")
      assert.isUndefined(short.audit)
      assert.strictEqual(counter.count("echo"), 0)
    }).pipe(Effect.provide(services)))

  it.effect("without the transform, a call without a reason is refused by the middleware", () =>
    Effect.gen(function*() {
      const { counter, executor } = yield* setup({ minLength: 5 }, false)
      const short = yield* executor.run(call("c1", "delete_all", { }))
      assert.deepStrictEqual(layersOf(short), ["required_reason:schema_violation"])
      assert.strictEqual(counter.count("delete_all"), 0)
    }).pipe(Effect.provide(services)))

  it.effect("fill_blank with an optional schema: the call runs and the summary says no reason was given", () =>
    Effect.gen(function*() {
      const { counter, executor } = yield* setup({ schemaRequired: false, onMissing: "fill_blank" })
      const result = yield* executor.run(call("c1", "echo", { text: "hi" }))
      assert.isFalse(result.isError)
      assert.strictEqual(result.audit?.summary, "(no reason given)")
      assert.deepStrictEqual(counter.runs.get("echo"), [{ text: "hi" }])
    }).pipe(Effect.provide(services)))

  it.effect("strip: false passes the reason through to the handler", () =>
    Effect.gen(function*() {
      const { counter, executor } = yield* setup({ strip: false, field: "why" })
      yield* executor.run(call("c1", "echo", { text: "hi", why: "testing" }))
      assert.deepStrictEqual(counter.runs.get("echo"), [{ text: "hi", why: "testing" }])
    }).pipe(Effect.provide(services)))

  it.effect("without the transform: the reason is read from the raw arguments of a tool that allows unknown keys", () =>
    Effect.gen(function*() {
      const seen: Array<unknown> = []
      const open = Tool.make("open_tool", {
        description: "Accepts unknown keys.",
        input: Schema.Struct({ q: Schema.String }),
        allowUnknownKeys: true,
        safety: { access: "read" },
        handler: (input) => Effect.sync(() => void seen.push(input))
      })
      const reason = requiredReason({})
      const executor = yield* Executor.make(yield* ToolRegistry.make([open]), { middleware: [reason.middleware] })
      const result = yield* executor.run(call("c1", "open_tool", "{\"q\":\"x\",\"reason\":\"from raw JSON\"}"))
      assert.strictEqual(result.audit?.summary, "from raw JSON")
      assert.deepStrictEqual(seen, [{ q: "x" }])
    }).pipe(Effect.provide(services)))

  it.effect("a tool's own `reason` parameter is kept (only an added field is stripped)", () =>
    Effect.gen(function*() {
      const seen: Array<unknown> = []
      const ban = Tool.make("ban_user", {
        description: "Ban a user; the reason is shown to them.",
        input: Schema.Struct({ user: Schema.String, reason: Schema.String }),
        safety: { access: "write" },
        handler: (input) => Effect.sync(() => void seen.push(input))
      })
      const reason = requiredReason({})
      const registry = yield* ToolTransform.apply(yield* ToolRegistry.make([ban]), [reason.transform])
      const executor = yield* Executor.make(registry, { middleware: [reason.middleware] })
      yield* executor.run(call("c1", "ban_user", { user: "u1", reason: "spam" }))
      assert.deepStrictEqual(seen, [{ user: "u1", reason: "spam" }])
    }).pipe(Effect.provide(services)))

  it("imported (JSON Schema) tools get the field in their visible schema and their decoder", () => {
    const imported = Result.getOrThrow(Tool.fromJsonSchema("math.factorial", {
      description: "Factorial.",
      inputSchema: { type: "object", properties: { n: { type: "integer" } }, required: ["n"], additionalProperties: false },
      handler: () => Effect.succeed(1)
    }))
    const registry = Result.getOrThrow(ToolRegistry.makeResult([imported]))
    const rewritten = Result.getOrThrow(
      Result.flatMap(ToolTransform.applyTools([imported], [requiredReason({}).transform]), ToolRegistry.makeResult)
    )
    assert.deepStrictEqual(registry.specs[0]!.inputSchema.required, ["n"])
    assert.deepStrictEqual(rewritten.specs[0]!.inputSchema.required, ["n", "reason"])
    const entry = rewritten.get("math.factorial")!
    assert.isTrue(Result.isSuccess(entry.decode({ n: 3, reason: "needed" })))
    assert.isTrue(Result.isFailure(entry.decode({ n: 3 })))
  })
})
