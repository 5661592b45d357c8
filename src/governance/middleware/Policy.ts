/**
 * The safety policy: rules over each tool's declared safety metadata, checked
 * before the call runs. Shell and spend tools are disabled unless allowed;
 * filesystem tools must be confined to an allowed workspace root; the side
 * effect may not exceed the ceiling of the run or of the current stage (from
 * `stage`); and tools that require confirmation, mutate, or spend are routed
 * through the `Approval` service. Violations are `PolicyBlocked` with status
 * `policy_blocked`, repairable or fatal per `repair`. The decision is the pure
 * {@link check}; {@link middleware} applies it in a middleware stack.
 */
import * as path from "node:path"
import { Effect } from "effect"
import type { Approval } from "../Approval.ts"
import type { Middleware } from "../../runtime/Middleware.ts"
import * as AuditTrail from "./AuditTrail.ts"
import * as Consent from "./Consent.ts"
import * as Stage from "./Stage.ts"
import * as Safety from "../../contract/Safety.ts"
import type { ToolSpec } from "../../contract/Tool.ts"
import { PolicyBlocked } from "../../contract/ToolError.ts"

export interface Options {
  /** The most severe access allowed in the run. Default: any. */
  readonly maxAccess?: Safety.Access
  /** Ceilings by stage name (see `stage`); the tightest of the run's and every enclosing stage's applies. */
  readonly stages?: Readonly<Record<string, Safety.Access>>
  /** Tools with `shell: true` may run. Default `false`. */
  readonly allowShell?: boolean
  /** Tools with `spend: true` may run (after approval). Default `false`. */
  readonly allowSpend?: boolean
  readonly filesystem?: {
    /** Roots a filesystem tool's declared `workspaceRoot` must lie within. */
    readonly allowedRoots: ReadonlyArray<string>
    /**
     * A filesystem tool that declares no root (`filesystem: true`, confined at run
     * time, as the standard file tools are by `Workspace`). Default `"block"`.
     */
    readonly undeclared?: "allow" | "block"
  }
  /**
   * Ask `Approval` for tools that require confirmation, mutate or spend (`true`,
   * the default), or never (`false`: those tools run unasked).
   */
  readonly confirm?: boolean
  /** Violations are repairable (default: the model is told) or fatal (the run stops). */
  readonly repair?: boolean
}

/** The policy's verdict on one tool. */
export type Verdict =
  | { readonly _tag: "Allow" }
  | { readonly _tag: "Confirm"; readonly why: string }
  | { readonly _tag: "Block"; readonly reason: string }

const allow: Verdict = { _tag: "Allow" }
const block = (reason: string): Verdict => ({ _tag: "Block", reason })

const isInside = (root: string, candidate: string): boolean => {
  const relative = path.relative(path.resolve(root), path.resolve(candidate))
  return relative === "" || (relative !== ".." && !relative.startsWith(`..${path.sep}`) && !path.isAbsolute(relative))
}

/** The tightest of the run's ceiling and the ceilings of `stages` (outermost first), and who set it. */
const ceilingOf = (options: Options, stages: ReadonlyArray<string>): { level: Safety.Access; by: string } | undefined => {
  const ceilings = [
    { level: options.maxAccess, by: "the run" },
    ...stages.map((stage) => ({ level: options.stages?.[stage], by: `stage ${JSON.stringify(stage)}` }))
  ]
  const level = Stage.tightest(ceilings.map((ceiling) => ceiling.level))
  return level === undefined ? undefined : { level, by: ceilings.find((ceiling) => ceiling.level === level)!.by }
}

/** Decides about one tool under the stages of the current scope (outermost first). */
export const check = (options: Options, spec: ToolSpec, stages: ReadonlyArray<string> = []): Verdict => {
  const safety = spec.safety
  const effect = Safety.accessOf(safety)
  if (safety.shell === true && options.allowShell !== true) return block("shell tools are disabled by policy")
  if (safety.spend === true && options.allowSpend !== true) return block("tools that spend money are disabled by policy")
  if (safety.filesystem !== undefined && safety.filesystem !== false && options.filesystem !== undefined) {
    const root = safety.filesystem === true ? undefined : safety.filesystem.workspaceRoot
    const roots = options.filesystem.allowedRoots
    if (root === undefined) {
      if ((options.filesystem.undeclared ?? "block") === "block") {
        return block("filesystem tools must declare a workspace root inside the allowed roots")
      }
    } else if (!roots.some((allowed) => isInside(allowed, root))) {
      return block(`workspace root ${JSON.stringify(root)} is outside the allowed roots`)
    }
  }
  const ceiling = ceilingOf(options, stages)
  if (ceiling !== undefined && !Safety.isWithin(effect, ceiling.level)) {
    return block(`${ceiling.by} allows side effects up to ${ceiling.level}; this tool is ${effect}`)
  }
  if (options.confirm !== false) {
    if (safety.requiresConfirmation === true) return { _tag: "Confirm", why: "the tool requires confirmation" }
    if (safety.spend === true) return { _tag: "Confirm", why: "the tool spends money" }
    if (effect === "mutate") return { _tag: "Confirm", why: "the tool mutates state" }
  }
  return allow
}

/** The policy as a middleware (layer `policy`): blocks, asks `Approval`, or lets the call through. */
export const middleware = (options: Options = {}): Middleware<Approval> =>
  AuditTrail.make("policy", (invocation, next, recorder) =>
    Effect.gen(function*() {
      const scope = yield* Stage.Current
      const verdict = check(options, invocation.spec, scope?.stages ?? [])
      switch (verdict._tag) {
        case "Allow":
          return yield* next(invocation)
        case "Block":
          return yield* AuditTrail.refuse(
            invocation,
            new PolicyBlocked({
              toolName: invocation.spec.name,
              reason: verdict.reason,
              status: "policy_blocked",
              repairable: options.repair ?? true
            })
          )
        case "Confirm": {
          const out = yield* Consent.ask(invocation, verdict.why, recorder)
          return "spec" in out ? yield* next(out) : out
        }
      }
    }))
