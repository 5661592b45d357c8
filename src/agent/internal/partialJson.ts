/**
 * The value a prefix of JSON text shows so far, for streaming a structured answer: open strings
 * and containers are closed, an unfinished key, literal or number is left out. It never guesses a
 * value that the complete text could contradict except by extending it (a string or array grows,
 * an object gains keys). {@link partials} follows a text that grows by deltas, parsing it again no
 * more often than keeps the work linear in its length.
 */
import { parses } from "../../internal/json.ts"

/** The value of the longest prefix of `text` that can be completed, or `undefined` when none can. */
export const parsePartial = (text: string): unknown => {
  const closers: Array<"}" | "]"> = []
  // Per open container: whether the next string is a key (objects only).
  const expectKey: Array<boolean> = []
  let good = -1 // text[0..good] completed with goodClose parses
  let goodClose = ""
  let openString: { readonly start: number; readonly isKey: boolean } | undefined
  let escaped = false
  // hex digits still to come in the open string's `\u` escape
  let unicodeLeft = 0
  let lastSafeInString = -1
  const mark = (end: number) => {
    good = end
    goodClose = closers.slice().reverse().join("")
  }
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!
    if (openString !== undefined) {
      if (escaped) {
        escaped = false
        // a `\u` escape is only whole four digits later: closing earlier could break it
        if (c === "u") unicodeLeft = 4
        else lastSafeInString = i
        continue
      }
      if (unicodeLeft > 0 && isHexDigit(c)) {
        if (--unicodeLeft === 0) lastSafeInString = i
        continue
      }
      unicodeLeft = 0
      if (c === "\\") {
        escaped = true
      } else if (c === "\"") {
        const wasKey = openString.isKey
        openString = undefined
        if (!wasKey) mark(i)
      } else {
        lastSafeInString = i
      }
      continue
    }
    switch (c) {
      case "{":
      case "[":
        closers.push(c === "{" ? "}" : "]")
        expectKey.push(c === "{")
        mark(i)
        break
      case "}":
      case "]":
        closers.pop()
        expectKey.pop()
        mark(i)
        break
      case ",":
        if (expectKey.length > 0 && closers[closers.length - 1] === "}") expectKey[expectKey.length - 1] = true
        break
      case ":":
        expectKey[expectKey.length - 1] = false
        break
      case "\"": {
        const isKey = expectKey[expectKey.length - 1] === true
        openString = { start: i, isKey }
        lastSafeInString = -1
        unicodeLeft = 0
        break
      }
      default:
        if (/[-0-9tfn]/.test(c)) {
          // a number or literal: complete when the next delimiter (or the end, for a whole number) follows
          let j = i
          while (j + 1 < text.length && /[-+0-9.eEtruefalsn]/.test(text[j + 1]!)) j++
          const token = text.slice(i, j + 1)
          // at the end of the text it may go on (`1` of `12`, `tr` of `true`): left out until a delimiter follows
          if (j + 1 < text.length && parses(token)) mark(j)
          i = j
        }
    }
  }
  let candidate: string | undefined
  if (openString !== undefined && !openString.isKey) {
    const upTo = lastSafeInString >= openString.start ? lastSafeInString : openString.start
    candidate = `${text.slice(0, upTo + 1)}"${closers.slice().reverse().join("")}`
  } else if (good >= 0) {
    candidate = text.slice(0, good + 1).replace(/[,:\s]+$/, "") + goodClose
  }
  if (candidate === undefined) return undefined
  try {
    return JSON.parse(candidate)
  } catch {
    return fallback(text, good, goodClose)
  }
}

const isHexDigit = (c: string): boolean => (c >= "0" && c <= "9") || (c >= "a" && c <= "f") || (c >= "A" && c <= "F")


/** The last completed prefix, when closing an open string did not parse. */
const fallback = (text: string, good: number, close: string): unknown => {
  if (good < 0) return undefined
  try {
    return JSON.parse(text.slice(0, good + 1).replace(/[,:\s]+$/, "") + close)
  } catch {
    return undefined
  }
}

/** A text up to this long is parsed again on every delta. */
export const everyDeltaUpTo = 2_048

/**
 * Past {@link everyDeltaUpTo} characters, a text is parsed again once it has grown by this fraction of
 * its length since its last parse: the lengths parsed form a geometric series, so all the parses of
 * an answer of n characters read at most about `everyDeltaUpTo² + (1 + 1 / fraction) · n` characters,
 * instead of about n² / (2 · delta size) when every delta parses the whole text again.
 */
export const growthFraction = 1 / 8

/** The partial values of a text that grows by deltas (a streamed answer), parsed at most as often as above. */
export interface Partials {
  /** Appends `more`: the value the text shows now when it was parsed this time, else `undefined`. */
  readonly push: (more: string) => unknown
  /** The value of the whole text when it grew since its last parse (the stream ended), else `undefined`. */
  readonly flush: () => unknown
  /** Characters read by all the parses so far: the work done. */
  readonly parsed: () => number
}

/** An empty growing text (see {@link Partials}). */
export const partials = (): Partials => {
  let text = ""
  let lastParsed = 0
  let work = 0
  const parse = (): unknown => {
    lastParsed = text.length
    work += text.length
    return parsePartial(text)
  }
  return {
    push: (more) => {
      text += more
      const grown = text.length - lastParsed
      return grown > 0 && (text.length <= everyDeltaUpTo || grown >= text.length * growthFraction) ? parse() : undefined
    },
    flush: () => text.length > lastParsed ? parse() : undefined,
    parsed: () => work
  }
}
