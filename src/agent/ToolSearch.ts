/**
 * Tool search: a catalogue of many tools of which each turn shows the model only the few it needs.
 * The run's `toolSearch` option marks tools as deferred (all, by name, or by a predicate, and only
 * once the catalogue passes a size); a deferred tool is not advertised until the model finds it
 * with the search tool this module adds (`search_tools`, one `query` parameter), which ranks the
 * deferred tools for the query (`lexical` by default: BM25F over names, descriptions and parameters;
 * any {@link Searcher}) and answers the best {@link Options.maxResults}. It owns the deferral rule,
 * the search tool, and reading what a search revealed ({@link revealedBy}); the loop (`Agent`)
 * advertises what was revealed and reports it (`agent.tools_revealed`).
 *
 * Two forms, one behaviour. A model whose provider has tool search of its own
 * (`ChatModel.toolSearch`: Anthropic Messages, OpenAI Responses) is sent every deferred tool
 * with the provider's deferral marker and the search tool in the provider's form
 * (`ChatModel.Request.toolSearch`), so that the request's tools never change and prompt caching
 * holds; a search result goes back as the provider's references to the tools found. Any other
 * model (Gemini, OpenAI Chat Completions and compatible servers, the effect/ai bridge) gets the
 * search tool as a plain tool whose result lists the tools found with their parameters (Gemini,
 * which reads a result's structured value, gets their names and descriptions), and those tools are
 * advertised from the next turn.
 *
 * Fail closed, still: the search tool is the only way in. A call to a deferred tool that no search
 * has revealed is refused (a repairable `ToolNotAllowed` that tells the model to search first); a
 * revealed tool stays allowed for the rest of the run ({@link Options.keep}: or only the turn after
 * the search). What a run revealed is read from its transcript (the search calls' results), so a
 * durable run resumed from its journal, or a conversation continued from its messages, has the
 * same tools. `selectTools` still bounds everything: a tool it hides is not advertised, found or not.
 */
import { Context, Effect, Result, Schema } from "effect"
import * as SearchIndex from "./internal/searchIndex.ts"
import * as Tool from "../contract/Tool.ts"
import type { ToolSpec } from "../contract/Tool.ts"
import type { ToolName } from "../contract/ToolName.ts"
import * as ToolRegistry from "../contract/ToolRegistry.ts"
import type * as ToolResult from "../contract/ToolResult.ts"
import { stringify } from "../internal/json.ts"

/**
 * Ranks `catalogue` (the deferred tools) for a query: at most `limit` names, best first. A name
 * that is not in the catalogue is dropped.
 */
export type Searcher = (
  query: string,
  catalogue: ReadonlyArray<ToolSpec>,
  limit: number
) => Effect.Effect<ReadonlyArray<string>>

/** Which tools are deferred: `"all"`, canonical (or original) names, or a predicate over specs. */
export type Defer = "all" | ReadonlyArray<string> | ((spec: ToolSpec) => boolean)

export interface Options {
  /** Default `"all"`. The search tool never is. */
  readonly defer?: Defer
  /** Tools never deferred, whatever `defer` says (names the registry must hold). */
  readonly loaded?: ReadonlyArray<string>
  /**
   * Defer only when the catalogue (the run's registry) holds more than this many tools; below it
   * the run has no search tool and every tool is advertised. Default 0.
   */
  readonly minTools?: number
  /** The search tool's name. Default `search_tools`. */
  readonly name?: string
  /** The search tool's description (what the model reads). */
  readonly description?: string
  /** At most this many tools per search. Default 5. */
  readonly maxResults?: number
  /** How the deferred tools are ranked. Default {@link lexical}. */
  readonly searcher?: Searcher
  /** How long a revealed tool stays advertised: the rest of the run (default), or the next turn only. */
  readonly keep?: "run" | "turn"
  /**
   * Use the provider's own tool search where the model has it (`ChatModel.toolSearch`). Default
   * true; false: always the portable form.
   */
  readonly native?: boolean
}

/** Tools imported from MCP servers (`McpConnect`: tagged `mcp`): the usual rule for an MCP-heavy agent. */
export const mcpTools = (spec: ToolSpec): boolean => (spec.safety.tags ?? []).includes("mcp")

/** Tools imported from the MCP server labelled `server` (`McpConnect`'s `name`: tagged `mcp:<server>`). */
export const mcpServer = (server: string): (spec: ToolSpec) => boolean => {
  // one predicate per server, so that runs naming it again share their plan (kept by the predicate's identity)
  let rule = serverRules.get(server)
  if (rule === undefined) {
    rule = (spec) => (spec.safety.tags ?? []).includes(`mcp:${server}`)
    serverRules.set(server, rule)
  }
  return rule
}
const serverRules = new Map<string, (spec: ToolSpec) => boolean>()

/** The search tool's default name. */
export const defaultName = "search_tools"

/** Tools per search unless {@link Options.maxResults} says otherwise. */
export const defaultMaxResults = 5

const defaultDescription = "Search the tool catalogue. Most tools are not loaded: describe what you need to do in a " +
  "few words and this returns the tools that fit, which you can call from your next step. Search again with other " +
  "words if none fits."

/** What one search answered (the search tool's output). */
export const Found = Schema.Struct({
  query: Schema.String,
  tools: Schema.Array(Schema.Struct({ name: Schema.String, description: Schema.String }))
})
export type Found = typeof Found.Type

// ---------------------------------------------------------------------------
// lexical search
// ---------------------------------------------------------------------------

const indexes = new WeakMap<ReadonlyArray<ToolSpec>, SearchIndex.SearchIndex>()

/** A turn's catalogue that is part of a run's (the tools its selection allows): searched in the run's index. */
const parts = new WeakMap<
  ReadonlyArray<ToolSpec>,
  { readonly of: ReadonlyArray<ToolSpec>; readonly names: ReadonlySet<string> }
>()

const indexOf = (catalogue: ReadonlyArray<ToolSpec>): SearchIndex.SearchIndex => {
  let index = indexes.get(catalogue)
  if (index === undefined) {
    index = SearchIndex.make(catalogue)
    indexes.set(catalogue, index)
  }
  return index
}

/**
 * BM25F over each tool's name, description and parameters (names and descriptions, nested ones
 * too), each field with its own length normalisation; a tool sharing no term with the query is
 * never found. The index is built once per catalogue (a run's deferred tools, shared by the runs
 * over one registry); a search touches only the tools holding a query term (measured in
 * docs/tool-search.md).
 */
export const lexical: Searcher = (query, catalogue, limit) =>
  Effect.sync(() => {
    const part = parts.get(catalogue)
    const index = indexOf(part?.of ?? catalogue)
    return index.search(query, limit, part === undefined ? undefined : (name) => part.names.has(name))
      .map((hit) => hit.name as string)
  })

// ---------------------------------------------------------------------------
// the plan of a run
// ---------------------------------------------------------------------------

/** A run's tool search: its registry (the run's tools and the search tool) and its deferred tools. */
export interface Plan<R> {
  /** The run's registry with the search tool added. */
  readonly tools: ToolRegistry.ToolRegistry<R>
  /** The search tool's canonical name. */
  readonly tool: ToolName
  /** The deferred tools, in registry order. */
  readonly deferred: ReadonlyArray<ToolSpec>
  readonly isDeferred: (canonical: string) => boolean
  /**
   * The deferred tools `selected` holds, in registry order: `deferred` itself when it holds them
   * all, and the same array again while a selection holds the same ones (so what is built from it,
   * a provider's export, an index, is built once).
   */
  readonly within: (selected: ToolRegistry.Advertised<unknown>) => ReadonlyArray<ToolSpec>
  readonly keep: "run" | "turn"
  readonly native: boolean
}

/** The run's tool search options are wrong: a name the registry lacks, or a search tool name already taken. */
export class InvalidToolSearch extends Schema.TaggedError<InvalidToolSearch>()("InvalidToolSearch", {
  message: Schema.String
}) {}

/** The deferred tools the current turn's selection allows (set by the loop around a turn's calls). */
const TurnCatalogue = Context.Reference<
  { readonly of: ReadonlyArray<ToolSpec>; readonly catalogue: ReadonlyArray<ToolSpec> } | undefined
>("tinyagents/ToolSearch/TurnCatalogue", { defaultValue: () => undefined })

/**
 * Runs `effect` (a turn's calls) with the search tool of `turn`'s plan searching only the deferred
 * tools the turn's selection holds. Without it (an MCP server), the search tool searches them all.
 */
export const withinTurn = <R>(turn: TurnTools<R>) => <A, E, R2>(effect: Effect.Effect<A, E, R2>): Effect.Effect<A, E, R2> =>
  Effect.provideService(effect, TurnCatalogue, { of: turn.plan.deferred, catalogue: turn.searchable })

// plans are kept per registry, by the options that make them, so that the runs over one registry
// share the registry with the search tool, the deferred tools and their index
const plans = new WeakMap<ToolRegistry.ToolRegistry<unknown>, Map<string, Result.Result<Plan<unknown> | undefined, InvalidToolSearch>>>()
/**
 * Plans kept per registry; past it the oldest is dropped (a `defer` predicate or `searcher` made
 * afresh per run never hits, and must not pile up).
 */
const plansPerRegistry = 16
const identities = new WeakMap<object, number>()
let nextIdentity = 0
const identityOf = (value: object | undefined): number | undefined => {
  if (value === undefined) return undefined
  let id = identities.get(value)
  if (id === undefined) {
    id = ++nextIdentity
    identities.set(value, id)
  }
  return id
}

const keyOf = (options: Options): string =>
  JSON.stringify([
    typeof options.defer === "function" ? { f: identityOf(options.defer) } : options.defer ?? "all",
    options.loaded ?? [],
    options.minTools ?? 0,
    options.name ?? defaultName,
    options.description ?? defaultDescription,
    options.maxResults ?? defaultMaxResults,
    identityOf(options.searcher ?? lexical),
    options.keep ?? "run",
    options.native ?? true
  ])

/**
 * The plan for a run over `registry`: `undefined` when nothing is deferred (the catalogue is at most
 * `minTools`, or the rule defers no tool). Made once per registry and options (the `defer`
 * predicate and the `searcher` by identity): the runs over one registry share it.
 */
export const plan = <R>(
  registry: ToolRegistry.ToolRegistry<R>,
  options: Options
): Result.Result<Plan<R> | undefined, InvalidToolSearch> => {
  let kept = plans.get(registry)
  if (kept === undefined) {
    kept = new Map()
    plans.set(registry, kept)
  }
  const key = keyOf(options)
  const found = kept.get(key)
  if (found !== undefined) return found as Result.Result<Plan<R> | undefined, InvalidToolSearch>
  const made = makePlan(registry, options)
  kept.set(key, made)
  if (kept.size > plansPerRegistry) kept.delete(kept.keys().next().value!)
  return made
}

const makePlan = <R>(
  registry: ToolRegistry.ToolRegistry<R>,
  options: Options
): Result.Result<Plan<R> | undefined, InvalidToolSearch> => {
  if (registry.names.length <= (options.minTools ?? 0)) return Result.succeed(undefined)
  const loaded = new Set<string>()
  const unknown: Array<string> = []
  const canonical = (names: ReadonlyArray<string>, into: Set<string>) => {
    for (const name of names) {
      const found = registry.aliases.toCanonical(name)
      if (found === undefined) unknown.push(name)
      else into.add(found)
    }
  }
  canonical(options.loaded ?? [], loaded)
  const defer = options.defer ?? "all"
  const listed = new Set<string>()
  if (Array.isArray(defer)) canonical(defer, listed)
  if (unknown.length > 0) {
    return Result.fail(
      new InvalidToolSearch({ message: `tool search names tools the registry lacks: ${unknown.join(", ")}` })
    )
  }
  const rule = defer === "all"
    ? () => true
    : typeof defer === "function"
    ? defer
    : (spec: ToolSpec) => listed.has(spec.name)
  const deferred = registry.specs.filter((spec) => !loaded.has(spec.name) && rule(spec))
  if (deferred.length === 0) return Result.succeed(undefined)
  const deferredNames = new Set<string>(deferred.map((spec) => spec.name))

  const maxResults = options.maxResults ?? defaultMaxResults
  const searcher = options.searcher ?? lexical
  const byName = new Map(deferred.map((spec) => [spec.name as string, spec]))
  const search = Tool.make(options.name ?? defaultName, {
    description: options.description ?? defaultDescription,
    input: Schema.Struct({
      query: Schema.String.annotate({ description: "What you need to do, in a few words." })
    }),
    output: Found,
    safety: { access: "read", idempotent: true },
    handler: ({ query }) =>
      Effect.flatMap(TurnCatalogue, (turn) => {
        // the turn's selection bounds the search: a tool it hides is never found
        const catalogue = turn !== undefined && turn.of === deferred ? turn.catalogue : deferred
        const within = catalogue === deferred ? deferredNames : parts.get(catalogue)?.names ?? new Set(catalogue.map((s) => s.name))
        return Effect.map(searcher(query, catalogue, maxResults), (names) => ({
          query,
          tools: names.flatMap((name) => {
            const spec = within.has(name) ? byName.get(name) : undefined
            return spec === undefined ? [] : [{ name: spec.name as string, description: spec.description }]
          }).slice(0, maxResults)
        }))
      }),
    // what a model without native tool search reads: each tool found with its parameters
    toModelOutput: ({ query, tools }) =>
      tools.length === 0
        ? `No tool matched ${JSON.stringify(query)}. Search again with other words.`
        : `Found ${tools.length} tool${tools.length === 1 ? "" : "s"}; you can call ${
          tools.length === 1 ? "it" : "them"
        } from your next step:\n` +
          (stringify(tools.map(({ name }) => {
            const spec = byName.get(name)!
            return { name, description: spec.description, parameters: spec.inputSchema }
          })) ?? "[]")
  })
  const extended = ToolRegistry.extendResult(registry, [search])
  if (Result.isFailure(extended)) {
    return Result.fail(
      new InvalidToolSearch({
        message: `the search tool ${JSON.stringify(search.name)} cannot be added (${extended.failure.message}); ` +
          `set toolSearch.name to a name no tool has`
      })
    )
  }
  const tools = extended.success as ToolRegistry.ToolRegistry<R>
  // the last selection's deferred tools that was not all of them: the same array while it holds the same tools
  let last: ReadonlyArray<ToolSpec> = deferred
  const within = (selected: ToolRegistry.Advertised<unknown>): ReadonlyArray<ToolSpec> => {
    const specs = deferred.filter((spec) => selected.has(spec.name))
    if (specs.length === deferred.length) return deferred
    const previous = last
    if (specs.length === previous.length && specs.every((spec, i) => spec === previous[i])) return previous
    parts.set(specs, { of: deferred, names: new Set(specs.map((spec) => spec.name)) })
    last = specs
    return specs
  }
  return Result.succeed({
    tools,
    tool: tools.names[tools.names.length - 1]!,
    deferred,
    isDeferred: (name) => deferredNames.has(name),
    within,
    keep: options.keep ?? "run",
    native: options.native ?? true
  })
}

/** The canonical names a result of the search tool `tool` revealed (none for another tool's, or an error). */
export const revealedBy = (result: ToolResult.ToolResult, tool: string): ReadonlyArray<string> => {
  if (result.name !== tool || result.isError) return []
  const found = Schema.decodeUnknownOption(Found)(result.value)
  return found._tag === "Some" ? found.value.tools.map((t) => t.name) : []
}

/** The query of a result of the search tool (empty when it has none). */
export const queryOf = (result: ToolResult.ToolResult): string => {
  const found = Schema.decodeUnknownOption(Found)(result.value)
  return found._tag === "Some" ? found.value.query : ""
}

// ---------------------------------------------------------------------------
// a turn
// ---------------------------------------------------------------------------

/** What a run revealed: each tool found and the last turn whose search found it (-1: the run's given messages). */
export type Revealed = Map<string, number>

/** The tools the searches among `messages` (a conversation given to a run) revealed, as of turn -1. */
export const revealedIn = (
  messages: ReadonlyArray<{ readonly role: string; readonly results?: ReadonlyArray<ToolResult.ToolResult> }>,
  tool: string
): Revealed => {
  const revealed: Revealed = new Map()
  for (const message of messages) {
    for (const result of message.role === "tool" ? message.results ?? [] : []) {
      for (const name of revealedBy(result, tool)) revealed.set(name, -1)
    }
  }
  return revealed
}

/** A turn under tool search: what is allowed, what the model is shown, and the request's `toolSearch`. */
export interface TurnTools<R> {
  /** The run's plan. */
  readonly plan: Plan<R>
  /** The allowlist: the selected tools that are loaded or revealed, and the search tool. */
  readonly advertised: ToolRegistry.Advertised<R>
  /** The tools in the request: the allowlist (portable), or its loaded tools and the search tool (native). */
  readonly shown: ReadonlyArray<ToolSpec>
  /** The deferred tools the turn's selection holds: all the search tool finds this turn ({@link withinTurn}). */
  readonly searchable: ReadonlyArray<ToolSpec>
  /** The request's `toolSearch` (native only): the search tool and every selected deferred tool. */
  readonly request?: { readonly tool: string; readonly deferred: ReadonlyArray<ToolSpec> }
}

/**
 * The tools of turn `turn` under `plan`: `selected` (the turn's selection over the run's own tools)
 * bounds them; a deferred tool is allowed once revealed (for the rest of the run, or with
 * `keep: "turn"` the turn after its search only); `native`: the model has tool search of its own.
 * A call to a selected deferred tool not revealed is refused with "search first"; one the selection
 * hides, deferred or not, is plainly not available.
 */
export const turnTools = <R>(
  plan: Plan<R>,
  selected: ToolRegistry.Advertised<unknown>,
  revealed: Revealed,
  turn: number,
  native: boolean
): TurnTools<R> => {
  const visible = (name: string): boolean => {
    if (!plan.isDeferred(name)) return true
    const at = revealed.get(name)
    return at !== undefined && (plan.keep === "run" || at === turn - 1)
  }
  const allowed = new Set<string>(selected.specs.filter((spec) => visible(spec.name)).map((spec) => spec.name))
  allowed.add(plan.tool)
  const advertised: ToolRegistry.Advertised<R> = {
    ...ToolRegistry.filter(plan.tools, (spec) => allowed.has(spec.name)),
    search: { tool: plan.tool, deferred: (name) => plan.isDeferred(name) && selected.has(name) }
  }
  const searchable = plan.within(selected)
  if (!(native && plan.native)) return { plan, advertised, shown: advertised.specs, searchable }
  return {
    plan,
    advertised,
    shown: advertised.specs.filter((spec) => !plan.isDeferred(spec.name)),
    searchable,
    request: { tool: plan.tool, deferred: searchable }
  }
}
