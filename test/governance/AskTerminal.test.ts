/**
 * `TerminalAsk.layer`: a person answers a tool's question on a terminal (a choice's number, a JSON
 * object, a one-field form's value; an empty line or a closed input declines); not a terminal:
 * `Unanswerable` (`"unsupported"`) with a notice.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { PassThrough } from "node:stream"
import { Ask, ToolServices } from "../../src/index.ts"
import { TerminalAsk } from "../../src/governance/middleware/index.ts"

const terminal = (isTTY: boolean, options: { readonly attempts?: number } = {}) => {
  const input = Object.assign(new PassThrough(), { isTTY })
  const output = new PassThrough()
  let written = ""
  output.on("data", (chunk) => void (written += String(chunk)))
  return { input, layer: TerminalAsk.layer({ input, output, ...options }), written: () => written }
}

const Branch = Schema.Struct({ branch: Schema.String })
const Size = Schema.Struct({ size: Schema.Int })

/** Asks `question` with the terminal's answerer, typing `lines` (one after the other) once the question is shown. */
const answered = <A, I>(
  question: Ask.Question<A, I>,
  line: string | undefined | ReadonlyArray<string>,
  options: { readonly attempts?: number } = {}
) => {
  const t = terminal(true, options)
  const typed = typeof line === "string" ? [line] : line
  setTimeout(() => typed === undefined ? t.input.end() : t.input.write(typed.map((l) => `${l}\n`).join("")), 20)
  return Ask.question(question).pipe(
    Effect.result,
    Effect.map((result) => ({ result, written: t.written() })),
    Effect.provide(t.layer),
    Effect.provide(ToolServices.layerTest())
  )
}

describe("TerminalAsk.layer", () => {
  it.live("a choice's number picks it; the question and the numbered choices are shown", () =>
    Effect.gen(function*() {
      const { result, written } = yield* answered(
        { message: "Which branch?", answer: Branch, choices: [{ branch: "main" }, { branch: "dev" }] },
        "2"
      )
      assert.deepStrictEqual(result._tag === "Success" ? result.success : undefined, { branch: "dev" })
      assert.include(written, "asks: Which branch?")
      assert.include(written, `2) {"branch":"dev"}`)
    }))

  it.live("a JSON object, or a one-field form's value (coerced to the field's type)", () =>
    Effect.gen(function*() {
      const json = yield* answered({ message: "Size?", answer: Size }, `{"size": 3}`)
      assert.strictEqual(json.result._tag === "Success" && json.result.success.size, 3)
      const plain = yield* answered({ message: "Size?", answer: Size }, "7")
      assert.strictEqual(plain.result._tag === "Success" && plain.result.success.size, 7)
    }))

  it.live("a line that does not match the schema is refused with the reason and asked again; the last attempt is the reply", () =>
    Effect.gen(function*() {
      const again = yield* answered({ message: "Size?", answer: Size }, ["seven", "{not json", "8"])
      assert.strictEqual(again.result._tag === "Success" && again.result.success.size, 8)
      assert.include(again.written, `not accepted (at "size": Expected an integer, got NaN); try again (2 left)`)
      assert.include(again.written, "not accepted (not a JSON object); try again (1 left)")
      const once = yield* answered({ message: "Size?", answer: Size }, "seven", { attempts: 1 })
      assert.strictEqual(once.result._tag === "Failure" && once.result.failure._tag, "AskUnanswerable")
      assert.strictEqual(once.result._tag === "Failure" && (once.result.failure as Ask.Unanswerable).reason, "invalid-answer")
      const exhausted = yield* answered({ message: "Which branch?", answer: Branch }, ["{}", "{}", "{}"])
      assert.strictEqual(exhausted.result._tag === "Failure" && exhausted.result.failure._tag, "AskUnanswerable")
      assert.strictEqual(exhausted.written.match(/not accepted/g)?.length, 2)
    }))

  it.live("an empty line or a closed input declines", () =>
    Effect.gen(function*() {
      const empty = yield* answered({ message: "Which branch?", answer: Branch }, "")
      assert.strictEqual(empty.result._tag === "Failure" && empty.result.failure._tag, "AskDeclined")
      const closed = yield* answered({ message: "Which branch?", answer: Branch }, undefined)
      assert.strictEqual(closed.result._tag === "Failure" && closed.result.failure.message, "the question was declined: no answer (input closed)")
    }))

  it.effect("not a terminal: Unanswerable (unsupported), with a notice", () => {
    const t = terminal(false)
    return Effect.gen(function*() {
      const failure = yield* Effect.flip(Ask.question({ message: "Which branch?", answer: Branch }))
      assert.strictEqual(failure._tag, "AskUnanswerable")
      assert.strictEqual((failure as Ask.Unanswerable).reason, "unsupported")
      assert.include(t.written(), `cannot ask "Which branch?" (stdin is not a terminal)`)
    }).pipe(Effect.provide(t.layer), Effect.provide(ToolServices.layerTest()))
  })
})
