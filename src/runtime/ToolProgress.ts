/**
 * Progress a running tool reports: a message, a fraction or a count, and
 * partial output. A hidden service (like `ToolCallContext`): a handler lists
 * `ToolProgress` in `services` and calls `report`; it never reaches a schema.
 * The executor provides it per call, only to tools that list it, so a tool that
 * does not report pays nothing.
 *
 * Each report becomes a `tool.progress` event of that call, after its
 * `tool.started` and before its terminal event, never after it (a report made
 * once the call has ended, from a fiber the handler left behind, is dropped).
 * The executor bounds them:
 *
 * - Rate: at most one event per `interval` of `Clock` time per call (default
 *   100 ms, `Executor.Options.progress.interval`), plus a last one when the
 *   call ends. The first report goes out at once; reports within the interval
 *   are coalesced into the next event (the latest message, fraction and count
 *   win; partial output is concatenated), sent when the interval ends; whatever
 *   is pending when the call ends is sent at once, before its terminal event
 *   (sooner than the interval after the previous event), so the last report is
 *   never lost. `reports` on the event says how many reports it stands for.
 * - Size: a message keeps the first {@link limits}.messageChars characters of
 *   its redacted text; an event's partial output keeps the last
 *   {@link limits}.chunkChars characters of its redacted text (`chunkDropped`
 *   counts the rest). Caps cut redacted text only, never a surrogate pair.
 * - Redaction: messages and partial output are redacted like results (the
 *   tool's `safety.redact` patterns, and the values the call's arguments hold
 *   under a redacted key, also in their JSON-escaped form). A message is
 *   redacted as a whole; partial output is redacted as one stream, so a
 *   consumer that joins the chunks of a call never sees a secret value or a
 *   pattern match, even one the tool reported split across several reports:
 *   the last characters reported wait for what follows (as many as the longest
 *   form of a secret value less one, and at least {@link limits}.redactHoldChars
 *   when the tool has patterns) and are sent with the next event that can send
 *   them, or before the terminal event (an event that only sends held output
 *   of reports already counted has `reports: 0`). A pattern match longer than
 *   `redactHoldChars + 1` characters split across reports is redacted only
 *   when the text kept (twice `chunkChars`) still holds it whole.
 *
 * `report` waits while the event is with the sink (an event sink that applies
 * backpressure slows the reporting tool), never while it is being rate limited.
 */
import { Context, Effect, Layer } from "effect"

/** One report. Every field is optional; a report with none of them is ignored. */
export interface Update {
  /** What the tool is doing ("indexing a.md"). */
  readonly message?: string
  /** How much is done, from 0 to 1 (clamped). */
  readonly fraction?: number
  /** Items done so far, and (when known) in all. */
  readonly count?: number
  readonly total?: number
  /** Partial output, appended to what was reported before it (a line of a log, a token of text). */
  readonly chunk?: string
}

/** What a handler gets for `ToolProgress`: the one way to report progress of the call it runs. */
export interface ToolProgressShape {
  /** Reports progress of the current call. Never fails. */
  readonly report: (update: Update) => Effect.Effect<void>
}

/**
 * The progress service of the current call (hidden: provided by the executor per call, only to tools that
 * list it in `services`). Its layers are for calling a handler directly, outside an executor.
 */
export class ToolProgress extends Context.Service<ToolProgress, ToolProgressShape>()("tinyagents/ToolProgress") {
  /** Drops every report: for handlers called directly (tests). */
  static readonly layerDiscard: Layer.Layer<ToolProgress> = Layer.succeed(ToolProgress, { report: () => Effect.void })

  /** Calls `f` with every report as given: for handlers called directly (tests). */
  static readonly layerCallback = (f: (update: Update) => void): Layer.Layer<ToolProgress> =>
    Layer.succeed(ToolProgress, { report: (update) => Effect.sync(() => f(update)) })
}

/** The bounds of `tool.progress` events (see the module comment). */
export const limits = {
  /** Characters of a message kept (the rest is cut, marked with `…`). */
  messageChars: 1_000,
  /** Characters of partial output an event carries (its last ones). */
  chunkChars: 8_000,
  /** Default milliseconds between two events of one call. */
  intervalMillis: 100,
  /** Characters of partial output held back for a redaction pattern to see a match whole (see the module comment). */
  redactHoldChars: 256
} as const

/** Reports progress of the current call. */
export const report = (update: Update): Effect.Effect<void, never, ToolProgress> =>
  ToolProgress.use((progress) => progress.report(update))

/** Reports a message (and, optionally, a fraction done). */
export const message = (text: string, fraction?: number): Effect.Effect<void, never, ToolProgress> =>
  report(fraction === undefined ? { message: text } : { message: text, fraction })

/** Reports partial output. */
export const chunk = (text: string): Effect.Effect<void, never, ToolProgress> => report({ chunk: text })

/** Drops every report (the same as `ToolProgress.layerDiscard`). */
export const layerDiscard: Layer.Layer<ToolProgress> = ToolProgress.layerDiscard

/** Calls `f` with every report (the same as `ToolProgress.layerCallback`). */
export const layerCallback: (f: (update: Update) => void) => Layer.Layer<ToolProgress> = ToolProgress.layerCallback
