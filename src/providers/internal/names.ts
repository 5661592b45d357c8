/**
 * Each provider's tool-name rule, and the check that a list of tools is sent
 * under distinct names. Canonical names satisfy every rule; a foreign name
 * that does not is reported, never silently rewritten here (the registry's
 * alias map is where names are rewritten, reversibly).
 */
import { Result } from "effect"
import { type Provider, ProviderExportError } from "../ProviderExportError.ts"

/** A provider's name rule: the pattern, and the words an error quotes. */
export interface NameRule {
  readonly pattern: RegExp
  readonly description: string
}

/** OpenAI (Chat, Responses) and Anthropic: `^[a-zA-Z0-9_-]{1,64}$`. */
export const openAiRule: NameRule = {
  pattern: /^[a-zA-Z0-9_-]{1,64}$/,
  description: "names must match ^[a-zA-Z0-9_-]{1,64}$ (letters, digits, _ and -, at most 64 characters)"
}

/** Anthropic Messages: the same rule as OpenAI. */
export const anthropicRule: NameRule = openAiRule

/** Gemini: starts with a letter or `_`, then letters, digits, `_ . : -`, at most 128 characters. */
export const geminiRule: NameRule = {
  pattern: /^[a-zA-Z_][a-zA-Z0-9_.:-]{0,127}$/,
  description:
    "names must start with a letter or an underscore and use only a-z, A-Z, 0-9, _, ., : and -, at most 128 characters"
}

/** MCP (2025-11-25 "Tool Names"): 1 to 128 of `A-Z a-z 0-9 _ - .`. */
export const mcpRule: NameRule = {
  pattern: /^[A-Za-z0-9_.-]{1,128}$/,
  description: "names must be 1 to 128 characters of A-Z, a-z, 0-9, _, - and ."
}

/** Checks one name against a rule. */
export const check = (provider: Provider, rule: NameRule, name: string): Result.Result<string, ProviderExportError> =>
  rule.pattern.test(name)
    ? Result.succeed(name)
    : Result.fail(
      new ProviderExportError({
        provider,
        toolName: name,
        reason: "invalid_name",
        path: [],
        detail: `${JSON.stringify(name)} breaks the name rule: ${rule.description}`
      })
    )

/** Tracks names already used in one export; the second use of a name is an error. */
export const makeUniqueness = (provider: Provider) => {
  const seen = new Set<string>()
  return (name: string): Result.Result<string, ProviderExportError> => {
    if (seen.has(name)) {
      return Result.fail(
        new ProviderExportError({
          provider,
          toolName: name,
          reason: "duplicate_name",
          path: [],
          detail: `two tools would be sent as ${JSON.stringify(name)}; tool names must be unique`
        })
      )
    }
    seen.add(name)
    return Result.succeed(name)
  }
}

/** The spec a call names, by canonical name first, then by original name. */
export const specFor = <S extends { readonly name: string; readonly originalName?: string }>(
  specs: ReadonlyArray<S>,
  name: string
): S | undefined => specs.find((spec) => spec.name === name) ?? specs.find((spec) => spec.originalName === name)
