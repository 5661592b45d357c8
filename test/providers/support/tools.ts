/**
 * Small builders for provider tests: tools from raw JSON Schema (as MCP and
 * BFCL supply them), registries, the boundary check, and results.
 */
import { readFileSync } from "node:fs"
import { Effect, Result } from "effect"
import * as Tool from "../../../src/contract/Tool.ts"
import type { ToolCall } from "../../../src/contract/ToolCall.ts"
import * as ToolError from "../../../src/contract/ToolError.ts"
import * as ToolRegistry from "../../../src/contract/ToolRegistry.ts"
import * as ToolResult from "../../../src/contract/ToolResult.ts"
import type { ToolSchema } from "../../../src/index.ts"

/** A JSON fixture from test/fixtures/providers. */
export const fixture = <A = any>(name: string): A =>
  JSON.parse(readFileSync(new URL(`../../fixtures/providers/${name}`, import.meta.url), "utf8")) as A

/** A tool defined by a raw JSON Schema; its handler is never run here. */
export const imported = (
  name: string,
  inputSchema: ToolSchema.JsonSchemaObject,
  options: Partial<Pick<Tool.FromJsonSchemaOptions<never, []>, "description" | "outputSchema" | "safety">> = {}
): Tool.Dynamic<never, never> => {
  const made = Tool.fromJsonSchema(name, {
    description: options.description ?? `${name} tool`,
    inputSchema,
    ...(options.outputSchema === undefined ? {} : { outputSchema: options.outputSchema }),
    ...(options.safety === undefined ? {} : { safety: options.safety }),
    handler: () => Effect.succeed(null)
  })
  if (Result.isFailure(made)) throw new Error(made.failure.message)
  return made.success
}

/**
 * `schema` as an imported tool shows (and enforces) it: `Tool.fromJsonSchema` closes an
 * object that lists properties and says nothing about other keys.
 */
export const closed = <S extends object>(schema: S): S & { readonly additionalProperties: false } => ({
  ...schema,
  additionalProperties: false
})

/** A registry of `tools`; throws on an invalid registry (use `ToolRegistry.makeResult` to test failures). */
export const registry = (tools: ReadonlyArray<Tool.Any>): ToolRegistry.ToolRegistry => {
  const made = ToolRegistry.makeResult(tools)
  if (Result.isFailure(made)) throw new Error(made.failure.message)
  return made.success
}

/** `ToolRegistry.resolve` against every tool of the registry. */
export const resolve = (reg: ToolRegistry.ToolRegistry, call: ToolCall) => ToolRegistry.resolve(ToolRegistry.all(reg), call)

/** The decoded input of a call that must resolve. */
export const inputOf = (reg: ToolRegistry.ToolRegistry, call: ToolCall): unknown => {
  const resolved = resolve(reg, call)
  if (Result.isFailure(resolved)) throw new Error(`${call.name}: ${resolved.failure.message}`)
  return resolved.success.input
}

/** A successful result with `text` (and `value`) for a call. */
export const success = (
  call: Pick<ToolCall, "id" | "name">,
  text: string,
  value?: unknown
): ToolResult.ToolResult => ({
  toolCallId: call.id,
  name: call.name,
  content: [ToolResult.text(text)],
  ...(value === undefined ? {} : { value }),
  artifacts: [],
  isError: false,
  elapsed: 1
})

/** A failed result (a handler's user-facing failure) for a call. */
export const failure = (call: Pick<ToolCall, "id" | "name">, message: string): ToolResult.ToolResult =>
  ToolResult.fromError(call, ToolError.repairable(message))

/** The error result the runtime builds when the boundary check refuses a call. */
export const rejected = (reg: ToolRegistry.ToolRegistry, call: ToolCall): ToolResult.ToolResult => {
  const resolved = resolve(reg, call)
  if (Result.isSuccess(resolved)) throw new Error(`${call.name}: expected a rejection`)
  return ToolResult.fromError(call, resolved.failure)
}

/**
 * A spec written by hand, for schemas Effect's importer refuses (`not`,
 * `if`): exporters must still handle what a spec can hold.
 */
export const handSpec = (name: string, inputSchema: ToolSchema.JsonSchemaObject): Tool.ToolSpec => ({
  name: name as Tool.ToolSpec["name"],
  description: `${name} tool`,
  inputSchema,
  injected: [],
  safety: {},
  retry: false,
  idempotency: "none",
  options: {}
})

/**
 * A result with every kind of block, in this order: text, audio (`UklG`, 3 bytes), a text resource,
 * a PDF resource and a zip resource (blobs `JVBE` and `UEsD`, 3 bytes each).
 */
export const mixed = (call: Pick<ToolCall, "id" | "name">): ToolResult.ToolResult => ({
  ...success(call, "report"),
  content: [
    ToolResult.text("report"),
    ToolResult.audio("UklG", "audio/wav"),
    ToolResult.resource({ uri: "file:///r/notes.md", mimeType: "text/markdown", text: "# Notes" }),
    ToolResult.resource({ uri: "file:///r/report.pdf", mimeType: "application/pdf", blob: "JVBE" }),
    ToolResult.resource({ uri: "file:///r/all.zip", mimeType: "application/zip", blob: "UEsD" })
  ]
})
