/**
 * `redaction`: rewrites arguments on the way in (the handler and every inner
 * layer see the rewritten ones) and results on the way out (value and text);
 * failures from further in (handler errors, refusals, defects) have their
 * messages, details and causes rewritten by the same `result` function on the
 * way out, so outer layers (an audit log) never see them unredacted (the
 * handler's own cause, which the redactor cannot rewrite, is not carried past
 * this layer: `tool.failed` then shows the rewritten error's). It records which fields it redacted in `audit.metadata.redactedFields`
 * (`{ arguments, result }`; layer status `redacted` when any were). A
 * redactor is a pair of functions; {@link keys} builds one from a `Redact`
 * policy (keys at any depth, text patterns).
 */
import { Effect } from "effect"
import { textOfValue } from "../../internal/json.ts"
import { scrubErrorDetached } from "../../internal/redact/errors.ts"
import { redactValue, type Scrubber } from "../../internal/redact/policy.ts"
import type { Middleware } from "../../runtime/Middleware.ts"
import type * as Safety from "../../contract/Safety.ts"
import type { ToolSpec } from "../../contract/Tool.ts"
import * as ToolResult from "../../contract/ToolResult.ts"
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

/** Applies the redactor to a result: its value, and its text (re-rendered when it was the value's text). */
const redactResult = (
  result: ToolResult.ToolResult,
  redact: NonNullable<Redactor["result"]>,
  spec: ToolSpec
): { readonly result: ToolResult.ToolResult; readonly fields: ReadonlyArray<string> } => {
  const fields: Array<string> = []
  const value = result.value === undefined ? undefined : redact(result.value, spec)
  if (value !== undefined) fields.push(...value.fields)
  const fromValue = result.value !== undefined && ToolResult.textOf(result) === textOfValue(result.value)
  const content = result.content.map((block) => {
    if (block.type !== "text") return block
    if (fromValue) return ToolResult.text(textOfValue(value?.value))
    const text = redact(block.text, spec)
    fields.push(...text.fields)
    return ToolResult.text(typeof text.value === "string" ? text.value : textOfValue(text.value))
  })
  return {
    result: { ...result, content, ...(value === undefined ? {} : { value: value.value }) },
    fields
  }
}

/** The redactor's `result` as a scrubber for errors: texts stay texts. */
const scrubberOf = (redact: NonNullable<Redactor["result"]>, spec: ToolSpec): Scrubber => ({
  text: (text) => {
    const redacted = redact(text, spec).value
    return typeof redacted === "string" ? redacted : textOfValue(redacted)
  },
  value: (value) => redact(value, spec).value
})

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
      const outbound = redactor.result === undefined ? undefined : redactResult(result, redactor.result, spec)
      const redactedFields = { arguments: inbound?.fields ?? [], result: outbound?.fields ?? [] }
      yield* recorder.annotate({ metadata: { redactedFields } })
      if (redactedFields.arguments.length + redactedFields.result.length > 0) yield* recorder.mark("redacted")
      return outbound?.result ?? result
    }))
