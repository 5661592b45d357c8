/**
 * `tinyagents tools <module>`: the tools of a tools module with their safety metadata, as a table
 * or as JSON ({@link printTools}; `mcp tools` prints an MCP server's tools the same way), then the
 * prompts and resources it exports ({@link formatExtras}).
 */
import { Console, Effect } from "effect"
import { Command, Flag } from "effect/cli"
import * as Safety from "../../contract/Safety.ts"
import type * as Tool from "../../contract/Tool.ts"
import { load, moduleArgument } from "../internal/toolsModule.ts"

/** The safety metadata of a spec, with defaults applied (what `tools --json` prints per tool). */
export interface ToolSummary {
  readonly name: string
  readonly originalName?: string
  readonly description: string
  readonly safety: {
    readonly access: Safety.Access
    readonly idempotent: boolean
    readonly networked: boolean
    readonly filesystem: boolean | { readonly workspaceRoot?: string }
    readonly shell: boolean
    readonly spend: boolean
    readonly requiresConfirmation: boolean
    readonly destructive: boolean
    readonly tags: ReadonlyArray<string>
    readonly redact?: { readonly keys: ReadonlyArray<string>; readonly patterns: ReadonlyArray<string> }
  }
  /** `idempotent`, `keyed` (an idempotency key) or `none`. */
  readonly idempotency: "idempotent" | "keyed" | "none"
  /** Hidden services the handler uses. */
  readonly injected: ReadonlyArray<string>
}

/** The summary of one tool: safety metadata with its defaults applied. */
export const summarize = (spec: Tool.ToolSpec): ToolSummary => {
  const s = spec.safety
  const redact = s.redact
  return {
    name: spec.name,
    ...(spec.originalName === undefined ? {} : { originalName: spec.originalName }),
    description: spec.description,
    safety: {
      access: Safety.accessOf(s),
      idempotent: Safety.isIdempotent(s),
      networked: s.networked === true,
      filesystem: s.filesystem ?? false,
      shell: s.shell === true,
      spend: s.spend === true,
      requiresConfirmation: s.requiresConfirmation === true,
      destructive: Safety.toMcpAnnotations(s).destructiveHint,
      tags: s.tags ?? [],
      ...(redact === undefined ? {} : {
        redact: { keys: redact.keys ?? [], patterns: (redact.patterns ?? []).map(String) }
      })
    },
    idempotency: spec.idempotency,
    injected: spec.injected
  }
}

const flagsOf = (summary: ToolSummary): string => {
  const s = summary.safety
  const flags = [
    s.idempotent ? "idempotent" : undefined,
    summary.idempotency === "keyed" ? "keyed" : undefined,
    s.networked ? "networked" : undefined,
    s.filesystem === false ? undefined : typeof s.filesystem === "object" && s.filesystem.workspaceRoot !== undefined
      ? `filesystem(${s.filesystem.workspaceRoot})`
      : "filesystem",
    s.shell ? "shell" : undefined,
    s.spend ? "spend" : undefined,
    s.requiresConfirmation ? "confirm" : undefined,
    s.destructive ? "destructive" : undefined,
    ...s.tags.map((tag) => `#${tag}`)
  ].filter((flag): flag is string => flag !== undefined)
  return flags.length === 0 ? "-" : flags.join(",")
}

/** Rows as columns two spaces apart, each column but the last padded to its widest cell. */
const table = (rows: ReadonlyArray<ReadonlyArray<string>>): string => {
  const last = rows[0]!.length - 1
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)))
  return rows.map((row) => row.map((cell, column) => column < last ? cell.padEnd(widths[column]!) : cell).join("  ").trimEnd())
    .join("\n")
}

/** The `tools` table: one row per tool (name, access, safety flags, first line of the description). */
export const formatTools = (summaries: ReadonlyArray<ToolSummary>): string =>
  table([
    ["TOOL", "ACCESS", "SAFETY", "DESCRIPTION"],
    ...summaries.map((t) => [
      t.originalName === undefined ? t.name : `${t.name} (${t.originalName})`,
      t.safety.access,
      flagsOf(t),
      t.description.split("\n")[0]!
    ])
  ])

/** A prompt as the listings show it (`McpPrompt`, or a server's `prompts/list`). */
export interface PromptRow {
  readonly name: string
  readonly description?: string | undefined
  readonly arguments: ReadonlyArray<{ readonly name: string; readonly required: boolean }>
}

/** A resource or resource template as the listings show it. */
export interface ResourceRow {
  /** The URI, or the URI template. */
  readonly uri: string
  readonly mimeType?: string | undefined
  readonly description?: string | undefined
}

/**
 * The prompts and resources tables that follow the tools (each only when there are some): a prompt's
 * arguments (`name?` when optional), a resource's URI or template and MIME type, and the first line
 * of each description.
 */
export const formatExtras = (prompts: ReadonlyArray<PromptRow>, resources: ReadonlyArray<ResourceRow>): string =>
  [
    prompts.length === 0 ? undefined : table([
      ["PROMPT", "ARGUMENTS", "DESCRIPTION"],
      ...prompts.map((prompt) => [
        prompt.name,
        prompt.arguments.length === 0
          ? "-"
          : prompt.arguments.map((argument) => argument.required ? argument.name : `${argument.name}?`).join(", "),
        (prompt.description ?? "").split("\n")[0]!
      ])
    ]),
    resources.length === 0 ? undefined : table([
      ["RESOURCE", "MIME", "DESCRIPTION"],
      ...resources.map((resource) => [resource.uri, resource.mimeType ?? "-", (resource.description ?? "").split("\n")[0]!])
    ])
  ].filter((section): section is string => section !== undefined).map((section) => `\n${section}`).join("\n")

/** Prints the summaries of `specs` on stdout: the table, or JSON. */
export const printTools = (specs: ReadonlyArray<Tool.ToolSpec>, json: boolean): Effect.Effect<void> => {
  const summaries = specs.map(summarize)
  return Console.log(json ? JSON.stringify(summaries, null, 2) : formatTools(summaries))
}

/** `tinyagents tools <module> [--json]`. */
export const toolsCommand = Command.make("tools", {
  module: moduleArgument,
  json: Flag.Boolean("json").pipe(Flag.withDescription("Print the list as JSON"), Flag.withDefault(false))
}, ({ json, module }) =>
  Effect.gen(function*() {
    const loaded = yield* load(module)
    yield* printTools(loaded.registry.specs, json)
    const extras = formatExtras(
      loaded.prompts,
      loaded.resources.map((resource) => ({
        uri: resource._tag === "Static" ? resource.uri : resource.uriTemplate,
        mimeType: resource.mimeType,
        description: resource.description
      }))
    )
    if (!json && extras !== "") yield* Console.log(extras)
  })).pipe(
    Command.withDescription(
      "List the tools of a tools module with their safety metadata: access level (read < write < network < mutate) and flags (idempotent, keyed, networked, filesystem, shell, spend, confirm, destructive, #tags); then the prompts and resources it exports for mcp serve (not with --json, which lists the tools)."
    ),
    Command.withExamples([
      { command: "tinyagents tools ./tools.ts", description: "A table, one tool per line" },
      { command: "tinyagents tools ./tools.ts --json", description: "The same as JSON, defaults applied" }
    ])
  )
