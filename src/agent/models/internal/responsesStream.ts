/**
 * The Responses API event stream (`stream: true`): `response.created`,
 * `response.output_item.added` (a `function_call` item names its call),
 * `response.output_text.delta` / `response.refusal.delta`,
 * `response.function_call_arguments.delta` and `.done` (the call is complete
 * then; a later delta may be empty, never text), `response.output_item.done`,
 * and the terminal `response.completed` / `response.incomplete` carrying the
 * whole response, read by the same decoder `generate` uses (so `Finished`
 * holds exactly the `Response` `generate` would return). `response.failed`
 * and `error` are the provider's errors; a body that ends before a terminal
 * event was cut.
 */
import { Result } from "effect"
import type { ChatModelError, Response, StreamPart } from "../../ChatModel.ts"
import type { ToolCall } from "../../../contract/ToolCall.ts"
import type * as OpenAiResponses from "../../../providers/OpenAiResponses.ts"
import * as HttpStream from "./httpStream.ts"
import { PendingCall } from "./toolCallAssembly.ts"

const provider = "openai-responses"

/** What the decoder needs of the adapter. */
export interface Reader {
  readonly response: (response: unknown) => Result.Result<Response, ChatModelError>
  readonly call: (item: OpenAiResponses.FunctionCall) => ToolCall
  readonly failure: (error: { readonly code?: string | null; readonly message?: string | null } | null | undefined) => ChatModelError
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const str = (value: unknown): string | undefined => typeof value === "string" ? value : undefined

const errorFields = (value: unknown): { readonly code?: string | null; readonly message?: string | null } =>
  isRecord(value) ? { code: str(value.code) ?? null, message: str(value.message) ?? null } : {}

/** A fresh decoder for one stream. */
export const decoder = (reader: Reader) => (): HttpStream.EventDecoder => {
  const calls = new Map<number, PendingCall>()
  const byItemId = new Map<string, number>()
  const items = new Map<number, unknown>()

  const callFor = (body: Record<string, unknown>): PendingCall | undefined => {
    const index = typeof body.output_index === "number"
      ? body.output_index
      : byItemId.get(str(body.item_id) ?? "")
    return index === undefined ? undefined : calls.get(index)
  }

  const complete = (call: PendingCall, args: string | undefined): Result.Result<ReadonlyArray<StreamPart>, ChatModelError> => {
    if (call.done) return Result.succeed([])
    if (!call.started) return Result.fail(HttpStream.decodeError(provider, "a function call ended without a call_id or name"))
    call.done = true
    return Result.succeed([{
      _tag: "ToolCall",
      call: reader.call({ type: "function_call", call_id: call.id!, name: call.name!, arguments: args ?? call.text })
    }])
  }

  const finish = (response: unknown): Result.Result<ReadonlyArray<StreamPart>, ChatModelError> => {
    const parts: Array<StreamPart> = []
    for (const call of calls.values()) {
      const done = complete(call, undefined)
      if (Result.isFailure(done)) return done
      parts.push(...done.success)
    }
    // A terminal event whose response lists no output (some compatible servers) stands for the items streamed.
    const whole = isRecord(response) && Array.isArray(response.output) && response.output.length === 0 && items.size > 0
      ? { ...response, output: [...items.entries()].sort(([a], [b]) => a - b).map(([, item]) => item) }
      : response
    return Result.map(reader.response(whole), (r) => [...parts, { _tag: "Finished" as const, response: r }])
  }

  const handle = (body: Record<string, unknown>): Result.Result<ReadonlyArray<StreamPart>, ChatModelError> => {
    switch (body.type) {
      case "response.output_item.added": {
        const item = body.item
        if (!isRecord(item) || item.type !== "function_call" || typeof body.output_index !== "number") {
          return Result.succeed([])
        }
        const call = new PendingCall()
        calls.set(body.output_index, call)
        if (typeof item.id === "string") byItemId.set(item.id, body.output_index)
        return Result.succeed([...call.identify(str(item.call_id), str(item.name)), ...call.append(str(item.arguments) ?? "")])
      }
      case "response.output_text.delta":
      case "response.refusal.delta": {
        const text = str(body.delta) ?? ""
        return Result.succeed(text === "" ? [] : [{ _tag: "TextDelta", text }])
      }
      case "response.function_call_arguments.delta": {
        const call = callFor(body)
        if (call === undefined) return Result.fail(HttpStream.decodeError(provider, "arguments for a function call that never started"))
        const delta = str(body.delta) ?? ""
        if (call.done) {
          // An empty delta adds nothing to a complete call; text does.
          return delta === ""
            ? Result.succeed([])
            : Result.fail(HttpStream.decodeError(provider, "arguments for a function call after it was complete"))
        }
        return Result.succeed(call.append(delta))
      }
      case "response.function_call_arguments.done": {
        const call = callFor(body)
        if (call === undefined) return Result.fail(HttpStream.decodeError(provider, "a function call that never started ended"))
        return complete(call, str(body.arguments))
      }
      case "response.output_item.done": {
        if (typeof body.output_index !== "number") return Result.succeed([])
        items.set(body.output_index, body.item)
        const call = calls.get(body.output_index)
        const item = isRecord(body.item) ? body.item : {}
        return call === undefined ? Result.succeed([]) : complete(call, str(item.arguments))
      }
      case "response.completed":
      case "response.incomplete":
        return finish(body.response)
      case "response.failed":
        return Result.fail(reader.failure(errorFields(isRecord(body.response) ? body.response.error : undefined)))
      case "error":
        return Result.fail(reader.failure(errorFields(body)))
      default:
        return Result.succeed([])
    }
  }

  return HttpStream.typedEvents(provider, "response.completed", handle)
}
