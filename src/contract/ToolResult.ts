/**
 * What a tool call produced, in provider-neutral form: the content blocks the
 * model reads, the structured value, artifact references, whether it is an
 * error, and timing. Provider modules turn results into their tool messages.
 */
import { Schema } from "effect"
import { stringify } from "../internal/json.ts"
import { JsonData, ToolError } from "./ToolError.ts"

/**
 * The contents of an embedded resource (MCP's `TextResourceContents` / `BlobResourceContents`): its
 * URI and MIME type, with its `text`, or its binary data as base64 `blob`.
 */
export type ResourceContents =
  | { readonly uri: string; readonly mimeType?: string; readonly text: string }
  | { readonly uri: string; readonly mimeType?: string; readonly blob: string }

/**
 * A block of model-facing content: text, an image or audio (base64 `data`), or an embedded resource.
 * Provider formats that cannot carry a block get a short text in its place (see `ResultContent`).
 */
export type ContentBlock =
  | { readonly type: "text"; readonly text: string }
  | { readonly type: "image"; readonly data: string; readonly mimeType: string }
  | { readonly type: "audio"; readonly data: string; readonly mimeType: string }
  | { readonly type: "resource"; readonly resource: ResourceContents }

/** What a tool's `toModelOutput` returns: text, or content blocks (text, images, audio, resources, in order). */
export type ModelOutput = string | ContentBlock | ReadonlyArray<ContentBlock>

/** Where a large output was stored whole. */
export interface ArtifactRef {
  readonly store: string
  readonly key: string
  readonly bytes: number
  readonly mimeType: string
}

/** One middleware layer's record in the audit trail. */
export interface AuditLayer {
  readonly name: string
  readonly status: string
  readonly startedAt: number
  readonly endedAt: number
  readonly error?: string
}

/** Work a tool hands on to another agent or queue (the `handoffArtifact` middleware fills it in). */
export interface Handoff {
  /** Who takes the work over: an agent, a persona, a queue. */
  readonly target: string
  /** What the target is to do. */
  readonly task: string
  /** Who hands it over. */
  readonly source?: string
  /** Context for the target, as JSON. */
  readonly context?: Schema.Json
  /** A replacement execution policy to run the target under, kept as given. */
  readonly policyOverride?: { readonly [key: string]: Schema.Json }
}

/** Audit data that middleware attach to a result (see docs/middleware.md). */
export interface Audit {
  readonly summary?: string
  readonly kind?: string
  readonly hints?: Readonly<Record<string, boolean>>
  readonly consent?: { readonly decision: string; readonly decidedBy: string; readonly decidedAt: number }
  readonly scope?: { readonly stage: string; readonly allowedTools?: ReadonlyArray<string>; readonly maxAccess?: string }
  readonly handoff?: Handoff
  readonly layers: ReadonlyArray<AuditLayer>
  readonly metadata?: Readonly<Record<string, unknown>>
}

export interface ToolResult {
  /** The provider's call id, always kept. */
  readonly toolCallId: string
  /** Canonical tool name (or the name the model sent, for unknown tools). */
  readonly name: string
  /** What the model reads. */
  readonly content: ReadonlyArray<ContentBlock>
  /** The encoded structured output, when the call succeeded. */
  readonly value?: unknown
  readonly artifacts: ReadonlyArray<ArtifactRef>
  readonly isError: boolean
  /** The error behind an error result. */
  readonly error?: ToolError
  /** Provider-specific data carried from the call. */
  readonly provider?: Readonly<Record<string, unknown>>
  /** Wall time from start to terminal event, in milliseconds (from `Clock`). */
  readonly elapsed: number
  readonly audit?: Audit
  /** For tools with an idempotency key: the key, and whether this result is the stored one of an earlier call. */
  readonly idempotency?: { readonly key: string; readonly replayed: boolean }
}

/** A text content block. */
export const text = (text: string): ContentBlock => ({ type: "text", text })

/** An image content block: base64 `data` and its MIME type (`image/png`, ...). */
export const image = (data: string, mimeType: string): ContentBlock => ({ type: "image", data, mimeType })

/** An audio content block: base64 `data` and its MIME type (`audio/wav`, ...). */
export const audio = (data: string, mimeType: string): ContentBlock => ({ type: "audio", data, mimeType })

/**
 * An embedded resource block: a resource's `text` or base64 `blob` under its URI, as the tool read it
 * (`ToolResult.resource({ uri: "file:///notes.md", mimeType: "text/markdown", text })`).
 */
export const resource = (contents: ResourceContents): ContentBlock => ({ type: "resource", resource: contents })

/** A text content block holding `value` as JSON. */
export const json = (value: unknown): ContentBlock => ({ type: "text", text: stringify(value) ?? "null" })

/** The content blocks of a `ModelOutput`. */
export const contentOf = (output: ModelOutput): ReadonlyArray<ContentBlock> =>
  typeof output === "string" ? [text(output)] : Array.isArray(output) ? output : [output as ContentBlock]

/**
 * The model-facing text of a result: its text blocks joined by newlines. Other blocks (images, audio,
 * embedded resources, even text ones) are not part of it.
 */
export const textOf = (result: Pick<ToolResult, "content">): string => {
  const only = result.content.length === 1 ? result.content[0]! : undefined
  if (only !== undefined) return only.type === "text" ? only.text : ""
  return result.content.flatMap((b) => b.type === "text" ? [b.text] : []).join("\n")
}

/** An error result for `error`, with the model-facing message as its text. */
export const fromError = (
  call: { readonly id: string; readonly name: string; readonly provider?: Readonly<Record<string, unknown>> },
  error: ToolError,
  elapsed = 0
): ToolResult => ({
  toolCallId: call.id,
  name: call.name,
  content: [text(error.message)],
  artifacts: [],
  isError: true,
  error,
  elapsed,
  ...(call.provider === undefined ? {} : { provider: call.provider })
})

// ---------------------------------------------------------------------------
// schemas (the parts of a result that events carry)
// ---------------------------------------------------------------------------

/** The schema of an {@link ArtifactRef} (JSON as it is). */
export const ArtifactRef: Schema.Codec<ArtifactRef> = Schema.Struct({
  store: Schema.String,
  key: Schema.String,
  bytes: Schema.Number,
  mimeType: Schema.String
})

/** The schema of an {@link AuditLayer} (JSON as it is). */
export const AuditLayer: Schema.Codec<AuditLayer> = Schema.Struct({
  name: Schema.String,
  status: Schema.String,
  startedAt: Schema.Number,
  endedAt: Schema.Number,
  error: Schema.optionalKey(Schema.String)
})

/** The schema of an {@link Audit}: JSON as it is, `metadata` values as JSON (`ToolError.JsonData`). */
export const Audit: Schema.Codec<Audit, Omit<Audit, "metadata"> & { readonly metadata?: Readonly<Record<string, Schema.Json>> }> =
  Schema.Struct({
    summary: Schema.optionalKey(Schema.String),
    kind: Schema.optionalKey(Schema.String),
    hints: Schema.optionalKey(Schema.Record(Schema.String, Schema.Boolean)),
    consent: Schema.optionalKey(Schema.Struct({ decision: Schema.String, decidedBy: Schema.String, decidedAt: Schema.Number })),
    scope: Schema.optionalKey(
      Schema.Struct({
        stage: Schema.String,
        allowedTools: Schema.optionalKey(Schema.Array(Schema.String)),
        maxAccess: Schema.optionalKey(Schema.String)
      })
    ),
    handoff: Schema.optionalKey(Schema.Struct({
      target: Schema.String,
      task: Schema.String,
      source: Schema.optionalKey(Schema.String),
      context: Schema.optionalKey(Schema.Json),
      policyOverride: Schema.optionalKey(Schema.Record(Schema.String, Schema.Json))
    })),
    layers: Schema.Array(AuditLayer),
    metadata: Schema.optionalKey(Schema.Record(Schema.String, JsonData))
  })

/**
 * The schema of a {@link ResourceContents} (JSON as it is): one struct whose `text` and `blob` are
 * optional, exactly one of them present. Not a union of the two shapes: neither has a literal field
 * that tells it apart, and Effect's binary encoding (cluster messages of durable runs) needs one.
 */
export const ResourceContents: Schema.Codec<ResourceContents> = Schema.Struct({
  uri: Schema.String,
  mimeType: Schema.optionalKey(Schema.String),
  text: Schema.optionalKey(Schema.String),
  blob: Schema.optionalKey(Schema.String)
}).check(
  Schema.makeFilter((contents) =>
    (contents.text === undefined) !== (contents.blob === undefined) || "an embedded resource has either text or blob, not both nor neither"
  )
) as unknown as Schema.Codec<ResourceContents>

/** The schema of a {@link ContentBlock} (JSON as it is). */
export const ContentBlock: Schema.Codec<ContentBlock> = Schema.Union([
  Schema.Struct({ type: Schema.Literal("text"), text: Schema.String }),
  Schema.Struct({ type: Schema.Literal("image"), data: Schema.String, mimeType: Schema.String }),
  Schema.Struct({ type: Schema.Literal("audio"), data: Schema.String, mimeType: Schema.String }),
  Schema.Struct({ type: Schema.Literal("resource"), resource: ResourceContents })
])

/**
 * The schema of a whole {@link ToolResult}, for journaling and sending results: JSON as it is;
 * `value` and `provider` values as JSON (`ToolError.JsonData`); `error` as in events (it decodes
 * to an instance of its class).
 */
export const ToolResult = Schema.Struct({
  toolCallId: Schema.String,
  name: Schema.String,
  content: Schema.Array(ContentBlock),
  value: Schema.optionalKey(JsonData),
  artifacts: Schema.Array(ArtifactRef),
  isError: Schema.Boolean,
  error: Schema.optionalKey(ToolError),
  provider: Schema.optionalKey(Schema.Record(Schema.String, JsonData)),
  elapsed: Schema.Number,
  audit: Schema.optionalKey(Audit),
  idempotency: Schema.optionalKey(Schema.Struct({ key: Schema.String, replayed: Schema.Boolean }))
})
