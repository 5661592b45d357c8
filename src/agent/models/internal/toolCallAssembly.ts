/**
 * One tool call being assembled from stream deltas: its id and name (which
 * may arrive after the first argument text), the argument text so far, and
 * the `StreamPart`s it owes: `ToolCallStarted` once id and name are known
 * (argument text received before that is held back and sent right after),
 * a `ToolCallDelta` per argument piece, and nothing more once it is
 * complete. The adapters decide when a call is complete and what the
 * assembled `ToolCall` is.
 */
import type { StreamPart } from "../../ChatModel.ts"

/** A call in progress. */
export class PendingCall {
  id: string | undefined
  name: string | undefined
  /** The argument text so far. */
  text = ""
  /** Whether `ToolCallStarted` went out. */
  started = false
  /** Whether the assembled `ToolCall` went out. */
  done = false
  private held: Array<string> = []

  constructor(id?: string, name?: string) {
    this.id = id
    this.name = name
  }

  /** Records id and/or name (the first value of each wins) and returns the parts that are now due. */
  identify(id: string | undefined, name: string | undefined): Array<StreamPart> {
    if (this.id === undefined && id !== undefined && id !== "") this.id = id
    if (this.name === undefined && name !== undefined && name !== "") this.name = name
    return this.flush()
  }

  /** Appends argument text and returns the parts that are now due. */
  append(piece: string): Array<StreamPart> {
    if (piece === "") return []
    this.text += piece
    if (!this.started) {
      this.held.push(piece)
      return []
    }
    return [{ _tag: "ToolCallDelta", id: this.id!, argumentsDelta: piece }]
  }

  private flush(): Array<StreamPart> {
    if (this.started || this.id === undefined || this.name === undefined) return []
    this.started = true
    const id = this.id
    const parts: Array<StreamPart> = [{ _tag: "ToolCallStarted", id, name: this.name }]
    for (const piece of this.held) parts.push({ _tag: "ToolCallDelta", id, argumentsDelta: piece })
    this.held = []
    return parts
  }
}

/** Whether `text` is complete JSON (so no more argument text can belong to it). */
export const isCompleteJson = (text: string): boolean => {
  if (text.trim() === "") return false
  try {
    JSON.parse(text)
    return true
  } catch {
    return false
  }
}
