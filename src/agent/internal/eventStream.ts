/**
 * A run as the `Stream` of the events it reports (`Agent.stream`, `Handoff.stream`): every event the
 * application's `EventSink` receives goes there first, then through a bounded buffer to the consumer
 * (a slow consumer slows the run, nothing is dropped). The stream ends when the run ends, or fails
 * as it fails. Ending the stream early stops the run (interrupted, then awaited).
 */
import { type Cause, Effect, Fiber, Queue, Stream } from "effect"
import { EventSink } from "../../runtime/EventSink.ts"
import type * as ToolEvent from "../../contract/ToolEvent.ts"

export const eventStream = <A, E, R>(
  run: Effect.Effect<A, E, R>,
  bufferSize: number | undefined
): Stream.Stream<ToolEvent.Event, E, R | EventSink> =>
  Stream.unwrap(Effect.gen(function*() {
    const sink = yield* EventSink
    const queue = yield* Queue.bounded<ToolEvent.Event, E | Cause.Done>(Math.max(1, bufferSize ?? 64))
    // The sink's own failure is passed on, for the executor to log.
    const tee = EventSink.of({
      emit: (event) =>
        Effect.flatMap(
          Effect.exit(Effect.suspend(() => sink.emit(event))),
          (exit) => Effect.andThen(Queue.offer(queue, event), exit)
        )
    })
    const fiber = yield* run.pipe(
      Effect.provideService(EventSink, tee),
      Effect.matchCauseEffect({
        onSuccess: () => Queue.end(queue),
        onFailure: (cause) => Queue.failCause(queue, cause)
      }),
      Effect.forkScoped
    )
    // The consumer is gone (or done). The run is told to stop before the buffer stops taking events:
    // once shut down, offers return at once, and a run of synchronous steps (a next agent's whole run)
    // would go on to its end before an interruption requested after it. The buffer then stops taking
    // events, so that the cancelled calls' terminal events never wait for the consumer; then the run is awaited.
    yield* Effect.addFinalizer(() =>
      Effect.suspend(() => {
        fiber.interruptUnsafe()
        return Effect.andThen(Queue.shutdown(queue), Fiber.await(fiber))
      })
    )
    return Stream.fromQueue(queue)
  }))
