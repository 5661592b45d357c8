/**
 * JSON text of values at any depth. A model or a tool may hand the runtime a value nested 100,000
 * levels deep (`JSON.parse` builds one without trouble); `JSON.stringify` and every recursive walk
 * overflow the stack on it. {@link stringify} is `JSON.stringify` that never does,
 * {@link textOfValue} is the text a tool's value shows a model, and {@link deeperThan} measures
 * nesting without recursing; {@link parses} tells JSON text from other text. Not a JSON parser or a schema.
 */

const isStackOverflow = (error: unknown): boolean => error instanceof RangeError && /call stack/i.test(error.message)

/**
 * `JSON.stringify(value)` (no replacer, no indentation) at any depth: the native one, and where it
 * overflows the stack the same text written with an explicit stack. A cycle still throws its `TypeError`.
 */
export const stringify = (value: unknown): string | undefined => {
  try {
    return JSON.stringify(value)
  } catch (error) {
    if (!isStackOverflow(error)) throw error
  }
  return stringifyIteratively(value)
}

/**
 * A tool's value as the model reads it by default: a string as it is, nothing as the empty text,
 * anything else as its JSON text ({@link stringify}; a value with no JSON form is the empty text).
 */
export const textOfValue = (value: unknown): string =>
  value === undefined ? "" : typeof value === "string" ? value : stringify(value) ?? ""

/** A container being written: the keys still to write (`undefined` for an array) and whether a member was written. */
interface Frame {
  readonly node: object
  readonly keys: ReadonlyArray<string> | undefined
  index: number
  wrote: boolean
}

const stringifyIteratively = (root: unknown): string | undefined => {
  const out: Array<string> = []
  const open = new Set<object>()
  const frames: Array<Frame> = []
  /** Writes `prefix` and `value` (its `toJSON` applied), opening a frame for a container; false when it has no JSON form. */
  const enter = (value: unknown, key: string, prefix: string): boolean => {
    let node = value
    if ((typeof node === "object" && node !== null) || typeof node === "bigint") {
      const toJSON: unknown = (node as { readonly toJSON?: unknown }).toJSON
      if (typeof toJSON === "function") node = toJSON.call(node, key)
    }
    if (node instanceof Number || node instanceof String || node instanceof Boolean || node instanceof BigInt) {
      node = node.valueOf()
    }
    if (node === undefined || typeof node === "function" || typeof node === "symbol") return false
    if (typeof node !== "object" || node === null) {
      out.push(prefix + JSON.stringify(node))
      return true
    }
    if (open.has(node)) throw new TypeError("Converting circular structure to JSON")
    open.add(node)
    const keys = Array.isArray(node) ? undefined : Object.keys(node)
    out.push(prefix + (keys === undefined ? "[" : "{"))
    frames.push({ node, keys, index: 0, wrote: false })
    return true
  }
  if (!enter(root, "", "")) return undefined
  while (frames.length > 0) {
    const frame = frames[frames.length - 1]!
    const { keys, node } = frame
    const length = keys === undefined ? (node as ReadonlyArray<unknown>).length : keys.length
    if (frame.index >= length) {
      out.push(keys === undefined ? "]" : "}")
      frames.pop()
      open.delete(node)
      continue
    }
    const i = frame.index++
    if (keys === undefined) {
      const comma = i > 0 ? "," : ""
      if (!enter((node as ReadonlyArray<unknown>)[i], String(i), comma)) out.push(`${comma}null`)
    } else {
      const key = keys[i]!
      if (enter((node as Record<string, unknown>)[key], key, `${frame.wrote ? "," : ""}${JSON.stringify(key)}:`)) {
        frame.wrote = true
      }
    }
  }
  return out.join("")
}

/**
 * True when `value` nests objects and arrays more than `limit` levels deep (a value that is not an
 * object is level 0; a cycle is too deep). Iterative; a shared value is walked again only when it is
 * reached deeper than before.
 */
export const deeperThan = (value: unknown, limit: number): boolean => {
  if (typeof value !== "object" || value === null) return false
  const deepest = new Map<object, number>()
  const nodes: Array<object> = [value]
  const depths: Array<number> = [1]
  while (nodes.length > 0) {
    const node = nodes.pop()!
    const depth = depths.pop()!
    if (depth > limit) return true
    if ((deepest.get(node) ?? 0) >= depth) continue
    deepest.set(node, depth)
    for (const child of Array.isArray(node) ? node : Object.values(node)) {
      if (typeof child === "object" && child !== null) {
        nodes.push(child)
        depths.push(depth + 1)
      }
    }
  }
  return false
}

/** True when `text` is JSON text (`JSON.parse` accepts it). */
export const parses = (text: string): boolean => {
  try {
    JSON.parse(text)
    return true
  } catch {
    return false
  }
}
