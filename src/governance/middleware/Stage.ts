/**
 * `stage`: narrows what may run for a stage of the work (the tools allowed,
 * the most severe access). The current stage's rules are a `Context.Reference`;
 * a stage layer intersects its own rules with the surrounding ones and provides
 * the result to the rest of the chain, so a stage can only tighten what
 * surrounds it, never widen it. A call outside the stage is refused with status
 * `scope_violation` (a reserved audit status, see docs/middleware.md), naming the
 * stage. `Policy` reads the stage too. (It is `stage`, not "scope": a scope is an
 * Effect word.)
 */
import { Context, Effect } from "effect"
import type { Middleware } from "../../runtime/Middleware.ts"
import * as Safety from "../../contract/Safety.ts"
import { PolicyBlocked } from "../../contract/ToolError.ts"
import * as AuditTrail from "./AuditTrail.ts"

/** The rules a call runs under: the stages it is in and their intersection. */
export interface Scope {
  /** Stage names, outermost first. */
  readonly stages: ReadonlyArray<string>
  /** Canonical tool names allowed; `undefined`: any tool. */
  readonly allowedTools?: ReadonlyArray<string>
  /** The most severe access allowed; `undefined`: any. */
  readonly maxAccess?: Safety.Access
}

/** The current rules; `undefined` outside every `stage` layer. */
export const Current = Context.Reference<Scope | undefined>("tinyagents/middleware/Stage", {
  defaultValue: () => undefined
})

export interface Options {
  /** The stage's name, shown in audits (`audit.scope.stage`) and messages. */
  readonly name: string
  readonly allowedTools?: ReadonlyArray<string>
  readonly maxAccess?: Safety.Access
  /** Violations are repairable (default) or fatal. */
  readonly repair?: boolean
}

/**
 * The tightest of access ceilings (`undefined`: no ceiling), or `undefined` when none is set. The one
 * rule for combining ceilings: nested stages here, the run's and the stages' ceilings in `Policy`.
 */
export const tightest = (ceilings: ReadonlyArray<Safety.Access | undefined>): Safety.Access | undefined => {
  let ceiling: Safety.Access | undefined
  for (const level of ceilings) {
    if (level !== undefined && (ceiling === undefined || !Safety.isWithin(ceiling, level))) ceiling = level
  }
  return ceiling
}

/** The intersection of `outer` with a stage's own rules: never wider than `outer`. */
export const narrow = (outer: Scope | undefined, inner: Options): Scope => {
  const allowedTools = outer?.allowedTools === undefined
    ? inner.allowedTools
    : inner.allowedTools === undefined
    ? outer.allowedTools
    : outer.allowedTools.filter((name) => inner.allowedTools!.includes(name))
  const maxAccess = tightest([outer?.maxAccess, inner.maxAccess])
  return {
    stages: [...(outer?.stages ?? []), inner.name],
    ...(allowedTools === undefined ? {} : { allowedTools }),
    ...(maxAccess === undefined ? {} : { maxAccess })
  }
}

/** The stage path of a scope, as shown in audits and messages (`"plan/research"`). */
export const stageOf = (scope: Scope): string => scope.stages.join("/")

/** Runs the rest of the chain under the stage's narrowed rules; refuses calls outside them. */
export const stage = (options: Options): Middleware =>
  AuditTrail.make("stage", (invocation, next, recorder) =>
    Effect.gen(function*() {
      const scope = narrow(yield* Current, options)
      const stage = stageOf(scope)
      yield* recorder.annotate({
        scope: {
          stage,
          ...(scope.allowedTools === undefined ? {} : { allowedTools: scope.allowedTools }),
          ...(scope.maxAccess === undefined ? {} : { maxAccess: scope.maxAccess })
        }
      })
      const { name, safety } = invocation.spec
      const access = Safety.accessOf(safety)
      const reason = scope.allowedTools !== undefined && !scope.allowedTools.includes(name)
        ? `stage ${JSON.stringify(stage)} does not allow tool ${name}; allowed: ${
          scope.allowedTools.length === 0 ? "(none)" : scope.allowedTools.join(", ")
        }`
        : scope.maxAccess !== undefined && !Safety.isWithin(access, scope.maxAccess)
        ? `stage ${JSON.stringify(stage)} allows side effects up to ${scope.maxAccess}; ${name} is ${access}`
        : undefined
      if (reason !== undefined) {
        return yield* AuditTrail.refuse(
          invocation,
          new PolicyBlocked({ toolName: name, reason, status: "scope_violation", repairable: options.repair ?? true })
        )
      }
      return yield* Effect.provideService(next(invocation), Current, scope)
    }))
