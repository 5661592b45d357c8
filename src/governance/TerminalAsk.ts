/**
 * `Ask` at a terminal: a person answers each tool's question on stdin. Not core
 * (it reads `node:readline`): an application that wants a terminal prompt
 * installs this layer; functions and rules are `Ask.layerFunction` /
 * `Ask.layerRules`.
 */
import * as readline from "node:readline"
import { Effect, Layer, Semaphore } from "effect"
import { answer, Answerer, decline, type Reply, type Request, unanswerable } from "./Ask.ts"

export interface TerminalOptions {
  /** Default `process.stdin`. Asks only when `isTTY` is true. */
  readonly input?: NodeJS.ReadableStream & { readonly isTTY?: boolean }
  /** Where questions and notices go. Default `process.stderr`. */
  readonly output?: NodeJS.WritableStream
}

/**
 * Asks on a terminal, one question at a time: the message, the form's fields and the numbered
 * choices, then one line: a choice's number, a JSON object, or (for a one-field form) the field's
 * value; an empty line declines. When the input is not a terminal, every question is
 * `Unanswerable` (`"unsupported"`), with a notice on `output`.
 */
export const layer = (options: TerminalOptions = {}): Layer.Layer<Answerer> =>
  Layer.sync(Answerer, () => {
    const input = options.input ?? process.stdin
    const output = options.output ?? process.stderr
    const oneAtATime = Semaphore.makeUnsafe(1)
    return {
      answer: (request) =>
        oneAtATime.withPermits(1)(
          input.isTTY === true
            ? Effect.acquireUseRelease(
              Effect.sync(() => readline.createInterface({ input, terminal: false })),
              (lines) => ask(request, lines, output),
              (lines) => Effect.sync(() => lines.close())
            )
            : Effect.sync(() => {
              output.write(`${request.toolName}: cannot ask "${request.message}" (stdin is not a terminal)\n`)
              return unanswerable("unsupported", "no one can answer at the terminal (stdin is not a terminal)")
            })
        )
    }
  })

const fieldsOf = (request: Request): ReadonlyArray<[string, { readonly type?: unknown }]> =>
  Object.entries((request.schema["properties"] ?? {}) as Record<string, { readonly type?: unknown }>)

const ask = (request: Request, lines: readline.Interface, output: NodeJS.WritableStream): Effect.Effect<Reply> =>
  Effect.gen(function*() {
    const fields = fieldsOf(request)
    const choices = request.choices ?? []
    output.write(`${request.toolName} asks: ${request.message}\n`)
    output.write(`  fields: ${fields.map(([name, field]) => `${name} (${String(field.type ?? "value")})`).join(", ")}\n`)
    choices.forEach((choice, i) => output.write(`  ${i + 1}) ${JSON.stringify(choice)}\n`))
    output.write(choices.length > 0 ? "Choice number, JSON object, or empty to decline: " : "JSON object, or empty to decline: ")
    const line = yield* Effect.callback<string | undefined>((resume) => {
      const onLine = (text: string) => {
        lines.off("close", onClose)
        resume(Effect.succeed(text))
      }
      const onClose = () => {
        lines.off("line", onLine)
        resume(Effect.succeed(undefined))
      }
      lines.once("line", onLine)
      lines.once("close", onClose)
      return Effect.sync(() => {
        lines.off("line", onLine)
        lines.off("close", onClose)
      })
    })
    if (line === undefined) return decline("no answer (input closed)", "user")
    const text = line.trim()
    if (text === "") return decline("declined at the terminal", "user")
    const number = /^\d+$/.test(text) ? Number(text) : undefined
    if (number !== undefined && number >= 1 && number <= choices.length) return answer(choices[number - 1], "user")
    if (text.startsWith("{")) {
      try {
        return answer(JSON.parse(text), "user")
      } catch {
        return answer(text, "user") // not JSON: the schema refuses it (invalid-answer)
      }
    }
    if (fields.length === 1) {
      const [name, field] = fields[0]!
      const value = field.type === "number" || field.type === "integer"
        ? Number(text)
        : field.type === "boolean"
        ? /^(y|yes|true)$/i.test(text)
        : text
      return answer({ [name]: value }, "user")
    }
    return answer(text, "user")
  })
