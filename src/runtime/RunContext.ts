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
  /** Set for a run nested in a tool call (an agent used as a tool, `AgentTool`); absent at the top. */
  readonly nesting?: Nesting
}

/** Where a nested run sits: the call that runs it, and its depth. Its events carry the three fields. */
export interface Nesting {
  /** The run whose tool call runs this one. */
  readonly parentRunId: string
  /** That tool call's id. */
  readonly parentCallId: string
  /** 1 for a run nested in a top-level run's call, 2 below that, ... */
  readonly depth: number
}

/** What {@link RunContext.layer} takes: a `RunInfo` whose `turn` may be left out (then `0`). */
export interface LayerInfo extends Omit<RunInfo, "turn"> {
  readonly turn?: number
}

export class RunContext extends Context.Service<RunContext, RunInfo>()("tinyagents/RunContext") {
  /** A layer with fixed values; `turn` defaults to `0` (an agent loop sets it per turn). */
  static readonly layer = (info: LayerInfo): Layer.Layer<RunContext> =>
    Layer.succeed(RunContext, { ...info, turn: info.turn ?? 0 })
}

/** A layer with fixed values (the same as `RunContext.layer`). */
export const layer: (info: LayerInfo) => Layer.Layer<RunContext> = RunContext.layer

/** Runs `effect` with `turn` as the current turn. */
export const withTurn = (turn: number) => <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R | RunContext> =>
  RunContext.use((info) => Effect.provideService(effect, RunContext, { ...info, turn }))
