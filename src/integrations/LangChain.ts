/**
 * tinyagents under LangChain.js (`@langchain/core` 1.x, an optional peer
 * dependency): a registry as LangChain tools. Each tool is a
 * `DynamicStructuredTool` whose `schema` is the registry's canonical JSON
 * Schema (what `bindTools` and `convertToOpenAITool` send to the model), and
 * whose calls run through the `Executor`: validation, middleware, events,
 * timeouts, retries and idempotency, with the `ToolCall.id` as the call id and
 * the run config's `signal` as cancellation.
 *
 * Invoked with a `ToolCall` (`tool.invoke(toolCall)`, as LangGraph's `ToolNode`
 * does), a tool returns a `ToolMessage`: `status: "success"` with the model-facing
 * content (redacted, offloaded output's head and tail, images, audio and files as standard blocks),
 * or `status: "error"` with the repairable error's text, so the model can
 * repair its call; `artifact` holds the executor's `ToolResult`. Arguments
 * LangChain's own JSON Schema check refuses still go to the executor, so the
 * model reads tinyagents' message (paths, expected types) and the refusal is in
 * the event log. A fatal error (a defect, a failed store, cancellation) throws a
 * `ToolCallError` (`fatal: true`) whose message never carries the cause.
 * Invoked with plain arguments (no call id), a tool returns the content and
 * throws a `ToolCallError` for any error.
 */
import { ToolMessage } from "@langchain/core/messages"
import type { RunnableConfig } from "@langchain/core/runnables"
import { DynamicStructuredTool, ToolInputParsingException } from "@langchain/core/tools"
import type { ContentBlock } from "../contract/ToolResult.ts"
import * as ToolResult from "../contract/ToolResult.ts"
import * as ResultContent from "../providers/ResultContent.ts"
import * as Run from "./internal/run.ts"

export { isToolCallError, ToolCallError } from "./internal/run.ts"
export type { Services } from "./internal/run.ts"

/** Options of {@link tools}. */
export interface Options<R> extends Run.Options<R> {
  /**
   * Tool names: `canonical` (default; `math_factorial`) or `original` (the foreign name an
   * imported tool came with; OpenAI refuses dotted names). Calls resolve either way.
   */
  readonly names?: "canonical" | "original"
}

/**
 * LangChain message content for the executor's content blocks, in order: a string, or standard
 * content blocks: `text`, `image` and `audio` (base64 `data`), a binary resource as a `file` named
 * by its URI (`metadata.filename`), a text resource as text under its URI.
 */
export const toContent = (
  content: ReadonlyArray<ContentBlock>
): string | Array<Record<string, unknown>> => {
  const blocks = ResultContent.contentFor({ content }, ResultContent.carriesMedia)
  return blocks.every((block) => block.type === "text")
    ? ToolResult.textOf({ content: blocks })
    : blocks.map((block) => {
      switch (block.type) {
        case "text":
          return { type: "text", text: block.text }
        case "image":
        case "audio":
          return { type: block.type, mimeType: block.mimeType, data: block.data }
        case "resource":
          return {
            type: "file",
            mimeType: block.resource.mimeType ?? "application/octet-stream",
            data: "blob" in block.resource ? block.resource.blob : "",
            metadata: { filename: ResultContent.fileNameOf(block.resource), uri: block.resource.uri }
          }
      }
    })
}

interface ToolCallLike {
  readonly id?: string | undefined
  readonly name?: string
  readonly args?: unknown
  readonly type?: string
}

const isToolCall = (u: unknown): u is ToolCallLike =>
  typeof u === "object" && u !== null && (u as ToolCallLike).type === "tool_call" && "args" in u

/** A LangChain tool that runs through a tinyagents executor. */
export class TinyagentsTool extends DynamicStructuredTool {
  /** The canonical tool name (what the executor and events use). */
  readonly toolName: string
  readonly #fallback: (arg: unknown, config: RunnableConfig | undefined) => Promise<unknown>
  constructor(
    fields: ConstructorParameters<typeof DynamicStructuredTool>[0] & {
      readonly toolName: string
      readonly fallback: (arg: unknown, config: RunnableConfig | undefined) => Promise<unknown>
    }
  ) {
    super(fields as never)
    this.toolName = fields.toolName
    this.#fallback = fields.fallback
  }

  /**
   * As `StructuredTool.call`; arguments its JSON Schema check refuses go to the executor
   * anyway, which refuses them with its own model-readable message.
   */
  override async call(
    arg: Parameters<DynamicStructuredTool["call"]>[0],
    configArg?: Parameters<DynamicStructuredTool["call"]>[1],
    tags?: Array<string>
  ): Promise<unknown> {
    try {
      return await super.call(arg, configArg, tags)
    } catch (error) {
      if (!(error instanceof ToolInputParsingException)) throw error
      const config = typeof configArg === "object" && configArg !== null ? configArg as RunnableConfig : undefined
      return this.#fallback(arg, config)
    }
  }
}

/** LangChain tools over a registry, and a way to release what they built. */
export interface TinyagentsTools {
  /** One tool per advertised tool, in registry order. */
  readonly tools: Array<TinyagentsTool>
  /** Releases a runtime built from a `Layer` (`services`); a no-op for a `ManagedRuntime` or `Context`. */
  readonly dispose: () => Promise<void>
}

/**
 * The registry of `options.executor` (or the `advertised` subset) as LangChain
 * tools, one `DynamicStructuredTool` per tool, in registry order.
 */
export const tools = <R>(options: Options<R>): TinyagentsTools => {
  const runner = Run.make(options)
  const made = runner.advertised.specs.map((spec) => {
    const name = options.names === "original" ? spec.originalName ?? spec.name : spec.name
    const run = async (args: unknown, config: RunnableConfig | undefined): Promise<unknown> => {
      const toolCall = (config as { readonly toolCall?: ToolCallLike } | undefined)?.toolCall
      const toolCallId = toolCall?.id
      const outcome = await runner.run(
        { id: toolCallId ?? `lc_${globalThis.crypto.randomUUID()}`, name: spec.name, arguments: args ?? {} },
        config?.signal
      )
      if (toolCallId === undefined) {
        if (outcome._tag === "error") throw outcome.error
        return toContent(outcome.result.content)
      }
      if (outcome._tag === "error" && outcome.error.fatal) throw outcome.error
      // A repairable error: the executor's error result, or (with `repair: false`) the error itself.
      const result = outcome._tag === "ok"
        ? outcome.result
        : outcome.error.result ?? { content: [ToolResult.text(outcome.error.message)], isError: true }
      return new ToolMessage({
        status: result.isError ? "error" : "success",
        content: toContent(result.content) as never,
        tool_call_id: toolCallId,
        name,
        artifact: outcome._tag === "ok" ? outcome.result : outcome.error.result ?? outcome.error.error
      })
    }
    return new TinyagentsTool({
      name,
      toolName: spec.name,
      description: spec.description,
      schema: spec.inputSchema as Record<string, unknown>,
      returnDirect: spec.options.returnDirect === true,
      func: (args: unknown, _runManager: unknown, config?: RunnableConfig) => run(args, config),
      fallback: (arg: unknown, config: RunnableConfig | undefined) =>
        isToolCall(arg)
          ? run(arg.args, { ...config, toolCall: arg } as RunnableConfig)
          : run(arg, config)
    } as never)
  })
  return { tools: made, dispose: runner.dispose }
}
