/**
 * Tool names: the canonical name rule (ASCII snake_case, 1 to 64 characters),
 * the typed violations it produces, and the reversible alias map that lets
 * imported tools (MCP, BFCL) keep their original names. Provider-specific name
 * rules live with each provider; events and stores always use the canonical name.
 */
import { Brand, Data, Result } from "effect"

/** A name that passed {@link validate}: safe for every supported provider. */
export type ToolName = string & Brand.Brand<"tinyagents/ToolName">

/** Longest canonical name: the strictest provider limit (OpenAI, Anthropic). */
export const maxLength = 64

/** The canonical pattern: lower-case ASCII letter first, then letters, digits, `_`. */
export const pattern = /^[a-z][a-z0-9_]*$/

/** Which rule a name broke. */
export type Rule = "empty" | "too_long" | "whitespace" | "uppercase" | "leading_character" | "character"

/** A name that breaks the canonical rule; `message` names the tool and the rule. */
export class InvalidToolName extends Data.TaggedError("InvalidToolName")<{
  readonly name: string
  readonly rule: Rule
}> {
  override get message(): string {
    const shown = JSON.stringify(this.name)
    switch (this.rule) {
      case "empty":
        return "tool name is empty: a name needs 1 to 64 characters"
      case "too_long":
        return `tool name ${shown} is ${this.name.length} characters long: the limit is ${maxLength}`
      case "whitespace":
        return `tool name ${shown} contains whitespace: use snake_case (a-z, 0-9, _)`
      case "uppercase":
        return `tool name ${shown} contains upper-case letters: use snake_case (a-z, 0-9, _)`
      case "leading_character":
        return `tool name ${shown} must start with a lower-case letter a-z`
      case "character":
        return `tool name ${shown} contains ${
          JSON.stringify(offendingCharacter(this.name))
        }, which some providers would need escaped: use only a-z, 0-9 and _`
    }
  }
}

const offendingCharacter = (name: string): string => [...name].find((c) => !/[a-z0-9_]/.test(c)) ?? ""

/** Checks a canonical name; the first broken rule wins. */
export const validate = (name: string): Result.Result<ToolName, InvalidToolName> => {
  const rule = brokenRule(name)
  return rule === undefined ? Result.succeed(name as ToolName) : Result.fail(new InvalidToolName({ name, rule }))
}

const brokenRule = (name: string): Rule | undefined => {
  if (name.length === 0) return "empty"
  if (name.length > maxLength) return "too_long"
  if (pattern.test(name)) return undefined
  if (/\s/.test(name)) return "whitespace"
  if (/[A-Z]/.test(name)) return "uppercase"
  if (!/^[a-z]/.test(name)) return /^[a-z0-9_]+$/.test(name) ? "leading_character" : "character"
  return "character"
}

/** True when `name` satisfies the canonical rule. */
export const isToolName = (name: string): name is ToolName => brokenRule(name) === undefined

/**
 * Derives a canonical name from a foreign one: `math.factorial` → `math_factorial`,
 * `getWeather` → `get_weather`, `1tool` → `t_1tool`. Names that would exceed the
 * limit are cut and suffixed with a short hash of the original, so the result is
 * deterministic. Returns an {@link InvalidToolName} only for names with no usable
 * character at all.
 */
export const sanitize = (original: string): Result.Result<ToolName, InvalidToolName> => {
  let name = original
    .replace(/([a-z0-9])([A-Z])/g, "$1_$2")
    .replace(/([A-Z]+)([A-Z][a-z])/g, "$1_$2")
    .toLowerCase()
    .replace(/[^a-z0-9_]+/g, "_")
    .replace(/_+/g, "_")
    .replace(/^_+|_+$/g, "")
  if (name.length === 0) return Result.fail(new InvalidToolName({ name: original, rule: "empty" }))
  if (!/^[a-z]/.test(name)) name = `t_${name}`
  if (name.length > maxLength) name = `${name.slice(0, maxLength - 9)}_${shortHash(original)}`
  return validate(name)
}

/** 8 hex digits of FNV-1a: enough to keep cut names apart, stable across runs. */
const shortHash = (s: string): string => {
  let h = 0x811c9dc5
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i)
    h = Math.imul(h, 0x01000193)
  }
  return (h >>> 0).toString(16).padStart(8, "0")
}

/** Two original names that map to one canonical name. */
export class ToolNameCollision extends Data.TaggedError("ToolNameCollision")<{
  readonly name: ToolName
  readonly originals: ReadonlyArray<string>
}> {
  override get message(): string {
    return `tool names ${this.originals.map((o) => JSON.stringify(o)).join(" and ")} both map to ${
      JSON.stringify(this.name)
    }: rename one of them`
  }
}

/** A reversible map between original (foreign) names and canonical names. */
export interface Aliases {
  /** Canonical name for an original or canonical name; `undefined` if unknown. */
  readonly toCanonical: (name: string) => ToolName | undefined
  /** The original name a canonical name came from (itself when it had none). */
  readonly toOriginal: (name: ToolName) => string
  readonly entries: ReadonlyArray<readonly [original: string, canonical: ToolName]>
}

/**
 * Builds an alias map from `[original, canonical]` pairs, failing when two
 * different originals share a canonical name.
 */
export const makeAliases = (
  pairs: Iterable<readonly [original: string, canonical: ToolName]>
): Result.Result<Aliases, ToolNameCollision> => {
  const toCanonical = new Map<string, ToolName>()
  const toOriginal = new Map<ToolName, string>()
  for (const [original, canonical] of pairs) {
    const previous = toOriginal.get(canonical)
    if (previous !== undefined && previous !== original) {
      return Result.fail(new ToolNameCollision({ name: canonical, originals: [previous, original] }))
    }
    const claimed = toCanonical.get(original)
    if (claimed !== undefined && claimed !== canonical) {
      return Result.fail(new ToolNameCollision({ name: canonical, originals: [original, claimed] }))
    }
    toOriginal.set(canonical, original)
    toCanonical.set(original, canonical)
  }
  return Result.succeed({
    toCanonical: (name) => toCanonical.get(name) ?? (toOriginal.has(name as ToolName) ? name as ToolName : undefined),
    toOriginal: (name) => toOriginal.get(name) ?? name,
    entries: [...toCanonical.entries()]
  })
}
