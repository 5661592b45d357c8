/**
 * Errors are data: every error class is a `Schema.TaggedError`, and the
 * `ToolError.ToolError` schema (the one events use) round-trips each of them
 * through JSON as the same class, with its message and disposition (a `Cause`
 * comes back as a defect holding its rendered text).
 */
import { assert, describe, expect, it } from "@effect/vitest"
import { Cause, Effect, Schema } from "effect"
import { ToolError } from "../src/index.ts"

const cause = (() => {
  const exit = Effect.runSyncExit(Effect.die(new Error("disk on fire")))
  return exit._tag === "Failure" ? exit.cause : Cause.empty
})()

/** One realistic instance of every error class (a new class without a sample does not compile). */
const samples: { readonly [K in ToolError.ToolError["_tag"]]: Extract<ToolError.ToolError, { readonly _tag: K }> } = {
  ToolNotFound: new ToolError.ToolNotFound({ toolName: "read_fiel", advertised: ["read_file", "write_file"] }),
  ToolNotAllowed: new ToolError.ToolNotAllowed({ toolName: "bash", advertised: [] }),
  MalformedArguments: new ToolError.MalformedArguments({ toolName: "calc", reason: "Unexpected end of JSON input" }),
  InvalidArguments: new ToolError.InvalidArguments({
    toolName: "calc",
    issues: [{ path: ["expression"], message: "Missing key" }, { path: ["options", 0], message: "Expected a string" }]
  }),
  ToolCallLimitExceeded: new ToolError.ToolCallLimitExceeded({ toolName: "search", scope: "tool", limit: 3, mode: "continue" }),
  ToolFailure: new ToolError.ToolFailure({ message: "no note called x", detail: { _tag: "NotFound", key: "x" } }),
  ToolTransient: new ToolError.ToolTransient({ message: "rate service unavailable", cause: new Error("HTTP 503") }),
  ToolTimeout: new ToolError.ToolTimeout({ toolName: "fetch_rate", timeoutMillis: 1_000, idempotent: false }),
  OutcomeUnknown: new ToolError.OutcomeUnknown({ toolName: "send_email" }),
  ApprovalDenied: new ToolError.ApprovalDenied({ toolName: "bash", reason: "not now" }),
  PolicyBlocked: new ToolError.PolicyBlocked({
    toolName: "write_file",
    reason: "outside the workspace",
    status: "scope_violation",
    repairable: true
  }),
  ToolDefect: new ToolError.ToolDefect({ toolName: "boom", cause }),
  MiddlewareFailed: new ToolError.MiddlewareFailed({
    toolName: "echo",
    middleware: "audit",
    cause: Cause.fail(new Error("audit sink unreachable"))
  }),
  InvalidOutput: new ToolError.InvalidOutput({ toolName: "bad_output", issues: [{ path: ["n"], message: "Expected number" }] }),
  StoreFailed: new ToolError.StoreFailed({ store: "artifacts", operation: "write", cause: new Error("ENOSPC") }),
  ToolCancelled: new ToolError.ToolCancelled({ toolName: "slow", started: true })
}

/** The error as decoding gives it back: a `Cause` becomes a defect holding its rendered text. */
const expected = (error: ToolError.ToolError): ToolError.ToolError => {
  const rendered = (c: Cause.Cause<unknown>) => Cause.die(Cause.pretty(c))
  switch (error._tag) {
    case "ToolDefect":
      return new ToolError.ToolDefect({ toolName: error.toolName, cause: rendered(error.cause) })
    case "MiddlewareFailed":
      return new ToolError.MiddlewareFailed({ toolName: error.toolName, middleware: error.middleware, cause: rendered(error.cause) })
    default:
      return error
  }
}

const json = (value: unknown): unknown => JSON.parse(JSON.stringify(value))

describe("ToolError schemas", () => {
  it("the union's cases are every error class", () => {
    assert.deepStrictEqual(Object.keys(ToolError.ToolError.cases).sort(), Object.keys(samples).sort())
  })

  for (const [tag, error] of Object.entries(samples)) {
    it(`${tag}: encodes to plain JSON with message and disposition, decodes to the same class`, () => {
      const encoded = Schema.encodeSync(ToolError.ToolError)(error) as Record<string, unknown>
      assert.deepStrictEqual(json(encoded), encoded)
      assert.strictEqual(encoded._tag, tag)
      assert.strictEqual(encoded.message, error.message)
      assert.strictEqual(encoded.disposition, error.disposition)
      const decoded = Schema.decodeUnknownSync(ToolError.ToolError)(json(encoded))
      assert.instanceOf(decoded, error.constructor as new(...args: Array<any>) => unknown)
      assert.isTrue(ToolError.isToolError(decoded))
      assert.strictEqual(decoded._tag, error._tag)
      assert.strictEqual(decoded.message, error.message)
      assert.strictEqual(decoded.disposition, error.disposition)
      expect(decoded).toStrictEqual(expected(error))
      // Read back and written again: the same JSON.
      assert.deepStrictEqual(Schema.encodeSync(ToolError.ToolError)(decoded), encoded)
    })

    it(`${tag}: the class is the schema of its fields`, () => {
      const schema = error.constructor as unknown as Schema.Codec<ToolError.ToolError, Record<string, unknown>>
      const encoded = Schema.encodeSync(schema)(error)
      assert.deepStrictEqual(json(encoded), encoded)
      assert.notProperty(encoded, "disposition")
      const decoded = Schema.decodeUnknownSync(schema)(json(encoded))
      expect(decoded).toStrictEqual(expected(error))
      // The union decodes the class's own encoded form too (no message, no disposition).
      expect(Schema.decodeUnknownSync(ToolError.ToolError)(json(encoded))).toStrictEqual(expected(error))
    })
  }

  it("message and disposition are derived: decoding ignores edited ones", () => {
    const encoded = {
      ...(Schema.encodeSync(ToolError.ToolError)(samples.ToolTimeout) as object),
      message: "forged",
      disposition: "fatal"
    }
    const decoded = Schema.decodeUnknownSync(ToolError.ToolError)(encoded)
    assert.strictEqual(decoded.message, samples.ToolTimeout.message)
    assert.strictEqual(decoded.disposition, "repair")
  })

  it("a cause is its rendered text; the decoded defect renders to the same text", () => {
    const encoded = Schema.encodeSync(ToolError.CauseFromText)(cause)
    assert.strictEqual(encoded, Cause.pretty(cause))
    assert.include(encoded, "disk on fire")
    const decoded = Schema.decodeSync(ToolError.CauseFromText)(encoded)
    assert.isTrue(Cause.hasDies(decoded))
    assert.strictEqual(Cause.squash(decoded), encoded)
    assert.strictEqual(Schema.encodeSync(ToolError.CauseFromText)(decoded), encoded)
    assert.isTrue(Cause.isCause(Schema.decodeSync(ToolError.CauseFromText)("")))
    assert.strictEqual(Schema.decodeSync(ToolError.CauseFromText)("").reasons.length, 0)
  })

  it("decoding refuses unknown tags, missing fields and bad dispositions", () => {
    const decode = Schema.decodeUnknownResult(ToolError.ToolError)
    assert.strictEqual(decode({ _tag: "Oops", message: "x" })._tag, "Failure")
    assert.strictEqual(decode({ _tag: "ToolNotFound", toolName: "x" })._tag, "Failure")
    assert.strictEqual(decode({ _tag: "ToolNotFound", toolName: "x", advertised: [], disposition: "maybe" })._tag, "Failure")
    assert.strictEqual(Schema.decodeUnknownResult(ToolError.Disposition)("maybe")._tag, "Failure")
  })
})

describe("ToolError classes", () => {
  it.effect("are yieldable, caught by tag, and keep their disposition rules", () =>
    Effect.gen(function*() {
      const caught = yield* Effect.gen(function*() {
        return yield* samples.ToolNotFound
      }).pipe(Effect.catchTag("ToolNotFound", (e) => Effect.succeed(e.toolName)))
      assert.strictEqual(caught, "read_fiel")
      assert.strictEqual(samples.ToolNotFound.message, "unknown tool \"read_fiel\"; available tools: read_file, write_file")
      assert.strictEqual(samples.ToolNotAllowed.message, "tool \"bash\" is not available this turn; available tools: (none)")
      assert.strictEqual(
        samples.InvalidArguments.message,
        "calc: invalid arguments: at \"expression\": Missing key; at \"options\"[0]: Expected a string"
      )
      assert.strictEqual(samples.ToolCallLimitExceeded.disposition, "repair")
      assert.strictEqual(new ToolError.ToolCallLimitExceeded({ ...samples.ToolCallLimitExceeded, mode: "error" }).disposition, "fatal")
      assert.strictEqual(samples.ToolTimeout.disposition, "repair")
      assert.strictEqual(new ToolError.ToolTimeout({ ...samples.ToolTimeout, idempotent: true }).disposition, "retry")
      assert.strictEqual(samples.OutcomeUnknown.disposition, "repair")
      assert.strictEqual(
        samples.OutcomeUnknown.message,
        "send_email: the process running this call stopped before its result was recorded; it may or may not have completed"
      )
      assert.strictEqual(samples.PolicyBlocked.disposition, "repair")
      assert.strictEqual(new ToolError.PolicyBlocked({ ...samples.PolicyBlocked, repairable: false }).disposition, "fatal")
      assert.strictEqual(ToolError.retryable("later").disposition, "retry")
      assert.strictEqual(ToolError.repairable("fix it", { hint: 1 }).detail !== undefined, true)
      for (const error of Object.values(samples)) {
        assert.instanceOf(error, Error)
        assert.strictEqual(error.name, error._tag)
        assert.isTrue(ToolError.isToolError(error))
      }
    }))
})
