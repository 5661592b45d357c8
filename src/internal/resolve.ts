/**
 * `ToolRegistry.resolve` without its `Result`: the executor's admission asks it once per call, and
 * a resolution is the record itself (a refusal is the error, which has a `_tag`; a resolution has
 * none). `ToolRegistry.resolve` is this, wrapped.
 */
import type { Advertised, Resolved } from "../contract/ToolRegistry.ts"
import type { ToolCall } from "../contract/ToolCall.ts"
import { type InvalidArguments, type MalformedArguments, ToolNotAllowed, ToolNotFound } from "../contract/ToolError.ts"
import { redactRejection } from "./redact/errors.ts"
import { Result } from "effect"

/** Why a call is refused at the boundary. */
export type Refusal = ToolNotFound | ToolNotAllowed | MalformedArguments | InvalidArguments

/** True for a refusal. */
export const isRefusal = <R>(resolved: Resolved<R> | Refusal): resolved is Refusal => "_tag" in resolved

/** The name resolved, checked as advertised, the arguments parsed and decoded; a refusal of a known tool redacted. */
export const resolveNow = <R>(advertised: Advertised<R>, call: ToolCall): Resolved<R> | Refusal => {
  const entry = advertised.registry.get(call.name)
  if (entry === undefined) return new ToolNotFound({ toolName: call.name, advertised: advertised.names })
  if (!advertised.has(entry.spec.name)) {
    const searchWith = advertised.search?.deferred(entry.spec.name) === true ? advertised.search.tool : undefined
    return new ToolNotAllowed({
      toolName: entry.spec.name,
      advertised: advertised.names,
      ...(searchWith === undefined ? {} : { searchWith })
    })
  }
  const input = entry.decode(call.arguments)
  // A rejection quotes what the model sent: never a value under one of the tool's redacted keys.
  return Result.isFailure(input)
    ? redactRejection(input.failure, entry.spec.safety.redact, call.arguments)
    : { call, entry, input: input.success }
}
