/**
 * The Chat Completions event stream (`stream: true`): each event's data is a
 * `ChatCompletionChunk` (text in `choices[0].delta.content`, tool calls as
 * deltas keyed by `index` with the id and name in the first one, the
 * `finish_reason` on the last choice chunk, usage on a final chunk with no
 * choices when `stream_options.include_usage` is set), then `data: [DONE]`.
 * Compatible servers vary: a delta without an `index` (Google's endpoint)
 * starts a call when it brings a new `id` and otherwise continues the latest
 * call; a new `id` at an index that holds a call with another id starts a
 * new call. A call is complete when a later call starts and its argument
 * text is complete JSON, or else at `[DONE]`; a delta for a complete call
 * may bring no argument text (an empty `arguments`), never more. At `[DONE]`
 * the chunks are put back together as one `ChatCompletion`, its calls ordered
 * by `index` as the official SDK accumulates them (calls sharing an index, or
 * a stream that leaves indexes out, in the order they started), and read by
 * the same decoder `generate` uses, so `Finished` holds exactly the
 * `Response` `generate` would return. A chunk carrying `error`, and an
 * `event: error` (its `error`, else its whole data), is the provider's error;
 * a body that ends before `[DONE]` was cut.
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

/** A call being assembled: its `index` when the deltas gave one. */
interface Slot {
  readonly index: number | undefined
  readonly call: PendingCall
}

/** A fresh decoder for one stream. */
export const decoder = (reader: Reader) => (): HttpStream.EventDecoder => {
  let content = ""
  let refusal = ""
  let finishReason: unknown = null
  let usage: unknown = undefined
  /** Every call, in the order it started. */
  const slots: Array<Slot> = []
  /** The call each index currently stands for. */
  const byIndex = new Map<number, Slot>()
  const byId = new Map<string, Slot>()

  const label = (slot: Slot): string =>
    slot.index === undefined ? `tool call ${slot.call.id ?? `#${slots.indexOf(slot)}`}` : `tool call ${slot.index}`

  const complete = (slot: Slot): Result.Result<Array<StreamPart>, ChatModelError> => {
    const call = slot.call
    if (call.id === undefined || call.name === undefined) {
      return Result.fail(HttpStream.decodeError(provider, `${label(slot)} ended without ${call.id === undefined ? "an id" : "a name"}`))
    }
    call.done = true
    return Result.succeed([{
      _tag: "ToolCall",
      call: reader.call({ id: call.id, type: "function", function: { name: call.name, arguments: call.text } })
    }])
  }

  /** Starts a call; the earlier calls whose arguments are whole JSON are complete now. */
  const start = (index: number | undefined, parts: Array<StreamPart>): Result.Result<Slot, ChatModelError> => {
    for (const earlier of slots) {
      if (!earlier.call.done && earlier.call.started && isCompleteJson(earlier.call.text)) {
        const done = complete(earlier)
        if (Result.isFailure(done)) return Result.fail(done.failure)
        parts.push(...done.success)
      }
    }
    const slot: Slot = { index, call: new PendingCall() }
    slots.push(slot)
    if (index !== undefined) byIndex.set(index, slot)
    return Result.succeed(slot)
  }

  /** The call a delta belongs to, started when the delta begins one. */
  const slotFor = (index: number | undefined, id: string | undefined, parts: Array<StreamPart>): Result.Result<Slot, ChatModelError> => {
    const known = id === undefined ? undefined : byId.get(id)
    if (index === undefined) {
      // No index: a known id is its call, a new id a new call, no id the latest call.
      if (known !== undefined) return Result.succeed(known)
      const latest = slots.at(-1)
      return id === undefined && latest !== undefined ? Result.succeed(latest) : start(undefined, parts)
    }
    const current = byIndex.get(index)
    if (current === undefined) return start(index, parts)
    // A different id at an index already taken is another call (two whole calls at `index: 0`).
    if (id !== undefined && current.call.id !== undefined && current.call.id !== id) return known !== undefined ? Result.succeed(known) : start(index, parts)
    return Result.succeed(current)
  }

  const toolDelta = (raw: unknown): Result.Result<Array<StreamPart>, ChatModelError> => {
    if (!isRecord(raw)) {
      return Result.fail(HttpStream.decodeError(provider, `a tool call delta is not an object: ${JSON.stringify(raw)}`))
    }
    const index = typeof raw.index === "number" ? raw.index : undefined
    const id = str(raw.id) === "" ? undefined : str(raw.id)
    const fn = isRecord(raw.function) ? raw.function : {}
    const parts: Array<StreamPart> = []
    const found = slotFor(index, id, parts)
    if (Result.isFailure(found)) return Result.fail(found.failure)
    const slot = found.success
    const piece = str(fn.arguments)
    if (slot.call.done) {
      // A delta that brings no argument text adds nothing to a complete call.
      if (piece === undefined || piece === "") return Result.succeed(parts)
      return Result.fail(HttpStream.decodeError(provider, `${label(slot)} received more arguments after it was complete`))
    }
    parts.push(...slot.call.identify(id, str(fn.name)))
    if (slot.call.id !== undefined) byId.set(slot.call.id, slot)
    if (piece !== undefined) parts.push(...slot.call.append(piece))
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

  /** An `event: error`: its `error` when it has one, else its whole data (a message and a type, or text). */
  const errorEvent = (event: HttpStream.Event): Result.Result<Array<StreamPart>, ChatModelError> => {
    const parsed = HttpStream.json(provider, event)
    if (Result.isFailure(parsed)) return Result.fail(chunkError(HttpStream.excerpt(event, 1000)))
    const body = parsed.success
    return Result.fail(chunkError(isRecord(body) && body.error !== undefined && body.error !== null ? body.error : body))
  }

  /** The calls by `index` (a stable sort: those sharing one stay in order); in the order they started when one has none. */
  const ordered = (): ReadonlyArray<Slot> =>
    slots.every((slot) => slot.index !== undefined) ? [...slots].sort((a, b) => a.index! - b.index!) : slots

  const done = (): Result.Result<Array<StreamPart>, ChatModelError> => {
    const parts: Array<StreamPart> = []
    const final = ordered()
    for (const slot of final) {
      if (slot.call.done) continue
      const out = complete(slot)
      if (Result.isFailure(out)) return out
      parts.push(...out.success)
    }
    const toolCalls = final.map(({ call }) => ({
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
      if (event.event === "error") return errorEvent(event)
      if (event.data.trim() === "[DONE]") return done()
      return Result.flatMap(HttpStream.json(provider, event), chunk)
    },
    end: () => Result.fail(HttpStream.cutError(provider, "no [DONE]"))
  }
}
