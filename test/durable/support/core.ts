/**
 * Shared pieces of the durable agent's in-process tests: a model whose answer is a function of the
 * transcript (a restarted engine cannot rely on a script index), tools of each idempotency class
 * that count their real applications, and the layers that run a `DurableAgent` on the in-memory
 * engine or on a SQLite single runner.
 */
import { Effect, Layer, Schema } from "effect"
import { rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { ChatModel, RunContext, Tool, ToolRegistry } from "../../../src/index.ts"
import type { DurableAgent } from "../../../src/durable/index.ts"
import { Runner } from "../../../src/durable/index.ts"
import * as Stores from "../../../src/stores/Stores.ts"

/** Real applications per tool and model turns answered, by name; reset per test. */
export const makeCounters = () => {
  const counts = new Map<string, number>()
  return {
    counts,
    bump: (name: string) => counts.set(name, (counts.get(name) ?? 0) + 1),
    get: (name: string) => counts.get(name) ?? 0
  }
}
export type Counters = ReturnType<typeof makeCounters>

/** Hooks a test sets to make a tool wait (e.g. to interrupt the runner mid-call). */
export interface Hooks {
  /** Runs inside each tool's handler after its application is counted (with the tool's name). */
  afterApply?: ((tool: string) => Effect.Effect<void>) | undefined
}

/**
 * `read_value` (idempotent), `keyed_write` (idempotency key `id`), `keyed_read` (idempotent and keyed
 * by `id`), `plain_write` (neither), `crash`
 * (dies: fatal), `whoami` (answers the run's `RunContext`: `runId|threadId|turn|user`).
 */
export const makeTools = (counters: Counters, hooks: Hooks = {}) => {
  const after = (tool: string) => Effect.suspend(() => hooks.afterApply?.(tool) ?? Effect.void)
  const readValue = Tool.make("read_value", {
    description: "Reads a value.",
    input: Schema.Struct({ name: Schema.String }),
    safety: { access: "read", idempotent: true },
    handler: ({ name }) => Effect.andThen(Effect.sync(() => counters.bump("read_value")), Effect.as(after("read_value"), `value of ${name}`))
  })
  const keyedWrite = Tool.make("keyed_write", {
    description: "Writes once per id.",
    input: Schema.Struct({ id: Schema.String }),
    safety: { access: "mutate" },
    idempotency: ({ id }) => id,
    handler: ({ id }) => Effect.andThen(Effect.sync(() => counters.bump(`keyed_write:${id}`)), Effect.as(after("keyed_write"), `wrote ${id}`))
  })
  const keyedRead = Tool.make("keyed_read", {
    description: "Reads once per id, idempotently.",
    input: Schema.Struct({ id: Schema.String }),
    safety: { access: "read", idempotent: true },
    idempotency: ({ id }) => id,
    handler: ({ id }) => Effect.andThen(Effect.sync(() => counters.bump(`keyed_read:${id}`)), Effect.as(after("keyed_read"), `read ${id}`))
  })
  const plainWrite = Tool.make("plain_write", {
    description: "Appends a line.",
    input: Schema.Struct({ line: Schema.String }),
    safety: { access: "mutate" },
    handler: ({ line }) => Effect.andThen(Effect.sync(() => counters.bump(`plain_write:${line}`)), Effect.as(after("plain_write"), `appended ${line}`))
  })
  const crash = Tool.make("crash", {
    description: "Dies.",
    input: Schema.Struct({ line: Schema.String }),
    safety: { access: "read", idempotent: true },
    handler: () => Effect.andThen(Effect.sync(() => counters.bump("crash")), Effect.die(new Error("disk on fire")))
  })
  const whoami = Tool.make("whoami", {
    description: "Reports the run's context.",
    input: Schema.Struct({}),
    services: [RunContext.RunContext],
    safety: { access: "read", idempotent: true },
    handler: () =>
      Effect.map(RunContext.RunContext, (info) => `${info.runId}|${info.threadId}|${info.turn}|${JSON.stringify(info.user ?? null)}`)
  })
  const result = ToolRegistry.makeResult([readValue, keyedWrite, keyedRead, plainWrite, crash, whoami])
  if (result._tag === "Failure") throw result.failure
  return result.success
}

/** How many tool-results messages the transcript holds: the turn the model is asked for. */
const toolTurns = (request: ChatModel.Request) => request.messages.filter((m) => m.role === "tool").length

/**
 * The model: the user message names the plan, e.g. `"plan: plain_write,keyed_write;read_value"` (turns
 * separated by `;`, calls by `,`); each turn calls its tools (ids `<turn>-<i>`; `tool@id=arg` sets the
 * call's id and its argument: `read_value` name, `keyed_write` and `keyed_read` id, `plain_write` line), then it answers
 * `done: <the last tool results' texts>`. Counts its answers under `model`.
 */
export const model = (counters: Counters): Layer.Layer<ChatModel.ChatModel> =>
  ChatModel.fromFunction((request) => {
    // counted synchronously, when the function is called: a durable run must call it only inside its turn's activity
    counters.bump("model")
    return Effect.suspend(() => {
      const user = request.messages.find((m) => m.role === "user")
      if (user?.role === "user" && user.content === "model fails") {
        return Effect.fail(new ChatModel.ChatModelError({ reason: "http", message: "no model today", status: 503, retryable: true }))
      }
      return Effect.succeed(answerFor(request))
    })
  })

const answerFor = (request: ChatModel.Request): ChatModel.Response => {
  {
    {
      const user = request.messages.find((m) => m.role === "user")
      const plan = (user?.role === "user" ? user.content : "").replace(/^plan: ?/, "").split(";").filter((t) => t !== "")
      const turn = toolTurns(request)
      const step = plan[turn]
      if (step === undefined) {
        const last = request.messages.findLast((m) => m.role === "tool")
        const texts = last?.role === "tool"
          ? last.results.map((r) => r.content.map((b) => (b.type === "text" ? b.text : "")).join("")).join(" | ")
          : ""
        return ChatModel.answer(`done: ${texts}`)
      }
      return ChatModel.callTools(step.split(",").map((item, i) => {
        const [head = "", arg] = item.split("=")
        const [tool = "", explicitId] = head.split("@")
        const id = explicitId ?? `${turn}-${i}`
        const args = tool === "read_value"
          ? { name: arg ?? id }
          : tool === "keyed_write" || tool === "keyed_read"
          ? { id: arg ?? `k${turn}` }
          : tool === "whoami"
          ? {}
          : { line: arg ?? id }
        return [id, tool, args] as const
      }))
    }
  }
}

/** The engine in memory (plus an in-memory SQLite for the event journal). */
export const memoryEngine = (): Layer.Layer<Runner.Services> => Layer.fresh(Runner.layerMemory)

/** The agent registered on `engine`, with the model, the tools and stores (`stores`: shared across restarts). */
export const runner = <R, MR>(
  agent: DurableAgent.DurableAgent<R, MR>,
  engine: Layer.Layer<Runner.Services>,
  counters: Counters,
  stores: Layer.Layer<Stores.Services> = Stores.layerMemory
) =>
  agent.layer.pipe(
    Layer.provide([model(counters), stores]),
    Layer.provideMerge(engine)
  ) as Layer.Layer<Runner.Services>

const created: Array<string> = []

/** Removes the files {@link tempFile} named (call it in `afterAll`). */
export const cleanup = () => {
  for (const file of created.splice(0)) {
    for (const suffix of ["", "-wal", "-shm", ".stores", ".stores-wal", ".stores-shm"]) rmSync(file + suffix, { force: true })
  }
}

/** A fresh temporary SQLite file name (removed by {@link cleanup}, with its WAL files and `<file>.stores`). */
export const tempFile = (name: string) => {
  const file = join(tmpdir(), `tinyagents-durable-core-${name}-${process.pid}-${Date.now()}-${Math.random().toString(36).slice(2)}.db`)
  created.push(file)
  return file
}

export { Runner }
