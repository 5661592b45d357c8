/**
 * A minimal `effect/ai` `LanguageModel` that speaks OpenAI Chat Completions
 * over the real `HttpClient`, the way a provider package does (the project
 * does not depend on `@effect/ai-openai`): the prompt becomes `messages`, the
 * toolkit's tools become `tools` (from `Tool.getJsonSchema`), the completion
 * becomes encoded response parts, and HTTP failures become `AiError`s. Like
 * a provider under `toolCallValidation: "deferred"`, it passes argument text
 * that is not JSON through unparsed. `streamText` plays the same answer as
 * stream parts (text as one delta). Test support for the bridge only.
 */
import { Duration, Effect, Layer, Redacted, Stream } from "effect"
import { AiError, LanguageModel, Prompt, type Response, Tool } from "effect/ai"
import { HttpClient, HttpClientRequest } from "effect/http"

const aiError = (method: string, reason: AiError.AiErrorReason) => AiError.make({ module: "TestOpenAi", method, reason })

const wireMessages = (prompt: Prompt.Prompt): Array<Record<string, unknown>> =>
  prompt.content.flatMap((message): Array<Record<string, unknown>> => {
    switch (message.role) {
      case "system":
        return [{ role: "system", content: message.content }]
      case "user":
        return [{
          role: "user",
          content: message.content.flatMap((part) => part.type === "text" ? [part.text] : []).join("")
        }]
      case "assistant": {
        const text = message.content.flatMap((part) => part.type === "text" ? [part.text] : []).join("")
        const calls = message.content.flatMap((part) => part.type === "tool-call" ? [part] : [])
        return [{
          role: "assistant",
          content: text === "" ? null : text,
          ...(calls.length === 0 ? {} : {
            tool_calls: calls.map((call) => ({
              id: call.id,
              type: "function",
              function: {
                name: call.name,
                arguments: typeof call.params === "string" ? call.params : JSON.stringify(call.params)
              }
            }))
          })
        }]
      }
      case "tool":
        return message.content.flatMap((part) =>
          part.type === "tool-result"
            ? [{
              role: "tool",
              tool_call_id: part.id,
              content: part.modelOutput === undefined
                ? JSON.stringify(part.result)
                : Prompt.toolModelOutputToText(part.modelOutput)
            }]
            : []
        )
    }
  })

interface Completion {
  readonly choices: ReadonlyArray<{
    readonly message: {
      readonly content: string | null
      readonly tool_calls?: ReadonlyArray<{
        readonly id: string
        readonly function: { readonly name: string; readonly arguments: string }
      }>
    }
  }>
  readonly usage?: { readonly prompt_tokens: number; readonly completion_tokens: number }
}

const parseOrKeep = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

/** A `LanguageModel` layer for `POST {origin}/v1/chat/completions` with a bearer key. */
export const layer = (origin: string, apiKey: Redacted.Redacted<string>) =>
  Layer.effect(
    LanguageModel.LanguageModel,
    Effect.gen(function*() {
      const client = yield* HttpClient.HttpClient
      const generateText = (options: LanguageModel.ProviderOptions) =>
          Effect.gen(function*() {
            const body = {
              model: "gpt-4o-mini",
              messages: wireMessages(options.prompt),
              ...(options.tools.length === 0 ? {} : {
                tools: options.tools.map((tool) => ({
                  type: "function",
                  function: {
                    name: tool.name,
                    description: Tool.getDescription(tool),
                    parameters: Tool.getJsonSchema(tool)
                  }
                }))
              })
            }
            const response = yield* client.execute(
              HttpClientRequest.post(`${origin}/v1/chat/completions`).pipe(
                HttpClientRequest.bearerToken(apiKey),
                HttpClientRequest.bodyJsonUnsafe(body)
              )
            ).pipe(Effect.mapError(() =>
              aiError("generateText", new AiError.NetworkError({ reason: "TransportError", method: "POST", url: origin }))
            ))
            const text = yield* Effect.orDie(response.text)
            if (response.status === 429) {
              const seconds = Number(response.headers["retry-after"])
              return yield* aiError(
                "generateText",
                new AiError.RateLimitError(Number.isFinite(seconds) ? { retryAfter: Duration.seconds(seconds) } : {})
              )
            }
            if (response.status >= 500) {
              return yield* aiError("generateText", new AiError.InternalProviderError({ description: text }))
            }
            if (response.status >= 400) {
              // A provider that quotes the request back: the bridge must scrub the key from this.
              return yield* aiError(
                "generateText",
                new AiError.InvalidRequestError({ description: `${text} (sent key ${Redacted.value(apiKey)})` })
              )
            }
            const completion = JSON.parse(text) as Completion
            const message = completion.choices[0]!.message
            const parts: Array<Response.PartEncoded> = []
            if (message.content !== null && message.content !== "") parts.push({ type: "text", text: message.content })
            for (const call of message.tool_calls ?? []) {
              parts.push({
                type: "tool-call",
                id: call.id,
                name: call.function.name,
                params: parseOrKeep(call.function.arguments)
              })
            }
            parts.push({
              type: "finish",
              reason: (message.tool_calls?.length ?? 0) > 0 ? "tool-calls" : "stop",
              usage: {
                inputTokens: { total: completion.usage?.prompt_tokens },
                outputTokens: { total: completion.usage?.completion_tokens }
              }
            })
            return parts
          })
      return yield* LanguageModel.make({
        generateText,
        streamText: (options) =>
          Stream.fromIterableEffect(Effect.map(generateText(options), (parts) =>
            parts.flatMap((part): ReadonlyArray<Response.StreamPartEncoded> =>
              part.type === "text"
                ? [
                  { type: "text-start", id: "text-0" },
                  { type: "text-delta", id: "text-0", delta: part.text },
                  { type: "text-end", id: "text-0" }
                ]
                : part.type === "tool-call" || part.type === "finish"
                ? [part]
                : []
            )))
      })
    })
  )
