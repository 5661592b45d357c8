/**
 * Spans for tool calls, after the OpenTelemetry GenAI semantic conventions:
 * one `execute_tool {tool}` span (kind INTERNAL) per answered call. It owns the
 * span name, the attributes and how a call's outcome maps to `error.type`; it
 * does not decide where spans go (`Call` wraps its effects with it), and the
 * span machinery is shared with the agent's spans (`src/internal/spans.ts`;
 * the agent's `invoke_agent`, `agent_turn` and `chat` are in
 * `src/agent/internal/tracing.ts`).
 *
 * Privacy: span data never carries argument or result values, nor error
 * messages (which may quote them): a failed span ends with an error whose name
 * and message are only its `error.type`. `recordArguments` / `recordResults`
 * add `gen_ai.tool.call.arguments` (the decoded arguments, redacted per the
 * tool's `safety.redact`) and `gen_ai.tool.call.result` (the model-facing
 * text, already redacted and bounded).
 *
 * Cost: call spans are skipped when no tracer could export them (Effect's
 * default native tracer, or tracing disabled); the check runs once per batch.
 */
import { type Clock, Effect, type Fiber, References, Tracer } from "effect"
import type * as Tool from "../../../contract/Tool.ts"
import type { ToolCall } from "../../../contract/ToolCall.ts"
import type * as ToolError from "../../../contract/ToolError.ts"
import * as ToolResult from "../../../contract/ToolResult.ts"
import { stringify } from "../../../internal/json.ts"
import { redactValue } from "../../../internal/redact/policy.ts"
import { around } from "../../../internal/spans.ts"
import * as Outcome from "./Outcome.ts"

/** `Executor.Options.tracing`. */
export interface Options {
  /** Attach `gen_ai.tool.call.arguments` (redacted per the tool's `safety.redact`). Default `false`. */
  readonly recordArguments?: boolean
  /** Attach `gen_ai.tool.call.result` (the model-facing text, redacted). Default `false`. */
  readonly recordResults?: boolean
}

/** The resolved options of a run whose calls are traced. */
export interface Tracing {
  readonly recordArguments: boolean
  readonly recordResults: boolean
}

export const make = (options: Options | undefined): Tracing => ({
  recordArguments: options?.recordArguments === true,
  recordResults: options?.recordResults === true
})

/** Whether `fiber` has a tracer installed and tracing on (then calls get spans). */
export const enabled = (fiber: Fiber.Fiber<unknown, unknown>): boolean =>
  fiber.getRef(Tracer.Tracer) !== Tracer.nativeTracer && fiber.getRef(References.TracerEnabled)

const toolAttributes = (call: ToolCall, name: string): Record<string, unknown> => ({
  "gen_ai.operation.name": "execute_tool",
  "gen_ai.tool.name": name,
  "gen_ai.tool.call.id": call.id,
  "gen_ai.tool.type": "function"
})

const errorTypeOf = (outcome: Outcome.Outcome): string | undefined => {
  if (Outcome.cancelledOf(outcome)) return "ToolCancelled"
  const result = Outcome.resultOf(outcome)
  return result.isError ? result.error?._tag ?? "ToolError" : undefined
}

/**
 * The `execute_tool` span of a started call, around everything from
 * `tool.started` to its terminal event. `error.type` is the `_tag` of the
 * error behind an error result (`ToolTimeout`, `ToolFailure`, `ApprovalDenied`,
 * `ToolDefect`, ...), `ToolCancelled` for an interrupted call.
 */
export const executed = <O extends Outcome.Outcome | undefined, R>(
  tracing: Tracing,
  clock: Clock.Clock,
  call: ToolCall,
  spec: Tool.ToolSpec,
  input: unknown,
  attempts: { readonly count: number },
  effect: Effect.Effect<O, never, R>
): Effect.Effect<O, never, R> => {
  const attributes = toolAttributes(call, spec.name)
  attributes["gen_ai.tool.description"] = spec.description
  if (tracing.recordArguments) {
    attributes["gen_ai.tool.call.arguments"] = stringify(redactValue(input, spec.safety.redact).value)
  }
  return around(`execute_tool ${spec.name}`, { kind: "internal", attributes }, clock, effect, (outcome) => {
    if (outcome === undefined) return {}
    return {
      errorType: errorTypeOf(outcome),
      attributes: {
        "tinyagents.tool.attempts": attempts.count,
        "gen_ai.tool.call.result": tracing.recordResults && !Outcome.cancelledOf(outcome)
          ? ToolResult.textOf(Outcome.resultOf(outcome))
          : undefined
      }
    }
  })
}

/**
 * The `execute_tool` span of a call refused before it started (unknown, not
 * advertised, malformed or invalid arguments, over a call limit): no time
 * inside, `error.type` the rejection's `_tag`, `tinyagents.tool.rejected`.
 * Arguments are never recorded for a rejection (they did not decode, so the
 * tool's redaction cannot be trusted on them).
 */
export const rejected = <A, R>(
  clock: Clock.Clock,
  call: ToolCall,
  toolName: string,
  error: ToolError.ToolError,
  effect: Effect.Effect<A, never, R>
): Effect.Effect<A, never, R> =>
  around(
    `execute_tool ${toolName}`,
    { kind: "internal", attributes: { ...toolAttributes(call, toolName), "tinyagents.tool.rejected": true } },
    clock,
    effect,
    () => ({ errorType: error._tag })
  )
