/**
 * Safety metadata a tool declares about itself: how severe its side effects
 * are, whether repeating it is safe, what it touches, and what to redact.
 * Policy and middleware read it; exporters map it to MCP annotations. It
 * enforces nothing by itself.
 */

/**
 * The most a tool can do to the world, least to most severe: `read` (nothing),
 * `write` (local state it owns), `network` (talks to other systems), `mutate`
 * (changes or destroys what it does not own). Named `access` so it never reads
 * as an Effect.
 */
export type Access = "read" | "write" | "network" | "mutate"

/** The order used to compare levels (`read` < `write` < `network` < `mutate`). */
export const accessOrder: ReadonlyArray<Access> = ["read", "write", "network", "mutate"]

/** True when `level` is at most `ceiling`. */
export const isWithin = (level: Access, ceiling: Access): boolean =>
  accessOrder.indexOf(level) <= accessOrder.indexOf(ceiling)

/** What to hide from model-facing text and events: argument/output keys and text patterns. */
export interface Redact {
  readonly keys?: ReadonlyArray<string>
  readonly patterns?: ReadonlyArray<RegExp>
}

export interface Safety {
  /** The most it can do (see `Access`). Default `"mutate"`: unknown tools are assumed dangerous. */
  readonly access?: Access
  /** Safe to run twice with the same input. Default `false`. */
  readonly idempotent?: boolean
  /** Talks to the network (MCP `openWorldHint`). */
  readonly networked?: boolean
  /** Touches the file system, confined to `workspaceRoot` when given. */
  readonly filesystem?: boolean | { readonly workspaceRoot?: string }
  /** Starts processes or shells. */
  readonly shell?: boolean
  /** Can spend money. */
  readonly spend?: boolean
  /** A person must approve each call (when an approval policy is installed). */
  readonly requiresConfirmation?: boolean
  /** Destroys or overwrites data (MCP `destructiveHint`). Defaults to `access === "mutate"`. */
  readonly destructive?: boolean
  readonly redact?: Redact
  /** Free-form tags for selection and policy. */
  readonly tags?: ReadonlyArray<string>
}

/** The access level with its default applied. */
export const accessOf = (safety: Safety): Access => safety.access ?? "mutate"

/** True when repeating the call is safe. */
export const isIdempotent = (safety: Safety): boolean => safety.idempotent === true

/** MCP tool annotations for this metadata. */
export const toMcpAnnotations = (safety: Safety): {
  readonly readOnlyHint: boolean
  readonly destructiveHint: boolean
  readonly idempotentHint: boolean
  readonly openWorldHint: boolean
} => {
  const access = accessOf(safety)
  return {
    readOnlyHint: access === "read",
    destructiveHint: access !== "read" && (safety.destructive ?? access === "mutate"),
    idempotentHint: isIdempotent(safety),
    openWorldHint: safety.networked === true || access === "network"
  }
}
