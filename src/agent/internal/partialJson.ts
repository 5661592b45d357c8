/**
 * The value a prefix of JSON text shows so far, for streaming a structured answer: open strings
 * and containers are closed, an unfinished key, literal or number is left out. It never guesses a
 * value that the complete text could contradict except by extending it (a string or array grows,
 * an object gains keys).
 */

/** The value of the longest prefix of `text` that can be completed, or `undefined` when none can. */
export const parsePartial = (text: string): unknown => {
  const closers: Array<"}" | "]"> = []
  // Per open container: whether the next string is a key (objects only).
  const expectKey: Array<boolean> = []
  let good = -1 // text[0..good] completed with goodClose parses
  let goodClose = ""
  let openString: { readonly start: number; readonly isKey: boolean } | undefined
  let escaped = false
  let lastSafeInString = -1
  const mark = (end: number) => {
    good = end
    goodClose = closers.slice().reverse().join("")
  }
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!
    if (openString !== undefined) {
      if (escaped) escaped = false
      else if (c === "\\") escaped = true
      else if (c === "\"") {
        const wasKey = openString.isKey
        openString = undefined
        if (!wasKey) mark(i)
        continue
      }
      // a `\u` escape is only whole four digits later: closing earlier could break it
      if (!escaped && !/\\u[0-9a-fA-F]{0,3}$/.test(text.slice(Math.max(0, i - 5), i + 1))) lastSafeInString = i
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
        break
      }
      default:
        if (/[-0-9tfn]/.test(c)) {
          // a number or literal: complete when the next delimiter (or the end, for a whole number) follows
          let j = i
          while (j + 1 < text.length && /[-+0-9.eEtruefalsn]/.test(text[j + 1]!)) j++
          const token = text.slice(i, j + 1)
          // at the end of the text it may go on (`1` of `12`, `tr` of `true`): left out until a delimiter follows
          if (j + 1 < text.length && isJson(token)) mark(j)
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

const isJson = (token: string): boolean => {
  try {
    JSON.parse(token)
    return true
  } catch {
    return false
  }
}

/** The last completed prefix, when closing an open string did not parse. */
const fallback = (text: string, good: number, close: string): unknown => {
  if (good < 0) return undefined
  try {
    return JSON.parse(text.slice(0, good + 1).replace(/[,:\s]+$/, "") + close)
  } catch {
    return undefined
  }
}
