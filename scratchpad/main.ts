/**
 * `npm start`: the demo agent. Offline and with no keys, a scripted model drives
 * the real runtime over a sample workspace; the tool lifecycle prints live, then
 * a summary table. `npm start -- --live` runs the same agent against OpenAI or
 * Anthropic when `OPENAI_API_KEY` or `ANTHROPIC_API_KEY` is set.
 */
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { Effect, Layer } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { Agent, Approval, ChatModel, EventSink, middleware, RunContext, StoreRegistry, ToolRegistry } from "../src/index.ts"
import { AnthropicModel, OpenAiChatModel } from "../src/models/index.ts"
import type { ToolEvent } from "../src/index.ts"
import { Workspace } from "../src/tools/index.ts"
import { demoTools, formatEvent, formatSummary, makeWorkspace, script, summarize } from "./demo.ts"

const live = process.argv.includes("--live")
const root = makeWorkspace()
const events: Array<ToolEvent.Event> = []
let start: number | undefined
const printer = EventSink.EventSink.layerCallback((event) => {
  start ??= event.timestamp
  events.push(event)
  console.log(formatEvent(event, start))
})

/** The real provider for `--live`: OpenAI-compatible when `OPENAI_API_KEY` is set, else Anthropic. */
const liveModel = (): Layer.Layer<ChatModel.ChatModel, unknown> => {
  const http = NodeHttpClient.layerUndici
  if (process.env["OPENAI_API_KEY"] !== undefined) {
    return OpenAiChatModel.layerConfig({ model: "gpt-4o-mini" }).pipe(Layer.provide(http))
  }
  if (process.env["ANTHROPIC_API_KEY"] !== undefined) {
    return AnthropicModel.layerConfig({ model: "claude-sonnet-4-5" }).pipe(Layer.provide(http))
  }
  console.error("--live needs OPENAI_API_KEY or ANTHROPIC_API_KEY (model overridable with OPENAI_MODEL / ANTHROPIC_MODEL).")
  return process.exit(2)
}

const model: Layer.Layer<ChatModel.ChatModel, unknown> = live ? liveModel() : ChatModel.scripted(script)

const receipts = path.join(root, ".receipts")

/**
 * Governance: every call gets a hashed audit receipt (JSONL, one file per run);
 * tools that write or mutate ask for consent first. At a terminal you answer the
 * prompt; without one (CI) the approver approves automatically and says so.
 */
const governance = middleware.stack(
  middleware.auditLog(middleware.AuditLog.jsonl(receipts), { redact: ["content"] }),
  middleware.consent({ when: (inv) => inv.spec.safety.effect === "write" || inv.spec.safety.effect === "mutate" })
)

const program = Effect.gen(function*() {
  console.log(`tinyagents demo: ${live ? "live model" : "scripted model (offline)"}; workspace ${root}`)
  const tools = yield* ToolRegistry.make(demoTools)
  const result = yield* Agent.run({
    system: "You are a careful analyst. Use the tools; answer in one sentence.",
    messages: [{ role: "user", content: "Summarise Q3 revenue against the target in USD and write report.md." }],
    tools,
    concurrency: 4,
    maxTurns: 8,
    middleware: governance
  })
  console.log(`\nAnswer: ${result.text}`)
  const report = path.join(root, "report.md")
  if (fs.existsSync(report)) console.log(`\nreport.md (${fs.statSync(report).size} bytes):\n${fs.readFileSync(report, "utf8")}`)
  const receiptFile = middleware.AuditLog.receiptPath(receipts, "demo-run")
  const lines = fs.readFileSync(receiptFile, "utf8").trim().split("\n")
  console.log(`audit log: ${lines.length} receipts in ${path.basename(receiptFile)}; the last one:\n${lines.at(-1)}\n`)
  console.log(formatSummary(summarize(events)))
}).pipe(
  Effect.provide(Layer.mergeAll(
    model,
    printer,
    RunContext.RunContext.layer({ threadId: "demo-thread", runId: "demo-run", turn: 0 }),
    StoreRegistry.StoreRegistry.layerMemory,
    Workspace.Workspace.layer(root),
    Approval.Approval.layerTerminal({ fallback: "approve", output: process.stdout }),
    NodeFileSystem.layer
  ))
)

Effect.runPromise(program).then(
  () => fs.rmSync(root, { recursive: true, force: true }),
  (error) => {
    console.error(error instanceof Error ? error.message : error)
    process.exitCode = 1
  }
)
