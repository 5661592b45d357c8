/**
 * The `calc` tool: arithmetic on numbers with our own small recursive-descent
 * evaluator (never `eval` or `Function`). It owns the grammar, its limits and
 * its errors; it does not do variables, functions or big numbers.
 *
 * Grammar (loosest to tightest):
 *
 *     sum     := product (("+" | "-") product)*
 *     product := unary (("*" | "/" | "%") unary)*
 *     unary   := ("-" | "+") unary | power
 *     power   := primary ("**" unary)?
 *     primary := number | "(" sum ")"
 *
 * `**` is right-associative and binds tighter than a unary minus on its left,
 * as in Python: `-2 ** 2` is `-4`, `2 ** -1` is `0.5`, `2 ** 3 ** 2` is `512`.
 * `%` is JavaScript's remainder (its sign follows the dividend: `-7 % 3` is `-1`).
 */
import { Data, Effect, Result, Schema } from "effect"
import * as Tool from "../contract/Tool.ts"
import * as ToolError from "../contract/ToolError.ts"

/** Longest expression accepted, in characters. */
export const maxLength = 1_000

/** Deepest nesting of parentheses and unary signs accepted. */
export const maxDepth = 64

/** Why an expression has no value. */
export type CalcErrorKind = "syntax" | "division_by_zero" | "overflow" | "not_a_number" | "too_long" | "too_deep"

/** An expression that cannot be evaluated; `position` is 1-based (characters). */
export class CalcError extends Data.TaggedError("CalcError")<{
  readonly kind: CalcErrorKind
  readonly reason: string
  readonly position: number
}> {
  override get message(): string {
    return `${this.reason} at position ${this.position}`
  }
}

/** Evaluates an arithmetic expression; a pure function, never throws. */
export const evaluate = (expression: string): Result.Result<number, CalcError> => {
  if (expression.length > maxLength) {
    return Result.fail(
      new CalcError({
        kind: "too_long",
        reason: `the expression is ${expression.length} characters long; the limit is ${maxLength}`,
        position: maxLength + 1
      })
    )
  }
  try {
    return Result.succeed(new Parser(expression).parse())
  } catch (error) {
    if (error instanceof CalcError) return Result.fail(error)
    throw error
  }
}

const numberPattern = /(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?/y

/** Evaluates while parsing; throws `CalcError`, caught by `evaluate`. */
class Parser {
  private index = 0
  private depth = 0
  private readonly text: string
  constructor(text: string) {
    this.text = text
  }

  parse(): number {
    this.skipSpaces()
    if (this.index >= this.text.length) this.fail("syntax", "expected a number or \"(\", found an empty expression")
    const value = this.sum()
    this.skipSpaces()
    if (this.index < this.text.length) {
      this.fail("syntax", `expected an operator or the end of the expression, found ${this.describe()}`)
    }
    return value
  }

  private sum(): number {
    let left = this.product()
    for (;;) {
      const at = this.peekOperator()
      if (at !== "+" && at !== "-") return left
      const position = this.index
      this.index += 1
      const right = this.product()
      left = this.finite(at === "+" ? left + right : left - right, position)
    }
  }

  private product(): number {
    let left = this.unary()
    for (;;) {
      const at = this.peekOperator()
      if (at !== "*" && at !== "/" && at !== "%") return left
      const position = this.index
      this.index += 1
      const right = this.unary()
      if ((at === "/" || at === "%") && right === 0) {
        this.fail("division_by_zero", at === "/" ? "division by zero" : "modulo by zero", position)
      }
      left = this.finite(at === "*" ? left * right : at === "/" ? left / right : left % right, position)
    }
  }

  private unary(): number {
    const at = this.peekOperator()
    if (at === "-" || at === "+") {
      this.index += 1
      const value = this.nested(() => this.unary())
      return at === "-" ? -value : value
    }
    return this.power()
  }

  private power(): number {
    const base = this.primary()
    if (this.peekOperator() !== "**") return base
    const position = this.index
    this.index += 2
    const exponent = this.nested(() => this.unary())
    if (base === 0 && exponent < 0) this.fail("division_by_zero", "zero raised to a negative power", position)
    return this.finite(base ** exponent, position)
  }

  private primary(): number {
    this.skipSpaces()
    const start = this.index
    if (this.text[start] === "(") {
      this.index += 1
      const value = this.nested(() => this.sum())
      this.skipSpaces()
      if (this.text[this.index] !== ")") {
        this.fail("syntax", `expected ")" for the "(" opened at position ${start + 1}, found ${this.describe()}`)
      }
      this.index += 1
      return value
    }
    numberPattern.lastIndex = start
    const match = numberPattern.exec(this.text)
    if (match === null) this.fail("syntax", `expected a number or "(", found ${this.describe()}`)
    this.index = start + match[0].length
    const value = Number(match[0])
    if (!Number.isFinite(value)) this.fail("overflow", `the number ${match[0]} is too large`, start)
    return value
  }

  /** The operator at the cursor, after spaces; `**` before `*`. */
  private peekOperator(): string | undefined {
    this.skipSpaces()
    if (this.text.startsWith("**", this.index)) return "**"
    const char = this.text[this.index]
    return char !== undefined && "+-*/%".includes(char) ? char : undefined
  }

  private nested<A>(body: () => A): A {
    this.depth += 1
    if (this.depth > maxDepth) {
      this.fail("too_deep", `the expression nests deeper than ${maxDepth} levels of parentheses or signs`)
    }
    const value = body()
    this.depth -= 1
    return value
  }

  private finite(value: number, position: number): number {
    if (Number.isNaN(value)) this.fail("not_a_number", "the result is not a real number", position)
    if (!Number.isFinite(value)) {
      this.fail("overflow", "overflow: the result is too large for a 64-bit float (about 1.8e308)", position)
    }
    return value
  }

  private skipSpaces(): void {
    while (this.index < this.text.length && /\s/.test(this.text[this.index]!)) this.index += 1
  }

  private describe(): string {
    const char = this.text[this.index]
    return char === undefined ? "the end of the expression" : JSON.stringify(char)
  }

  private fail(kind: CalcErrorKind, reason: string, index: number = this.index): never {
    throw new CalcError({ kind, reason, position: index + 1 })
  }
}

/** Evaluates arithmetic expressions exactly as a calculator would, with no side effects. */
export const calc = Tool.make("calc", {
  description: "Evaluate an arithmetic expression on decimal numbers and return its value. " +
    "Supports + - * / % (remainder, sign of the dividend), ** (power, right-associative, binds tighter than a " +
    "leading minus: -2**2 is -4), unary minus, parentheses, decimals and exponent notation (1e3). " +
    `Refuses variables, functions, division or modulo by zero, results beyond about 1.8e308, expressions over ` +
    `${maxLength} characters and nesting deeper than ${maxDepth}. No side effects.`,
  input: Schema.Struct({
    expression: Schema.String.annotate({ description: "The expression, e.g. \"(2 + 3) * 4 ** 0.5\"" })
  }),
  output: Schema.Struct({ result: Schema.Number }),
  safety: { access: "read", idempotent: true },
  handler: ({ expression }) =>
    Result.match(evaluate(expression), {
      onSuccess: (result) => Effect.succeed({ result }),
      onFailure: (error) =>
        Effect.fail(
          ToolError.repairable(`cannot evaluate the expression: ${error.message}`, {
            kind: error.kind,
            position: error.position
          })
        )
    })
})
