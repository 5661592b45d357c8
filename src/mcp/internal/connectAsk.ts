/**
 * `Ask` over MCP, client side: a server's form elicitation during an imported tool's call is
 * asked through that call's `Ask` (so its `tool.question` / `tool.answered` events are the call's),
 * answered by the application's `Ask.Answerer`. Used by `connectRequests.elicit` when an answerer is
 * in context; without one, elicitation keeps going through `Approval`.
 */
import { Effect, Option, Result, type Schema } from "effect"
import { Ask, make } from "../../governance/Ask.ts"

/**
 * The accepted content (the answer over the schema's defaults), or why there is none: the message of
 * the `Declined` / `Unanswerable` the question ended with.
 */
export const askForm = (
  server: string,
  message: string,
  input: Schema.Top,
  defaults: { readonly [key: string]: unknown },
  toolName: string,
  callId: string
): Effect.Effect<Result.Result<{ readonly [key: string]: unknown }, string>> =>
  Effect.gen(function*() {
    // The call's own `Ask` (an imported tool's call has one); a request outside any call gets one without events.
    const ask = Option.getOrElse(yield* Effect.serviceOption(Ask), () => make({ toolName, toolCallId: callId }))
    const answered = yield* Effect.result(ask.question({
      message: `MCP server "${server}" asks: ${message}`,
      answer: input as Schema.Codec<unknown, unknown>
    }))
    if (Result.isFailure(answered)) return Result.fail(answered.failure.message)
    const value = answered.success
    return typeof value === "object" && value !== null && !Array.isArray(value)
      ? Result.succeed({ ...defaults, ...value as { readonly [key: string]: unknown } })
      : Result.fail("the answer is not an object")
  })
