/**
 * `scoped`: narrows what may run for a stage of the work (the tools allowed,
 * the most severe side effect). The current scope is a `Context.Reference`;
 * a scoped layer intersects its own rules with the surrounding scope and
 * provides the result to the rest of the chain, so a stage can only tighten
 * what surrounds it, never widen it. A call outside the scope is refused with
 * status `scope_violation`, naming the stage. `Policy` reads the stage too.
 */
import { Context, Effect } from "effect"
import type { Middleware } from "../Middleware.ts"
import * as Safety from "../Safety.ts"
import { PolicyBlocked } from "../ToolError.ts"
import * as AuditTrail from "./AuditTrail.ts"

/** The scope a call runs under. */
export interface Scope {
  /** Stage names, outermost first. */
  readonly stages: ReadonlyArray<string>
  /** Canonical tool names allowed; `undefined`: any tool. */
  readonly allowedTools?: ReadonlyArray<string>
  /** The most severe side effect allowed; `undefined`: any. */
  readonly maxEffect?: Safety.Effect
}

/** The current scope; `undefined` outside every `scoped` layer. */
export const Current = Context.Reference<Scope | undefined>("tinyagents/middleware/Scope", {
  defaultValue: () => undefined
})

export interface Options {
  readonly stage: string
  readonly allowedTools?: ReadonlyArray<string>
  readonly maxEffect?: Safety.Effect
  /** Violations are repairable (default) or fatal. */
  readonly repair?: boolean
}

/** The intersection of `outer` with a stage's own rules: never wider than `outer`. */
export const narrow = (outer: Scope | undefined, inner: Options): Scope => {
  const allowedTools = outer?.allowedTools === undefined
    ? inner.allowedTools
    : inner.allowedTools === undefined
    ? outer.allowedTools
    : outer.allowedTools.filter((name) => inner.allowedTools!.includes(name))
  const levels = [outer?.maxEffect, inner.maxEffect].filter((e): e is Safety.Effect => e !== undefined)
  const maxEffect = levels.length === 0
    ? undefined
    : levels.reduce((a, b) => Safety.isWithin(a, b) ? a : b)
  return {
    stages: [...(outer?.stages ?? []), inner.stage],
    ...(allowedTools === undefined ? {} : { allowedTools }),
    ...(maxEffect === undefined ? {} : { maxEffect })
  }
}

/** The stage path of a scope, as shown in audits and messages (`"plan/research"`). */
export const stageOf = (scope: Scope): string => scope.stages.join("/")

/** Runs the rest of the chain under a narrowed scope; refuses calls outside it. */
export const scoped = (options: Options): Middleware =>
  AuditTrail.make("scoped", (invocation, next, recorder) =>
    Effect.gen(function*() {
      const scope = narrow(yield* Current, options)
      const stage = stageOf(scope)
      yield* recorder.annotate({
        scope: {
          stage,
          ...(scope.allowedTools === undefined ? {} : { allowedTools: scope.allowedTools }),
          ...(scope.maxEffect === undefined ? {} : { maxEffect: scope.maxEffect })
        }
      })
      const { name, safety } = invocation.spec
      const effect = Safety.effectOf(safety)
      const reason = scope.allowedTools !== undefined && !scope.allowedTools.includes(name)
        ? `stage ${JSON.stringify(stage)} does not allow tool ${name}; allowed: ${
          scope.allowedTools.length === 0 ? "(none)" : scope.allowedTools.join(", ")
        }`
        : scope.maxEffect !== undefined && !Safety.isWithin(effect, scope.maxEffect)
        ? `stage ${JSON.stringify(stage)} allows side effects up to ${scope.maxEffect}; ${name} is ${effect}`
        : undefined
      if (reason !== undefined) {
        return yield* AuditTrail.refuse(
          invocation,
          new PolicyBlocked({ toolName: name, reason, status: "scope_violation", repairable: options.repair ?? true })
        )
      }
      return yield* Effect.provideService(next(invocation), Current, scope)
    }))
