/**
 * Canonical JSON (object keys sorted at every depth) and SHA-256 hashes of it,
 * so equal values hash equally whatever their key order. Used by receipts and
 * spans, which carry hashes instead of payloads. Any depth: the walks keep an
 * explicit stack (the values hashed may be a model's hostile arguments).
 */
import { createHash } from "node:crypto"
import { stringify } from "./json.ts"

/** What a value that holds itself becomes in a copy. */
const circular = "[circular]"

/** A container being copied: its source, its copy and the keys still to copy (`undefined` for an array). */
interface Frame {
  readonly source: object
  readonly out: Record<string, unknown> | Array<unknown>
  readonly keys: ReadonlyArray<string> | undefined
  index: number
}

/**
 * A copy of `root` made with an explicit stack: `leaf` gives a value's copy when it is not copied as a
 * container (`undefined` otherwise), `keysOf` the members of an object to copy (arrays are copied
 * whole). A value that holds itself is copied as "[circular]"; an own `__proto__` key stays a key.
 */
const copyTree = (
  root: unknown,
  leaf: (value: unknown) => { readonly copy: unknown } | undefined,
  keysOf: (node: object) => ReadonlyArray<string>
): unknown => {
  const open = new Set<object>()
  const frames: Array<Frame> = []
  const enter = (value: unknown): unknown => {
    const kept = leaf(value)
    if (kept !== undefined) return kept.copy
    const node = value as object
    if (open.has(node)) return circular
    open.add(node)
    const isArray = Array.isArray(node)
    const out = isArray ? new Array<unknown>(node.length) : {}
    frames.push({ source: node, out, keys: isArray ? undefined : keysOf(node), index: 0 })
    return out
  }
  const copy = enter(root)
  while (frames.length > 0) {
    const frame = frames[frames.length - 1]!
    const { keys, out, source } = frame
    if (frame.index >= (keys === undefined ? (source as ReadonlyArray<unknown>).length : keys.length)) {
      frames.pop()
      open.delete(source)
      continue
    }
    const i = frame.index++
    if (keys === undefined) {
      ;(out as Array<unknown>)[i] = enter((source as ReadonlyArray<unknown>)[i])
      continue
    }
    const key = keys[i]!
    const child = enter((source as Record<string, unknown>)[key])
    Object.defineProperty(out, key, { value: child, enumerable: true, writable: true, configurable: true })
  }
  return copy
}

/** `value` as canonical JSON: sorted keys, `undefined` members dropped, dates as ISO text, bigints as text. */
export const canonicalJson = (value: unknown): string => stringify(normalize(value)) ?? "null"

const normalize = (value: unknown): unknown =>
  copyTree(value, (node) => {
    if (typeof node === "bigint") return { copy: node.toString() }
    if (typeof node === "function" || typeof node === "symbol") return { copy: undefined }
    if (node === null || typeof node !== "object") return { copy: node }
    return node instanceof Date ? { copy: node.toISOString() } : undefined
  }, (node) => Object.keys(node).sort())

/** A copy of `value` without the listed keys, at any depth. */
export const withoutKeys = (value: unknown, keys: ReadonlySet<string>): unknown =>
  keys.size === 0 ? value : copyTree(
    value,
    (node) => node === null || typeof node !== "object" ? { copy: node } : undefined,
    (node) => Object.keys(node).filter((key) => !keys.has(key))
  )

/** Hex SHA-256 of the canonical JSON of `value`. */
export const hash = (value: unknown): string => createHash("sha256").update(canonicalJson(value)).digest("hex")
