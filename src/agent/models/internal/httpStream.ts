/**
 * The streaming plumbing the chat-model adapters share: one JSON POST whose
 * answer is server-sent events, decoded with Effect's own SSE parser
 * (`effect/encoding` `Sse`) over the response's byte stream, and handed
 * event by event to the adapter's decoder, which turns them into
 * `StreamPart`s. Opening the stream (up to the response headers) runs under
 * the adapter's attempt policy (timeout, retries, `retry-after`); once the
 * body is flowing nothing is ever sent again: a failure is the stream's
 * typed error. Each read of the body is bounded by the same timeout (no
 * bytes within it fails with `timeout`). Ending or interrupting the stream
 * closes the HTTP response. It knows nothing about any provider's events.
 */
import { Effect, Result, Stream } from "effect"
import { Sse } from "effect/encoding"
import type { HttpClient, HttpClientResponse } from "effect/http"
import { ChatModelError, partsOf, type Response, type StreamPart } from "../../ChatModel.ts"
import * as HttpChat from "./httpChat.ts"

/** One server-sent event: its `event:` name (`message` when unnamed) and its `data:` text. */
export interface Event {
  readonly event: string
  readonly data: string
}

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
        message: `${provider}: a stream event (${event.event}) is not JSON: ${HttpChat.truncate(event.data, 200)}`,
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

/** The response body as SSE events, each read bounded by `timeout`. */
const events = (
  options: StreamOptions,
  response: HttpClientResponse.HttpClientResponse
): Stream.Stream<Event, ChatModelError> =>
  Stream.suspend(() => {
    const pending: Array<Event> = []
    // Retry directives and event ids are for `EventSource` reconnection, which a POST cannot do: ignored.
    const parser = Sse.makeParser((event) => {
      if (event._tag === "Event") pending.push({ event: event.event, data: event.data })
    })
    const bytes = response.stream.pipe(Stream.mapError((cause) =>
      new ChatModelError({
        reason: "transport",
        message: `${options.provider}: the stream broke before the answer finished: ${cause.message}`,
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

/**
 * POSTs `body` as JSON (`accept: text/event-stream`) and streams the answer's
 * parts through `decoder`. The attempt policy covers opening only; a failure
 * mid-stream (its message scrubbed of secrets) is logged (warning) and ends the stream.
 */
export const postSse = (
  client: HttpClient.HttpClient,
  options: StreamOptions,
  body: unknown,
  decoder: () => EventDecoder
): Stream.Stream<StreamPart, ChatModelError> =>
  Stream.unwrap(Effect.gen(function*() {
    const request = yield* HttpChat.jsonRequest(options, body, "text/event-stream")
    const response = yield* HttpChat.withPolicy(HttpChat.send(client, options, request), options)
    if (mediaType(response) === "application/json") {
      const whole = options.whole
      const text = yield* response.text.pipe(
        Effect.mapError((cause) => HttpChat.transportError(options, cause)),
        Effect.timeoutOrElse({
          duration: options.timeout,
          orElse: () => Effect.fail(HttpChat.timeoutError(options.provider, options.timeout))
        })
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
    return decode(events(options, response), decoder).pipe(
      Stream.mapError((error) =>
        new ChatModelError({
          reason: error.reason,
          message: HttpChat.scrub(error.message, HttpChat.secretsOf(options)),
          retryable: error.retryable,
          ...(error.status === undefined ? {} : { status: error.status })
        })
      ),
      Stream.tapError((error) =>
        Effect.logWarning("chat model stream failed").pipe(
          Effect.annotateLogs({ provider: options.provider, reason: error.reason, retryable: error.retryable, error: error.message })
        )
      )
    )
  }))
