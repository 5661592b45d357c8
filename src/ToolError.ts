/**
 * The tagged error families of tool execution. Every error says what happens
 * next through its `disposition`: `"repair"` (tell the model, it can fix its
 * call), `"retry"` (run again per the tool's schedule) or `"fatal"` (stop the
 * run). Messages of repairable errors are written for a model to act on; fatal
 * errors never show a model their cause.
 */
import { Cause, Data, Predicate } from "effect"

/** What happens next after an error. */
export type Disposition = "repair" | "retry" | "fatal"

/** One problem found in a tool's arguments or output: where, and what. */
export interface Issue {
  readonly path: ReadonlyArray<PropertyKey>
  readonly message: string
}

/** Renders an issue path as `"a"."b"[0]`, or `(root)` for the top level. */
export const formatPath = (path: ReadonlyArray<PropertyKey>): string =>
  path.length === 0
    ? "(root)"
    : path.map((key, i) => typeof key === "number" ? `[${key}]` : `${i === 0 ? "" : "."}${JSON.stringify(String(key))}`)
      .join("")

// ---------------------------------------------------------------------------
// repairable
// ---------------------------------------------------------------------------

/** The model called a tool that does not exist. */
export class ToolNotFound extends Data.TaggedError("ToolNotFound")<{
  readonly toolName: string
  readonly advertised: ReadonlyArray<string>
}> {
  readonly disposition = "repair" as const
  override get message(): string {
    return `unknown tool ${JSON.stringify(this.toolName)}; available tools: ${
      this.advertised.length === 0 ? "(none)" : this.advertised.join(", ")
    }`
  }
}

/** The tool exists but was not advertised to the model this turn. */
export class ToolNotAllowed extends Data.TaggedError("ToolNotAllowed")<{
  readonly toolName: string
  readonly advertised: ReadonlyArray<string>
}> {
  readonly disposition = "repair" as const
  override get message(): string {
    return `tool ${JSON.stringify(this.toolName)} is not available this turn; available tools: ${
      this.advertised.length === 0 ? "(none)" : this.advertised.join(", ")
    }`
  }
}

/** The arguments are not JSON, or not a JSON object. Never replaced by `{}`. */
export class MalformedArguments extends Data.TaggedError("MalformedArguments")<{
  readonly toolName: string
  readonly reason: string
}> {
  readonly disposition = "repair" as const
  override get message(): string {
    return `${this.toolName}: malformed arguments: ${this.reason}`
  }
}

/** The arguments are a JSON object that the tool's input schema rejects. */
export class InvalidArguments extends Data.TaggedError("InvalidArguments")<{
  readonly toolName: string
  readonly issues: ReadonlyArray<Issue>
}> {
  readonly disposition = "repair" as const
  override get message(): string {
    return `${this.toolName}: invalid arguments: ${
      this.issues.map((i) => `at ${formatPath(i.path)}: ${i.message}`).join("; ")
    }`
  }
}

/**
 * A per-run or per-tool call limit was reached. In `continue` mode the model is
 * told not to call the tool again (repairable); in `error` mode the run stops.
 */
export class ToolCallLimitExceeded extends Data.TaggedError("ToolCallLimitExceeded")<{
  readonly toolName: string
  readonly scope: "run" | "tool"
  readonly limit: number
  readonly mode: "error" | "continue"
}> {
  get disposition(): Disposition {
    return this.mode === "continue" ? "repair" : "fatal"
  }
  override get message(): string {
    return this.scope === "run"
      ? `${this.toolName}: the run's limit of ${this.limit} tool calls is reached; do not call more tools`
      : `${this.toolName}: the limit of ${this.limit} calls to this tool is reached; do not call it again`
  }
}

/**
 * A handler's user-facing failure: the model reads `message` (and `detail`,
 * when given) and may try again differently.
 */
export class ToolFailure extends Data.TaggedError("ToolFailure")<{
  readonly message: string
  readonly detail?: unknown
}> {
  readonly disposition = "repair" as const
}

/** A handler's transient failure: retried per the tool's schedule when it is safe. */
export class ToolTransient extends Data.TaggedError("ToolTransient")<{
  readonly message: string
  readonly cause?: unknown
}> {
  readonly disposition = "retry" as const
}

/**
 * The handler did not finish in time. Retryable for idempotent tools; for the
 * others the side effect may or may not have happened, so it is not retried.
 */
export class ToolTimeout extends Data.TaggedError("ToolTimeout")<{
  readonly toolName: string
  readonly timeoutMillis: number
  readonly idempotent: boolean
}> {
  get disposition(): Disposition {
    return this.idempotent ? "retry" : "repair"
  }
  override get message(): string {
    return this.idempotent
      ? `${this.toolName}: timed out after ${this.timeoutMillis} ms`
      : `${this.toolName}: timed out after ${this.timeoutMillis} ms; it may or may not have completed`
  }
}

/** An approval step refused the call. */
export class ApprovalDenied extends Data.TaggedError("ApprovalDenied")<{
  readonly toolName: string
  readonly reason: string
}> {
  readonly disposition = "repair" as const
  override get message(): string {
    return `${this.toolName}: the call was not approved: ${this.reason}`
  }
}

/** A safety policy or scope refused the call. */
export class PolicyBlocked extends Data.TaggedError("PolicyBlocked")<{
  readonly toolName: string
  readonly reason: string
  readonly status: "policy_blocked" | "scope_violation" | "rate_limited"
  readonly repairable: boolean
}> {
  get disposition(): Disposition {
    return this.repairable ? "repair" : "fatal"
  }
  override get message(): string {
    return `${this.toolName}: refused: ${this.reason}`
  }
}

// ---------------------------------------------------------------------------
// fatal
// ---------------------------------------------------------------------------

/**
 * The handler threw, died, or failed with an error it did not declare. The
 * model sees only "internal error in tool X"; the full cause stays here.
 */
export class ToolDefect extends Data.TaggedError("ToolDefect")<{
  readonly toolName: string
  readonly cause: Cause.Cause<unknown>
}> {
  readonly disposition = "fatal" as const
  override get message(): string {
    return `internal error in tool ${this.toolName}`
  }
}

/** A middleware's own failure; names the middleware. */
export class MiddlewareFailed extends Data.TaggedError("MiddlewareFailed")<{
  readonly toolName: string
  readonly middleware: string
  readonly cause: Cause.Cause<unknown>
}> {
  readonly disposition = "fatal" as const
  override get message(): string {
    return `middleware ${JSON.stringify(this.middleware)} failed while handling tool ${this.toolName}`
  }
}

/** The handler returned a value that its own output schema rejects: a defect. */
export class InvalidOutput extends Data.TaggedError("InvalidOutput")<{
  readonly toolName: string
  readonly issues: ReadonlyArray<Issue>
}> {
  readonly disposition = "fatal" as const
  override get message(): string {
    return `${this.toolName}: output does not match its schema: ${
      this.issues.map((i) => `at ${formatPath(i.path)}: ${i.message}`).join("; ")
    }`
  }
}

/** A store (artifacts, idempotency cache, ...) failed. */
export class StoreFailed extends Data.TaggedError("StoreFailed")<{
  readonly store: string
  readonly operation: string
  readonly cause: unknown
}> {
  readonly disposition = "fatal" as const
  override get message(): string {
    return `store ${JSON.stringify(this.store)} failed to ${this.operation}`
  }
}

/** The call was cancelled (its fiber interrupted) before it could finish. */
export class ToolCancelled extends Data.TaggedError("ToolCancelled")<{
  readonly toolName: string
  readonly started: boolean
}> {
  readonly disposition = "fatal" as const
  override get message(): string {
    return this.started ? `${this.toolName}: cancelled while running` : `${this.toolName}: cancelled before it started`
  }
}

/** Every error the runtime produces for a tool call. */
export type ToolError =
  | ToolNotFound
  | ToolNotAllowed
  | MalformedArguments
  | InvalidArguments
  | ToolCallLimitExceeded
  | ToolFailure
  | ToolTransient
  | ToolTimeout
  | ApprovalDenied
  | PolicyBlocked
  | ToolDefect
  | MiddlewareFailed
  | InvalidOutput
  | StoreFailed
  | ToolCancelled

/** Errors refused before execution (lifecycle steps 1 to 4). */
export type Rejection =
  | ToolNotFound
  | ToolNotAllowed
  | MalformedArguments
  | InvalidArguments
  | ToolCallLimitExceeded

const tags: ReadonlySet<string> = new Set<ToolError["_tag"]>([
  "ToolNotFound",
  "ToolNotAllowed",
  "MalformedArguments",
  "InvalidArguments",
  "ToolCallLimitExceeded",
  "ToolFailure",
  "ToolTransient",
  "ToolTimeout",
  "ApprovalDenied",
  "PolicyBlocked",
  "ToolDefect",
  "MiddlewareFailed",
  "InvalidOutput",
  "StoreFailed",
  "ToolCancelled"
])

/** True for any error of this module. */
export const isToolError = (u: unknown): u is ToolError =>
  Predicate.hasProperty(u, "_tag") && typeof u._tag === "string" && tags.has(u._tag) && u instanceof Error

/** What happens next after `error`. */
export const disposition = (error: ToolError): Disposition => error.disposition

/** A user-facing failure for the model to read (repairable). */
export const repairable = (message: string, detail?: unknown): ToolFailure =>
  new ToolFailure(detail === undefined ? { message } : { message, detail })

/** A transient failure, retried when the tool's policy allows (retryable). */
export const retryable = (message: string, cause?: unknown): ToolTransient =>
  new ToolTransient(cause === undefined ? { message } : { message, cause })
