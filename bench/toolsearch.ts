/**
 * Tool search measured on the catalogue of test/fixtures/catalogue (1,295 real tools: BFCL's
 * distinct functions and the MCP reference servers' tools) and its 400 BFCL questions
 * (`multiple`, `parallel_multiple`) whose expected tools are known.
 *
 * - Recall@k (k = 1, 3, 5): the expected tool among the first k a search answers for the question
 *   text (the scripted model's search), per expected tool (a `parallel_multiple` question expects
 *   2 to 4). "exact": that very tool; "by name": any tool of the same original name (the catalogue
 *   holds BFCL variants of one function name with different schemas, which no lexical ranker can
 *   tell apart from the question). Rankers: the search index (`internal/searchIndex.ts`), the same
 *   without parameters, and today's selector (`Selection.rank`) over the same catalogue.
 * - Time: building the index, and one search (what a search adds to a turn), at 1,295 tools and at
 *   10,360 (the catalogue and 7 renamed copies); `Selection.rank` beside it.
 * - Prompt size: the tool definitions each provider dialect's exporter produces for the request,
 *   as JSON text, with every tool advertised vs deferred (the search tool alone, then the search
 *   tool and the 5 tools one search revealed, averaged over the questions). Tokens by o200k_base
 *   (`gpt-tokenizer`) for the OpenAI dialects; characters for all (Anthropic and Google publish no
 *   tokenizer package for their current models). With OpenAI Responses' native tool search the model
 *   still reads every deferred function's name and description: measured apart.
 *
 * - The portable search's result: what the model reads back from one `search_tools` call (the real
 *   tool of `ToolSearch.plan`, ranking with the search index, run through the executor).
 *
 * `TINYAGENTS_BENCH=toolsearch npm run bench` runs only this case (about 10 s of CPU).
 */
import { Effect, Result } from "effect"
import { countTokens } from "gpt-tokenizer/encoding/o200k_base"
import * as SearchIndex from "../src/agent/internal/searchIndex.ts"
import * as Selection from "../src/agent/Selection.ts"
import * as ToolSearch from "../src/agent/ToolSearch.ts"
import type { ToolSpec } from "../src/contract/Tool.ts"
import * as ToolRegistry from "../src/contract/ToolRegistry.ts"
import * as Executor from "../src/runtime/Executor.ts"
import * as ToolServices from "../src/runtime/ToolServices.ts"
import { Anthropic, Gemini, OpenAiChat, OpenAiResponses } from "../src/providers/index.ts"
import type { ProviderExportError } from "../src/providers/ProviderExportError.ts"
import * as Catalogue from "../test/fixtures/catalogue/catalogue.ts"

const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const percent = (hits: number, of: number) => +(100 * hits / of).toFixed(1)

/**
 * CPU milliseconds `f` takes (this process, user + system), median of `runs` after one warm-up:
 * steadier than wall time on a machine other processes share.
 */
const timed = (runs: number, f: () => unknown): number => {
  f()
  return median(Array.from({ length: runs }, () => {
    const start = process.cpuUsage()
    f()
    const used = process.cpuUsage(start)
    return (used.user + used.system) / 1000
  }))
}

const load = () => {
  const tools = Catalogue.tools()
  const questions = Catalogue.questions()
  const registry = Catalogue.registry(tools)
  /** Catalogue name → the name the tool had at its source (variants of one BFCL function share it). */
  const originals = new Map(tools.map((t) => [t.name, t.name]))
  for (const rename of Catalogue.renames()) originals.set(rename.name, rename.originalName)
  const originalOf = (canonical: string) => originals.get(registry.aliases.toOriginal(canonical as never))!
  return { tools, questions, registry, originalOf }
}

type Loaded = ReturnType<typeof load>

// ---------------------------------------------------------------------------
// recall
// ---------------------------------------------------------------------------

const recallRow = (
  { originalOf, questions, registry }: Loaded,
  ranker: string,
  rank: (query: string) => ReadonlyArray<string>
) => {
  const ks = [1, 3, 5] as const
  const exact = { multiple: [0, 0, 0], parallel_multiple: [0, 0, 0] }
  const byName = [0, 0, 0]
  const expected = { multiple: 0, parallel_multiple: 0 }
  for (const q of questions) {
    const found = rank(q.question).slice(0, 5)
    for (const name of q.expected) {
      const canonical = registry.aliases.toCanonical(name)!
      expected[q.category]++
      ks.forEach((k, i) => {
        const top = found.slice(0, k)
        if (top.includes(canonical)) exact[q.category][i]!++
        if (top.some((f) => originalOf(f) === originalOf(canonical))) byName[i]!++
      })
    }
  }
  const all = expected.multiple + expected.parallel_multiple
  return {
    ranker,
    "multiple @1": percent(exact.multiple[0]!, expected.multiple),
    "@3": percent(exact.multiple[1]!, expected.multiple),
    "@5": percent(exact.multiple[2]!, expected.multiple),
    "parallel_multiple @1": percent(exact.parallel_multiple[0]!, expected.parallel_multiple),
    "@3 ": percent(exact.parallel_multiple[1]!, expected.parallel_multiple),
    "@5 ": percent(exact.parallel_multiple[2]!, expected.parallel_multiple),
    "by name, all @1": percent(byName[0]!, all),
    "@5  ": percent(byName[2]!, all)
  }
}

export const recallRows = (loaded: Loaded = load()) => {
  const index = SearchIndex.make(loaded.registry.specs)
  const withoutParameters = SearchIndex.make(loaded.registry.specs, { parameterWeight: 0 })
  return [
    recallRow(loaded, "search index", (q) => index.search(q, 5).map((h) => h.name)),
    recallRow(loaded, "search index, no parameters", (q) => withoutParameters.search(q, 5).map((h) => h.name)),
    recallRow(loaded, "Selection.rank (today)", (q) => Selection.rank(loaded.registry, q).slice(0, 5).map((r) => r.name))
  ]
}

// ---------------------------------------------------------------------------
// time
// ---------------------------------------------------------------------------

/** The registry with `copies - 1` renamed copies of every tool (`<name>_copy<k>`), cheaply. */
const replicated = (registry: ToolRegistry.ToolRegistry<never>, copies: number) =>
  Result.getOrThrow(ToolRegistry.makeResult(
    Array.from({ length: copies }, (_, k) =>
      k === 0 ? registry.entries.map(({ tool }) => tool) : registry.entries.map(({ tool }) => ({ ...tool, name: `${tool.name}_copy${k}` }))).flat()
  ))

export const timeRows = ({ questions, registry }: Loaded = load()) =>
  [1, 8].map((copies) => {
    const reg = copies === 1 ? registry : replicated(registry, copies)
    const specs = reg.specs
    const build = timed(5, () => SearchIndex.make(specs))
    const index = SearchIndex.make(specs)
    const perQuery = (runs: number, asked: ReadonlyArray<Catalogue.Question>, f: (q: string) => unknown) =>
      timed(runs, () => asked.forEach((q) => f(q.question))) / asked.length
    return {
      tools: specs.length,
      "build ms (cpu)": +build.toFixed(1),
      "search µs/turn (cpu)": +(perQuery(5, questions, (q) => index.search(q, 5)) * 1000).toFixed(1),
      // a full BM25 pass and sort per query: timed on the first 40 questions, once after a warm-up
      "Selection.rank µs/turn (cpu)": +(perQuery(1, questions.slice(0, 40), (q) => Selection.rank(reg, q)) * 1000).toFixed(1)
    }
  })

// ---------------------------------------------------------------------------
// prompt size
// ---------------------------------------------------------------------------

interface Dialect {
  readonly name: string
  readonly tokens: boolean
  readonly export: (specs: ReadonlyArray<ToolSpec>) => Result.Result<ReadonlyArray<unknown>, ProviderExportError>
}

const dialects: ReadonlyArray<Dialect> = [
  { name: "OpenAI Chat", tokens: true, export: (specs) => OpenAiChat.toolDefinitionsResult(specs) },
  { name: "OpenAI Responses", tokens: true, export: (specs) => OpenAiResponses.toolDefinitionsResult(specs) },
  { name: "Anthropic", tokens: false, export: (specs) => Anthropic.toolDefinitionsResult(specs) },
  { name: "Gemini", tokens: false, export: (specs) => Gemini.toolDefinitionsResult(specs) }
]

/** The dialect's definitions of `specs` as JSON text; a tool the dialect refuses is left out and counted. */
const exported = (dialect: Dialect, specs: ReadonlyArray<ToolSpec>) => {
  const all = dialect.export(specs)
  if (Result.isSuccess(all)) return { text: JSON.stringify(all.success), refused: 0 }
  const accepted = specs.filter((spec) => Result.isSuccess(dialect.export([spec])))
  return { text: JSON.stringify(Result.getOrThrow(dialect.export(accepted))), refused: specs.length - accepted.length }
}

export const promptRows = ({ questions, registry }: Loaded = load()) => {
  const plan = Result.getOrThrow(ToolSearch.plan(registry, {}))!
  const searchTool = plan.tools.specs.find((spec) => spec.name === plan.tool)!
  const index = SearchIndex.make(registry.specs)
  const byName = new Map(registry.specs.map((spec) => [spec.name as string, spec]))
  const revealed = questions.map((q) => index.search(q.question, 5).map((hit) => byName.get(hit.name)!))
  return dialects.map((dialect) => {
    const all = exported(dialect, registry.specs)
    const search = exported(dialect, [searchTool]).text
    const after = revealed.map((found) => exported(dialect, [searchTool, ...found]).text)
    const mean = (f: (text: string) => number) => Math.round(after.reduce((sum, text) => sum + f(text), 0) / after.length)
    const row = (unit: string, f: (text: string) => number) => ({
      dialect: dialect.name,
      unit,
      "all tools": f(all.text),
      "search tool only": f(search),
      "+5 revealed (mean)": mean(f),
      "all ÷ deferred": +(f(all.text) / mean(f)).toFixed(0),
      refused: all.refused
    })
    return dialect.tokens ? [row("o200k tokens", countTokens), row("characters", (t) => t.length)] : [row("characters", (t) => t.length)]
  }).flat()
}

/**
 * What OpenAI Responses' native tool search still shows the model of the deferred functions: each
 * one's name and description (only parameters are deferred), here as the JSON text of those pairs
 * over the whole catalogue, every tool deferred: an estimate, as the provider does not publish how
 * it renders them. Anthropic keeps a deferred tool's whole definition out until a search references it.
 */
export const nativeResponsesRow = ({ registry }: Loaded = load()) => {
  const text = JSON.stringify(registry.specs.map((spec) => ({ name: spec.name, description: spec.description })))
  return { "deferred tools": registry.specs.length, "o200k tokens": countTokens(text), characters: text.length }
}

/**
 * What the model reads back from one search in the portable form: the result of the real
 * `search_tools` (ToolSearch.plan, ranking with the search index) run through the executor for
 * each question, mean size.
 */
export const searchResultRow = async ({ questions, registry }: Loaded = load()) => {
  const index = SearchIndex.make(registry.specs)
  const plan = Result.getOrThrow(ToolSearch.plan(registry, {
    searcher: (query, _catalogue, limit) => Effect.succeed(index.search(query, limit).map((hit) => hit.name))
  }))!
  const results = await Effect.runPromise(
    Effect.gen(function*() {
      const executor = yield* Executor.make(plan.tools)
      return yield* Effect.forEach(questions, (q, i) =>
        executor.run({ id: `search_${i}`, name: plan.tool, arguments: { query: q.question } }))
    }).pipe(Effect.provide(ToolServices.layerTest()))
  )
  const texts = results.map((result) => result.content.map((block) => block.type === "text" ? block.text : "").join(""))
  const mean = (f: (text: string) => number) => Math.round(texts.reduce((sum, text) => sum + f(text), 0) / texts.length)
  return { "o200k tokens (mean)": mean(countTokens), "characters (mean)": mean((t) => t.length) }
}

/** Prints the tables. */
export const report = async () => {
  const loaded = load()
  console.log(
    `Tool search: ${loaded.registry.names.length} tools, ${loaded.questions.length} BFCL questions`,
    `(${loaded.questions.reduce((n, q) => n + q.expected.length, 0)} expected tools). Recall %, per expected tool:`
  )
  console.table(recallRows(loaded))
  console.log("CPU time: index build (median of 5) and one search for a question (mean over the questions, median of 5 passes).")
  console.table(timeRows(loaded))
  console.log("Prompt size of the request's tool definitions (JSON text): all tools vs deferred (search_tools, + the 5 one search revealed).")
  console.table(promptRows(loaded))
  console.log("Native OpenAI Responses: what the model still reads of every deferred function (names and descriptions; JSON text, an estimate).")
  console.table([nativeResponsesRow(loaded)])
  console.log("Portable form: the search_tools result the model reads (the 5 tools found, with their parameters), per search.")
  console.table([await searchResultRow(loaded)])
}
