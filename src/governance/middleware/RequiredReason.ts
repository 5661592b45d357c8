/**
 * `requiredReason`: every call says why it is made. A pair: a schema-time
 * transform that adds the reason field to every tool (so the model is asked
 * for it and the decoder accepts it), and an execution middleware that checks
 * it, strips it before the handler and puts it in `audit.summary`.
 *
 * The usual pitfall (strip + a required schema rejects every call) does
 * not arise here: the registry decodes before middleware run, so the decoder
 * sees the reason and the handler does not. Without the transform, tools
 * reject the unknown key unless they allow unknown keys; the middleware then
 * reads the reason from the raw arguments.
 */
import { Effect, Predicate, Result, Schema } from "effect"
import { InvalidArguments } from "../../contract/ToolError.ts"
import * as ToolInput from "../../contract/ToolInput.ts"
import * as ToolTransform from "../../contract/ToolTransform.ts"
import type { Middleware } from "../../runtime/Middleware.ts"
import * as AuditTrail from "./AuditTrail.ts"

export interface Options {
  /** The field's name. Default `"reason"`. */
  readonly field?: string
  /** What the model reads about the field. */
  readonly description?: string
  /** Remove the field before the handler runs. Default `true`. */
  readonly strip?: boolean
  /** Minimum length after trimming. Default 1. */
  readonly minLength?: number
  /** A missing or short reason: refuse the call (default), or run it and record `blank`. */
  readonly onMissing?: "reject" | "fill_blank"
  /** The transform marks the field required, so the decoder rejects calls without it. Default `true`. */
  readonly schemaRequired?: boolean
  /** The summary recorded by `fill_blank`. Default `"(no reason given)"`. */
  readonly blank?: string
}

/** The transform and the middleware; use both, or the middleware alone. */
export interface RequiredReason {
  readonly transform: ToolTransform.Transform
  readonly middleware: Middleware
}

/** Builds the reason transform and middleware (defaults as documented on {@link Options}). */
export const requiredReason = (options: Options = {}): RequiredReason => {
  const field = options.field ?? "reason"
  const minLength = options.minLength ?? 1
  const strip = options.strip ?? true
  const blank = options.blank ?? "(no reason given)"
  const description = options.description ??
    "Why you are calling this tool, in one short sentence the user will read."
  const transform = ToolTransform.addParameter(field, {
    schema: Schema.String.check(Schema.isMinLength(minLength)).annotate({ description }),
    required: options.schemaRequired ?? true
  })

  const reasonOf = (input: unknown, raw: unknown, toolName: string): unknown => {
    if (Predicate.isObject(input) && field in input) return (input as Record<string, unknown>)[field]
    const parsed = ToolInput.parse(toolName, raw)
    return Result.isSuccess(parsed) ? parsed.success[field] : undefined
  }

  const middleware = AuditTrail.make("required_reason", (invocation, next, recorder) =>
    Effect.gen(function*() {
      const { call, spec, tool, input } = invocation
      const given = reasonOf(input, call.arguments, spec.name)
      const valid = typeof given === "string" && given.trim().length >= minLength
      if (!valid && (options.onMissing ?? "reject") === "reject") {
        return yield* AuditTrail.refuse(
          invocation,
          new InvalidArguments({
            toolName: spec.name,
            issues: [{
              path: [field],
              message: `a ${JSON.stringify(field)} of at least ${minLength} character(s) is required: say why you call this tool`
            }]
          })
        )
      }
      yield* recorder.annotate({ summary: valid ? given.trim() : blank })
      // Only a field a transform added is ours to strip; a tool's own `reason` parameter stays.
      const ours = ToolTransform.addedParameters(tool).has(field)
      if (!strip || !ours || !Predicate.isObject(input)) return yield* next(invocation)
      const { [field]: _, ...rest } = input as Record<string, unknown>
      return yield* next({ ...invocation, input: rest })
    }))

  return { transform, middleware }
}
