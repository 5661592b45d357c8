/**
 * Applies a tool's `redact` policy: values under listed keys (at any depth)
 * become "[redacted]", and pattern matches in strings are replaced. Returns new
 * values; never mutates its input.
 */
import { Cause, Schema } from "effect"
import type { Redact } from "../contract/Safety.ts"
import * as ToolError from "../contract/ToolError.ts"
import type { Audit } from "../contract/ToolResult.ts"
import { stringify } from "./json.ts"

export const marker = "[redacted]"

const isEmpty = (policy: Redact | undefined): policy is undefined =>
  policy === undefined || ((policy.keys?.length ?? 0) === 0 && (policy.patterns?.length ?? 0) === 0)

/** What a value that holds itself becomes in a redacted copy. */
export const circular = "[circular]"

/** A container being copied: its source, its copy, the keys still to copy and its path. */
interface Frame {
  readonly source: object
  readonly out: Record<string, unknown> | Array<unknown>
  readonly keys: ReadonlyArray<string> | undefined
  readonly path: string
  index: number
}

/**
 * A copy of `value` with the policy applied; `fields` lists the redacted key paths.
 * Iterative (an explicit stack, so any depth is safe); a value that holds itself
 * copies the repeated reference as "[circular]".
 */
export const redactValue = (
  value: unknown,
  policy: Redact | undefined
): { readonly value: unknown; readonly fields: ReadonlyArray<string> } => {
  if (isEmpty(policy)) return { value, fields: [] }
  const keys = new Set(policy.keys ?? [])
  const fields: Array<string> = []
  const open = new Set<object>()
  const frames: Array<Frame> = []
  /** A leaf's copy, or a new container's copy (its frame pushed, to be filled). */
  const enter = (node: unknown, path: string): unknown => {
    if (typeof node === "string") return redactText(node, policy)
    if (node === null || typeof node !== "object") return node
    if (open.has(node)) return circular
    open.add(node)
    if (Array.isArray(node)) {
      const out = new Array<unknown>(node.length)
      frames.push({ source: node, out, keys: undefined, path, index: 0 })
      return out
    }
    const out: Record<string, unknown> = {}
    frames.push({ source: node, out, keys: Object.keys(node), path, index: 0 })
    return out
  }
  const root = enter(value, "")
  while (frames.length > 0) {
    const frame = frames[frames.length - 1]!
    const { keys: names, out, path, source } = frame
    if (names === undefined) {
      const items = source as ReadonlyArray<unknown>
      if (frame.index >= items.length) {
        frames.pop()
        open.delete(source)
        continue
      }
      const i = frame.index++
      ;(out as Array<unknown>)[i] = enter(items[i], `${path}[${i}]`)
      continue
    }
    if (frame.index >= names.length) {
      frames.pop()
      open.delete(source)
      continue
    }
    const key = names[frame.index++]!
    const at = path === "" ? key : `${path}.${key}`
    const copy = keys.has(key) ? marker : enter((source as Record<string, unknown>)[key], at)
    if (keys.has(key)) fields.push(at)
    // An own "__proto__" key stays a key (plain assignment would set the prototype).
    if (key === "__proto__") {
      Object.defineProperty(out, key, { value: copy, enumerable: true, writable: true, configurable: true })
    } else (out as Record<string, unknown>)[key] = copy
  }
  return { value: root, fields }
}

/** `text` with every pattern match replaced (matches of several patterns that overlap become one marker). */
export const redactText = (text: string, policy: Redact | undefined): string => {
  if (isEmpty(policy) || policy.patterns === undefined || policy.patterns.length === 0) return text
  return withRegionsRedacted(text, mergeRegions(patternRegions(text, policy.patterns)))
}

/**
 * Where `patterns` match `text` (each pattern on the text as given, every match from its start: a copy
 * of each, so a `lastIndex` the caller's instance keeps is ignored), unsorted.
 */
export const patternRegions = (text: string, patterns: ReadonlyArray<RegExp> | undefined): Array<Region> => {
  const found: Array<Region> = []
  if (patterns === undefined) return found
  for (const pattern of patterns) {
    for (const match of text.matchAll(new RegExp(pattern.source, pattern.global ? pattern.flags : `${pattern.flags}g`))) {
      found.push([match.index, match.index + match[0].length])
    }
  }
  return found
}

// ---------------------------------------------------------------------------
// errors, causes and rejections: one step for every string that leaves a call
// ---------------------------------------------------------------------------

/**
 * How to rewrite what an error carries: its texts (messages, reasons) and its
 * structured values (`ToolFailure.detail`, a transient error's cause).
 */
export interface Scrubber {
  readonly text: (text: string) => string
  readonly value: (value: unknown) => unknown
}

/**
 * The scrubber of a `Redact` policy (`undefined` when the policy is empty: nothing to do). With
 * `root` (the call's arguments), texts and strings are also scrubbed of every value `root` holds
 * under a redacted key: a failure message or summary that echoes a redacted argument loses it.
 */
export const scrubberOf = (policy: Redact | undefined, root?: unknown): Scrubber | undefined => {
  if (isEmpty(policy)) return undefined
  const secrets = root === undefined || (policy.keys?.length ?? 0) === 0
    ? []
    : secretsUnder(root, new Set(policy.keys)).filter((secret) => secret.length >= minSecret)
  if (secrets.length === 0) {
    return { text: (text) => redactText(text, policy), value: (value) => redactValue(value, policy).value }
  }
  const forms = secretForms(secrets)
  const text = (text: string) => withRegionsRedacted(text, scrubbedRegions(text, forms, policy.patterns))
  const byKey: Redact = policy.keys === undefined ? {} : { keys: policy.keys }
  return { text, value: (value) => mapStrings(redactValue(value, byKey).value, text) }
}

/** `value` with `f` applied to every string in it (a copy; plain objects and arrays only, bounded depth). */
const mapStrings = (value: unknown, f: (text: string) => string, depth = 0): unknown => {
  if (typeof value === "string") return f(value)
  if (value === null || typeof value !== "object") return value
  if (depth > 256) return marker
  if (Array.isArray(value)) return value.map((item) => mapStrings(item, f, depth + 1))
  const out: Record<string, unknown> = {}
  for (const [key, child] of Object.entries(value)) {
    const copy = mapStrings(child, f, depth + 1)
    // An own "__proto__" key stays a key (plain assignment would set the prototype).
    if (key === "__proto__") {
      Object.defineProperty(out, key, { value: copy, enumerable: true, writable: true, configurable: true })
    } else out[key] = copy
  }
  return out
}

/** Shorter values under a redacted key are not searched for in texts (they would match too much). */
const minSecret = 3

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

/** Every string (and number) held under a key of `keys`, at any depth: the values a message must not quote. */
const secretsUnder = (value: unknown, keys: ReadonlySet<string>): ReadonlyArray<string> => {
  const out: Array<string> = []
  const collect = (node: unknown, under: boolean, depth: number): void => {
    if (depth > 64) return
    if (typeof node === "string" || typeof node === "number" || typeof node === "bigint") {
      if (under) out.push(String(node))
      return
    }
    if (node === null || typeof node !== "object") return
    if (Array.isArray(node)) {
      for (const item of node) collect(item, under, depth + 1)
      return
    }
    for (const [key, child] of Object.entries(node)) collect(child, under || keys.has(key), depth + 1)
  }
  collect(value, false, 0)
  return out
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

/** The markers after which a rejection message quotes the value it got. */
const quoting = [", got ", " with value "]

/** `message` with the value it quotes replaced by the marker (the whole message when it quotes none we know of). */
const withoutQuotedValue = (message: string): string => {
  for (const marker_ of quoting) {
    const at = message.indexOf(marker_)
    if (at >= 0) return `${message.slice(0, at)}${marker_}${marker}`
  }
  return `Invalid value (${marker})`
}

/** The texts a scrubber removes for `secrets`: each value (of at least `minSecret` characters) and its JSON-escaped form. */
export const secretForms = (secrets: ReadonlyArray<string>): ReadonlyArray<string> => {
  const forms = new Set<string>()
  for (const secret of secrets) {
    if (secret.length < minSecret) continue
    forms.add(secret)
    forms.add(JSON.stringify(secret).slice(1, -1))
  }
  return [...forms]
}

/** A part of a text, from `start` (included) to `end` (excluded). */
export type Region = [start: number, end: number]

/**
 * Where `forms` occur in `text`, in order: every occurrence of each (overlapping ones too), occurrences
 * that overlap (one secret holding or sharing characters with another) merged into one region, so no
 * part of any occurrence is left out. Occurrences that only touch stay apart.
 */
export const secretRegions = (text: string, forms: ReadonlyArray<string>): Array<Region> =>
  mergeRegions(occurrences(text, forms))

const occurrences = (text: string, forms: ReadonlyArray<string>): Array<Region> => {
  const found: Array<Region> = []
  for (const form of forms) {
    for (let at = text.indexOf(form); at >= 0; at = text.indexOf(form, at + 1)) found.push([at, at + form.length])
  }
  return found
}

/**
 * What a scrubber replaces in `text`: the occurrences of the secret `forms` (see {@link secretForms}) and
 * the matches of `patterns`, all found in the text as given and merged where they overlap, so that a
 * secret holding the first character of a match (or two secrets sharing characters) is redacted whole.
 */
export const scrubbedRegions = (
  text: string,
  forms: ReadonlyArray<string>,
  patterns: ReadonlyArray<RegExp> | undefined
): Array<Region> => mergeRegions([...occurrences(text, forms), ...patternRegions(text, patterns)])

/** `regions` sorted, overlapping ones merged. */
export const mergeRegions = (regions: Array<Region>): Array<Region> => {
  if (regions.length <= 1) return regions
  regions.sort((a, b) => a[0] - b[0])
  const out: Array<Region> = [regions[0]!]
  for (let i = 1; i < regions.length; i++) {
    const [start, end] = regions[i]!
    const last = out[out.length - 1]!
    if (start < last[1]) last[1] = Math.max(last[1], end)
    else out.push([start, end])
  }
  return out
}

/** `text` with each of `regions` (sorted, apart) replaced by the marker. */
export const withRegionsRedacted = (text: string, regions: ReadonlyArray<Region>): string => {
  if (regions.length === 0) return text
  let out = ""
  let at = 0
  for (const [start, end] of regions) {
    out += text.slice(at, start) + marker
    at = end
  }
  return out + text.slice(at)
}

/** `text` with every occurrence of each secret (and of its JSON form) replaced by the marker (see {@link secretRegions}). */
const withoutSecrets = (text: string, secrets: ReadonlyArray<string>): string =>
  withRegionsRedacted(text, secretRegions(text, secretForms(secrets)))

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
  const forms = secretForms(keys.size === 0 ? [] : secretsUnder(root, keys))
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

/** An audit record with its texts (summary, layer errors) and metadata values redacted (see {@link scrubberOf}). */
export const redactAudit = (audit: Audit, policy: Redact | undefined, root?: unknown): Audit => {
  const scrubber = scrubberOf(policy, root)
  if (scrubber === undefined) return audit
  const layers = audit.layers.map((layer) =>
    layer.error === undefined ? layer : { ...layer, error: scrubber.text(layer.error) }
  )
  return {
    ...audit,
    ...(audit.summary === undefined ? {} : { summary: scrubber.text(audit.summary) }),
    layers,
    ...(audit.metadata === undefined ? {} : { metadata: scrubber.value(audit.metadata) as NonNullable<Audit["metadata"]> })
  }
}

/**
 * A model's tool call arguments (JSON text or a parsed value) under a tool's
 * policy, for transcripts: JSON keeps its form (text stays text); text that is
 * not JSON is scrubbed of the patterns, and replaced by the marker when it
 * names a redacted key.
 */
export const redactArguments = (args: unknown, policy: Redact | undefined): unknown => {
  if (isEmpty(policy)) return args
  if (typeof args !== "string") return redactValue(args, policy).value
  let parsed: unknown
  try {
    parsed = JSON.parse(args)
  } catch {
    const names = (policy.keys ?? []).some((key) => args.includes(key))
    return names ? marker : redactText(args, policy)
  }
  const redacted = stringify(redactValue(parsed, policy).value)
  return redacted === stringify(parsed) ? args : redacted
}

/**
 * The values `root` (a call's arguments) holds under the policy's redacted keys that a text would be
 * scrubbed of (see {@link scrubberOf}): what an idempotency store keeps beside a result, so that a
 * replay to a later call is scrubbed of the storing call's values too. Empty without keys.
 */
export const secretsOf = (policy: Redact | undefined, root: unknown): ReadonlyArray<string> => {
  if (isEmpty(policy) || (policy.keys?.length ?? 0) === 0 || root === undefined) return []
  return [...new Set(secretsUnder(root, new Set(policy.keys)).filter((secret) => secret.length >= minSecret))]
}

/** `text` with every occurrence of each of `secrets` (and of its JSON form) replaced by the marker. */
export const withoutSecretsText = (text: string, secrets: ReadonlyArray<string>): string =>
  secrets.length === 0 ? text : withoutSecrets(text, secrets)

/** A copy of `value` with {@link withoutSecretsText} applied to every string in it (the same value without secrets). */
export const withoutSecretsValue = (value: unknown, secrets: ReadonlyArray<string>): unknown =>
  secrets.length === 0 ? value : mapStrings(value, (text) => withoutSecrets(text, secrets))

/**
 * In text that looks like JSON but does not parse (a copy cut by a store's size limit), the value
 * after each member named by one of `keys`: from its start to its end, or to the end of the text
 * when it was cut off.
 */
const keyedValueRegions = (text: string, keys: ReadonlyArray<string>): Array<Region> => {
  const regions: Array<Region> = []
  const space = (at: number) => {
    while (at < text.length && /\s/.test(text[at]!)) at++
    return at
  }
  for (const key of keys) {
    const name = JSON.stringify(key)
    for (let found = text.indexOf(name); found >= 0; found = text.indexOf(name, found + 1)) {
      let at = space(found + name.length)
      if (text[at] !== ":") continue
      at = space(at + 1)
      const end = valueEnd(text, at)
      if (end > at) regions.push([at, end])
    }
  }
  return regions
}

/** Where the JSON value starting at `start` ends (the text's length when it is cut off). */
const valueEnd = (text: string, start: number): number => {
  let depth = 0
  let inString = false
  for (let at = start; at < text.length; at++) {
    const c = text[at]!
    if (inString) {
      if (c === "\\") at++
      else if (c === '"') {
        inString = false
        if (depth === 0) return at + 1
      }
    } else if (c === '"') inString = true
    else if (c === "{" || c === "[") depth++
    else if (c === "}" || c === "]") {
      if (depth === 0) return at
      if (--depth === 0) return at + 1
    } else if (depth === 0 && (c === "," || /\s/.test(c))) return at
  }
  return text.length
}

/**
 * A stored text (an artifact's full output) as it may be served: under the policy and, with
 * `root` (the producing call's arguments), without the values held there under a redacted key.
 * Text that parses as JSON is redacted as a value (redacted keys become the marker), re-serialized,
 * then scrubbed as text (a pattern that matches across its structure); other text is scrubbed as
 * text, after the values of members named by a redacted key (a JSON copy cut by a store's size
 * limit no longer parses). The same text when the policy is empty.
 */
export const redactStoredText = (text: string, policy: Redact | undefined, root?: unknown): string => {
  const scrubber = scrubberOf(policy, root)
  if (scrubber === undefined) return text
  let parsed: unknown
  let json = false
  try {
    parsed = JSON.parse(text)
    json = true
  } catch {
    json = false
  }
  if (!json) return scrubber.text(withRegionsRedacted(text, mergeRegions(keyedValueRegions(text, policy?.keys ?? []))))
  const redacted = scrubber.value(parsed)
  const serialized = stringify(redacted)
  return scrubber.text(serialized === undefined || serialized === stringify(parsed) ? text : serialized)
}
