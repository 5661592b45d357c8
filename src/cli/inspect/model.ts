/**
 * The inspector's run model: what a source holds (decoded events, audit receipts, and the lines that
 * would not decode) folded into runs, each with its turns, its tool calls (their state, timing,
 * arguments, result, repair message, receipt) and the runs nested in it. Pure and synchronous: the
 * readers (`sources.ts`) decode, this only arranges, and the pages (`html.ts`) only draw.
 */
import type * as ToolEvent from "../../contract/ToolEvent.ts"
import type { ReceiptSchema } from "./sources.ts"

/** One receipt of an audit database (`SqlAudit`), decoded: the fields the inspector shows (`Sources.ReceiptSchema`). */
export type Receipt = typeof ReceiptSchema.Type

/** What a source holds, in its order: an event, a receipt, or a line (or row) that is neither. */
export type Entry =
  | { readonly _tag: "Event"; readonly line: number; readonly event: ToolEvent.Event }
  | { readonly _tag: "Receipt"; readonly line: number; readonly receipt: Receipt }
  | { readonly _tag: "Unreadable"; readonly line: number; readonly text: string; readonly reason: string }

/** Where a call is: not started yet, waiting for a person, running (with retries or progress), or ended. */
export type CallState =
  | "queued"
  | "awaiting_approval"
  | "awaiting_answer"
  | "running"
  | "retrying"
  | "progress"
  | "completed"
  | "error"
  | "failed"
  | "rejected"

/** States after which nothing more happens to a call. */
export const terminal: ReadonlySet<CallState> = new Set(["completed", "error", "failed", "rejected"])

export interface Progress {
  readonly message?: string | undefined
  readonly fraction?: number | undefined
  readonly count?: number | undefined
  readonly total?: number | undefined
  readonly chunks: string
  readonly reports: number
}

export interface Retry {
  readonly attempt: number
  readonly delay: number
  readonly message: string
}

/** A question a call asked: its number, message and choices (redacted, as the events carry them), and its end. */
export interface Question {
  readonly number: number
  readonly message: string
  readonly choices?: ReadonlyArray<unknown>
  outcome?: "answered" | "declined" | "unanswerable"
  answer?: unknown
  reason?: string
  answeredBy?: string
  elapsed?: number
}

/** One tool call of a run, as far as its events tell. */
export interface Call {
  /** Unique in the run (`<turn>/<call id>`): a call id may come back in a later turn. */
  readonly key: string
  readonly id: string
  readonly toolName: string
  readonly turn: number
  /** Position in the run, from 0, in the order calls first appeared. */
  readonly index: number
  state: CallState
  attempt: number
  /** As the model sent them (`agent.tool_call`), redacted. */
  modelArguments?: unknown
  /** Decoded (`tool.started`), redacted. */
  arguments?: unknown
  /** What the model reads (`tool.completed.output`), redacted. */
  output?: string
  /** The error's message: for a refusal or a repairable failure, what the model reads to repair the call. */
  errorMessage?: string
  errorTag?: string
  disposition?: string
  reason?: string
  firstAt: number
  startedAt?: number
  endedAt?: number
  elapsed?: number
  retries: Array<Retry>
  progress?: Progress
  artifacts: Array<string>
  audits: Array<unknown>
  /** Its questions (`tool.question`) and how each ended (`tool.answered`), in the order asked. */
  questions: Array<Question>
  receipt?: Receipt
  /** Runs nested in this call (their run ids). */
  children: Array<string>
}

export interface Turn {
  readonly index: number
  startedAt?: number
  advertised: ReadonlyArray<string>
  /** The model's text: the streamed deltas joined, or the whole answer. */
  text: string
  streamed: boolean
  usage?: { readonly inputTokens: number; readonly outputTokens: number }
  toolCalls?: number
  /** Keys of the turn's calls, in order. */
  calls: Array<string>
}

export interface Run {
  readonly id: string
  threadId: string
  parentRunId?: string
  parentCallId?: string
  depth: number
  firstAt: number
  lastAt: number
  turns: Array<Turn>
  calls: Array<Call>
  callsByKey: Map<string, Call>
  /** Nested runs (their ids), in the order they appeared. */
  children: Array<string>
  finished?: { readonly reason: string; readonly turns: number; readonly text: string; readonly usage: { readonly inputTokens: number; readonly outputTokens: number } }
  /** Other agent events (handoffs, state, outputs, tool search): shown as notes. */
  notes: Array<{ readonly at: number; readonly turn: number; readonly text: string }>
  events: number
}

/** Everything a source holds, as runs (top-level first appearance order) and the unreadable lines. */
export interface Inspection {
  readonly runs: ReadonlyArray<Run>
  readonly byId: ReadonlyMap<string, Run>
  readonly unreadable: ReadonlyArray<Extract<Entry, { readonly _tag: "Unreadable" }>>
  readonly entries: number
}

/**
 * `value` as one line of JSON; one nested too deeply for `JSON.stringify` (an event's value is a
 * model's, and may be thousands of arrays deep) is said so instead of failing the page.
 */
export const stringify = (value: unknown, indent?: number): string => {
  try {
    return JSON.stringify(value, null, indent) ?? String(value)
  } catch {
    return "(nested too deeply to show)"
  }
}

const messageOf = (error: unknown): string => {
  if (typeof error === "object" && error !== null && "message" in error) return String((error as { message: unknown }).message)
  return String(error)
}

const artifactText = (artifact: { readonly store: string; readonly key: string; readonly bytes: number; readonly mimeType: string }): string =>
  `${artifact.store}:${artifact.key} (${artifact.mimeType}, ${artifact.bytes} bytes)`

const tagOf = (error: unknown): string | undefined =>
  typeof error === "object" && error !== null && "_tag" in error ? String((error as { _tag: unknown })._tag) : undefined

/** Folds a source's entries into runs. */
export const build = (entries: Iterable<Entry>): Inspection => {
  const byId = new Map<string, Run>()
  const order: Array<Run> = []
  const unreadable: Array<Extract<Entry, { readonly _tag: "Unreadable" }>> = []
  /** The latest call of each call id, per run. */
  const latest = new Map<Run, Map<string, Call>>()
  let count = 0

  const runOf = (stamp: { readonly runId: string; readonly threadId: string; readonly parentRunId?: string; readonly parentCallId?: string; readonly depth?: number }, at: number): Run => {
    let run = byId.get(stamp.runId)
    if (run === undefined) {
      run = {
        id: stamp.runId,
        threadId: stamp.threadId,
        depth: stamp.depth ?? 0,
        firstAt: at,
        lastAt: at,
        turns: [],
        calls: [],
        callsByKey: new Map(),
        children: [],
        notes: [],
        events: 0
      }
      if (stamp.parentRunId !== undefined) run.parentRunId = stamp.parentRunId
      if (stamp.parentCallId !== undefined) run.parentCallId = stamp.parentCallId
      byId.set(run.id, run)
      latest.set(run, new Map())
      order.push(run)
    }
    run.firstAt = Math.min(run.firstAt, at)
    run.lastAt = Math.max(run.lastAt, at)
    return run
  }

  const turnOf = (run: Run, index: number): Turn => {
    let turn = run.turns.find((t) => t.index === index)
    if (turn === undefined) {
      turn = { index, advertised: [], text: "", streamed: false, calls: [] }
      run.turns.push(turn)
      run.turns.sort((a, b) => a.index - b.index)
    }
    return turn
  }

  const currentTurn = (run: Run): number => run.turns.length === 0 ? 0 : run.turns[run.turns.length - 1]!.index

  /**
   * The call `id` of `run` in `turn` (a tool event names no turn: the latest call of that id, unless it
   * ended in an earlier turn than the current one, which then reused the id).
   */
  const callOf = (run: Run, id: string, toolName: string, at: number, turn?: number): Call => {
    const calls = latest.get(run)!
    const existing = calls.get(id)
    const now = currentTurn(run)
    if (existing !== undefined) {
      if (turn !== undefined ? existing.turn === turn : !(terminal.has(existing.state) && existing.turn < now)) return existing
    }
    const wanted = turn ?? now
    const call: Call = {
      key: `${wanted}/${id}`,
      id,
      toolName,
      turn: wanted,
      index: run.calls.length,
      state: "queued",
      attempt: 1,
      firstAt: at,
      retries: [],
      artifacts: [],
      audits: [],
      questions: [],
      children: []
    }
    calls.set(id, call)
    run.calls.push(call)
    run.callsByKey.set(call.key, call)
    turnOf(run, wanted).calls.push(call.key)
    return call
  }

  for (const entry of entries) {
    count++
    if (entry._tag === "Unreadable") {
      unreadable.push(entry)
      continue
    }
    if (entry._tag === "Receipt") {
      const r = entry.receipt
      const run = runOf({ runId: r.runId, threadId: r.threadId }, r.startedAt)
      run.lastAt = Math.max(run.lastAt, r.endedAt)
      run.events++
      const call = callOf(run, r.callId, r.tool, r.startedAt, r.turn)
      call.receipt = r
      call.startedAt ??= r.startedAt
      call.firstAt = Math.min(call.firstAt, r.startedAt)
      call.endedAt ??= r.endedAt
      call.elapsed ??= r.durationMillis
      if (call.state === "queued" || !terminal.has(call.state)) {
        call.state = r.refused === true ? "rejected" : r.status === "ok" && !r.isError ? "completed" : r.status === "ok" ? "error" : "failed"
        if (r.error !== undefined) call.errorMessage ??= r.error
        call.reason ??= r.status
      }
      continue
    }
    const event = entry.event
    const run = runOf(event, event.timestamp)
    run.events++
    if (event.parentRunId !== undefined) {
      const parent = byId.get(event.parentRunId)
      if (parent !== undefined && !parent.children.includes(run.id)) {
        parent.children.push(run.id)
        const call = event.parentCallId === undefined ? undefined : latest.get(parent)!.get(event.parentCallId)
        if (call !== undefined && !call.children.includes(run.id)) call.children.push(run.id)
      }
    }
    switch (event._tag) {
      case "agent.turn_started": {
        const turn = turnOf(run, event.turn)
        turn.startedAt = event.timestamp
        turn.advertised = event.advertised
        break
      }
      case "agent.text_delta": {
        const turn = turnOf(run, event.turn)
        turn.text += event.text
        turn.streamed = true
        break
      }
      case "agent.model_responded": {
        const turn = turnOf(run, event.turn)
        if (!turn.streamed) turn.text = event.text
        turn.usage = event.usage
        turn.toolCalls = event.toolCalls
        break
      }
      case "agent.tool_call": {
        const call = callOf(run, event.toolCallId, event.toolName, event.timestamp, event.turn)
        call.modelArguments = event.arguments
        break
      }
      case "agent.approval_requested": {
        const call = callOf(run, event.toolCallId, event.toolName, event.timestamp, event.turn)
        call.modelArguments ??= event.arguments
        if (call.state === "queued") call.state = "awaiting_approval"
        break
      }
      case "agent.finished":
        run.finished = { reason: event.reason, turns: event.turns, text: event.text, usage: event.usage }
        break
      case "agent.handoff":
        run.notes.push({ at: event.timestamp, turn: event.turn, text: `handoff to ${event.target}: ${event.task}` })
        break
      case "agent.state":
        run.notes.push({
          at: event.timestamp,
          turn: event.turn,
          text: event.refused === undefined
            ? `state after ${event.toolName} ${event.toolCallId}: ${stringify(event.state)}`
            : `state update of ${event.toolName} ${event.toolCallId} refused: ${event.refused}`
        })
        break
      case "agent.output":
        run.notes.push({ at: event.timestamp, turn: event.turn, text: `typed output: ${stringify(event.output)}` })
        break
      case "agent.tools_revealed":
        run.notes.push({ at: event.timestamp, turn: event.turn, text: `tool search "${event.query}" revealed ${event.names.join(", ") || "nothing"}` })
        break
      case "agent.output_delta":
        break
      default: {
        const call = callOf(run, event.toolCallId, event.toolName, event.timestamp)
        call.attempt = Math.max(call.attempt, event.attempt)
        switch (event._tag) {
          case "tool.started":
            call.startedAt ??= event.timestamp
            call.arguments = event.arguments
            if (!terminal.has(call.state)) call.state = "running"
            break
          case "tool.retrying":
            call.retries.push({ attempt: event.attempt, delay: event.delay, message: event.error.message })
            if (!terminal.has(call.state)) call.state = "retrying"
            break
          case "tool.progress": {
            const before = call.progress
            call.progress = {
              message: event.message ?? before?.message,
              fraction: event.fraction ?? before?.fraction,
              count: event.count ?? before?.count,
              total: event.total ?? before?.total,
              chunks: ((before?.chunks ?? "") + (event.chunk ?? "")).slice(-4000),
              reports: (before?.reports ?? 0) + event.reports
            }
            if (!terminal.has(call.state)) call.state = "progress"
            break
          }
          case "tool.question":
            call.questions.push({ number: event.question, message: event.message, ...(event.choices === undefined ? {} : { choices: event.choices }) })
            if (!terminal.has(call.state)) call.state = "awaiting_answer"
            break
          case "tool.answered": {
            const q = call.questions.findLast((question) => question.number === event.question && question.outcome === undefined)
            if (q !== undefined) {
              q.outcome = event.outcome
              q.elapsed = event.elapsed
              if (event.answer !== undefined) q.answer = event.answer
              if (event.reason !== undefined) q.reason = event.reason
              if (event.answeredBy !== undefined) q.answeredBy = event.answeredBy
            }
            if (call.state === "awaiting_answer") call.state = "running"
            break
          }
          case "tool.artifact_stored":
            call.artifacts.push(artifactText(event.artifact))
            break
          case "tool.audit":
            call.audits.push(event.audit)
            break
          case "tool.completed":
            call.state = event.isError ? "error" : "completed"
            call.output = event.output
            call.elapsed = event.elapsed
            call.endedAt = event.timestamp
            call.startedAt ??= event.timestamp - event.elapsed
            for (const artifact of event.artifacts) if (!call.artifacts.includes(artifactText(artifact))) call.artifacts.push(artifactText(artifact))
            break
          case "tool.failed": {
            call.state = event.disposition === "repair" ? "error" : "failed"
            call.errorMessage = messageOf(event.error)
            const failedTag = tagOf(event.error)
            if (failedTag !== undefined) call.errorTag = failedTag
            call.disposition = event.disposition
            call.reason = event.outcome === "unknown" ? `${event.reason} (outcome unknown)` : event.reason
            call.elapsed = event.elapsed
            call.endedAt = event.timestamp
            call.startedAt ??= event.timestamp - event.elapsed
            break
          }
          case "tool.rejected": {
            call.state = "rejected"
            call.errorMessage = messageOf(event.error)
            const tag = tagOf(event.error)
            if (tag !== undefined) call.errorTag = tag
            call.endedAt = event.timestamp
            break
          }
        }
      }
    }
  }
  return { runs: order, byId, unreadable, entries: count }
}

/**
 * Marks call `callId` of run `run`'s turn `turn` as waiting for the answer to its question (a
 * durable call suspended on it has journaled no event yet): the call, added when its events have
 * not shown it, in state `awaiting_answer`, with the open question.
 */
export const awaitingAnswer = (
  run: Run,
  question: { readonly turn: number; readonly callId: string; readonly toolName: string; readonly number: number; readonly message: string; readonly choices?: ReadonlyArray<unknown> }
): void => {
  const key = `${question.turn}/${question.callId}`
  let call = run.callsByKey.get(key)
  if (call === undefined) {
    call = {
      key,
      id: question.callId,
      toolName: question.toolName,
      turn: question.turn,
      index: run.calls.length,
      state: "queued",
      attempt: 1,
      firstAt: run.lastAt,
      retries: [],
      artifacts: [],
      audits: [],
      questions: [],
      children: []
    }
    run.calls.push(call)
    run.callsByKey.set(key, call)
    let turn = run.turns.find((t) => t.index === question.turn)
    if (turn === undefined) {
      turn = { index: question.turn, advertised: [], text: "", streamed: false, calls: [] }
      run.turns.push(turn)
      run.turns.sort((a, b) => a.index - b.index)
    }
    turn.calls.push(key)
  }
  if (terminal.has(call.state)) return
  call.state = "awaiting_answer"
  if (!call.questions.some((q) => q.number === question.number && q.outcome === undefined)) {
    call.questions.push({ number: question.number, message: question.message, ...(question.choices === undefined ? {} : { choices: question.choices }) })
  }
}

/** The runs at the top (no parent in this source), in order. */
export const topLevel = (inspection: Inspection): ReadonlyArray<Run> =>
  inspection.runs.filter((run) => run.parentRunId === undefined || !inspection.byId.has(run.parentRunId))

/** How many of a run's calls are in each state. */
export const stateCounts = (run: Run): Readonly<Partial<Record<CallState, number>>> => {
  const counts: Partial<Record<CallState, number>> = {}
  for (const call of run.calls) counts[call.state] = (counts[call.state] ?? 0) + 1
  return counts
}

/** The run's token usage: the finished total, else the turns' sum. */
export const usageOf = (run: Run): { readonly inputTokens: number; readonly outputTokens: number } =>
  run.finished?.usage ?? run.turns.reduce(
    (sum, turn) => ({
      inputTokens: sum.inputTokens + (turn.usage?.inputTokens ?? 0),
      outputTokens: sum.outputTokens + (turn.usage?.outputTokens ?? 0)
    }),
    { inputTokens: 0, outputTokens: 0 }
  )

/** A run's status in a word: its finish reason, awaiting approval, awaiting answer, "audited" (receipts only), or running. */
export const statusOf = (run: Run): string => {
  if (run.finished !== undefined) return run.finished.reason
  if (run.calls.some((c) => c.state === "awaiting_approval")) return "awaiting approval"
  if (run.calls.some((c) => c.state === "awaiting_answer")) return "awaiting answer"
  if (run.calls.length > 0 && run.turns.every((t) => t.startedAt === undefined) && run.calls.every((c) => c.receipt !== undefined)) return "audited"
  return "running"
}
