/**
 * The BFCL corpus through every provider: each tool exports in each dialect
 * or fails with a ProviderExportError that says why (both counted), and each
 * canonical call, shaped as each provider sends it, resolves to the same
 * input as the call itself (or, for the few corpus calls that carry a key
 * their tool does not declare, to the same refusal: imported objects are
 * closed, as their exports show them).
 */
import { assert, describe, it } from "@effect/vitest"
import { Result } from "effect"
import type { ToolSpec } from "../../src/contract/Tool.ts"
import * as ToolCall from "../../src/contract/ToolCall.ts"
import type * as ToolRegistry from "../../src/contract/ToolRegistry.ts"
import { Anthropic, Gemini, Mcp, OpenAiChat, OpenAiResponses } from "../../src/providers/index.ts"
import type { ProviderExportError } from "../../src/providers/ProviderExportError.ts"
import * as Bfcl from "./support/bfcl.ts"
import { geminiOpenApiViolations, metaErrors2020, strictViolations } from "./support/schemaChecks.ts"
import { resolve } from "./support/tools.ts"

const entries = Bfcl.load()
/**
 * Canonical corpus calls (without `schema_errors`) that carry a key their tool does not
 * declare: `permeability` sent to calculate_voltage_difference, `type` to bank_calculate_balance.
 */
const EXTRA_KEY_CALLS = ["parallel_multiple_12#1", "parallel_multiple_26#1"]
const built = entries.map((entry) => ({ entry, registry: Bfcl.registryOf(entry) }))

type Check = (exported: unknown) => ReadonlyArray<string>

interface Dialect {
  readonly name: string
  readonly run: (spec: ToolSpec) => Result.Result<unknown, ProviderExportError>
  /** Problems of a successful export, from checks independent of the exporter. */
  readonly check: Check
}

const first = <A>(result: Result.Result<ReadonlyArray<A>, ProviderExportError>) => Result.map(result, (list) => list[0]!)

const dialects: ReadonlyArray<Dialect> = [
  {
    name: "openai-chat strict:auto",
    run: (spec) => first(OpenAiChat.toolDefinitionsResult([spec])),
    check: (t) => {
      const fn = (t as OpenAiChat.FunctionTool).function
      return [...metaErrors2020(fn.parameters), ...(fn.strict === true ? strictViolations(fn.parameters) : [])]
    }
  },
  {
    name: "openai-chat strict:require",
    run: (spec) => first(OpenAiChat.toolDefinitionsResult([spec], { strict: "require" })),
    check: (t) => strictViolations((t as OpenAiChat.FunctionTool).function.parameters)
  },
  {
    name: "openai-responses strict:auto",
    run: (spec) => first(OpenAiResponses.toolDefinitionsResult([spec])),
    check: (t) => metaErrors2020((t as OpenAiResponses.FunctionTool).parameters)
  },
  {
    name: "anthropic",
    run: (spec) => first(Anthropic.toolDefinitionsResult([spec])),
    check: (t) => metaErrors2020((t as Anthropic.Tool).input_schema)
  },
  {
    name: "anthropic strict:require",
    run: (spec) => first(Anthropic.toolDefinitionsResult([spec], { strict: "require" })),
    check: (t) => metaErrors2020((t as Anthropic.Tool).input_schema)
  },
  {
    name: "gemini json-schema",
    run: (spec) => first(Gemini.toolDefinitionsResult([spec])),
    check: (t) => metaErrors2020((t as Gemini.Tool).functionDeclarations[0]!.parametersJsonSchema)
  },
  {
    name: "gemini openapi",
    run: (spec) => first(Gemini.toolDefinitionsResult([spec], { dialect: "openapi" })),
    check: (t) => {
      const parameters = (t as Gemini.Tool).functionDeclarations[0]!.parameters
      return parameters === undefined ? [] : geminiOpenApiViolations(parameters)
    }
  },
  {
    name: "mcp",
    run: (spec) => first(Mcp.toolDefinitionsResult([spec])),
    check: (t) => metaErrors2020((t as Mcp.Tool).inputSchema)
  }
]

const reasons = new Set(["invalid_name", "duplicate_name", "unsupported_schema", "limit_exceeded"])

const admitsNull = (root: any, schema: any): boolean => {
  if (schema === null || typeof schema !== "object") return false
  if (typeof schema.$ref === "string") return admitsNull(root, root.$defs?.[schema.$ref.split("/").pop()])
  const types = Array.isArray(schema.type) ? schema.type : [schema.type]
  return types.includes("null") || (Array.isArray(schema.enum) && schema.enum.includes(null)) ||
    (Array.isArray(schema.anyOf) && schema.anyOf.some((b: unknown) => admitsNull(root, b)))
}

/**
 * The arguments with `null` for every optional property left out that strict
 * mode made nullable, recursively: what a model sends under strict mode.
 */
const withNulls = (root: any, schema: any, value: unknown): unknown => {
  if (schema === undefined || schema === null || typeof schema !== "object") return value
  if (typeof schema.$ref === "string") return withNulls(root, root.$defs?.[schema.$ref.split("/").pop()], value)
  if (Array.isArray(value)) return value.map((v) => withNulls(root, schema.items, v))
  if (typeof value !== "object" || value === null || typeof schema.properties !== "object") return value
  const required: ReadonlyArray<string> = schema.required ?? []
  const out: Record<string, unknown> = {}
  for (const [key, property] of Object.entries(schema.properties as Record<string, unknown>)) {
    if (Object.hasOwn(value, key)) out[key] = withNulls(root, property, (value as any)[key])
    else if (!required.includes(key) && !admitsNull(root, property)) out[key] = null
  }
  for (const [key, v] of Object.entries(value)) if (!Object.hasOwn(out, key)) out[key] = v
  return out
}

describe("BFCL corpus through every provider", () => {
  it("every tool exports in every dialect or fails with a clear reason", () => {
    const specs = built.flatMap(({ registry }) => registry.specs)
    assert.isAbove(specs.length, 1500)
    const summary: Record<string, { ok: number; failed: number; reasons: Record<string, number> }> = {}
    let strictFallbacks = 0
    for (const dialect of dialects) {
      const counts = summary[dialect.name] = { ok: 0, failed: 0, reasons: {} as Record<string, number> }
      for (const spec of specs) {
        const result = dialect.run(spec)
        if (Result.isSuccess(result)) {
          counts.ok++
          assert.deepStrictEqual(dialect.check(result.success), [], `${dialect.name}: ${spec.name}`)
          if (dialect.name === "openai-chat strict:auto" && (result.success as OpenAiChat.FunctionTool).function.strict === false) {
            strictFallbacks++
          }
        } else {
          counts.failed++
          const error = result.failure
          assert.strictEqual(error._tag, "ProviderExportError")
          assert.isTrue(reasons.has(error.reason))
          assert.strictEqual(error.toolName, spec.name)
          assert.isAbove(error.detail.length, 10)
          const key = `${error.reason}: ${error.detail.replace(/"[^"]*"/g, "…")}`
          counts.reasons[key] = (counts.reasons[key] ?? 0) + 1
        }
      }
      assert.strictEqual(counts.ok + counts.failed, specs.length)
    }
    // OpenAI "auto" and MCP never refuse a BFCL tool: they fall back or take the schema as is.
    assert.strictEqual(summary["openai-chat strict:auto"]!.failed, 0)
    assert.strictEqual(summary["mcp"]!.failed, 0)
    assert.strictEqual(strictFallbacks, summary["openai-chat strict:require"]!.failed)
    console.log(`BFCL export summary over ${specs.length} tools:\n${JSON.stringify(summary, null, 2)}`)
  })

  it("every canonical call, shaped as each provider sends it, resolves to the same input (or the same refusal)", () => {
    let checked = 0
    let strictChecked = 0
    const refused: Array<string> = []
    /** What resolving a call gives: its input, or its error's tag and message. */
    const outcome = (reg: ToolRegistry.ToolRegistry, call: ToolCall.ToolCall): unknown => {
      const resolved = resolve(reg, call)
      return Result.isSuccess(resolved)
        ? { input: resolved.success.input }
        : { error: resolved.failure._tag, message: resolved.failure.message }
    }
    for (const { entry, registry } of built) {
      const specs = registry.specs
      const strictNames = new Set(
        Result.getOrThrow(OpenAiChat.toolDefinitionsResult(specs)).filter((t) => t.function.strict === true).map((t) =>
          t.function.name
        )
      )
      entry.canonical_calls.forEach((call, index) => {
        if (call.schema_errors.length > 0) return
        const entryOf = registry.get(call.name)
        assert.isDefined(entryOf, `${entry.id}: ${call.name}`)
        const spec = entryOf!.spec
        const id = `${entry.id}#${index}`
        const expected = outcome(registry, ToolCall.make(id, call.name, call.arguments))
        if (!Object.hasOwn(expected as object, "input")) refused.push(`${id}: ${(expected as { message: string }).message}`)
        const text = JSON.stringify(call.arguments)
        const sameInput = (provider: string, calls: ReadonlyArray<ToolCall.ToolCall>) => {
          assert.strictEqual(calls.length, 1, `${provider} ${id}`)
          assert.deepStrictEqual(outcome(registry as ToolRegistry.ToolRegistry, calls[0]!), expected, `${provider} ${id}`)
        }
        sameInput("openai-chat", OpenAiChat.toolCalls({
          role: "assistant",
          content: null,
          tool_calls: [{ id, type: "function", function: { name: spec.name, arguments: text } }]
        }, { specs }).calls)
        sameInput("openai-responses", OpenAiResponses.toolCalls([
          { type: "function_call", call_id: id, name: spec.name, arguments: text }
        ], { specs }).calls)
        sameInput("anthropic", Anthropic.toolCalls([{ type: "tool_use", id, name: spec.name, input: call.arguments }]).calls)
        sameInput("gemini", Gemini.toolCalls([{ functionCall: { name: spec.name, args: call.arguments } }]).calls)
        sameInput("mcp", Mcp.toolCalls({
          jsonrpc: "2.0",
          id,
          method: "tools/call",
          params: { name: spec.originalName ?? spec.name, arguments: call.arguments }
        }).calls)
        checked++
        if (strictNames.has(spec.name)) {
          const nulls = JSON.stringify(withNulls(spec.inputSchema, spec.inputSchema, call.arguments))
          sameInput("openai-chat strict nulls", OpenAiChat.toolCalls({
            role: "assistant",
            content: null,
            tool_calls: [{ id, type: "function", function: { name: spec.name, arguments: nulls } }]
          }, { specs }).calls)
          if (nulls !== text) strictChecked++
        }
      })
    }
    assert.isAbove(checked, 1500)
    assert.isAbove(strictChecked, 50)
    // The corpus calls refused: each names a key its tool does not declare (a corpus error that
    // an open import used to pass to the handler).
    for (const line of refused) assert.match(line, /invalid arguments: at "[^"]+": Unexpected key with value /, line)
    assert.deepStrictEqual(refused.map((line) => line.slice(0, line.indexOf(":"))), EXTRA_KEY_CALLS)
    console.log(`BFCL calls: ${checked} canonical calls resolved identically through 5 providers; ${strictChecked} with strict-mode nulls`)
  })
})
