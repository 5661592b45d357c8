/**
 * tinyagents under the Vercel AI SDK (`ai` 6 or 7, an optional peer dependency):
 * a registry as an AI SDK `ToolSet`. Each tool is `{ description, inputSchema,
 * execute, toModelOutput }` (what `tool()` returns) with the registry's
 * canonical JSON Schema, and `execute` runs the call through the `Executor`:
 * validation (the SDK does not validate; every input reaches the registry's
 * decoder), middleware, events, timeouts, retries and idempotency, with the
 * SDK's `toolCallId` as the call id and its `abortSignal` as cancellation.
 *
 * Failures: a call that ends in an error result (repairable: unknown tool,
 * invalid arguments, a handler's `ToolFailure`, ...) throws a `ToolCallError`
 * whose message is the model-facing text, which the SDK turns into a
 * `tool-error` part and sends back to the model as `error-text`, so the model
 * can repair its call on the next step. A fatal error (a defect, a failed
 * store, cancellation) throws a `ToolCallError` with `fatal: true`; its message
 * never carries the cause. The SDK still records it as a `tool-error`; add
 * {@link stopOnFatal} to `stopWhen` to end the loop there.
 *
 * Streams for chat front-ends: {@link uiMessageChunks}, {@link toUIMessageStream} and
 * {@link toUIMessageStreamResponse} turn a run's events (`Agent.stream`) into the SDK's UI
 * message stream, the protocol `useChat` reads, and {@link fromUIMessages} turns the chat it posts
 * into the agent's messages; {@link toEventStreamResponse} sends the same events as plain
 * server-sent events, each encoded with the event Schemas, for any other client.
 *
 * Imports `ai` at run time (its `jsonSchema`, `createUIMessageStreamResponse`, and `toolModelMessageSchema` to
 * learn whether the installed SDK takes 7's `file` tool-result parts): an
 * optional peer dependency that only this entry point (`tinyagents/ai-sdk`)
 * loads. Everything else from `ai` is a type, and those types compile against
 * both majors.
 */
import {
  createUIMessageStreamResponse,
  type JSONSchema7,
  jsonSchema,
  type StopCondition,
  type Tool,
  toolModelMessageSchema,
  type ToolSet,
  type UIMessage
} from "ai"
import { Effect, Stream } from "effect"
import type * as ChatModel from "../agent/ChatModel.ts"
import type * as ToolEvent from "../contract/ToolEvent.ts"
import type { ContentBlock } from "../contract/ToolResult.ts"
import * as ToolResult from "../contract/ToolResult.ts"
import * as ResultContent from "../providers/ResultContent.ts"
import * as EventSse from "../agent/EventSse.ts"
import * as Run from "./internal/run.ts"
import * as UiMessages from "./internal/uiMessages.ts"
import * as UiStream from "./internal/uiMessageStream.ts"

export { isToolCallError, ToolCallError } from "./internal/run.ts"
export type { Services } from "./internal/run.ts"
export type { Chunk, DataParts, Message, Metadata, ProgressData, QuestionData } from "./internal/uiMessageStream.ts"
export { Message as SseMessage, MessageJson as SseMessageJson, RunFailed } from "../agent/EventSse.ts"

/** Options of {@link toolSet}. */
export interface Options<R> extends Run.Options<R> {
  /**
   * The keys of the tool set: `canonical` (default; `math_factorial`) or `original`
   * (the foreign name an imported tool came with, `math.factorial`; AI SDK providers
   * may refuse dotted names). Calls resolve either way.
   */
  readonly names?: "canonical" | "original"
}

/** The output of a tool: the encoded structured value (or, for tools without one, the model-facing text). */
export type Output = unknown

/** A `ToolSet` over a registry, and a way to release what it built. */
export interface TinyagentsToolSet {
  readonly tools: ToolSet
  /** Releases a runtime built from a `Layer` (`services`); a no-op for a `ManagedRuntime` or `Context`. */
  readonly dispose: () => Promise<void>
}

/** True when the content is the default rendering of the value (its JSON text). */
const isDefaultRendering = (result: ToolResult.ToolResult): boolean => {
  const only = result.content.length === 1 ? result.content[0]! : undefined
  return only !== undefined && only.type === "text" && result.value !== undefined &&
    only.text === (JSON.stringify(result.value) ?? "null")
}

/**
 * How media reach the model in a tool result: `file`, AI SDK 7's part
 * (`{ type: "file", mediaType, data: { type: "data", data } }`), or AI SDK 6's
 * `image-data` for images and `file-data` for audio and binary resources (which 7
 * still reads, with a deprecation warning).
 */
export type ImageParts = "file" | "image-data"

/** A file part of AI SDK 7. */
interface FilePart {
  readonly type: "file"
  readonly mediaType: string
  readonly data: { readonly type: "data"; readonly data: string }
  readonly filename?: string
}

/** What the model reads for a tool result (a subset of the AI SDK's `ToolResultOutput`, in 6 and 7). */
export type ModelOutput =
  | { readonly type: "text"; readonly value: string }
  | {
    readonly type: "content"
    readonly value: Array<
      | { readonly type: "text"; readonly text: string }
      | FilePart
      | { readonly type: "image-data"; readonly data: string; readonly mediaType: string }
      | { readonly type: "file-data"; readonly data: string; readonly mediaType: string; readonly filename?: string }
    >
  }

/** A tool message with a `file` image part: the installed SDK's own message schema accepts it from 7 on. */
const fileProbe = {
  role: "tool",
  content: [{
    type: "tool-result",
    toolCallId: "probe",
    toolName: "probe",
    output: { type: "content", value: [{ type: "file", mediaType: "image/png", data: { type: "data", data: "AA==" } }] }
  }]
}
let detected: ImageParts | undefined
/** The media parts the installed `ai` takes (`file` from 7 on, else `image-data` / `file-data`), learned once from its message schema. */
export const imageParts = (): ImageParts =>
  detected ??= toolModelMessageSchema.safeParse(fileProbe).success ? "file" : "image-data"

type ContentPart = Extract<ModelOutput, { readonly type: "content" }>["value"][number]

/** A media part: AI SDK 7's `file`, or 6's `image-data` (images) and `file-data` (other media). */
const mediaPart = (mediaType: string, data: string, parts: ImageParts, filename?: string): ContentPart =>
  parts === "file"
    ? { type: "file", mediaType, data: { type: "data", data }, ...(filename === undefined ? {} : { filename }) }
    : mediaType.startsWith("image/") && filename === undefined
    ? { type: "image-data", data, mediaType }
    : { type: "file-data", data, mediaType, ...(filename === undefined ? {} : { filename }) }

/**
 * What the model reads for a result: the executor's content blocks in order, text, or text and
 * media parts (`images`: by default those the installed `ai` takes): images, audio and binary
 * resources (named by their URI) as media, a text resource as text under its URI.
 */
export const toModelOutput = (content: ReadonlyArray<ContentBlock>, images: ImageParts = imageParts()): ModelOutput => {
  const blocks = ResultContent.contentFor({ content }, ResultContent.carriesMedia)
  if (blocks.every((block) => block.type === "text")) return { type: "text", value: ToolResult.textOf({ content: blocks }) }
  return {
    type: "content",
    value: blocks.map((block): ContentPart => {
      switch (block.type) {
        case "text":
          return { type: "text", text: block.text }
        case "image":
        case "audio":
          return mediaPart(block.mimeType, block.data, images)
        case "resource":
          return mediaPart(
            block.resource.mimeType ?? "application/octet-stream",
            "blob" in block.resource ? block.resource.blob : "",
            images,
            ResultContent.fileNameOf(block.resource)
          )
      }
    })
  }
}

/**
 * What `execute` throws: the `ToolCallError`, whose string is its message alone.
 * AI SDK 7 renders a thrown error for the model with `String(error)` (6 with its
 * `message`), which would prefix the model-facing text with `ToolCallError: `.
 */
const modelFacing = (error: Run.ToolCallError): Run.ToolCallError =>
  Object.defineProperty(error, "toString", { value: () => error.message, configurable: true, writable: true })

/** The execution options `execute` reads (the same in AI SDK 6 and 7). */
interface Execution {
  readonly toolCallId: string
  readonly abortSignal?: AbortSignal | undefined
}

/**
 * The registry of `options.executor` (or the `advertised` subset) as an AI SDK
 * `ToolSet`, one tool (`{ description, inputSchema, execute, toModelOutput }`) per tool.
 * `execute` returns the encoded structured value (a tool's `value`, else its
 * text); the model reads what the executor rendered (redacted, offloaded
 * output's head and tail, a tool's own `toModelOutput`) through the tool's
 * `toModelOutput`.
 */
export const toolSet = <R>(options: Options<R>): TinyagentsToolSet => {
  const runner = Run.make(options)
  const tools: Record<string, Tool> = {}
  for (const spec of runner.advertised.specs) {
    /** Rendered content by call id, for `toModelOutput` (bounded: the oldest entries go first). */
    const rendered = new Map<string, ReadonlyArray<ContentBlock>>()
    const execute = async (input: unknown, execution: Execution): Promise<Output> => {
      const outcome = await runner.run(
        { id: execution.toolCallId, name: spec.name, arguments: input ?? {} },
        execution.abortSignal
      )
      if (outcome._tag === "error") throw modelFacing(outcome.error)
      const result = outcome.result
      if (!isDefaultRendering(result)) {
        rendered.set(execution.toolCallId, result.content)
        if (rendered.size > 1_000) rendered.delete(rendered.keys().next().value!)
      }
      return result.value !== undefined ? result.value : ToolResult.textOf(result)
    }
    const key = options.names === "original" ? spec.originalName ?? spec.name : spec.name
    // `tool()` of the AI SDK returns its argument as it is: the object is the tool.
    const definition = {
      description: spec.description,
      inputSchema: jsonSchema<unknown>(spec.inputSchema as JSONSchema7),
      execute,
      toModelOutput: ({ toolCallId, output }: { readonly toolCallId: string; readonly output: unknown }): ModelOutput | {
        readonly type: "json"
        readonly value: unknown
      } => {
        const content = rendered.get(toolCallId)
        if (content !== undefined) return toModelOutput(content)
        return typeof output === "string"
          ? { type: "text" as const, value: output }
          : { type: "json" as const, value: output ?? null }
      }
    }
    // `ModelOutput` is one type for both majors; each major's `ToolResultOutput` lacks the other's image part.
    tools[key] = definition as unknown as Tool
  }
  return { tools: tools as ToolSet, dispose: runner.dispose }
}

/**
 * A `stopWhen` condition: stop the loop after a step in which a tool call failed
 * fatally (a defect, a failed store, cancellation: a `ToolCallError` with
 * `fatal: true`). Repairable errors do not stop it: the model reads them.
 */
export const stopOnFatal = <TOOLS extends ToolSet = ToolSet>(): StopCondition<TOOLS> => ({ steps }) => {
  const last = steps[steps.length - 1]
  return last !== undefined &&
    last.content.some((part) => part.type === "tool-error" && Run.isToolCallError(part.error) && part.error.fatal)
}

/** The fatal `ToolCallError`s of a run's steps (`result.steps`), in order. */
export const fatalErrors = (
  steps: ReadonlyArray<{ readonly content: ReadonlyArray<{ readonly type: string; readonly error?: unknown }> }>
): Array<Run.ToolCallError> =>
  steps.flatMap((step) =>
    step.content.flatMap((part) =>
      part.type === "tool-error" && Run.isToolCallError(part.error) && part.error.fatal ? [part.error] : []
    )
  )

// ---------------------------------------------------------------------------
// streams for chat front-ends
// ---------------------------------------------------------------------------

/** Options of {@link uiMessageChunks} and {@link toUIMessageStream}. */
export interface UIMessageStreamOptions<E> extends UiStream.ChunkOptions<E> {}

/**
 * A run's events (`Agent.stream`) as the AI SDK's UI message chunks, one assistant message:
 * `start` (the run's ids as metadata), a step per turn (`start-step` ... `finish-step`), text
 * parts from `agent.text_delta`, a tool part per decided call (`tool-input-available` from
 * `agent.tool_call`), then `tool-output-available` with the model-visible output (redacted) or
 * `tool-output-error` with the message the model reads (an error result, a failed call, a refusal
 * by policy); a call refused for its input (unknown tool, malformed or invalid arguments) is
 * `tool-input-error`. Progress is a `data-tool-progress` part per call (id `progress-<toolCallId>`,
 * updated in place); a tool's question (`Ask`) is a `data-tool-question` part (id
 * `question-<toolCallId>-<n>`: `open` with the message, the answer's JSON Schema and the choices,
 * updated in place when it ends); a typed answer is `data-output`. Last `finish`, with a finish reason and the
 * run's turns, reason and usage as message metadata. A failed run ends with `error` and `finish`
 * (reason `error`) instead of failing. Nested runs' events are left out.
 */
export const uiMessageChunks = <E, R>(
  events: Stream.Stream<ToolEvent.Event, E, R>,
  options?: UIMessageStreamOptions<E>
): Stream.Stream<UiStream.Chunk, never, R> => UiStream.chunks(events, options)

/**
 * {@link uiMessageChunks} as a web `ReadableStream`, what `readUIMessageStream` and
 * `createUIMessageStreamResponse` take. The run starts with the stream and waits whenever the
 * reader is behind by `Agent.stream`'s buffer (`bufferSize` events); cancelling the stream (the
 * client went away) interrupts it.
 */
export const toUIMessageStream = <E, R>(
  events: Stream.Stream<ToolEvent.Event, E, R>,
  options?: UIMessageStreamOptions<E>
): Effect.Effect<ReadableStream<UiStream.Chunk>, never, R> =>
  Stream.toReadableStreamEffect(UiStream.chunks(events, options))

/** Options of {@link toUIMessageStreamResponse} and {@link toEventStreamResponse}: the response's status and extra headers. */
export interface ResponseOptions {
  readonly status?: number
  readonly statusText?: string
  readonly headers?: Record<string, string>
}

/**
 * The UI message stream as an SSE `Response` for a route handler (`useChat`'s default
 * transport reads it), built by the SDK's own `createUIMessageStreamResponse`.
 */
export const toUIMessageStreamResponse = <E, R>(
  events: Stream.Stream<ToolEvent.Event, E, R>,
  options: UIMessageStreamOptions<E> & ResponseOptions = {}
): Effect.Effect<Response, never, R> =>
  Effect.map(toUIMessageStream(events, options), (stream) =>
    createUIMessageStreamResponse({
      stream,
      ...(options.status === undefined ? {} : { status: options.status }),
      ...(options.statusText === undefined ? {} : { statusText: options.statusText }),
      ...(options.headers === undefined ? {} : { headers: options.headers })
    }))

/**
 * The chat `useChat` posts (its `UIMessage`s) as an agent's `messages`: system and user text, and each
 * assistant step as an assistant message with its text and the calls that have an outcome, then the
 * tool message with their outputs (or error texts). Files, reasoning and data parts are left out.
 * The history is the client's word: a server that must not trust earlier tool outputs keeps the
 * transcript itself (`AgentResult.transcript`) and takes only the new user message.
 */
export const fromUIMessages = (messages: ReadonlyArray<UIMessage>): Array<ChatModel.Message> =>
  UiMessages.toTranscript(messages)

/** Options of {@link toEventStreamResponse}. */
export interface EventStreamOptions<E> extends EventSse.Options<E>, ResponseOptions {}

/**
 * A run's events as plain server-sent events (a `Response`) for any front-end: each event one
 * `data:` message, its JSON the event's encoded form (`ToolEvent.EventJson`); a failed run ends with
 * a `run.failed` message. Decode each with {@link SseMessageJson}. Nested runs' events are included.
 */
export const toEventStreamResponse = <E, R>(
  events: Stream.Stream<ToolEvent.Event, E, R>,
  options: EventStreamOptions<E> = {}
): Effect.Effect<Response, never, R> => EventSse.toResponse(events, options)

/** {@link toEventStreamResponse}'s body as a `Stream` of SSE frames (text), for a server of your own. */
export const eventStreamFrames = <E, R>(
  events: Stream.Stream<ToolEvent.Event, E, R>,
  options?: EventSse.Options<E>
): Stream.Stream<string, never, R> => EventSse.frames(events, options)
