/**
 * Turns a model's raw tool arguments into a tool's typed input. Raw arguments
 * are JSON text (OpenAI) or an already-parsed value (Anthropic, Gemini); either
 * way they must be one JSON object without prototype-pollution keys, or the call
 * fails with `MalformedArguments` (never replaced by `{}`). The object is then
 * decoded with the input schema, failing with `InvalidArguments` that lists every
 * issue with its path.
 */
import { Predicate, Result, Schema, SchemaIssue } from "effect"
import { Tool as AiTool } from "effect/ai"
import { type Issue, InvalidArguments, MalformedArguments } from "./ToolError.ts"
import { isEmptyStruct } from "./ToolSchema.ts"

/** A decoder from raw arguments to a tool's input. Pure and synchronous. */
export type Decoder<A> = (raw: unknown) => Result.Result<A, MalformedArguments | InvalidArguments>

/** A JSON object. */
export type JsonObject = { readonly [key: string]: unknown }

/**
 * Parses raw arguments into a JSON object: JSON text is parsed safely; objects
 * are checked for `__proto__` and `constructor.prototype` keys.
 */
export const parse = (toolName: string, raw: unknown): Result.Result<JsonObject, MalformedArguments> => {
  let value: unknown = raw
  if (typeof raw === "string") {
    if (raw.trim().length === 0) {
      return Result.fail(new MalformedArguments({ toolName, reason: "the arguments are empty; send a JSON object" }))
    }
    try {
      value = AiTool.unsafeSecureJsonParse(raw)
    } catch (error) {
      const detail = error instanceof Error ? error.message : String(error)
      return Result.fail(
        new MalformedArguments({
          toolName,
          reason: detail.includes("forbidden prototype property")
            ? "the arguments contain a forbidden \"__proto__\" or \"constructor.prototype\" key"
            : `the arguments are not valid JSON (${detail})`
        })
      )
    }
  } else if (hasPrototypeKey(raw)) {
    return Result.fail(
      new MalformedArguments({
        toolName,
        reason: "the arguments contain a forbidden \"__proto__\" or \"constructor.prototype\" key"
      })
    )
  }
  if (!Predicate.isObject(value) || Array.isArray(value)) {
    return Result.fail(
      new MalformedArguments({ toolName, reason: `expected a JSON object, got ${kindOf(value)}` })
    )
  }
  return Result.succeed(value as JsonObject)
}

const kindOf = (value: unknown): string =>
  value === null ? "null" : Array.isArray(value) ? "an array" : typeof value === "string" ? "a string" : `a ${typeof value}`

/** True when an already-parsed value carries a prototype-pollution key anywhere. */
const hasPrototypeKey = (root: unknown): boolean => {
  const stack: Array<unknown> = [root]
  while (stack.length > 0) {
    const node = stack.pop()
    if (!Predicate.isObject(node)) continue
    if (Object.hasOwn(node, "__proto__")) return true
    const ctor = (node as { readonly constructor?: unknown }).constructor
    if (Object.hasOwn(node, "constructor") && Predicate.isObject(ctor) && Object.hasOwn(ctor, "prototype")) return true
    for (const key of Object.keys(node)) stack.push((node as Record<string, unknown>)[key])
  }
  return false
}

export interface DecoderOptions {
  /** Accept (and drop) keys the schema does not declare. Default: unknown keys are an error. */
  readonly allowUnknownKeys?: boolean
}

/** Builds the decoder for a tool's input schema. Build once per tool, reuse per call. */
export const decoder = <S extends Schema.ConstraintDecoder<unknown>>(
  toolName: string,
  schema: S,
  options: DecoderOptions = {}
): Decoder<S["Type"]> => {
  // Decode with the JSON codec: exactly the form the exported JSON Schema describes
  // (e.g. `Schema.optional` fields accept `null`, which decodes to absent).
  const decode = Schema.decodeUnknownResult(Schema.toCodecJson(schema as unknown as Schema.Top) as unknown as S, {
    errors: "all",
    reportInput: true,
    onExcessProperty: options.allowUnknownKeys === true ? "ignore" : "error"
  })
  const closedEmpty = options.allowUnknownKeys !== true && isEmptyStruct(schema.ast)
  return (raw) => {
    const parsed = parse(toolName, raw)
    if (Result.isFailure(parsed)) return Result.fail(parsed.failure)
    if (closedEmpty) {
      // `Struct({})` ignores excess keys even with onExcessProperty "error".
      const keys = Object.keys(parsed.success)
      if (keys.length > 0) {
        return Result.fail(
          new InvalidArguments({
            toolName,
            issues: keys.map((key) => ({ path: [key], message: "Unexpected key: this tool takes no arguments" }))
          })
        )
      }
    }
    const decoded = decode(parsed.success)
    return Result.isSuccess(decoded)
      ? Result.succeed(decoded.success)
      : Result.fail(new InvalidArguments({ toolName, issues: issuesOf(decoded.failure) }))
  }
}

const formatter = SchemaIssue.makeFormatterStandardSchemaV1()

/** Every issue of a schema error, with its path and a readable message. */
export const issuesOf = (error: Schema.SchemaError): ReadonlyArray<Issue> =>
  formatter(error.issue).issues.map((issue) => ({
    path: (issue.path ?? []).map((p) => (Predicate.isObject(p) && "key" in p ? p.key : p) as PropertyKey),
    message: issue.message
  }))
