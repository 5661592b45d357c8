/**
 * `rateLimit`: a time-window rate limit on tool calls: at most `maxCalls` per
 * window across all tools, and/or `perTool` per tool, counted across runs.
 * Built on `effect/persistence`'s `RateLimiter`, taken from context: the
 * store layer in force provides it (`tinyagents/stores`' SQLite and Postgres
 * layers, `tinyagents/stores/redis`), so every process sharing that database
 * shares the counts and together they never exceed a limit; {@link layerMemory}
 * counts in this process only. Calls over a limit short-circuit with a
 * repairable `PolicyBlocked` result, status `rate_limited`, or
 * (`onExceeded: "delay"`) wait for the window. When the limiter's store fails
 * (the database is unreachable), the call fails with `StoreFailed` (store
 * `"rate_limit"`, operation `"consume"`) and its handler does not run.
 *
 * It does not count calls per run: that is `Executor` `limits` (`run`,
 * `tool`, `perTool`), enforced at admission before any middleware runs. The
 * all-tools counter is consumed first: a call refused by its tool's limit
 * still counts against `maxCalls`.
 */
import { Duration, Effect, Layer } from "effect"
import { RateLimiter } from "effect/persistence"
import type { Middleware } from "../../runtime/Middleware.ts"
import { PolicyBlocked, StoreFailed } from "../../contract/ToolError.ts"
import * as AuditTrail from "./AuditTrail.ts"

export interface Options {
  /** The window the limits count over (a rate is calls per window). */
  readonly window: Duration.Input
  /** Calls allowed per window across all tools. */
  readonly maxCalls?: number
  /** Calls allowed per window per tool: one number for every tool, or by canonical name. */
  readonly perTool?: number | Readonly<Record<string, number>>
  /** `refuse` (default): a repairable `rate_limited` refusal; `delay`: wait until the window has room. */
  readonly onExceeded?: "refuse" | "delay"
  /** `fixed-window` (default) or `token-bucket` (refills continuously over the window). */
  readonly algorithm?: "fixed-window" | "token-bucket"
  /** Prefix of the limiter keys, to keep two limiters apart. Default `"rate_limit"`. */
  readonly key?: string
}

/** An in-memory `RateLimiter`: counts in this process only (the store layers provide shared ones). */
export const layerMemory: Layer.Layer<RateLimiter.RateLimiter> = RateLimiter.layer.pipe(
  Layer.provide(RateLimiter.layerStoreMemory)
)

/**
 * Allows at most `maxCalls` calls per `window` (and `perTool` per tool); refuses or delays the rest.
 * Needs a `RateLimiter.RateLimiter`: the store layer in force, or {@link layerMemory}.
 */
export const rateLimit = (options: Options): Middleware<RateLimiter.RateLimiter> => {
  const window = Duration.fromInputUnsafe(options.window)
  const per = Duration.format(window)
  const prefix = options.key ?? "rate_limit"
  const delay = options.onExceeded === "delay"
  const algorithm = options.algorithm ?? "fixed-window"
  const toolLimit = (name: string): number | undefined =>
    typeof options.perTool === "number" ? options.perTool : options.perTool?.[name]
  return AuditTrail.make("rate_limit", (invocation, next) =>
    Effect.gen(function*() {
      const limiter = yield* RateLimiter.RateLimiter
      const name = invocation.spec.name
      /** `true` when the call may go ahead (after the limiter's delay, in `delay` mode). */
      const consume = (key: string, limit: number) =>
        limiter.consume({ key, limit, window, algorithm, onExceeded: delay ? "delay" : "fail" }).pipe(
          Effect.flatMap((result) => Duration.isZero(result.delay) ? Effect.succeed(true) : Effect.as(Effect.sleep(result.delay), true)),
          Effect.catchTag("RateLimiterError", (error) =>
            error.reason._tag === "RateLimitExceeded"
              ? Effect.succeed(false)
              : Effect.fail(new StoreFailed({ store: "rate_limit", operation: "consume", cause: error.reason.cause })))
        )
      const refuse = (reason: string) =>
        AuditTrail.refuse(invocation, new PolicyBlocked({ toolName: name, reason, status: "rate_limited", repairable: true }))
      if (options.maxCalls !== undefined && !(yield* consume(prefix, options.maxCalls))) {
        return yield* refuse(`the rate limit of ${options.maxCalls} tool calls per ${per} is reached; try again later`)
      }
      const limit = toolLimit(name)
      if (limit !== undefined && !(yield* consume(`${prefix}/${name}`, limit))) {
        return yield* refuse(`the rate limit of ${limit} calls to this tool per ${per} is reached; try again later`)
      }
      return yield* next(invocation)
    }))
}
