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
 * event was cut. Under tool search, a client `tool_search_call` item is a call
 * to the search tool: started at `response.output_item.added` (once it has a
 * `call_id`), its arguments (a parsed value, never streamed in pieces) sent as
 * one delta and the call at `response.output_item.done`.
 */
import { Result } from "effect"
import type { ChatModelError, Response, StreamPart } from "../../ChatModel.ts"
import type { ToolCall } from "../../../contract/ToolCall.ts"
import { stringify } from "../../../internal/json.ts"
import type * as OpenAiResponses from "../../../providers/OpenAiResponses.ts"
import * as HttpStream from "./httpStream.ts"
import { PendingCall } from "./toolCallAssembly.ts"

const provider = "openai-responses"

/** What the decoder needs of the adapter. */
export interface Reader {
  readonly response: (response: unknown) => Result.Result<Response, ChatModelError>
  readonly call: (item: OpenAiResponses.FunctionCall) => ToolCall
  readonly failure: (error: { readonly code?: string | null; readonly message?: string | null } | null | undefined) => ChatModelError
  /** The search tool's name, when the request sends a client `tool_search` tool. */
  readonly toolSearch?: string
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const str = (value: unknown): string | undefined => typeof value === "string" ? value : undefined

const errorFields = (value: unknown): { readonly code?: string | null; readonly message?: string | null } =>
  isRecord(value) ? { code: str(value.code) ?? null, message: str(value.message) ?? null } : {}

/** A fresh decoder for one stream. */
export const decoder = (reader: Reader) => (): HttpStream.EventDecoder => {
  const calls = new Map<number, PendingCall>()
  const searches = new Map<number, PendingCall>()
  const byItemId = new Map<string, number>()
  const items = new Map<number, unknown>()

  const isSearch = (item: unknown): item is Record<string, unknown> =>
    reader.toolSearch !== undefined && isRecord(item) && item.type === "tool_search_call" && item.execution === "client"

  /** A search call's parts so far: started once it has a `call_id`; with `done`, its arguments and the call. */
  const search = (index: number, item: Record<string, unknown>, done: boolean): Result.Result<ReadonlyArray<StreamPart>, ChatModelError> => {
    let call = searches.get(index)
    if (call === undefined) searches.set(index, call = new PendingCall())
    if (call.done) return Result.succeed([])
    const parts = call.identify(str(item.call_id), reader.toolSearch)
    if (!done) return Result.succeed(parts)
    if (!call.started) return Result.fail(HttpStream.decodeError(provider, "a tool search call ended without a call_id"))
    call.done = true
    return Result.succeed([
      ...parts,
      ...call.append(item.arguments === undefined ? "" : stringify(item.arguments) ?? ""),
      { _tag: "ToolCall", call: { id: call.id!, name: call.name!, arguments: item.arguments } }
    ])
  }

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
    return Result.map(reader.response(whole), (r) => {
      // a search call the stream never finished: as the whole response has it
      for (const call of searches.values()) {
        const found = call.done ? undefined : r.toolCalls.find((c) => c.id === call.id)
        if (found !== undefined) parts.push(...call.identify(found.id, found.name), { _tag: "ToolCall", call: found })
      }
      return [...parts, { _tag: "Finished" as const, response: r }]
    })
  }

  const handle = (body: Record<string, unknown>): Result.Result<ReadonlyArray<StreamPart>, ChatModelError> => {
    switch (body.type) {
      case "response.output_item.added": {
        const item = body.item
        if (isSearch(item) && typeof body.output_index === "number") return search(body.output_index, item, false)
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
        if (isSearch(body.item)) return search(body.output_index, body.item, true)
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
