/**
 * Lifecycle step 9: the handler's output as a `ToolResult`. `encode` runs the
 * output through the JSON codec the exported output schema describes, and
 * shows the model what the tool's `toModelOutput` chooses (default: the encoded
 * value as JSON text); `finalize` redacts the model-facing text blocks and
 * value and offloads text over the threshold to the artifact store, keeping a
 * bounded head and tail (other blocks, such as images, are kept as they are).
 * Error results (a middleware's refusal) have their text and error redacted.
 * The artifact store keeps the full text as the handler produced it, before
 * redaction (`textOf` of the encoded output): the store holds what the tool
 * returned, the model and the events get the redacted text.
 */
import { Cause, Effect, Result, Schema } from "effect"
import { toModelCodec } from "../../../contract/internal/modelSchema.ts"
import { redactIssues, scrubberOf, scrubError } from "../../../internal/redact.ts"
import type { Redact } from "../../../contract/Safety.ts"
import { StoreRegistry } from "../../StoreRegistry.ts"
import type * as Tool from "../../../contract/Tool.ts"
import type { ToolCall } from "../../../contract/ToolCall.ts"
import * as ToolError from "../../../contract/ToolError.ts"
import * as ToolInput from "../../../contract/ToolInput.ts"
import * as ToolResult from "../../../contract/ToolResult.ts"

export interface Config {
  readonly threshold: number
  readonly head: number
  readonly tail: number
  readonly store: string
}

export const textOfValue = (value: unknown): string =>
  value === undefined ? "" : typeof value === "string" ? value : JSON.stringify(value)

/**
 * An error result (a middleware's refusal, say) under the policy: its error and its text blocks
 * (the error's message, or the middleware's own words) redacted. The same result when nothing changes.
 */
const redactErrorResult = (
  result: ToolResult.ToolResult,
  policy: Redact | undefined,
  input: unknown
): ToolResult.ToolResult => {
  const scrubber = scrubberOf(policy, input)
  if (scrubber === undefined) return result
  const error = result.error === undefined ? undefined : scrubError(result.error, scrubber)
  let changed = error !== result.error
  const content = result.content.map((block) => {
    if (block.type !== "text") return block
    const text = scrubber.text(block.text)
    if (text === block.text) return block
    changed = true
    return ToolResult.text(text)
  })
  return changed ? { ...result, content, ...(error === undefined ? {} : { error }) } : result
}

export const make = (config: Config) => {
  const encoders = new WeakMap<Tool.Any, (value: unknown) => Result.Result<unknown, Schema.SchemaError>>()
  const encoderOf = (tool: Tool.Any) => {
    let encode = encoders.get(tool)
    if (encode === undefined) {
      // The model codec: exactly the form the exported output schema describes (no "NaN" strings).
      encode = tool.output === undefined
        ? Result.succeed
        : Schema.encodeUnknownResult(toModelCodec(tool.output as Schema.Top) as Schema.Codec<unknown, unknown>)
      encoders.set(tool, encode)
    }
    return encode
  }

  /** The output as a successful result (elapsed is filled in by the terminal report). */
  const encode = (
    tool: Tool.Any,
    spec: Tool.ToolSpec,
    call: ToolCall,
    output: unknown
  ): Effect.Effect<ToolResult.ToolResult, ToolError.InvalidOutput | ToolError.ToolDefect> => {
    const encoded = encoderOf(tool)(output)
    if (Result.isFailure(encoded)) {
      // the issues may quote the output: redacted like a rejection (no value under a redacted key)
      const issues = redactIssues(ToolInput.issuesOf(encoded.failure), spec.safety.redact, output)
      return Effect.fail(new ToolError.InvalidOutput({ toolName: spec.name, issues }))
    }
    const value = encoded.success
    let content: ReadonlyArray<ToolResult.ContentBlock>
    if (tool.toModelOutput === undefined) content = [ToolResult.text(textOfValue(value))]
    else {
      try {
        content = ToolResult.contentOf(tool.toModelOutput(output))
      } catch (defect) {
        return Effect.fail(new ToolError.ToolDefect({ toolName: spec.name, cause: Cause.die(defect) }))
      }
    }
    return Effect.succeed<ToolResult.ToolResult>({
      toolCallId: call.id,
      name: spec.name,
      content,
      ...(value === undefined ? {} : { value }),
      artifacts: [],
      isError: false,
      elapsed: 0,
      ...(call.provider === undefined ? {} : { provider: call.provider })
    })
  }

  /** Redaction of model-facing text and value; large text goes to the artifact store first. */
  const finalize = (
    result: ToolResult.ToolResult,
    spec: Tool.ToolSpec,
    call: ToolCall,
    runId: string,
    input?: unknown
  ): Effect.Effect<ToolResult.ToolResult, ToolError.StoreFailed, StoreRegistry> => {
    const policy = spec.safety.redact
    if (result.isError) return Effect.succeed(redactErrorResult(result, policy, input))
    const fullText = ToolResult.textOf(result)
    const limit = spec.options.artifactThreshold ?? config.threshold
    if (policy === undefined && fullText.length <= limit) return Effect.succeed(result)
    // the policy, and the values the arguments hold under its keys (an output that echoes one loses it)
    const scrubber = scrubberOf(policy, input)
    const scrubText = (text: string) => scrubber === undefined ? text : scrubber.text(text)
    const fromValue = result.value !== undefined && fullText === textOfValue(result.value)
    const redacted = result.value === undefined || scrubber === undefined ? result.value : scrubber.value(result.value)
    const modelText = fromValue ? textOfValue(redacted) : scrubText(fullText)
    const withValue: ToolResult.ToolResult = redacted === undefined ? result : { ...result, value: redacted }
    /** Blocks that are not text (images) stay as they are, after the text. */
    const others = result.content.filter((block) => block.type !== "text")
    const texts = result.content.length - others.length
    if (modelText.length <= limit) {
      if (modelText === fullText) return Effect.succeed(withValue)
      if (texts <= 1) return Effect.succeed({ ...withValue, content: [ToolResult.text(modelText), ...others] })
      // several text blocks: each one redacted in place
      const content = result.content.map((block) =>
        block.type === "text" ? ToolResult.text(scrubText(block.text)) : block
      )
      return Effect.succeed({ ...withValue, content })
    }
    const keepHead = Math.min(config.head, Math.floor(limit * 0.6))
    const keepTail = Math.min(config.tail, Math.floor(limit * 0.2))
    return Effect.gen(function*() {
      const key = `${runId}/${call.id}`
      const store = yield* StoreRegistry.use((stores) => stores.store(config.store))
      yield* store.set(key, fullText).pipe(
        Effect.mapError((cause) => new ToolError.StoreFailed({ store: config.store, operation: "write", cause }))
      )
      const artifact: ToolResult.ArtifactRef = {
        store: config.store,
        key,
        bytes: Buffer.byteLength(fullText),
        mimeType: fromValue && typeof result.value !== "string" ? "application/json" : "text/plain"
      }
      const cut = modelText.length - keepHead - keepTail
      const bounded = `${modelText.slice(0, keepHead)}\n\n[... ${cut} characters omitted; the full output (${fullText.length} characters) is stored as artifact "${key}" ...]\n\n${
        keepTail > 0 ? modelText.slice(-keepTail) : ""
      }`
      return { ...withValue, content: [ToolResult.text(bounded), ...others], artifacts: [...result.artifacts, artifact] }
    })
  }

  return { encode, finalize }
}
