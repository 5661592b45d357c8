/**
 * Turns a model's raw tool arguments into a tool's typed input. Raw arguments
 * are JSON text (OpenAI) or an already-parsed value (Anthropic, Gemini, MCP);
 * either way they must be one JSON object within the size and depth limits and
 * without prototype-pollution keys, or the call fails with `MalformedArguments`
 * (never replaced by `{}`). The object is then decoded with the input schema,
 * failing with `InvalidArguments` that lists every issue with its path. Hostile
 * arguments are refused, never thrown: nothing here can overflow the stack, and
 * rejection text is bounded.
 *
 * Valid arguments take a fast path that answers exactly what the strict decode
 * would: for the common shapes (strings, numbers, booleans, null, literals and
 * enums, unknown/JSON values, structs with required, `optionalKey` and `optional`
 * fields, arrays, unions, and checks on any of them) a validator compiled once per
 * tool (src/internal/fastDecode.ts) builds the decoded value by plain function calls;
 * other schemas (records, tuples, transformations, classes, recursion...) keep
 * Effect's decode. Whenever the arguments are invalid, or the validator cannot
 * tell, Effect's strict decode runs and its issues are reported.
 */
import { Predicate, Result, Schema, type SchemaAST } from "effect"
import { InvalidArguments, MalformedArguments } from "./ToolError.ts"
import * as FastDecode from "../internal/fastDecode.ts"
import { toModelCodec } from "./internal/modelSchema.ts"
import { forbiddenKey, issuesOf, tooDeep, tooLarge, truncate, unexpectedKeys } from "./internal/rejectionText.ts"
import { isEmptyStruct } from "./ToolSchema.ts"

// The wording of rejections, bounded however large the input, lives in internal/rejectionText.ts.
export { issuesOf, maxIssueMessage, maxIssuesText, maxQuoted, preview } from "./internal/rejectionText.ts"

/** A decoder from raw arguments to a tool's input. Pure and synchronous. */
export type Decoder<A> = (raw: unknown) => Result.Result<A, MalformedArguments | InvalidArguments>

/** A JSON object. */
export type JsonObject = { readonly [key: string]: unknown }

// ---------------------------------------------------------------------------
// limits
// ---------------------------------------------------------------------------

/**
 * Limits on raw arguments, checked before decoding. Arguments over a limit
 * fail with a repairable `MalformedArguments` that names the limit.
 */
export interface Limits {
  /**
   * Deepest nesting of objects and arrays; the arguments object itself is
   * level 1, so `{"a":{"b":[1]}}` is 3 levels deep. Default 64.
   */
  readonly maxDepth?: number
  /**
   * Largest arguments, in bytes of JSON text (UTF-8). Arguments that arrive as
   * an object are measured by the length of their keys and strings plus a
   * little per value (close to, and never more than, their JSON length).
   * Default 1,000,000.
   */
  readonly maxBytes?: number
}

/** The limits used when none are given. */
export const defaultLimits: Required<Limits> = { maxDepth: 64, maxBytes: 1_000_000 }

const resolveLimits = (limits: Limits | undefined): Required<Limits> =>
  limits === undefined
    ? defaultLimits
    : { maxDepth: limits.maxDepth ?? defaultLimits.maxDepth, maxBytes: limits.maxBytes ?? defaultLimits.maxBytes }

/** UTF-8 length of a string (a lone surrogate counts 3 bytes, as its replacement character). */
const utf8Length = (text: string): number => {
  let bytes = 0
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c < 0x80) bytes += 1
    else if (c < 0x800) bytes += 2
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      bytes += 4
      i++
    } else bytes += 3
  }
  return bytes
}

// ---------------------------------------------------------------------------
// parsing
// ---------------------------------------------------------------------------

/**
 * Parses raw arguments into a JSON object: JSON text with `JSON.parse`, after
 * its size is checked; an already-parsed value as it is. Either way the value
 * is then walked (iteratively): no deeper than `maxDepth`, no own `__proto__`
 * key and no own `constructor` key holding an object with a `prototype` key,
 * in any object or array element, however the key was spelled in the text
 * (`"\u005f_proto__"` is `"__proto__"` once parsed). `{"constructor": null}`
 * and `{"constructor": "x"}` are valid.
 */
export const parse = (
  toolName: string,
  raw: unknown,
  limits?: Limits
): Result.Result<JsonObject, MalformedArguments> => {
  const parsed = parseObject(raw, resolveLimits(limits))
  return parsed instanceof Refusal
    ? Result.fail(new MalformedArguments({ toolName, reason: parsed.reason }))
    : Result.succeed(parsed)
}

/** Why {@link parseObject} refused raw arguments: a `MalformedArguments` reason. */
class Refusal {
  readonly reason: string
  constructor(reason: string) {
    this.reason = reason
  }
}

/** {@link parse} without its `Result`: the object, or why it is refused (nothing allocated for a valid call). */
const parseObject = (raw: unknown, { maxBytes, maxDepth }: Required<Limits>): JsonObject | Refusal => {
  let value: unknown = raw
  if (typeof raw === "string") {
    if (raw.length > maxBytes || (raw.length * 3 > maxBytes && utf8Length(raw) > maxBytes)) {
      return new Refusal(tooLarge(maxBytes, raw.length > maxBytes * 4 ? undefined : utf8Length(raw)))
    }
    try {
      value = JSON.parse(raw)
    } catch (error) {
      if (raw.trim().length === 0) return new Refusal("the arguments are empty; send a JSON object")
      const detail = error instanceof Error ? error.message : String(error)
      return new Refusal(`the arguments are not valid JSON (${truncate(detail, 200)})`)
    }
  }
  if (!Predicate.isObject(value) || Array.isArray(value)) {
    return new Refusal(`expected a JSON object, got ${kindOf(value)}`)
  }
  // JSON text that spells neither key (nor any \u escape) can hold no prototype key, and
  // it cannot nest deeper than half its length or than its count of opening brackets:
  // when that is within the limit, nothing to walk.
  if (
    typeof raw === "string" && !mayHidePrototypeKey(raw) &&
    (raw.length <= 2 * maxDepth || fewBrackets(raw, maxDepth))
  ) {
    return value as JsonObject
  }
  let problem: Problem | undefined
  try {
    problem = scan(value, maxDepth, typeof raw === "string" ? Infinity : maxBytes)
  } catch (error) {
    // An object-form value whose getters or proxy traps throw.
    return new Refusal(`the arguments cannot be read (${truncate(error instanceof Error ? error.message : String(error), 200)})`)
  }
  switch (problem) {
    case undefined:
      return value as JsonObject
    case "depth":
      return new Refusal(tooDeep(maxDepth))
    case "size":
      return new Refusal(tooLarge(maxBytes, undefined))
    default:
      return new Refusal(forbiddenKey(problem, locate(value, problem, maxDepth)))
  }
}

/** False when JSON text cannot parse to a `__proto__` or `constructor` key, however escaped. */
const mayHidePrototypeKey = (text: string): boolean =>
  text.includes("__proto__") || text.includes("constructor") || text.includes("\\u")

/** True when `text` holds at most `limit` of `{` and `[` (in strings too: it only bounds the nesting). */
const fewBrackets = (text: string, limit: number): boolean => {
  let brackets = 0
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if ((c === 0x7b || c === 0x5b) && ++brackets > limit) return false
  }
  return true
}

const kindOf = (value: unknown): string =>
  value === null ? "null" : Array.isArray(value) ? "an array" : typeof value === "string" ? "a string" : `a ${typeof value}`

type Problem = "depth" | "size" | "__proto__" | "constructor.prototype"

/** The prototype-pollution key an object carries, if any. */
const forbiddenOf = (node: object): Problem | undefined => {
  if (Object.hasOwn(node, "__proto__")) return "__proto__"
  if (Object.hasOwn(node, "constructor")) {
    const ctor: unknown = (node as { readonly constructor: unknown }).constructor
    if ((typeof ctor === "object" || typeof ctor === "function") && ctor !== null && Object.hasOwn(ctor, "prototype")) {
      return "constructor.prototype"
    }
  }
  return undefined
}

/** UTF-8 bytes of a string, as in the JSON text it would be (escapes aside): what `maxBytes` counts. */
const utf8Bytes = (text: string): number => text.length < 32 && /^[\x00-\x7f]*$/.test(text) ? text.length : Buffer.byteLength(text, "utf8")

/**
 * Walks a parsed value with an explicit stack (no recursion): the first problem
 * found, or `undefined`. `maxSize` bounds the estimated JSON length (infinite for
 * JSON text, already measured); it also bounds the walk of a shared or cyclic value.
 */
const scan = (root: object, maxDepth: number, maxSize: number): Problem | undefined => {
  const nodes: Array<object> = [root]
  const depths: Array<number> = [1]
  let size = 0
  while (nodes.length > 0) {
    const node = nodes.pop()!
    const depth = depths.pop()!
    if (depth > maxDepth) return "depth"
    const forbidden = forbiddenOf(node)
    if (forbidden !== undefined) return forbidden
    if (Array.isArray(node)) {
      size += 2
      for (let i = node.length - 1; i >= 0; i--) {
        const child: unknown = node[i]
        if (typeof child === "object" && child !== null) {
          nodes.push(child)
          depths.push(depth + 1)
        } else size += typeof child === "string" ? utf8Bytes(child) + 3 : 2
      }
    } else {
      size += 2
      const keys = Object.keys(node)
      for (let i = keys.length - 1; i >= 0; i--) {
        const key = keys[i]!
        const child: unknown = (node as JsonObject)[key]
        size += utf8Bytes(key) + 3
        if (typeof child === "object" && child !== null) {
          nodes.push(child)
          depths.push(depth + 1)
        } else size += typeof child === "string" ? utf8Bytes(child) + 3 : 2
      }
    }
    if (size > maxSize) return "size"
  }
  return undefined
}

/** The path of the first object carrying `problem` (the walk of {@link scan}, keeping paths). */
const locate = (root: object, problem: Problem, maxDepth: number): ReadonlyArray<PropertyKey> => {
  const nodes: Array<object> = [root]
  const paths: Array<ReadonlyArray<PropertyKey>> = [[]]
  while (nodes.length > 0) {
    const node = nodes.pop()!
    const path = paths.pop()!
    if (forbiddenOf(node) === problem) return problem === "constructor.prototype" ? [...path, "constructor", "prototype"] : [...path, "__proto__"]
    if (path.length >= maxDepth) continue
    const keys: ReadonlyArray<PropertyKey> = Array.isArray(node) ? node.map((_, i) => i) : Object.keys(node)
    for (let i = keys.length - 1; i >= 0; i--) {
      const child: unknown = (node as Record<PropertyKey, unknown>)[keys[i]!]
      if (typeof child === "object" && child !== null) {
        nodes.push(child)
        paths.push([...path, keys[i]!])
      }
    }
  }
  return []
}

/** True for a stack overflow, thrown as is or wrapped (Effect's parser wraps defects in a `Cause`). */
const isStackOverflow = (error: unknown): boolean => {
  const seen = new Set<unknown>()
  const pending: Array<unknown> = [error]
  while (pending.length > 0) {
    const e = pending.pop()
    if (e === null || typeof e !== "object" || seen.has(e)) continue
    seen.add(e)
    if (e instanceof RangeError && /call stack/i.test(e.message)) return true
    if ("cause" in e) pending.push(e.cause)
    if ("reasons" in e && Array.isArray(e.reasons)) pending.push(...e.reasons)
    if ("defect" in e) pending.push(e.defect)
  }
  return false
}

export interface DecoderOptions {
  /** Accept (and drop) keys the schema does not declare. Default: unknown keys are an error. */
  readonly allowUnknownKeys?: boolean
  /** Size and depth limits on raw arguments; default {@link defaultLimits}. */
  readonly limits?: Limits
}

/**
 * Builds the decoder for a tool's input schema. Build once per tool (the schema's
 * validator is compiled here), reuse per call.
 */
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
  const limits = resolveLimits(options.limits)
  const strict: SchemaAST.ParseOptions = {
    errors: "all",
    reportInput: true,
    onExcessProperty: allowUnknownKeys ? "ignore" : "error"
  }
  const decode = Schema.decodeUnknownResult(codec, strict)
  // The valid case first. For the common shapes, a validator compiled from the codec's
  // AST (src/internal/fastDecode.ts) answers the strict decode's value by plain function
  // calls. Otherwise, for plain shapes, Effect's default options (first issue only,
  // unknown keys dropped) take its fast path: when that succeeds and dropped no key,
  // the strict decode would return the same value. Whenever neither answers, the
  // strict decode runs and reports every issue.
  // (arguments parsed from JSON text here are nobody else's: a value the decode would copy unchanged is answered itself)
  const fast = FastDecode.compile(codec.ast, strict, true)
  const quick = fast === undefined && plainShape(codec.ast) ? Schema.decodeUnknownResult(codec) : undefined
  const closedEmpty = options.allowUnknownKeys !== true && isEmptyStruct(schema.ast)
  const run = (raw: unknown, value: JsonObject): Result.Result<S["Type"], MalformedArguments | InvalidArguments> => {
    if (closedEmpty) {
      // `Struct({})` ignores excess keys even with onExcessProperty "error".
      const keys = Object.keys(value)
      if (keys.length > 0) {
        return Result.fail(
          new InvalidArguments({
            toolName,
            issues: unexpectedKeys(keys)
          })
        )
      }
    }
    if (fast !== undefined) {
      let decoded: unknown = FastDecode.invalid
      try {
        decoded = fast(value, typeof raw !== "string")
      } catch {
        // A check that throws: the strict decode below meets it too, and says what it says.
      }
      if (decoded !== FastDecode.invalid) return Result.succeed(decoded as S["Type"])
    } else if (quick !== undefined) {
      const lenient = quick(value)
      const symbols = typeof raw !== "string"
      if (Result.isSuccess(lenient) && (allowUnknownKeys || keptEveryKey(value, lenient.success, symbols))) {
        return lenient as Result.Success<S["Type"], never>
      }
    }
    const decoded = decode(value)
    return Result.isSuccess(decoded)
      ? Result.succeed(decoded.success)
      : Result.fail(new InvalidArguments({ toolName, issues: issuesOf(decoded.failure) }))
  }
  return (raw) => {
    const parsed = parseObject(raw, limits)
    if (parsed instanceof Refusal) return Result.fail(new MalformedArguments({ toolName, reason: parsed.reason }))
    try {
      return run(raw, parsed)
    } catch (error) {
      // Within the depth limit Effect's decoder does not come near the stack's end; a
      // raised limit (or a deep stack at the call site) might: refuse, never throw.
      if (!isStackOverflow(error)) throw error
      return Result.fail(
        new MalformedArguments({ toolName, reason: "the arguments are nested too deeply to check; send flatter arguments" })
      )
    }
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
