/**
 * The error a model adapter's `layerConfig` fails with when its configuration
 * is missing or unusable: it names the variable (`OPENAI_API_KEY`, ...), says
 * what to put in it, and its message is one line (never `[object Object]`,
 * never the value of a secret).
 */
import { Schema } from "effect"

/** A configuration value a model adapter needs is missing or invalid. */
export class ModelConfigError extends Schema.TaggedError<ModelConfigError>()("ModelConfigError", {
  /** The adapter that read it: `"openai-chat"`, `"anthropic"`. */
  provider: Schema.String,
  /** The configuration key (environment variable) at fault, e.g. `OPENAI_API_KEY`. */
  variable: Schema.String,
  problem: Schema.Literals(["missing", "invalid"]),
  /** One line naming the variable and what to do about it. */
  message: Schema.String
}) {}
