/**
 * One call's questions (`Ask`): the public `Ask.make` with the call's events.
 * Each question becomes a `tool.question` and, once it ends, a `tool.answered`
 * of that call, redacted with the call's redaction (the tool's policy and its
 * arguments' secret values: the message as text, choices and the answer as
 * values). While a question is open, the attempt's timeout is paused (`Deadline`). Made only for
 * calls of tools that list `Ask` in their services.
 */
import { Effect } from "effect"
import type * as Tool from "../../../contract/Tool.ts"
import { Ask, type AskShape, make } from "../../../governance/Ask.ts"
import { redactValue } from "../../../internal/redact/policy.ts"
import { withRegionsRedacted } from "../../../internal/redact/text.ts"
import * as Deadline from "./Deadline.ts"
import type { CallInfo } from "./Progress.ts"
import { redactionOf } from "./Progress.ts"
import type { Env, Reporter } from "./Reporter.ts"

/** True when `tool` lists `Ask` among its services (cached per tool). */
const asking = new WeakMap<Tool.Any, boolean>()
export const asks = (tool: Tool.Any): boolean => {
  let listed = asking.get(tool)
  if (listed === undefined) {
    listed = tool.services.some((service) => service.key === Ask.key)
    asking.set(tool, listed)
  }
  return listed
}

/** The `Ask` of one call, reporting its questions through `reporter`; each pauses the attempt's deadline. */
export const forCall = (
  reporter: Reporter,
  env: Env,
  call: CallInfo & Deadline.Holder,
  spec: Tool.ToolSpec,
  input: unknown
): AskShape => {
  // made on the first question: most calls of a tool that may ask never do
  let redaction: ReturnType<typeof redactionOf> | undefined
  const text = (value: string): string => {
    redaction ??= redactionOf(spec, input)
    return withRegionsRedacted(value, redaction.regions(value, 0))
  }
  const value = (raw: unknown): unknown => {
    const shown = redactValue(raw, spec.safety.redact).value
    // the arguments' secret values, wherever they appear in the value's strings
    return JSON.parse(text(JSON.stringify(shown) ?? "null"))
  }
  const stamp = () => ({
    toolCallId: call.toolCallId,
    toolName: call.toolName,
    attempt: call.attempt,
    ...(call.shownKey === undefined ? {} : { idempotencyKey: call.shownKey })
  })
  const emit = (event: Parameters<Reporter["emit"]>[1]): Effect.Effect<void> => reporter.emit(env, event)
  const ask = make({
    toolName: call.toolName,
    toolCallId: call.toolCallId,
    redact: text,
    redactValue: value,
    onQuestion: (request) =>
      emit({
        _tag: "tool.question",
        ...stamp(),
        question: request.question,
        message: request.message,
        schema: request.schema,
        ...(request.choices === undefined ? {} : { choices: request.choices })
      }),
    onAnswered: (request, outcome, elapsed) =>
      emit({
        _tag: "tool.answered",
        ...stamp(),
        question: request.question,
        outcome: outcome._tag,
        ...(outcome._tag === "answered"
          ? { answer: value(outcome.answer), answeredBy: outcome.answeredBy }
          : outcome._tag === "declined"
          ? { reason: text(outcome.reason), answeredBy: outcome.answeredBy }
          : { reason: text(outcome.reason) }),
        elapsed
      })
  })
  return {
    question: (question) =>
      Effect.suspend(() => {
        // the deadline of the attempt asking (set by `Invoke` before the handler starts)
        const deadline = call.deadline
        return deadline === undefined ? ask.question(question) : Deadline.paused(deadline, ask.question(question))
      })
  }
}
