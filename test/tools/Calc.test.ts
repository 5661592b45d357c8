import { assert, describe, it } from "@effect/vitest"
import { Effect, Result } from "effect"
import * as Tool from "../../src/contract/Tool.ts"
import { calc, evaluate, maxDepth, maxLength } from "../../src/tools/Calc.ts"

describe("calc", () => {
  const values: ReadonlyArray<readonly [string, number]> = [
    ["2+3*4", 14],
    ["(2+3)*4", 20],
    ["2**3**2", 512],
    ["-2**2", -4],
    ["(-2)**2", 4],
    ["2**-1", 0.5],
    ["7%3", 1],
    ["-7 % 3", -1],
    ["10 - 4 - 3", 3],
    ["100 / 10 / 5", 2],
    ["1.5 * 4", 6],
    [".5 + 1e3", 1000.5],
    ["2.5E-1 * 4", 1],
    ["--3", 3],
    ["+3 - -2", 5],
    ["  ( 1 + 2 ) * ( 3 + 4 )  ", 21],
    ["2 * 3 ** 2", 18],
    ["1e-400", 0]
  ]
  for (const [expression, expected] of values) {
    it.effect(`${expression} = ${expected}`, () =>
      Effect.gen(function*() {
        const { result } = yield* calc.handler({ expression })
        assert.strictEqual(result, expected)
      }))
  }

  const failures: ReadonlyArray<readonly [string, string, RegExp]> = [
    ["1/0", "division_by_zero", /division by zero at position 2/],
    ["5 % (2-2)", "division_by_zero", /modulo by zero at position 3/],
    ["0 ** -1", "division_by_zero", /zero raised to a negative power/],
    ["1e308*10", "overflow", /overflow.*at position 6/],
    ["1e999", "overflow", /too large at position 1/],
    ["(-8) ** 0.5", "not_a_number", /not a real number/],
    ["2+", "syntax", /expected a number or "\(", found the end of the expression at position 3/],
    ["abc", "syntax", /found "a" at position 1/],
    ["2 3", "syntax", /expected an operator or the end of the expression, found "3" at position 3/],
    ["(1+2", "syntax", /expected "\)" for the "\(" opened at position 1, found the end of the expression at position 5/],
    ["", "syntax", /found an empty expression at position 1/],
    ["Math.PI", "syntax", /found "M" at position 1/],
    ["(".repeat(200) + "1" + ")".repeat(200), "too_deep", new RegExp(`deeper than ${maxDepth}`)],
    ["-".repeat(500) + "1", "too_deep", /deeper than/],
    ["1+".repeat(600) + "1", "too_long", new RegExp(`limit is ${maxLength}`)]
  ]
  for (const [expression, kind, message] of failures) {
    it.effect(`${expression.length > 20 ? `${expression.slice(0, 20)}...` : JSON.stringify(expression)} fails (${kind})`, () =>
      Effect.gen(function*() {
        const error = yield* Effect.flip(calc.handler({ expression }))
        assert.strictEqual(error._tag, "ToolFailure")
        assert.strictEqual(error.disposition, "repair")
        assert.match(error.message, message)
        assert.deepStrictEqual((error.detail as { kind: string }).kind, kind)
      }))
  }

  it("evaluate is pure and returns a Result", () => {
    assert.deepStrictEqual(evaluate("1+1"), Result.succeed(2))
    const failure = evaluate("1/0")
    assert.isTrue(Result.isFailure(failure))
    if (Result.isFailure(failure)) {
      assert.strictEqual(failure.failure._tag, "CalcError")
      assert.strictEqual(failure.failure.position, 2)
    }
  })

  it("declares read-only, idempotent safety", () => {
    assert.deepStrictEqual(calc.safety, { access: "read", idempotent: true })
    assert.isTrue(Result.isSuccess(Tool.spec(calc)))
  })
})
