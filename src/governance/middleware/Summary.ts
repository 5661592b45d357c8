/**
 * `summary`: a user-facing one-liner for each call ("Searched the codebase for
 * rate limiters") in `audit.summary`, from a format function that sees the
 * call, its result and the audit so far (e.g. the reason recorded by
 * `requiredReason`). Failed calls get no summary.
 */
import { Effect } from "effect"
import type { Invocation, Middleware } from "../../runtime/Middleware.ts"
import type { Audit, ToolResult } from "../../contract/ToolResult.ts"
import * as AuditTrail from "./AuditTrail.ts"

/** Formats the summary; `undefined` keeps the current one. */
export type Format = (invocation: Invocation, result: ToolResult, audit: Audit) => string | undefined

/** Sets `audit.summary` from `format` after each call that produced a result. */
export const summary = (format: Format): Middleware =>
  AuditTrail.make("summary", (invocation, next, recorder) =>
    Effect.gen(function*() {
      const result = yield* next(invocation)
      const line = format(invocation, result, yield* recorder.audit)
      if (line !== undefined) yield* recorder.annotate({ summary: line })
      return result
    }))
