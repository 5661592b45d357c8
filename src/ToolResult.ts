/**
 * What a tool call produced, in provider-neutral form: the content blocks the
 * model reads, the structured value, artifact references, whether it is an
 * error, and timing. Provider modules turn results into their tool messages.
 */
import type { ToolError } from "./ToolError.ts"

/** A block of model-facing content. */
export type ContentBlock =
  | { readonly type: "text"; readonly text: string }
  | { readonly type: "image"; readonly data: string; readonly mimeType: string }

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

/** Audit data that middleware attach to a result (see the middleware catalogue). */
export interface Audit {
  readonly summary?: string
  readonly kind?: string
  readonly hints?: Readonly<Record<string, boolean>>
  readonly consent?: { readonly decision: string; readonly decidedBy: string; readonly decidedAt: number }
  readonly scope?: { readonly stage: string; readonly allowedTools?: ReadonlyArray<string>; readonly maxEffect?: string }
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
}

/** A text content block. */
export const text = (text: string): ContentBlock => ({ type: "text", text })

/** The model-facing text of a result: its text blocks joined by newlines. */
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
