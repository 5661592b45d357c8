/**
 * `consent`: asks the `Approval` service before a call. Approved calls run;
 * denied calls short-circuit with a repairable `ApprovalDenied` result
 * (status `consent_denied`); edited arguments are decoded again with the
 * tool's own input schema, and run only when they are valid. The decision is
 * recorded in `audit.consent`. Which calls to ask about is the `when` option
 * here (a call it excludes records the layer as `skipped`), and the safety
 * rules in `Policy`.
 */
import { Clock, Effect, Result } from "effect"
import { Approval, type Decision } from "../Approval.ts"
import type { Invocation, Middleware } from "../../runtime/Middleware.ts"
import type * as Tool from "../../contract/Tool.ts"
import { ApprovalDenied, type ToolError } from "../../contract/ToolError.ts"
import * as ToolInput from "../../contract/ToolInput.ts"
import type { ToolResult } from "../../contract/ToolResult.ts"
import * as AuditTrail from "./AuditTrail.ts"

export interface Options {
  /** Which calls need consent. Default: every call. */
  readonly when?: (invocation: Invocation) => boolean
  /** Shown to the approver as the reason for asking. Default `"consent required"`. */
  readonly why?: string
}

const decoders = new WeakMap<Tool.Any, ToolInput.Decoder<unknown>>()

/** The tool's own argument decoder (the registry's rules), built once per tool. */
const decoderOf = (invocation: Invocation): ToolInput.Decoder<unknown> => {
  let decode = decoders.get(invocation.tool)
  if (decode === undefined) {
    decode = ToolInput.decoder(invocation.spec.name, invocation.tool.input, {
      allowUnknownKeys: invocation.tool.options.allowUnknownKeys === true
    })
    decoders.set(invocation.tool, decode)
  }
  return decode
}

const verdictOf = (decision: Decision): string =>
  decision._tag === "Approve" ? "approved" : decision._tag === "Deny" ? "denied" : "edited"

/**
 * Asks the approver about `invocation` and records the decision in the audit:
 * the invocation to run (with validated edited input), or a refusal result.
 */
export const ask = (
  invocation: Invocation,
  why: string,
  recorder: AuditTrail.Recorder
): Effect.Effect<Invocation | ToolResult, ToolError, Approval> =>
  Effect.gen(function*() {
    const approval = yield* Approval
    const decision = yield* approval.decide({
      toolName: invocation.spec.name,
      callId: invocation.call.id,
      arguments: invocation.input,
      spec: invocation.spec,
      why
    })
    yield* recorder.annotate({
      consent: { decision: verdictOf(decision), decidedBy: decision.decidedBy, decidedAt: yield* Clock.currentTimeMillis }
    })
    switch (decision._tag) {
      case "Approve":
        return invocation
      case "Deny":
        return yield* AuditTrail.refuse(
          invocation,
          new ApprovalDenied({ toolName: invocation.spec.name, reason: decision.reason })
        )
      case "Edit": {
        const decoded = decoderOf(invocation)(decision.arguments)
        if (Result.isFailure(decoded)) return yield* AuditTrail.refuse(invocation, decoded.failure)
        return { ...invocation, input: decoded.success }
      }
    }
  })

const isInvocation = (u: Invocation | ToolResult): u is Invocation => "spec" in u

/** Asks the `Approval` service before each matching call. */
export const consent = (options: Options = {}): Middleware<Approval> =>
  AuditTrail.make("consent", (invocation, next, recorder) => {
    if (options.when !== undefined && !options.when(invocation)) return AuditTrail.skip(invocation, next, recorder)
    return Effect.flatMap(
      ask(invocation, options.why ?? "consent required", recorder),
      (out) => isInvocation(out) ? next(out) : Effect.succeed(out)
    )
  })
