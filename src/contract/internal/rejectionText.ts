/**
 * The wording of argument rejections: the reasons `ToolInput.parse` gives for
 * `MalformedArguments` and the issue list of `InvalidArguments`. Readable for a
 * model, and bounded however large or deep the input: quoted inputs, path keys,
 * messages and the list itself are cut. Parsing and decoding are `ToolInput`'s;
 * this module only writes text.
 */
import { Formatter, Predicate, type Schema, type SchemaAST, SchemaIssue } from "effect"
import { formatPath, type Issue } from "../ToolError.ts"
import { isInteger, isIntFilter } from "./modelSchema.ts"

/** A whole number with thousands separators: `1,000,000`. */
const grouped = (n: number): string => String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ",")

/** The reason for arguments nested past the depth limit. */
export const tooDeep = (maxDepth: number): string =>
  `the arguments nest objects and arrays more than ${grouped(maxDepth)} levels deep (the limit); send flatter arguments`

/** The reason for arguments over the size limit (`bytes`, when measured). */
export const tooLarge = (maxBytes: number, bytes: number | undefined): string =>
  `the arguments are ${bytes === undefined ? "larger than" : `${grouped(bytes)} bytes of JSON, over`} the limit of ${
    grouped(maxBytes)
  } bytes; send smaller arguments`

/** The reason for a prototype-pollution key, with the path where it was found. */
export const forbiddenKey = (kind: "__proto__" | "constructor.prototype", path: ReadonlyArray<PropertyKey>): string =>
  `the arguments contain a forbidden ${JSON.stringify(kind)} key at ${formatPath(path.map(shortKey))}; remove it`

/** The issues of a tool that takes no arguments called with some: one per key, bounded. */
export const unexpectedKeys = (keys: ReadonlyArray<string>): ReadonlyArray<Issue> =>
  bounded(keys.map((key) => ({ path: [shortKey(key)], message: "Unexpected key: this tool takes no arguments" })))

/** Longest quoted input (and path key) in a message, in characters, before "…". */
export const maxQuoted = 60
/** Longest single issue message, in characters, before "…". */
export const maxIssueMessage = 500
/** Budget for all issues of one error, in characters as rendered; the rest are counted, not listed. */
export const maxIssuesText = 2_000

/** `text` cut to `max` characters plus "…". */
export const truncate = (text: string, max: number): string => text.length > max ? `${text.slice(0, max)}…` : text

const shortKey = (key: PropertyKey): PropertyKey => typeof key === "string" ? truncate(key, maxQuoted) : key

/** An input as Effect's `Formatter.format` writes it, cut to {@link maxQuoted} characters plus "…". */
export const preview = (value: unknown): string => truncate(render(value, maxQuoted + 1), maxQuoted)

class Text {
  readonly text: string
  constructor(text: string) {
    this.text = text
  }
}

const isPlain = (v: object): boolean => {
  const proto = Object.getPrototypeOf(v)
  return (proto === Object.prototype || proto === null || Array.isArray(v)) && Object.getOwnPropertySymbols(v).length === 0 &&
    (Array.isArray(v) || typeof (v as { readonly toString?: unknown }).toString !== "function" ||
      (v as { readonly toString?: unknown }).toString === Object.prototype.toString)
}

/**
 * `Formatter.format(value)` for JSON-like values, written iteratively and only
 * until `budget` characters are out: identical for inputs that fit, a prefix of
 * it for the others, in time and memory proportional to the budget. Values that
 * are not plain data (class instances, functions) are formatted by Effect.
 */
const render = (value: unknown, budget: number): string => {
  let out = ""
  const pending: Array<unknown> = [value]
  while (pending.length > 0 && out.length < budget) {
    const v = pending.pop()
    if (v instanceof Text) {
      out += v.text
    } else if (typeof v === "string") {
      out += JSON.stringify(v.length > budget ? v.slice(0, budget) : v)
    } else if (typeof v !== "object" || v === null) {
      out += typeof v === "bigint" ? `${v}n` : String(v)
    } else if (!isPlain(v)) {
      out += Formatter.format(v)
    } else if (Array.isArray(v)) {
      const n = Math.min(v.length, budget)
      pending.push(new Text(v.length > n ? ",…]" : "]"))
      for (let i = n - 1; i >= 0; i--) {
        pending.push(v[i])
        if (i > 0) pending.push(new Text(","))
      }
      out += "["
    } else {
      const keys = Object.keys(v)
      const n = Math.min(keys.length, budget)
      pending.push(new Text(keys.length > n ? ",…}" : "}"))
      for (let i = n - 1; i >= 0; i--) {
        const key = keys[i]!
        pending.push((v as { readonly [key: string]: unknown })[key])
        pending.push(new Text(`${i > 0 ? "," : ""}${JSON.stringify(key.length > budget ? key.slice(0, budget) : key)}:`))
      }
      out += "{"
    }
  }
  return out
}

/** An input as a message shows it: formatted lazily, bounded (see {@link preview}). */
class Shown {
  readonly value: unknown
  constructor(value: unknown) {
    this.value = value
  }
  toString(): string {
    return preview(this.value)
  }
}

/** The input an issue reports, unwrapped from {@link Shown}. */
const inputOf = (issue: SchemaIssue.Issue): unknown => {
  const input: unknown = (issue as { readonly input?: unknown }).input
  return input instanceof Shown ? input.value : input
}

const withFields = <I extends SchemaIssue.Issue>(issue: I, fields: Partial<Record<string, unknown>>): I =>
  Object.assign(Object.create(Object.getPrototypeOf(issue)), issue, fields) as I

/**
 * The same issue tree with every reported input wrapped in {@link Shown}, so every
 * message (ours and Effect's defaults, which format the input themselves) quotes a
 * bounded preview instead of the whole value. The tree is as deep as the (limited)
 * arguments.
 */
const boundInputs = (issue: SchemaIssue.Issue): SchemaIssue.Issue => {
  let out = issue
  switch (issue._tag) {
    case "Filter":
    case "Encoding":
    case "Pointer": {
      const inner = boundInputs(issue.issue)
      if (inner !== issue.issue) out = withFields(issue, { issue: inner })
      break
    }
    case "Composite":
    case "AnyOf": {
      let changed = false
      const inner = issue.issues.map((i) => {
        const next = boundInputs(i)
        if (next !== i) changed = true
        return next
      })
      if (changed) out = withFields(issue, { issues: inner })
      break
    }
  }
  return SchemaIssue.hasInput(out) && mayBeLong(out.input) ? withFields(out, { input: new Shown(out.input) }) : out
}

/** Inputs whose formatting may exceed {@link maxQuoted} characters (numbers, booleans and short strings cannot). */
const mayBeLong = (input: unknown): boolean =>
  typeof input === "string"
    ? input.length > 9 // each character is at most 6 in JSON (\u0000): 9 of them fit in 60
    : input !== null && input !== undefined && typeof input !== "number" && typeof input !== "boolean" &&
      !(input instanceof Shown)

/** `Expected <what>, got <input>`, as Effect words it (the input is present with `reportInput`). */
const expected = (what: string, issue: SchemaIssue.Issue): string =>
  SchemaIssue.hasInput(issue) ? `Expected ${what}, got ${preview(inputOf(issue))}` : `Expected ${what}`

/** A wrong type for an integer field says "an integer", not "number"; a key where none may be is unexpected. */
const leafHook: SchemaIssue.LeafHook = (issue) => {
  if (issue._tag !== "InvalidType" || issue.ast.annotations?.["message"] !== undefined) {
    return SchemaIssue.defaultLeafHook(issue)
  }
  if (isInteger(issue.ast)) return expected("an integer", issue)
  // A value where none may be: a key of a closed object without properties
  // (`additionalProperties: false` imports as a record of `never`), or a key whose
  // schema is `false`. Worded as Effect words an excess property.
  if (issue.ast._tag === "Never") {
    return SchemaIssue.hasInput(issue) ? `Unexpected key with value ${preview(inputOf(issue))}` : "Unexpected key"
  }
  return SchemaIssue.defaultLeafHook(issue)
}

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
  if (isIntFilter(issue.filter) && Number.isInteger(inputOf(issue))) return expected(safeRange, issue)
  const length = lengthExpected(issue.filter, inputOf(issue))
  return length === undefined ? SchemaIssue.defaultCheckHook(issue) : expected(length, issue)
}

const formatter = SchemaIssue.makeFormatterStandardSchemaV1({ leafHook, checkHook })

/**
 * Every issue of a schema error, with its path and a readable message. Identical
 * issues (the same unknown key reported by each member of a union) are listed once.
 * Bounded: quoted inputs and path keys are cut to {@link maxQuoted} characters,
 * a message to {@link maxIssueMessage}, and issues past {@link maxIssuesText}
 * characters are counted on the last one listed (`(12 more issues)`).
 */
export const issuesOf = (error: Schema.SchemaError): ReadonlyArray<Issue> => {
  const seen = new Set<string>()
  const issues: Array<Issue> = []
  for (const issue of formatter(boundInputs(error.issue)).issues) {
    const full = (issue.path ?? []).map((p) => (Predicate.isObject(p) && "key" in p ? p.key : p) as PropertyKey)
    const path = full.map(shortKey)
    const message = truncate(issue.message, maxIssueMessage)
    // Identity by the whole path: two keys that differ only past the cut are two issues.
    const key = `${full.map(String).join("\u0000")}\u0001${message}`
    if (seen.has(key)) continue
    seen.add(key)
    issues.push({ path, message })
  }
  return bounded(issues)
}

/** The first issues that fit in {@link maxIssuesText} characters (at least one); the last counts the rest. */
const bounded = (issues: ReadonlyArray<Issue>): ReadonlyArray<Issue> => {
  let used = 0
  let kept = 0
  for (; kept < issues.length; kept++) {
    const issue = issues[kept]!
    used += formatPath(issue.path).length + issue.message.length + 6
    if (kept > 0 && used > maxIssuesText) break
  }
  if (kept === issues.length) return issues
  const rest = issues.length - kept
  const last = issues[kept - 1]!
  return [
    ...issues.slice(0, kept - 1),
    { path: last.path, message: `${last.message} (${grouped(rest)} more issue${rest === 1 ? "" : "s"})` }
  ]
}
