/**
 * Spans that end with what their operation's outcome says, after the OpenTelemetry GenAI semantic
 * conventions: the machinery the executor's `execute_tool` spans (`runtime/internal/executor/Tracing`)
 * and the agent's `invoke_agent`, `agent_turn` and `chat` spans (`agent/internal/tracing`) share.
 * Their owners name the spans and choose the attributes; this module runs an effect in a span and
 * ends it with a status and `error.type`.
 *
 * Privacy: a failed span ends with an error whose name and message are only its `error.type`, never
 * an error message (which may quote argument or result values).
 */
import { type Clock, Effect, Exit, type Tracer } from "effect"

/** What a span needs to know about how its operation ended. */
export interface Settled {
  /** `error.type`; `undefined` when the operation succeeded. */
  readonly errorType?: string | undefined
  readonly attributes?: Readonly<Record<string, unknown>> | undefined
}

const noStack = { captureStackTrace: false } as const

/** Ends `span` with a status that names only the error type (never a message that could quote a value). */
const end = (span: Tracer.Span, clock: Clock.Clock, settled: Settled, exit: Exit.Exit<unknown, unknown>): void => {
  if (span.status._tag === "Ended") return
  if (settled.attributes !== undefined) {
    for (const key in settled.attributes) {
      const value = settled.attributes[key]
      if (value !== undefined) span.attribute(key, value)
    }
  }
  const endTime = span.status.startTime === BigInt(0) ? BigInt(0) : clock.currentTimeNanosUnsafe()
  if (settled.errorType === undefined) {
    span.end(endTime, Exit.isFailure(exit) ? exit : Exit.void)
    return
  }
  span.attribute("error.type", settled.errorType)
  span.end(endTime, Exit.fail({ name: settled.errorType, message: settled.errorType }))
}

/**
 * Runs `effect` in a span (the parent of spans created inside it) and ends the
 * span with what `settle` makes of the exit. An interruption that `settle`
 * does not classify ends the span as interrupted.
 */
export const within = <A, E, R>(
  name: string,
  options: Tracer.SpanOptionsNoTrace,
  effect: Effect.Effect<A, E, R>,
  settle: (exit: Exit.Exit<A, E>) => Settled
): Effect.Effect<A, E, R> =>
  Effect.useSpan(name, options, (span) =>
    Effect.onExit(
      Effect.withParentSpan(effect, span, noStack),
      (exit) => Effect.clockWith((clock) => Effect.sync(() => end(span, clock, settle(exit), exit)))
    ))

/**
 * {@link within} for an effect that cannot fail and is not interrupted from
 * outside (a call's lifecycle runs masked and answers its own interruption):
 * the span ends when the value arrives, on `clock` (the run's).
 */
export const around = <A, R>(
  name: string,
  options: Tracer.SpanOptionsNoTrace,
  clock: Clock.Clock,
  effect: Effect.Effect<A, never, R>,
  settle: (value: A) => Settled
): Effect.Effect<A, never, R> =>
  Effect.useSpan(name, options, (span) =>
    Effect.map(Effect.withParentSpan(effect, span, noStack), (value) => {
      end(span, clock, settle(value), Exit.void)
      return value
    }))

/** `error.type` of a failure: its `_tag` when it has one, else `_OTHER`. */
export const tagOf = (error: unknown): string =>
  typeof error === "object" && error !== null && "_tag" in error && typeof error._tag === "string"
    ? error._tag
    : "_OTHER"

/** `error.type` of an exit: `classify` of its failure, `_OTHER` for a defect, `undefined` for a success or an interruption. */
export const failureType = <A, E>(exit: Exit.Exit<A, E>, classify: (error: E) => string): string | undefined => {
  if (Exit.isSuccess(exit)) return undefined
  const failure = exit.cause.reasons.find((reason) => reason._tag === "Fail")
  if (failure !== undefined) return classify(failure.error)
  const defect = exit.cause.reasons.find((reason) => reason._tag === "Die")
  return defect === undefined ? undefined : "_OTHER"
}
