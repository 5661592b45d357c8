/**
 * The tool-search index: BM25F over a catalogue of tool specs, built once, searched per turn.
 * Each tool is read as three fields, each with its weight and its own length normalisation: its
 * name (canonical and original: `math.factorial`, `getWeather`), its description, and its
 * parameters (names and descriptions, nested object properties and array items included, to a
 * bounded depth). Text is read in any script, accents folded; ASCII words are `Bm25.tokenize`'s
 * (snake_case and camelCase split, stop words dropped, a light stemmer), others lower-cased (scripts
 * written without spaces, Han, kana, Hangul, Thai, as character pairs). A term's contribution to each tool it occurs in does not depend on the query,
 * so it is computed when the index is built and a search only adds up the postings of the query's
 * terms: a search costs the postings it touches, not the catalogue's size.
 *
 * It ranks; it does not decide what is deferred or allowed (`ToolSearch`).
 */
import type { ToolSpec } from "../../contract/Tool.ts"
import type { ToolName } from "../../contract/ToolName.ts"
import * as Bm25 from "./bm25.ts"

/** What the index reads of a tool. */
export type Indexed = Pick<ToolSpec, "name" | "originalName" | "description" | "inputSchema">

/** A tool found, with its score (higher is better; every score is above 0). */
export interface Hit {
  readonly name: ToolName
  readonly score: number
}

export interface SearchIndex {
  /** How many tools the index holds. */
  readonly size: number
  /**
   * At most `limit` tools for `query`, best first, ties in catalogue order. A tool sharing no term
   * with the query is never returned, nor one `accept` refuses (a part of the catalogue is searched
   * in the whole's index).
   */
  readonly search: (query: string, limit: number, accept?: (name: ToolName) => boolean) => ReadonlyArray<Hit>
}

/**
 * Field weights and BM25 parameters. The defaults (every field weight 1, full length normalisation,
 * k1 1.8) found the most expected tools in the first 3 and 5 on both halves of the question set of
 * `bench/toolsearch.ts` (BFCL `multiple` and `parallel_multiple`), in a grid over these options.
 */
export interface Options {
  readonly nameWeight?: number
  readonly descriptionWeight?: number
  /** Weight of parameter names and descriptions; 0 leaves parameters out. */
  readonly parameterWeight?: number
  readonly k1?: number
  /** Length normalisation, per field (0: none, 1: full). */
  readonly b?: number
}

const defaults = { nameWeight: 1, descriptionWeight: 1, parameterWeight: 1, k1: 1.8, b: 1 } as const

/** Runs of letters and digits, in any script (read after {@link fold}). */
const words = /[\p{L}\p{N}]+/gu

/** Accents folded (`é` is `e`, `ﬁ` is `fi`): index and query alike. */
const fold = (text: string): string => text.normalize("NFKD").replace(/\p{M}+/gu, "")

const ascii = /^[A-Za-z0-9]+$/

/** Scripts written without spaces: a run of them is read as its overlapping character pairs. */
const unspaced = /^[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}\p{Script=Thai}]+$/u

/**
 * The terms of one word: `Bm25.tokenize`'s for ASCII (case and digit splits, stop words, stemming);
 * otherwise the word lower-cased, or its character pairs for a script written without spaces.
 */
const termsOfWord = (word: string): Array<string> => {
  if (ascii.test(word)) return Bm25.tokenize(word)
  const lower = word.toLowerCase()
  if (!unspaced.test(lower)) return [lower]
  const chars = Array.from(lower)
  if (chars.length === 1) return chars
  return chars.slice(1).map((char, i) => chars[i]! + char)
}

/** Text all ASCII: read as before Unicode was (the same terms, at a fraction of the cost). */
const asciiText = /^[\x00-\x7f]*$/
const asciiWords = /[A-Za-z0-9]+/g

/** The words of a text: runs of letters and digits, accents folded. */
const wordsOf = (text: string): ReadonlyArray<string> =>
  (asciiText.test(text) ? text.match(asciiWords) : fold(text).match(words)) ?? []

/** The terms of a text (a field, a query). */
export const termsOf = (text: string): Array<string> =>
  asciiText.test(text) ? Bm25.tokenize(text) : wordsOf(text).flatMap(termsOfWord)

/** Deepest nesting of parameters read (root properties are depth 1). */
const maxDepth = 3

/** The text of a schema's parameters: property names and descriptions, nested ones to `maxDepth`. */
const parameterText = (schema: unknown): string => {
  const parts: Array<string> = []
  const stack: Array<readonly [node: unknown, depth: number]> = [[schema, 0]]
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!
    if (typeof node !== "object" || node === null || depth > maxDepth) continue
    const record = node as { readonly [key: string]: unknown }
    if (depth > 0 && typeof record["description"] === "string") parts.push(record["description"])
    const properties = record["properties"]
    if (typeof properties === "object" && properties !== null) {
      for (const [key, child] of Object.entries(properties)) {
        parts.push(key)
        stack.push([child, depth + 1])
      }
    }
    if (typeof record["items"] === "object") stack.push([record["items"], depth])
  }
  return parts.join(" ")
}

/** Builds the index over `specs` (their order is the catalogue order that breaks ties). */
export const make = (specs: ReadonlyArray<Indexed>, options: Options = {}): SearchIndex => {
  const { b, descriptionWeight, k1, nameWeight, parameterWeight } = { ...defaults, ...options }
  const fields = [
    { weight: nameWeight, text: (s: Indexed) => `${s.name} ${s.originalName ?? ""}` },
    { weight: descriptionWeight, text: (s: Indexed) => s.description },
    { weight: parameterWeight, text: (s: Indexed) => parameterText(s.inputSchema) }
  ].filter((field) => field.weight > 0)
  const n = specs.length

  // terms as small integers; words repeat across a catalogue, so each distinct word is tokenized
  // once (a word's terms do not depend on its neighbours)
  const termIds = new Map<string, number>()
  const idsOfWord = new Map<string, ReadonlyArray<number>>()
  const idsOf = (text: string): Array<number> => {
    const ids: Array<number> = []
    for (const word of wordsOf(text)) {
      let found = idsOfWord.get(word)
      if (found === undefined) {
        found = termsOfWord(word).map((term) => {
          let id = termIds.get(term)
          if (id === undefined) {
            id = termIds.size
            termIds.set(term, id)
          }
          return id
        })
        idsOfWord.set(word, found)
      }
      for (const id of found) ids.push(id)
    }
    return ids
  }
  const terms = fields.map((field) => specs.map((spec) => idsOf(field.text(spec))))
  const averages = terms.map((tools) => tools.reduce((sum, ids) => sum + ids.length, 0) / (n || 1))

  // per tool: each term's weighted, length-normalised frequency over the fields (BM25F), kept as
  // (tool, term, frequency) triples in tool order
  const tripleTool: Array<number> = []
  const tripleTerm: Array<number> = []
  const tripleFrequency: Array<number> = []
  const documentFrequency = new Int32Array(termIds.size)
  const frequency = new Float64Array(termIds.size)
  for (let i = 0; i < n; i++) {
    const seen: Array<number> = []
    fields.forEach((field, f) => {
      const ids = terms[f]![i]!
      const share = field.weight / (1 - b + b * (ids.length / (averages[f] || 1)))
      for (const id of ids) {
        if (frequency[id] === 0) seen.push(id)
        frequency[id]! += share
      }
    })
    for (const id of seen) {
      tripleTool.push(i)
      tripleTerm.push(id)
      tripleFrequency.push(frequency[id]!)
      documentFrequency[id]!++
      frequency[id] = 0
    }
  }

  // postings, one flat array: term `t` holds entries `start[t]` to `start[t + 1]`, each a tool and
  // the term's final contribution to its score
  const start = new Int32Array(termIds.size + 1)
  for (let t = 0; t < termIds.size; t++) start[t + 1] = start[t]! + documentFrequency[t]!
  const postingTool = new Int32Array(tripleTool.length)
  const postingWeight = new Float64Array(tripleTool.length)
  const next = start.slice(0, termIds.size)
  for (let j = 0; j < tripleTool.length; j++) {
    const t = tripleTerm[j]!
    const df = documentFrequency[t]!
    const tf = tripleFrequency[j]!
    const at = next[t]!++
    postingTool[at] = tripleTool[j]!
    postingWeight[at] = Math.log(1 + (n - df + 0.5) / (df + 0.5)) * tf * (k1 + 1) / (tf + k1)
  }

  const names = specs.map((spec) => spec.name)
  const scores = new Float64Array(n)
  const search = (query: string, limit: number, accept?: (name: ToolName) => boolean): ReadonlyArray<Hit> => {
    if (limit <= 0) return []
    const touched: Array<number> = []
    for (const term of new Set(termsOf(query))) {
      const t = termIds.get(term)
      if (t === undefined) continue
      for (let j = start[t]!; j < start[t + 1]!; j++) {
        const tool = postingTool[j]!
        if (scores[tool] === 0) touched.push(tool)
        scores[tool]! += postingWeight[j]!
      }
    }
    // the best `limit`, kept sorted (score down, catalogue order up) by insertion: limit is small
    const best: Array<number> = []
    const before = (a: number, c: number) => scores[a]! > scores[c]! || (scores[a] === scores[c] && a < c)
    for (const tool of touched) {
      if (best.length === limit && !before(tool, best[limit - 1]!)) continue
      if (accept !== undefined && !accept(names[tool]!)) continue
      let at = best.length === limit ? limit - 1 : best.length
      while (at > 0 && before(tool, best[at - 1]!)) {
        best[at] = best[at - 1]!
        at--
      }
      best[at] = tool
    }
    const hits = best.map((tool) => ({ name: names[tool]!, score: scores[tool]! }))
    for (const tool of touched) scores[tool] = 0
    return hits
  }
  return { size: n, search }
}
