/**
 * One call's progress reports (`ToolProgress`), made into `tool.progress`
 * events under the bounds the public module documents: rate (one event per
 * interval; reports in between coalesce into a pending update, sent by a timer
 * fiber when the interval ends), size (message and partial output capped) and
 * redaction (the tool's policy and its arguments' redacted values).
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
 * {@link holdCharsOf} characters wait for more text, or for `close`.
 */
import { type Clock, Effect, Fiber } from "effect"
import type * as Tool from "../../../contract/Tool.ts"
import type * as ToolEvent from "../../../contract/ToolEvent.ts"
import { type Scrubber, scrubberOf, secretsOf } from "../../../internal/redact.ts"
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
  readonly idempotencyKey: string | undefined
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

const cutMessage = (text: string): string =>
  text.length <= limits.messageChars ? text : `${text.slice(0, limits.messageChars - 1)}…`

/** Partial output kept while pending: enough that redacting then cutting to the cap sees whole values. */
const pendingChunkChars = limits.chunkChars * 2

/**
 * How many of the last characters of partial output wait for what follows before they are sent: enough
 * that a secret value (or a pattern match of at most {@link limits}.redactHoldChars + 1 characters) that
 * starts in them is whole before it is redacted. 0 without a redaction policy.
 */
const holdCharsOf = (spec: Tool.ToolSpec, input: unknown): number => {
  const policy = spec.safety.redact
  const longest = secretsOf(policy, input).reduce((max, secret) => Math.max(max, secret.length), 0)
  const patterns = (policy?.patterns?.length ?? 0) > 0 ? limits.redactHoldChars : 0
  return Math.max(longest - 1, patterns, 0)
}

/**
 * `raw` (partial output not sent yet) split into what can be sent, redacted, and the raw rest to keep:
 * the longest start, short of the last `hold` characters, whose redaction joined to the rest's equals
 * the redaction of the whole (no secret or match crosses the cut). `final` sends everything.
 */
export const splitRedacted = (
  raw: string,
  hold: number,
  scrub: (text: string) => string,
  final: boolean
): { readonly out: string; readonly rest: string } => {
  if (final) return { out: scrub(raw), rest: "" }
  let cut = raw.length - hold
  if (cut <= 0) return { out: "", rest: raw }
  const whole = scrub(raw)
  for (let tries = 0; cut > 0 && tries <= hold + 1; tries++, cut--) {
    const code = raw.charCodeAt(cut - 1)
    if (code >= 0xd800 && code <= 0xdbff) continue // not between the halves of a surrogate pair
    const head = scrub(raw.slice(0, cut))
    if (head + scrub(raw.slice(cut)) === whole) return { out: head, rest: raw.slice(cut) }
  }
  // A match longer than the hold: wait for more text, unless the text kept is already too long.
  if (raw.length <= pendingChunkChars + hold) return { out: "", rest: raw }
  cut = raw.length - hold
  return { out: scrub(raw.slice(0, cut)), rest: raw.slice(cut) }
}

export class Channel implements ToolProgressShape {
  private pending: {
    message?: string
    fraction?: number
    count?: number
    total?: number
    chunk?: string
    dropped: number
    reports: number
  } | undefined = undefined
  private lastAt = Number.NEGATIVE_INFINITY
  private timer: Fiber.Fiber<void> | undefined = undefined
  /** No more reports are taken. */
  private closing = false
  /** No more events are made (set once the last one is out). */
  private sealed = false
  private scrubber: Scrubber | undefined | null = null
  /** Partial output reported but not sent yet (raw): its redaction may depend on what follows. */
  private held = ""
  private hold: number | undefined = undefined

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

  private text(text: string): string {
    if (this.scrubber === null) this.scrubber = scrubberOf(this.spec.safety.redact, this.input)
    return this.scrubber === undefined ? text : this.scrubber.text(text)
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
    const pending = this.pending ??= { dropped: 0, reports: 0 }
    pending.reports++
    if (message !== undefined) pending.message = message.length > limits.messageChars * 4 ? message.slice(0, limits.messageChars * 4) : message
    if (fraction !== undefined) pending.fraction = fraction
    if (count !== undefined) pending.count = count
    if (total !== undefined) pending.total = total
    if (chunk !== undefined) {
      let all = pending.chunk === undefined ? chunk : pending.chunk + chunk
      if (all.length > pendingChunkChars) {
        pending.dropped += all.length - pendingChunkChars
        all = all.slice(all.length - pendingChunkChars)
      }
      pending.chunk = all
    }
    return true
  }

  /** The pending update as an event (and nothing pending after), or `undefined`. Run with the reporter's slot held. */
  private readonly take = (): ToolEvent.Unstamped<ToolEvent.Event> | undefined => {
    const pending = this.pending
    if (pending === undefined || this.sealed) return undefined
    this.pending = undefined
    let dropped = pending.dropped
    let chunk: string | undefined
    if (pending.chunk !== undefined || (this.closing && this.held !== "")) {
      // Text dropped before this chunk went after the held text: the held text is dropped too.
      if (dropped > 0) {
        dropped += this.held.length
        this.held = ""
      }
      const hold = this.hold ??= holdCharsOf(this.spec, this.input)
      const { out, rest } = splitRedacted(this.held + (pending.chunk ?? ""), hold, (text) => this.text(text), this.closing)
      this.held = rest
      chunk = out === "" ? undefined : out
    }
    if (
      chunk === undefined && dropped === 0 && pending.message === undefined && pending.fraction === undefined &&
      pending.count === undefined && pending.total === undefined
    ) {
      // Only held partial output: nothing to send yet; the reports count on.
      this.pending = { dropped: 0, reports: pending.reports }
      return undefined
    }
    if (chunk !== undefined && chunk.length > limits.chunkChars) {
      dropped += chunk.length - limits.chunkChars
      chunk = chunk.slice(chunk.length - limits.chunkChars)
    }
    const call = this.call
    return {
      _tag: "tool.progress",
      toolCallId: call.toolCallId,
      toolName: call.toolName,
      attempt: call.attempt,
      ...(call.idempotencyKey === undefined ? {} : { idempotencyKey: call.idempotencyKey }),
      ...(pending.message === undefined ? {} : { message: cutMessage(this.text(pending.message)) }),
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
    if (this.pending === undefined && this.held !== "") this.pending = { dropped: 0, reports: 0 }
    const flush = this.pending === undefined ? Effect.void : this.config.reporter.emitMasked(this.env, this.take)
    const stopped = timer === undefined ? flush : Effect.andThen(flush, Fiber.interrupt(timer))
    return Effect.andThen(stopped, Effect.sync(() => {
      this.sealed = true
      this.pending = undefined
      this.held = ""
    }))
  })
}
