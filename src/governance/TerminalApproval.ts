/**
 * Approval at a terminal: a person answers each consent question on stdin.
 * Not core: an application that wants a terminal prompt installs this layer;
 * rules and functions are `Approval.layerRules` / `Approval.layer`.
 */
import * as readline from "node:readline"
import { Effect, Layer, Semaphore } from "effect"
import { redactValue } from "../internal/redact/policy.ts"
import { Approval, approve, type Decision, deny, edit, type Request } from "./Approval.ts"

export interface TerminalOptions {
  /** Default `process.stdin`. Prompts only when `isTTY` is true. */
  readonly input?: NodeJS.ReadableStream & { readonly isTTY?: boolean }
  /** Where prompts and notices go. Default `process.stderr`. */
  readonly output?: NodeJS.WritableStream
  /** The answer when the input is not a terminal. Default `"deny"`. */
  readonly fallback?: "approve" | "deny"
}


/**
 * Asks on a terminal: `y` approves, `n [reason]` denies, `e` asks for new
 * arguments as JSON. Prompts one at a time. When the input is not a terminal,
 * answers with `fallback` and writes "auto-approved (stdin is not a terminal)"
 * or "auto-denied (...)".
 */
export const layer = (options: TerminalOptions = {}): Layer.Layer<Approval> =>
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
