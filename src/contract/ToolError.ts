/**
 * The tagged error families of tool execution. Every error says what happens
 * next through its `disposition`: `"repair"` (tell the model, it can fix its
 * call), `"retry"` (run again per the tool's schedule) or `"fatal"` (stop the
 * run). Messages of repairable errors are written for a model to act on; fatal
 * errors never show a model their cause.
 *
 * Errors are data: each class is a `Schema.TaggedError` (the class is the
 * schema of its fields), and the {@link ToolError} schema, the one events use,
 * encodes any of them to plain JSON with the derived `message` and
 * `disposition` added. A `Cause` field encodes to its rendered text
 * ({@link CauseFromText}); other unknown values encode as JSON ({@link JsonData},
 * `Schema.Defect` for causes).
 */
import { Cause, Formatter, Predicate, Schema, SchemaTransformation } from "effect"
import { deeperThan, stringify } from "../internal/json.ts"

/** What happens next after an error. */
export type Disposition = "repair" | "retry" | "fatal"

/** The schema of a {@link Disposition}. */
export const Disposition: Schema.Codec<Disposition> = Schema.Literals(["repair", "retry", "fatal"])

// ---------------------------------------------------------------------------
// codecs shared by errors and events
// ---------------------------------------------------------------------------

const renderCause = (cause: Cause.Cause<unknown>): string => {
  const only = cause.reasons.length === 1 ? cause.reasons[0]! : undefined
  // A cause decoded from text is a defect holding that text: it renders as the text itself.
  if (only !== undefined && Cause.isDieReason(only) && typeof only.defect === "string") return only.defect
  return Cause.pretty(cause)
}

/**
 * A `Cause` encoded as its rendered text (`Cause.pretty`, stack traces
 * included). Decoding gives a `Cause` whose single defect (`Cause.die`) is
 * that text (the empty text gives `Cause.empty`), which encodes to the same
 * text again: the failures' structure and values are not kept.
 */
export const CauseFromText: Schema.Codec<Cause.Cause<unknown>, string> = Schema.String.pipe(
  Schema.decodeTo(
    Schema.declare((u): u is Cause.Cause<unknown> => Cause.isCause(u), { expected: "Cause" }),
    SchemaTransformation.transform({
      decode: (text: string): Cause.Cause<unknown> => text === "" ? Cause.empty : Cause.die(text),
      encode: renderCause
    })
  )
)

const isJson = Schema.is(Schema.Json)

/** Values nested deeper than this encode as their JSON text: Effect's JSON codec walks a value recursively. */
const deepestJson = 256

const toJson = (value: unknown): Schema.Json => {
  if (deeperThan(value, deepestJson)) {
    try {
      const text = stringify(value)
      if (text !== undefined) return text
    } catch {
      // a cycle: formatted below
    }
  }
  if (isJson(value)) return value
  try {
    const json = Formatter.formatJson(value)
    return json === undefined ? Formatter.format(value) : JSON.parse(json) as Schema.Json
  } catch {
    return Formatter.format(value)
  }
}

/**
 * Any value, encoded as JSON: JSON values as they are; anything else (a
 * `Date`, a class instance, `undefined`) as its JSON form (`toJSON`, own
 * fields, `Redacted` redacted) or, failing that, its formatted text. A value
 * nesting objects and arrays more than 256 levels deep (a model's hostile
 * arguments) encodes as its JSON text, a string. Decoding returns the JSON
 * value unchanged.
 */
export const JsonData: Schema.Codec<unknown, Schema.Json> = Schema.Json.pipe(
  Schema.decodeTo(
    Schema.Unknown,
    SchemaTransformation.transform({ decode: (json: Schema.Json): unknown => json, encode: toJson })
  )
)

/** One problem found in a tool's arguments or output: where, and what. */
export interface Issue {
  readonly path: ReadonlyArray<PropertyKey>
  readonly message: string
}

/** A path key as JSON: strings and numbers as they are, a symbol as its text (`Symbol(name)`). */
const PathKey: Schema.Codec<PropertyKey, string | number> = Schema.Union([Schema.String, Schema.Number]).pipe(
  Schema.decodeTo(
    Schema.declare((u): u is PropertyKey => Predicate.isPropertyKey(u), { expected: "PropertyKey" }),
    SchemaTransformation.transform({
      decode: (key: string | number): PropertyKey => key,
      encode: (key: PropertyKey): string | number => typeof key === "symbol" ? String(key) : key
    })
  )
)

/** The schema of an {@link Issue}. */
export const Issue: Schema.Codec<Issue, { readonly path: ReadonlyArray<string | number>; readonly message: string }> =
  Schema.Struct({ path: Schema.Array(PathKey), message: Schema.String })

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
export class ToolNotFound extends Schema.TaggedError<ToolNotFound>()("ToolNotFound", {
  toolName: Schema.String,
  advertised: Schema.Array(Schema.String)
}) {
  readonly disposition = "repair" as const
  override get message(): string {
    return `unknown tool ${JSON.stringify(this.toolName)}; available tools: ${
      this.advertised.length === 0 ? "(none)" : this.advertised.join(", ")
    }`
  }
}

/**
 * The tool exists but was not advertised to the model this turn. `searchWith`: the tool is deferred
 * (`ToolSearch`) and not revealed yet: the model should search with that tool first.
 */
export class ToolNotAllowed extends Schema.TaggedError<ToolNotAllowed>()("ToolNotAllowed", {
  toolName: Schema.String,
  advertised: Schema.Array(Schema.String),
  searchWith: Schema.optionalKey(Schema.String)
}) {
  readonly disposition = "repair" as const
  override get message(): string {
    const available = this.advertised.length === 0 ? "(none)" : this.advertised.join(", ")
    return this.searchWith === undefined
      ? `tool ${JSON.stringify(this.toolName)} is not available this turn; available tools: ${available}`
      : `tool ${JSON.stringify(this.toolName)} is not loaded yet: call ${this.searchWith} first with what you need, ` +
        `then call a tool it returns; available tools: ${available}`
  }
}

/** The arguments are not JSON, or not a JSON object. Never replaced by `{}`. */
export class MalformedArguments extends Schema.TaggedError<MalformedArguments>()("MalformedArguments", {
  toolName: Schema.String,
  reason: Schema.String
}) {
  readonly disposition = "repair" as const
  override get message(): string {
    return `${this.toolName}: malformed arguments: ${this.reason}`
  }
}

/** The arguments are a JSON object that the tool's input schema rejects. */
export class InvalidArguments extends Schema.TaggedError<InvalidArguments>()("InvalidArguments", {
  toolName: Schema.String,
  issues: Schema.Array(Issue)
}) {
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
export class ToolCallLimitExceeded extends Schema.TaggedError<ToolCallLimitExceeded>()("ToolCallLimitExceeded", {
  toolName: Schema.String,
  scope: Schema.Literals(["run", "tool"]),
  limit: Schema.Number,
  mode: Schema.Literals(["error", "continue"])
}) {
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
export class ToolFailure extends Schema.TaggedError<ToolFailure>()("ToolFailure", {
  message: Schema.String,
  /** Structured detail for the model (encoded as JSON). */
  detail: Schema.optionalKey(JsonData)
}) {
  readonly disposition = "repair" as const
}

/** A handler's transient failure: retried per the tool's schedule when it is safe. */
export class ToolTransient extends Schema.TaggedError<ToolTransient>()("ToolTransient", {
  message: Schema.String,
  cause: Schema.optionalKey(Schema.Defect())
}) {
  readonly disposition = "retry" as const
}

/**
 * The handler did not finish in time. Retryable for idempotent tools; for the
 * others the side effect may or may not have happened, so it is not retried.
 */
export class ToolTimeout extends Schema.TaggedError<ToolTimeout>()("ToolTimeout", {
  toolName: Schema.String,
  timeoutMillis: Schema.Number,
  idempotent: Schema.Boolean
}) {
  get disposition(): Disposition {
    return this.idempotent ? "retry" : "repair"
  }
  override get message(): string {
    return this.idempotent
      ? `${this.toolName}: timed out after ${this.timeoutMillis} ms`
      : `${this.toolName}: timed out after ${this.timeoutMillis} ms; it may or may not have completed`
  }
}

/**
 * A durable run's re-run of a call that started before its process stopped and left no result: the
 * call may have had its effect, so it is not run again (see `tinyagents/durable`). Like a
 * non-idempotent tool's timeout, the model reads that it may or may not have completed.
 */
export class OutcomeUnknown extends Schema.TaggedError<OutcomeUnknown>()("OutcomeUnknown", {
  toolName: Schema.String
}) {
  readonly disposition = "repair" as const
  override get message(): string {
    return `${this.toolName}: the process running this call stopped before its result was recorded; ` +
      `it may or may not have completed`
  }
}

/** An approval step refused the call. */
export class ApprovalDenied extends Schema.TaggedError<ApprovalDenied>()("ApprovalDenied", {
  toolName: Schema.String,
  reason: Schema.String
}) {
  readonly disposition = "repair" as const
  override get message(): string {
    return `${this.toolName}: the call was not approved: ${this.reason}`
  }
}

/** A safety policy or scope refused the call. */
export class PolicyBlocked extends Schema.TaggedError<PolicyBlocked>()("PolicyBlocked", {
  toolName: Schema.String,
  reason: Schema.String,
  status: Schema.Literals(["policy_blocked", "scope_violation", "rate_limited"]),
  repairable: Schema.Boolean
}) {
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
export class ToolDefect extends Schema.TaggedError<ToolDefect>()("ToolDefect", {
  toolName: Schema.String,
  cause: CauseFromText
}) {
  readonly disposition = "fatal" as const
  override get message(): string {
    return `internal error in tool ${this.toolName}`
  }
}

/** A middleware's own failure; names the middleware. */
export class MiddlewareFailed extends Schema.TaggedError<MiddlewareFailed>()("MiddlewareFailed", {
  toolName: Schema.String,
  middleware: Schema.String,
  cause: CauseFromText
}) {
  readonly disposition = "fatal" as const
  override get message(): string {
    return `middleware ${JSON.stringify(this.middleware)} failed while handling tool ${this.toolName}`
  }
}

/** The handler returned a value that its own output schema rejects: a defect. */
export class InvalidOutput extends Schema.TaggedError<InvalidOutput>()("InvalidOutput", {
  toolName: Schema.String,
  issues: Schema.Array(Issue)
}) {
  readonly disposition = "fatal" as const
  override get message(): string {
    return `${this.toolName}: output does not match its schema: ${
      this.issues.map((i) => `at ${formatPath(i.path)}: ${i.message}`).join("; ")
    }`
  }
}

/** Error codes of a store that is unreachable, restarting or busy: a retry can succeed. */
const transientCodes: ReadonlySet<string> = new Set([
  "ECONNREFUSED", "ECONNRESET", "ECONNABORTED", "EPIPE", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH", "ENOTCONN",
  "EAI_AGAIN", "SQLITE_BUSY", "SQLITE_LOCKED",
  // Postgres SQLSTATEs: connection exceptions, server shutting down or starting, serialization, deadlock, lock wait
  "08000", "08001", "08003", "08004", "08006", "57P01", "57P02", "57P03", "40001", "40P01", "55P03"
])
const transientNames: ReadonlySet<string> = new Set([
  "TimeoutError", "ConnectionTimeoutError", "SocketClosedUnexpectedlyError", "ClientClosedError", "ConnectionError",
  "LockTimeoutError", "DeadlockError", "SerializationError", "StatementTimeoutError"
])

/**
 * Error codes of a store that is misconfigured, which no retry fixes: an invalid URL (Node's
 * `ERR_INVALID_URL`), Postgres's invalid authorization (28000), wrong password (28P01), unknown
 * database (3D000), and SQLite's authorization failures.
 */
const permanentCodes: ReadonlySet<string> = new Set(["ERR_INVALID_URL", "28000", "28P01", "3D000", "SQLITE_AUTH", "SQLITE_PERM"])
const permanentNames: ReadonlySet<string> = new Set(["AuthenticationError", "AuthorizationError"])
/** Redis's replies to a wrong or missing password or user, or a command the user may not run. */
const permanentReply = /^(WRONGPASS|NOAUTH|NOPERM)\b|^ERR (invalid password|invalid username-password pair|AUTH )/

/** The errors `cause` wraps, itself first: through `reason`, `cause` and node-redis's `originalError`. */
const chainOf = (cause: unknown): ReadonlyArray<Record<string, unknown>> => {
  const chain: Array<Record<string, unknown>> = []
  const visit = (current: unknown, depth: number): void => {
    if (depth >= 8 || typeof current !== "object" || current === null || chain.includes(current as Record<string, unknown>)) return
    const record = current as Record<string, unknown>
    chain.push(record)
    for (const key of ["reason", "cause", "originalError"]) visit(record[key], depth + 1)
  }
  visit(cause, 0)
  return chain
}

const codeOf = (record: Record<string, unknown>): string | undefined => {
  const code = record["code"]
  return typeof code === "string" ? code.split(":")[0]! : typeof code === "number" ? String(code) : undefined
}

/** True when `record` says the store is misconfigured (wrong password, no such database, invalid URL). */
const isPermanent = (record: Record<string, unknown>): boolean => {
  const code = codeOf(record)
  if (code !== undefined && (permanentCodes.has(code) || /^SQLITE_(AUTH|PERM)/.test(code))) return true
  for (const key of ["_tag", "name"]) {
    const name = record[key]
    if (typeof name === "string" && permanentNames.has(name)) return true
  }
  const message = record["message"]
  return typeof message === "string" && (permanentReply.test(message) || /^Invalid URL\b/.test(message))
}

/** True when `record` says the store is unreachable, restarting or busy. */
const isTransient = (record: Record<string, unknown>): boolean => {
  if (record["isRetryable"] === true) return true
  const code = codeOf(record)
  if (code !== undefined && (transientCodes.has(code) || /^SQLITE_(BUSY|LOCKED)/.test(code))) return true
  for (const key of ["_tag", "name"]) {
    const name = record[key]
    if (typeof name === "string" && transientNames.has(name)) return true
  }
  return false
}

/**
 * True when a store failure's `cause` is transient (connection refused, dropped or timed out, a
 * server restarting, `SQLITE_BUSY`, a deadlock): the cause, or any cause it wraps (`cause`,
 * `reason`, `originalError`), says so by its code, its tag or name, or an `isRetryable` of `true`
 * (Effect's `SqlError`). A misconfiguration anywhere in the chain wins, as no retry fixes it: a wrong
 * password or user (Postgres 28P01, 28000; Redis `WRONGPASS`, `NOAUTH`), an unknown database
 * (3D000), an invalid URL (even inside a "retryable" connection error).
 */
export const isTransientStoreCause = (cause: unknown): boolean => {
  const chain = chainOf(cause)
  return !chain.some(isPermanent) && chain.some(isTransient)
}

/**
 * A store (artifacts, idempotency cache, claims, ...) failed at `operation`. `retryable` says what
 * happens next: `true` for a transient failure (the store is unreachable, restarting or busy; set
 * from the cause by {@link isTransientStoreCause} when not given), so the disposition is `"retry"`;
 * otherwise `"fatal"` (a bad store name, a schema or decoding failure). The message names the store
 * and the operation only, never a key's value; the cause is kept for operators.
 */
export class StoreFailed extends Schema.TaggedError<StoreFailed>()("StoreFailed", {
  store: Schema.String,
  operation: Schema.String,
  cause: Schema.Defect(),
  retryable: Schema.optionalKey(Schema.Boolean)
}) {
  // @effect-diagnostics-next-line overriddenSchemaConstructor:off
  constructor(
    props: {
      readonly store: string
      readonly operation: string
      readonly cause: unknown
      readonly retryable?: boolean
    },
    options?: Schema.MakeOptions
  ) {
    super(
      props.retryable === undefined && isTransientStoreCause(props.cause) ? { ...props, retryable: true } : props,
      options
    )
  }

  get disposition(): "retry" | "fatal" {
    return this.retryable === true ? "retry" : "fatal"
  }

  override get message(): string {
    return `store ${JSON.stringify(this.store)} failed to ${this.operation}${
      this.retryable === true ? " (unavailable for now: retry later)" : ""
    }`
  }
}

/** The call was cancelled (its fiber interrupted) before it could finish. */
export class ToolCancelled extends Schema.TaggedError<ToolCancelled>()("ToolCancelled", {
  toolName: Schema.String,
  started: Schema.Boolean
}) {
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
  | OutcomeUnknown
  | ApprovalDenied
  | PolicyBlocked
  | ToolDefect
  | MiddlewareFailed
  | InvalidOutput
  | StoreFailed
  | ToolCancelled

/** An error class: its constructor and the schemas of its fields. */
interface ErrorClass<Self extends ToolError> {
  /** Every error class fits (`never`); `described` calls it with its own decoded fields. */
  new(props: never): Self
  readonly fields: Schema.Struct.Fields
  readonly Encoded: object
}

const pick = (value: object, keys: ReadonlyArray<string>): Record<string, unknown> => {
  const out: Record<string, unknown> = {}
  for (const key of keys) if (Object.hasOwn(value, key)) out[key] = (value as Record<string, unknown>)[key]
  return out
}

/**
 * An error class's schema with the derived `message` and `disposition` added
 * to the encoded form (for readers of the JSON); decoding ignores them and
 * rebuilds both from the fields.
 */
const described = <Self extends ToolError, const C extends ErrorClass<Self>>(
  cls: C & ErrorClass<Self>
): Schema.Codec<Self, C["Encoded"] & { readonly message?: string; readonly disposition?: Disposition }> => {
  const keys = Object.keys(cls.fields)
  const fields = {
    _tag: cls.fields["_tag"]!,
    message: Schema.optionalKey(Schema.String),
    disposition: Schema.optionalKey(Disposition),
    ...cls.fields
  }
  const struct = Schema.Struct(fields) as unknown as Schema.Codec<object, unknown>
  return struct.pipe(
    Schema.decodeTo(
      Schema.toType(cls as unknown as Schema.Codec<Self, unknown>),
      SchemaTransformation.transform<Self, object>({
        decode: (input) => new cls(pick(input, keys) as never),
        encode: (error) => ({ ...pick(error, keys), message: error.message, disposition: error.disposition })
      })
    )
  ) as never
}

/**
 * The schema of every {@link ToolError}, as used in events. Encoded:
 * `{ _tag, message, disposition, ...fields }`, plain JSON (a `Cause` as its
 * rendered text); decoded: an instance of the error's class.
 */
export const ToolError = Schema.Union([
  described(ToolNotFound),
  described(ToolNotAllowed),
  described(MalformedArguments),
  described(InvalidArguments),
  described(ToolCallLimitExceeded),
  described(ToolFailure),
  described(ToolTransient),
  described(ToolTimeout),
  described(OutcomeUnknown),
  described(ApprovalDenied),
  described(PolicyBlocked),
  described(ToolDefect),
  described(MiddlewareFailed),
  described(InvalidOutput),
  described(StoreFailed),
  described(ToolCancelled)
]).pipe(Schema.toTaggedUnion("_tag"))

/** Errors refused before execution (lifecycle step 1, admission: `tool.rejected`). */
export type Rejection =
  | ToolNotFound
  | ToolNotAllowed
  | MalformedArguments
  | InvalidArguments
  | ToolCallLimitExceeded

const tags: ReadonlySet<string> = new Set(ToolError.discriminants)

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
