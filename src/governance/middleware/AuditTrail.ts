/**
 * The audit trail of one call, as the middleware library records it. Each
 * recorded layer opens its entry on the way in, so entries read outermost
 * first, and closes it on the way out with a status, whether the call
 * succeeded, returned an error result or failed. Layers also add audit fields
 * (consent, scope, summary, metadata). The trail lives beside the call, not in
 * the result, so a failed call still has one for the layers that watch it
 * (audit log, telemetry); the outermost recorded layer attaches the finished
 * audit to the result.
 *
 * The library's short-circuit rule, stated once here: a layer that refuses a
 * call with a repairable error returns an error result ({@link refuse}), so
 * every outer layer and the executor's `tool.audit` event see it as an ordinary
 * result; a fatal refusal, and every failure from further in (handler errors,
 * timeouts, defects), is recorded by each layer it passes and raised again.
 * A layer whose condition does not cover a call passes it on with status
 * `skipped` ({@link skip}), so a trail never shows `ok` for a decision that was
 * not made. This module decides nothing about a call.
 */
import { Cause, Clock, Context, Effect, Exit } from "effect"
import type { Invocation, Middleware, Next } from "../../runtime/Middleware.ts"
import type { ToolError } from "../../contract/ToolError.ts"
import * as ToolResult from "../../contract/ToolResult.ts"

/** Audit fields a layer may add: everything but `layers`. */
export type Patch = { -readonly [K in Exclude<keyof ToolResult.Audit, "layers">]?: ToolResult.Audit[K] }

/** What a recorded layer can do to its own entry and to the call's audit. */
export interface Recorder {
  /** Sets this layer's status (and error text), instead of the one derived from the outcome. */
  readonly mark: (status: string, error?: string) => Effect.Effect<void>
  /** Adds audit fields to the call; `metadata` is merged key by key. */
  readonly annotate: (patch: Patch) => Effect.Effect<void>
  /** The call's audit so far (open entries show status `"pending"`). */
  readonly audit: Effect.Effect<ToolResult.Audit>
}

/** A recorded layer's outcome, after its entry is closed. */
export interface Settled {
  readonly invocation: Invocation
  readonly exit: Exit.Exit<ToolResult.ToolResult, ToolError>
  /** This layer's closed entry. */
  readonly layer: ToolResult.AuditLayer
  /** The call's audit including this layer's entry. */
  readonly audit: ToolResult.Audit
}

interface Entry {
  readonly name: string
  readonly startedAt: number
  endedAt?: number
  status?: string
  error?: string
  marked?: { readonly status: string; readonly error: string | undefined }
}

interface Draft {
  readonly entries: Array<Entry>
  fields: Patch
}

/** The trail of the call being run; set by the outermost recorded layer. */
const CurrentDraft = Context.Reference<Draft | undefined>("tinyagents/middleware/AuditTrail", {
  defaultValue: () => undefined
})

/** The reserved audit status for an error (the statuses are listed in docs/middleware.md). */
export const statusOf = (error: ToolError): string => {
  switch (error._tag) {
    case "ApprovalDenied":
      return "consent_denied"
    case "PolicyBlocked":
      return error.status
    case "ToolTimeout":
      return "timeout"
    case "ToolNotFound":
      return "tool_not_found"
    case "ToolNotAllowed":
      return "scope_violation"
    case "MalformedArguments":
    case "InvalidArguments":
      return "schema_violation"
    case "ToolCallLimitExceeded":
      return "rate_limited"
    case "MiddlewareFailed":
      return "tool_middleware_exception"
    case "ToolDefect":
    case "InvalidOutput":
      return "exception"
    case "ToolCancelled":
      return "cancelled"
    case "ToolFailure":
    case "OutcomeUnknown":
    case "ToolTransient":
    case "StoreFailed":
      return "executor_error"
  }
}

/** The status of a result: `ok`, or the status of its error. */
export const statusOfResult = (result: ToolResult.ToolResult): string =>
  !result.isError ? "ok" : result.error === undefined ? "executor_error" : statusOf(result.error)

const outcomeOf = (exit: Exit.Exit<ToolResult.ToolResult, ToolError>): { status: string; error?: string } => {
  if (Exit.isSuccess(exit)) {
    const result = exit.value
    return result.isError ? { status: statusOfResult(result), error: ToolResult.textOf(result) } : { status: "ok" }
  }
  if (Cause.hasInterruptsOnly(exit.cause)) return { status: "cancelled", error: "interrupted" }
  const failure = Cause.findErrorOption(exit.cause)
  return failure._tag === "Some"
    ? { status: statusOf(failure.value), error: failure.value.message }
    : { status: "tool_middleware_exception", error: "defect" }
}

const layerOf = (entry: Entry, now: number): ToolResult.AuditLayer => ({
  name: entry.name,
  status: entry.status ?? "pending",
  startedAt: entry.startedAt,
  endedAt: entry.endedAt ?? now,
  ...(entry.error === undefined ? {} : { error: entry.error })
})

const snapshot = (draft: Draft, now: number): ToolResult.Audit => ({
  ...draft.fields,
  layers: draft.entries.map((entry) => layerOf(entry, now))
})

const mergeFields = (base: Patch, patch: Patch): Patch => {
  const metadata = base.metadata === undefined
    ? patch.metadata
    : patch.metadata === undefined
    ? base.metadata
    : { ...base.metadata, ...patch.metadata }
  return { ...base, ...patch, ...(metadata === undefined ? {} : { metadata }) }
}

/**
 * Merges `audit` into a result's audit: fields of `audit` win (metadata merged
 * key by key); its layers come first, then any the result already carried.
 */
export const attach = (result: ToolResult.ToolResult, audit: ToolResult.Audit): ToolResult.ToolResult => {
  if (result.audit === undefined) return { ...result, audit }
  const { layers: own, ...fields } = audit
  const { layers: theirs, ...existing } = result.audit
  return { ...result, audit: { ...mergeFields(existing, fields), layers: [...own, ...theirs] } }
}

/**
 * Runs `body` as the recorded layer `name`: opens its entry, closes it with the
 * outcome (or the status the body marked), runs `settled` with the closed entry,
 * and, when this is the outermost recorded layer, attaches the audit to the result.
 * Failures are raised again unchanged.
 */
export const record = <R, R2 = never>(
  name: string,
  invocation: Invocation,
  body: (recorder: Recorder) => Effect.Effect<ToolResult.ToolResult, ToolError, R>,
  settled?: (settled: Settled) => Effect.Effect<void, never, R2>
): Effect.Effect<ToolResult.ToolResult, ToolError, R | R2> =>
  Effect.uninterruptibleMask((restore) =>
    Effect.gen(function*() {
      const ambient = yield* CurrentDraft
      const draft: Draft = ambient ?? { entries: [], fields: {} }
      const entry: Entry = { name, startedAt: yield* Clock.currentTimeMillis }
      draft.entries.push(entry)
      const recorder: Recorder = {
        mark: (status, error) => Effect.sync(() => void (entry.marked = { status, error })),
        annotate: (patch) => Effect.sync(() => void (draft.fields = mergeFields(draft.fields, patch))),
        audit: Effect.map(Clock.currentTimeMillis, (now) => snapshot(draft, now))
      }
      const exit = yield* Effect.exit(restore(Effect.provideService(body(recorder), CurrentDraft, draft)))
      const now = yield* Clock.currentTimeMillis
      const outcome = outcomeOf(exit)
      entry.endedAt = now
      entry.status = entry.marked?.status ?? outcome.status
      const error = entry.marked?.error ?? outcome.error
      if (error !== undefined) entry.error = error
      if (settled !== undefined) {
        yield* settled({ invocation, exit, layer: layerOf(entry, now), audit: snapshot(draft, now) })
      }
      if (Exit.isFailure(exit)) return yield* Effect.failCause(exit.cause)
      return ambient === undefined ? attach(exit.value, snapshot(draft, now)) : exit.value
    })
  )

/** A middleware whose every call is recorded as the layer `name` (see {@link record}). */
export const make = <R = never, R2 = never>(
  name: string,
  around: (invocation: Invocation, next: Next, recorder: Recorder) => Effect.Effect<ToolResult.ToolResult, ToolError, R>,
  settled?: (settled: Settled) => Effect.Effect<void, never, R2>
): Middleware<R | R2> => ({
  name,
  around: (invocation, next) => record(name, invocation, (recorder) => around(invocation, next, recorder), settled)
})

/**
 * Passes the call on without the layer deciding anything (its condition does not
 * cover the call): the layer's entry records status `skipped`, not the call's outcome.
 */
export const skip = (
  invocation: Invocation,
  next: Next,
  recorder: Recorder
): Effect.Effect<ToolResult.ToolResult, ToolError> => Effect.andThen(recorder.mark("skipped"), next(invocation))

/** Adds audit fields to the current call from anywhere inside a recorded layer (a no-op outside). */
export const annotate = (patch: Patch): Effect.Effect<void> =>
  Effect.flatMap(CurrentDraft, (draft) =>
    draft === undefined ? Effect.void : Effect.sync(() => void (draft.fields = mergeFields(draft.fields, patch))))

/**
 * Refuses a call: a repairable error becomes an error result (so outer layers
 * record it as a result); a fatal one fails.
 */
export const refuse = (invocation: Invocation, error: ToolError): Effect.Effect<ToolResult.ToolResult, ToolError> =>
  error.disposition === "fatal"
    ? Effect.fail(error)
    : Effect.succeed(ToolResult.fromError({ ...invocation.call, name: invocation.spec.name }, error))
