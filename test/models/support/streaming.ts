/**
 * What the streaming tests of every adapter share: running `stream` and
 * `generate` over the current `ChatModel`, the parts grouped for assertions,
 * and the interruption check (the server sees the connection close early and
 * no response is left open).
 */
import { assert } from "@effect/vitest"
import { Effect, Fiber, Stream } from "effect"
import { ChatModel, ToolRegistry } from "../../../src/index.ts"
import type { SseServer } from "./sseServer.ts"
import { registry } from "./tools.ts"

export const specs = ToolRegistry.all(registry).specs

export const ask = (content: string): ChatModel.Request => ({
  messages: [{ role: "system", content: "Be brief." }, { role: "user", content }],
  tools: specs
})

export const generate = (request: ChatModel.Request) => ChatModel.ChatModel.use((m) => m.generate(request))

/** Every part of `stream(request)`. */
export const streamAll = (request: ChatModel.Request) =>
  ChatModel.ChatModel.use((m) => Stream.runCollect(m.stream(request)))

/** The failure of `stream(request)` (after whatever parts came first), with those parts. */
export const streamFailure = (request: ChatModel.Request) =>
  ChatModel.ChatModel.use((m) =>
    Effect.gen(function*() {
      const parts: Array<ChatModel.StreamPart> = []
      const error = yield* m.stream(request).pipe(
        Stream.runForEach((part) => Effect.sync(() => parts.push(part))),
        Effect.flip
      )
      return { parts, error }
    })
  )

/** The `Finished` response of a list of parts (asserting it is the last part and the only one). */
export const finished = (parts: ReadonlyArray<ChatModel.StreamPart>): ChatModel.Response => {
  const last = parts.at(-1)
  assert.strictEqual(last?._tag, "Finished")
  assert.strictEqual(parts.filter((p) => p._tag === "Finished").length, 1)
  return (last as Extract<ChatModel.StreamPart, { _tag: "Finished" }>).response
}

/** The text deltas joined. */
export const textOf = (parts: ReadonlyArray<ChatModel.StreamPart>): string =>
  parts.flatMap((p) => p._tag === "TextDelta" ? [p.text] : []).join("")

/** The argument deltas of one call joined. */
export const argumentsOf = (parts: ReadonlyArray<ChatModel.StreamPart>, id: string): string =>
  parts.flatMap((p) => p._tag === "ToolCallDelta" && p.id === id ? [p.argumentsDelta] : []).join("")

/** A compact trace: `text`, `start:<id>`, `delta:<id>`, `call:<id>`, `finished`, with consecutive repeats collapsed. */
export const trace = (parts: ReadonlyArray<ChatModel.StreamPart>): Array<string> => {
  const out: Array<string> = []
  for (const part of parts) {
    const label = part._tag === "TextDelta"
      ? "text"
      : part._tag === "ToolCallStarted"
      ? `start:${part.id}`
      : part._tag === "ToolCallDelta"
      ? `delta:${part.id}`
      : part._tag === "ToolCall"
      ? `call:${part.call.id}`
      : "finished"
    if (out.at(-1) !== label) out.push(label)
  }
  return out
}

/**
 * Reads `stream(request)` until `received` parts arrived, then interrupts the reader; asserts the
 * server saw the response closed before it finished and that no response is left open.
 */
export const assertInterruptCloses = (server: SseServer, request: ChatModel.Request, received: number) =>
  ChatModel.ChatModel.use((m) =>
    Effect.gen(function*() {
      const parts: Array<ChatModel.StreamPart> = []
      let reached!: () => void
      const enough = new Promise<void>((resolve) => (reached = resolve))
      const fiber = yield* m.stream(request).pipe(
        Stream.runForEach((part) =>
          Effect.sync(() => {
            parts.push(part)
            if (parts.length === received) reached()
          })
        ),
        Effect.forkChild
      )
      yield* Effect.promise(() => enough)
      yield* Fiber.interrupt(fiber)
      const early = yield* Effect.promise(() => server.closed(0)).pipe(Effect.timeout("10 seconds"))
      assert.isTrue(early, "the server saw the response closed before it finished")
      assert.strictEqual(server.open(), 0)
      assert.isFalse(parts.some((p) => p._tag === "Finished"))
      return parts
    })
  )
