/**
 * The streaming plumbing the chat-model adapters share: one JSON POST whose
 * answer is server-sent events, decoded with Effect's own SSE parser
 * (`effect/encoding` `Sse`) over the response's byte stream, and handed
 * event by event to the adapter's decoder, which turns them into
 * `StreamPart`s. Each attempt (opening, up to the response headers, bounded
 * by the timeout; then the events) runs under the adapter's retry policy
 * until its first part: a retryable failure before any part went out
 * (overload or rate limit reported in the stream, 5xx, a connection closed
 * before any event, a timeout) asks again as the policy says (attempts,
 * backoff, `retry-after`); once a part was delivered nothing is ever sent
 * again: a failure is the stream's typed error. Each read of the body is
 * bounded by the same timeout (no bytes within it fails with `timeout`).
 * Every error message is scrubbed of secrets; quotes of event text are
 * scrubbed before they are cut. Ending or interrupting the stream closes the
 * HTTP response. It knows nothing about any provider's events.
 */
import { Effect, type Redacted, Result, Stream } from "effect"
import { Sse } from "effect/encoding"
import type { HttpClient, HttpClientRequest, HttpClientResponse } from "effect/http"
import { ChatModelError, partsOf, type Response, type StreamPart } from "../../ChatModel.ts"
import * as HttpChat from "./httpChat.ts"

/** One server-sent event: its `event:` name (`message` when unnamed) and its `data:` text. */
export interface Event {
  readonly event: string
  readonly data: string
  /** What a quote of `data` must not show (the key, credential header values): see {@link excerpt}. */
  readonly secrets: ReadonlyArray<Redacted.Redacted<string>>
}

/**
 * The event's `data` as an error message may quote it: scrubbed of its
 * secrets first, then cut to `max` characters (a key straddling the cut
 * would otherwise leave its prefix, which no later scrub can recognise).
 */
export const excerpt = (event: Event, max = 200): string =>
  HttpChat.truncate(HttpChat.scrub(event.data, event.secrets).trim(), max)

/** What one adapter makes of one stream's events; a fresh one per stream (it may keep state). */
export interface EventDecoder {
  /** The parts an event yields, in order; a failure ends the stream with that error. */
  readonly event: (event: Event) => Result.Result<ReadonlyArray<StreamPart>, ChatModelError>
  /**
   * The parts once the body has ended (for providers whose stream has no terminal event);
   * a failure when the stream was cut before the answer finished.
   */
  readonly end: () => Result.Result<ReadonlyArray<StreamPart>, ChatModelError>
}

/** How a stream is opened and read. */
export interface StreamOptions extends HttpChat.PostOptions {
  /**
   * How a 2xx JSON answer reads (a server that ignored the request to stream):
   * the `Response` it holds, streamed as `ChatModel.partsOf` does. Without it such an answer is a `decode` error.
   */
  readonly whole?: (body: unknown) => Result.Result<Response, ChatModelError>
}

/** The event's `data` as JSON; text that is not JSON is a `decode` error. */
export const json = (provider: string, event: Event): Result.Result<unknown, ChatModelError> => {
  try {
    return Result.succeed(JSON.parse(event.data))
  } catch {
    return Result.fail(
      new ChatModelError({
        reason: "decode",
        message: `${provider}: a stream event (${event.event}) is not JSON: ${excerpt(event)}`,
        retryable: false
      })
    )
  }
}

/** A stream event that does not have the provider's documented shape. */
export const decodeError = (provider: string, detail: string): ChatModelError =>
  new ChatModelError({ reason: "decode", message: `${provider}: unexpected stream event: ${detail}`, retryable: false })

/** The stream ended (cleanly or not) before its terminal event: retryable. */
export const cutError = (provider: string, detail: string): ChatModelError =>
  new ChatModelError({
    reason: "transport",
    message: `${provider}: the stream ended before the answer finished (${detail})`,
    retryable: true
  })

/** An error the provider reported inside the stream; `retryable` for overload and rate-limit kinds. */
export const providerError = (provider: string, detail: string, retryable: boolean): ChatModelError =>
  new ChatModelError({ reason: "provider", message: `${provider}: ${detail}`, retryable })

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/**
 * The decoder of a stream whose events are JSON objects naming their kind in
 * `type` (the SSE event name stands in when it is absent): `handle` gets each
 * object; data that is not an object is a `decode` error, and a body that
 * ends before `handle` finished the answer is cut (`no ${terminal}`).
 */
export const typedEvents = (
  provider: string,
  terminal: string,
  handle: (body: Record<string, unknown>) => Result.Result<ReadonlyArray<StreamPart>, ChatModelError>
): EventDecoder => ({
  event: (event) =>
    Result.flatMap(json(provider, event), (body) =>
      isRecord(body)
        ? handle(body.type === undefined ? { ...body, type: event.event } : body)
        : Result.fail(decodeError(provider, `${event.event} data is not an object`))),
  end: () => Result.fail(cutError(provider, `no ${terminal}`))
})

const mediaType = (response: HttpClientResponse.HttpClientResponse): string =>
  (response.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase()

/** The innermost message of a cause chain (`terminated` → `other side closed`), for a plain account of a broken body. */
const rootMessage = (cause: { readonly message: string }): string => {
  let message = cause.message
  let current: unknown = cause
  for (let depth = 0; depth < 8 && typeof current === "object" && current !== null; depth++) {
    const text = (current as { readonly message?: unknown }).message
    if (typeof text === "string" && text !== "") message = text
    current = (current as { readonly cause?: unknown }).cause
  }
  return message
}

/** The response body as SSE events, each read bounded by `timeout`. */
const events = (
  options: StreamOptions,
  response: HttpClientResponse.HttpClientResponse
): Stream.Stream<Event, ChatModelError> =>
  Stream.suspend(() => {
    const secrets = HttpChat.secretsOf(options)
    const pending: Array<Event> = []
    let seen = false
    // Retry directives and event ids are for `EventSource` reconnection, which a POST cannot do: ignored.
    const parser = Sse.makeParser((event) => {
      if (event._tag !== "Event") return
      seen = true
      pending.push({ event: event.event, data: event.data, secrets })
    })
    const bytes = response.stream.pipe(Stream.mapError((cause) =>
      new ChatModelError({
        reason: "transport",
        message: seen
          ? `${options.provider}: the connection closed before the answer finished (${rootMessage(cause)})`
          : `${options.provider}: the connection closed before any event (${rootMessage(cause)})`,
        retryable: true
      })
    ))
    const bounded = bytes.pipe(Stream.timeoutOrElse({
      duration: options.timeout,
      orElse: () => Stream.fail(HttpChat.timeoutError(options.provider, options.timeout))
    }))
    return bounded.pipe(
      Stream.decodeText(),
      Stream.mapEffect((chunk) => {
        const error = parser.feed(chunk)
        const out = pending.splice(0)
        return error === undefined ? Effect.succeed(out) : Effect.fail(
          new ChatModelError({
            reason: "decode",
            message: `${options.provider}: a stream event is too large: ${error.message}`,
            retryable: false
          })
        )
      }),
      Stream.flattenIterable
    )
  })

/** The parts of an event stream, through a fresh `decoder`, ending with (and at) the first `Finished`. */
const decode = (
  source: Stream.Stream<Event, ChatModelError>,
  decoder: () => EventDecoder
): Stream.Stream<StreamPart, ChatModelError> =>
  Stream.suspend(() => {
    const state = decoder()
    return source.pipe(
      Stream.mapEffect((event) => Effect.fromResult(state.event(event))),
      Stream.concat(Stream.fromEffect(Effect.suspend(() => Effect.fromResult(state.end())))),
      Stream.flattenIterable,
      Stream.takeUntil((part) => part._tag === "Finished")
    )
  })

/** One attempt's parts: open (bounded by the timeout), then the events, or a whole JSON answer when the server did not stream. */
const open = (
  client: HttpClient.HttpClient,
  options: StreamOptions,
  request: HttpClientRequest.HttpClientRequest,
  decoder: () => EventDecoder
): Effect.Effect<Stream.Stream<StreamPart, ChatModelError>, ChatModelError> =>
  Effect.gen(function*() {
    const response = yield* HttpChat.withTimeout(HttpChat.send(client, options, request), options)
    if (mediaType(response) === "application/json") {
      const whole = options.whole
      const text = yield* HttpChat.withTimeout(
        response.text.pipe(Effect.mapError((cause) => HttpChat.transportError(options, cause))),
        options
      )
      const parsed = yield* HttpChat.parseBody(options, response.status, text)
      if (whole === undefined) {
        return yield* new ChatModelError({
          reason: "decode",
          message: `${options.provider}: expected an event stream, got a JSON body`,
          status: response.status,
          retryable: false
        })
      }
      return Stream.fromIterable(partsOf(yield* Effect.fromResult(whole(parsed))))
    }
    return decode(events(options, response), decoder)
  })

/**
 * One attempt, its errors scrubbed of secrets; a failure after a part went
 * out is logged here (warning), one before is the retry's to log.
 */
const attempt = (
  client: HttpClient.HttpClient,
  options: StreamOptions,
  request: HttpClientRequest.HttpClientRequest,
  decoder: () => EventDecoder
): Stream.Stream<StreamPart, ChatModelError> =>
  Stream.suspend(() => {
    const secrets = HttpChat.secretsOf(options)
    let delivered = false
    return Stream.unwrap(open(client, options, request, decoder)).pipe(
      Stream.mapError((error) => HttpChat.scrubbed(error, secrets)),
      Stream.tap(() => Effect.sync(() => (delivered = true))),
      Stream.tapError((error) =>
        delivered
          ? Effect.logWarning("chat model stream failed").pipe(
            Effect.annotateLogs({ provider: options.provider, reason: error.reason, retryable: error.retryable, error: error.message })
          )
          : Effect.void
      )
    )
  })

/**
 * POSTs `body` as JSON (`accept: text/event-stream`) and streams the answer's
 * parts through `decoder`. A retryable failure before the first part (at
 * opening or in the stream) is logged (warning) and asked again under the
 * attempt policy; a failure after it ends the stream and is logged once.
 * Every error's message is scrubbed of secrets.
 */
export const postSse = (
  client: HttpClient.HttpClient,
  options: StreamOptions,
  body: unknown,
  decoder: () => EventDecoder
): Stream.Stream<StreamPart, ChatModelError> =>
  Stream.unwrap(Effect.map(
    HttpChat.jsonRequest(options, body, "text/event-stream"),
    (request) => HttpChat.retryBeforeFirst(attempt(client, options, request, decoder), options)
  ))
