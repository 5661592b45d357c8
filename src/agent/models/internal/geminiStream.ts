/**
 * The `streamGenerateContent?alt=sse` stream: each event is a partial
 * `GenerateContentResponse` (the first candidate's new parts, usage so far,
 * the `finishReason` on the last one) and the body simply ends; there is no
 * terminal event, so a body that ends before any `finishReason` was cut.
 * Text parts become `TextDelta`s (thoughts do not); Gemini sends each
 * `functionCall` whole, so it becomes `ToolCallStarted`, one
 * `ToolCallDelta` (its `args` as JSON) and `ToolCall` at once. The parts are
 * gathered (adjacent text merged) and read at the end by the same decoder
 * `generate` uses, so `Finished` holds exactly the `Response` `generate`
 * would return. An event carrying `error` is the provider's error.
 */
import { Result } from "effect"
import type { ChatModelError, Response, StreamPart } from "../../ChatModel.ts"
import type { ToolCall } from "../../../contract/ToolCall.ts"
import type * as Gemini from "../../../providers/Gemini.ts"
import { stringify } from "../../../internal/json.ts"
import * as HttpStream from "./httpStream.ts"

const provider = "gemini"

/** What the decoder needs of the adapter. */
export interface Reader {
  readonly response: (body: unknown) => Result.Result<Response, ChatModelError>
  readonly calls: (parts: ReadonlyArray<Gemini.Part>) => { readonly calls: ReadonlyArray<ToolCall> }
  readonly mergeText: (parts: ReadonlyArray<Gemini.Part>) => Array<Gemini.Part>
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** Google API statuses worth asking again. */
const retryableStatuses = new Set(["RESOURCE_EXHAUSTED", "UNAVAILABLE", "INTERNAL", "DEADLINE_EXCEEDED"])

/** The provider error an `{ error: { code, message, status } }` event reports. */
export const eventError = (error: unknown): ChatModelError => {
  const fields = isRecord(error) ? error : {}
  const status = typeof fields.status === "string" ? fields.status : undefined
  const code = typeof fields.code === "number" ? fields.code : undefined
  const message = typeof fields.message === "string" ? fields.message : JSON.stringify(error)
  return HttpStream.providerError(
    provider,
    `stream error${status === undefined ? "" : ` ${status}`}: ${message}`,
    (status !== undefined && retryableStatuses.has(status)) || code === 429 || (code !== undefined && code >= 500)
  )
}

/** A fresh decoder for one stream. */
export const decoder = (reader: Reader) => (): HttpStream.EventDecoder => {
  let parts: Array<Gemini.Part> = []
  let emitted = 0
  let finishReason: string | undefined
  let usageMetadata: unknown
  let promptFeedback: unknown

  const handle = (body: Record<string, unknown>): Result.Result<ReadonlyArray<StreamPart>, ChatModelError> => {
    if (body.error !== undefined && body.error !== null) return Result.fail(eventError(body.error))
    if (isRecord(body.usageMetadata)) usageMetadata = body.usageMetadata
    if (isRecord(body.promptFeedback)) promptFeedback = body.promptFeedback
    const candidate = Array.isArray(body.candidates) ? body.candidates[0] : undefined
    if (!isRecord(candidate)) return Result.succeed([])
    if (typeof candidate.finishReason === "string" && candidate.finishReason !== "") finishReason = candidate.finishReason
    const content = isRecord(candidate.content) ? candidate.content : {}
    const fresh: ReadonlyArray<unknown> = Array.isArray(content.parts) ? content.parts : []
    const out: Array<StreamPart> = []
    for (const part of fresh) {
      if (!isRecord(part)) return Result.fail(HttpStream.decodeError(provider, "a part is not an object"))
      const typed = part as Gemini.Part
      if (typeof typed.text === "string" && typed.text !== "" && typed.thought !== true) {
        out.push({ _tag: "TextDelta", text: typed.text })
      }
    }
    parts = reader.mergeText([...parts, ...(fresh as ReadonlyArray<Gemini.Part>)])
    // Ids come from positions in the merged parts, which later parts never change.
    const calls = reader.calls(parts).calls
    for (const call of calls.slice(emitted)) {
      out.push({ _tag: "ToolCallStarted", id: call.id, name: call.name })
      const args = stringify(call.arguments) ?? ""
      if (args !== "") out.push({ _tag: "ToolCallDelta", id: call.id, argumentsDelta: args })
      out.push({ _tag: "ToolCall", call })
    }
    emitted = calls.length
    return Result.succeed(out)
  }

  return {
    event: (event) =>
      Result.flatMap(HttpStream.json(provider, event), (body) =>
        isRecord(body) ? handle(body) : Result.fail(HttpStream.decodeError(provider, "an event is not an object"))),
    end: () => {
      const blocked = isRecord(promptFeedback) && typeof promptFeedback.blockReason === "string"
      if (finishReason === undefined && !blocked) return Result.fail(HttpStream.cutError(provider, "no finishReason"))
      const body = {
        candidates: finishReason === undefined && parts.length === 0
          ? []
          : [{ content: { role: "model", parts }, ...(finishReason === undefined ? {} : { finishReason }), index: 0 }],
        ...(usageMetadata === undefined ? {} : { usageMetadata }),
        ...(promptFeedback === undefined ? {} : { promptFeedback })
      }
      return Result.map(reader.response(body), (response): ReadonlyArray<StreamPart> => [{ _tag: "Finished", response }])
    }
  }
}
