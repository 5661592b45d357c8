/**
 * The translation of a run's events (`Agent.stream`) into the AI SDK's UI message stream, the
 * chunks its `useChat` reads: one assistant message per run, a step per turn, text parts from the
 * model's text deltas, a tool part per decided call (input, then output or error), progress as
 * data parts reconciled by id, and `finish` with the run's usage as message metadata. Only the
 * top-level run's events become chunks; a nested run's (an agent as a tool) are left out.
 */
import { Cause, Stream } from "effect"
import type { UIMessage, UIMessageChunk } from "ai"
import type * as ToolEvent from "../../contract/ToolEvent.ts"
import { limits } from "../../runtime/ToolProgress.ts"

/** What a message's metadata holds: the run's ids on `start`, and on `finish` how it ended and its usage. */
export interface Metadata {
  readonly runId?: string
  readonly threadId?: string
  /** Turns the run took (on `finish`). */
  readonly turns?: number
  /** Why the run ended (`agent.finished`'s reason; `failed` when the stream failed). */
  readonly reason?: ToolEvent.AgentFinished["reason"]
  /** Token usage of the whole run (on `finish`). */
  readonly usage?: { readonly inputTokens: number; readonly outputTokens: number }
}

/** A tool call's progress as its `data-tool-progress` part holds it: the latest values, and the partial output so far. */
export interface ProgressData {
  readonly toolCallId: string
  readonly toolName: string
  readonly message?: string
  readonly fraction?: number
  readonly count?: number
  readonly total?: number
  /** The partial output reported so far (its last `ToolProgress.limits.chunkChars` characters), redacted. */
  readonly output?: string
}

/**
 * A question a tool call asked (`Ask`), as its `data-tool-question` part holds it: `open` with the
 * message, the answer's JSON Schema and the choices (what a front-end renders as a form), then
 * updated in place once it ends (`answered` with the answer, `declined` or `unanswerable` with the
 * reason). Redacted like the call's events.
 */
export interface QuestionData {
  readonly toolCallId: string
  readonly toolName: string
  /** The call's question number (1 for its first). */
  readonly question: number
  readonly message: string
  readonly schema: unknown
  readonly choices?: ReadonlyArray<unknown>
  readonly status: "open" | "answered" | "declined" | "unanswerable"
  readonly answer?: unknown
  readonly answeredBy?: string
  readonly reason?: string
}

/**
 * The data parts of the stream: `data-tool-progress` (one per call, id `progress-<toolCallId>`),
 * `data-tool-question` (one per question, id `question-<toolCallId>-<n>`) and `data-output` (id `output`).
 */
export type DataParts = {
  "tool-progress": ProgressData
  "tool-question": QuestionData
  /** The typed final answer (`output`): partial while it streams, then the decoded value. */
  output: unknown
}

/** The assistant message the stream assembles (for `useChat<Message>()`). */
export type Message = UIMessage<Metadata, DataParts>

/** A chunk of the stream. */
export type Chunk = UIMessageChunk<Metadata, DataParts>

/** Options of the translation. */
export interface ChunkOptions<E> {
  /** The assistant message's id, sent on `start`. Default: none (the client makes one). */
  readonly messageId?: string
  /**
   * The text of the `error` chunk when the run fails. Default: the error's `message` (for
   * `AgentFailed`: the reason, the turn and the model-facing message of the error, never a defect's cause).
   */
  readonly onError?: (error: E) => string
}

/** Errors the model reads about a call's input: the call never ran. */
const inputErrors: ReadonlySet<string> = new Set(["ToolNotFound", "MalformedArguments", "InvalidArguments"])

const finishReasons = {
  final_answer: "stop",
  return_direct: "stop",
  max_turns: "tool-calls",
  cancelled: "other",
  handoff: "other",
  failed: "error"
} as const

/** The arguments as the model sent them: JSON text is parsed (kept as text when it is not JSON). */
const inputOf = (args: unknown): unknown => {
  if (typeof args !== "string") return args
  try {
    return JSON.parse(args)
  } catch {
    return args
  }
}

const tail = (text: string, chars: number): string => text.length <= chars ? text : text.slice(text.length - chars)

/** The translator of one run: events in, chunks out. */
class Translation<E> {
  private started = false
  private stepOpen = false
  private textId: string | undefined
  private texts = 0
  private finished: ToolEvent.AgentFinished | undefined
  private readonly inputs = new Map<string, unknown>()
  private readonly outputs = new Map<string, string>()
  /** The open questions (key: call id and question number), for their update once answered. */
  private readonly questions = new Map<string, QuestionData>()
  private ids: { readonly runId: string; readonly threadId: string } | undefined
  private readonly options: ChunkOptions<E>

  constructor(options: ChunkOptions<E>) {
    this.options = options
  }

  private start(out: Array<Chunk>): void {
    if (this.started) return
    this.started = true
    out.push({
      type: "start",
      ...(this.options.messageId === undefined ? {} : { messageId: this.options.messageId }),
      ...(this.ids === undefined ? {} : { messageMetadata: this.ids })
    })
  }

  private closeText(out: Array<Chunk>): void {
    if (this.textId === undefined) return
    out.push({ type: "text-end", id: this.textId })
    this.textId = undefined
  }

  private closeStep(out: Array<Chunk>): void {
    this.closeText(out)
    if (!this.stepOpen) return
    out.push({ type: "finish-step" })
    this.stepOpen = false
  }

  /** Announces a call the stream has not shown yet (a call whose `agent.tool_call` was not seen). */
  private announce(out: Array<Chunk>, toolCallId: string, toolName: string, input: unknown): void {
    if (this.inputs.has(toolCallId)) return
    this.inputs.set(toolCallId, input)
    out.push({ type: "tool-input-available", toolCallId, toolName, input })
  }

  event(event: ToolEvent.Event): ReadonlyArray<Chunk> {
    if (event.parentRunId !== undefined) return []
    const out: Array<Chunk> = []
    this.ids ??= { runId: event.runId, threadId: event.threadId }
    this.start(out)
    switch (event._tag) {
      case "agent.turn_started":
        this.closeStep(out)
        out.push({ type: "start-step" })
        this.stepOpen = true
        break
      case "agent.text_delta":
        if (event.text === "") break
        if (this.textId === undefined) {
          this.textId = `text-${this.texts++}`
          out.push({ type: "text-start", id: this.textId })
        }
        out.push({ type: "text-delta", id: this.textId, delta: event.text })
        break
      case "agent.tool_call":
        this.closeText(out)
        this.announce(out, event.toolCallId, event.toolName, inputOf(event.arguments))
        break
      case "agent.model_responded":
        this.closeText(out)
        break
      case "tool.started":
        this.announce(out, event.toolCallId, event.toolName, event.arguments)
        break
      case "tool.progress": {
        const output = event.chunk === undefined
          ? this.outputs.get(event.toolCallId)
          : tail((this.outputs.get(event.toolCallId) ?? "") + event.chunk, limits.chunkChars)
        if (output !== undefined) this.outputs.set(event.toolCallId, output)
        out.push({
          type: "data-tool-progress",
          id: `progress-${event.toolCallId}`,
          data: {
            toolCallId: event.toolCallId,
            toolName: event.toolName,
            ...(event.message === undefined ? {} : { message: event.message }),
            ...(event.fraction === undefined ? {} : { fraction: event.fraction }),
            ...(event.count === undefined ? {} : { count: event.count }),
            ...(event.total === undefined ? {} : { total: event.total }),
            ...(output === undefined ? {} : { output })
          }
        })
        break
      }
      case "tool.question": {
        const data: QuestionData = {
          toolCallId: event.toolCallId,
          toolName: event.toolName,
          question: event.question,
          message: event.message,
          schema: event.schema,
          ...(event.choices === undefined ? {} : { choices: event.choices }),
          status: "open"
        }
        this.questions.set(`${event.toolCallId}\u0000${event.question}`, data)
        out.push({ type: "data-tool-question", id: `question-${event.toolCallId}-${event.question}`, data })
        break
      }
      case "tool.answered": {
        const key = `${event.toolCallId}\u0000${event.question}`
        const asked = this.questions.get(key)
        if (asked === undefined) break
        this.questions.delete(key)
        out.push({
          type: "data-tool-question",
          id: `question-${event.toolCallId}-${event.question}`,
          data: {
            ...asked,
            status: event.outcome,
            ...(event.answer === undefined ? {} : { answer: event.answer }),
            ...(event.answeredBy === undefined ? {} : { answeredBy: event.answeredBy }),
            ...(event.reason === undefined ? {} : { reason: event.reason })
          }
        })
        break
      }
      case "tool.completed":
        this.announce(out, event.toolCallId, event.toolName, undefined)
        this.outputs.delete(event.toolCallId)
        out.push(
          event.isError
            ? { type: "tool-output-error", toolCallId: event.toolCallId, errorText: event.output }
            : { type: "tool-output-available", toolCallId: event.toolCallId, output: event.output }
        )
        break
      case "tool.failed":
        this.announce(out, event.toolCallId, event.toolName, undefined)
        this.outputs.delete(event.toolCallId)
        out.push({ type: "tool-output-error", toolCallId: event.toolCallId, errorText: event.error.message })
        break
      case "tool.rejected":
        if (inputErrors.has(event.error._tag)) {
          out.push({
            type: "tool-input-error",
            toolCallId: event.toolCallId,
            toolName: event.toolName,
            input: this.inputs.get(event.toolCallId),
            errorText: event.error.message
          })
          this.inputs.set(event.toolCallId, this.inputs.get(event.toolCallId))
        } else {
          this.announce(out, event.toolCallId, event.toolName, undefined)
          out.push({ type: "tool-output-error", toolCallId: event.toolCallId, errorText: event.error.message })
        }
        break
      case "agent.output_delta":
        out.push({ type: "data-output", id: "output", data: event.partial })
        break
      case "agent.output":
        out.push({ type: "data-output", id: "output", data: event.output })
        break
      case "agent.finished":
        this.closeText(out)
        this.finished = event
        break
      default:
        break
    }
    return out
  }

  /** The chunks after the last event: the step closed, and `finish`. */
  end(): ReadonlyArray<Chunk> {
    const out: Array<Chunk> = []
    this.start(out)
    this.closeStep(out)
    const finished = this.finished
    out.push(
      finished === undefined
        ? { type: "finish" }
        : {
          type: "finish",
          finishReason: finishReasons[finished.reason],
          messageMetadata: { turns: finished.turns, reason: finished.reason, usage: finished.usage }
        }
    )
    return out
  }

  /** The chunks of a failed run: the step closed, `error`, and `finish` (reason `error`). */
  fail(errorText: string): ReadonlyArray<Chunk> {
    const out: Array<Chunk> = []
    this.start(out)
    this.closeStep(out)
    const finished = this.finished
    out.push({ type: "error", errorText }, {
      type: "finish",
      finishReason: "error",
      messageMetadata: {
        reason: "failed",
        ...(finished === undefined ? {} : { turns: finished.turns, usage: finished.usage })
      }
    })
    return out
  }
}

const messageOf = (error: unknown): string =>
  error instanceof Error ? error.message : "the agent run failed"

/**
 * The UI message chunks of a run's events. A failed run ends with an `error` chunk and `finish`
 * (the stream itself never fails); a defect shows no detail. Interruption passes through.
 */
export const chunks = <E, R>(
  events: Stream.Stream<ToolEvent.Event, E, R>,
  options: ChunkOptions<E> = {}
): Stream.Stream<Chunk, never, R> =>
  Stream.suspend(() => {
    const translation = new Translation(options)
    const onError = options.onError ?? messageOf
    return events.pipe(
      Stream.map((event) => translation.event(event)),
      Stream.concat(Stream.sync(() => translation.end())),
      Stream.catchCause((cause) => {
        if (Cause.hasInterruptsOnly(cause)) return Stream.failCause(cause as Cause.Cause<never>)
        const found = Cause.findError(cause)
        const text = found._tag === "Success" ? onError(found.success) : "internal error in the agent run"
        return Stream.succeed(translation.fail(text))
      }),
      Stream.flattenIterable
    )
  })
