/**
 * Tool selection: which tools to advertise to the model this turn. A selector
 * takes the turn's query (the user's request) and returns an `Advertised`
 * view, so the boundary check refuses any tool it hid. Selectors: fixed name
 * lists, predicates over specs (side-effect level, tags), a lexical BM25
 * ranker over names and descriptions, and a model-based selector that falls
 * back to the lexical ranker when the model fails or names no real tool.
 * Selection hides tools; it does not authorise them (see `Policy`). A name
 * listed in a selector (`names`, `alwaysInclude`) that the registry lacks is a
 * bug: the selector dies with `ToolRegistry.UnknownToolNames` naming it.
 */
import { Effect } from "effect"
import * as Bm25 from "./internal/bm25.ts"
import * as Safety from "../contract/Safety.ts"
import type { ToolSpec } from "../contract/Tool.ts"
import type { ToolName } from "../contract/ToolName.ts"
import * as ToolRegistry from "../contract/ToolRegistry.ts"

/** Decides the advertised tools for a query. */
export type Selector<R = unknown, Env = never> = (query: string) => Effect.Effect<ToolRegistry.Advertised<R>, never, Env>

/** A predicate over tool specs. */
export type Predicate = (spec: ToolSpec) => boolean

/**
 * Always the listed tools (canonical or original names). A name the registry lacks is a
 * bug in the list: the selector dies with `ToolRegistry.UnknownToolNames` naming it.
 */
export const names = <R>(registry: ToolRegistry.ToolRegistry<R>, list: ReadonlyArray<string>): Selector<R> => {
  const advertised = Effect.orDie(Effect.fromResult(ToolRegistry.advertiseResult(registry, list)))
  return () => advertised
}

/** Always the tools that satisfy `predicate`. */
export const where = <R>(registry: ToolRegistry.ToolRegistry<R>, predicate: Predicate): Selector<R> => {
  const advertised = ToolRegistry.filter(registry, predicate)
  return () => Effect.succeed(advertised)
}

/** Tools whose access is at most `level`. */
export const accessAtMost = (level: Safety.Access): Predicate => (spec) =>
  Safety.isWithin(Safety.accessOf(spec.safety), level)

/** Tools carrying any of `tags`. */
export const tagged = (...tags: ReadonlyArray<string>): Predicate => (spec) =>
  (spec.safety.tags ?? []).some((tag) => tags.includes(tag))

/** Tools satisfying every predicate. */
export const every = (...predicates: ReadonlyArray<Predicate>): Predicate => (spec) => predicates.every((p) => p(spec))

// ---------------------------------------------------------------------------
// lexical
// ---------------------------------------------------------------------------

/** A tool and its BM25 score for a query. */
export interface Ranked {
  readonly name: ToolName
  readonly score: number
}

/** Weight of name terms relative to description terms. */
const nameWeight = 3

const indexes = new WeakMap<ToolRegistry.ToolRegistry<unknown>, Bm25.Index>()

const propertyNames = (spec: ToolSpec): Array<string> => {
  const properties = spec.inputSchema.properties
  return typeof properties === "object" && properties !== null ? Object.keys(properties) : []
}

const indexOf = (registry: ToolRegistry.ToolRegistry<unknown>): Bm25.Index => {
  let idx = indexes.get(registry)
  if (idx === undefined) {
    idx = Bm25.index(registry.specs.map((spec) => {
      const name = Bm25.tokenize(`${spec.name} ${spec.originalName ?? ""}`)
      return [
        ...Array.from({ length: nameWeight }, () => name).flat(),
        ...Bm25.tokenize(spec.description),
        ...Bm25.tokenize(propertyNames(spec).join(" "))
      ]
    }))
    indexes.set(registry, idx)
  }
  return idx
}

/** Every tool of `registry` ranked for `query` by BM25, best first (ties keep registry order). */
export const rank = (registry: ToolRegistry.ToolRegistry<unknown>, query: string): ReadonlyArray<Ranked> => {
  const scores = Bm25.score(indexOf(registry), Bm25.tokenize(query))
  return registry.names
    .map((name, i) => ({ name, score: scores[i] ?? 0, i }))
    .sort((a, b) => b.score - a.score || a.i - b.i)
    .map(({ name, score }) => ({ name, score }))
}

export interface LexicalOptions {
  /** At most this many ranked tools (tools in `alwaysInclude` come on top). */
  readonly maxTools: number
  /** Tools advertised every turn, whatever the query (each must be registered, or the selector dies). */
  readonly alwaysInclude?: ReadonlyArray<string>
  /** Drop tools scoring at most this. Default 0: a tool sharing no term with the query is never picked. */
  readonly minScore?: number
}

/** The canonical names of `list`, dropping those the registry lacks (a model's inventions). */
const canonicalAll = (registry: ToolRegistry.ToolRegistry<unknown>, list: ReadonlyArray<string>): Array<string> =>
  list.flatMap((n) => {
    const canonical = registry.aliases.toCanonical(n)
    return canonical === undefined ? [] : [canonical]
  })

/** The tools named (canonical names the registry holds), in registry order. */
const only = <R>(registry: ToolRegistry.ToolRegistry<R>, list: ReadonlyArray<string>): ToolRegistry.Advertised<R> => {
  const wanted = new Set(list)
  return ToolRegistry.filter(registry, (spec) => wanted.has(spec.name))
}

/**
 * A selector over `alwaysInclude`: a name in it the registry lacks is a bug in the
 * options, so the selector dies with `ToolRegistry.UnknownToolNames` naming it.
 */
const withAlways = <R, Env>(
  registry: ToolRegistry.ToolRegistry<R>,
  alwaysInclude: ReadonlyArray<string>,
  select: (always: ReadonlyArray<string>) => Selector<R, Env>
): Selector<R, Env> => {
  const checked = ToolRegistry.advertiseResult(registry, alwaysInclude)
  if (checked._tag === "Failure") {
    const defect = Effect.die(checked.failure)
    return () => defect
  }
  return select(checked.success.names)
}

const lexicalNames = (
  registry: ToolRegistry.ToolRegistry<unknown>,
  query: string,
  options: LexicalOptions
): Array<string> => {
  const minScore = options.minScore ?? 0
  return rank(registry, query)
    .filter((r) => r.score > minScore)
    .slice(0, Math.max(0, options.maxTools))
    .map((r) => r.name)
}

/** The `maxTools` best BM25 matches for the query, plus `alwaysInclude`. */
export const lexical = <R>(registry: ToolRegistry.ToolRegistry<R>, options: LexicalOptions): Selector<R> =>
  withAlways(registry, options.alwaysInclude ?? [], (always) => (query) =>
    Effect.sync(() => only(registry, [...always, ...lexicalNames(registry, query, options)])))

// ---------------------------------------------------------------------------
// model-based
// ---------------------------------------------------------------------------

/** Asks a model which tools fit the query; answers tool names. */
export type Choose<E, Env> = (query: string, specs: ReadonlyArray<ToolSpec>) => Effect.Effect<ReadonlyArray<string>, E, Env>

/**
 * The tools a model picks (at most `maxTools`, names it invented dropped), plus
 * `alwaysInclude`. Falls back to the lexical ranker when the model fails or
 * names no existing tool (logged as a warning).
 */
export const model = <R, E, Env>(
  registry: ToolRegistry.ToolRegistry<R>,
  choose: Choose<E, Env>,
  options: LexicalOptions
): Selector<R, Env> =>
  withAlways(registry, options.alwaysInclude ?? [], (always) => {
    const fallback = (query: string, why: string) =>
      Effect.as(
        Effect.logWarning(`tool selection: ${why}; using the lexical ranker`),
        only(registry, [...always, ...lexicalNames(registry, query, options)])
      )
    return (query) =>
      Effect.matchEffect(choose(query, registry.specs), {
        onFailure: () => fallback(query, "the model failed"),
        onSuccess: (picked) => {
          const known = [...new Set(canonicalAll(registry, picked))].slice(0, Math.max(0, options.maxTools))
          return known.length === 0
            ? fallback(query, "the model named no existing tool")
            : Effect.succeed(only(registry, [...always, ...known]))
        }
      })
  })
