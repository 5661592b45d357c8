/**
 * What every provider's `toolCalls` returns: the calls this runtime must
 * answer, provider-neutral and with the provider's ids, and everything else
 * that looks like a tool call but is not ours to run (server-side tools the
 * provider already executed, built-in client tools this runtime never
 * defined), kept in the provider's own shape so the caller can replay it.
 */
import type { ToolCall } from "../contract/ToolCall.ts"

/** The calls to run, and the provider's own tool activity to leave alone. */
export interface ProviderCalls<Passthrough> {
  /** Function calls to check with `ToolRegistry.resolve`, in the order the provider sent them. */
  readonly calls: ReadonlyArray<ToolCall>
  /** Tool activity that must never be executed locally, in the provider's shape. */
  readonly passthrough: ReadonlyArray<Passthrough>
}

