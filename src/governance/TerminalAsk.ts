/**
 * `Ask` at a terminal: a person answers each tool's question on stdin. Not core
 * (it reads `node:readline`): an application that wants a terminal prompt
 * installs this layer; functions and rules are `Ask.layerFunction` /
 * `Ask.layerRules`.
 */
import * as readline from "node:readline"
import { Effect, Layer, Semaphore } from "effect"
import { answer, Answerer, decline, type Reply, type Request, unanswerable } from "./Ask.ts"
import * as AnswerCheck from "./AnswerCheck.ts"

export interface TerminalOptions {
  /** Default `process.stdin`. Asks only when `isTTY` is true. */
  readonly input?: NodeJS.ReadableStream & { readonly isTTY?: boolean }
  /** Where questions and notices go. Default `process.stderr`. */
  readonly output?: NodeJS.WritableStream
  /**
   * How many lines a person may type for one question: a line that does not match the answer's
   * schema (or is not JSON) is refused with the reason and the question asked again, up to this many
   * times in all; the last one is the reply (then the handler gets `Unanswerable`, `"invalid-answer"`,
   * if it does not match). Default 3.
   */
  readonly attempts?: number
}

/**
 * Asks on a terminal, one question at a time: the message, the form's fields and the numbered
 * choices, then one line: a choice's number, a JSON object, or (for a one-field form) the field's
 * value; an empty line declines. A line that does not match the answer's JSON Schema is refused with
 * the reason, and the question asked again (`attempts`). When the input is not a terminal, every
 * question is `Unanswerable` (`"unsupported"`), with a notice on `output`.
 */
export const layer = (options: TerminalOptions = {}): Layer.Layer<Answerer> =>
  Layer.sync(Answerer, () => {
    const input = options.input ?? process.stdin
    const output = options.output ?? process.stderr
    const oneAtATime = Semaphore.makeUnsafe(1)
    const attempts = Math.max(1, Math.floor(options.attempts ?? 3))
    return {
      answer: (request) =>
        oneAtATime.withPermits(1)(
          input.isTTY === true
            ? Effect.acquireUseRelease(
              Effect.sync(() => readline.createInterface({ input, terminal: false })),
              (lines) => ask(request, lines, output, attempts),
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

const ask = (
  request: Request,
  lines: readline.Interface,
  output: NodeJS.WritableStream,
  attempts: number
): Effect.Effect<Reply> =>
  Effect.gen(function*() {
    const fields = fieldsOf(request)
    const choices = request.choices ?? []
    output.write(`${request.toolName} asks: ${request.message}\n`)
    output.write(`  fields: ${fields.map(([name, field]) => `${name} (${String(field.type ?? "value")})`).join(", ")}\n`)
    choices.forEach((choice, i) => output.write(`  ${i + 1}) ${JSON.stringify(choice)}\n`))
    for (let attempt = 1;; attempt++) {
      output.write(choices.length > 0 ? "Choice number, JSON object, or empty to decline: " : "JSON object, or empty to decline: ")
      const reply = readReply(yield* readLine(lines), fields, choices)
      if (reply._tag !== "Answer" || attempt >= attempts) return reply
      const refused = typeof reply.value === "string"
        ? "not a JSON object"
        : AnswerCheck.refusal(request.toolName, request.schema, reply.value)
      if (refused === undefined) return reply
      output.write(`  not accepted (${refused}); try again (${attempts - attempt} left)\n`)
    }
  })

/** The next line typed, or `undefined` once the input closed. */
const readLine = (lines: readline.Interface): Effect.Effect<string | undefined> =>
  Effect.callback<string | undefined>((resume) => {
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

/** A typed line as a reply: a choice's number, a JSON object, a one-field form's value; empty or closed: declined. */
const readReply = (
  line: string | undefined,
  fields: ReadonlyArray<[string, { readonly type?: unknown }]>,
  choices: ReadonlyArray<unknown>
): Reply => {
  if (line === undefined) return decline("no answer (input closed)", "user")
  const text = line.trim()
  if (text === "") return decline("declined at the terminal", "user")
  const number = /^\d+$/.test(text) ? Number(text) : undefined
  if (number !== undefined && number >= 1 && number <= choices.length) return answer(choices[number - 1], "user")
  if (text.startsWith("{")) {
    try {
      return answer(JSON.parse(text), "user")
    } catch {
      return answer(text, "user") // not JSON: asked again, or (the last attempt) refused by the schema
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
}
