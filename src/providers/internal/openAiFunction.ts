/**
 * The part of an OpenAI function tool that Chat Completions and Responses
 * share: name check, strict or non-strict parameters (with the `"auto"`
 * fallback), and the null-to-absent step on incoming arguments.
 */
import { Result } from "effect"
import type { ToolSpec } from "../../contract/Tool.ts"
import type { ToolCall } from "../../contract/ToolCall.ts"
import { fromProblem, type Provider, type ProviderExportError } from "../ProviderExportError.ts"
import { canonicalName, exportEach } from "./exportTools.ts"
import * as Names from "./names.ts"
import * as OpenAiStrict from "./openAiStrict.ts"
import { inputSchemaOf, type Node } from "./schema.ts"

/**
 * Strict mode: `"auto"` (default) exports strict when the schema allows it and
 * falls back to `strict: false` otherwise; `"require"` fails on such a tool;
 * `false` never uses strict mode.
 */
export type Strict = "auto" | "require" | false

/** Options of the OpenAI exporters. */
export interface ExportOptions {
  readonly strict?: Strict
  /** Overrides of the documented strict-mode limits. */
  readonly limits?: Partial<OpenAiStrict.Limits>
  /** Called for each tool that `"auto"` exported non-strict, with the reason. */
  readonly onFallback?: (reason: ProviderExportError) => void
}

/** One exported function, before the Chat or Responses envelope. */
export interface ExportedFunction {
  readonly name: string
  readonly description: string
  readonly parameters: Node
  readonly strict: boolean
}

/** Exports each spec in order; the first failing tool fails the whole export. */
export const exportAll = (
  provider: Provider,
  specs: ReadonlyArray<ToolSpec>,
  options: ExportOptions
): Result.Result<Array<ExportedFunction>, ProviderExportError> => {
  const exportOne = (spec: ToolSpec, name: string): Result.Result<ExportedFunction, ProviderExportError> =>
    Result.map(
      exportSchema(provider, spec.name, inputSchemaOf(spec), options),
      (exported) => ({ name, description: spec.description, ...exported })
    )
  return exportEach(provider, Names.openAiRule, specs, canonicalName, exportOne)
}

/**
 * One schema under the strict-mode choice (a tool's parameters, or a structured answer's schema):
 * strict when it can be, else non-strict (`"auto"`, reported to `onFallback`) or a failure (`"require"`).
 */
export const exportSchema = (
  provider: Provider,
  name: string,
  canonical: Node,
  options: ExportOptions
): Result.Result<{ readonly parameters: Node; readonly strict: boolean }, ProviderExportError> => {
  if (options.strict === false) return Result.succeed({ parameters: canonical, strict: false })
  const strict = OpenAiStrict.toStrict(canonical, { ...OpenAiStrict.defaultLimits, ...options.limits })
  if (Result.isSuccess(strict)) return Result.succeed({ parameters: strict.success, strict: true })
  const error = fromProblem(provider, name, strict.failure)
  if (options.strict === "require") return Result.fail(error)
  options.onFallback?.(error)
  return Result.succeed({ parameters: canonical, strict: false })
}

/** A `toolDefinitionsResult`: {@link exportAll}, each function in the API's envelope. */
export const exporter = <Tool>(provider: Provider, envelope: (exported: ExportedFunction) => Tool) =>
(specs: ReadonlyArray<ToolSpec>, options: ExportOptions = {}): Result.Result<Array<Tool>, ProviderExportError> =>
  Result.map(exportAll(provider, specs, options), (functions) => functions.map((exported) => envelope(exported)))

/** Turns `null` for a formerly optional property back into an absent key (see `OpenAiStrict.normalizeNulls`). */
export const normalizeArguments = (spec: ToolSpec, args: unknown): unknown =>
  OpenAiStrict.normalizeNulls(inputSchemaOf(spec), args)

/** Normalises a call's arguments when `specs` holds the tool it names; other calls pass unchanged. */
export const normalizeCall = (call: ToolCall, specs: ReadonlyArray<ToolSpec> | undefined): ToolCall => {
  if (specs === undefined) return call
  const spec = Names.specFor(specs, call.name)
  if (spec === undefined) return call
  const args = normalizeArguments(spec, call.arguments)
  return args === call.arguments ? call : { ...call, arguments: args }
}
