/**
 * Where lifecycle events go. A hidden service with one operation, `emit`.
 * Layers: an in-memory collector (tests; read it back with `EventLog`), a
 * `PubSub`-backed stream (live consumers; subscribe with `EventStream`), a
 * callback (plain or Effect-returning), and a JSON-lines file (`layerJsonl`; read it back with
 * `readJsonl`).
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
import { Context, Effect, FileSystem, Layer, type PlatformError, PubSub, Semaphore, Stream } from "effect"
import * as ToolEvent from "../contract/ToolEvent.ts"

type Event = ToolEvent.Event

/** Options of {@link EventSink.layerJsonl}. */
export interface JsonlOptions {
  /** Flush each line to the disk (`fsync`) before `emit` completes. Default `false`. */
  readonly sync?: boolean
}

export interface EventSinkShape {
  /**
   * Delivers one event. The executor calls it when the event's turn comes and runs what it returns at
   * once, once: a synchronous sink may do its work in `emit` itself and answer a completed `Exit`
   * (`Effect.void`), which the executor takes as delivered without a step of the Effect runtime (the
   * memory and callback layers do; with a callback that returns an Effect, that Effect is the rest).
   */
  readonly emit: (event: Event) => Effect.Effect<void>
}

export class EventSink extends Context.Service<EventSink, EventSinkShape>()("tinyagents/EventSink") {
  /** Drops every event. */
  static readonly layerDiscard: Layer.Layer<EventSink> = Layer.succeed(EventSink, { emit: () => Effect.void })

  /**
   * Calls `f` for each event, in emit order. When `f` returns an Effect, `emit`
   * runs it (the layer then needs its services); a failure of that Effect is a
   * failure of the sink (the executor logs it and drops the event). Any other
   * return value is ignored.
   */
  static readonly layerCallback = <Ret>(f: (event: Event) => Ret): Layer.Layer<EventSink, never, Effect.Services<Ret>> =>
    Layer.effect(
      EventSink,
      Effect.map(Effect.context<Effect.Services<Ret>>(), (context) =>
        EventSink.of({
          emit: (event) => {
            let returned: Ret
            try {
              returned = f(event)
            } catch (defect) {
              return Effect.die(defect)
            }
            if (!Effect.isEffect(returned)) return Effect.void
            const effect = returned as Effect.Effect<unknown, unknown, Effect.Services<Ret>>
            return Effect.orDie(Effect.asVoid(Effect.provideContext(effect, context)))
          }
        }))
    )

  /** Keeps every event in memory; read them with `EventLog`. */
  static readonly layerMemory: Layer.Layer<EventSink | EventLog> = Layer.effectContext(Effect.sync(() => {
    const events: Array<Event> = []
    return Context.make(EventSink, {
      emit: (event) => {
        events.push(event)
        return Effect.void
      }
    }).pipe(
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

  /**
   * Appends each event to the file at `path` as one line of JSON (its encoded
   * form, `ToolEvent.encodeJson`), through `FileSystem`; read it back with
   * `readJsonl`. The file is opened for appending when the layer is built
   * (created if missing, never truncated) and closed with it. Lines are
   * written whole, one at a time, in emit order, even when several runs share
   * the layer; `emit` completes once its line is written (and, with
   * `sync: true`, flushed to the disk), so the file holds every event whose
   * `emit` completed, in order. A write that fails is a defect of the sink
   * (the executor logs it and drops that event).
   */
  static readonly layerJsonl = (
    path: string,
    options: JsonlOptions = {}
  ): Layer.Layer<EventSink, PlatformError.PlatformError, FileSystem.FileSystem> =>
    Layer.effect(
      EventSink,
      Effect.gen(function*() {
        const fs = yield* FileSystem.FileSystem
        const file = yield* fs.open(path, { flag: "a" })
        const lock = yield* Semaphore.make(1)
        const encoder = new TextEncoder()
        const write = (line: string) =>
          options.sync === true
            ? Effect.andThen(file.writeAll(encoder.encode(line)), file.sync)
            : file.writeAll(encoder.encode(line))
        return EventSink.of({
          emit: (event) =>
            ToolEvent.encodeJson(event).pipe(
              Effect.flatMap((json) => lock.withPermit(Effect.orDie(write(`${json}\n`)))),
              Effect.uninterruptible
            )
        })
      })
    )
}

/**
 * Reads a JSON-lines event log (as `EventSink.layerJsonl` writes it) back
 * into events, equal to the ones emitted (see `ToolEvent` for what encoding
 * keeps); `ToolEvent.decodeJsonl` for the rules on bad lines.
 */
export const readJsonl = (
  path: string
): Effect.Effect<ReadonlyArray<Event>, PlatformError.PlatformError | ToolEvent.MalformedEventLine, FileSystem.FileSystem> =>
  Effect.flatMap(FileSystem.FileSystem, (fs) => Effect.flatMap(fs.readFileString(path), ToolEvent.decodeJsonl))

/** Drops every event (the same as `EventSink.layerDiscard`). */
export const layerDiscard: Layer.Layer<EventSink> = EventSink.layerDiscard

/** Calls `f` for each event, running an Effect it returns (the same as `EventSink.layerCallback`). */
export const layerCallback: <Ret>(f: (event: Event) => Ret) => Layer.Layer<EventSink, never, Effect.Services<Ret>> =
  EventSink.layerCallback

/** Keeps every event in memory, read back with `EventLog` (the same as `EventSink.layerMemory`). */
export const layerMemory: Layer.Layer<EventSink | EventLog> = EventSink.layerMemory

/** Publishes every event to a `PubSub`, subscribed with `EventStream` (the same as `EventSink.layerPubSub`). */
export const layerPubSub: Layer.Layer<EventSink | EventStream> = EventSink.layerPubSub

/** Appends every event to a JSON-lines file (the same as `EventSink.layerJsonl`). */
export const layerJsonl: (
  path: string,
  options?: JsonlOptions
) => Layer.Layer<EventSink, PlatformError.PlatformError, FileSystem.FileSystem> = EventSink.layerJsonl

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
