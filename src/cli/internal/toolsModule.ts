/**
 * Tools modules: loading one ({@link load}: a `.ts` or `.js` file whose default export is a
 * `ToolRegistry` or an array of tools, and which may export `layer`, and `prompts` and `resources`
 * arrays for `mcp serve`), the `<module>` argument of
 * the commands that take one, and running its tools with the services they need
 * ({@link withModuleServices}) and none of the command line's ({@link hideCliServices}).
 */
import { Context, Effect, FileSystem, Layer, Result, Stdio, Terminal } from "effect"
import { Argument } from "effect/cli"
import { ChildProcessSpawner } from "effect/process"
import { randomUUID } from "node:crypto"
import { statSync } from "node:fs"
import { resolve } from "node:path"
import { pathToFileURL } from "node:url"
import * as Tool from "../../contract/Tool.ts"
import * as ToolRegistry from "../../contract/ToolRegistry.ts"
import * as McpPrompt from "../../mcp/McpPrompt.ts"
import * as McpResource from "../../mcp/McpResource.ts"
import { EventSink } from "../../runtime/EventSink.ts"
import { RunContext } from "../../runtime/RunContext.ts"
import { StoreRegistry } from "../../runtime/StoreRegistry.ts"
import { errorText, UsageError } from "./errors.ts"
import { type EventFormat, sinkFor } from "./events.ts"

/** A loaded tools module: its registry, and the `layer` it exports (if any). */
export interface ToolsModule {
  /** Absolute path of the module file. */
  readonly path: string
  readonly registry: ToolRegistry.ToolRegistry<unknown>
  /** The module's `layer` export: the services its tools need. */
  readonly layer: Layer.Layer<unknown, unknown, unknown> | undefined
  /** The module's `prompts` export (`McpPrompt`s, served by `mcp serve`); empty when absent. */
  readonly prompts: ReadonlyArray<McpPrompt.Any>
  /** The module's `resources` export (`McpResource`s, served by `mcp serve`); empty when absent. */
  readonly resources: ReadonlyArray<McpResource.Any>
}

const isRegistry = (u: unknown): u is ToolRegistry.ToolRegistry<unknown> =>
  typeof u === "object" && u !== null && Array.isArray((u as ToolRegistry.ToolRegistry).names) &&
  Array.isArray((u as ToolRegistry.ToolRegistry).entries) && Array.isArray((u as ToolRegistry.ToolRegistry).specs) &&
  typeof (u as ToolRegistry.ToolRegistry).get === "function"

const describeValue = (u: unknown): string =>
  u === null
    ? "null"
    : Array.isArray(u)
    ? "an array"
    : Effect.isEffect(u)
    ? "an Effect"
    : `${/^[aeiou]/.test(typeof u) ? "an" : "a"} ${typeof u}`

/**
 * Why a tools module could not be imported. A Node that does not strip TypeScript types (before
 * 22.18) refuses a `.ts` module with "Unknown file extension": say which Node is needed.
 */
export const loadErrorText = (path: string, error: unknown): string => {
  const code = typeof error === "object" && error !== null ? (error as { readonly code?: unknown }).code : undefined
  if (code === "ERR_UNKNOWN_FILE_EXTENSION" && /\.[mc]?ts$/.test(path)) {
    return `${errorText(error)} (this Node, ${process.version}, cannot load TypeScript: run the tools module with Node 24 or later, e.g. through npx or an npm script in a project that has the node devDependency, or compile it to .js)`
  }
  return errorText(error)
}

/**
 * Imports a tools module (`.ts` on Node 24 or later, which strips types, or `.js`) from `path`,
 * resolved against the working directory. Fails with a {@link UsageError} when the file does not
 * exist, cannot be imported, has no default export, its default export is neither a
 * `ToolRegistry` nor an array of tools (or the tools do not make a valid registry), or it exports a
 * `layer` that is not a `Layer`, or `prompts` / `resources` that are not arrays of `McpPrompt.make` /
 * `McpResource.make` or `McpResource.template` values.
 */
export const load = (path: string): Effect.Effect<ToolsModule, UsageError> =>
  Effect.gen(function*() {
    const absolute = resolve(path)
    const isFile = yield* Effect.sync(() => statSync(absolute, { throwIfNoEntry: false })?.isFile() === true)
    if (!isFile) return yield* new UsageError({ detail: `tools module not found: ${path}` })
    const exports = yield* Effect.tryPromise({
      try: () => import(pathToFileURL(absolute).href) as Promise<Record<string, unknown>>,
      catch: (error) => new UsageError({ detail: `cannot load tools module ${path}: ${loadErrorText(path, error)}` })
    })
    const expected = "export default a ToolRegistry or an array of tools"
    if (!("default" in exports) || exports.default === undefined) {
      return yield* new UsageError({ detail: `tools module ${path} has no default export (${expected})` })
    }
    const value = exports.default
    let registry: ToolRegistry.ToolRegistry<unknown>
    if (isRegistry(value)) {
      registry = value
    } else if (Array.isArray(value)) {
      const notTools = value.flatMap((tool, index) => Tool.isTool(tool) ? [] : [index])
      if (notTools.length > 0) {
        return yield* new UsageError({
          detail: `tools module ${path}: the default export is an array, but item${notTools.length > 1 ? "s" : ""} ${
            notTools.join(", ")
          } ${notTools.length > 1 ? "are" : "is"} not a tool (make tools with Tool.make or Tool.fromJsonSchema)`
        })
      }
      const made = ToolRegistry.makeResult(value as ReadonlyArray<Tool.Any>)
      if (Result.isFailure(made)) return yield* new UsageError({ detail: `tools module ${path}: ${made.failure.message}` })
      registry = made.success
    } else {
      return yield* new UsageError({
        detail: `tools module ${path}: the default export is ${describeValue(value)} (${expected}${
          Effect.isEffect(value) ? "; export the registry itself, e.g. Result.getOrThrow(ToolRegistry.makeResult(tools))" : ""
        })`
      })
    }
    const layer = exports.layer
    if (layer !== undefined && !Layer.isLayer(layer)) {
      return yield* new UsageError({
        detail: `tools module ${path}: the export "layer" is ${describeValue(layer)}, not a Layer`
      })
    }
    const prompts = yield* listExport(path, exports, "prompts", McpPrompt.isPrompt, "McpPrompt.make")
    const resources = yield* listExport(
      path,
      exports,
      "resources",
      McpResource.isResource,
      "McpResource.make or McpResource.template"
    )
    return { path: absolute, registry, layer: layer as Layer.Layer<unknown, unknown, unknown> | undefined, prompts, resources }
  })

/** An optional array export of a module (`prompts`, `resources`), each item checked. */
const listExport = <A>(
  path: string,
  exports: Record<string, unknown>,
  name: string,
  is: (u: unknown) => u is A,
  made: string
): Effect.Effect<ReadonlyArray<A>, UsageError> =>
  Effect.gen(function*() {
    const value = exports[name]
    if (value === undefined) return []
    if (!Array.isArray(value)) {
      return yield* new UsageError({
        detail: `tools module ${path}: the export "${name}" is ${describeValue(value)}, not an array (make them with ${made})`
      })
    }
    const wrong = value.flatMap((item, index) => is(item) ? [] : [index])
    if (wrong.length > 0) {
      return yield* new UsageError({
        detail: `tools module ${path}: in the export "${name}", item${wrong.length > 1 ? "s" : ""} ${wrong.join(", ")} ${
          wrong.length > 1 ? "are" : "is"
        } not made with ${made}`
      })
    }
    return value as ReadonlyArray<A>
  })

/** The `<module>` argument. */
export const moduleArgument = Argument.String("module").pipe(
  Argument.withDescription("Path of a tools module (.ts or .js): its default export is a ToolRegistry or an array of tools")
)

/** Services `effect/cli` needs that no tool may see (the stand-ins of `Cli.layer`). */
export const hideCliServices = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.updateContext(effect, (context: Context.Context<R>) =>
    Context.omit(FileSystem.FileSystem, Terminal.Terminal, ChildProcessSpawner.ChildProcessSpawner, Stdio.Stdio)(
      context
    ) as Context.Context<R>)

/**
 * Provides what running the module's tools needs: our event sink (first, so a module cannot take
 * the events away), the module's `layer`, then a fresh `RunContext` and a memory `StoreRegistry`
 * (which the module's layer may use or replace). The module's layer is trusted to provide what its
 * tools need; a service it lacks is a defect naming the service.
 */
export const withModuleServices = <A, E, R>(
  effect: Effect.Effect<A, E, R>,
  loaded: ToolsModule,
  events: EventFormat
): Effect.Effect<A, E | unknown> => {
  const base = Layer.mergeAll(
    RunContext.layer({ threadId: "cli", runId: `cli-${randomUUID()}`, turn: 0 }),
    StoreRegistry.layerMemory
  )
  const withSink = Effect.provideService(effect, EventSink, sinkFor(events))
  const withModule = loaded.layer === undefined
    ? withSink
    : Effect.provide(withSink, loaded.layer as unknown as Layer.Layer<never>)
  return Effect.provide(withModule, base) as Effect.Effect<A, E | unknown>
}
