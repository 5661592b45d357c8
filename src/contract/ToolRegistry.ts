/**
 * The set of tools a run may use: built once from a list of tools (checking
 * every name, alias and schema, and reporting all violations together), then
 * looked up by canonical or original name. A per-turn `Advertised` view is the
 * subset shown to the model this turn (`advertise`, which refuses names the
 * registry lacks); calls are checked against it.
 */
import { Data, Effect, Result } from "effect"
import type { Schema } from "effect"
import * as Tool from "./Tool.ts"
import type { ToolCall } from "./ToolCall.ts"
import type { InvalidArguments, MalformedArguments, ToolNotAllowed, ToolNotFound } from "./ToolError.ts"
import * as ToolInput from "./ToolInput.ts"
import * as Resolve from "../internal/resolve.ts"
import * as ToolName from "./ToolName.ts"
import type { SchemaExportError } from "./ToolSchema.ts"

/** A registered tool with its derived spec and compiled decoder. */
export interface Entry<R = unknown> {
  readonly tool: Tool.Tool<string, any, Schema.Top | undefined, unknown, R>
  readonly spec: Tool.ToolSpec
  readonly decode: ToolInput.Decoder<unknown>
}

/** Services needed by every tool of a registry (`R`). */
export interface ToolRegistry<out R = unknown> {
  /** Canonical names, in registration order. */
  readonly names: ReadonlyArray<ToolName.ToolName>
  readonly entries: ReadonlyArray<Entry<R>>
  readonly specs: ReadonlyArray<Tool.ToolSpec>
  readonly aliases: ToolName.Aliases
  /** The limits every call's raw arguments are checked against (rebuild a registry with them). */
  readonly limits: Required<ToolInput.Limits>
  /** The entry for a canonical or original name. */
  readonly get: (name: string) => Entry<R> | undefined
}

/** One reason a tool could not be registered. */
export type Violation =
  | ToolName.InvalidToolName
  | ToolName.ToolNameCollision
  | DuplicateToolName
  | UnsafeRetry
  | SchemaExportError

/** Two tools with the same canonical name. */
export class DuplicateToolName extends Data.TaggedError("DuplicateToolName")<{
  readonly name: string
}> {
  override get message(): string {
    return `tool name ${JSON.stringify(this.name)} is registered twice`
  }
}

/**
 * A tool declares a `retry` schedule but is neither idempotent (`safety.idempotent`)
 * nor keyed (`idempotency`): running it again could repeat its side effect.
 */
export class UnsafeRetry extends Data.TaggedError("UnsafeRetry")<{
  readonly name: string
}> {
  override get message(): string {
    return `tool ${
      JSON.stringify(this.name)
    } declares retry but is neither idempotent (safety.idempotent) nor keyed (idempotency); a retry could repeat its side effect`
  }
}

/** The registry could not be built; `violations` lists every problem, in tool order. */
export class InvalidRegistry extends Data.TaggedError("InvalidRegistry")<{
  readonly violations: ReadonlyArray<Violation>
}> {
  override get message(): string {
    return `invalid tool registry:\n${this.violations.map((v) => `- ${v.message}`).join("\n")}`
  }
}

/** Options of {@link make}. */
export interface MakeOptions {
  /**
   * Size and depth limits on every call's raw arguments, checked before decoding
   * (default `ToolInput.defaultLimits`: 64 levels, 1,000,000 bytes). Arguments over
   * a limit fail with a repairable `MalformedArguments` naming it.
   */
  readonly limits?: ToolInput.Limits
}

/**
 * Builds a registry, checking names (canonical rule, duplicates, alias
 * collisions) and exporting every schema. Fails with all violations at once.
 */
export const make = <const Tools extends ReadonlyArray<Tool.Any>>(
  tools: Tools,
  options: MakeOptions = {}
): Effect.Effect<ToolRegistry<Tool.Services<Tools[number]>>, InvalidRegistry> =>
  Effect.suspend(() => {
    const result = makeResult(tools, options)
    return Result.isSuccess(result) ? Effect.succeed(result.success) : Effect.fail(result.failure)
  })

/** {@link make} as a `Result`, for synchronous callers. */
export const makeResult = <const Tools extends ReadonlyArray<Tool.Any>>(
  tools: Tools,
  options: MakeOptions = {}
): Result.Result<ToolRegistry<Tool.Services<Tools[number]>>, InvalidRegistry> => build([], tools, options)

/**
 * `registry` with `tools` added after its own, checked as {@link make} checks (a name already
 * registered is a `DuplicateToolName`); the registry's entries are reused, not exported again.
 */
export const extendResult = <R, const Tools extends ReadonlyArray<Tool.Any>>(
  registry: ToolRegistry<R>,
  tools: Tools
): Result.Result<ToolRegistry<R | Tool.Services<Tools[number]>>, InvalidRegistry> =>
  build(registry.entries as ReadonlyArray<Entry<R | Tool.Services<Tools[number]>>>, tools, { limits: registry.limits })

const build = <R>(
  existing: ReadonlyArray<Entry<R>>,
  tools: ReadonlyArray<Tool.Any>,
  options: MakeOptions
): Result.Result<ToolRegistry<R>, InvalidRegistry> => {
  const violations: Array<Violation> = []
  const entries: Array<Entry<R>> = [...existing]
  const byName = new Map<string, Entry<R>>(existing.map((entry) => [entry.spec.name, entry]))
  const pairs: Array<readonly [string, ToolName.ToolName]> = existing.map((entry) => [entry.tool.name, entry.spec.name])
  for (const tool of tools) {
    const spec = Tool.spec(tool)
    if (Result.isFailure(spec)) {
      violations.push(spec.failure)
      continue
    }
    const name = spec.success.name
    if (tool.retry !== undefined && spec.success.idempotency === "none") {
      violations.push(new UnsafeRetry({ name }))
      continue
    }
    if (byName.has(name)) {
      const previous = byName.get(name)!
      violations.push(
        previous.tool.name === tool.name
          ? new DuplicateToolName({ name })
          : new ToolName.ToolNameCollision({ name, originals: [previous.tool.name, tool.name] })
      )
      continue
    }
    const entry: Entry<R> = {
      tool: tool as Entry<R>["tool"],
      spec: spec.success,
      decode: ToolInput.decoder(name, tool.input, {
        allowUnknownKeys: tool.options.allowUnknownKeys === true,
        ...(options.limits === undefined ? {} : { limits: options.limits })
      })
    }
    entries.push(entry)
    byName.set(name, entry)
    pairs.push([tool.name, name])
  }
  const aliases = ToolName.makeAliases(pairs)
  if (Result.isFailure(aliases)) violations.push(aliases.failure)
  if (violations.length > 0 || Result.isFailure(aliases)) return Result.fail(new InvalidRegistry({ violations }))
  const resolved = aliases.success
  return Result.succeed({
    names: entries.map((e) => e.spec.name),
    entries,
    specs: entries.map((e) => e.spec),
    aliases: resolved,
    limits: { ...ToolInput.defaultLimits, ...options.limits },
    get: (name) => {
      const canonical = resolved.toCanonical(name)
      return canonical === undefined ? undefined : byName.get(canonical)
    }
  })
}

/** The entry registered under `name`: its canonical name or, for an imported tool, its original name. */
export const get = <R>(registry: ToolRegistry<R>, name: string): Entry<R> | undefined => registry.get(name)

// ---------------------------------------------------------------------------
// per-turn view
// ---------------------------------------------------------------------------

/** The tools shown to the model this turn. Calls are checked against it, failing closed. */
export interface Advertised<out R = unknown> {
  readonly registry: ToolRegistry<R>
  /** Canonical names advertised, in registry order. */
  readonly names: ReadonlyArray<ToolName.ToolName>
  readonly specs: ReadonlyArray<Tool.ToolSpec>
  readonly has: (canonical: string) => boolean
  /**
   * Tool search (`ToolSearch`): the search tool's name, and whether a tool that is not advertised
   * is deferred (a call to it is refused with a `ToolNotAllowed` that says to search first).
   */
  readonly search?: { readonly tool: string; readonly deferred: (canonical: string) => boolean }
}

/** Selects by canonical (or original) names, or by a predicate over specs (`ToolTransform`'s `only` and `drop`). */
export type Selection = ReadonlyArray<string> | ((spec: Tool.ToolSpec) => boolean)

/** Names given to {@link advertise} that the registry does not hold (a typo, a tool never registered). */
export class UnknownToolNames extends Data.TaggedError("UnknownToolNames")<{
  /** The names not found, in the order given. */
  readonly names: ReadonlyArray<string>
  /** The registry's canonical names. */
  readonly registered: ReadonlyArray<ToolName.ToolName>
}> {
  override get message(): string {
    const names = this.names.map((n) => JSON.stringify(n)).join(", ")
    const registered = this.registered.length === 0 ? "(none)" : this.registered.join(", ")
    return `unknown tool name${this.names.length === 1 ? "" : "s"} ${names}; registered tools: ${registered}`
  }
}

/** The tools whose spec satisfies `predicate`, in registry order (a view that cannot fail). */
export const filter = <R>(registry: ToolRegistry<R>, predicate: (spec: Tool.ToolSpec) => boolean): Advertised<R> => {
  const specs = registry.specs.filter(predicate)
  const names = specs.map((s) => s.name)
  const set = new Set<string>(names)
  return { registry, names, specs, has: (canonical) => set.has(canonical) }
}

/** Every tool of the registry. */
export const all = <R>(registry: ToolRegistry<R>): Advertised<R> => filter(registry, () => true)

/**
 * The named tools (canonical or original names), in registry order: the view to show the model
 * this turn. Fails with `UnknownToolNames`, listing every name the registry lacks. Select by a
 * predicate with {@link filter}.
 */
export const advertise = <R>(
  registry: ToolRegistry<R>,
  names: ReadonlyArray<string>
): Effect.Effect<Advertised<R>, UnknownToolNames> => Effect.suspend(() => Effect.fromResult(advertiseResult(registry, names)))

/** {@link advertise} as a `Result`, for synchronous callers. */
export const advertiseResult = <R>(
  registry: ToolRegistry<R>,
  names: ReadonlyArray<string>
): Result.Result<Advertised<R>, UnknownToolNames> => {
  const wanted = new Set<string>()
  const unknown: Array<string> = []
  for (const name of names) {
    const canonical = registry.aliases.toCanonical(name)
    if (canonical === undefined) unknown.push(name)
    else wanted.add(canonical)
  }
  return unknown.length > 0
    ? Result.fail(new UnknownToolNames({ names: unknown, registered: registry.names }))
    : Result.succeed(filter(registry, (spec) => wanted.has(spec.name)))
}

/** A call whose tool is known, advertised, and whose arguments decoded. */
export interface Resolved<R = unknown> {
  readonly call: ToolCall
  readonly entry: Entry<R>
  readonly input: unknown
}

/**
 * The boundary check (the executor's admission, lifecycle step 1, before its call
 * limits): resolve the name, check it was advertised, parse and decode the
 * arguments. A refusal of a known tool is redacted per its `safety.redact` here.
 * Nothing here runs a handler.
 */
export const resolve = <R>(
  advertised: Advertised<R>,
  call: ToolCall
): Result.Result<Resolved<R>, ToolNotFound | ToolNotAllowed | MalformedArguments | InvalidArguments> => {
  const resolved = Resolve.resolveNow(advertised, call)
  return Resolve.isRefusal(resolved) ? Result.fail(resolved) : Result.succeed(resolved)
}
