/**
 * The demo scenario behind `npm start`: a sample workspace, the standard tools
 * plus a flaky exchange-rate service and a slow indexer that reports progress,
 * and a scripted model that exercises the runtime end to end (a parallel batch
 * of reads and indexing, an artifact, an invalid call repaired next turn, a
 * transient failure retried, `calc`, `write_file`, and a final answer), its
 * text streamed word by word. Also the event printer and the summary table, and the second part
 * (offline only, {@link review}): a reviewer agent with a state its tools update, a nested checker
 * agent as a tool, a tool that asks a question (answered by a rule), and a typed final answer.
 */
import { Effect, Layer, Result, Schema, Stream } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Agent, AgentState, Ask, ChatModel, EventSink, Executor, RunContext, Tool, ToolError, ToolProgress, ToolRegistry, ToolResult } from "../src/index.ts"
import type { ToolEvent } from "../src/index.ts"
import { calc, readFile, writeFile } from "../src/tools/index.ts"

/** Creates the sample workspace in a fresh temporary directory. */
export const makeWorkspace = (): string => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "tinyagents-demo-"))
  fs.mkdirSync(path.join(root, "data"))
  fs.mkdirSync(path.join(root, "logs"))
  fs.writeFileSync(
    path.join(root, "notes.md"),
    "# Q3 notes\n\nRevenue target: 1200 (thousand EUR).\nReport in USD using today's EUR→USD rate.\n"
  )
  fs.writeFileSync(
    path.join(root, "data", "sales.csv"),
    "month,revenue_keur\njuly,380\naugust,410\nseptember,455\n"
  )
  const log = Array.from({ length: 3000 }, (_, i) =>
    `2026-09-${String(1 + (i % 30)).padStart(2, "0")}T12:${String(i % 60).padStart(2, "0")}:00Z INFO request ${i} served in ${
      10 + (i * 7) % 90
    } ms`)
  fs.writeFileSync(path.join(root, "logs", "app.log"), `${log.join("\n")}\n`)
  return root
}

/** A rate service that fails transiently on its first attempt; idempotent, so the executor retries it. */
export const fetchRate = (() => {
  let attempts = 0
  return Tool.make("fetch_rate", {
    description: "Today's exchange rate between two currencies. Read-only. May fail transiently; safe to retry.",
    input: Schema.Struct({
      from: Schema.String.annotate({ description: "ISO currency code, e.g. EUR" }),
      to: Schema.String.annotate({ description: "ISO currency code, e.g. USD" })
    }),
    output: Schema.Struct({ rate: Schema.Number }),
    safety: { access: "network", idempotent: true, networked: true },
    retry: Executor.backoff({ base: "50 millis", maxAttempts: 3, jitter: false }),
    handler: ({ from, to }) =>
      Effect.gen(function*() {
        if (++attempts === 1) return yield* ToolError.retryable("rate service unavailable (HTTP 503)")
        if (from !== "EUR" || to !== "USD") {
          return yield* ToolError.repairable(`no rate for ${from}→${to}; supported: EUR→USD`)
        }
        return { rate: 1.08 }
      })
  })
})()

/** The documents `index_documents` goes through. */
export const documents = ["notes.md", "data/sales.csv", "logs/app.log", "report-template.md", "glossary.md"] as const

/**
 * A long-running tool: indexes the workspace's documents, 120 ms each (of `Clock` time), reporting
 * progress after each one. 120 ms is above the executor's rate bound (one `tool.progress` per 100 ms
 * per call), so every report is its own event and the demo prints the same lines on every run.
 */
export const indexDocuments = Tool.make("index_documents", {
  description: "Builds the search index of the workspace's documents. Read-only; takes a moment.",
  input: Schema.Struct({}),
  output: Schema.Struct({ indexed: Schema.Int }),
  safety: { access: "read", idempotent: true },
  services: [ToolProgress.ToolProgress],
  handler: () =>
    Effect.gen(function*() {
      for (const [i, document] of documents.entries()) {
        yield* Effect.sleep(120)
        yield* ToolProgress.report({ message: `indexed ${document}`, count: i + 1, total: documents.length })
      }
      return { indexed: documents.length }
    })
})

/** Every tool the demo agent may use. */
export const demoTools = [readFile, writeFile, calc, fetchRate, indexDocuments] as const

/**
 * `model`, its text streamed a word at a time, `delay` ms apart (of `Clock` time): how a real
 * model's answer arrives, for the offline demo.
 */
export const wordByWord = (model: Layer.Layer<ChatModel.ChatModel>, delay = 12): Layer.Layer<ChatModel.ChatModel> =>
  Layer.effect(
    ChatModel.ChatModel,
    Effect.map(ChatModel.ChatModel, (inner) =>
      ChatModel.make({
        generate: inner.generate,
        stream: (request) =>
          inner.stream(request).pipe(Stream.flatMap((part): Stream.Stream<ChatModel.StreamPart> =>
            part._tag === "TextDelta"
              ? Stream.fromIterable(part.text.split(/(?<= )/)).pipe(
                Stream.mapEffect((text) => Effect.as(Effect.sleep(delay), { _tag: "TextDelta" as const, text }))
              )
              : Stream.succeed(part)
          ))
      }))
  ).pipe(Layer.provide(model))

const lastResults = (request: ChatModel.Request): ReadonlyArray<ToolResult.ToolResult> => {
  const last = request.messages.at(-1)
  return last?.role === "tool" ? last.results : []
}

/** The scripted model: five turns that exercise the runtime, reading real tool results as it goes. */
export const script: ReadonlyArray<ChatModel.ScriptedTurn> = [
  ChatModel.callTools([
    ["call_read_notes", "read_file", { path: "notes.md" }],
    ["call_read_sales", "read_file", "{\"path\":\"data/sales.csv\"}"],
    ["call_read_log", "read_file", { path: "logs/app.log", limit: 3000 }],
    ["call_index", "index_documents", {}]
  ], "I'll read the notes, the sales data and the log, and index the documents."),
  ChatModel.callTools([
    ["call_total_bad", "calc", "{\"expr\":\"380 + 410 + 455\"}"],
    ["call_rate", "fetch_rate", { from: "EUR", to: "USD" }]
  ], "Summing the quarter and fetching the rate."),
  (request) => {
    const repaired = lastResults(request).find((r) => r.toolCallId === "call_total_bad")
    // The model reads the validation error and fixes its call.
    const hint = repaired?.isError === true ? "(fixed: the parameter is called expression)" : ""
    return ChatModel.callTools([["call_total", "calc", { expression: "(380 + 410 + 455) * 1.08" }]], hint)
  },
  (request) => {
    const total = lastResults(request)[0]?.value as { readonly result: number } | undefined
    const usd = total?.result.toFixed(1) ?? "?"
    return ChatModel.callTools([[
      "call_write",
      "write_file",
      { path: "report.md", content: `# Q3 report\n\nRevenue: 1245 kEUR = ${usd} kUSD (rate 1.08).\nTarget 1200 kEUR: met.\n` }
    ]], "Writing the report.")
  },
  ChatModel.answer("Q3 revenue was 1245 kEUR (1344.6 kUSD at 1.08), above the 1200 kEUR target. Report written to report.md.")
]

// ---------------------------------------------------------------------------
// the second part: a typed final answer, agent state, a nested agent
// ---------------------------------------------------------------------------

/** The reviewer's state: the facts its tools have established (updates apply in call order after each batch). */
export const Findings = AgentState.make({
  schema: Schema.Struct({ facts: Schema.Array(Schema.String) }),
  update: Schema.Struct({ fact: Schema.String }),
  initial: { facts: [] as ReadonlyArray<string> },
  reduce: (state, update) => ({ facts: [...state.facts, update.fact] })
})

/** Records a fact in the reviewer's state (it reads the state; it changes it only by an update). */
export const noteFact = Tool.make("note_fact", {
  description: "Records an established fact for the review.",
  input: Schema.Struct({ fact: Schema.String }),
  services: [AgentState.AgentState],
  handler: ({ fact }) =>
    Effect.gen(function*() {
      const { facts } = yield* Findings.get
      yield* Findings.update({ fact })
      return `noted (fact ${facts.length + 1})`
    })
})

/** A nested agent as a tool: a checker with its own model and `calc`, run inside the reviewer's call. */
export const checkFigures = Agent.asTool({
  system: "You check arithmetic with calc and answer in one line.",
  tools: Result.getOrThrow(ToolRegistry.makeResult([calc])),
  model: ChatModel.scripted([
    ChatModel.callTools([["check_sum", "calc", { expression: "380 + 410 + 455" }]]),
    (request) => {
      const sum = (lastResults(request)[0]?.value as { readonly result: number } | undefined)?.result
      return ChatModel.answer(`July to September sum to ${sum} kEUR: the figure is correct.`)
    }
  ])
}, {
  name: "check_figures",
  description: "Asks a checker agent to verify a figure.",
  input: Schema.Struct({ task: Schema.String })
})

/** A tool that asks: which quarter the review covers (a typed question, answered here by a rule). */
export const confirmScope = Tool.make("confirm_scope", {
  description: "Confirms with the reviewer's owner which quarter the review covers.",
  input: Schema.Struct({ report: Schema.String }),
  failure: Ask.NotAnswered,
  services: [Ask.Ask],
  handler: ({ report }) =>
    Effect.map(
      Ask.question({
        message: `Which quarter does ${report} cover?`,
        answer: Schema.Struct({ quarter: Schema.Literals(["Q2", "Q3"]) }),
        choices: [{ quarter: "Q2" }, { quarter: "Q3" }]
      }),
      ({ quarter }) => `scope confirmed: ${quarter}`
    )
})

/** Who answers the demo's questions: a rule (a person at a terminal would use `TerminalAsk.layer`). */
export const answerer = Ask.layerRules([
  { name: "finance-policy", match: (request) => request.toolName === "confirm_scope", reply: { answer: { quarter: "Q3" } } }
])

/** The reviewer's typed final answer. */
export const Verdict = Schema.Struct({ revenueKeur: Schema.Int, targetMet: Schema.Boolean, facts: Schema.Array(Schema.String) })

/** The reviewer's scripted model: a fact and a check in one batch, then the typed answer (the final-answer tool). */
export const reviewScript: ReadonlyArray<ChatModel.ScriptedTurn> = [
  ChatModel.callTools([
    ["call_fact", "note_fact", { fact: "Q3 revenue 1245 kEUR, target 1200 kEUR" }],
    ["call_check", "check_figures", { task: "Check that 380 + 410 + 455 kEUR is 1245 kEUR." }],
    ["call_scope", "confirm_scope", { report: "report.md" }]
  ]),
  (request) => {
    const checked = lastResults(request).find((r) => r.toolCallId === "call_check")
    return ChatModel.callTools([["call_verdict", "final_answer", {
      revenueKeur: 1245,
      targetMet: true,
      facts: [checked === undefined ? "unchecked" : ToolResult.textOf(checked)]
    }]])
  }
]

/**
 * The demo's second part: the reviewer agent (scripted) with its state, its nested checker and its
 * typed answer. Prints its events (a nested run's indented by its depth), the answer and the state.
 */
export const review = Effect.gen(function*() {
  const tools = yield* ToolRegistry.make([noteFact, checkFigures, confirmScope])
  let start: number | undefined
  // printed here, and handed on to the demo's own sink (which records them for `tinyagents inspect`)
  const outer = yield* EventSink.EventSink
  const print = EventSink.EventSink.of({
    emit: (event) =>
      Effect.andThen(
        Effect.sync(() => {
          start ??= event.timestamp
          console.log(formatEvent(event, start).replace(/^(\n?)/, `$1${"    ".repeat(event.depth ?? 0)}`))
        }),
        outer.emit(event)
      )
  })
  const result = yield* Agent.run({
    name: "reviewer",
    system: (findings) => `You review the Q3 report. Established so far: ${findings.facts.join("; ") || "nothing"}.`,
    messages: [{ role: "user", content: "Review the Q3 figures and give a verdict." }],
    tools,
    state: Findings,
    output: Verdict
  }).pipe(
    Effect.provide([
      ChatModel.scripted(reviewScript),
      answerer,
      RunContext.RunContext.layer({ threadId: "demo-thread", runId: "demo-review", turn: 0 })
    ]),
    Effect.provideService(EventSink.EventSink, print)
  )
  console.log(`\nTyped answer: ${JSON.stringify(result.output)}`)
  console.log(`State: ${JSON.stringify(result.state)}`)
})

const pad = (s: string, n: number) => s.length >= n ? s : s + " ".repeat(n - s.length)

/** A progress event in words: `12/40 (30%) indexing a.md`. */
export const progressText = (event: ToolEvent.ToolProgress): string =>
  [
    event.count === undefined ? undefined : event.total === undefined ? `${event.count}` : `${event.count}/${event.total}`,
    event.fraction === undefined ? undefined : `(${Math.round(event.fraction * 100)}%)`,
    event.message
  ].filter((part) => part !== undefined).join(" ")

/** The time of `event` since `start`, as the event lines show it. */
export const elapsedOf = (event: ToolEvent.Event, start: number): string => `+${String(event.timestamp - start).padStart(5)}ms`

/** One line per event, with the time since `start`. */
export const formatEvent = (event: ToolEvent.Event, start: number): string => {
  const at = elapsedOf(event, start)
  switch (event._tag) {
    case "agent.turn_started":
      return `\n${at}  ── turn ${event.turn} (advertised: ${event.advertised.join(", ")})`
    case "agent.model_responded":
      return `${at}  model: ${event.text === "" ? "" : JSON.stringify(event.text) + " "}${
        event.toolCalls === 0 ? "(final answer)" : `→ ${event.toolCalls} tool call(s)`
      }`
    case "agent.finished":
      return `${at}  ── finished: ${event.reason} after ${event.turns} turn(s)`
    case "agent.text_delta":
      return `${at}  model text: ${JSON.stringify(event.text)}`
    case "agent.output_delta":
      return `${at}  output so far: ${JSON.stringify(event.partial)}`
    case "agent.output":
      return `${at}  output: ${JSON.stringify(event.output)}`
    case "agent.tool_call":
      return `${at}  model calls ${event.toolName} ${event.toolCallId}`
    case "agent.approval_requested":
      return `${at}  approval needed for ${event.toolName} ${event.toolCallId}`
    case "agent.state":
      return event.refused === undefined
        ? `${at}  state after ${event.toolName} ${event.toolCallId}: ${JSON.stringify(event.state)}`
        : `${at}  state update of ${event.toolName} ${event.toolCallId} refused: ${event.refused}`
    case "agent.handoff":
      return `${at}  ${event.toolName} ${event.toolCallId} hands over to ${event.target}: ${event.task}`
    case "agent.tools_revealed":
      return `${at}  ${event.toolName} ${event.toolCallId} revealed ${event.names.join(", ")} for ${JSON.stringify(event.query)}`
    case "tool.started":
      return `${at}    ${pad("started", 9)} ${pad(event.toolName, 10)} ${event.toolCallId} ${JSON.stringify(event.arguments)}`
    case "tool.completed":
      return `${at}    ${pad("completed", 9)} ${pad(event.toolName, 10)} ${event.toolCallId} in ${event.elapsed} ms${
        event.artifacts.length > 0 ? ` (artifact ${event.artifacts[0]!.key}, ${event.artifacts[0]!.bytes} bytes)` : ""
      }`
    case "tool.failed":
      return `${at}    ${pad("failed", 9)} ${pad(event.toolName, 10)} ${event.toolCallId} [${event.disposition}] ${event.error.message}`
    case "tool.rejected":
      return `${at}    ${pad("rejected", 9)} ${pad(event.toolName, 10)} ${event.toolCallId} [${event.error.disposition}] ${event.error.message}`
    case "tool.retrying":
      return `${at}    ${pad("retrying", 9)} ${pad(event.toolName, 10)} ${event.toolCallId} attempt ${event.attempt} in ${event.delay} ms (${event.error.message})`
    case "tool.progress":
      return `${at}    ${pad("progress", 9)} ${pad(event.toolName, 10)} ${event.toolCallId} ${progressText(event)}`
    case "tool.question":
      return `${at}    ${pad("question", 9)} ${pad(event.toolName, 10)} ${event.toolCallId} ${JSON.stringify(event.message)}`
    case "tool.answered":
      return `${at}    ${pad("answered", 9)} ${pad(event.toolName, 10)} ${event.toolCallId} ${event.outcome}${
        event.answer === undefined ? "" : ` ${JSON.stringify(event.answer)}`
      }${event.answeredBy === undefined ? "" : ` by ${event.answeredBy}`}${event.reason === undefined ? "" : ` (${event.reason})`}`
    case "tool.artifact_stored":
      return `${at}    ${pad("artifact", 9)} ${pad(event.toolName, 10)} ${event.toolCallId} stored as ${event.artifact.store}/${event.artifact.key}`
    case "tool.audit":
      return `${at}    ${pad("audit", 9)} ${pad(event.toolName, 10)} ${event.toolCallId} ${
        event.audit.layers.map((l) => `${l.name}:${l.status}`).join(" ")
      }${event.audit.summary === undefined ? "" : ` — ${event.audit.summary}`}`
  }
}

/** The run's numbers, computed from its events. */
export interface Summary {
  readonly calls: number
  readonly completed: number
  readonly failures: { readonly repair: number; readonly retry: number; readonly fatal: number }
  readonly retries: number
  readonly artifacts: number
  readonly turns: number
  readonly elapsed: number
}

export const summarize = (events: ReadonlyArray<ToolEvent.Event>): Summary => {
  const count = (tag: ToolEvent.Event["_tag"]) => events.filter((e) => e._tag === tag).length
  const failures = { repair: 0, retry: 0, fatal: 0 }
  for (const e of events) {
    if (e._tag === "tool.failed") failures[e.disposition]++
    if (e._tag === "tool.rejected") failures[e.error.disposition]++
  }
  const finished = events.find((e): e is ToolEvent.AgentFinished => e._tag === "agent.finished")
  return {
    calls: count("tool.started") + count("tool.rejected"),
    completed: count("tool.completed"),
    failures,
    retries: count("tool.retrying"),
    artifacts: count("tool.artifact_stored"),
    turns: finished?.turns ?? 0,
    elapsed: events.length === 0 ? 0 : events.at(-1)!.timestamp - events[0]!.timestamp
  }
}

/** The summary as the table `npm start` prints. */
export const formatSummary = (summary: Summary): string =>
  [
    "┌──────────────────────────┬─────────┐",
    ...([
      ["tool calls", summary.calls],
      ["completed", summary.completed],
      ["failed: repairable", summary.failures.repair],
      ["failed: retryable", summary.failures.retry],
      ["failed: fatal", summary.failures.fatal],
      ["retries", summary.retries],
      ["artifacts", summary.artifacts],
      ["turns", summary.turns],
      ["elapsed (ms)", summary.elapsed]
    ] as const).map(([label, value]) => `│ ${pad(label, 24)} │ ${String(value).padStart(7)} │`),
    "└──────────────────────────┴─────────┘"
  ].join("\n")
