/**
 * Shared by the executor's fault tests: a tool that behaves as told (and counts
 * its handlers in flight), event sinks of every kind (synchronous, asynchronous,
 * slow, failing), and the exactness invariants checked against what a sink was
 * offered and what a batch returned.
 */
import { type Duration, Effect, Layer, Schema } from "effect"
import { EventSink, Executor, RunContext, StoreRegistry, Tool, ToolError, ToolProgress, ToolResult } from "../../src/index.ts"
import type { ToolEvent } from "../../src/index.ts"

export const Kind = Schema.Literals(["ok", "fail", "defect", "throw", "sleep", "hang", "flaky", "report", "sync", "syncThrow"])
export type Kind = typeof Kind.Type

/** What the test tools did: handlers in flight, peaks, and every invocation. */
export interface Probe {
  running: number
  peak: number
  exclusiveRunning: number
  exclusivePeak: number
  invocations: number
  readonly failures: Map<string, number>
  /** Successful handler runs of the keyed tool, per idempotency key. */
  readonly applied: Map<string, number>
  appliedTotal: number
}

export const makeProbe = (): Probe => ({
  running: 0,
  peak: 0,
  exclusiveRunning: 0,
  exclusivePeak: 0,
  invocations: 0,
  failures: new Map(),
  applied: new Map(),
  appliedTotal: 0
})

const Input = Schema.Struct({
  kind: Kind,
  ms: Schema.optionalKey(Schema.Int),
  key: Schema.optionalKey(Schema.String)
})

/**
 * `report`: reports progress a few times, `ms` apart, and leaves behind a fiber that keeps
 * reporting after the call has ended (those reports must never become events).
 */
const reporting = (ms: number): Effect.Effect<string, never, ToolProgress.ToolProgress> =>
  Effect.gen(function*() {
    yield* Effect.forkDetach(
      Effect.forEach(
        Array.from({ length: 20 }, (_, i) => i),
        (i) => Effect.andThen(Effect.sleep(7), ToolProgress.report({ count: i, chunk: "." })),
        { discard: true }
      )
    )
    for (let i = 0; i < 4; i++) {
      yield* ToolProgress.report({ message: `step ${i}`, fraction: i / 4 })
      yield* Effect.sleep(ms)
    }
    return "reported"
  })

const behave = (probe: Probe, exclusive: boolean) => (
  input: typeof Input.Type
): Effect.Effect<string, ToolError.ToolError, ToolProgress.ToolProgress> => {
  probe.invocations++
  if (input.kind === "throw") throw new Error("thrown before returning an Effect")
  // a bare `Effect.sync` (the executor may call its thunk without a fiber: `Now.thunkOf`)
  if (input.kind === "sync") return Effect.sync(() => "synced")
  if (input.kind === "syncThrow") return Effect.sync(() => { throw new Error("thrown inside Effect.sync") })
  const body: Effect.Effect<string, ToolError.ToolError, ToolProgress.ToolProgress> = input.kind === "ok"
    ? Effect.succeed("done")
    : input.kind === "fail"
    ? Effect.fail(ToolError.repairable("nope"))
    : input.kind === "defect"
    ? Effect.die("kaboom")
    : input.kind === "sleep"
    ? Effect.as(Effect.sleep(input.ms ?? 10), "slept")
    : input.kind === "hang"
    ? Effect.never
    : input.kind === "report"
    ? reporting(input.ms ?? 20)
    : Effect.suspend(() => {
      const key = input.key ?? ""
      const seen = probe.failures.get(key) ?? 0
      probe.failures.set(key, seen + 1)
      return seen < (input.ms ?? 1) ? Effect.fail(ToolError.retryable(`flaky ${seen}`)) : Effect.succeed("recovered")
    })
  return Effect.acquireUseRelease(
    Effect.sync(() => {
      probe.running++
      probe.peak = Math.max(probe.peak, probe.running)
      if (exclusive) {
        probe.exclusiveRunning++
        probe.exclusivePeak = Math.max(probe.exclusivePeak, probe.exclusiveRunning)
      }
    }),
    () => body,
    () =>
      Effect.sync(() => {
        probe.running--
        if (exclusive) probe.exclusiveRunning--
      })
  )
}

/**
 * `work` (idempotent, retried), `mutate` (exclusive, not idempotent, never retried) and `charge`
 * (a write keyed by `key`, retried: applied at most once per key; its output names the application).
 */
/** {@link behave} for a tool without `ToolProgress` (a `report` call sleeps instead). */
const behavePlain = (probe: Probe) => (input: typeof Input.Type): Effect.Effect<string, ToolError.ToolError> =>
  behave(probe, false)(input.kind === "report" ? { ...input, kind: "sleep" } : input) as Effect.Effect<
    string,
    ToolError.ToolError
  >

export const tools = (probe: Probe, timeout: Duration.Input = "2 seconds") => [
  // no progress, no retry, no key, not exclusive: the executor answers it by plain calls while its steps complete
  Tool.make("plain", {
    description: "Behaves as told (no progress, no retry).",
    input: Input,
    timeout,
    safety: { access: "read", idempotent: true },
    handler: behavePlain(probe)
  }),
  Tool.make("work", {
    description: "Behaves as told.",
    input: Input,
    timeout,
    safety: { access: "read", idempotent: true },
    retry: Executor.backoff({ base: "10 millis", maxAttempts: 3, jitter: false }),
    services: [ToolProgress.ToolProgress],
    handler: behave(probe, false)
  }),
  Tool.make("mutate", {
    description: "Behaves as told, alone.",
    input: Input,
    timeout,
    exclusive: true,
    safety: { access: "mutate" },
    services: [ToolProgress.ToolProgress],
    handler: behave(probe, true)
  }),
  Tool.make("charge", {
    description: "Behaves as told, once per key.",
    input: Input,
    timeout,
    safety: { access: "write" },
    idempotency: ({ key }) => key ?? "none",
    retry: Executor.backoff({ base: "10 millis", maxAttempts: 3, jitter: false }),
    services: [ToolProgress.ToolProgress],
    handler: (input) =>
      Effect.map(behave(probe, false)(input), (output) => {
        const key = input.key ?? "none"
        probe.applied.set(key, (probe.applied.get(key) ?? 0) + 1)
        return `${output}#${++probe.appliedTotal}`
      })
  })
] as const

// ---------------------------------------------------------------------------
// sinks
// ---------------------------------------------------------------------------

export const SinkKind = Schema.Literals(["now", "sync", "async", "slow", "dies", "throws", "interrupts"])
export type SinkKind = typeof SinkKind.Type

/** A sink of the given kind; `offered` is every event it was handed, in order (also those it then failed on). */
export const makeSink = (kind: SinkKind) => {
  const offered: Array<ToolEvent.Event> = []
  const record = (event: ToolEvent.Event) => Effect.sync(() => void offered.push(event))
  const emit = (event: ToolEvent.Event): Effect.Effect<void> => {
    switch (kind) {
      case "now":
        // delivered in `emit` itself, answering a completed Exit (as the memory sink does)
        offered.push(event)
        return Effect.void
      case "sync":
        return record(event)
      case "async":
        // suspends, then delivers: like an exporter's queue
        return Effect.andThen(Effect.yieldNow, record(event))
      case "slow":
        return Effect.andThen(Effect.sleep(1 + (event.sequence % 7)), record(event))
      case "dies":
        return event.sequence % 3 === 1 ? Effect.andThen(record(event), Effect.die("sink down")) : record(event)
      case "throws":
        offered.push(event)
        if (event.sequence % 4 === 2) throw new Error("sink threw")
        return Effect.void
      case "interrupts":
        return event.sequence % 5 === 3 ? Effect.andThen(record(event), Effect.interrupt) : record(event)
    }
  }
  return { offered, sink: EventSink.EventSink.of({ emit }) }
}

export const services = (sink: EventSink.EventSinkShape) =>
  Layer.mergeAll(
    RunContext.RunContext.layer({ threadId: "thread-1", runId: "run-1", turn: 0 }),
    StoreRegistry.StoreRegistry.layerMemory,
    Layer.succeed(EventSink.EventSink, sink)
  )

// ---------------------------------------------------------------------------
// invariants
// ---------------------------------------------------------------------------

export const call = (id: string, name: string, args: unknown = {}) => ({ id, name, arguments: args })

const terminalTags = new Set(["tool.completed", "tool.failed"])

/** A stable picture of results, to compare before and after more time passes. */
export const snapshot = (results: ReadonlyArray<ToolResult.ToolResult>): string =>
  JSON.stringify(results.map((r) => [r.toolCallId, r.isError, r.error?._tag, ToolResult.textOf(r)]))

/**
 * Checks the exactness guarantees and returns the first violation, or `undefined`:
 * sequence numbers 0..n-1 in the order offered; per call at most one start, and
 * exactly one terminal event after it; no terminal event without a start; a
 * rejection only for unstarted calls; results (when any) in call order and
 * consistent with the events.
 */
export const violation = (
  calls: ReadonlyArray<{ readonly id: string }>,
  offered: ReadonlyArray<ToolEvent.Event>,
  results: ReadonlyArray<ToolResult.ToolResult> | undefined
): string | undefined => {
  for (let i = 0; i < offered.length; i++) {
    if (offered[i]!.sequence !== i) {
      return `sequence: event ${i} offered with number ${offered[i]!.sequence} (${offered.map((e) => e.sequence).join(",")})`
    }
  }
  for (const [index, c] of calls.entries()) {
    const mine = offered.filter((e) => "toolCallId" in e && e.toolCallId === c.id)
    const tags = mine.map((e) => e._tag)
    const started = tags.filter((t) => t === "tool.started").length
    const terminal = tags.filter((t) => terminalTags.has(t)).length
    const rejected = tags.filter((t) => t === "tool.rejected").length
    const describe = `${c.id}: ${tags.join(",")}`
    if (started > 1) return `two starts: ${describe}`
    if (started === 1) {
      if (terminal !== 1) return `started without exactly one terminal event: ${describe}`
      if (tags[0] !== "tool.started") return `event before start: ${describe}`
      if (!terminalTags.has(tags[tags.length - 1]!)) return `event after the terminal one: ${describe}`
      if (rejected > 0) return `started and rejected: ${describe}`
    } else {
      if (terminal > 0) return `terminal event without a start: ${describe}`
      if (tags.some((t) => t !== "tool.rejected")) return `an event of a call that never started: ${describe}`
      if (rejected > 1) return `rejected twice: ${describe}`
    }
    if (results === undefined) continue
    const result = results[index]
    if (result === undefined || result.toolCallId !== c.id) return `result ${index} is not for ${c.id}`
    if (result.error?._tag === "ToolCancelled") {
      const wasStarted = (result.error as ToolError.ToolCancelled).started
      if (wasStarted !== (started === 1)) return `ToolCancelled.started=${wasStarted} but ${describe}`
      if (started === 1 && (mine.at(-1) as ToolEvent.ToolFailed).reason !== "cancelled") {
        return `cancelled result, other terminal event: ${describe}`
      }
    } else if (started === 0 && rejected === 0) {
      return `a result (${result.error?._tag ?? "ok"}) for a call that never started nor was rejected: ${describe}`
    } else if (started === 1) {
      const last = mine.at(-1)!
      if (last._tag === "tool.failed" && !result.isError) return `failed event, ok result: ${describe}`
      if (last._tag === "tool.completed" && result.isError !== last.isError) return `completed event disagrees: ${describe}`
    }
  }
  return undefined
}
