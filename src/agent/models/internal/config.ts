/**
 * The configuration readers the adapters' `layerConfig` share, over `Config`
 * (any `ConfigProvider` works; the default one reads environment variables).
 * Every failure is a `ModelConfigError` naming the variable; an empty value
 * counts as missing.
 */
import { Config, Effect, Option, type Redacted } from "effect"
import { ModelConfigError } from "../ModelConfigError.ts"

const readme = `see README "Environment variables"`

/** `variable` is not set (or empty); `hint` says what it should hold, e.g. "your OpenAI API key". */
export const missing = (provider: string, variable: string, hint: string): ModelConfigError =>
  new ModelConfigError({
    provider,
    variable,
    problem: "missing",
    message: `missing environment variable ${variable} (set it to ${hint}; ${readme})`
  })

/** `variable` is set but unusable: `detail` says why. */
export const invalid = (provider: string, variable: string, detail: string): ModelConfigError =>
  new ModelConfigError({
    provider,
    variable,
    problem: "invalid",
    message: `invalid environment variable ${variable}: ${detail} (${readme})`
  })

/** Reads `config`; a config source that cannot be read becomes an `invalid` error naming `variable`. */
const read = <A>(provider: string, variable: string, config: Config.Config<A>): Effect.Effect<A, ModelConfigError> =>
  Effect.mapError(config, (error) => invalid(provider, variable, error.message.replace(/\s*\n\s*/g, " ")))

/** An optional string; absent or empty is `None`. */
export const optionalString = (provider: string, variable: string): Effect.Effect<Option.Option<string>, ModelConfigError> =>
  read(provider, variable, Config.option(Config.String(variable)))

/** A required secret (kept `Redacted`). */
export const requiredSecret = (
  provider: string,
  variable: string,
  hint: string
): Effect.Effect<Redacted.Redacted<string>, ModelConfigError> =>
  Effect.flatMap(
    read(provider, variable, Config.option(Config.Redacted(variable))),
    Option.match({ onNone: () => Effect.fail(missing(provider, variable, hint)), onSome: Effect.succeed })
  )

/** A string that falls back to `fallback`; required (with `hint`) when there is none. */
export const stringOr = (
  provider: string,
  variable: string,
  fallback: string | undefined,
  hint: string
): Effect.Effect<string, ModelConfigError> =>
  Effect.flatMap(
    optionalString(provider, variable),
    Option.match({
      onNone: () => fallback === undefined ? Effect.fail(missing(provider, variable, hint)) : Effect.succeed(fallback),
      onSome: Effect.succeed
    })
  )

/** An optional `http:` / `https:` URL. */
export const optionalUrl = (
  provider: string,
  variable: string,
  example: string
): Effect.Effect<Option.Option<string>, ModelConfigError> =>
  Effect.flatMap(optionalString(provider, variable), (value) => {
    if (Option.isNone(value)) return Effect.succeed(value)
    const url = URL.parse(value.value.trim())
    return url !== null && (url.protocol === "http:" || url.protocol === "https:")
      ? Effect.succeed(Option.some(value.value.trim()))
      : Effect.fail(invalid(provider, variable, `expected an http(s) URL such as ${example}, got ${JSON.stringify(value.value)}`))
  })

/** The variables one adapter reads, with what each should hold. */
export interface Variables {
  readonly apiKey: { readonly name: string; readonly hint: string }
  readonly model: { readonly name: string; readonly hint: string }
  readonly baseUrl: { readonly name: string; readonly example: string }
}

/**
 * What an adapter's `layerConfig` reads: the key (`Redacted`), the model (the
 * variable, else `model`), and the base URL when set.
 */
export const connection = (
  provider: string,
  variables: Variables,
  model: string | undefined
): Effect.Effect<
  { readonly apiKey: Redacted.Redacted<string>; readonly model: string; readonly baseUrl?: string },
  ModelConfigError
> =>
  Effect.gen(function*() {
    const apiKey = yield* requiredSecret(provider, variables.apiKey.name, variables.apiKey.hint)
    const chosen = yield* stringOr(provider, variables.model.name, model, variables.model.hint)
    const baseUrl = yield* optionalUrl(provider, variables.baseUrl.name, variables.baseUrl.example)
    return { apiKey, model: chosen, ...(Option.isSome(baseUrl) ? { baseUrl: baseUrl.value } : {}) }
  })
