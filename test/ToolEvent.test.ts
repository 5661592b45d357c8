/**
 * Events are data: every kind, produced by the real executor and agent loop,
 * survives encode → JSON text → decode unchanged (a `Cause` comes back as a
 * defect holding its rendered text), and the JSON-lines sink writes them in
 * order and reads them back equal.
 */
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import { assert, describe, expect, it } from "@effect/vitest"
import { Cause, Effect, Layer, Schedule, Schema, Stream } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import {
  Agent,
  Ask,
  AgentState,
  Cancellation,
  ChatModel,
  EventSink,
  Executor,
  RunContext,
  StoreRegistry,
  Tool,
  ToolError,
  ToolEvent,
  ToolRegistry,
  ToolProgress,
  ToolServices
} from "../src/index.ts"
import * as AuditTrail from "../src/governance/middleware/AuditTrail.ts"

const echo = Tool.make("echo", {
  description: "Echo text.",
  input: Schema.Struct({ text: Schema.String, tags: Schema.optionalKey(Schema.Array(Schema.String)) }),
  output: Schema.Struct({ text: Schema.String }),
  safety: { access: "read", idempotent: true },
  handler: ({ text }) => Effect.succeed({ text })
})

let flakyCalls = 0
const flaky = Tool.make("flaky", {
  description: "Fails once with a transient error, then answers.",
  input: Schema.Struct({}),
  safety: { access: "read", idempotent: true },
  retry: Schedule.recurs(2),
  handler: () =>
    Effect.suspend(() =>
      ++flakyCalls % 2 === 1
        ? Effect.fail(ToolError.retryable("rate service unavailable (HTTP 503)", new Error("HTTP 503")))
        : Effect.succeed("1.08")
    )
})

const dump = Tool.make("dump", {
  description: "Returns a large blob.",
  input: Schema.Struct({ size: Schema.Int }),
  safety: { access: "read", idempotent: true },
  handler: ({ size }) => Effect.succeed("x".repeat(size))
})

const boom = Tool.make("boom", {
  description: "Throws.",
  input: Schema.Struct({}),
  handler: () =>
    Effect.sync(() => {
      throw new Error("disk on fire")
    })
})

const lookup = Tool.make("lookup", {
  description: "Fails with a user-facing error.",
  input: Schema.Struct({ key: Schema.String }),
  handler: ({ key }) => Effect.fail(ToolError.repairable(`no note called ${key}`, { key, known: ["a", "b"] }))
})

const index = Tool.make("index", {
  description: "Reports progress, then answers.",
  input: Schema.Struct({}),
  services: [ToolProgress.ToolProgress],
  handler: () =>
    Effect.andThen(
      ToolProgress.report({ message: "indexing", count: 1, total: 2, fraction: 0.5, chunk: "a.md\n" }),
      Effect.succeed("indexed")
    )
})

const pick = Tool.make("pick", {
  description: "Asks which file, then answers.",
  input: Schema.Struct({}),
  failure: Ask.NotAnswered,
  services: [Ask.Ask],
  handler: () =>
    Effect.map(
      Ask.question({ message: "Which file?", answer: Schema.Struct({ file: Schema.String }), choices: [{ file: "a.md" }] }),
      (answer) => answer.file
    )
})

const add = Tool.make("add", {
  description: "Adds two integers.",
  input: Schema.Struct({ a: Schema.Int, b: Schema.Int }),
  safety: { access: "read", idempotent: true },
  handler: ({ a, b }) => Effect.succeed(a + b)
})

/** A recorded middleware layer that adds audit fields (JSON metadata). */
const audited = AuditTrail.make("audited", (invocation, next, recorder) =>
  Effect.andThen(
    recorder.annotate({ summary: "checked", kind: "lookup", hints: { readOnly: true }, metadata: { n: 1, who: ["ada"] } }),
    next(invocation)
  ))

const call = (id: string, name: string, args: unknown = {}) => ({ id, name, arguments: args })

/** Runs the executor and the agent loop over every kind of event; returns the events in emit order. */
const produceEvents = Effect.gen(function*() {
  const executor = yield* Executor.make(yield* ToolRegistry.make([echo, flaky, dump, boom, lookup, index, pick]), {
    middleware: [audited],
    artifacts: { threshold: 1_000 }
  })
  // The defect is fatal: the batch fails after every call has its result and events.
  yield* Effect.exit(executor.runBatch([
    call("c1", "echo", { text: "hi", tags: ["a"] }),
    call("c2", "flaky"),
    call("c3", "dump", { size: 5_000 }),
    call("c4", "lookup", { key: "k" }),
    call("c5", "missing", { x: 1 }),
    call("c6", "echo", { txt: "typo" }),
    call("c7", "boom"),
    call("c8", "index"),
    call("c9", "pick")
  ]).pipe(Effect.provide(Ask.layerFunction(() => Effect.succeed(Ask.answer({ file: "a.md" }, "user"))))))
  const tools = yield* ToolRegistry.make([add])
  // Streamed: the loop also reports the model's text and its decided calls (to the sink too).
  yield* Agent.stream({ messages: [{ role: "user", content: "2+3?" }], tools }).pipe(
    Stream.runDrain,
    Effect.provide(ChatModel.scripted([
      { ...ChatModel.callTools([["a1", "add", "{\"a\":2,\"b\":3}"]]), usage: { inputTokens: 10, outputTokens: 5 } },
      ChatModel.answer("5")
    ]))
  )
  // Streamed with a typed final answer: its partial value, then the decoded one.
  yield* Agent.stream({ messages: [{ role: "user", content: "2+3?" }], tools, output: Schema.Struct({ sum: Schema.Int }) }).pipe(
    Stream.runDrain,
    Effect.provide(ChatModel.scripted([ChatModel.callTools([["o1", "final_answer", { sum: 5 }]])]))
  )
  // A durable run's pending approval (`tinyagents/durable`), as its executor emits it.
  yield* executor.emit({ _tag: "agent.approval_requested", turn: 0, toolCallId: "a2", toolName: "add", arguments: { a: 1, b: 2 } })
  // A handoff to another agent (`Handoff.run`), as the loop emits it.
  yield* executor.emit({ _tag: "agent.handoff", turn: 0, toolCallId: "h1", toolName: "escalate", target: "billing", task: "refund" })
  // A tool search's finds (Agent.run's toolSearch), as the loop reports them after its batch.
  yield* Agent.run({ messages: [{ role: "user", content: "add" }], tools, toolSearch: {} }).pipe(
    Effect.provide(ChatModel.scripted([ChatModel.callTools([["s1", "search_tools", { query: "add numbers" }]]), ChatModel.answer("ok")]))
  )
  // A state update (Agent.run's state), applied by the loop after its batch.
  const Count = AgentState.make({
    schema: Schema.Struct({ n: Schema.Int }),
    update: Schema.Struct({ by: Schema.Int }),
    initial: { n: 0 },
    reduce: (state, update) => ({ n: state.n + update.by })
  })
  const bump = Tool.make("bump", {
    description: "Counts.",
    input: Schema.Struct({}),
    services: [AgentState.AgentState],
    handler: () => Count.update({ by: 2 })
  })
  yield* Agent.run({ messages: [{ role: "user", content: "count" }], tools: yield* ToolRegistry.make([bump]), state: Count }).pipe(
    Effect.provide(ChatModel.scripted([ChatModel.callTools([["s1", "bump", {}]]), ChatModel.answer("2")]))
  )
  return yield* EventSink.EventLog.use((log) => log.all)
}).pipe(Effect.provide(ToolServices.layerTest({ runId: "run-1", threadId: "thread-1" })))

/** What decoding gives back for a cause: a defect holding its rendered text. */
const rendered = (cause: Cause.Cause<unknown>): Cause.Cause<unknown> =>
  Schema.decodeSync(ToolError.CauseFromText)(Schema.encodeSync(ToolError.CauseFromText)(cause))

/** An error as decoding gives it back: causes rendered, everything else equal. */
const expectedError = (error: ToolError.ToolError): ToolError.ToolError => {
  switch (error._tag) {
    case "ToolDefect":
      return new ToolError.ToolDefect({ toolName: error.toolName, cause: rendered(error.cause) })
    case "MiddlewareFailed":
      return new ToolError.MiddlewareFailed({ ...error, cause: rendered(error.cause) })
    default:
      return error
  }
}

/** An event as decoding gives it back (the documented `Cause` exception). */
const expected = (event: ToolEvent.Event): ToolEvent.Event => {
  switch (event._tag) {
    case "tool.failed": {
      const { cause, ...rest } = event
      return { ...rest, error: expectedError(event.error), ...(cause === undefined ? {} : { cause: rendered(cause) }) }
    }
    case "tool.rejected":
    case "tool.retrying":
      return { ...event, error: expectedError(event.error) }
    default:
      return event
  }
}

/** encode → JSON text → parse → decode. */
const roundTrip = (event: ToolEvent.Event) => {
  const encoded = Schema.encodeSync(ToolEvent.Event)(event)
  const text = JSON.stringify(encoded)
  // Plain JSON: nothing is lost by JSON.stringify (no class instances, functions or undefined).
  assert.deepStrictEqual(JSON.parse(text), encoded)
  const decoded = Schema.decodeUnknownSync(ToolEvent.Event)(JSON.parse(text))
  return { encoded, text, decoded }
}

describe("ToolEvent schemas", () => {
  it.effect("every kind, produced by the executor and the agent, round-trips through JSON unchanged", () =>
    Effect.gen(function*() {
      const events = yield* produceEvents
      const kinds = Object.keys(ToolEvent.Event.cases).sort()
      // A new kind in the union must be produced here (and so round-trip tested).
      assert.deepStrictEqual([...new Set(events.map((e) => e._tag))].sort(), kinds)
      for (const event of events) {
        const { decoded, text } = roundTrip(event)
        expect(decoded, event._tag).toStrictEqual(expected(event))
        // Stored and read back unchanged: encoding the decoded event gives the same text.
        assert.strictEqual(JSON.stringify(Schema.encodeSync(ToolEvent.Event)(decoded)), text)
      }
    }))

  it.effect("errors inside events come back as the same classes, with message and disposition", () =>
    Effect.gen(function*() {
      const events = yield* produceEvents
      const withErrors = events.filter((e) =>
        e._tag === "tool.failed" || e._tag === "tool.rejected" || e._tag === "tool.retrying"
      )
      assert.deepStrictEqual(
        withErrors.map((e) => `${e._tag}:${e.error._tag}`).sort(),
        [
          "tool.failed:ToolDefect",
          "tool.failed:ToolFailure",
          "tool.rejected:InvalidArguments",
          "tool.rejected:ToolNotFound",
          "tool.retrying:ToolTransient"
        ]
      )
      for (const event of withErrors) {
        const decoded = roundTrip(event).decoded as typeof event
        assert.instanceOf(decoded.error, event.error.constructor as new(...args: Array<any>) => unknown)
        assert.instanceOf(decoded.error, Error)
        assert.isTrue(ToolError.isToolError(decoded.error))
        assert.strictEqual(decoded.error.message, event.error.message)
        assert.strictEqual(decoded.error.disposition, event.error.disposition)
      }
    }))

  it.effect("the encoded form: field names as in the types, errors with message and disposition, a cause as text", () =>
    Effect.gen(function*() {
      const events = yield* produceEvents
      const failed = events.find((e) => e._tag === "tool.failed" && e.error._tag === "ToolDefect")!
      const encoded = Schema.encodeSync(ToolEvent.Event)(failed) as Record<string, any>
      assert.deepStrictEqual(Object.keys(encoded).sort(), [
        "_tag",
        "attempt",
        "cause",
        "disposition",
        "elapsed",
        "error",
        "reason",
        "runId",
        "sequence",
        "threadId",
        "timestamp",
        "toolCallId",
        "toolName"
      ])
      assert.strictEqual(encoded._tag, "tool.failed")
      assert.deepStrictEqual(Object.keys(encoded.error), ["_tag", "message", "disposition", "toolName", "cause"])
      assert.strictEqual(encoded.error.message, "internal error in tool boom")
      assert.strictEqual(encoded.error.disposition, "fatal")
      assert.typeOf(encoded.cause, "string")
      assert.include(encoded.cause, "disk on fire")
      assert.include(encoded.error.cause, "disk on fire")
      const decoded = Schema.decodeUnknownSync(ToolEvent.Event)(JSON.parse(JSON.stringify(encoded)))
      assert.strictEqual(decoded._tag, "tool.failed")
      if (decoded._tag === "tool.failed") {
        assert.isTrue(Cause.hasDies(decoded.cause!))
        assert.strictEqual(Cause.squash(decoded.cause!), encoded.cause)
      }
    }))

  it.effect("optional idempotency keys are kept when present and absent when not", () =>
    Effect.sync(() => {
      const stamp = {
        runId: "r",
        threadId: "t",
        timestamp: 1_700_000_000_000,
        sequence: 3,
        toolCallId: "c1",
        toolName: "charge",
        attempt: 2
      }
      const events: ReadonlyArray<ToolEvent.Event> = [
        { _tag: "tool.started", ...stamp, idempotencyKey: "order-42", arguments: { amount: 5 } },
        {
          _tag: "tool.retrying",
          ...stamp,
          idempotencyKey: "order-42",
          delay: 100,
          error: new ToolError.ToolTimeout({ toolName: "charge", timeoutMillis: 1_000, idempotent: true })
        },
        { _tag: "tool.completed", ...stamp, idempotencyKey: "order-42", elapsed: 7, isError: false, output: "ok", artifacts: [] },
        {
          _tag: "tool.failed",
          ...stamp,
          idempotencyKey: "order-42",
          elapsed: 9,
          reason: "cancelled",
          error: new ToolError.ToolCancelled({ toolName: "charge", started: true }),
          disposition: "fatal"
        },
        {
          _tag: "tool.failed",
          ...stamp,
          elapsed: 0,
          reason: "error",
          error: new ToolError.OutcomeUnknown({ toolName: "charge" }),
          disposition: "repair",
          outcome: "unknown"
        },
        { _tag: "tool.started", ...stamp, arguments: {} }
      ]
      for (const event of events) {
        const { decoded, encoded } = roundTrip(event)
        expect(decoded).toStrictEqual(event)
        assert.strictEqual("idempotencyKey" in encoded, "idempotencyKey" in event)
      }
    }))

  it.effect("unknown values are kept as JSON: a Date in the arguments comes back as its ISO text", () =>
    Effect.sync(() => {
      const event: ToolEvent.Event = {
        _tag: "tool.started",
        runId: "r",
        threadId: "t",
        timestamp: 0,
        sequence: 0,
        toolCallId: "c1",
        toolName: "schedule",
        attempt: 1,
        arguments: { at: new Date(0), n: 1 }
      }
      const { decoded } = roundTrip(event)
      assert.deepStrictEqual((decoded as ToolEvent.ToolStarted).arguments, { at: "1970-01-01T00:00:00.000Z", n: 1 })
    }))

  it.effect("the JSON codec keeps a non-finite number (as a string); the plain encoded form is otherwise the same", () =>
    Effect.gen(function*() {
      const event: ToolEvent.Event = {
        _tag: "tool.retrying",
        runId: "r",
        threadId: "t",
        timestamp: 0,
        sequence: 0,
        toolCallId: "c1",
        toolName: "poll",
        attempt: 1,
        delay: Infinity,
        error: new ToolError.ToolTransient({ message: "not yet" })
      }
      const json = yield* ToolEvent.encodeJson(event)
      assert.include(json, "\"delay\":\"Infinity\"")
      expect(yield* ToolEvent.decodeJsonl(json)).toStrictEqual([event])
      const finite = { ...event, delay: 50 }
      assert.deepStrictEqual<unknown>(Schema.encodeSync(ToolEvent.EventJson)(finite), Schema.encodeSync(ToolEvent.Event)(finite))
    }))

  it.effect("decoding refuses what is not an event", () =>
    Effect.sync(() => {
      const decode = Schema.decodeUnknownResult(ToolEvent.Event)
      assert.isTrue(decode({ _tag: "tool.exploded" })._tag === "Failure")
      assert.isTrue(decode({ _tag: "agent.finished", runId: "r", threadId: "t", timestamp: 0, sequence: 0 })._tag === "Failure")
      assert.isTrue(
        decode({ _tag: "agent.finished", runId: "r", threadId: "t", timestamp: 0, sequence: 0, turns: 1, reason: "bored" })
          ._tag === "Failure"
      )
    }))
})

describe("EventSink.layerJsonl", () => {
  const tempFile = () => {
    const dir = fs.mkdtempSync(nodePath.join(os.tmpdir(), "tinyagents-events-"))
    return { dir, path: nodePath.join(dir, "events.jsonl") }
  }
  const cleanup = (dir: string) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))

  it.live("the executor's events, written one per line, read back equal and in order", () => {
    const { dir, path } = tempFile()
    return Effect.gen(function*() {
      const events = yield* produceEvents
      yield* Effect.forEach(events, EventSink.emit).pipe(Effect.provide(EventSink.layerJsonl(path)))
      const text = fs.readFileSync(path, "utf8")
      const lines = text.split("\n")
      assert.strictEqual(lines.length, events.length + 1)
      assert.strictEqual(lines.at(-1), "")
      assert.deepStrictEqual(lines.slice(0, -1).map((line) => JSON.parse(line)._tag), events.map((e) => e._tag))
      const back = yield* EventSink.readJsonl(path)
      expect(back).toStrictEqual(events.map(expected))
    }).pipe(Effect.provide(NodeFileSystem.layer), Effect.ensuring(cleanup(dir)))
  })

  it.live("as the executor's sink: a run's events land in sequence order; a new layer appends", () => {
    const { dir, path } = tempFile()
    const sink = EventSink.layerJsonl(path, { sync: true }).pipe(Layer.provide(NodeFileSystem.layer))
    const runOnce = (runId: string) =>
      Effect.gen(function*() {
        const executor = yield* Executor.make(yield* ToolRegistry.make([echo, boom]))
        yield* Effect.exit(
          executor.runBatch([call("c1", "echo", { text: "a" }), call("c2", "echo", { text: "b" }), call("c3", "boom")])
        )
      }).pipe(
        Effect.provide(Layer.mergeAll(
          sink,
          RunContext.layer({ runId, threadId: "t", turn: 0 }),
          StoreRegistry.layerMemory,
          Cancellation.layerNever
        ))
      )
    return Effect.gen(function*() {
      yield* runOnce("first")
      yield* runOnce("second")
      const events = yield* EventSink.readJsonl(path).pipe(Effect.provide(NodeFileSystem.layer))
      assert.deepStrictEqual([...new Set(events.map((e) => e.runId))], ["first", "second"])
      for (const runId of ["first", "second"]) {
        const mine = events.filter((e) => e.runId === runId)
        assert.deepStrictEqual(mine.map((e) => e.sequence), mine.map((_, i) => i))
        assert.deepStrictEqual(mine.filter((e) => e._tag === "tool.started").length, 3)
        assert.strictEqual(mine.filter((e) => e._tag === "tool.completed" || e._tag === "tool.failed").length, 3)
      }
    }).pipe(Effect.ensuring(cleanup(dir)))
  })

  it.live("concurrent emitters never interleave lines", () => {
    const { dir, path } = tempFile()
    const event = (i: number): ToolEvent.Event => ({
      _tag: "tool.completed",
      runId: `run-${i % 4}`,
      threadId: "t",
      timestamp: i,
      sequence: i,
      toolCallId: `c${i}`,
      toolName: "echo",
      attempt: 1,
      elapsed: 1,
      isError: false,
      output: "y".repeat(10_000),
      artifacts: []
    })
    const all = Array.from({ length: 200 }, (_, i) => event(i))
    return Effect.gen(function*() {
      yield* Effect.forEach(all, EventSink.emit, { concurrency: 16 }).pipe(Effect.provide(EventSink.layerJsonl(path)))
      const back = yield* EventSink.readJsonl(path)
      assert.deepStrictEqual(back.map((e) => e.sequence).sort((a, b) => a - b), all.map((e) => e.sequence))
      expect([...back].sort((a, b) => a.sequence - b.sequence)).toStrictEqual(all)
    }).pipe(Effect.provide(NodeFileSystem.layer), Effect.ensuring(cleanup(dir)))
  })
})

describe("ToolEvent.decodeJsonl", () => {
  const line = (sequence: number) =>
    JSON.stringify(Schema.encodeSync(ToolEvent.Event)({
      _tag: "agent.finished",
      runId: "r",
      threadId: "t",
      timestamp: 0,
      sequence,
      turns: 1,
      reason: "final_answer",
      text: "done",
      usage: { inputTokens: 1, outputTokens: 2 }
    }))

  it.effect("skips blank lines; a torn last line (a write cut short) is ignored", () =>
    Effect.gen(function*() {
      const torn = line(2).slice(0, 20)
      const events = yield* ToolEvent.decodeJsonl(`${line(0)}\n\n${line(1)}\n${torn}`)
      assert.deepStrictEqual(events.map((e) => e.sequence), [0, 1])
      const complete = yield* ToolEvent.decodeJsonl(`${line(0)}\n${line(1)}`)
      assert.deepStrictEqual(complete.map((e) => e.sequence), [0, 1])
    }))

  it.effect("any other bad line fails with its number", () =>
    Effect.gen(function*() {
      const bad = yield* Effect.flip(ToolEvent.decodeJsonl(`${line(0)}\n{"_tag":"tool.exploded"}\n${line(2)}\n`))
      assert.strictEqual(bad._tag, "MalformedEventLine")
      assert.strictEqual(bad.line, 2)
      assert.include(bad.message, "event log line 2")
      const cut = yield* Effect.flip(ToolEvent.decodeJsonl(`${line(0)}\n{"cut\n${line(2)}\n`))
      assert.strictEqual(cut.line, 2)
    }))

  it.effect("encodeJson writes one line of JSON that decodeJsonl reads back", () =>
    Effect.gen(function*() {
      const event: ToolEvent.Event = {
        _tag: "agent.model_responded",
        runId: "r",
        threadId: "t",
        timestamp: 5,
        sequence: 1,
        turn: 1,
        toolCalls: 2,
        text: "line one\nline two",
        usage: { inputTokens: 3, outputTokens: 4 }
      }
      const json = yield* ToolEvent.encodeJson(event)
      assert.notInclude(json, "\n")
      assert.deepStrictEqual(yield* ToolEvent.decodeJsonl(`${json}\n`), [event])
    }))
})
