/**
 * How a text loses its secrets, the one way every part of the package does it (a tool's redaction
 * policy, a store's database error, a model adapter's HTTP error, the durable journal's URL): every
 * occurrence of each secret (and of its JSON-escaped form) and every match of a pattern is found in
 * the text as given, occurrences that overlap are merged into one region (so a secret that is a
 * prefix of another, or two that share characters, are redacted whole), and each region becomes
 * {@link marker}. Which values are secrets is the caller's business.
 */

/** What a redacted value, or a redacted part of a text, becomes. */
export const marker = "[redacted]"

/**
 * Secrets shorter than this, taken from data (a redacted argument, a store's key), are not searched
 * for in texts: they would match too much. A credential is searched for whatever its length.
 */
export const minSecret = 3

/** The secrets of `secrets` long enough to search for (see {@link minSecret}). */
export const searchable = (secrets: ReadonlyArray<string>): ReadonlyArray<string> =>
  secrets.filter((secret) => secret.length >= minSecret)

/** A part of a text, from `start` (included) to `end` (excluded). */
export type Region = [start: number, end: number]

/** The texts that spell `secrets` in a text: each (non-empty) value and its JSON-escaped form. */
export const secretForms = (secrets: ReadonlyArray<string>): ReadonlyArray<string> => {
  const forms = new Set<string>()
  for (const secret of secrets) {
    if (secret.length === 0) continue
    forms.add(secret)
    forms.add(JSON.stringify(secret).slice(1, -1))
  }
  return [...forms]
}

/** Every occurrence of each of `forms` in `text` (overlapping ones too), unsorted. */
const occurrences = (text: string, forms: ReadonlyArray<string>): Array<Region> => {
  const found: Array<Region> = []
  for (const form of forms) {
    for (let at = text.indexOf(form); at >= 0; at = text.indexOf(form, at + 1)) found.push([at, at + form.length])
  }
  return found
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

/**
 * What is redacted in `text`: the occurrences of the secret `forms` (see {@link secretForms}) and the
 * matches of `patterns`, all found in the text as given and merged where they overlap, so that a secret
 * holding the first character of a match (or two secrets sharing characters) is redacted whole.
 * Occurrences that only touch stay apart.
 */
export const scrubbedRegions = (
  text: string,
  forms: ReadonlyArray<string>,
  patterns?: ReadonlyArray<RegExp>
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

/** `text` with every occurrence of each of `secrets` (and of its JSON form) replaced by the marker, overlapping ones whole. */
export const withoutSecrets = (text: string, secrets: ReadonlyArray<string>): string =>
  secrets.length === 0 ? text : withRegionsRedacted(text, scrubbedRegions(text, secretForms(secrets)))
