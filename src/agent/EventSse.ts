/**
 * A run's events as plain server-sent events, for any front-end (no AI SDK needed): each event one
 * SSE message (`data: <JSON>`), encoded with the events' JSON codec (`ToolEvent.EventJson`), so a
 * client decodes each message back with the same Schema ({@link MessageJson}). A failed run ends
 * with a `run.failed` message (its text only). Failed calls' causes (a defect's message and stack)
 * are left out unless asked for. Every message is a default `message` event, so
 * `EventSource.onmessage` reads them all. The AI SDK's own protocol (`useChat`) is in
 * `tinyagents/ai-sdk`.
 */
import { Cause, Effect, Schema, Stream } from "effect"
import * as ToolEvent from "../contract/ToolEvent.ts"

/** The last message of a failed run: what went wrong, as the `onError` option renders it. */
export const RunFailed = Schema.TaggedStruct("run.failed", { message: Schema.String })
export type RunFailed = typeof RunFailed.Type

/** The schema of one SSE message's data: an event, or the run's failure. */
export const Message = Schema.Union([ToolEvent.Event, RunFailed]).pipe(Schema.toTaggedUnion("_tag"))
export type Message = typeof Message.Type

/** The JSON codec of a message (`Schema.decodeUnknownEffect(Schema.fromJsonString(MessageJson))(data)`). */
export const MessageJson = Schema.toCodecJson(Message)

const encode = Schema.encodeEffect(MessageJson)

/** What stands for a cause left out: the text its `Cause` decodes from. */
export const causeOmitted = "(cause omitted)"

/**
 * Leaves out what only the application may read: a failed call's `cause` and an error's cause text
 * (a defect's message and stack), which the encoded form carries for logs. The error's
 * model-facing message stays; the result still decodes (an error's cause becomes {@link causeOmitted}).
 */
const withoutCauses = (encoded: unknown): unknown => {
  if (typeof encoded !== "object" || encoded === null) return encoded
  const { cause: _, ...rest } = encoded as Record<string, unknown>
  const error = rest["error"]
  if (typeof error === "object" && error !== null && "cause" in error) {
    rest["error"] = { ...error, cause: causeOmitted }
  }
  return rest
}

/** Headers of an SSE response. */
export const headers: Readonly<Record<string, string>> = {
  "content-type": "text/event-stream",
  "cache-control": "no-cache",
  connection: "keep-alive",
  "x-accel-buffering": "no"
}

/** Options of {@link frames}. */
export interface Options<E> {
  /** The text of the `run.failed` message. Default: the error's `message`. */
  readonly onError?: (error: E) => string
  /**
   * Whether failed calls' causes (a defect's message and stack) are sent. Default false: a browser is
   * not the application, and the cause is never shown to a model either.
   */
  readonly causes?: boolean
}

const frameWith = (causes: boolean) => (message: Message): Effect.Effect<string> =>
  Effect.map(
    Effect.orDie(encode(message)),
    (json) => `data: ${JSON.stringify(causes ? json : withoutCauses(json))}\n\n`
  )

/** The SSE frames of a run's events (text); the stream never fails: a failure becomes `run.failed`. */
export const frames = <E, R>(
  events: Stream.Stream<ToolEvent.Event, E, R>,
  options: Options<E> = {}
): Stream.Stream<string, never, R> =>
  Stream.suspend(() => {
    const frame = frameWith(options.causes === true)
    const onError = options.onError ?? ((error: E) => error instanceof Error ? error.message : "the agent run failed")
    return events.pipe(
      Stream.mapEffect(frame),
      Stream.catchCause((cause) => {
        if (Cause.hasInterruptsOnly(cause)) return Stream.failCause(cause as Cause.Cause<never>)
        const found = Cause.findError(cause)
        const message = found._tag === "Success" ? onError(found.success) : "internal error in the agent run"
        return Stream.fromEffect(frame({ _tag: "run.failed", message }))
      })
    )
  })

/** Options of {@link toResponse}: SSE options, and the response's status and extra headers. */
export interface ResponseOptions<E> extends Options<E> {
  readonly status?: number
  readonly statusText?: string
  readonly headers?: Record<string, string>
}

/** A run's events as an SSE `Response` (a web route handler's answer): {@link frames} as its body. */
export const toResponse = <E, R>(
  events: Stream.Stream<ToolEvent.Event, E, R>,
  options: ResponseOptions<E> = {}
): Effect.Effect<Response, never, R> =>
  Effect.map(
    Stream.toReadableStreamEffect(Stream.encodeText(frames(events, options))),
    (body) =>
      new Response(body, {
        ...(options.status === undefined ? {} : { status: options.status }),
        ...(options.statusText === undefined ? {} : { statusText: options.statusText }),
        headers: { ...headers, ...options.headers }
      })
  )
