import { afterAll, assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Layer, Scope, Stream } from "effect"
import { Approval } from "../../src/index.ts"
import { DurableAgent, Runner } from "../../src/durable/index.ts"
import * as Core from "./support/core.ts"

afterAll(Core.cleanup)

const user = (content: string) => [{ role: "user" as const, content }]
const sqliteRunner = (filename: string) =>
  Runner.layerSqlite({ filename, pollInterval: "50 millis", lockExpiration: "2 seconds", shutdownTimeout: "50 millis" })
const sqliteClient = (filename: string) => Runner.layerSqliteClient({ filename, pollInterval: "50 millis" })

/**
 * Three turns of one `read_value` call each under `limits.run.max: 2`; the third call waits for an
 * approval, so with `restart` the first process stops there and a second one finishes the run.
 */
const limitedRun = (name: string, restart: boolean) =>
  Effect.gen(function*() {
    const counters = Core.makeCounters()
    const agent = DurableAgent.make({
      name,
      tools: Core.makeTools(counters),
      pollInterval: "20 millis",
      limits: { run: { max: 2 } },
      approval: (call) => call.id === "2-0"
    })
    const filename = Core.tempFile(name)
    const waitForApproval = Effect.andThen(
      agent.start("r", user("plan: read_value;read_value;read_value")),
      Stream.runHead(Stream.filter(agent.events("r"), (e) => e._tag === "agent.approval_requested"))
    )
    if (restart) {
      const scope = yield* Scope.make()
      yield* Effect.provide(waitForApproval, yield* Layer.buildWithScope(Core.runner(agent, sqliteRunner(filename), counters), scope))
      yield* Scope.close(scope, Exit.void)
      yield* Effect.provide(agent.approve("r", "2-0", Approval.approve("alice")), sqliteClient(filename))
      const result = yield* Effect.provide(agent.result("r"), Core.runner(agent, sqliteRunner(filename), counters))
      return { result, counters }
    }
    const result = yield* Effect.provide(
      Effect.gen(function*() {
        yield* waitForApproval
        yield* agent.approve("r", "2-0", Approval.approve("alice"))
        return yield* agent.result("r")
      }),
      Core.runner(agent, sqliteRunner(filename), counters)
    )
    return { result, counters }
  })

describe("DurableAgent limits", () => {
  it.live("run-scoped limits hold across a restart: calls replayed from the journal still count", () =>
    Effect.gen(function*() {
      const once = yield* limitedRun("limits-once", false)
      const restarted = yield* limitedRun("limits-restart", true)
      for (const { counters, result } of [once, restarted]) {
        assert.deepStrictEqual(result.results.map((r) => r.error?._tag), [undefined, undefined, "ToolCallLimitExceeded"])
        assert.strictEqual(counters.get("read_value"), 2, "the third call was refused, not run")
      }
      const answers = (results: typeof once.result.results) => results.map((r) => [r.toolCallId, r.content])
      assert.deepStrictEqual(answers(restarted.result.results), answers(once.result.results))
    }), 30_000)
})
