/**
 * One call's progress reports (`ToolProgress`), made into `tool.progress`
 * events under the bounds the public module documents: rate (one event per
 * interval; reports in between coalesce into a pending update, sent by a timer
 * fiber when the interval ends, or by `close` when the call ends first), size
 * (message and partial output capped) and redaction (the tool's policy and its
 * arguments' redacted values).
 *
 * A `Channel` exists only for calls of tools that list `ToolProgress` in their
 * services. Ordering: a pending update becomes an event only when its turn at
 * the reporter comes (`Reporter.emitLazy`), and `close` (run by `Call` before
 * the terminal event) refuses further reports, sends what is pending, stops the
 * timer and seals the channel, so an event made after that is never emitted.
 *
 * Partial output is redacted as one stream, not event by event: the call's
 * reported text not yet sent (`held`) is redacted together with what comes
 * next, and only a start of it that later text cannot change is sent; the last
 * `Redaction.hold` characters wait for more text, or for `close`. No cap cuts
 * raw text: a message is redacted whole before it is cut, and partial output
 * that outgrows what is kept is redacted (the same way) before its start is
 * dropped. No cut splits a surrogate pair.
 */
import { type Clock, Effect, Fiber } from "effect"
import type * as Tool from "../../../contract/Tool.ts"
import type * as ToolEvent from "../../../contract/ToolEvent.ts"
import { secretsOf } from "../../../internal/redact/policy.ts"
import {
  mergeRegions,
  type Region,
  scrubbedRegions,
  secretForms,
  withRegionsRedacted
} from "../../../internal/redact/text.ts"
import { limits, ToolProgress, type ToolProgressShape, type Update } from "../../ToolProgress.ts"
import type { Env, Reporter } from "./Reporter.ts"

export interface Config {
  readonly reporter: Reporter
  /** Milliseconds between two events of one call. */
  readonly interval: number
}

/** The call fields every event carries, read when an event is made (the attempt moves on retries). */
export interface CallInfo {
  readonly toolCallId: string
  readonly toolName: string
  readonly attempt: number
  /** The idempotency key as events show it: redacted like the arguments (`CallState.shownKey`). */
  readonly shownKey: string | undefined
}

/** True when `tool` lists `ToolProgress` among its services (cached per tool). */
const reporting = new WeakMap<Tool.Any, boolean>()
export const reports = (tool: Tool.Any): boolean => {
  let listed = reporting.get(tool)
  if (listed === undefined) {
    listed = tool.services.some((service) => service.key === ToolProgress.key)
    reporting.set(tool, listed)
  }
  return listed
}

const finite = (n: number | undefined): n is number => typeof n === "number" && Number.isFinite(n)

/**
 * True when a cut of `text` at `at` falls between the halves of a surrogate pair, or after a high
 * surrogate that ends the text (its low half may come with the next report).
 */
const splitsPair = (text: string, at: number): boolean => {
  if (at <= 0 || at > text.length) return false
  const before = text.charCodeAt(at - 1)
  if (before < 0xd800 || before > 0xdbff) return false
  if (at === text.length) return true
  const after = text.charCodeAt(at)
  return after >= 0xdc00 && after <= 0xdfff
}

/** A (redacted) message cut to the cap: its start, marked with `…`. */
const cutMessage = (text: string): string => {
  if (text.length <= limits.messageChars) return text
  let end = limits.messageChars - 1
  if (splitsPair(text, end)) end--
  return `${text.slice(0, end)}…`
}

/** The last (at most) `chars` characters of a (redacted) text, and how many were cut before them. */
const keepEnd = (text: string, chars: number): { readonly kept: string; readonly dropped: number } => {
  if (text.length <= chars) return { kept: text, dropped: 0 }
  let start = text.length - chars
  if (splitsPair(text, start)) start++
  return { kept: text.slice(start), dropped: start }
}

/** Partial output kept raw while pending: enough that redacting then cutting to the cap sees whole values. */
const pendingChunkChars = limits.chunkChars * 2

/**
 * A call's redaction, as its scrubber applies it (the secret values' forms and the pattern matches found
 * in a text replaced by the marker, see `scrubbedRegions`), with the regions exposed for cuts.
 */
export interface Redaction {
  /** The regions of `text` to redact, its first `covered` characters (the rest of one cut before) among them. */
  readonly regions: (text: string, covered: number) => Array<Region>
  /**
   * How many of the last characters of partial output wait for what follows before they are sent: enough
   * that any form of a secret value the scrubber removes (the value, its JSON-escaped form), or a pattern
   * match of at most `limits.redactHoldChars + 1` characters, that starts in them is whole before it is
   * redacted. 0 without a redaction policy.
   */
  readonly hold: number
}

/** `text` redacted, its first `covered` characters as part of a secret or match. */
const scrub = (redaction: Redaction, text: string, covered: number): string =>
  withRegionsRedacted(text, redaction.regions(text, covered))

/** The redaction of a tool's calls with `input` (its arguments). */
export const redactionOf = (spec: Tool.ToolSpec, input: unknown): Redaction => {
  const policy = spec.safety.redact
  const forms = secretForms(secretsOf(policy, input))
  const longest = forms.reduce((max, form) => Math.max(max, form.length), 0)
  const patterns = (policy?.patterns?.length ?? 0) > 0 ? limits.redactHoldChars : 0
  return {
    regions: (text, covered) => {
      const found = scrubbedRegions(text, forms, policy?.patterns)
      return covered > 0 ? mergeRegions([[0, Math.min(covered, text.length)], ...found]) : found
    },
    hold: Math.max(longest - 1, patterns, 0)
  }
}

/** True when `at` falls strictly inside one of `regions` (sorted, apart). */
const inside = (regions: ReadonlyArray<Region>, at: number): boolean =>
  regions.some(([start, end]) => start < at && at < end)

/**
 * `raw` (partial output not sent yet; its first `covered` characters the rest of a secret or match cut
 * before) split into what can be sent, redacted, and the raw rest to keep: the longest start, short of
 * the last `hold` characters, that no secret or match of `raw` crosses and whose redaction joined to the
 * rest's equals the redaction of the whole. When there is none (a match longer than the hold, not yet
 * whole, or overlapping ones in a long run) it waits, unless the text kept is too long: then it cuts
 * anyway, and what crosses the cut is redacted on both sides (the rest starts `covered`); only a match
 * not yet whole in the text kept can be cut. `final` sends everything.
 */
export const splitRedacted = (
  raw: string,
  covered: number,
  redaction: Redaction,
  final: boolean
): { readonly out: string; readonly rest: string; readonly covered: number } => {
  if (final) return { out: scrub(redaction, raw, covered), rest: "", covered: 0 }
  const hold = redaction.hold
  const last = raw.length - hold
  if (last <= 0) return { out: "", rest: raw, covered }
  const regions = redaction.regions(raw, covered)
  // Redactions are compared on the text from a little before the earliest cut tried (a pattern that
  // looks around a match sees it); what crosses a cut is known from `regions`, found in all of `raw`.
  const first = Math.max(1, covered, last - hold - 1)
  const from = Math.max(0, first - 2 * (hold + 1))
  const fromCovered = Math.max(0, covered - from)
  const whole = scrub(redaction, raw.slice(from), fromCovered)
  const near = regions.filter(([start, end]) => start < last && end > first)
  for (let cut = last; cut >= first; cut--) {
    if (splitsPair(raw, cut) || inside(near, cut)) continue
    const head = scrub(redaction, raw.slice(from, cut), fromCovered)
    if (head + scrub(redaction, raw.slice(cut), 0) === whole) {
      return { out: scrub(redaction, raw.slice(0, cut), covered), rest: raw.slice(cut), covered: 0 }
    }
  }
  if (raw.length <= pendingChunkChars + hold) return { out: "", rest: raw, covered }
  const cut = splitsPair(raw, last) ? last - 1 : last
  const head = regions.filter(([start]) => start < cut).map(([start, end]): Region => [start, Math.min(end, cut)])
  const crossing = regions.find(([start, end]) => start < cut && cut < end)
  return {
    out: withRegionsRedacted(raw.slice(0, cut), head),
    rest: raw.slice(cut),
    covered: crossing === undefined ? 0 : crossing[1] - cut
  }
}

export class Channel implements ToolProgressShape {
  private pending: {
    message?: string
    fraction?: number
    count?: number
    total?: number
    /** Partial output was reported since the last event (it is in `held`, raw, and in `ready`). */
    chunked: boolean
    /** Partial output redacted (while pending, because the text held grew too long), not sent yet. */
    ready: string
    dropped: number
    reports: number
  } | undefined = undefined
  private lastAt = Number.NEGATIVE_INFINITY
  private timer: Fiber.Fiber<void> | undefined = undefined
  /** No more reports are taken. */
  private closing = false
  /** No more events are made (set once the last one is out). */
  private sealed = false
  private redaction_: Redaction | undefined = undefined
  /** Partial output reported but not sent yet (raw): its redaction may depend on what follows. */
  private held = ""
  /** How many first characters of `held` are the rest of a secret or match a cut went through. */
  private covered = 0

  private readonly config: Config
  private readonly env: Env
  private readonly call: CallInfo
  private readonly spec: Tool.ToolSpec
  private readonly input: unknown

  constructor(config: Config, env: Env, call: CallInfo, spec: Tool.ToolSpec, input: unknown) {
    this.config = config
    this.env = env
    this.call = call
    this.spec = spec
    this.input = input
  }

  private get clock(): Clock.Clock {
    return this.env.clock
  }

  private get redaction(): Redaction {
    return this.redaction_ ??= redactionOf(this.spec, this.input)
  }

  /** Redacts the start of `held` that can be, into `ready` (whose start is dropped beyond the cap). */
  private settle(pending: NonNullable<Channel["pending"]>, final: boolean): void {
    const { covered, out, rest } = splitRedacted(this.held, this.covered, this.redaction, final)
    this.held = rest
    this.covered = covered
    if (out === "") return
    const { dropped, kept } = keepEnd(pending.ready + out, limits.chunkChars)
    pending.ready = kept
    pending.dropped += dropped
  }

  /** Folds `update` into the pending one; false when it says nothing. */
  private merge(update: Update): boolean {
    const message = typeof update.message === "string" ? update.message : undefined
    const fraction = finite(update.fraction) ? Math.min(1, Math.max(0, update.fraction)) : undefined
    const count = finite(update.count) && update.count >= 0 ? update.count : undefined
    const total = finite(update.total) && update.total >= 0 ? update.total : undefined
    const chunk = typeof update.chunk === "string" && update.chunk !== "" ? update.chunk : undefined
    if (message === undefined && fraction === undefined && count === undefined && total === undefined && chunk === undefined) {
      return false
    }
    const pending = this.pending ??= { chunked: false, ready: "", dropped: 0, reports: 0 }
    pending.reports++
    // Kept whole: it is redacted whole (when it becomes an event) before it is cut.
    if (message !== undefined) pending.message = message
    if (fraction !== undefined) pending.fraction = fraction
    if (count !== undefined) pending.count = count
    if (total !== undefined) pending.total = total
    if (chunk !== undefined) {
      pending.chunked = true
      this.held += chunk
      if (this.held.length > pendingChunkChars) this.settle(pending, false)
    }
    return true
  }

  /** The pending update as an event (and nothing pending after), or `undefined`. Run with the reporter's slot held. */
  private readonly take = (): ToolEvent.Unstamped<ToolEvent.Event> | undefined => {
    const pending = this.pending
    if (pending === undefined || this.sealed) return undefined
    this.pending = undefined
    if (pending.chunked || (this.closing && this.held !== "")) this.settle(pending, this.closing)
    const chunk = pending.ready === "" ? undefined : pending.ready
    const dropped = pending.dropped
    if (
      chunk === undefined && dropped === 0 && pending.message === undefined && pending.fraction === undefined &&
      pending.count === undefined && pending.total === undefined
    ) {
      // Only held partial output: nothing to send yet; the reports count on.
      this.pending = { chunked: false, ready: "", dropped: 0, reports: pending.reports }
      return undefined
    }
    const call = this.call
    const message = pending.message === undefined
      ? undefined
      : cutMessage(scrub(this.redaction, pending.message, 0))
    return {
      _tag: "tool.progress",
      toolCallId: call.toolCallId,
      toolName: call.toolName,
      attempt: call.attempt,
      ...(call.shownKey === undefined ? {} : { idempotencyKey: call.shownKey }),
      ...(message === undefined ? {} : { message }),
      ...(pending.fraction === undefined ? {} : { fraction: pending.fraction }),
      ...(pending.count === undefined ? {} : { count: pending.count }),
      ...(pending.total === undefined ? {} : { total: pending.total }),
      ...(chunk === undefined ? {} : { chunk }),
      ...(dropped === 0 ? {} : { chunkDropped: dropped }),
      reports: pending.reports
    }
  }

  /** Sends what is pending when the interval since the last event ends. */
  private readonly flushLater = (delay: number): Effect.Effect<void> =>
    Effect.andThen(
      Effect.sleep(delay),
      Effect.suspend(() => {
        this.timer = undefined
        this.lastAt = this.clock.currentTimeMillisUnsafe()
        return this.config.reporter.emitLazy(this.env, this.take)
      })
    )

  readonly report = (update: Update): Effect.Effect<void> =>
    Effect.suspend(() => {
      if (this.closing || !this.merge(update)) return Effect.void
      if (this.timer !== undefined) return Effect.void
      const now = this.clock.currentTimeMillisUnsafe()
      const due = this.lastAt + this.config.interval
      if (now >= due) {
        this.lastAt = now
        return this.config.reporter.emitLazy(this.env, this.take)
      }
      return Effect.asVoid(
        Effect.tap(Effect.forkDetach(this.flushLater(due - now), { startImmediately: true }), (fiber) =>
          Effect.sync(() => {
            // The timer may have run already (a zero delay on a clock that moved on).
            if (fiber.pollUnsafe() === undefined) this.timer = fiber
          }))
      )
    })

  /** Refuses further reports, sends what is pending, stops the timer, seals. Run before the terminal event. */
  readonly close: Effect.Effect<void> = Effect.suspend(() => {
    this.closing = true
    const timer = this.timer
    this.timer = undefined
    if (this.pending === undefined && this.held !== "") this.pending = { chunked: false, ready: "", dropped: 0, reports: 0 }
    const flush = this.pending === undefined ? Effect.void : this.config.reporter.emitMasked(this.env, this.take)
    const stopped = timer === undefined ? flush : Effect.andThen(flush, Fiber.interrupt(timer))
    return Effect.andThen(stopped, Effect.sync(() => {
      this.sealed = true
      this.pending = undefined
      this.held = ""
      this.covered = 0
    }))
  })
}
