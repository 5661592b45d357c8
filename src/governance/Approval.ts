/**
 * The approval service: asked before a call that needs a person's (or a
 * rule's) consent, it answers approve, deny (with a reason) or edit (new
 * arguments, which the asker re-validates). Layers: a function and ordered
 * rules (automatic); the interactive terminal prompt is `TerminalApproval`
 * (in `tinyagents/middleware`). It does not decide which calls need approval:
 * the `consent` middleware and `Policy` do.
 */
import { Context, Effect, Layer } from "effect"
import type { ToolSpec } from "../contract/Tool.ts"

/** What the approver is asked about. */
export interface Request {
  readonly toolName: string
  readonly callId: string
  /** The decoded arguments the handler would receive. */
  readonly arguments: unknown
  readonly spec: ToolSpec
  /** Why approval is needed ("requires confirmation", "mutate tool", ...). */
  readonly why: string
}

/** The approver's answer; `decidedBy` names who or what decided. */
export type Decision =
  | { readonly _tag: "Approve"; readonly decidedBy: string }
  | { readonly _tag: "Deny"; readonly reason: string; readonly decidedBy: string }
  | { readonly _tag: "Edit"; readonly arguments: unknown; readonly decidedBy: string }

/** Run the call as asked. */
export const approve = (decidedBy = "auto"): Decision => ({ _tag: "Approve", decidedBy })

/** Refuse the call; the model reads `reason`. */
export const deny = (reason: string, decidedBy = "auto"): Decision => ({ _tag: "Deny", reason, decidedBy })

/** Run the call with these arguments instead (they are validated again). */
export const edit = (args: unknown, decidedBy = "auto"): Decision => ({ _tag: "Edit", arguments: args, decidedBy })

/** One rule of {@link Approval.layerRules}: the first rule whose `match` holds decides. */
export interface Rule {
  /** Recorded as `decidedBy: "rule:<name>"`. Default: the rule's index. */
  readonly name?: string
  readonly match: (request: Request) => boolean
  readonly decide: "approve" | "deny" | ((request: Request) => Decision)
  /** The reason given for `"deny"`. */
  readonly reason?: string
}

export class Approval extends Context.Service<Approval, {
  readonly decide: (request: Request) => Effect.Effect<Decision>
}>()("tinyagents/Approval") {
  /** Decides with a function. */
  static readonly layer = (decide: (request: Request) => Effect.Effect<Decision>): Layer.Layer<Approval> =>
    Layer.succeed(Approval, { decide })

  /** Decides by the first matching rule; with no match, `otherwise` (default: deny). */
  static readonly layerRules = (
    rules: ReadonlyArray<Rule>,
    otherwise: (request: Request) => Decision = () => deny("no approval rule matched this call", "rules")
  ): Layer.Layer<Approval> => Layer.succeed(Approval, { decide: (request) => Effect.sync(() => byRules(rules, otherwise, request)) })
}

/** Decides with a function (the same as `Approval.layer`). */
export const layer: (decide: (request: Request) => Effect.Effect<Decision>) => Layer.Layer<Approval> = Approval.layer

/** Decides by rules (the same as `Approval.layerRules`). */
export const layerRules: (
  rules: ReadonlyArray<Rule>,
  otherwise?: (request: Request) => Decision
) => Layer.Layer<Approval> = Approval.layerRules

const byRules = (rules: ReadonlyArray<Rule>, otherwise: (request: Request) => Decision, request: Request): Decision => {
  for (const [index, rule] of rules.entries()) {
    if (!rule.match(request)) continue
    const by = `rule:${rule.name ?? index}`
    if (rule.decide === "approve") return approve(by)
    if (rule.decide === "deny") return deny(rule.reason ?? `refused by rule ${rule.name ?? index}`, by)
    return rule.decide(request)
  }
  return otherwise(request)
}
