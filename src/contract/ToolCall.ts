/**
 * A tool call as a provider sent it, before anything is checked: the provider's
 * call id, the name the model used, and the raw arguments (JSON text, as OpenAI
 * sends them, or an already-parsed value, as Anthropic and Gemini do).
 */

export interface ToolCall {
  /** The provider's call id; every result keeps it. */
  readonly id: string
  /** The name exactly as the model sent it. */
  readonly name: string
  /** JSON text or a parsed value; nothing is trusted yet. */
  readonly arguments: unknown
  /** Provider-specific data to carry through to the result (e.g. Gemini thought signatures). */
  readonly provider?: Readonly<Record<string, unknown>>
}

/** Builds a call. */
export const make = (id: string, name: string, args: unknown): ToolCall => ({ id, name, arguments: args })
