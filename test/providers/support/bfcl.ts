/**
 * Loads the vendored BFCL corpus (test/fixtures/bfcl) and builds one registry
 * per entry from its JSON-Schema tools, as imported MCP-style tools would be.
 */
import { readFileSync } from "node:fs"
import { Effect, Result } from "effect"
import * as Tool from "../../../src/contract/Tool.ts"
import type { ToolSchema } from "../../../src/index.ts"
import * as ToolRegistry from "../../../src/contract/ToolRegistry.ts"

export interface BfclTool {
  readonly name: string
  readonly name_sanitized: string
  readonly description: string
  readonly input_schema: ToolSchema.JsonSchemaObject
}

export interface BfclCall {
  readonly name: string
  readonly arguments: { readonly [key: string]: unknown }
  readonly schema_errors: ReadonlyArray<string>
}

export interface BfclEntry {
  readonly id: string
  readonly category: string
  readonly tools: ReadonlyArray<BfclTool>
  readonly canonical_calls: ReadonlyArray<BfclCall>
}

export const categories = ["simple_python", "multiple", "live_simple", "parallel", "parallel_multiple"] as const

const root = new URL("../../fixtures/bfcl/", import.meta.url)

/** Every entry of the given categories. */
export const load = (which: ReadonlyArray<string> = categories): ReadonlyArray<BfclEntry> =>
  which.flatMap((category) =>
    readFileSync(new URL(`${category}.normalized.jsonl`, root), "utf8")
      .split("\n")
      .filter((line) => line.trim().length > 0)
      .map((line) => JSON.parse(line) as BfclEntry)
  )

/** The registry of one entry's tools (handlers are never run). */
export const registryOf = (entry: BfclEntry): ToolRegistry.ToolRegistry => {
  const tools = entry.tools.map((tool) => {
    const made = Tool.fromJsonSchema(tool.name, {
      description: tool.description,
      inputSchema: tool.input_schema,
      handler: () => Effect.succeed(null)
    })
    if (Result.isFailure(made)) throw new Error(`${entry.id}: ${made.failure.message}`)
    return made.success
  })
  const registry = ToolRegistry.makeResult(tools)
  if (Result.isFailure(registry)) throw new Error(`${entry.id}: ${registry.failure.message}`)
  return registry.success
}
