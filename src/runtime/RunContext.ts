/**
 * The run a tool call belongs to: thread id, run id, turn number and the
 * application's user context. A hidden service: handlers read it with
 * `yield* RunContext`; it never appears in a model-visible schema.
 */
import { Context, Effect, Layer } from "effect"

export interface RunInfo {
  readonly threadId: string
  readonly runId: string
  /** Agent turn, from 0; `0` outside an agent loop. */
  readonly turn: number
  /** Whatever the application wants handlers to see (user id, tenant, ...). */
  readonly user?: unknown
}

export class RunContext extends Context.Service<RunContext, RunInfo>()("tinyagents/RunContext") {
  /** A layer with fixed values. */
  static readonly layer = (info: RunInfo): Layer.Layer<RunContext> => Layer.succeed(RunContext, info)
}

/** A layer with fixed values (the same as `RunContext.layer`). */
export const layer: (info: RunInfo) => Layer.Layer<RunContext> = RunContext.layer

/** Runs `effect` with `turn` as the current turn. */
export const withTurn = (turn: number) => <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R | RunContext> =>
  RunContext.use((info) => Effect.provideService(effect, RunContext, { ...info, turn }))
