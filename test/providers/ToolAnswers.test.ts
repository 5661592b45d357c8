import { assert, describe, it } from "@effect/vitest"
import { Result } from "effect"
import * as ToolAnswers from "../../src/providers/ToolAnswers.ts"
import { failure, success } from "./support/tools.ts"

const calls = [{ id: "a", name: "t" }, { id: "b", name: "t" }, { id: "c", name: "t" }]

describe("ToolAnswers.answerAll", () => {
  it("puts one result per call in call order", () => {
    const results = [success(calls[2]!, "3"), failure(calls[0]!, "no"), success(calls[1]!, "2")]
    const ordered = Result.getOrThrow(ToolAnswers.answerAll(calls, results))
    assert.deepStrictEqual(ordered.map((r) => r.toolCallId), ["a", "b", "c"])
  })

  it("fails with ToolAnswerMismatch naming unanswered, twice-answered and unexpected ids", () => {
    const results = [success(calls[0]!, "1"), success(calls[0]!, "1 again"), success({ id: "z", name: "t" }, "?")]
    const mismatch = ToolAnswers.answerAll(calls, results)
    assert.isTrue(Result.isFailure(mismatch))
    if (Result.isFailure(mismatch)) {
      assert.strictEqual(mismatch.failure._tag, "ToolAnswerMismatch")
      assert.deepStrictEqual(mismatch.failure.unanswered, ["b", "c"])
      assert.deepStrictEqual(mismatch.failure.answeredTwice, ["a"])
      assert.deepStrictEqual(mismatch.failure.unexpected, ["z"])
      assert.include(mismatch.failure.message, "unanswered tool calls: b, c")
    }
  })

  it("a call id that appears twice among the calls is reported", () => {
    const mismatch = ToolAnswers.answerAll([calls[0]!, calls[0]!], [success(calls[0]!, "1")])
    assert.isTrue(Result.isFailure(mismatch) && mismatch.failure.unexpected.includes("a"))
  })

  it("no calls and no results is a valid (empty) answer", () => {
    assert.deepStrictEqual(Result.getOrThrow(ToolAnswers.answerAll([], [])), [])
  })
})
