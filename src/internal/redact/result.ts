/**
 * A `Scrubber` (see `policy.ts`) applied to a tool result: a success's value and text blocks, an
 * error result's error and text blocks. A text block that is the value's text (`textOfValue`, what a
 * tool shows by default) is written again from the scrubbed value, so a key redacted in the value is
 * redacted in the text too; other text blocks and the text of embedded text resources are scrubbed
 * as texts; other blocks (images, audio, binary resources) stay, in place. The executor applies a tool's `safety.redact` with it (`Render.finalize`), and a replay's
 * secrets (`Idempotency`), the `redaction` middleware its redactor. Offloading a long text is the executor's business, not this module's.
 */
import * as ToolResult from "../../contract/ToolResult.ts"
import { textOfValue } from "../json.ts"
import { scrubError } from "./errors.ts"
import type { Scrubber } from "./policy.ts"

/** What {@link scrubResult} rewrites: a `ToolResult`, or a result as the idempotency store keeps it. */
export type Scrubbable = Pick<ToolResult.ToolResult, "content" | "value" | "error">

/** `result` with the scrubber applied to its value, error and texts; the same result when nothing changes. */
export const scrubResult = <A extends Scrubbable>(result: A, scrubber: Scrubber): A => {
  const error = result.error === undefined ? undefined : scrubError(result.error, scrubber)
  const value = result.value === undefined ? undefined : scrubber.value(result.value)
  const valueText = result.value === undefined ? undefined : textOfValue(result.value)
  let shown: string | undefined
  let changed = error !== result.error || value !== result.value
  const content = result.content.map((block) => {
    if (block.type === "resource" && "text" in block.resource) {
      const text = scrubber.text(block.resource.text)
      if (text === block.resource.text) return block
      changed = true
      return ToolResult.resource({ ...block.resource, text })
    }
    if (block.type !== "text") return block
    const text = block.text === valueText ? (shown ??= textOfValue(value)) : scrubber.text(block.text)
    if (text === block.text) return block
    changed = true
    return ToolResult.text(text)
  })
  if (!changed) return result
  return { ...result, content, ...(value === undefined ? {} : { value }), ...(error === undefined ? {} : { error }) }
}
