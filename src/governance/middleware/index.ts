/**
 * The middleware library: small execution middleware that compose (first
 * listed = outermost) and record what they did in the result's audit trail.
 * Each module is also exported as a namespace for its types and helpers.
 * Spans, timeouts and per-run call limits are not middleware: every call gets an
 * `execute_tool` span, tools declare `timeout`, and `Executor` `limits` count calls.
 */
import type { Middleware, Services } from "../../runtime/Middleware.ts"

/**
 * A middleware list whose requirements are the union of its members'
 * (an array literal of mixed middleware does not infer one); first = outermost.
 */
export const stack = <const M extends ReadonlyArray<Middleware<unknown>>>(
  ...middleware: M
): ReadonlyArray<Middleware<Services<M[number]>>> =>
  middleware as ReadonlyArray<Middleware<unknown>> as ReadonlyArray<Middleware<Services<M[number]>>>

export { auditLog } from "./AuditLog.ts"
export { consent } from "./Consent.ts"
export { dryRun } from "./DryRun.ts"
export { handoffArtifact } from "./HandoffArtifact.ts"
export { rateLimit } from "./RateLimit.ts"
export { redaction } from "./Redaction.ts"
export { requiredReason } from "./RequiredReason.ts"
export { stage } from "./Stage.ts"
export { summary } from "./Summary.ts"

export * as AuditLog from "./AuditLog.ts"
export * as AuditTrail from "./AuditTrail.ts"
export * as Consent from "./Consent.ts"
export * as DryRun from "./DryRun.ts"
export * as HandoffArtifact from "./HandoffArtifact.ts"
export * as RateLimit from "./RateLimit.ts"
export * as Redaction from "./Redaction.ts"
export * as RequiredReason from "./RequiredReason.ts"
export * as Stage from "./Stage.ts"
export * as Summary from "./Summary.ts"
export * as TerminalApproval from "../TerminalApproval.ts"
export * as TerminalAsk from "../TerminalAsk.ts"
export { middleware as policy } from "./Policy.ts"
export * as Policy from "./Policy.ts"
