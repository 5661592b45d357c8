/** Tools, services and helpers shared by the middleware tests. */
import { Effect, Schema } from "effect"
import { TestClock } from "effect/testing"
import { EventSink, Executor, type Middleware, Tool, ToolRegistry, ToolServices } from "../../src/index.ts"
import type { ToolEvent } from "../../src/index.ts"
import { stack } from "../../src/governance/middleware/index.ts"

/** Counts handler runs by tool name. */
export const makeCounter = () => {
  const runs = new Map<string, Array<unknown>>()
  const record = (name: string, input: unknown) =>
    Effect.sync(() => void runs.set(name, [...(runs.get(name) ?? []), input]))
  return { runs, record, count: (name: string) => runs.get(name)?.length ?? 0 }
}

/** A fresh set of tools whose handlers report their inputs to `counter`. */
export const makeTools = (counter: ReturnType<typeof makeCounter>) => {
  const echo = Tool.make("echo", {
    description: "Echo text back. Read-only.",
    input: Schema.Struct({ text: Schema.String, token: Schema.optionalKey(Schema.String) }),
    output: Schema.Struct({ text: Schema.String }),
    safety: { access: "read", idempotent: true, tags: ["text"] },
    handler: (input) => Effect.as(counter.record("echo", input), { text: input.text })
  })
  const writeNote = Tool.make("write_note", {
    description: "Write a note under a key. Overwrites.",
    input: Schema.Struct({ key: Schema.String, text: Schema.String }),
    safety: { access: "write" },
    handler: (input) => Effect.as(counter.record("write_note", input), "saved")
  })
  const deleteAll = Tool.make("delete_all", {
    description: "Delete every note. Destructive.",
    input: Schema.Struct({}),
    safety: { access: "mutate" },
    handler: (input) => Effect.as(counter.record("delete_all", input), "deleted")
  })
  const crash = Tool.make("crash", {
    description: "Throws.",
    input: Schema.Struct({}),
    safety: { access: "read" },
    handler: () =>
      Effect.andThen(counter.record("crash", {}), Effect.sync(() => {
        throw new Error("boom")
      }))
  })
  const slow = Tool.make("slow", {
    description: "Sleeps `millis` then answers.",
    input: Schema.Struct({ millis: Schema.Int }),
    safety: { access: "read" },
    timeout: "1 minute",
    handler: (input) => Effect.as(Effect.andThen(counter.record("slow", input), Effect.sleep(input.millis)), "done")
  })
  return { echo, writeNote, deleteAll, crash, slow, all: [echo, writeNote, deleteAll, crash, slow] as const }
}

/** An executor over `tools` with `middleware` (first = outermost). */
export const executorOf = <const M extends ReadonlyArray<Middleware.Middleware<unknown>>>(
  tools: ReadonlyArray<Tool.Any>,
  middleware: M,
  options: Omit<Executor.Options, "middleware"> = {}
) => Effect.flatMap(ToolRegistry.make(tools), (registry) => Executor.make(registry, { ...options, middleware: stack(...middleware) }))

export const services = ToolServices.layerTest({ runId: "run-1", threadId: "thread-1" })

export const eventsOf = EventSink.EventLog.use((log) => log.all)
export const tagsOf = (events: ReadonlyArray<ToolEvent.Event>) => events.map((e) => e._tag)
export const call = (id: string, name: string, args: unknown = {}) => ({ id, name, arguments: args })

/** Advances the test clock in steps so sleeps registered along the way also fire. */
export const advance = (millis: number, step = 50) =>
  Effect.gen(function*() {
    for (let t = 0; t < millis; t += step) {
      yield* Effect.yieldNow
      yield* TestClock.adjust(step)
    }
    yield* Effect.yieldNow
  })

/** Layer names and statuses of a result's audit, outermost first. */
export const layersOf = (result: { readonly audit?: { readonly layers: ReadonlyArray<{ name: string; status: string }> } }) =>
  (result.audit?.layers ?? []).map((l) => `${l.name}:${l.status}`)
