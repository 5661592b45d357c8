/**
 * Turns a model's raw tool arguments into a tool's typed input. Raw arguments
 * are JSON text (OpenAI) or an already-parsed value (Anthropic, Gemini); either
 * way they must be one JSON object without prototype-pollution keys, or the call
 * fails with `MalformedArguments` (never replaced by `{}`). The object is then
 * decoded with the input schema, failing with `InvalidArguments` that lists every
 * issue with its path.
 */
import { Formatter, Predicate, Result, Schema, type SchemaAST, SchemaIssue } from "effect"
import { Tool as AiTool } from "effect/ai"
import { type Issue, InvalidArguments, MalformedArguments } from "./ToolError.ts"
import { isInteger, isIntFilter, toModelCodec } from "./internal/modelSchema.ts"
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
    const plain = plainJson(raw)
    if (plain !== undefined) return Result.succeed(plain)
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

/**
 * `JSON.parse` alone, when that is all the secure parse would do: the text names
 * neither `__proto__` nor `constructor` (so the secure parser would not scan it)
 * and parses to an object. Anything else (invalid JSON, a non-object, a suspect
 * key) returns `undefined` and takes the full path, which words the error.
 */
const plainJson = (raw: string): JsonObject | undefined => {
  if (raw.includes("__proto__") || raw.includes("constructor")) return undefined
  let value: unknown
  try {
    value = JSON.parse(raw)
  } catch {
    return undefined
  }
  return typeof value === "object" && value !== null && !Array.isArray(value) ? value as JsonObject : undefined
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
  // Decode with the model codec: exactly the form the exported JSON Schema describes
  // (e.g. `Schema.optional` fields accept `null`, which decodes to absent; numbers
  // are JSON numbers, never the strings "NaN" or "Infinity").
  const codec = toModelCodec(schema as unknown as Schema.Top)
  const allowUnknownKeys = options.allowUnknownKeys === true
  const decode = Schema.decodeUnknownResult(codec, {
    errors: "all",
    reportInput: true,
    onExcessProperty: allowUnknownKeys ? "ignore" : "error"
  })
  // The valid case first: Effect's default options (first issue only, unknown keys
  // dropped) take its fast path. When that succeeds and dropped no key, the full decode
  // would return the same value; otherwise the full decode runs and reports every issue.
  const quick = plainShape(codec.ast) ? Schema.decodeUnknownResult(codec) : undefined
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
    if (quick !== undefined) {
      const fast = quick(parsed.success)
      const symbols = typeof raw !== "string"
      if (Result.isSuccess(fast) && (allowUnknownKeys || keptEveryKey(parsed.success, fast.success, symbols))) {
        return fast as Result.Success<S["Type"], never>
      }
    }
    const decoded = decode(parsed.success)
    return Result.isSuccess(decoded)
      ? Result.succeed(decoded.success)
      : Result.fail(new InvalidArguments({ toolName, issues: issuesOf(decoded.failure) }))
  }
}

/**
 * True when decoding cannot change a value's shape: every node is a primitive,
 * literal, JSON value, object, array or union of them (checks allowed), with no
 * encoding (transformation) and no other declaration or suspension anywhere. For
 * such a schema a decoded object holds its input's keys minus the ones dropped as
 * unknown, so comparing keys tells whether a default-options decode dropped any.
 */
const plainShape = (ast: SchemaAST.AST): boolean => {
  if (ast.encoding !== undefined) return false
  switch (ast._tag) {
    case "String":
    case "Number":
    case "Boolean":
    case "Null":
    case "Literal":
    case "TemplateLiteral":
    case "Unknown":
    case "Any":
      return true
    case "Objects":
      return ast.propertySignatures.every((ps) => plainShape(ps.type)) &&
        ast.indexSignatures.every((is) => plainShape(is.parameter) && plainShape(is.type))
    case "Arrays":
      return ast.elements.every(plainShape) && ast.rest.every(plainShape)
    case "Union":
      return ast.types.every(plainShape)
    case "Declaration":
      // `Schema.Json` (what JSON Schema imports give unknown values): any JSON value, as is.
      return (ast.annotations?.representation as { readonly id?: unknown } | undefined)?.id === "effect/schema/Json"
    default:
      return false
  }
}

/**
 * True when `output` (a default-options decode of `input` under a plain schema)
 * kept every own enumerable key of every object and every element of every array
 * of `input`: no unknown key was dropped, so the strict decode accepts it as well.
 * `symbols`: also look for symbol keys (never present in parsed JSON text), which
 * the strict decode counts as unknown; any symbol key sends the call the full way.
 */
const keptEveryKey = (input: unknown, output: unknown, symbols: boolean): boolean => {
  if (input === output || typeof input !== "object" || input === null) return true
  if (typeof output !== "object" || output === null) return false
  if (Array.isArray(input)) {
    if (!Array.isArray(output) || output.length !== input.length) return false
    for (let i = 0; i < input.length; i++) if (!keptEveryKey(input[i], output[i], symbols)) return false
    return true
  }
  if (symbols && Object.getOwnPropertySymbols(input).length > 0) return false
  const keys = Object.keys(input)
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]!
    if (!Object.hasOwn(output, key)) return false
    if (!keptEveryKey((input as JsonObject)[key], (output as JsonObject)[key], symbols)) return false
  }
  return true
}

/** `Expected <what>, got <input>`, as Effect words it (the input is present with `reportInput`). */
const expected = (what: string, issue: SchemaIssue.Issue): string =>
  SchemaIssue.hasInput(issue) ? `Expected ${what}, got ${Formatter.format(issue.input)}` : `Expected ${what}`

/** A wrong type for an integer field says "an integer", not "number". */
const leafHook: SchemaIssue.LeafHook = (issue) =>
  issue._tag === "InvalidType" && isInteger(issue.ast) && issue.ast.annotations?.["message"] === undefined
    ? expected("an integer", issue)
    : SchemaIssue.defaultLeafHook(issue)

const safeRange = `an integer between ${Number.MIN_SAFE_INTEGER} and ${Number.MAX_SAFE_INTEGER}`

const count = (n: number, unit: string): string => `${n} ${unit}${n === 1 ? "" : "s"}`

/**
 * Length checks count items or characters: `Expected at least 1 item, got []`
 * rather than `Expected a value with a length of at least 1`.
 */
const lengthExpected = (filter: SchemaAST.Filter<never>, input: unknown): string | undefined => {
  const unit = Array.isArray(input) ? "item" : typeof input === "string" ? "character" : undefined
  const representation = filter.annotations?.representation
  const expectedText = filter.annotations?.["expected"]
  if (unit === undefined || representation === undefined || typeof expectedText !== "string") return undefined
  // Only Effect's own wording is replaced; a user's `expected` stays.
  if (!expectedText.startsWith("a value with a length")) return undefined
  const payload = representation.payload as Record<string, number> | null
  switch (representation.id) {
    case "effect/schema/isMinLength":
      return `at least ${count(payload!["minLength"]!, unit)}`
    case "effect/schema/isMaxLength":
      return `at most ${count(payload!["maxLength"]!, unit)}`
    case "effect/schema/isBetweenLength": {
      const { minimum, maximum } = payload as { minimum: number; maximum: number }
      return minimum === maximum ? `exactly ${count(minimum, unit)}` : `between ${minimum} and ${count(maximum, unit)}`
    }
  }
  return undefined
}

/**
 * An integer too large to be exact (an id sent as a number) says so, instead of
 * "Expected an integer, got 1e+21"; length checks count items or characters.
 */
const checkHook: SchemaIssue.CheckHook = (issue) => {
  if (issue.filter.annotations?.["message"] !== undefined || !SchemaIssue.hasInput(issue)) {
    return SchemaIssue.defaultCheckHook(issue)
  }
  if (isIntFilter(issue.filter) && Number.isInteger(issue.input)) return expected(safeRange, issue)
  const length = lengthExpected(issue.filter, issue.input)
  return length === undefined ? SchemaIssue.defaultCheckHook(issue) : expected(length, issue)
}

const formatter = SchemaIssue.makeFormatterStandardSchemaV1({ leafHook, checkHook })

/**
 * Every issue of a schema error, with its path and a readable message. Identical
 * issues (the same unknown key reported by each member of a union) are listed once.
 */
export const issuesOf = (error: Schema.SchemaError): ReadonlyArray<Issue> => {
  const seen = new Set<string>()
  const issues: Array<Issue> = []
  for (const issue of formatter(error.issue).issues) {
    const path = (issue.path ?? []).map((p) => (Predicate.isObject(p) && "key" in p ? p.key : p) as PropertyKey)
    const key = `${path.map(String).join("\u0000")}\u0001${issue.message}`
    if (seen.has(key)) continue
    seen.add(key)
    issues.push({ path, message: issue.message })
  }
  return issues
}
