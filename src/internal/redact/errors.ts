/**
 * A `Scrubber` (see `policy.ts`) applied to errors: every text and value a `ToolError` carries (messages,
 * reasons, issue messages, details, causes), so its message, its encoding in events and the model's
 * text of it are all scrubbed. A rejection's issues at a redacted key never quote the value they got.
 */
import { Cause, Schema } from "effect"
import type { Redact } from "../../contract/Safety.ts"
import * as ToolError from "../../contract/ToolError.ts"
import { stringify } from "../json.ts"
import { isEmpty, type Scrubber, scrubberOf, secretsUnder } from "./policy.ts"
import { marker, scrubbedRegions, searchable, secretForms, withRegionsRedacted } from "./text.ts"

/**
 * Any value, with the scrubber applied: strings as text; an `Error` as a new
 * `Error` of the same name whose message and stack are scrubbed (its own
 * fields scrubbed as values); anything else as a value.
 */
const scrubUnknown = (value: unknown, scrubber: Scrubber): unknown => {
  if (typeof value === "string") return scrubber.text(value)
  if (ToolError.isToolError(value)) return scrubError(value, scrubber)
  if (value instanceof Error) {
    const message = scrubber.text(value.message)
    const stack = value.stack === undefined ? undefined : scrubber.text(value.stack)
    const own: Record<string, unknown> = {}
    let ownChanged = false
    for (const [key, child] of Object.entries(value)) {
      if (key === "message" || key === "stack") continue
      const scrubbed = scrubber.value(child)
      own[key] = scrubbed
      if (stringify(scrubbed) !== stringify(child)) ownChanged = true
    }
    if (message === value.message && stack === value.stack && !ownChanged) return value
    const copy = new Error(message)
    Object.assign(copy, own)
    Object.defineProperty(copy, "name", { value: value.name, enumerable: false, configurable: true, writable: true })
    copy.stack = stack ?? `${value.name}: ${message}`
    return copy
  }
  if (value === null || typeof value !== "object") return value
  const scrubbed = scrubber.value(value)
  try {
    return stringify(scrubbed) === stringify(value) ? value : scrubbed
  } catch {
    return scrubbed
  }
}

const renderCause = (cause: Cause.Cause<unknown>): string => {
  const only = cause.reasons.length === 1 ? cause.reasons[0]! : undefined
  if (only !== undefined && Cause.isDieReason(only) && typeof only.defect === "string") return only.defect
  return Cause.pretty(cause)
}

/**
 * A cause with the scrubber applied to its failures and defects and to its
 * rendering. Unchanged causes are returned as they are (structure kept); a
 * changed one becomes a defect holding its scrubbed rendering (the text the
 * `ToolError` schemas encode a cause to), so no value of the original is kept.
 */
export const scrubCause = (cause: Cause.Cause<unknown>, scrubber: Scrubber): Cause.Cause<unknown> => {
  if (cause.reasons.length === 0) return cause
  const before = renderCause(cause)
  let changed = false
  const reasons = cause.reasons.map((reason) => {
    if (Cause.isFailReason(reason)) {
      const error = scrubUnknown(reason.error, scrubber)
      if (error === reason.error) return reason
      changed = true
      return Cause.makeFailReason(error)
    }
    if (Cause.isDieReason(reason)) {
      const defect = scrubUnknown(reason.defect, scrubber)
      if (defect === reason.defect) return reason
      changed = true
      return Cause.makeDieReason(defect)
    }
    return reason
  })
  const after = scrubber.text(changed ? renderCause(Cause.fromReasons(reasons)) : before)
  return after === before ? cause : Cause.die(after)
}

/** {@link scrubCause} under a `Redact` policy. */
export const redactCause = (
  cause: Cause.Cause<unknown>,
  policy: Redact | undefined,
  root?: unknown
): Cause.Cause<unknown> => {
  const scrubber = scrubberOf(policy, root)
  return scrubber === undefined ? cause : scrubCause(cause, scrubber)
}

const scrubIssues = (
  issues: ReadonlyArray<ToolError.Issue>,
  scrubber: Scrubber
): ReadonlyArray<ToolError.Issue> | undefined => {
  let changed = false
  const out = issues.map((issue) => {
    const message = scrubber.text(issue.message)
    if (message === issue.message) return issue
    changed = true
    return { path: issue.path, message }
  })
  return changed ? out : undefined
}

/**
 * `error` with the scrubber applied to every string and value it carries
 * (messages, reasons, issue messages, details, causes), so that its message,
 * its encoding in events and the model's text of it are all scrubbed. The same
 * instance when nothing changed.
 */
export const scrubError = <E extends ToolError.ToolError>(error: E, scrubber: Scrubber): E => {
  const e = error as ToolError.ToolError
  switch (e._tag) {
    case "ToolFailure": {
      const message = scrubber.text(e.message)
      const hasDetail = Object.hasOwn(e, "detail") && e.detail !== undefined
      const detail = hasDetail ? scrubber.value(e.detail) : undefined
      if (message === e.message && (!hasDetail || stringify(detail) === stringify(e.detail))) return error
      return new ToolError.ToolFailure(hasDetail ? { message, detail } : { message }) as E
    }
    case "ToolTransient": {
      const message = scrubber.text(e.message)
      const hasCause = Object.hasOwn(e, "cause") && e.cause !== undefined
      const cause = hasCause ? scrubUnknown(e.cause, scrubber) : undefined
      if (message === e.message && cause === e.cause) return error
      return new ToolError.ToolTransient(hasCause ? { message, cause } : { message }) as E
    }
    case "ToolDefect": {
      const cause = scrubCause(e.cause, scrubber)
      return (cause === e.cause ? error : new ToolError.ToolDefect({ toolName: e.toolName, cause })) as E
    }
    case "MiddlewareFailed": {
      const cause = scrubCause(e.cause, scrubber)
      return (cause === e.cause
        ? error
        : new ToolError.MiddlewareFailed({ toolName: e.toolName, middleware: e.middleware, cause })) as E
    }
    case "MalformedArguments": {
      const reason = scrubber.text(e.reason)
      return (reason === e.reason ? error : new ToolError.MalformedArguments({ toolName: e.toolName, reason })) as E
    }
    case "InvalidArguments": {
      const issues = scrubIssues(e.issues, scrubber)
      return (issues === undefined ? error : new ToolError.InvalidArguments({ toolName: e.toolName, issues })) as E
    }
    case "InvalidOutput": {
      const issues = scrubIssues(e.issues, scrubber)
      return (issues === undefined ? error : new ToolError.InvalidOutput({ toolName: e.toolName, issues })) as E
    }
    case "ApprovalDenied": {
      const reason = scrubber.text(e.reason)
      return (reason === e.reason ? error : new ToolError.ApprovalDenied({ toolName: e.toolName, reason })) as E
    }
    case "PolicyBlocked": {
      const reason = scrubber.text(e.reason)
      return (reason === e.reason
        ? error
        : new ToolError.PolicyBlocked({ toolName: e.toolName, reason, status: e.status, repairable: e.repairable })) as E
    }
    case "StoreFailed": {
      const cause = scrubUnknown(e.cause, scrubber)
      return (cause === e.cause
        ? error
        : new ToolError.StoreFailed({
          store: e.store,
          operation: e.operation,
          cause,
          ...(e.retryable === undefined ? {} : { retryable: e.retryable })
        })) as E
    }
    default:
      // names, limits, timeouts: nothing a caller or a model supplied beyond the tool's name
      return error
  }
}

const encodeError = Schema.encodeUnknownSync(ToolError.ToolError)
const decodeError = Schema.decodeUnknownSync(ToolError.ToolError)

/**
 * {@link scrubError}, always returning a new instance: an error that was not changed is copied
 * through its schema (a cause becomes its rendered text). Anything the runtime attached to the
 * original instance (the handler's own cause, which the scrubber never saw) stays behind.
 */
export const scrubErrorDetached = <E extends ToolError.ToolError>(error: E, scrubber: Scrubber): E => {
  const scrubbed = scrubError(error, scrubber)
  if (scrubbed !== error) return scrubbed
  try {
    return decodeError(encodeError(error)) as E
  } catch {
    return error
  }
}

/**
 * {@link scrubError} under a tool's `Redact` policy: the executor's one redaction step for errors.
 * With `root` (the call's arguments), also without any value held there under a redacted key.
 */
export const redactError = <E extends ToolError.ToolError>(error: E, policy: Redact | undefined, root?: unknown): E => {
  const scrubber = scrubberOf(policy, root)
  return scrubber === undefined ? error : scrubError(error, scrubber)
}

/** True when `value` holds a key of `keys` at any depth. */
const holdsKey = (value: unknown, keys: ReadonlySet<string>): boolean => {
  const stack: Array<unknown> = [value]
  let budget = 10_000
  while (stack.length > 0 && budget-- > 0) {
    const node = stack.pop()
    if (node === null || typeof node !== "object") continue
    if (Array.isArray(node)) {
      for (const item of node) stack.push(item)
      continue
    }
    for (const [key, child] of Object.entries(node)) {
      if (keys.has(key)) return true
      stack.push(child)
    }
  }
  // too large to search: assume the worst
  return stack.length > 0
}

/** The value at `path` in `root`, when there is one. */
const valueAt = (root: unknown, path: ReadonlyArray<PropertyKey>): unknown => {
  let node = root
  for (const key of path) {
    if (node === null || typeof node !== "object" || typeof key === "symbol") return undefined
    node = (node as Record<string | number, unknown>)[key]
  }
  return node
}

/** The words after which a rejection message quotes the value it got. */
const quoting = [", got ", " with value "]

/** `message` with the value it quotes replaced by the marker (the whole message when it quotes none we know of). */
const withoutQuotedValue = (message: string): string => {
  for (const lead of quoting) {
    const at = message.indexOf(lead)
    if (at >= 0) return `${message.slice(0, at)}${lead}${marker}`
  }
  return `Invalid value (${marker})`
}

/**
 * Issues found in `root` (arguments or an output) under the policy: an issue at or under a
 * redacted key, or about a value that holds one, never quotes the value it got (the message keeps
 * what was expected; the value becomes the marker), and no message quotes a value held under a
 * redacted key anywhere in `root` or matches a pattern.
 */
export const redactIssues = (
  issues: ReadonlyArray<ToolError.Issue>,
  policy: Redact | undefined,
  root: unknown
): ReadonlyArray<ToolError.Issue> => {
  if (isEmpty(policy)) return issues
  const keys = new Set(policy.keys ?? [])
  const forms = secretForms(keys.size === 0 ? [] : searchable(secretsUnder(root, keys)))
  return issues.map((issue): ToolError.Issue => {
    const sensitive = keys.size > 0 &&
      (issue.path.some((key) => typeof key === "string" && keys.has(key)) || holdsKey(valueAt(root, issue.path), keys))
    const text = sensitive ? withoutQuotedValue(issue.message) : issue.message
    const message = withRegionsRedacted(text, scrubbedRegions(text, forms, policy.patterns))
    return message === issue.message ? issue : { path: issue.path, message }
  })
}

/** How `MalformedArguments` words a JSON parse failure; the parser's detail follows in parentheses. */
const notJson = "the arguments are not valid JSON"

/**
 * A rejection (the arguments did not decode) under the tool's `Redact` policy,
 * given the raw arguments the model sent. An issue at or under a redacted key,
 * or about a value that holds one, never quotes the value it got (the message
 * keeps what was expected, the value becomes the marker); every issue message
 * and reason is then scrubbed of the values under redacted keys and of the
 * policy's patterns. A malformed argument text that names a redacted key loses
 * the parser's detail, which quotes the text around the error.
 */
export const redactRejection = <E extends ToolError.ToolError>(
  error: E,
  policy: Redact | undefined,
  raw: unknown
): E => {
  if (isEmpty(policy)) return error
  const keys = new Set(policy.keys ?? [])
  const e = error as ToolError.ToolError
  if (keys.size > 0 && e._tag === "InvalidArguments") {
    let parsed: unknown = raw
    if (typeof raw === "string") {
      try {
        parsed = JSON.parse(raw)
      } catch {
        parsed = undefined
      }
    }
    const issues = redactIssues(e.issues, policy, parsed)
    return redactError(new ToolError.InvalidArguments({ toolName: e.toolName, issues }) as E, policy)
  }
  if (keys.size > 0 && e._tag === "MalformedArguments" && typeof raw === "string") {
    const names = [...keys].some((key) => raw.includes(key))
    const detail = e.reason.indexOf(" (")
    if (names && e.reason.startsWith(notJson) && detail >= 0) {
      return redactError(
        new ToolError.MalformedArguments({
          toolName: e.toolName,
          reason: `${e.reason.slice(0, detail)} (the parser's detail is withheld: it may quote a redacted value)`
        }) as E,
        policy
      )
    }
  }
  return redactError(error, policy)
}
