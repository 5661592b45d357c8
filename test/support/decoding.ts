/**
 * Helpers for tests that compare argument decoders: the reference decoder (no
 * fast path), what a caller observes of a decoder's answer, and the BFCL tool
 * corpus (test/fixtures/bfcl) imported with `Tool.fromJsonSchema`.
 */
import { Effect, Result, Schema } from "effect"
import { readFileSync } from "node:fs"
import { Tool, ToolError, ToolInput } from "../../src/index.ts"
import { toModelCodec } from "../../src/contract/internal/modelSchema.ts"
import { isEmptyStruct } from "../../src/contract/ToolSchema.ts"

/**
 * The decoder without its fast path (parse, then one decode with every issue and
 * unknown keys refused): the reference a decoder must agree with on every input,
 * valid or not, value for value and issue for issue (and key order, which
 * `tool.started` events and handlers see).
 */
export const referenceDecoder = (toolName: string, schema: Schema.Top, allowUnknownKeys: boolean) => {
  const decode = Schema.decodeUnknownResult(toModelCodec(schema), {
    errors: "all",
    reportInput: true,
    onExcessProperty: allowUnknownKeys ? "ignore" : "error"
  })
  const closedEmpty = !allowUnknownKeys && isEmptyStruct(schema.ast)
  return (raw: unknown): Result.Result<unknown, ToolError.MalformedArguments | ToolError.InvalidArguments> => {
    const parsed = ToolInput.parse(toolName, raw)
    if (Result.isFailure(parsed)) return parsed
    const value = parsed.success
    if (closedEmpty && Object.keys(value).length > 0) {
      return Result.fail(
        new ToolError.InvalidArguments({
          toolName,
          issues: Object.keys(value).map((key) => ({ path: [key], message: "Unexpected key: this tool takes no arguments" }))
        })
      )
    }
    const decoded = decode(value)
    return Result.isSuccess(decoded)
      ? Result.succeed(decoded.success)
      : Result.fail(new ToolError.InvalidArguments({ toolName, issues: ToolInput.issuesOf(decoded.failure) }))
  }
}

/** What a decoder's answer looks like to a caller: the value (with its key order) or the error's fields. */
export const observed = (result: Result.Result<unknown, ToolError.MalformedArguments | ToolError.InvalidArguments>) =>
  Result.isSuccess(result)
    ? { ok: true, value: result.success, json: JSON.stringify(result.success) }
    : {
      ok: false,
      tag: result.failure._tag,
      message: result.failure.message,
      issues: result.failure._tag === "InvalidArguments" ? result.failure.issues : undefined
    }

/** Every BFCL tool of the vendored categories, imported from its JSON Schema, with its canonical calls' arguments. */
export const corpusTools = (): ReadonlyArray<{ readonly tool: Tool.Dynamic; readonly samples: ReadonlyArray<Record<string, unknown>> }> =>
  ["simple_python", "multiple", "live_simple", "parallel", "parallel_multiple"].flatMap((category) =>
    readFileSync(new URL(`../fixtures/bfcl/${category}.normalized.jsonl`, import.meta.url), "utf8")
      .split("\n")
      .filter((line) => line.trim().length > 0)
      .flatMap((line) => {
        const entry = JSON.parse(line) as {
          readonly tools: ReadonlyArray<{ readonly name: string; readonly input_schema: Record<string, unknown> }>
          readonly canonical_calls?: ReadonlyArray<{ readonly name: string; readonly arguments: Record<string, unknown> }>
        }
        return entry.tools.flatMap((t) => {
          const imported = Tool.fromJsonSchema(t.name, {
            description: "",
            inputSchema: t.input_schema as never,
            handler: () => Effect.void
          })
          if (Result.isFailure(imported)) return []
          const samples = (entry.canonical_calls ?? []).filter((c) => c.name === t.name).map((c) => c.arguments)
          return [{ tool: imported.success, samples }]
        })
      })
  )

