/**
 * `timeout`: watches wall-clock time per call against a budget and marks
 * breaches in the audit (layer status `timeout`, with the elapsed time). It
 * does not cancel anything: the executor enforces each tool's own timeout;
 * this layer lets outer layers and readers of the audit see slow calls.
 */
import { Clock, Duration, Effect } from "effect"
import type { Middleware } from "../Middleware.ts"
import * as AuditTrail from "./AuditTrail.ts"

export interface Options {
  /** The budget per call. */
  readonly max: Duration.Input
  /** Budgets by canonical tool name, overriding `max`. */
  readonly perTool?: Readonly<Record<string, Duration.Input>>
}

/** Marks calls that take longer than their budget with status `timeout`. */
export const timeout = (options: Options): Middleware => {
  const max = Duration.toMillis(Duration.fromInputUnsafe(options.max))
  const budgets = new Map(
    Object.entries(options.perTool ?? {}).map(([name, d]) => [name, Duration.toMillis(Duration.fromInputUnsafe(d))])
  )
  return AuditTrail.make("timeout", (invocation, next, recorder) =>
    Effect.gen(function*() {
      const budget = budgets.get(invocation.spec.name) ?? max
      const startedAt = yield* Clock.currentTimeMillis
      const exit = yield* Effect.exit(next(invocation))
      const elapsed = (yield* Clock.currentTimeMillis) - startedAt
      if (elapsed > budget) {
        yield* recorder.mark("timeout", `${invocation.spec.name} took ${elapsed} ms, over its ${budget} ms budget`)
        yield* recorder.annotate({ metadata: { timeout: { budgetMillis: budget, elapsedMillis: elapsed } } })
      }
      return yield* exit
    }))
}
