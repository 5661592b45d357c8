/**
 * `redaction`: rewrites arguments on the way in (the handler and every inner
 * layer see the rewritten ones) and results on the way out (value, text, and
 * the error of an error result, as the executor redacts them: `scrubResult`);
 * failures from further in (handler errors, refusals, defects) have their
 * messages, details and causes rewritten by the same `result` function on the
 * way out, so outer layers (an audit log) never see them unredacted (the
 * handler's own cause, which the redactor cannot rewrite, is not carried past
 * this layer: `tool.failed` then shows the rewritten error's). It records which
 * fields it redacted in `audit.metadata.redactedFields` (`{ arguments, result }`;
 * layer status `redacted` when any were). A
 * redactor is a pair of functions; {@link keys} builds one from a `Redact`
 * policy (keys at any depth, text patterns).
 */
import { Effect } from "effect"
import { textOfValue } from "../../internal/json.ts"
import { scrubErrorDetached } from "../../internal/redact/errors.ts"
import { redactValue, type Scrubber } from "../../internal/redact/policy.ts"
import { scrubResult } from "../../internal/redact/result.ts"
import type { Middleware } from "../../runtime/Middleware.ts"
import type * as Safety from "../../contract/Safety.ts"
import type { ToolSpec } from "../../contract/Tool.ts"
import * as AuditTrail from "./AuditTrail.ts"

/** A rewritten value and the paths of the fields it changed. */
export interface Redacted {
  readonly value: unknown
  readonly fields: ReadonlyArray<string>
}

/** Rewrites arguments (phase "in") and result values and texts (phase "out"). */
export interface Redactor {
  readonly arguments?: (args: unknown, spec: ToolSpec) => Redacted
  readonly result?: (value: unknown, spec: ToolSpec) => Redacted
}

/** A redactor that applies `policy` to arguments and results alike. */
export const keys = (policy: Safety.Redact): Redactor => ({
  arguments: (args) => redactValue(args, policy),
  result: (value) => redactValue(value, policy)
})

/** The redactor's `result` as a scrubber (texts stay texts); `fields` collects the paths it redacted. */
const scrubberOf = (redact: NonNullable<Redactor["result"]>, spec: ToolSpec, fields?: Array<string>): Scrubber => {
  const apply = (value: unknown): unknown => {
    const redacted = redact(value, spec)
    for (const field of redacted.fields) if (!fields?.includes(field)) fields?.push(field)
    return redacted.value
  }
  return {
    text: (text) => {
      const redacted = apply(text)
      return typeof redacted === "string" ? redacted : textOfValue(redacted)
    },
    value: apply
  }
}

/** Redacts arguments before the rest of the chain, and results and failures after it. */
export const redaction = (redactor: Redactor): Middleware =>
  AuditTrail.make("redaction", (invocation, next, recorder) =>
    Effect.gen(function*() {
      const { spec } = invocation
      const inbound = redactor.arguments?.(invocation.input, spec)
      const result = yield* Effect.mapError(
        next(inbound === undefined ? invocation : { ...invocation, input: inbound.value }),
        (error) => redactor.result === undefined ? error : scrubErrorDetached(error, scrubberOf(redactor.result, spec))
      )
      const fields: Array<string> = []
      const outbound = redactor.result === undefined
        ? result
        : scrubResult(result, scrubberOf(redactor.result, spec, fields))
      const redactedFields = { arguments: inbound?.fields ?? [], result: fields }
      yield* recorder.annotate({ metadata: { redactedFields } })
      if (redactedFields.arguments.length + redactedFields.result.length > 0) yield* recorder.mark("redacted")
      return outbound
    }))
