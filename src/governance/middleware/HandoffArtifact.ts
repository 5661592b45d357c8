/**
 * `handoffArtifact`: when a tool's result hands work on to someone else (a
 * handoff payload under `__handoff` or `handoff` in its structured value, or
 * wherever `detect` finds it), normalises the payload into a typed
 * {@link Handoff} record, records it in the audit (`audit.handoff`) and
 * gives it to the sink, once per call. The result itself is unchanged. A
 * malformed payload is recorded as `audit.metadata.handoffError` (paths and
 * expectations, never the payload's values) and the call goes on; with `strict`
 * it fails the call with a fatal `InvalidOutput`. Error results and failures
 * are not inspected.
 */
import { Effect, Predicate, Result, Schema, SchemaIssue } from "effect"
import type { Invocation, Middleware } from "../../runtime/Middleware.ts"
import { formatPath, InvalidOutput, type Issue } from "../../contract/ToolError.ts"
import type * as ToolResultModule from "../../contract/ToolResult.ts"
import type { ToolResult } from "../../contract/ToolResult.ts"
import * as AuditTrail from "./AuditTrail.ts"

/** Work handed on by a tool call (the contract's `ToolResult.Handoff`: target, task, source?, context?, policyOverride?). */
export type Handoff = ToolResultModule.Handoff

/** The schema of a {@link Handoff} (JSON as it is). */
export const Handoff: Schema.Codec<Handoff> = Schema.Struct({
  target: Schema.NonEmptyString,
  task: Schema.String,
  source: Schema.optionalKey(Schema.String),
  context: Schema.optionalKey(Schema.Json),
  policyOverride: Schema.optionalKey(Schema.Record(Schema.String, Schema.Json))
})

/** Where handoff records go. */
export interface Sink<R = never> {
  readonly write: (handoff: Handoff, invocation: Invocation) => Effect.Effect<void, never, R>
}

/** A sink that calls `f` with each record. */
export const callback = (f: (handoff: Handoff, invocation: Invocation) => void): Sink => ({
  write: (handoff, invocation) => Effect.sync(() => f(handoff, invocation))
})

export interface Options<R = never> {
  /** Gets each record, once per call that emitted one (a `Sink` or a callback). */
  readonly sink?: Sink<R> | ((handoff: Handoff, invocation: Invocation) => void)
  /** The keys of the result's value that may hold a payload, first found wins. Default `["__handoff", "handoff"]`. */
  readonly keys?: ReadonlyArray<string>
  /** Finds the payload anywhere in the result (`undefined`: none); tried before `keys`. */
  readonly detect?: (result: ToolResult, invocation: Invocation) => unknown
  /** The record's `source` when the payload names none (e.g. the running agent). */
  readonly source?: string
  /** A malformed payload fails the call (`InvalidOutput`, fatal) instead of being noted. Default `false`. */
  readonly strict?: boolean
}

/** Field names a payload may use for each field of the record (snake and camel case). */
const aliases: ReadonlyArray<readonly [keyof Handoff, ReadonlyArray<string>]> = [
  ["target", ["target", "targetPersona", "target_persona", "to"]],
  ["task", ["task", "summary"]],
  ["source", ["source", "sourcePersona", "source_persona"]],
  ["context", ["context"]],
  ["policyOverride", ["policyOverride", "policy_override"]]
]

const decode = Schema.decodeUnknownResult(Handoff, { errors: "all" })
const formatter = SchemaIssue.makeFormatterStandardSchemaV1()

/** Normalises a payload into a record, or the issues (paths and messages, without the input) that prevent it. */
export const normalize = (
  payload: unknown,
  source?: string
): Result.Result<Handoff, ReadonlyArray<Issue>> => {
  if (!Predicate.isObject(payload) || Array.isArray(payload)) {
    return Result.fail([{ path: [], message: "Expected a handoff object" }])
  }
  const fields: Record<string, unknown> = {}
  for (const [field, names] of aliases) {
    const name = names.find((n) => Object.hasOwn(payload, n))
    if (name !== undefined) fields[field] = (payload as Record<string, unknown>)[name]
  }
  if (fields["source"] === undefined && source !== undefined) fields["source"] = source
  const decoded = decode(fields)
  return Result.isSuccess(decoded)
    ? Result.succeed(decoded.success)
    : Result.fail(formatter(decoded.failure.issue).issues.map((i) => ({
      path: (i.path ?? []).map((segment) => {
        const key = typeof segment === "object" ? segment.key : segment
        return typeof key === "number" ? key : String(key)
      }),
      message: i.message
    })))
}

const describe = (issues: ReadonlyArray<Issue>): string =>
  issues.map((i) => `at ${formatPath(i.path)}: ${i.message}`).join("; ")

/** Finds, records and sinks the handoff in each successful result. */
export const handoffArtifact = <R = never>(options: Options<R> = {}): Middleware<R> => {
  const sink: Sink<R> | undefined = typeof options.sink === "function"
    ? callback(options.sink) as Sink<R>
    : options.sink
  const keys = options.keys ?? ["__handoff", "handoff"]
  const locate = (result: ToolResult, invocation: Invocation): readonly [string, unknown] | undefined => {
    const found = options.detect?.(result, invocation)
    if (found !== undefined) return ["(detected)", found]
    const value = result.value
    if (!Predicate.isObject(value) || Array.isArray(value)) return undefined
    const key = keys.find((k) => Object.hasOwn(value, k) && (value as Record<string, unknown>)[k] !== undefined)
    return key === undefined ? undefined : [key, (value as Record<string, unknown>)[key]]
  }
  return AuditTrail.make("handoff_artifact", (invocation, next, recorder) =>
    Effect.flatMap(next(invocation), (result) => {
      if (result.isError) return Effect.succeed(result)
      const located = locate(result, invocation)
      if (located === undefined) return Effect.succeed(result)
      const [key, payload] = located
      const normalized = normalize(payload, options.source)
      if (Result.isFailure(normalized)) {
        const issues = normalized.failure.map((i): Issue => ({ path: [key, ...i.path], message: i.message }))
        if (options.strict === true) {
          return Effect.fail(new InvalidOutput({ toolName: invocation.spec.name, issues }))
        }
        return Effect.as(recorder.annotate({ metadata: { handoffError: `malformed handoff: ${describe(issues)}` } }), result)
      }
      const handoff = normalized.success
      return Effect.as(
        Effect.andThen(
          recorder.annotate({ handoff }),
          sink === undefined ? Effect.void : sink.write(handoff, invocation)
        ),
        result
      )
    }))
}
