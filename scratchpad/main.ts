/**
 * `npm start`: the demo agent. Offline and with no keys, a scripted model drives
 * the real runtime over a sample workspace. The run is read as a stream
 * (`Agent.stream`): the model's text prints as it arrives, the tool lifecycle
 * prints live, and a long-running tool's progress is one line rewritten in
 * place at a terminal (a plain line per update otherwise, as in CI); then a
 * summary table. Offline, a second scripted run follows: a typed final answer, an agent state
 * update and a nested agent (`Agent.asTool`). `npm start -- --live` runs the same agent against a real model:
 * OpenAI (or any OpenAI-compatible server) when `OPENAI_API_KEY` is set, else
 * Anthropic when `ANTHROPIC_API_KEY` is set. Configuration is read with `Config`
 * through the adapters' `layerConfig`: `OPENAI_MODEL` (default gpt-4o-mini),
 * `OPENAI_BASE_URL`, `ANTHROPIC_MODEL` (default claude-sonnet-4-5),
 * `ANTHROPIC_BASE_URL` (with or without `/v1`).
 *
 * Every run ends with the summary table or one `tinyagents demo: ...` line on
 * stderr. Exit codes: 0 the run finished (even when every tool call failed:
 * the model sees those failures and answers anyway), 1 the run failed (the
 * model could not be reached or answered with an error, after retries), 2 the
 * configuration is missing or invalid (no key for `--live`, a bad base URL).
 */
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Cause, Effect, Layer, Logger, References, Result, Stream } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Agent, ChatModel, EventSink, middleware, RunContext, StoreRegistry, ToolRegistry } from "../src/index.ts"
import { TerminalApproval } from "../src/governance/middleware/index.ts"
import { AnthropicModel, ModelConfigError, OpenAiChatModel } from "../src/agent/models/index.ts"
import { ToolEvent } from "../src/index.ts"
import { Workspace } from "../src/tools/index.ts"
import { demoTools, review, elapsedOf, formatEvent, formatSummary, makeWorkspace, script, summarize, wordByWord } from "./demo.ts"

const live = process.argv.includes("--live")
const root = makeWorkspace()
/** Every event of the run (the sink's copy), for the summary. */
const events: Array<ToolEvent.Event> = []
/**
 * The run's events are also recorded as JSON lines (what `EventSink.layerJsonl` writes), for
 * `tinyagents inspect` (the command is printed at the end); `TINYAGENTS_DEMO_EVENTS` names the file.
 */
const eventsFile = process.env["TINYAGENTS_DEMO_EVENTS"] ?? path.join(os.tmpdir(), `tinyagents-demo-${process.pid}.jsonl`)
fs.writeFileSync(eventsFile, "")
const collector = EventSink.EventSink.layerCallback((event) => {
  events.push(event)
  return Effect.map(ToolEvent.encodeJson(event), (line) => fs.appendFileSync(eventsFile, `${line}\n`))
})

/**
 * Prints the streamed events. A line may be left open: the model's text (until its answer is
 * complete) or, at a terminal, a progress line (rewritten in place by the next update); any other
 * line closes it first.
 *
 * The stream's consumer may lag a few events behind the loop, so what the approval middleware
 * writes goes through `approvals`: it is printed once every event before it has been.
 */
const makePrinter = () => {
  const tty = process.stdout.isTTY === true
  let start: number | undefined
  let open: "text" | "progress" | undefined
  let printed = 0
  const held: Array<string> = []
  const close = () => {
    if (open !== undefined) process.stdout.write("\n")
    open = undefined
  }
  const release = () => {
    if (printed < events.length || held.length === 0) return
    close()
    for (const text of held.splice(0)) process.stdout.write(text)
  }
  const approvals = {
    write: (text: string) => {
      held.push(text)
      release()
      return true
    }
  } as unknown as NodeJS.WritableStream
  const print = (event: ToolEvent.Event): Effect.Effect<void> =>
    Effect.sync(() => {
      show(event)
      printed++
      release()
    })
  const show = (event: ToolEvent.Event): void => {
    start ??= event.timestamp
    switch (event._tag) {
      case "agent.text_delta":
        if (open !== "text") {
          close()
          process.stdout.write(`${elapsedOf(event, start)}  model: `)
          open = "text"
        }
        process.stdout.write(event.text)
        return
      case "agent.tool_call":
        return
      case "agent.model_responded":
        if (open === "text") {
          process.stdout.write(event.toolCalls === 0 ? " (final answer)\n" : ` → ${event.toolCalls} tool call(s)\n`)
          open = undefined
          return
        }
        break
      case "tool.progress":
        if (tty) {
          if (open !== "progress") close()
          process.stdout.write(`\r\x1b[2K${formatEvent(event, start)}`)
          open = "progress"
          return
        }
        break
    }
    close()
    console.log(formatEvent(event, start))
  }
  return { print, approvals }
}
const printer = makePrinter()

/** Log lines (the adapters warn on each failed model request) as one indented line each, between the events. */
const logLine = Logger.make(({ fiber, logLevel, message }) => {
  const error = fiber.getRef(References.CurrentLogAnnotations)["error"]
  const text = (Array.isArray(message) ? message : [message]).map(String).join(" ")
  console.log(`           ${logLevel === "Warn" ? "warning" : logLevel.toLowerCase()}: ${text}${typeof error === "string" ? ` (${error})` : ""}`)
})

const isMissing = (error: ModelConfigError, variable: string) => error.problem === "missing" && error.variable === variable
const failWith = (error: ModelConfigError) => Layer.effect(ChatModel.ChatModel, Effect.fail(error))

/**
 * The real provider for `--live`: OpenAI-compatible when `OPENAI_API_KEY` is
 * set, else Anthropic when `ANTHROPIC_API_KEY` is; neither is one error naming both.
 */
const liveModel: Layer.Layer<ChatModel.ChatModel, ModelConfigError> = OpenAiChatModel.layerConfig({ model: "gpt-4o-mini" })
  .pipe(
    Layer.catchTag("ModelConfigError", (error) =>
      isMissing(error, "OPENAI_API_KEY")
        ? AnthropicModel.layerConfig({ model: "claude-sonnet-4-5" }).pipe(
          Layer.catchTag("ModelConfigError", (error) =>
            failWith(
              isMissing(error, "ANTHROPIC_API_KEY")
                ? new ModelConfigError({
                  provider: "demo",
                  variable: "OPENAI_API_KEY",
                  problem: "missing",
                  message:
                    `--live needs OPENAI_API_KEY (OpenAI or a compatible server) or ANTHROPIC_API_KEY; neither is set (see README "Environment variables")`
                })
                : error
            ))
        )
        : failWith(error)),
    Layer.provide(NodeHttpClient.layerUndici)
  )

const model: Layer.Layer<ChatModel.ChatModel, ModelConfigError> = live ? liveModel : wordByWord(ChatModel.scripted(script))

const receipts = path.join(root, ".receipts")

/**
 * Governance: every call gets a hashed audit receipt (JSONL, one file per run);
 * tools that write or mutate ask for consent first. At a terminal you answer the
 * prompt; without one (CI) the approver approves automatically and says so.
 */
const governance = middleware.stack(
  middleware.auditLog(middleware.AuditLog.jsonl(receipts), { redact: ["content"] }),
  middleware.consent({ when: (inv) => inv.spec.safety.access === "write" || inv.spec.safety.access === "mutate" })
)

const program = Effect.gen(function*() {
  console.log(`tinyagents demo: ${live ? "live model" : "scripted model (offline)"}; workspace ${root}`)
  const tools = yield* ToolRegistry.make(demoTools)
  let finished: ToolEvent.AgentFinished | undefined
  const run = yield* Effect.result(
    Agent.stream({
      system: "You are a careful analyst. Use the tools; answer in one sentence.",
      messages: [{ role: "user", content: "Summarise Q3 revenue against the target in USD and write report.md." }],
      tools,
      concurrency: 4,
      maxTurns: 8,
      middleware: governance
    }).pipe(
      Stream.tap((event) => Effect.sync(() => event._tag === "agent.finished" && (finished = event))),
      Stream.runForEach(printer.print)
    )
  )
  if (Result.isSuccess(run) && finished !== undefined) {
    const { reason, text, turns } = finished
    console.log(`\nAnswer: ${text === "" ? `(none: the run stopped with ${reason} after ${turns} turn(s))` : text}`)
  } else if (Result.isFailure(run)) {
    console.log(`\nNo answer: the run failed (${run.failure.reason} error; see stderr)`)
  }
  const report = path.join(root, "report.md")
  if (fs.existsSync(report)) console.log(`\nreport.md (${fs.statSync(report).size} bytes):\n${fs.readFileSync(report, "utf8")}`)
  const receiptFile = middleware.AuditLog.receiptPath(receipts, "demo-run")
  const lines = fs.existsSync(receiptFile) ? fs.readFileSync(receiptFile, "utf8").trim().split("\n") : []
  console.log(
    lines.length === 0
      ? "audit log: no receipts (no tool call ran)\n"
      : `audit log: ${lines.length} receipts in ${path.basename(receiptFile)}; the last one:\n${lines.at(-1)}\n`
  )
  console.log(formatSummary(summarize(events)))
  if (Result.isFailure(run)) return yield* run.failure
  if (!live) {
    console.log("\n── part 2: a typed final answer, agent state, a nested agent and a tool that asks (scripted)")
    yield* review
  }
  console.log(`\nSee the runs in a browser: npm run tinyagents -- inspect ${eventsFile}`)
})

/** Ends with one line on stderr and the documented exit code on every failure (never a stack trace). */
const reportFailure = (message: string, code: number) =>
  Effect.sync(() => {
    console.error(`tinyagents demo: ${message.replace(/\s*\n\s*/g, " ")}`)
    process.exitCode = code
  })

program.pipe(
  Effect.provide(Layer.mergeAll(
    model,
    collector,
    RunContext.RunContext.layer({ threadId: "demo-thread", runId: "demo-run", turn: 0 }),
    StoreRegistry.StoreRegistry.layerMemory,
    Workspace.Workspace.layer(root),
    TerminalApproval.layer({ fallback: "approve", output: printer.approvals }),
    NodeFileSystem.layer,
    Logger.layer([logLine])
  )),
  Effect.catchTag("ModelConfigError", (error) => reportFailure(error.message, 2)),
  Effect.catch((error) => reportFailure(error.message, 1)),
  Effect.catchDefect((defect) => reportFailure(`unexpected failure: ${Cause.pretty(Cause.die(defect)).split("\n")[0]}`, 1)),
  Effect.ensuring(Effect.sync(() => fs.rmSync(root, { recursive: true, force: true }))),
  NodeRuntime.runMain({ disableErrorReporting: true })
)
