/**
 * The plumbing the chat-model adapters share: one JSON POST, every failure
 * mapped to a `ChatModelError` whose message quotes the provider's error text
 * (never a header, never the key: the whole body is scrubbed of the key and of
 * credential header values before any of it is cut to length), `retry-after` read from 429/5xx answers,
 * and the attempt policy (per-attempt timeout, a warning per failed attempt,
 * retries that honour `retry-after`) that the bridge uses too. It knows
 * nothing about any provider's message format.
 */
import { Clock, Duration, Effect, Redacted, Schedule, Stream } from "effect"
import { HttpClient, HttpClientRequest } from "effect/http"
import type { HttpClientResponse } from "effect/http"
import { ChatModelError } from "../../ChatModel.ts"
import { stringify } from "../../../internal/json.ts"
import { withoutSecrets } from "../../../internal/redact/text.ts"

/** A retry policy for model requests: its input is the failed attempt's error. */
export type RetryPolicy = Schedule.Schedule<unknown, ChatModelError>

/** How each attempt is bounded and when a failed one is asked again. */
export interface AttemptPolicy {
  /** Names the provider in error messages and log annotations. */
  readonly provider: string
  /** Per attempt; none when undefined. */
  readonly timeout: Duration.Duration | undefined
  readonly retry: RetryPolicy | false
  readonly maxRetryAfter: Duration.Duration
}

/** What one adapter sends and how it retries. */
export interface PostOptions extends AttemptPolicy {
  readonly url: string
  /** Header values; secret ones are scrubbed from every message. */
  readonly headers: Readonly<Record<string, string>>
  /** Values that must never appear in an error message or log line. */
  readonly secrets: ReadonlyArray<Redacted.Redacted<string>>
  readonly timeout: Duration.Duration
}

/** Default per-attempt timeout. */
export const defaultTimeout: Duration.Duration = Duration.seconds(60)

/** Default ceiling on a server's `retry-after`: longer waits fail instead. */
export const defaultMaxRetryAfter: Duration.Duration = Duration.seconds(60)

/**
 * The default retry policy: up to 3 retries with jittered exponential backoff
 * from 500 ms. The adapter only ever retries retryable errors and waits at
 * least the server's `retry-after`.
 */
export const defaultRetry: RetryPolicy = Schedule.max([
  Schedule.exponential("500 millis"),
  Schedule.recurs(3)
]).pipe(Schedule.jittered)

/**
 * The options every HTTP adapter's `Options` extend: how to reach the model
 * and how each request is bounded and retried. An adapter redeclares a field
 * only to document its own default (`baseUrl`) or format (`model`).
 */
export interface ConnectionOptions {
  /** The API key: sent only in the adapter's credential header, scrubbed from every error message and log line. */
  readonly apiKey: Redacted.Redacted<string>
  /** The model every request names. */
  readonly model: string
  /** The API's base URL; each adapter documents its default. */
  readonly baseUrl?: string
  /** Per attempt; when streaming, for the response headers and then for each read of the body. Default 60 seconds. */
  readonly timeout?: Duration.Input
  /**
   * Which failures to ask again, and when. Only retryable errors (429, 408,
   * 409, 5xx such as Anthropic's 529 `overloaded_error`, transport, timeout;
   * when streaming, also an overload or rate-limit error event) are retried,
   * never sooner than the server's `retry-after`; a stream only until its
   * first part (nothing delivered is ever re-sent). Default
   * {@link defaultRetry}; `false` never retries.
   */
  readonly retry?: RetryPolicy | false
  /** A `retry-after` longer than this fails at once. Default 60 seconds. */
  readonly maxRetryAfter?: Duration.Input
  /**
   * Extra headers (`OpenAI-Organization`, `OpenAI-Project`, `anthropic-beta`, ...);
   * the adapter's own credential and version headers win over these.
   */
  readonly headers?: Readonly<Record<string, string>>
}

/**
 * The `PostOptions` for an adapter's `options`: `url`, the caller's headers
 * with the adapter's `own` (credential, version) over them, the key as the
 * secret, and the timeout, retry and `retry-after` ceiling or their defaults.
 */
export const postOptions = (
  provider: string,
  options: ConnectionOptions,
  url: string,
  own: Readonly<Record<string, string>>
): PostOptions => ({
  provider,
  url,
  headers: { ...options.headers, ...own },
  secrets: [options.apiKey],
  timeout: options.timeout === undefined ? defaultTimeout : Duration.fromInputUnsafe(options.timeout),
  retry: options.retry ?? defaultRetry,
  maxRetryAfter: options.maxRetryAfter === undefined ? defaultMaxRetryAfter : Duration.fromInputUnsafe(options.maxRetryAfter)
})

const retryAfters = new WeakMap<ChatModelError, Duration.Duration>()

/** The wait a 429/5xx answer asked for (`retry-after` or `retry-after-ms`), when it gave one. */
export const retryAfter = (error: ChatModelError): Duration.Duration | undefined => retryAfters.get(error)

/** Records the wait the server asked for with `error`; returns `error`. */
export const withRetryAfter = (error: ChatModelError, wait: Duration.Duration | undefined): ChatModelError => {
  if (wait !== undefined) retryAfters.set(error, wait)
  return error
}

/**
 * Replaces every secret value in `text` (and its JSON-escaped form) with the marker, whatever its
 * length; secrets that overlap (one a prefix of another, or sharing characters) are redacted whole.
 */
export const scrub = (text: string, secrets: ReadonlyArray<Redacted.Redacted<string>>): string =>
  withoutSecrets(text, secrets.map((secret) => Redacted.value(secret)))

/**
 * `error` with its message scrubbed of `secrets` (the same error when there was nothing to scrub),
 * keeping its `retry-after`. For messages that quote whole values; text that is cut must be scrubbed before the cut.
 */
export const scrubbed = (error: ChatModelError, secrets: ReadonlyArray<Redacted.Redacted<string>>): ChatModelError => {
  const message = scrub(error.message, secrets)
  if (message === error.message) return error
  return withRetryAfter(
    new ChatModelError({
      reason: error.reason,
      message,
      retryable: error.retryable,
      ...(error.status === undefined ? {} : { status: error.status })
    }),
    retryAfter(error)
  )
}

/** Headers whose values are credentials, whatever the adapter calls its key. */
const credentialHeaders: ReadonlySet<string> = new Set(["authorization", "x-api-key", "api-key", "x-goog-api-key", "proxy-authorization"])

/**
 * Every value a message must not quote: the adapter's secrets, and the values of its credential
 * headers (`Authorization`, `x-api-key`, ...), with the token of an `Authorization: <scheme> <token>`.
 */
export const secretsOf = (options: PostOptions): ReadonlyArray<Redacted.Redacted<string>> => {
  const out = [...options.secrets]
  for (const [name, value] of Object.entries(options.headers)) {
    if (!credentialHeaders.has(name.toLowerCase()) || value.trim() === "") continue
    out.push(Redacted.make(value))
    const token = value.trim().split(/\s+/).slice(1).join(" ")
    if (token.length > 0) out.push(Redacted.make(token))
  }
  return out
}

/** `text` cut to `max` characters (with `...`). */
export const truncate = (text: string, max = 300): string => text.length > max ? `${text.slice(0, max)}...` : text

const parseJson = (text: string): { readonly ok: true; readonly value: unknown } | { readonly ok: false } => {
  try {
    return { ok: true, value: JSON.parse(text) }
  } catch {
    return { ok: false }
  }
}

const stringField = (value: unknown, key: string): string | undefined => {
  if (typeof value !== "object" || value === null) return undefined
  const field = (value as Record<string, unknown>)[key]
  return typeof field === "string" ? field : undefined
}

/**
 * The provider's own words from an error body: OpenAI's and Anthropic's
 * `{ error: { message, type, code } }`, a bare `{ error: "..." }`, or
 * `{ message }` / `{ detail }` as OpenAI-compatible servers send.
 */
const describeErrorBody = (
  text: string,
  secrets: ReadonlyArray<Redacted.Redacted<string>>
): { readonly message: string; readonly type?: string; readonly code?: string } => {
  // Scrub the whole body before anything is cut: a key straddling a cut would leave its prefix.
  // The parsed fields are scrubbed again (JSON escapes can spell a key the raw text does not).
  const clean = scrub(text, secrets)
  const parsed = parseJson(clean)
  if (!parsed.ok) return { message: clean.trim().length === 0 ? "(empty body)" : truncate(clean.trim()) }
  const body = parsed.value
  const error = typeof body === "object" && body !== null ? (body as Record<string, unknown>).error : undefined
  if (typeof error === "string") return { message: truncate(scrub(error, secrets)) }
  const message = stringField(error, "message") ?? stringField(body, "message") ?? stringField(body, "detail")
  const type = stringField(error, "type")
  const code = stringField(error, "code")
  return {
    message: message === undefined ? truncate(clean.trim()) : truncate(scrub(message, secrets), 1000),
    ...(type === undefined ? {} : { type: truncate(scrub(type, secrets), 100) }),
    ...(code === undefined ? {} : { code: truncate(scrub(code, secrets), 100) })
  }
}

const parseRetryAfter = (
  headers: Readonly<Record<string, string | undefined>>,
  now: number
): Duration.Duration | undefined => {
  const ms = headers["retry-after-ms"]
  if (ms !== undefined && ms.trim() !== "" && Number.isFinite(Number(ms)) && Number(ms) >= 0) {
    return Duration.millis(Number(ms))
  }
  const value = headers["retry-after"]
  if (value === undefined || value.trim() === "") return undefined
  const seconds = Number(value)
  if (Number.isFinite(seconds)) return seconds >= 0 ? Duration.millis(seconds * 1000) : undefined
  const date = Date.parse(value)
  return Number.isNaN(date) ? undefined : Duration.millis(Math.max(0, date - now))
}

/** The error for a non-2xx answer. */
const statusError = (
  options: PostOptions,
  status: number,
  text: string
): ChatModelError => {
  const secrets = secretsOf(options)
  const described = describeErrorBody(text, secrets)
  const label = described.code ?? described.type
  // A 404 is most often a base URL that misses (or doubles) a path segment: say which URL was asked.
  const where = status === 404 ? ` (POST ${options.url})` : ""
  const message = scrub(
    `${options.provider}: HTTP ${status}${label === undefined ? "" : ` ${label}`}: ${described.message}${where}`,
    secrets
  )
  if (status === 429) {
    // OpenAI answers an exhausted quota with 429 too; asking again does not help.
    const quota = described.code === "insufficient_quota" || described.type === "insufficient_quota"
    return new ChatModelError({ reason: "rate_limited", message, status, retryable: !quota })
  }
  if (status === 408) return new ChatModelError({ reason: "timeout", message, status, retryable: true })
  return new ChatModelError({ reason: "http", message, status, retryable: status === 409 || status >= 500 })
}

/** The connection failed (or broke): retryable, the cause's message scrubbed. */
export const transportError = (options: PostOptions, cause: { readonly message: string }): ChatModelError =>
  new ChatModelError({
    reason: "transport",
    message: scrub(`${options.provider}: request failed: ${cause.message}`, secretsOf(options)),
    retryable: true
  })

/** Nothing arrived within `timeout`: retryable. */
export const timeoutError = (provider: string, timeout: Duration.Duration): ChatModelError =>
  new ChatModelError({
    reason: "timeout",
    message: `${provider}: no answer within ${Duration.format(timeout)}`,
    retryable: true
  })

const bodyText = (
  options: PostOptions,
  response: HttpClientResponse.HttpClientResponse
): Effect.Effect<string, ChatModelError> => Effect.mapError(response.text, (cause) => transportError(options, cause))

/**
 * Sends `request` and returns a 2xx response unread (its body is the caller's to read or stream);
 * any other status is read and failed as the `ChatModelError` it stands for, with its `retry-after`.
 */
export const send = (
  client: HttpClient.HttpClient,
  options: PostOptions,
  request: HttpClientRequest.HttpClientRequest
): Effect.Effect<HttpClientResponse.HttpClientResponse, ChatModelError> =>
  Effect.gen(function*() {
    const response = yield* Effect.mapError(client.execute(request), (cause) => transportError(options, cause))
    if (response.status >= 200 && response.status < 300) return response
    const text = yield* bodyText(options, response)
    const error = statusError(options, response.status, text)
    const wait = error.retryable ? parseRetryAfter(response.headers, yield* Clock.currentTimeMillis) : undefined
    return yield* withRetryAfter(error, wait)
  })

/** A 2xx body as JSON; text that is not JSON is a `decode` error quoting (scrubbed) its start. */
export const parseBody = (options: PostOptions, status: number, text: string): Effect.Effect<unknown, ChatModelError> => {
  const parsed = parseJson(text)
  if (parsed.ok) return Effect.succeed(parsed.value)
  return Effect.fail(
    new ChatModelError({
      reason: "decode",
      message: `${options.provider}: the response body is not JSON: ${truncate(scrub(text, secretsOf(options)).trim(), 200)}`,
      status,
      retryable: false
    })
  )
}

/** One attempt: send, read the whole body, classify. */
const attempt = (
  client: HttpClient.HttpClient,
  options: PostOptions,
  request: HttpClientRequest.HttpClientRequest
): Effect.Effect<unknown, ChatModelError> =>
  Effect.gen(function*() {
    const response = yield* send(client, options, request)
    const text = yield* bodyText(options, response)
    return yield* parseBody(options, response.status, text)
  })

/**
 * The policy as applied: the caller's schedule, narrowed to retryable errors
 * whose `retry-after` (if any) is within `maxRetryAfter`, with each delay
 * raised to at least that `retry-after`.
 */
const honouring = (policy: RetryPolicy, maxRetryAfter: Duration.Duration): RetryPolicy =>
  policy.pipe(
    Schedule.while(({ input }) => {
      if (!input.retryable) return false
      const wait = retryAfter(input)
      return wait === undefined || Duration.isLessThanOrEqualTo(wait, maxRetryAfter)
    }),
    Schedule.modifyDelay(({ input, duration }) => {
      const wait = retryAfter(input)
      return Effect.succeed(wait === undefined ? duration : Duration.max(duration, wait))
    })
  )

/** The warning a failed attempt logs (its message already scrubbed). */
const logFailure = (provider: string, error: ChatModelError): Effect.Effect<void> =>
  Effect.logWarning("chat model request failed").pipe(
    Effect.annotateLogs({
      provider,
      reason: error.reason,
      status: error.status ?? "none",
      retryable: error.retryable,
      error: error.message
    })
  )

/** `once` bounded by the policy's timeout (a retryable `timeout` error when it runs out); unbounded without one. */
export const withTimeout = <A>(
  once: Effect.Effect<A, ChatModelError>,
  policy: AttemptPolicy
): Effect.Effect<A, ChatModelError> => {
  const timeout = policy.timeout
  return timeout === undefined ? once : once.pipe(
    Effect.timeoutOrElse({ duration: timeout, orElse: () => Effect.fail(timeoutError(policy.provider, timeout)) })
  )
}

/**
 * Runs `once` under `policy`: each attempt bounded by the timeout, each
 * failure logged (warning; message already scrubbed), retryable failures
 * asked again as the policy says.
 */
export const withPolicy = <A>(
  once: Effect.Effect<A, ChatModelError>,
  policy: AttemptPolicy
): Effect.Effect<A, ChatModelError> => {
  const logged = withTimeout(once, policy).pipe(
    Effect.tapError((error) => logFailure(policy.provider, error))
  )
  return policy.retry === false ? logged : Effect.retry(logged, honouring(policy.retry, policy.maxRetryAfter))
}

/** The POST of `body` as JSON to `options.url`, accepting `accept`; fails (never sent) when `body` is not serialisable. */
export const jsonRequest = (
  options: PostOptions,
  body: unknown,
  accept: string = "application/json"
): Effect.Effect<HttpClientRequest.HttpClientRequest, ChatModelError> =>
  Effect.suspend(() => {
    let json: string
    try {
      json = stringify(body) ?? "null"
    } catch (cause) {
      return Effect.fail(
        new ChatModelError({
          reason: "http",
          message: scrub(`${options.provider}: request not sent: the body cannot be serialised as JSON: ${String(cause)}`, secretsOf(options)),
          retryable: false
        })
      )
    }
    return Effect.succeed(HttpClientRequest.post(options.url).pipe(
      HttpClientRequest.setHeaders(options.headers),
      HttpClientRequest.setHeader("accept", accept),
      HttpClientRequest.bodyText(json, "application/json")
    ))
  })

/**
 * Runs `stream` under `policy`'s retries, but only until its first element:
 * a failure before anything was delivered is logged (also when the policy
 * never retries) and asked again as the policy says; once an element went
 * out, a failure ends the stream unlogged (the caller's to report; nothing
 * is ever re-sent). No per-attempt timeout: the caller bounds reads.
 */
export const retryBeforeFirst = <A>(
  stream: Stream.Stream<A, ChatModelError>,
  policy: AttemptPolicy
): Stream.Stream<A, ChatModelError> =>
  Stream.suspend(() => {
    let delivered = false
    const logged = stream.pipe(
      Stream.tap(() => Effect.sync(() => (delivered = true))),
      Stream.tapError((error) => delivered ? Effect.void : logFailure(policy.provider, error))
    )
    const retry = policy.retry
    return retry === false
      ? logged
      : logged.pipe(Stream.retry(honouring(retry, policy.maxRetryAfter).pipe(Schedule.while(() => !delivered))))
  })

/** POSTs `body` as JSON and returns the parsed 2xx body, retrying as `options.retry` says. */
export const postJson = (
  client: HttpClient.HttpClient,
  options: PostOptions,
  body: unknown
): Effect.Effect<unknown, ChatModelError> =>
  Effect.flatMap(jsonRequest(options, body), (request) => withPolicy(attempt(client, options, request), options))

/** A request the adapter refused to send (the tools cannot be exported, ...): never retried. */
export const requestError = (provider: string, message: string): ChatModelError =>
  new ChatModelError({ reason: "http", message: `${provider}: request not sent: ${message}`, retryable: false })

/** The 2xx body did not have the provider's documented shape. */
export const decodeError = (provider: string, detail: string): ChatModelError =>
  new ChatModelError({ reason: "decode", message: `${provider}: unexpected response shape: ${detail}`, retryable: false })
