/**
 * The approval service: asked before a call that needs a person's (or a
 * rule's) consent, it answers approve, deny (with a reason) or edit (new
 * arguments, which the asker re-validates). Layers: a function, ordered rules
 * (automatic), and an interactive terminal prompt that answers by a fallback
 * rule, and says so, when stdin is not a terminal. It does not decide which
 * calls need approval: the `consent` middleware and `Policy` do.
 */
import * as readline from "node:readline"
import { Context, Effect, Layer, Semaphore } from "effect"
import { redactValue } from "./internal/redact.ts"
import type { ToolSpec } from "./Tool.ts"

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

export interface TerminalOptions {
  /** Default `process.stdin`. Prompts only when `isTTY` is true. */
  readonly input?: NodeJS.ReadableStream & { readonly isTTY?: boolean }
  /** Where prompts and notices go. Default `process.stderr`. */
  readonly output?: NodeJS.WritableStream
  /** The answer when the input is not a terminal. Default `"deny"`. */
  readonly fallback?: "approve" | "deny"
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

  /**
   * Asks on a terminal: `y` approves, `n [reason]` denies, `e` asks for new
   * arguments as JSON. Prompts one at a time. When the input is not a terminal,
   * answers with `fallback` and writes "auto-approved (stdin is not a terminal)"
   * or "auto-denied (...)".
   */
  static readonly layerTerminal = (options: TerminalOptions = {}): Layer.Layer<Approval> =>
    Layer.sync(Approval, () => {
      const input = options.input ?? process.stdin
      const output = options.output ?? process.stderr
      const fallback = options.fallback ?? "deny"
      const oneAtATime = Semaphore.makeUnsafe(1)
      return {
        decide: (request) =>
          oneAtATime.withPermits(1)(
            input.isTTY === true ? promptFor(request, input, output) : Effect.sync(() => {
              const verdict = fallback === "approve" ? "auto-approved" : "auto-denied"
              output.write(`${request.toolName}: ${verdict} (stdin is not a terminal)\n`)
              return fallback === "approve"
                ? approve("auto (stdin is not a terminal)")
                : deny("no one could approve it (stdin is not a terminal)", "auto (stdin is not a terminal)")
            })
          )
      }
    })
}

/** Decides with a function (the same as `Approval.layer`). */
export const layer: (decide: (request: Request) => Effect.Effect<Decision>) => Layer.Layer<Approval> = Approval.layer

/** Decides by rules (the same as `Approval.layerRules`). */
export const layerRules: (
  rules: ReadonlyArray<Rule>,
  otherwise?: (request: Request) => Decision
) => Layer.Layer<Approval> = Approval.layerRules

/** Asks on a terminal (the same as `Approval.layerTerminal`). */
export const layerTerminal: (options?: TerminalOptions) => Layer.Layer<Approval> = Approval.layerTerminal

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

/** Lines of `input`, one per question: lines typed ahead are kept for the next question. */
interface Lines {
  readonly ask: (prompt: string) => Effect.Effect<string | undefined>
  readonly close: Effect.Effect<void>
}

const linesOf = (input: NodeJS.ReadableStream, output: NodeJS.WritableStream): Lines => {
  const rl = readline.createInterface({ input, terminal: false })
  const lines = rl[Symbol.asyncIterator]()
  return {
    ask: (prompt) =>
      Effect.andThen(
        Effect.sync(() => output.write(prompt)),
        Effect.promise(() => lines.next().then((line) => line.done === true ? undefined : String(line.value)))
      ),
    close: Effect.sync(() => rl.close())
  }
}

const promptFor = (
  request: Request,
  input: NodeJS.ReadableStream,
  output: NodeJS.WritableStream
): Effect.Effect<Decision> =>
  Effect.acquireUseRelease(Effect.sync(() => linesOf(input, output)), (lines) => ask(request, lines, output), (lines) => lines.close)

const ask = (request: Request, lines: Lines, output: NodeJS.WritableStream): Effect.Effect<Decision> =>
  Effect.gen(function*() {
    const shown = JSON.stringify(redactValue(request.arguments, request.spec.safety.redact).value)
    const answer = yield* lines.ask(
      `Allow ${request.toolName} (${request.why}) with ${shown}? [y]es / [n]o [reason] / [e]dit: `
    )
    if (answer === undefined) return deny("no answer (input closed)", "user")
    const trimmed = answer.trim()
    const [word = "", ...rest] = trimmed.split(/\s+/)
    const choice = word.toLowerCase()
    if (choice === "y" || choice === "yes") return approve("user")
    if (choice === "e" || choice === "edit") {
      const edited = yield* lines.ask("New arguments (JSON object): ")
      try {
        return edit(JSON.parse(edited ?? ""), "user")
      } catch {
        output.write("not valid JSON; the call is denied\n")
        return deny("the edited arguments were not valid JSON", "user")
      }
    }
    const reason = choice === "n" || choice === "no" ? rest.join(" ") : ""
    return deny(reason === "" ? "denied by the user" : reason, "user")
  })
