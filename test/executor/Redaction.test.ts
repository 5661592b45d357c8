/**
 * The executor's one redaction step (a tool's `safety.redact`), position by
 * position: rejections never quote a value under a redacted key (a wrong type,
 * an undeclared key, an object holding one, malformed JSON naming one); handler
 * failures matching the patterns are redacted in `tool.failed`, `tool.retrying`,
 * the result the model reads, provider messages and audit receipts; a stored
 * idempotent result keeps what the handler produced and is redacted each time it
 * answers.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import {
  EventSink,
  Executor,
  StoreRegistry,
  Tool,
  ToolError,
  ToolEvent,
  ToolProgress,
  ToolRegistry,
  ToolResult,
  ToolServices
} from "../../src/index.ts"
import { auditLog, type AuditLog, summary } from "../../src/governance/middleware/index.ts"
import { Anthropic, Gemini, Mcp, OpenAiChat, OpenAiResponses } from "../../src/providers/index.ts"
import { redactStoredText } from "../../src/internal/redact/policy.ts"

const call = (id: string, name: string, args: unknown = {}) => ({ id, name, arguments: args })
const eventsOf = EventSink.EventLog.use((log) => log.all)
const test = ToolServices.layerTest({ runId: "run-1", threadId: "thread-1" })
const encodeEvent = Schema.encodeUnknownSync(ToolEvent.EventJson)

const redact = { keys: ["password", "pin", "token"], patterns: [/sk-live-[A-Za-z0-9]+/] }

/** Everything that leaves a call, as text: events (schema-encoded), the model's text, all provider formats. */
const outbound = (events: ReadonlyArray<ToolEvent.Event>, results: ReadonlyArray<ToolResult.ToolResult>): string =>
  JSON.stringify([
    events.map((event) => encodeEvent(event)),
    results.map(ToolResult.textOf),
    OpenAiChat.toolMessages(results),
    OpenAiResponses.toolMessages(results),
    Anthropic.toolMessages(results),
    Gemini.toolMessages(results),
    Mcp.toolMessages(results)
  ])

const login = Tool.make("login", {
  description: "Logs in.",
  input: Schema.Struct({
    user: Schema.String,
    password: Schema.String,
    pin: Schema.optionalKey(Schema.Int),
    profile: Schema.optionalKey(Schema.String)
  }),
  safety: { access: "read", redact },
  handler: () => Effect.succeed("ok")
})

describe("executor redaction: rejections", () => {
  it.effect("a wrong-typed value of a redacted key is not quoted (finding 4)", () =>
    Effect.gen(function*() {
      const executor = yield* Executor.make(yield* ToolRegistry.make([login]))
      const result = yield* executor.run(call("c1", "login", { user: "ann", password: "pw", pin: "hunter2" }))
      assert.strictEqual(result.error?._tag, "InvalidArguments")
      const text = ToolResult.textOf(result)
      assert.include(text, `at "pin"`)
      assert.include(text, "Expected")
      assert.include(text, "[redacted]")
      const events = yield* eventsOf
      assert.deepStrictEqual(events.map((e) => e._tag), ["tool.rejected"])
      assert.notInclude(outbound(events, [result]), "hunter2")
    }).pipe(Effect.provide(test)))

  it.effect("an undeclared key that is redacted is not quoted (finding 4)", () =>
    Effect.gen(function*() {
      const executor = yield* Executor.make(yield* ToolRegistry.make([login]))
      const result = yield* executor.run(call("c1", "login", { user: "ann", password: "pw", token: "hunter2" }))
      assert.strictEqual(result.error?._tag, "InvalidArguments")
      assert.include(ToolResult.textOf(result), `at "token"`)
      assert.notInclude(outbound(yield* eventsOf, [result]), "hunter2")
    }).pipe(Effect.provide(test)))

  it.effect("an object that holds a redacted key is not quoted where another field expected a string", () =>
    Effect.gen(function*() {
      const executor = yield* Executor.make(yield* ToolRegistry.make([login]))
      const result = yield* executor.run(
        call("c1", "login", { user: "ann", password: "pw", profile: { token: "hunter2", note: "x" } })
      )
      assert.strictEqual(result.error?._tag, "InvalidArguments")
      assert.include(ToolResult.textOf(result), `at "profile"`)
      assert.notInclude(outbound(yield* eventsOf, [result]), "hunter2")
    }).pipe(Effect.provide(test)))

  it.effect("a value under a redacted key inside another issue's quote, and pattern matches, are scrubbed", () =>
    Effect.gen(function*() {
      const executor = yield* Executor.make(yield* ToolRegistry.make([login]))
      const result = yield* executor.run(call("c1", "login", { user: 42, password: "pw", profile: "sk-live-abc123" }))
      // `user` is wrong, `profile` is fine: nothing to cut, but nothing secret either
      assert.strictEqual(result.error?._tag, "InvalidArguments")
      const wrongProfile = yield* executor.run(call("c2", "login", { user: "ann", password: "pw", profile: 7, pin: "sk-live-abc123" }))
      assert.notInclude(outbound(yield* eventsOf, [result, wrongProfile]), "sk-live-abc123")
    }).pipe(Effect.provide(test)))

  it.effect("malformed JSON that names a redacted key loses the parser's detail (it quotes the text)", () =>
    Effect.gen(function*() {
      const executor = yield* Executor.make(yield* ToolRegistry.make([login]))
      const result = yield* executor.run(call("c1", "login", `{"user":"ann","password":hunter2}`))
      assert.strictEqual(result.error?._tag, "MalformedArguments")
      assert.include(ToolResult.textOf(result), "not valid JSON")
      assert.notInclude(outbound(yield* eventsOf, [result]), "hunter2")
    }).pipe(Effect.provide(test)))

  it.effect("a tool without a policy keeps its messages as they are", () =>
    Effect.gen(function*() {
      const open = Tool.make("open", {
        description: "No policy.",
        input: Schema.Struct({ n: Schema.Int }),
        safety: { access: "read" },
        handler: () => Effect.succeed("ok")
      })
      const executor = yield* Executor.make(yield* ToolRegistry.make([open]))
      const result = yield* executor.run(call("c1", "open", { n: "seven" }))
      assert.include(ToolResult.textOf(result), "seven")
    }).pipe(Effect.provide(test)))
})

describe("executor redaction: handler failures (finding 5)", () => {
  const failing = (probe: { attempts: number }) =>
    Tool.make("charge", {
      description: "Fails as told.",
      input: Schema.Struct({ mode: Schema.Literals(["repair", "transient", "undeclared", "defect"]) }),
      safety: { access: "read", idempotent: true, redact },
      retry: Executor.backoff({ base: "1 millis", maxAttempts: 2, jitter: false }),
      handler: ({ mode }): Effect.Effect<string, ToolError.ToolError> => {
        probe.attempts++
        switch (mode) {
          case "repair":
            return Effect.fail(ToolError.repairable("card sk-live-REPAIR1 declined", { card: "sk-live-REPAIR1", pin: 1234 }))
          case "transient":
            return Effect.fail(ToolError.retryable("gateway sk-live-RETRY2 busy", new Error("sk-live-RETRY2")))
          case "undeclared":
            return Effect.fail(new Error("db said sk-live-UNDECLARED3")) as never
          case "defect":
            return Effect.die(new Error("crash sk-live-DEFECT4"))
        }
      }
    })

  it.live("failures matching the patterns are redacted in events, results, provider messages and receipts", () =>
    Effect.gen(function*() {
      const probe = { attempts: 0 }
      const receipts: Array<AuditLog.Receipt> = []
      const executor = yield* Executor.make(yield* ToolRegistry.make([failing(probe)]), {
        middleware: [auditLog((receipt) => void receipts.push(receipt))]
      })
      const results = yield* Effect.map(
        Effect.flip(executor.runBatch([
          call("c1", "charge", { mode: "repair" }),
          call("c2", "charge", { mode: "transient" }),
          call("c3", "charge", { mode: "undeclared" }),
          call("c4", "charge", { mode: "defect" })
        ])),
        (failed) => failed.results
      )
      const events = yield* eventsOf
      assert.deepStrictEqual(results.map((r) => r.error?._tag), ["ToolFailure", "ToolTransient", "ToolFailure", "ToolDefect"])
      assert.include(events.map((e) => e._tag), "tool.retrying")
      assert.strictEqual(ToolResult.textOf(results[0]!), "card [redacted] declined")
      assert.deepStrictEqual((results[0]!.error as ToolError.ToolFailure).detail, { card: "[redacted]", pin: "[redacted]" })
      assert.lengthOf(receipts, 4)
      assert.strictEqual(receipts[0]!.error, "card [redacted] declined")
      const failedCause = events.find((e): e is ToolEvent.ToolFailed => e._tag === "tool.failed" && e.toolCallId === "c3")
      assert.isDefined(failedCause?.cause)
      const text = `${outbound(events, results)}${JSON.stringify(receipts)}`
      for (const secret of ["sk-live-REPAIR1", "sk-live-RETRY2", "sk-live-UNDECLARED3", "sk-live-DEFECT4", "1234"]) {
        assert.notInclude(text, secret)
      }
    }).pipe(Effect.provide(test)))

  it.effect("a tool without a policy keeps its failure text", () =>
    Effect.gen(function*() {
      const plain = Tool.make("plain", {
        description: "Fails.",
        input: Schema.Struct({}),
        safety: { access: "read" },
        handler: () => Effect.fail(ToolError.repairable("card sk-live-X declined"))
      })
      const executor = yield* Executor.make(yield* ToolRegistry.make([plain]))
      const result = yield* executor.run(call("c1", "plain"))
      assert.strictEqual(ToolResult.textOf(result), "card sk-live-X declined")
    }).pipe(Effect.provide(test)))
})

describe("executor redaction: outputs, declared failures and audit", () => {
  it.effect("an output its schema rejects is not quoted under a redacted key (InvalidOutput)", () =>
    Effect.gen(function*() {
      const broken = Tool.make("broken", {
        description: "Returns the wrong shape.",
        input: Schema.Struct({}),
        output: Schema.Struct({ user: Schema.String, token: Schema.Number }),
        safety: { access: "read", redact },
        handler: () => Effect.succeed({ user: "ann", token: "tok-SECRET-out" } as never)
      })
      const executor = yield* Executor.make(yield* ToolRegistry.make([broken]))
      const failure = yield* Effect.flip(executor.run(call("c1", "broken")))
      assert.strictEqual(failure._tag, "InvalidOutput")
      assert.include(failure.message, `at "token"`)
      const events = yield* eventsOf
      const text = JSON.stringify([failure.message, events.map((event) => encodeEvent(event))])
      assert.notInclude(text, "tok-SECRET-out")
    }).pipe(Effect.provide(test)))

  it.effect("a declared failure whose message is made from its detail shows the detail redacted", () =>
    Effect.gen(function*() {
      const Denied = Schema.Struct({ reason: Schema.String, password: Schema.String })
      const guarded = Tool.make("guarded", {
        description: "Fails with a declared error.",
        input: Schema.Struct({}),
        failure: Denied,
        safety: { access: "read", redact },
        handler: () => Effect.fail({ reason: "locked", password: "hunter2-declared" })
      })
      const executor = yield* Executor.make(yield* ToolRegistry.make([guarded]))
      const result = yield* executor.run(call("c1", "guarded"))
      assert.strictEqual(result.error?._tag, "ToolFailure")
      assert.include(ToolResult.textOf(result), "locked")
      assert.notInclude(outbound(yield* eventsOf, [result]), "hunter2-declared")
    }).pipe(Effect.provide(test)))

  it.effect("a summary that quotes a redacted argument is redacted in the result's audit and the tool.audit event", () =>
    Effect.gen(function*() {
      const executor = yield* Executor.make(yield* ToolRegistry.make([login]), {
        middleware: [summary((invocation) => `logged in with ${JSON.stringify(invocation.input)} and sk-live-SUMMARY1`)]
      })
      const result = yield* executor.run(call("c1", "login", { user: "ann", password: "hunter2-summary" }))
      assert.include(result.audit?.summary ?? "", "logged in with")
      const events = yield* eventsOf
      assert.include(events.map((e) => e._tag), "tool.audit")
      const text = JSON.stringify([result.audit, events.map((event) => encodeEvent(event))])
      assert.notInclude(text, "sk-live-SUMMARY1")
      assert.notInclude(text, "hunter2-summary")
    }).pipe(Effect.provide(test)))

  it.effect("a failure or an output that echoes an argument held under a redacted key loses it", () =>
    Effect.gen(function*() {
      const echoing = Tool.make("echoing", {
        description: "Echoes its password.",
        input: Schema.Struct({ password: Schema.String, fail: Schema.Boolean }),
        safety: { access: "read", redact },
        handler: ({ fail, password }) =>
          fail
            ? Effect.fail(ToolError.repairable(`wrong password ${password}`, { tried: password }))
            : Effect.succeed(`welcome, you typed ${password}`)
      })
      const executor = yield* Executor.make(yield* ToolRegistry.make([echoing]))
      const failed = yield* executor.run(call("c1", "echoing", { password: "hunter2-echo", fail: true }))
      const ok = yield* executor.run(call("c2", "echoing", { password: "hunter2-echo", fail: false }))
      assert.strictEqual(ToolResult.textOf(failed), "wrong password [redacted]")
      assert.strictEqual(ToolResult.textOf(ok), "welcome, you typed [redacted]")
      assert.notInclude(outbound(yield* eventsOf, [failed, ok]), "hunter2-echo")
    }).pipe(Effect.provide(test)))
})

describe("executor redaction: overlapping secrets and matches", () => {
  it.effect("a secret inside another, or sharing a character with a pattern match, is redacted whole", () =>
    Effect.gen(function*() {
      // "hunter" is inside "hunter22-x"; the password's last "s" starts a match of /sk-live-.../.
      const args = { token: "hunter", password: "hunter22-x", pin: "my-pass-s" }
      const text = "tried hunter22-x then my-pass-sk-live-ABC123 ok"
      const overlapping = Tool.make("overlapping", {
        description: "Echoes text that holds its secrets.",
        input: Schema.Struct({ token: Schema.String, password: Schema.String, pin: Schema.String, fail: Schema.Boolean }),
        safety: { access: "read", redact },
        services: [ToolProgress.ToolProgress],
        handler: ({ fail }) =>
          Effect.andThen(
            ToolProgress.report({ message: text, chunk: text }),
            fail ? Effect.fail(ToolError.repairable(text, { text })) : Effect.succeed(text)
          )
      })
      const executor = yield* Executor.make(yield* ToolRegistry.make([overlapping]))
      const ok = yield* executor.run(call("c1", "overlapping", { ...args, fail: false }))
      const failed = yield* executor.run(call("c2", "overlapping", { ...args, fail: true }))
      const redacted = "tried [redacted] then [redacted] ok"
      assert.strictEqual(ToolResult.textOf(ok), redacted)
      assert.strictEqual(ToolResult.textOf(failed), redacted)
      const events = yield* eventsOf
      const progress = events.filter((e): e is ToolEvent.ToolProgress => e._tag === "tool.progress")
      for (const id of ["c1", "c2"]) {
        const ofCall = progress.filter((e) => e.toolCallId === id)
        assert.deepStrictEqual(ofCall.flatMap((e) => e.message ?? []), [redacted])
        assert.strictEqual(ofCall.map((e) => e.chunk ?? "").join(""), redacted)
      }
      // (tool.started carries the arguments, redacted by key: only their values' tails are searched for)
      const out = outbound(events, [ok, failed])
      for (const tail of ["22-x", "live-ABC123", "ABC123"]) assert.notInclude(out, tail)
    }).pipe(Effect.provide(test)))

  it.effect("a global pattern whose lastIndex was moved by its owner still matches from the start", () =>
    Effect.gen(function*() {
      const pattern = /sk-live-[A-Za-z0-9]+/g
      pattern.lastIndex = 5
      const echo = Tool.make("echo_key", {
        description: "Echoes a key.",
        input: Schema.Struct({}),
        safety: { access: "read", redact: { patterns: [pattern] } },
        services: [ToolProgress.ToolProgress],
        handler: () => Effect.andThen(ToolProgress.message("sk-live-AAA1 and sk-live-BBB2"), Effect.succeed("sk-live-AAA1 ok"))
      })
      const executor = yield* Executor.make(yield* ToolRegistry.make([echo]))
      const result = yield* executor.run(call("c1", "echo_key"))
      assert.strictEqual(ToolResult.textOf(result), "[redacted] ok")
      const progress = (yield* eventsOf).filter((e): e is ToolEvent.ToolProgress => e._tag === "tool.progress")
      assert.strictEqual(progress[0]!.message, "[redacted] and [redacted]")
    }).pipe(Effect.provide(test)))
})

describe("executor redaction: the idempotency store (finding 7)", () => {
  it.effect("the store keeps the output as produced; every answer from it is redacted", () =>
    Effect.gen(function*() {
      let runs = 0
      const issue = Tool.make("issue_token", {
        description: "Issues a token once per request.",
        input: Schema.Struct({ requestId: Schema.String }),
        safety: { access: "write", redact },
        idempotency: ({ requestId }) => requestId,
        handler: ({ requestId }) => Effect.sync(() => ({ requestId, token: `tok-SECRET-${++runs}`, note: "sk-live-NOTE9" }))
      })
      const executor = yield* Executor.make(yield* ToolRegistry.make([issue]))
      const first = yield* executor.run(call("c1", "issue_token", { requestId: "r1" }))
      const again = yield* executor.run(call("c2", "issue_token", { requestId: "r1" }))
      assert.strictEqual(runs, 1)
      assert.deepStrictEqual(again.idempotency, { key: "r1", replayed: true })
      for (const result of [first, again]) {
        assert.deepStrictEqual(result.value, { requestId: "r1", token: "[redacted]", note: "[redacted]" })
        assert.notInclude(ToolResult.textOf(result), "tok-SECRET")
      }
      assert.notInclude(outbound(yield* eventsOf, [first, again]), "tok-SECRET-1")
      assert.notInclude(outbound(yield* eventsOf, [first, again]), "sk-live-NOTE9")
      // What the store keeps (documented): the result as the handler produced it.
      const stored = yield* (yield* StoreRegistry.store("idempotency")).get("issue_token/r1")
      assert.include(stored ?? "", "tok-SECRET-1")
    }).pipe(Effect.provide(test)))

  it.effect("both stores that keep outputs (idempotency, artifacts) keep them as produced; every answer is redacted", () =>
    Effect.gen(function*() {
      let runs = 0
      const report = Tool.make("issue_report", {
        description: "Issues a long report once per request.",
        input: Schema.Struct({ requestId: Schema.String }),
        safety: { access: "write", redact },
        idempotency: ({ requestId }) => requestId,
        handler: ({ requestId }) =>
          Effect.sync(() => ({ requestId, token: `tok-SECRET-${++runs}`, body: "x".repeat(2_000) }))
      })
      const executor = yield* Executor.make(yield* ToolRegistry.make([report]), { artifacts: { threshold: 500 } })
      const first = yield* executor.run(call("c1", "issue_report", { requestId: "r1" }))
      const again = yield* executor.run(call("c2", "issue_report", { requestId: "r1" }))
      assert.strictEqual(runs, 1)
      const artifacts = yield* StoreRegistry.store("artifacts")
      for (const result of [first, again]) {
        assert.lengthOf(result.artifacts, 1)
        assert.notInclude(ToolResult.textOf(result), "tok-SECRET")
        assert.deepStrictEqual((result.value as { readonly token: string }).token, "[redacted]")
        assert.include((yield* artifacts.get(result.artifacts[0]!.key)) ?? "", "tok-SECRET-1")
      }
      const stored = yield* (yield* StoreRegistry.store("idempotency")).get("issue_report/r1")
      assert.include(stored ?? "", "tok-SECRET-1")
      assert.notInclude(outbound(yield* eventsOf, [first, again]), "tok-SECRET-1")
    }).pipe(Effect.provide(test)))
})

describe("a stored JSON copy cut by a store's size limit", () => {
  it("is served without the values of redacted members, though it no longer parses", () => {
    const policy = { keys: ["token"] }
    const whole = JSON.stringify({ user: "bob", token: "abc-secret-123", nested: { token: { a: "deep-secret", b: [1, 2] } }, n: 7, tail: "x".repeat(50) })
    for (let cut = 1; cut < whole.length; cut++) {
      const text = whole.slice(0, cut)
      const served = redactStoredText(text, policy)
      for (const secret of ["abc-secret-123", "deep-secret"]) {
        // no prefix of a secret longer than 2 characters survives the cut
        for (let n = 3; n <= secret.length; n++) assert.notInclude(served, secret.slice(0, n), `cut at ${cut}`)
      }
    }
    const served = redactStoredText(whole.slice(0, whole.length - 10), policy)
    assert.include(served, `"user":"bob"`)
    assert.include(served, `"n":7`)
  })
})
