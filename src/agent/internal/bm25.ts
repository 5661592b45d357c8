/**
 * A small BM25 index over short documents (tool names and descriptions):
 * tokenising (snake_case, camelCase, dots, punctuation; lower case; stop words
 * dropped; a light suffix stemmer) and Okapi BM25 scoring (k1 1.2, b 0.75).
 */

const stopWords = new Set(
  ("a an and are as at be by can could do does for from get has have how i if in into is it its me my of on or " +
    "our please should so than that the their them then there these this to was we what when where which who " +
    "will with would you your use used using given")
    .split(" ")
)

/** Strips common English suffixes so "files", "filed" and "file" meet. */
const stem = (word: string): string => {
  if (word.length > 4 && word.endsWith("ies")) return `${word.slice(0, -3)}y`
  if (word.length > 5 && word.endsWith("ing")) return word.slice(0, -3)
  if (word.length > 4 && word.endsWith("ed")) return word.slice(0, -2)
  if (word.length > 4 && word.endsWith("es") && /(ss|x|ch|sh)es$/.test(word)) return word.slice(0, -2)
  if (word.length > 3 && word.endsWith("s") && !word.endsWith("ss")) return word.slice(0, -1)
  return word
}

/** Lower-case stemmed terms of `text`, split at case changes, digits and punctuation. */
export const tokenize = (text: string): Array<string> =>
  text
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .replace(/([A-Z]+)([A-Z][a-z])/g, "$1 $2")
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((t) => t.length > 1 && !stopWords.has(t))
    .map(stem)

export interface Index {
  readonly documents: ReadonlyArray<ReadonlyMap<string, number>>
  readonly lengths: ReadonlyArray<number>
  readonly averageLength: number
  readonly documentFrequency: ReadonlyMap<string, number>
}

/** Indexes documents given as term lists. */
export const index = (documents: ReadonlyArray<ReadonlyArray<string>>): Index => {
  const frequency = new Map<string, number>()
  const counted = documents.map((terms) => {
    const counts = new Map<string, number>()
    for (const term of terms) counts.set(term, (counts.get(term) ?? 0) + 1)
    for (const term of counts.keys()) frequency.set(term, (frequency.get(term) ?? 0) + 1)
    return counts
  })
  const lengths = documents.map((d) => d.length)
  const total = lengths.reduce((a, b) => a + b, 0)
  return {
    documents: counted,
    lengths,
    averageLength: documents.length === 0 ? 0 : total / documents.length,
    documentFrequency: frequency
  }
}

/** The BM25 score of every document for `query` terms, in document order. */
export const score = (idx: Index, query: ReadonlyArray<string>, k1 = 1.2, b = 0.75): Array<number> => {
  const n = idx.documents.length
  const terms = [...new Set(query)]
  return idx.documents.map((counts, i) => {
    let total = 0
    const norm = k1 * (1 - b + b * (idx.lengths[i]! / (idx.averageLength || 1)))
    for (const term of terms) {
      const tf = counts.get(term)
      if (tf === undefined) continue
      const df = idx.documentFrequency.get(term) ?? 0
      const idf = Math.log(1 + (n - df + 0.5) / (df + 0.5))
      total += idf * (tf * (k1 + 1)) / (tf + norm)
    }
    return total
  })
}
