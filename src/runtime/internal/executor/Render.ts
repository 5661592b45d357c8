/**
 * Lifecycle step 4, render: the handler's output as a `ToolResult`. `encode` runs the
 * output through the JSON codec the exported output schema describes, and
 * shows the model what the tool's `toModelOutput` chooses (default: the encoded
 * value as JSON text); `finalize` redacts the model-facing text blocks and
 * value (`scrubResult`, which the `redaction` middleware uses too) and offloads
 * text over the threshold to the artifact store, keeping a bounded head and
 * tail (other blocks, such as images, audio and embedded resources, are kept after it, not measured). Error results (a
 * middleware's refusal) have their text and error redacted.
 * The artifact store keeps the full text as the handler produced it, before
 * redaction (`textOf` of the encoded output): the store holds what the tool
 * returned, the model and the events get the redacted text.
 *
 * What the store kept is read back after the write, and the result says what it is: a store with
 * a size cap (`artifacts.maxBytes`) keeps a cut copy, and then the `ArtifactRef` has the stored size
 * and the model's note says where it is cut. A write that fails does not fail the call: the handler
 * succeeded (a side effect done cannot be undone, and an error would ask for it again), so the
 * result is a success with the same head and tail and a note that the full output could not be
 * stored, and the failure is logged at `Warn` level (no artifact, no event of its own).
 */
import { Cause, Effect, Exit, Result, Schema, SchemaAST } from "effect"
import * as FastDecode from "../../../internal/fastDecode.ts"
import { toModelCodec } from "../../../contract/ToolSchema.ts"
import { textOfValue } from "../../../internal/json.ts"
import { redactIssues, scrubError } from "../../../internal/redact/errors.ts"
import { type Scrubber, scrubberOf } from "../../../internal/redact/policy.ts"
import { scrubResult } from "../../../internal/redact/result.ts"
import * as Now from "./Now.ts"
import { StoreRegistry } from "../../StoreRegistry.ts"
import type * as Tool from "../../../contract/Tool.ts"
import type { ToolCall } from "../../../contract/ToolCall.ts"
import * as ToolError from "../../../contract/ToolError.ts"
import * as ToolInput from "../../../contract/ToolInput.ts"
import * as ToolResult from "../../../contract/ToolResult.ts"

export interface Config {
  readonly threshold: number
  /** Characters kept from the start and the end of offloaded text, clamped per call to 60% and 20% of its threshold. */
  readonly head: number
  readonly tail: number
  readonly store: string
}

/** What the artifact store holds after a write: the text whole, a cut copy of it, or nothing (the write failed). */
type Offloaded =
  | { readonly _tag: "Whole"; readonly bytes: number }
  | { readonly _tag: "Cut"; readonly bytes: number }
  | { readonly _tag: "Failed"; readonly error: ToolError.StoreFailed }

/** A result's artifacts before any is stored: one frozen empty list for every result (results are never written to). */
const noArtifacts: ReadonlyArray<ToolResult.ArtifactRef> = Object.freeze([])

/** An output its schema refuses (a class of this module: no output is one). */
class Refused {
  readonly error: Schema.SchemaError
  constructor(error: Schema.SchemaError) {
    this.error = error
  }
}

/** Encode's options (Effect's default: unknown keys dropped, the first issue only). */
const encodeOptions: SchemaAST.ParseOptions = {}

/**
 * The output's encoder: the model codec's (exactly the form the exported output schema describes:
 * no "NaN" strings), answering the encoded value or {@link Refused}. Effect's encode is the decode
 * of the flipped AST, so the compiled validator of that decode (`src/internal/fastDecode.ts`, under encode's
 * default options) answers it by plain calls where it covers the schema: the same value, a copy in
 * the schema's key order. Where it answers "invalid" (or a check throws), Effect's encode runs and
 * says what it says. (Answering an output the copy would equal with the output itself was measured
 * too: the checks that tell an object from a plain copy of it, its accessors and symbol keys, cost
 * more CPU than the copy.)
 */
export const outputEncoder = (output: Schema.Top): (value: unknown) => unknown => {
  const codec = toModelCodec(output) as Schema.Codec<unknown, unknown>
  const encode = Schema.encodeUnknownResult(codec)
  const effect = (value: unknown): unknown => {
    const encoded = encode(value)
    return Result.isSuccess(encoded) ? encoded.success : new Refused(encoded.failure)
  }
  const fast = FastDecode.compile(SchemaAST.flip(codec.ast), encodeOptions)
  if (fast === undefined) return effect
  return (value) => {
    let encoded: unknown = FastDecode.invalid
    try {
      encoded = fast(value, false)
    } catch {
      // a check that throws: Effect's encode meets it too
    }
    return encoded === FastDecode.invalid ? effect(value) : encoded
  }
}

export const make = (config: Config) => {
  const failed = (cause: unknown) => new ToolError.StoreFailed({ store: config.store, operation: "write", cause })

  /**
   * Writes `text` under `key`, then reads it back: a store may keep less than it is given (a size
   * cap cuts a text, so fewer bytes is a cut copy). A read that fails after a successful write
   * counts as whole; a failed write (or a store that then holds nothing) is `Failed`. Interruption
   * passes through.
   */
  const offload = (key: string, text: string): Effect.Effect<Offloaded, never, StoreRegistry> =>
    StoreRegistry.use((stores) => stores.store(config.store)).pipe(
      Effect.flatMap((store) =>
        Effect.andThen(
          Effect.mapError(store.set(key, text), failed),
          Effect.matchEffect(store.get(key), {
            onFailure: () => Effect.succeed<Offloaded>({ _tag: "Whole", bytes: Buffer.byteLength(text) }),
            onSuccess: (kept): Effect.Effect<Offloaded, ToolError.StoreFailed> => {
              if (kept === undefined) return Effect.fail(failed("the store holds nothing under the key after the write"))
              const bytes = Buffer.byteLength(text)
              const stored = Buffer.byteLength(kept)
              return Effect.succeed(stored < bytes ? { _tag: "Cut", bytes: stored } : { _tag: "Whole", bytes })
            }
          })
        )
      ),
      Effect.catch((error) => Effect.succeed<Offloaded>({ _tag: "Failed", error }))
    )

  /** The warning of a failed artifact write (its error redacted like everything else that leaves the call). */
  const warnFailed = (
    error: ToolError.StoreFailed,
    scrubber: Scrubber | undefined,
    spec: Tool.ToolSpec,
    call: ToolCall,
    key: string
  ): Effect.Effect<void> =>
    Effect.logWarning(
      "tinyagents: the artifact store failed to write a large output; " +
        "the call succeeded and its result keeps only the head and tail",
      Cause.fail(scrubber === undefined ? error : scrubError(error, scrubber))
    ).pipe(Effect.annotateLogs({ tool: spec.name, toolCallId: call.id, store: config.store, key }))

  const encoders = new WeakMap<Tool.Any, (value: unknown) => unknown>()
  const encoderOf = (tool: Tool.Any) => {
    let encode = encoders.get(tool)
    if (encode === undefined) {
      encode = tool.output === undefined ? (value) => value : outputEncoder(tool.output as Schema.Top)
      encoders.set(tool, encode)
    }
    return encode
  }

  /** The output as a successful result (elapsed is filled in by the terminal report), itself (`Now.Answer`), or the failure. */
  const encode = (
    tool: Tool.Any,
    spec: Tool.ToolSpec,
    call: ToolCall,
    output: unknown
  ): Now.Answer<ToolResult.ToolResult, ToolError.InvalidOutput | ToolError.ToolDefect> => {
    const value = encoderOf(tool)(output)
    if (value instanceof Refused) {
      // the issues may quote the output: redacted like a rejection (no value under a redacted key)
      const issues = redactIssues(ToolInput.issuesOf(value.error), spec.safety.redact, output)
      return Effect.fail(new ToolError.InvalidOutput({ toolName: spec.name, issues }))
    }
    let content: ReadonlyArray<ToolResult.ContentBlock>
    if (tool.toModelOutput === undefined) content = [ToolResult.text(textOfValue(value))]
    else {
      try {
        content = ToolResult.contentOf(tool.toModelOutput(output))
      } catch (defect) {
        return Effect.fail(new ToolError.ToolDefect({ toolName: spec.name, cause: Cause.die(defect) }))
      }
    }
    // written out (no spread of a temporary object): every successful call's result
    const result: ToolResult.ToolResult = value === undefined
      ? { toolCallId: call.id, name: spec.name, content, artifacts: noArtifacts, isError: false, elapsed: 0 }
      : { toolCallId: call.id, name: spec.name, content, value, artifacts: noArtifacts, isError: false, elapsed: 0 }
    made = call.provider === undefined ? result : { ...result, provider: call.provider }
    return made
  }

  /** The result {@link encode} made last, until {@link takeMade} takes it. */
  let made: ToolResult.ToolResult | undefined

  /**
   * True (once) when `result` is the one {@link encode} made last: a caller that got it back by
   * plain calls from `encode`, with nothing run in between (no middleware's code, no store), is
   * the only one holding it, and may complete it in place (its elapsed time) instead of copying.
   */
  const takeMade = (result: ToolResult.ToolResult): boolean => {
    if (result !== made) return false
    made = undefined
    return true
  }

  /**
   * {@link finalize} of a result that offloads nothing (an error, or text within its threshold): the
   * result, at once; `undefined` when its text goes to the artifact store (then `finalize` does it).
   */
  const finalizeNow = (result: ToolResult.ToolResult, spec: Tool.ToolSpec, input?: unknown): ToolResult.ToolResult | undefined => {
    // the policy, and the values the arguments hold under its keys (an output that echoes one loses it)
    const scrubber = scrubberOf(spec.safety.redact, input)
    const redacted = scrubber === undefined ? result : scrubResult(result, scrubber)
    if (result.isError) return redacted
    return ToolResult.textOf(redacted).length <= (spec.options.artifactThreshold ?? config.threshold) ? redacted : undefined
  }

  /** Redaction of model-facing text and value; large text goes to the artifact store first. */
  const finalize = (
    result: ToolResult.ToolResult,
    spec: Tool.ToolSpec,
    call: ToolCall,
    runId: string,
    input?: unknown
  ): Effect.Effect<ToolResult.ToolResult, never, StoreRegistry> => {
    // as finalizeNow, keeping the scrubber and the text (the result is scrubbed once)
    const scrubber = scrubberOf(spec.safety.redact, input)
    const limit = spec.options.artifactThreshold ?? config.threshold
    const redacted = scrubber === undefined ? result : scrubResult(result, scrubber)
    const modelText = ToolResult.textOf(redacted)
    if (result.isError || modelText.length <= limit) return Exit.succeed(redacted)
    const fullText = ToolResult.textOf(result)
    /** Blocks that are not text (images, audio, embedded resources) stay, redacted, after the text. */
    const others = redacted.content.filter((block) => block.type !== "text")
    const keepHead = Math.min(config.head, Math.floor(limit * 0.6))
    const keepTail = Math.min(config.tail, Math.floor(limit * 0.2))
    const key = `${runId}/${call.id}`
    const bounded = (note: string): ReadonlyArray<ToolResult.ContentBlock> => [
      ToolResult.text(
        `${modelText.slice(0, keepHead)}\n\n[... ${modelText.length - keepHead - keepTail} characters omitted; ${note} ...]\n\n${
          keepTail > 0 ? modelText.slice(-keepTail) : ""
        }`
      ),
      ...others
    ]
    return Effect.flatMap(offload(key, fullText), (kept): Effect.Effect<ToolResult.ToolResult> => {
      if (kept._tag === "Failed") {
        return Effect.as(warnFailed(kept.error, scrubber, spec, call, key), {
          ...redacted,
          content: bounded(
            `the full output (${fullText.length} characters) could not be stored; the call itself succeeded, ` +
              `and only this head and tail are available`
          )
        })
      }
      const artifact: ToolResult.ArtifactRef = {
        store: config.store,
        key,
        bytes: kept.bytes,
        // a cut copy of JSON is no longer JSON
        mimeType: kept._tag === "Whole" && result.value !== undefined && typeof result.value !== "string" &&
            fullText === textOfValue(result.value)
          ? "application/json"
          : "text/plain"
      }
      const note = kept._tag === "Whole"
        ? `the full output (${fullText.length} characters) is stored as artifact "${key}"`
        : `the full output has ${fullText.length} characters; artifact "${key}" keeps only its start, ` +
          `cut at ${kept.bytes} bytes by the store's size limit`
      return Effect.succeed({ ...redacted, content: bounded(note), artifacts: [...result.artifacts, artifact] })
    })
  }

  return { encode, finalize, finalizeNow, takeMade }
}
