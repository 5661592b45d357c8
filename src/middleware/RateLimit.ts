/**
 * `rateLimit`: caps calls per run, and optionally per tool, over a window (or
 * the whole run). Built on `effect/persistence`'s `RateLimiter` (fixed
 * window, fail when exceeded), so counters can live in memory
 * ({@link layerMemory}) or in a store shared between processes (Redis).
 * Counters are keyed by run id. Calls over a limit short-circuit with a
 * repairable `PolicyBlocked` result, status `rate_limited`. The run counter is
 * consumed first: a call refused by its tool's limit still counts for the run.
 */
import { Duration, Effect, Layer } from "effect"
import { RateLimiter } from "effect/persistence"
import type { Middleware } from "../Middleware.ts"
import { RunContext } from "../RunContext.ts"
import { PolicyBlocked } from "../ToolError.ts"
import * as AuditTrail from "./AuditTrail.ts"

export interface Options {
  /** Calls allowed per run (per window, when one is given). */
  readonly maxCalls: number
  /** Calls allowed per tool: one number for every tool, or by canonical name. */
  readonly perTool?: number | Readonly<Record<string, number>>
  /** The window the limits apply to. Default: the whole run. */
  readonly window?: Duration.Input
  /** Prefix of the limiter keys, to keep two limiters apart. Default `"rate_limit"`. */
  readonly key?: string
}

/** An in-memory `RateLimiter` (one process). */
export const layerMemory: Layer.Layer<RateLimiter.RateLimiter> = RateLimiter.layer.pipe(
  Layer.provide(RateLimiter.layerStoreMemory)
)

/** Refuses calls beyond `maxCalls` per run (and `perTool` per tool) with status `rate_limited`. */
export const rateLimit = (options: Options): Middleware<RateLimiter.RateLimiter | RunContext> => {
  const window = options.window ?? Duration.infinity
  const prefix = options.key ?? "rate_limit"
  const toolLimit = (name: string): number | undefined =>
    typeof options.perTool === "number" ? options.perTool : options.perTool?.[name]
  return AuditTrail.make("rate_limit", (invocation, next) =>
    Effect.gen(function*() {
      const limiter = yield* RateLimiter.RateLimiter
      const { runId } = yield* RunContext
      const name = invocation.spec.name
      const consume = (key: string, limit: number) =>
        Effect.as(limiter.consume({ key, limit, window, onExceeded: "fail" }), true).pipe(
          Effect.catchTag("RateLimiterError", (error) =>
            error.reason._tag === "RateLimitExceeded" ? Effect.succeed(false) : Effect.die(error))
        )
      const refuse = (reason: string) =>
        AuditTrail.refuse(invocation, new PolicyBlocked({ toolName: name, reason, status: "rate_limited", repairable: true }))
      const per = options.window === undefined ? "run" : `window of ${Duration.format(Duration.fromInputUnsafe(window))}`
      if (!(yield* consume(`${prefix}/${runId}`, options.maxCalls))) {
        return yield* refuse(`the limit of ${options.maxCalls} tool calls per ${per} is reached; do not call more tools`)
      }
      const limit = toolLimit(name)
      if (limit !== undefined && !(yield* consume(`${prefix}/${runId}/${name}`, limit))) {
        return yield* refuse(`the limit of ${limit} calls to this tool per ${per} is reached; do not call it again`)
      }
      return yield* next(invocation)
    }))
}
