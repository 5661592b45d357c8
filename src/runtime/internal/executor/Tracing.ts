/**
 * Spans for tool calls and agent turns, after the OpenTelemetry GenAI semantic
 * conventions: one `execute_tool {tool}` span (kind INTERNAL) per answered
 * call, and the agent's `invoke_agent` (the run), `agent_turn` (one turn) and
 * `chat` (the model call) spans. It owns the span names, the attributes and
 * how an outcome maps to a span status and `error.type`; it does not decide
 * where spans go (`Call` and `Agent` wrap their effects with it).
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
import { type Clock, Effect, Exit, References, Tracer } from "effect"
import type * as Tool from "../../../contract/Tool.ts"
import type { ToolCall } from "../../../contract/ToolCall.ts"
import type * as ToolError from "../../../contract/ToolError.ts"
import * as ToolResult from "../../../contract/ToolResult.ts"
import { stringify } from "../../../internal/json.ts"
import { redactValue } from "../../../internal/redact/policy.ts"

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

/** `tracing` when a tracer that exports spans is installed and tracing is enabled; `undefined` otherwise. */
export const whenEnabled = (tracing: Tracing): Effect.Effect<Tracing | undefined> =>
  Effect.withFiber((fiber) =>
    Effect.succeed(
      fiber.getRef(Tracer.Tracer) === Tracer.nativeTracer || !fiber.getRef(References.TracerEnabled) ? undefined : tracing
    )
  )

/** What a span needs to know about how its operation ended. */
interface Settled {
  /** `error.type`; `undefined` when the operation succeeded. */
  readonly errorType?: string | undefined
  readonly attributes?: Readonly<Record<string, unknown>> | undefined
}

const noStack = { captureStackTrace: false } as const

/** Ends `span` with a status that names only the error type (never a message that could quote a value). */
const end = (span: Tracer.Span, clock: Clock.Clock, settled: Settled, exit: Exit.Exit<unknown, unknown>): void => {
  if (span.status._tag === "Ended") return
  if (settled.attributes !== undefined) {
    for (const key in settled.attributes) {
      const value = settled.attributes[key]
      if (value !== undefined) span.attribute(key, value)
    }
  }
  const endTime = span.status.startTime === BigInt(0) ? BigInt(0) : clock.currentTimeNanosUnsafe()
  if (settled.errorType === undefined) {
    span.end(endTime, Exit.isFailure(exit) ? exit : Exit.void)
    return
  }
  span.attribute("error.type", settled.errorType)
  span.end(endTime, Exit.fail({ name: settled.errorType, message: settled.errorType }))
}

/**
 * Runs `effect` in a span (the parent of spans created inside it) and ends the
 * span with what `settle` makes of the exit. An interruption that `settle`
 * does not classify ends the span as interrupted.
 */
const within = <A, E, R>(
  name: string,
  options: Tracer.SpanOptionsNoTrace,
  effect: Effect.Effect<A, E, R>,
  settle: (exit: Exit.Exit<A, E>) => Settled
): Effect.Effect<A, E, R> =>
  Effect.useSpan(name, options, (span) =>
    Effect.onExit(
      Effect.withParentSpan(effect, span, noStack),
      (exit) => Effect.clockWith((clock) => Effect.sync(() => end(span, clock, settle(exit), exit)))
    ))

/**
 * {@link within} for an effect that cannot fail and is not interrupted from
 * outside (a call's lifecycle runs masked and answers its own interruption):
 * the span ends when the value arrives, on `clock` (the run's).
 */
const around = <A, R>(
  name: string,
  options: Tracer.SpanOptionsNoTrace,
  clock: Clock.Clock,
  effect: Effect.Effect<A, never, R>,
  settle: (value: A) => Settled
): Effect.Effect<A, never, R> =>
  Effect.useSpan(name, options, (span) =>
    Effect.map(Effect.withParentSpan(effect, span, noStack), (value) => {
      end(span, clock, settle(value), Exit.void)
      return value
    }))

const toolAttributes = (call: ToolCall, name: string): Record<string, unknown> => ({
  "gen_ai.operation.name": "execute_tool",
  "gen_ai.tool.name": name,
  "gen_ai.tool.call.id": call.id,
  "gen_ai.tool.type": "function"
})

/** The outcome of a call, as `Call` reports it to the batch. */
interface Answered {
  readonly result: ToolResult.ToolResult
  readonly cancelled: boolean
}

const errorTypeOf = (outcome: Answered): string | undefined =>
  outcome.cancelled ? "ToolCancelled" : outcome.result.isError ? outcome.result.error?._tag ?? "ToolError" : undefined

/**
 * The `execute_tool` span of a started call, around everything from
 * `tool.started` to its terminal event. `error.type` is the `_tag` of the
 * error behind an error result (`ToolTimeout`, `ToolFailure`, `ApprovalDenied`,
 * `ToolDefect`, ...), `ToolCancelled` for an interrupted call.
 */
export const executed = <O extends Answered | undefined, R>(
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
        "gen_ai.tool.call.result": tracing.recordResults && !outcome.cancelled
          ? ToolResult.textOf(outcome.result)
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

/** `error.type` of a failure: its `_tag` when it has one, else `_OTHER`. */
const tagOf = (error: unknown): string =>
  typeof error === "object" && error !== null && "_tag" in error && typeof error._tag === "string"
    ? error._tag
    : "_OTHER"

const failureType = <A, E>(exit: Exit.Exit<A, E>, classify: (error: E) => string): string | undefined => {
  if (Exit.isSuccess(exit)) return undefined
  const failure = exit.cause.reasons.find((reason) => reason._tag === "Fail")
  if (failure !== undefined) return classify(failure.error)
  const defect = exit.cause.reasons.find((reason) => reason._tag === "Die")
  return defect === undefined ? undefined : "_OTHER"
}

/**
 * The agent run: `invoke_agent [name]`, kind INTERNAL (an in-process agent). The run adds
 * `gen_ai.conversation.id` (thread id) and `tinyagents.run.id`; the end adds the stop reason,
 * turns and token usage, or `error.type` (the `_tag` of the error that ended the run).
 */
export const agent = <A extends AgentSummary, E extends { readonly error: unknown }, R>(
  name: string | undefined,
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> =>
  within(
    name === undefined ? "invoke_agent" : `invoke_agent ${name}`,
    {
      kind: "internal",
      attributes: {
        "gen_ai.operation.name": "invoke_agent",
        ...(name === undefined ? {} : { "gen_ai.agent.name": name })
      }
    },
    effect,
    (exit) => ({
      errorType: failureType(exit, (failed) => tagOf(failed.error)),
      attributes: Exit.isSuccess(exit)
        ? {
          "tinyagents.agent.stop_reason": exit.value.reason,
          "tinyagents.agent.turns": exit.value.turns,
          "gen_ai.usage.input_tokens": exit.value.usage.inputTokens,
          "gen_ai.usage.output_tokens": exit.value.usage.outputTokens
        }
        : undefined
    })
  )

interface AgentSummary {
  readonly reason: string
  readonly turns: number
  readonly usage: { readonly inputTokens: number; readonly outputTokens: number }
}

/** One agent turn (the model call and the tool batch): `agent_turn`, with `tinyagents.agent.turn`. */
export const turn = <A, E extends { readonly error: unknown }, R>(
  index: number,
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> =>
  within(
    "agent_turn",
    { kind: "internal", attributes: { "tinyagents.agent.turn": index } },
    effect,
    (exit) => ({ errorType: failureType(exit, (failed) => tagOf(failed.error)) })
  )

/**
 * The model call: `chat`, kind CLIENT, `gen_ai.operation.name` `chat`, token
 * usage on success; `error.type` is the `ChatModelError` reason (`timeout`,
 * `rate_limited`, `http`, ...). Messages and replies are never attached.
 */
export const chat = <
  A extends { readonly usage: AgentSummary["usage"]; readonly toolCalls: ReadonlyArray<unknown> },
  E extends { readonly reason: string },
  R
>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  within(
    "chat",
    { kind: "client", attributes: { "gen_ai.operation.name": "chat" } },
    effect,
    (exit) => ({
      errorType: failureType(exit, (error) => error.reason),
      attributes: Exit.isSuccess(exit)
        ? {
          "gen_ai.usage.input_tokens": exit.value.usage.inputTokens,
          "gen_ai.usage.output_tokens": exit.value.usage.outputTokens,
          "tinyagents.model.tool_calls": exit.value.toolCalls.length
        }
        : undefined
    })
  )
