/**
 * What a tool result says to the model, before a provider wraps it: its text
 * (the value as JSON when a result carries no text at all), its images, and a
 * note in place of an image for formats that only carry text.
 */
import type { ContentBlock, ToolResult } from "../../contract/ToolResult.ts"

/** An image block of a result. */
export type Image = Extract<ContentBlock, { readonly type: "image" }>

/** The result's text blocks joined by newlines; the value as JSON when there is no text block at all. */
export const textOf = (result: ToolResult): string => {
  const texts = result.content.flatMap((block) => block.type === "text" ? [block.text] : [])
  if (texts.length > 0) return texts.join("\n")
  if (result.content.length === 0 && result.value !== undefined) return stringify(result.value)
  return ""
}

/** The result's image blocks. */
export const imagesOf = (result: ToolResult): ReadonlyArray<Image> =>
  result.content.flatMap((block) => block.type === "image" ? [block] : [])

/** The text, with a note for each image a text-only format cannot carry. */
export const textWithImageNotes = (result: ToolResult, format: string): string => {
  const notes = imagesOf(result).map((image) => `[${image.mimeType} image omitted: ${format} carries text only]`)
  return [textOf(result), ...notes].filter((part) => part.length > 0).join("\n")
}

/** JSON text of a value; `String(value)` when it has none (undefined, functions). */
export const stringify = (value: unknown): string => {
  try {
    return JSON.stringify(value) ?? String(value)
  } catch {
    return String(value)
  }
}
