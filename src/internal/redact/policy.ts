/**
 * A tool's `Redact` policy applied to what its calls carry: values (those under a redacted key become
 * the marker, strings lose the pattern matches), a model's arguments, a stored output and an audit
 * record. With the call's arguments, texts also lose every value held there under a redacted key (a
 * message that echoes a redacted argument): that is the `Scrubber` the errors module applies. How a
 * text is scrubbed is `text.ts`; which values and matches to scrub is decided here.
 */
import type { Redact } from "../../contract/Safety.ts"
import type { Audit } from "../../contract/ToolResult.ts"
import { stringify } from "../json.ts"
import {
  marker,
  mergeRegions,
  patternRegions,
  type Region,
  scrubbedRegions,
  searchable,
  secretForms,
  withoutSecrets,
  withRegionsRedacted
} from "./text.ts"

/** True when the policy redacts nothing. */
export const isEmpty = (policy: Redact | undefined): policy is undefined =>
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
    : searchable(secretsUnder(root, new Set(policy.keys)))
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

/** Every string (and number) held under a key of `keys`, at any depth: the values a message must not quote. */
export const secretsUnder = (value: unknown, keys: ReadonlySet<string>): ReadonlyArray<string> => {
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

/**
 * The values `root` (a call's arguments) holds under the policy's redacted keys that a text would be
 * scrubbed of (see {@link scrubberOf}): what an idempotency store keeps beside a result, so that a
 * replay to a later call is scrubbed of the storing call's values too. Empty without keys.
 */
export const secretsOf = (policy: Redact | undefined, root: unknown): ReadonlyArray<string> => {
  if (isEmpty(policy) || (policy.keys?.length ?? 0) === 0 || root === undefined) return []
  return [...new Set(searchable(secretsUnder(root, new Set(policy.keys))))]
}

/** `text` with every occurrence of each of `secrets` (those of `minSecret` characters or more) and of its JSON form replaced by the marker. */
export const withoutSecretsText = (text: string, secrets: ReadonlyArray<string>): string =>
  withoutSecrets(text, searchable(secrets))

/** A copy of `value` with {@link withoutSecretsText} applied to every string in it (the same value without secrets). */
export const withoutSecretsValue = (value: unknown, secrets: ReadonlyArray<string>): unknown => {
  const searched = searchable(secrets)
  return searched.length === 0 ? value : mapStrings(value, (text) => withoutSecrets(text, searched))
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
