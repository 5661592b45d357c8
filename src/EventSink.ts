/**
 * Where lifecycle events go. A hidden service with one operation, `emit`.
 * Layers: an in-memory collector (tests; read it back with `EventLog`), a
 * `PubSub`-backed stream (live consumers; subscribe with `EventStream`), and a
 * callback.
 *
 * How the executor uses a sink: one event at a time, in sequence order, waiting
 * for `emit` to complete before offering the next (so `emit` may suspend: a
 * queue, a network exporter); an `emit` in progress is never interrupted, so a
 * sink that never completes holds the run. A sink that fails (a defect, a
 * synchronous throw, an interruption of its own) never fails the call that
 * emits: the failure is logged at `Warn` with the event's tag and sequence, the
 * event is dropped, its sequence number is not reused, and the next event is
 * offered as usual.
 */
import { Context, Effect, Layer, PubSub, Stream } from "effect"
import type { Event } from "./ToolEvent.ts"

export interface EventSinkShape {
  readonly emit: (event: Event) => Effect.Effect<void>
}

export class EventSink extends Context.Service<EventSink, EventSinkShape>()("tinyagents/EventSink") {
  /** Drops every event. */
  static readonly layerDiscard: Layer.Layer<EventSink> = Layer.succeed(EventSink, { emit: () => Effect.void })

  /** Calls `f` for each event (synchronously, in emit order). */
  static readonly layerCallback = (f: (event: Event) => void): Layer.Layer<EventSink> =>
    Layer.succeed(EventSink, { emit: (event) => Effect.sync(() => f(event)) })

  /** Keeps every event in memory; read them with `EventLog`. */
  static readonly layerMemory: Layer.Layer<EventSink | EventLog> = Layer.effectContext(Effect.sync(() => {
    const events: Array<Event> = []
    return Context.make(EventSink, { emit: (event) => Effect.sync(() => void events.push(event)) }).pipe(
      Context.add(EventLog, {
        all: Effect.sync(() => events.slice()),
        clear: Effect.sync(() => void events.splice(0))
      })
    )
  }))

  /** Publishes every event to an unbounded `PubSub`; subscribe with `EventStream`. */
  static readonly layerPubSub: Layer.Layer<EventSink | EventStream> = Layer.effectContext(Effect.gen(function*() {
    const pubsub = yield* PubSub.unbounded<Event>()
    yield* Effect.addFinalizer(() => PubSub.shutdown(pubsub))
    return Context.make(EventSink, { emit: (event) => Effect.asVoid(PubSub.publish(pubsub, event)) }).pipe(
      Context.add(EventStream, { stream: Stream.fromPubSub(pubsub) })
    )
  }))
}

/** Drops every event (the same as `EventSink.layerDiscard`). */
export const layerDiscard: Layer.Layer<EventSink> = EventSink.layerDiscard

/** Calls `f` for each event (the same as `EventSink.layerCallback`). */
export const layerCallback: (f: (event: Event) => void) => Layer.Layer<EventSink> = EventSink.layerCallback

/** Keeps every event in memory, read back with `EventLog` (the same as `EventSink.layerMemory`). */
export const layerMemory: Layer.Layer<EventSink | EventLog> = EventSink.layerMemory

/** Publishes every event to a `PubSub`, subscribed with `EventStream` (the same as `EventSink.layerPubSub`). */
export const layerPubSub: Layer.Layer<EventSink | EventStream> = EventSink.layerPubSub

/** The events collected by `EventSink.layerMemory`. */
export class EventLog extends Context.Service<EventLog, {
  /** Every event so far, in emit order. */
  readonly all: Effect.Effect<ReadonlyArray<Event>>
  readonly clear: Effect.Effect<void>
}>()("tinyagents/EventLog") {}

/** The live stream of `EventSink.layerPubSub`. Subscribers see events emitted after they subscribe. */
export class EventStream extends Context.Service<EventStream, {
  readonly stream: Stream.Stream<Event>
}>()("tinyagents/EventStream") {}

/** Emits one event to the current sink. */
export const emit = (event: Event): Effect.Effect<void, never, EventSink> => EventSink.use((sink) => sink.emit(event))
