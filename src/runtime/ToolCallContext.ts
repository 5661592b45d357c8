/**
 * The call a handler is running for: call id, canonical tool name, attempt,
 * idempotency key, turn, and the attempt's `AbortSignal` (like the AI SDK's
 * `execute(input, { toolCallId, abortSignal })`). A hidden service: handlers
 * read it with `yield* ToolCallContext` (list it in `services`); it never
 * reaches a schema. The executor provides it for every call; `layer` gives a
 * fixed one for direct handler tests. It does not own cancellation of the run
 * (that is `Cancellation`).
 */
import { Context, Effect, Layer } from "effect"

export interface ToolCallInfo {
  /** The provider's call id. */
  readonly toolCallId: string
  /** Canonical tool name. */
  readonly toolName: string
  /** The current attempt: 1 for the first, 2 for the first retry, ... */
  readonly attempt: number
  /** The call's idempotency key, for tools that declare `idempotency`. */
  readonly idempotencyKey: string | undefined
  /** The agent turn, from `RunContext`. */
  readonly turn: number
  /** Aborts when the current attempt is interrupted (timeout, cancellation); never reused by the next attempt. */
  readonly abortSignal: AbortSignal
}

export class ToolCallContext extends Context.Service<ToolCallContext, ToolCallInfo>()("tinyagents/ToolCallContext") {
  /** A fixed context (a signal that never aborts unless given): for tests and direct handler calls. */
  static readonly layer = (info: Partial<ToolCallInfo> = {}): Layer.Layer<ToolCallContext> =>
    Layer.sync(ToolCallContext, () => ({
      toolCallId: "test-call",
      toolName: "test_tool",
      attempt: 1,
      idempotencyKey: undefined,
      turn: 0,
      abortSignal: new AbortController().signal,
      ...info
    }))
}

/** A fixed context (the same as `ToolCallContext.layer`). */
export const layer: (info?: Partial<ToolCallInfo>) => Layer.Layer<ToolCallContext> = ToolCallContext.layer

/** The current call. */
export const current: Effect.Effect<ToolCallInfo, never, ToolCallContext> = ToolCallContext

/** The current call's idempotency key (`undefined` for tools without one). */
export const idempotencyKey: Effect.Effect<string | undefined, never, ToolCallContext> = ToolCallContext.useSync((info) =>
  info.idempotencyKey
)
