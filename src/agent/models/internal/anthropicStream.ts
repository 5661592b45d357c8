/**
 * The Messages event stream (`stream: true`): `message_start` (usage so
 * far), per content block `content_block_start`, `content_block_delta`s
 * (`text_delta`, `input_json_delta`, `thinking_delta`, ...) and
 * `content_block_stop`, then `message_delta` (stop reason, final usage) and
 * `message_stop`; `ping`s anywhere; an `error` event instead of the rest. A
 * `tool_use` block is a call, complete at its `content_block_stop`: its input
 * is the JSON its deltas spell (the start block's `input` when there were
 * none; the raw text when it is not JSON, for the registry to report). At
 * `message_stop` the blocks are put back together as one `Message` and read
 * by the same decoder `generate` uses, so `Finished` holds exactly the
 * `Response` `generate` would return.
 */
import { Result } from "effect"
import type { ChatModelError, Response, StreamPart } from "../../ChatModel.ts"
import * as Anthropic from "../../../providers/Anthropic.ts"
import * as HttpStream from "./httpStream.ts"
import { PendingCall } from "./toolCallAssembly.ts"

const provider = "anthropic"

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const str = (value: unknown): string | undefined => typeof value === "string" ? value : undefined

/** Error kinds worth asking again: overload, rate limits, Anthropic's own failures. */
const retryableKinds = new Set(["overloaded_error", "rate_limit_error", "api_error", "timeout_error"])

/** The provider error an `error` event reports. */
export const eventError = (body: unknown): ChatModelError => {
  const error = isRecord(body) && isRecord(body.error) ? body.error : {}
  const kind = str(error.type)
  const message = str(error.message) ?? JSON.stringify(body)
  return HttpStream.providerError(
    provider,
    `stream error${kind === undefined ? "" : ` ${kind}`}: ${message}`,
    kind !== undefined && retryableKinds.has(kind)
  )
}

/** Blocks whose input arrives as `input_json_delta`s. */
const hasJsonInput = (type: unknown): boolean =>
  type === "tool_use" || type === "server_tool_use" || type === "mcp_tool_use"

interface Block {
  value: Record<string, unknown>
  json: string
  readonly call: PendingCall | undefined
}

const inputOf = (block: Block): unknown => {
  if (block.json.trim() === "") return block.value.input ?? {}
  try {
    return JSON.parse(block.json)
  } catch {
    return block.json
  }
}

/** A fresh decoder for one stream; `response` is the whole-body decoder `generate` uses. */
export const decoder = (
  response: (message: unknown) => Result.Result<Response, ChatModelError>
) =>
(): HttpStream.EventDecoder => {
  const blocks = new Map<number, Block>()
  let usage: Record<string, unknown> = {}
  let stopReason: unknown = null

  const mergeUsage = (next: unknown) => {
    if (!isRecord(next)) return
    for (const [key, value] of Object.entries(next)) if (value !== null && value !== undefined) usage = { ...usage, [key]: value }
  }

  const blockAt = (body: Record<string, unknown>): Result.Result<readonly [number, Block], ChatModelError> => {
    const index = body.index
    const block = typeof index === "number" ? blocks.get(index) : undefined
    return block === undefined
      ? Result.fail(HttpStream.decodeError(provider, `${String(body.type)} for unknown content block ${String(index)}`))
      : Result.succeed([index as number, block] as const)
  }

  const handle = (body: Record<string, unknown>): Result.Result<ReadonlyArray<StreamPart>, ChatModelError> => {
    switch (body.type) {
      case "message_start": {
        if (isRecord(body.message)) mergeUsage(body.message.usage)
        return Result.succeed([])
      }
      case "content_block_start": {
        const start = body.content_block
        if (typeof body.index !== "number" || !isRecord(start) || typeof start.type !== "string") {
          return Result.fail(HttpStream.decodeError(provider, `content_block_start without an index or block: ${JSON.stringify(body)}`))
        }
        const call = start.type === "tool_use" ? new PendingCall() : undefined
        blocks.set(body.index, { value: { ...start }, json: "", call })
        const parts: Array<StreamPart> = []
        if (call !== undefined) parts.push(...call.identify(str(start.id), str(start.name)))
        if (start.type === "text" && typeof start.text === "string" && start.text !== "") {
          parts.push({ _tag: "TextDelta", text: start.text })
        }
        return Result.succeed(parts)
      }
      case "content_block_delta": {
        const found = blockAt(body)
        if (Result.isFailure(found)) return Result.fail(found.failure)
        const [, block] = found.success
        const delta = isRecord(body.delta) ? body.delta : {}
        switch (delta.type) {
          case "text_delta": {
            const text = str(delta.text) ?? ""
            block.value = { ...block.value, text: `${str(block.value.text) ?? ""}${text}` }
            return Result.succeed(text === "" ? [] : [{ _tag: "TextDelta", text }])
          }
          case "input_json_delta": {
            const piece = str(delta.partial_json) ?? ""
            block.json += piece
            return Result.succeed(block.call === undefined ? [] : block.call.append(piece))
          }
          case "thinking_delta":
            block.value = { ...block.value, thinking: `${str(block.value.thinking) ?? ""}${str(delta.thinking) ?? ""}` }
            return Result.succeed([])
          case "signature_delta":
            block.value = { ...block.value, signature: `${str(block.value.signature) ?? ""}${str(delta.signature) ?? ""}` }
            return Result.succeed([])
          default:
            return Result.succeed([])
        }
      }
      case "content_block_stop": {
        const found = blockAt(body)
        if (Result.isFailure(found)) return Result.fail(found.failure)
        const [index, block] = found.success
        if (hasJsonInput(block.value.type)) block.value = { ...block.value, input: inputOf(block) }
        if (block.call === undefined) return Result.succeed([])
        if (!block.call.started) {
          return Result.fail(HttpStream.decodeError(provider, `tool_use block ${index} has no id or name`))
        }
        block.call.done = true
        const [call] = Anthropic.toolCalls([block.value as Anthropic.ContentBlock]).calls
        return call === undefined
          ? Result.fail(HttpStream.decodeError(provider, `tool_use block ${index} is not a call`))
          : Result.succeed([{ _tag: "ToolCall", call }])
      }
      case "message_delta": {
        if (isRecord(body.delta) && body.delta.stop_reason !== undefined) stopReason = body.delta.stop_reason
        mergeUsage(body.usage)
        return Result.succeed([])
      }
      case "message_stop": {
        const open = [...blocks.entries()].find(([, block]) => block.call !== undefined && !block.call.done)
        if (open !== undefined) {
          return Result.fail(HttpStream.decodeError(provider, `message_stop before tool_use block ${open[0]} stopped`))
        }
        const content = [...blocks.entries()].sort(([a], [b]) => a - b).map(([, block]) => block.value)
        return Result.map(
          response({ content, usage, stop_reason: stopReason }),
          (whole): ReadonlyArray<StreamPart> => [{ _tag: "Finished", response: whole }]
        )
      }
      case "error":
        return Result.fail(eventError(body))
      default:
        // `ping`, and event types added later.
        return Result.succeed([])
    }
  }

  return HttpStream.typedEvents(provider, "message_stop", handle)
}
