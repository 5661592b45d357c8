/**
 * The one error every provider exporter fails with: which provider, which
 * tool, which rule, and where in the schema. Exporters never throw; a tool
 * that cannot be shown to a provider is a value the caller can report.
 */
import { Data } from "effect"

/** The request formats this package exports to. */
export type Provider = "openai-chat" | "openai-responses" | "anthropic" | "gemini" | "mcp"

/**
 * Which rule the tool broke:
 * - `invalid_name`: the provider's name pattern or length limit;
 * - `duplicate_name`: two tools would be sent under one name;
 * - `unsupported_schema`: a keyword or shape the chosen dialect cannot express;
 * - `limit_exceeded`: a size limit of the dialect (properties, nesting, enum values, characters).
 */
export type Reason = "invalid_name" | "duplicate_name" | "unsupported_schema" | "limit_exceeded"

/** A tool that cannot be exported to `provider`; `message` names the tool, the rule and the place. */
export class ProviderExportError extends Data.TaggedError("ProviderExportError")<{
  readonly provider: Provider
  readonly toolName: string
  readonly reason: Reason
  /** Keyword path to the offending schema node (empty for names and the root). */
  readonly path: ReadonlyArray<string>
  /** What is wrong, in words. */
  readonly detail: string
}> {
  override get message(): string {
    const at = this.path.length === 0 ? "" : ` at ${this.path.join(".")}`
    return `${this.provider}: tool ${JSON.stringify(this.toolName)} cannot be exported (${this.reason})${at}: ${this.detail}`
  }
}

/** A problem found while transforming a schema, before it is attributed to a tool. */
export interface SchemaProblem {
  readonly reason: "unsupported_schema" | "limit_exceeded"
  readonly path: ReadonlyArray<string>
  readonly detail: string
}

/** Attributes a schema problem to a tool of a provider. */
export const fromProblem = (provider: Provider, toolName: string, problem: SchemaProblem): ProviderExportError =>
  new ProviderExportError({ provider, toolName, ...problem })
