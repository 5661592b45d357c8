/**
 * The Chat Completions event stream (`stream: true`): each event's data is a
 * `ChatCompletionChunk` (text in `choices[0].delta.content`, tool calls as
 * deltas keyed by `index` with the id and name in the first one, the
 * `finish_reason` on the last choice chunk, usage on a final chunk with no
 * choices when `stream_options.include_usage` is set), then `data: [DONE]`.
 * A call is complete when a later index starts and its argument text is
 * complete JSON, or else at `[DONE]`. At `[DONE]` the chunks are put back
 * together as one `ChatCompletion` and read by the same decoder `generate`
 * uses, so `Finished` holds exactly the `Response` `generate` would return.
 * A chunk carrying `error` is the provider's error; a body that ends before
 * `[DONE]` was cut.
 */
import { Result } from "effect"
import type { ChatModelError, Response, StreamPart } from "../../ChatModel.ts"
import type { ToolCall } from "../../../contract/ToolCall.ts"
import type * as OpenAiChat from "../../../providers/OpenAiChat.ts"
import * as HttpStream from "./httpStream.ts"
import { isCompleteJson, PendingCall } from "./toolCallAssembly.ts"

const provider = "openai-chat"

/** What the decoder needs of the adapter: the whole-body decoder and a single call's reading. */
export interface Reader {
  readonly response: (completion: unknown) => Result.Result<Response, ChatModelError>
  readonly call: (call: OpenAiChat.FunctionToolCall) => ToolCall
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const str = (value: unknown): string | undefined => typeof value === "string" ? value : undefined

/** Error kinds worth asking again. */
const retryableKinds = new Set(["rate_limit_exceeded", "rate_limit_error", "server_error", "overloaded", "overloaded_error", "timeout", "service_unavailable"])

/** The provider error a chunk with `error` reports. */
export const chunkError = (error: unknown): ChatModelError => {
  const fields = isRecord(error) ? error : {}
  const kind = str(fields.code) ?? str(fields.type)
  const message = str(fields.message) ?? (typeof error === "string" ? error : JSON.stringify(error))
  return HttpStream.providerError(
    provider,
    `stream error${kind === undefined ? "" : ` ${kind}`}: ${message}`,
    kind !== undefined && retryableKinds.has(kind)
  )
}

/** A fresh decoder for one stream. */
export const decoder = (reader: Reader) => (): HttpStream.EventDecoder => {
  let content = ""
  let refusal = ""
  let finishReason: unknown = null
  let usage: unknown = undefined
  const calls = new Map<number, PendingCall>()

  const complete = (index: number, call: PendingCall): Result.Result<Array<StreamPart>, ChatModelError> => {
    if (call.id === undefined || call.name === undefined) {
      return Result.fail(HttpStream.decodeError(provider, `tool call ${index} ended without ${call.id === undefined ? "an id" : "a name"}`))
    }
    call.done = true
    return Result.succeed([{
      _tag: "ToolCall",
      call: reader.call({ id: call.id, type: "function", function: { name: call.name, arguments: call.text } })
    }])
  }

  const ordered = () => [...calls.entries()].sort(([a], [b]) => a - b)

  const toolDelta = (raw: unknown): Result.Result<Array<StreamPart>, ChatModelError> => {
    if (!isRecord(raw) || typeof raw.index !== "number") {
      return Result.fail(HttpStream.decodeError(provider, `a tool call delta without an index: ${JSON.stringify(raw)}`))
    }
    const index = raw.index
    const fn = isRecord(raw.function) ? raw.function : {}
    const parts: Array<StreamPart> = []
    let call = calls.get(index)
    if (call === undefined) {
      // A later index starting completes the earlier calls whose arguments are whole JSON.
      for (const [i, earlier] of ordered()) {
        if (i < index && !earlier.done && earlier.started && isCompleteJson(earlier.text)) {
          const done = complete(i, earlier)
          if (Result.isFailure(done)) return done
          parts.push(...done.success)
        }
      }
      call = new PendingCall()
      calls.set(index, call)
    }
    if (call.done) {
      return Result.fail(HttpStream.decodeError(provider, `tool call ${index} received more arguments after it was complete`))
    }
    parts.push(...call.identify(str(raw.id), str(fn.name)))
    const piece = str(fn.arguments)
    if (piece !== undefined) parts.push(...call.append(piece))
    return Result.succeed(parts)
  }

  const chunk = (body: unknown): Result.Result<Array<StreamPart>, ChatModelError> => {
    if (!isRecord(body)) return Result.fail(HttpStream.decodeError(provider, "a chunk is not an object"))
    if (body.error !== undefined && body.error !== null) return Result.fail(chunkError(body.error))
    if (body.usage !== undefined && body.usage !== null) usage = body.usage
    const choices = Array.isArray(body.choices) ? body.choices : []
    const parts: Array<StreamPart> = []
    for (const choice of choices) {
      if (!isRecord(choice) || (choice.index ?? 0) !== 0) continue
      const delta = isRecord(choice.delta) ? choice.delta : {}
      const text = str(delta.content)
      if (text !== undefined && text !== "") {
        content += text
        parts.push({ _tag: "TextDelta", text })
      }
      const refused = str(delta.refusal)
      if (refused !== undefined && refused !== "") {
        refusal += refused
        parts.push({ _tag: "TextDelta", text: refused })
      }
      if (Array.isArray(delta.tool_calls)) {
        for (const raw of delta.tool_calls) {
          const out = toolDelta(raw)
          if (Result.isFailure(out)) return out
          parts.push(...out.success)
        }
      }
      if (choice.finish_reason !== undefined && choice.finish_reason !== null) finishReason = choice.finish_reason
    }
    return Result.succeed(parts)
  }

  const done = (): Result.Result<Array<StreamPart>, ChatModelError> => {
    const parts: Array<StreamPart> = []
    for (const [i, call] of ordered()) {
      if (call.done) continue
      const out = complete(i, call)
      if (Result.isFailure(out)) return out
      parts.push(...out.success)
    }
    const toolCalls = ordered().map(([, call]) => ({
      id: call.id!,
      type: "function" as const,
      function: { name: call.name!, arguments: call.text }
    }))
    const completion = {
      choices: [{
        index: 0,
        message: {
          role: "assistant",
          content: content === "" ? null : content,
          ...(refusal === "" ? {} : { refusal }),
          ...(toolCalls.length === 0 ? {} : { tool_calls: toolCalls })
        },
        finish_reason: finishReason
      }],
      ...(usage === undefined ? {} : { usage })
    }
    return Result.map(reader.response(completion), (response) => [...parts, { _tag: "Finished" as const, response }])
  }

  return {
    event: (event) => {
      if (event.data.trim() === "[DONE]") return done()
      return Result.flatMap(HttpStream.json(provider, event), chunk)
    },
    end: () => Result.fail(HttpStream.cutError(provider, "no [DONE]"))
  }
}
