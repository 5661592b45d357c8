/**
 * tinyagents and `effect/ai` (part of `effect`: no extra dependency), both ways.
 *
 * **Export** a registry as an `effect/ai` `Toolkit`: one dynamic tool per spec
 * (canonical name, description, the canonical JSON Schema as parameters) whose
 * handler runs the call through the `Executor`, so `LanguageModel.generateText`
 * (and `Chat`) resolve tool calls with tinyagents' validation, middleware,
 * events, timeouts, retries and idempotency. The model's parameters reach the
 * executor undecoded (the registry's decoder is the one check). A result is
 * `Rendered` (the executor's `ToolResult`; encoded as the structured value, or
 * the model-facing text when the tool renders its own), and the model reads the
 * executor's content blocks (`modelOutput`). A repairable error becomes a
 * failure result (`isFailure: true`, failure mode `"return"`) whose value is the
 * model-facing text, so the model can repair its call; a fatal error (a
 * defect, a failed store, cancellation) ends `generateText` as a defect: the
 * `ToolError` (the `tool.failed` event carries the full cause).
 *
 * **Import** an `effect/ai` `Toolkit` (with its handlers) as tinyagents tools:
 * each tool becomes `Tool.fromJsonSchema` over its parameters' JSON Schema, whose
 * handler calls the toolkit's `handle` under the executor (so it gets timeouts,
 * retries, events, middleware and the model's call id). Failures the toolkit
 * returns or raises (declared failures, parameter errors) become repairable
 * `ToolFailure`s with the encoded failure as `detail`; defects stay defects.
 */
import { Cause, Context, Effect, Layer, Option, Schema, SchemaTransformation, Stream } from "effect"
import { AiError, type Prompt, Tool as AiTool, Toolkit } from "effect/ai"
import type { Safety } from "../contract/Safety.ts"
import * as Tool from "../contract/Tool.ts"
import type * as ToolError from "../contract/ToolError.ts"
import { repairable } from "../contract/ToolError.ts"
import * as ResultContent from "../providers/ResultContent.ts"
import * as ToolRegistry from "../contract/ToolRegistry.ts"
import * as ToolResult from "../contract/ToolResult.ts"
import type * as Executor from "../runtime/Executor.ts"
import { ToolCallContext } from "../runtime/ToolCallContext.ts"

// ---------------------------------------------------------------------------
// export: a registry as a Toolkit
// ---------------------------------------------------------------------------

/** A successful call as a toolkit handler returns it: the executor's `ToolResult`. */
export class Rendered {
  readonly result: ToolResult.ToolResult
  constructor(result: ToolResult.ToolResult) {
    this.result = result
  }
  /** The encoded structured value (`undefined` for tools without one). */
  get value(): unknown {
    return this.result.value
  }
  /** The model-facing text. */
  get text(): string {
    return ToolResult.textOf(this.result)
  }
}

/** True when the content is the default rendering of the value (its JSON text). */
const isDefaultRendering = (result: ToolResult.ToolResult): boolean => {
  const only = result.content.length === 1 ? result.content[0]! : undefined
  return only !== undefined && only.type === "text" && result.value !== undefined &&
    only.text === (JSON.stringify(result.value) ?? "null")
}

/**
 * The success schema of exported tools: a {@link Rendered} encodes to the structured value when
 * the model reads it as JSON, else to the model-facing text; an encoded value decodes to a
 * `Rendered` whose content is its JSON text.
 */
export const RenderedSchema: Schema.Codec<Rendered, unknown> = Schema.Unknown.pipe(
  Schema.decodeTo(
    Schema.declare((u): u is Rendered => u instanceof Rendered, { expected: "Rendered" }),
    SchemaTransformation.transform({
      decode: (value: unknown): Rendered =>
        new Rendered({
          toolCallId: "",
          name: "",
          content: [typeof value === "string" ? ToolResult.text(value) : ToolResult.json(value)],
          value,
          artifacts: [],
          isError: false,
          elapsed: 0
        }),
      encode: (rendered: Rendered): unknown =>
        isDefaultRendering(rendered.result) || rendered.result.value === undefined && rendered.result.content.length === 0
          ? rendered.result.value
          : rendered.text
    })
  )
)

/**
 * The model-facing parts of a result, in order: text parts; images, audio and binary resources
 * (named by their URI) as file parts; a text resource as text under its URI.
 */
export const toModelOutput = (content: ReadonlyArray<ToolResult.ContentBlock>): Array<Prompt.ToolModelOutputPart> =>
  ResultContent.contentFor({ content }, ResultContent.carriesMedia).map((block) => {
    switch (block.type) {
      case "text":
        return AiPromptParts.text(block.text)
      case "image":
      case "audio":
        return AiPromptParts.file(block.mimeType, block.data)
      case "resource":
        return AiPromptParts.file(
          block.resource.mimeType ?? "application/octet-stream",
          "blob" in block.resource ? block.resource.blob : "",
          ResultContent.fileNameOf(block.resource)
        )
    }
  })

const AiPromptParts = {
  text: (text: string): Prompt.ToolModelOutputPart => ({ type: "text", text }) as unknown as Prompt.ToolModelOutputPart,
  file: (mediaType: string, data: string, fileName?: string): Prompt.ToolModelOutputPart =>
    ({ type: "file", mediaType, data, ...(fileName === undefined ? {} : { fileName }) }) as unknown as Prompt.ToolModelOutputPart
}

/** An exported tool: dynamic, with the spec's JSON Schema, returning failures as results. */
export type ExportedTool = AiTool.Dynamic<string, {
  readonly parameters: AiTool.AnyDynamic["jsonSchema"] & object
  readonly success: typeof RenderedSchema
  readonly failure: typeof Schema.String
  readonly failureMode: "return"
}>

/** The toolkit of exported tools, by canonical name. */
export type ExportedToolkit = Toolkit.Toolkit<Record<string, ExportedTool>>

const advertisedOf = (source: ToolRegistry.ToolRegistry<unknown> | ToolRegistry.Advertised<unknown>) =>
  "entries" in source ? ToolRegistry.all(source) : source

/**
 * The tool definitions of a registry (or an `Advertised` view), as `effect/ai`
 * dynamic tools: canonical name, description, canonical JSON Schema.
 */
export const toolkit = (
  source: ToolRegistry.ToolRegistry<unknown> | ToolRegistry.Advertised<unknown>
): ExportedToolkit =>
  Toolkit.make(
    ...advertisedOf(source).specs.map((spec) =>
      AiTool.dynamic(spec.name, {
        description: spec.description,
        parameters: spec.inputSchema,
        success: RenderedSchema,
        failure: Schema.String,
        failureMode: "return",
        toModelOutput: (rendered: Rendered) => toModelOutput(rendered.result.content)
      }) as unknown as ExportedTool
    )
  ) as unknown as ExportedToolkit

/** Options of {@link layer} and {@link toToolkit}. */
export interface ExportOptions {
  /** The tools to offer (and accept calls for). Default: every tool of the executor's registry. */
  readonly advertised?: ToolRegistry.Advertised<unknown>
}

let generated = 0

/**
 * The handlers of {@link toolkit}`(executor.registry)` as a layer: each runs the call through
 * `executor` with the services the layer was built with (`RunContext`, `EventSink`,
 * `StoreRegistry`, the tools' own).
 */
export const layer = <R>(
  executor: Executor.Executor<R>,
  options: ExportOptions = {}
): Layer.Layer<AiTool.Handler<string>, never, Executor.Requirements<R>> => {
  const advertised = options.advertised ?? ToolRegistry.all(executor.registry)
  const definitions = toolkit(advertised)
  return definitions.toLayer(
    Effect.map(Effect.context<Executor.Requirements<R>>(), (captured) => {
      const handlers: Record<
        string,
        (params: unknown, context: Toolkit.HandlerContext<ExportedTool>) => Effect.Effect<Rendered, string>
      > = {}
      for (const spec of advertised.specs) {
        handlers[spec.name] = (params, context) =>
          executor.run(
            { id: context.toolCallId ?? `effect_ai_${++generated}`, name: spec.name, arguments: params ?? {} },
            { advertised }
          ).pipe(
            Effect.updateContext((current: Context.Context<never>) => Context.merge(captured, current)),
            Effect.flatMap((result) =>
              result.isError ? Effect.fail(ToolResult.textOf(result)) : Effect.succeed(new Rendered(result))
            ),
            Effect.catch((error: ToolError.ToolError | string) =>
              typeof error === "string" || error.disposition !== "fatal" ?
                Effect.fail(typeof error === "string" ? error : error.message) :
                Effect.die(error)
            )
          ) as Effect.Effect<Rendered, string>
      }
      return handlers as never
    })
  ) as unknown as Layer.Layer<AiTool.Handler<string>, never, Executor.Requirements<R>>
}

/**
 * {@link toolkit} with its handlers ({@link layer}): pass it to `LanguageModel.generateText({ toolkit })`
 * or `Chat`.
 */
export const toToolkit = <R>(
  executor: Executor.Executor<R>,
  options: ExportOptions = {}
): Effect.Effect<Toolkit.WithHandler<Record<string, ExportedTool>>, never, Executor.Requirements<R>> =>
  toolkit(options.advertised ?? ToolRegistry.all(executor.registry)).pipe(
    Effect.provide(layer(executor, options))
  ) as unknown as Effect.Effect<Toolkit.WithHandler<Record<string, ExportedTool>>, never, Executor.Requirements<R>>

// ---------------------------------------------------------------------------
// import: a Toolkit as tinyagents tools
// ---------------------------------------------------------------------------

/** Options of {@link fromToolkit}. */
export interface ImportOptions {
  /** Safety metadata by tool name; default: from the tool's `Readonly`/`Destructive`/`Idempotent`/`OpenWorld` annotations. */
  readonly safety?: Readonly<Record<string, Safety>>
  /** Per-tool timeout (default: the executor's `defaultTimeout`). */
  readonly timeout?: Tool.FromJsonSchemaOptions<never, []>["timeout"]
}

/** Safety from an `effect/ai` tool's annotations. */
export const safetyOf = (tool: AiTool.Any): Safety => {
  const readonly = Context.get(tool.annotations, AiTool.Readonly)
  const destructive = Context.get(tool.annotations, AiTool.Destructive)
  return {
    access: readonly ? "read" : destructive ? "mutate" : "write",
    idempotent: readonly || Context.get(tool.annotations, AiTool.Idempotent),
    networked: Context.get(tool.annotations, AiTool.OpenWorld),
    ...(destructive && !readonly ? { destructive: true } : {})
  }
}

/** Text for a failure the model reads: a string as is, else its JSON. */
const failureText = (value: unknown): string => {
  if (typeof value === "string") return value
  try {
    return JSON.stringify(value) ?? String(value)
  } catch {
    return String(value)
  }
}

/** The repairable `ToolFailure` for a failure a toolkit raised (declared failure or `AiError`). */
const toFailure = (tool: AiTool.Any, error: unknown): ToolError.ToolFailure => {
  if (AiError.isAiError(error)) return repairable(`${tool.name}: ${error.reason.message}`)
  const encoded = Schema.encodeUnknownOption(AiTool.failureResultSchema(tool) as unknown as Schema.Codec<unknown, unknown>)(error)
  const detail = Option.getOrUndefined(encoded)
  return repairable(`${tool.name}: ${failureText(detail ?? (error instanceof Error ? error.message : String(error)))}`, detail)
}

/**
 * The tools of an `effect/ai` toolkit as tinyagents tools (an imported tool per user-defined or
 * dynamic tool; provider-defined ones are skipped: the provider runs them). Give the toolkit with
 * its handlers (`yield* MyToolkit` with its layer provided), or the toolkit itself, whose handlers
 * are then read from the context. Handlers that need services at call time (a tool's
 * `dependencies`) get them from the executor's context. Foreign names (`GetWeather`) are kept and
 * registered under a canonical alias (`get_weather`).
 */
export const fromToolkit = <Tools extends Record<string, AiTool.Any>>(
  source: Toolkit.WithHandler<Tools> | Toolkit.Toolkit<Tools>,
  options: ImportOptions = {}
): Effect.Effect<Array<Tool.Dynamic<ToolError.ToolFailure, ToolCallContext>>, Tool.SchemaImportError, AiTool.HandlersFor<Tools>> =>
  Effect.gen(function*() {
    const withHandler: Toolkit.WithHandler<Tools> = Effect.isEffect(source)
      ? yield* (source as Toolkit.Toolkit<Tools>)
      : source as Toolkit.WithHandler<Tools>
    const imported: Array<Tool.Dynamic<ToolError.ToolFailure, ToolCallContext>> = []
    for (const aiTool of Object.values(withHandler.tools) as Array<AiTool.Any>) {
      if (AiTool.isProviderDefined(aiTool)) continue
      const made = Tool.fromJsonSchema(aiTool.name, {
        description: AiTool.getDescription(aiTool) ?? aiTool.name,
        inputSchema: AiTool.getJsonSchema(aiTool) as Tool.FromJsonSchemaOptions<never, []>["inputSchema"],
        services: [ToolCallContext],
        safety: options.safety?.[aiTool.name] ?? safetyOf(aiTool),
        ...(options.timeout === undefined ? {} : { timeout: options.timeout }),
        handler: (params) =>
          Effect.gen(function*() {
            const call = yield* ToolCallContext
            const results = yield* withHandler.handle(aiTool.name as keyof Tools, params as never, call.toolCallId).pipe(
              Stream.unwrap,
              Stream.filter((r) => !r.preliminary),
              Stream.runCollect
            )
            const last = results[results.length - 1]
            if (last === undefined) return yield* Effect.fail(repairable(`${aiTool.name}: returned no result`))
            if (last.isFailure) {
              return yield* Effect.fail(
                repairable(`${aiTool.name}: ${failureText(last.encodedResult)}`, last.encodedResult)
              )
            }
            return last.encodedResult
          }).pipe(
            Effect.catchCause((cause) => {
              const failure = Cause.findErrorOption(cause)
              if (Option.isSome(failure)) {
                const error = failure.value as unknown
                return Effect.fail(
                  error instanceof Error && (error as { _tag?: unknown })._tag === "ToolFailure"
                    ? error as ToolError.ToolFailure
                    : toFailure(aiTool, error)
                )
              }
              return Effect.failCause(cause as Cause.Cause<never>)
            })
          ) as Effect.Effect<unknown, ToolError.ToolFailure, ToolCallContext>
      })
      if (made._tag === "Failure") return yield* Effect.fail(made.failure)
      imported.push(made.success)
    }
    return imported
  })
