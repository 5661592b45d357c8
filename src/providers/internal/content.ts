/**
 * What a tool result says to the model, before a provider wraps it: its text
 * (the value as JSON when a result carries no content at all), its media, and
 * a short text in place of each block a format cannot carry (a text resource's
 * text under its URI; a note with the type, MIME type and size of media, never
 * their data).
 */
import type { ContentBlock, ResourceContents, ToolResult } from "../../contract/ToolResult.ts"
import { stringify as stringifyDeep } from "../../internal/json.ts"

/** An image block of a result. */
export type Image = Extract<ContentBlock, { readonly type: "image" }>

/** An audio block of a result. */
export type Audio = Extract<ContentBlock, { readonly type: "audio" }>

/** An embedded resource block of a result. */
export type Resource = Extract<ContentBlock, { readonly type: "resource" }>

/** A block that is not text: what a format may or may not carry. */
export type Media = Image | Audio | Resource

/** What {@link contentFor} reads of a result. */
export type Content = Pick<ToolResult, "content"> & { readonly value?: unknown }

/**
 * Whether a format carries a block as it is (`true`), or why it does not: the reason a note gives
 * (a text resource that is not carried is shown as text, under its URI, without one).
 */
export type Carries = (block: Media) => true | string

/**
 * {@link Carries} for a format with media parts (images, audio, files) and no text-document part:
 * every block but a text resource, which is shown as text under its URI.
 */
export const carriesMedia: Carries = (block) => block.type !== "resource" || "blob" in block.resource || "shown as text"

/** The result's text blocks joined by newlines; the value as JSON when there is no content at all. */
export const textOf = (result: Content): string => {
  const texts = result.content.flatMap((block) => block.type === "text" ? [block.text] : [])
  if (texts.length > 0) return texts.join("\n")
  if (result.content.length === 0 && result.value !== undefined) return stringify(result.value)
  return ""
}

/** The result's image blocks. */
export const imagesOf = (result: Content): ReadonlyArray<Image> =>
  result.content.flatMap((block) => block.type === "image" ? [block] : [])

/** The size of base64 data, in bytes. */
export const base64Bytes = (data: string): number =>
  Math.max(0, Math.floor((data.length * 3) / 4) - (data.endsWith("==") ? 2 : data.endsWith("=") ? 1 : 0))

/** A size for people: `512 bytes`, `12 KB`, `3.4 MB`. */
const sizeText = (bytes: number): string =>
  bytes < 1024
    ? `${bytes} bytes`
    : bytes < 1024 * 1024
    ? `${Math.round(bytes / 1024)} KB`
    : `${(bytes / (1024 * 1024)).toFixed(1)} MB`

/** The file name a resource's URI ends with (`report.pdf` of `file:///tmp/report.pdf`), or the URI. */
export const fileNameOf = (resource: ResourceContents): string => {
  const path = resource.uri.replace(/[?#].*$/, "").replace(/\/+$/, "")
  const last = path.slice(path.lastIndexOf("/") + 1)
  return last.length > 0 && !last.endsWith(":") ? last : resource.uri
}

/** A text resource's text under a header naming its URI and MIME type. */
export const resourceText = (resource: Extract<ResourceContents, { readonly text: string }>): string =>
  `[resource: ${resource.uri}${resource.mimeType === undefined ? "" : `, ${resource.mimeType}`}]\n${resource.text}`

/**
 * `block` as a short text, for a format that cannot carry it (`why` says so): a text resource's text
 * under its URI; for media and binary resources a note with the MIME type and size, such as
 * `[audio: audio/wav, 12 KB; not sent: a Chat Completions tool message carries text only]`.
 */
export const describe = (block: Media, why: string): string => {
  const note = (what: string) => `[${what}; not sent: ${why}]`
  switch (block.type) {
    case "image":
    case "audio":
      return note(`${block.type}: ${block.mimeType}, ${sizeText(base64Bytes(block.data))}`)
    case "resource": {
      const resource = block.resource
      if ("text" in resource) return resourceText(resource)
      return note(
        `resource: ${resource.uri}${resource.mimeType === undefined ? "" : `, ${resource.mimeType}`}, ${
          sizeText(base64Bytes(resource.blob))
        }`
      )
    }
  }
}

/**
 * The result's content as a format that `carries` some blocks reads it, in order: the blocks it
 * carries as they are, the others as text ({@link describe}), neighbouring texts joined by newlines
 * (empty ones left out); the value as JSON when the result has no content at all. Nothing else is
 * dropped.
 */
export const contentFor = (result: Content, carries: Carries): Array<ContentBlock> => {
  if (result.content.length === 0) {
    return result.value === undefined ? [] : [{ type: "text", text: stringify(result.value) }]
  }
  const out: Array<ContentBlock> = []
  const pushText = (text: string) => {
    if (text.length === 0) return
    const last = out[out.length - 1]
    if (last?.type === "text") out[out.length - 1] = { type: "text", text: `${last.text}\n${text}` }
    else out.push({ type: "text", text })
  }
  for (const block of result.content) {
    if (block.type === "text") {
      pushText(block.text)
      continue
    }
    const verdict = carries(block)
    if (verdict === true) out.push(block)
    else pushText(describe(block, verdict))
  }
  return out
}

/** The text of a format that carries text only: every other block described in place, `why` saying so. */
export const textOnly = (result: Content, why: string): string =>
  contentFor(result, () => why).map((block) => block.type === "text" ? block.text : "").join("\n")

/** The base64 data a block carries (an image's or audio's `data`, a binary resource's `blob`) and what it is. */
const dataOf = (block: ContentBlock): { readonly data: string; readonly what: string } | undefined =>
  block.type === "image" || block.type === "audio"
    ? { data: block.data, what: `${block.type}: ${block.mimeType}` }
    : block.type === "resource" && "blob" in block.resource
    ? { data: block.resource.blob, what: `resource: ${block.resource.uri}, ${block.resource.mimeType ?? "binary"}` }
    : undefined

/**
 * JSON text of `value` in which each string that is the base64 data of one of `content`'s blocks
 * stands as a short note naming that block (`"[image: image/png, 3 KB; sent as a block]"`): a model
 * that reads the blocks does not read their data again as text. `undefined` when `value` has no JSON
 * form.
 */
export const jsonWithoutMedia = (value: unknown, content: ReadonlyArray<ContentBlock>): string | undefined =>
  elided(value, content)?.text

const elided = (
  value: unknown,
  content: ReadonlyArray<ContentBlock>
): { readonly text: string; readonly changed: boolean } | undefined => {
  let text = stringifyDeep(value)
  if (text === undefined) return undefined
  let changed = false
  for (const block of content) {
    const media = dataOf(block)
    if (media === undefined || media.data.length === 0) continue
    const { data, what } = media
    // base64 needs no JSON escapes: the string stands in the text exactly as `"<data>"`
    const quoted = `"${data}"`
    if (!text.includes(quoted)) continue
    text = text.split(quoted).join(JSON.stringify(`[${what}, ${sizeText(base64Bytes(data))}; sent as a block]`))
    changed = true
  }
  return { text, changed }
}

/** `value` as {@link jsonWithoutMedia} writes it (the same value when none of `content`'s data is in it). */
export const valueWithoutMedia = (value: unknown, content: ReadonlyArray<ContentBlock>): unknown => {
  if (!content.some((block) => dataOf(block) !== undefined)) return value
  const result = elided(value, content)
  return result === undefined || !result.changed ? value : JSON.parse(result.text)
}

/** JSON text of a value; `String(value)` when it has none (undefined, functions). */
export const stringify = (value: unknown): string => {
  try {
    return JSON.stringify(value) ?? String(value)
  } catch {
    return String(value)
  }
}
