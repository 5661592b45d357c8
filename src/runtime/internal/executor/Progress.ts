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
 */
import { type Clock, Effect, Fiber } from "effect"
import type * as Tool from "../../../contract/Tool.ts"
import type * as ToolEvent from "../../../contract/ToolEvent.ts"
import { type Scrubber, scrubberOf } from "../../../internal/redact.ts"
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
    let chunk = pending.chunk === undefined ? undefined : this.text(pending.chunk)
    let dropped = pending.dropped
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
    const flush = this.pending === undefined ? Effect.void : this.config.reporter.emitMasked(this.env, this.take)
    const stopped = timer === undefined ? flush : Effect.andThen(flush, Fiber.interrupt(timer))
    return Effect.andThen(stopped, Effect.sync(() => {
      this.sealed = true
      this.pending = undefined
    }))
  })
}
