/**
 * A tool call as a provider sent it, before anything is checked: the provider's
 * call id, the name the model used, and the raw arguments (JSON text, as OpenAI
 * sends them, or an already-parsed value, as Anthropic and Gemini do).
 * {@link ToolCall} is also its schema (arguments and provider data as JSON), the
 * one transcripts and journals use.
 */
import { Schema } from "effect"
import { JsonData } from "./ToolError.ts"

/** The schema of a {@link ToolCall}: JSON as it is, `arguments` and `provider` values as JSON (`ToolError.JsonData`). */
export const ToolCall = Schema.Struct({
  /** The provider's call id; every result keeps it. */
  id: Schema.String,
  /** The name exactly as the model sent it. */
  name: Schema.String,
  /** JSON text or a parsed value; nothing is trusted yet. */
  arguments: JsonData,
  /** Provider-specific data to carry through to the result (e.g. Gemini thought signatures). */
  provider: Schema.optionalKey(Schema.Record(Schema.String, JsonData))
})

export type ToolCall = typeof ToolCall.Type

/** Builds a call. */
export const make = (id: string, name: string, args: unknown): ToolCall => ({ id, name, arguments: args })
