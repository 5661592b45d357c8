/**
 * The pure half of importing an MCP server's tools: annotations to `Safety`
 * (conservative when absent), a `CallToolResult` to model content and a value,
 * resource links to artifact references, and client failures to tool errors.
 * No transport and no SDK import here: the shapes are read structurally.
 */
import type { Safety } from "../../contract/Safety.ts"
import * as ToolError from "../../contract/ToolError.ts"
import * as ToolResult from "../../contract/ToolResult.ts"
import type * as Mcp from "../../providers/Mcp.ts"
import * as ResultContent from "../../providers/ResultContent.ts"

/**
 * Safety from MCP tool annotations. Hints are taken as declared; a missing hint
 * takes the protocol's own default, which is the conservative one: not read-only,
 * destructive, not idempotent, open-world. So a tool with no hints is `mutate`,
 * `destructive` and `networked`. Read-only tools are `read` (and repeatable);
 * other non-destructive tools are `network` when open-world, else `write`.
 * Tags: `mcp` and `mcp:<server>`.
 */
export const safetyOf = (annotations: Mcp.ToolAnnotations | undefined, server: string): Safety => {
  const readOnly = annotations?.readOnlyHint === true
  const destructive = !readOnly && annotations?.destructiveHint !== false
  const openWorld = annotations?.openWorldHint !== false
  return {
    access: readOnly ? "read" : destructive ? "mutate" : openWorld ? "network" : "write",
    idempotent: readOnly || annotations?.idempotentHint === true,
    networked: openWorld,
    destructive,
    tags: ["mcp", `mcp:${server}`]
  }
}

/** A `resource_link` content block. */
export interface ResourceLink {
  readonly uri: string
  readonly name: string
  readonly mimeType?: string
  readonly size?: number
}

/** A `CallToolResult` as the SDK returns it (read structurally; unknown blocks are kept as JSON text). */
export interface CallResult {
  readonly content?: ReadonlyArray<{ readonly type: string; readonly [key: string]: unknown }>
  readonly structuredContent?: { readonly [key: string]: unknown }
  readonly isError?: boolean
}

/** What a call produced, mapped. */
export interface Mapped {
  /** The model-facing blocks: text, images, audio and embedded resources; resource links and unknown blocks as text. */
  readonly content: ReadonlyArray<ToolResult.ContentBlock>
  /** The result's value: `structuredContent` when the server sent it, else its content blocks as sent. */
  readonly value: object
  readonly links: ReadonlyArray<ResourceLink>
  readonly isError: boolean
}

const str = (u: unknown): string | undefined => typeof u === "string" ? u : undefined

/** An embedded resource's contents, when they are well formed (a URI, and a text or a base64 blob). */
const resourceOf = (u: unknown): ToolResult.ResourceContents | undefined => {
  if (typeof u !== "object" || u === null) return undefined
  const fields = u as { readonly [key: string]: unknown }
  const uri = str(fields.uri)
  const mimeType = str(fields.mimeType)
  const text = str(fields.text)
  const blob = str(fields.blob)
  if (uri === undefined || (text === undefined && blob === undefined)) return undefined
  const base = { uri, ...(mimeType === undefined ? {} : { mimeType }) }
  return text !== undefined ? { ...base, text } : { ...base, blob: blob! }
}

/** The base64 data a mapped block carries (an image, audio, or an embedded resource's blob). */
const dataOf = (block: ToolResult.ContentBlock): string | undefined =>
  block.type === "image" || block.type === "audio"
    ? block.data
    : block.type === "resource" && "blob" in block.resource
    ? block.resource.blob
    : undefined

/** Media data shorter than this is left in texts: it could be a word of them. */
const minElided = 64

/** `content` whose text blocks repeat a media block's data (as a server's JSON of it does) with a note in its place. */
const textsWithoutMedia = (content: ReadonlyArray<ToolResult.ContentBlock>): Array<ToolResult.ContentBlock> => {
  const media = content.flatMap((block) => {
    const data = dataOf(block)
    if (data === undefined || data.length < minElided) return []
    // the note the structured value's JSON gets for this data, without its quotes
    const note = JSON.parse(ResultContent.jsonWithoutMedia(data, [block]) ?? JSON.stringify(data)) as string
    return [{ data, note }]
  })
  return content.map((block) =>
    block.type === "text" && media.some(({ data }) => block.text.includes(data))
      ? ToolResult.text(media.reduce((text, { data, note }) => text.split(data).join(note), block.text))
      : block
  )
}

/**
 * Maps a `CallToolResult`: text, image, audio and embedded resource blocks as the content blocks
 * of their type, a resource link as a text line (and a link), an unknown block as its JSON. A
 * result with `structuredContent` and no text block gets its JSON as text, in which base64 data the
 * result's media blocks carry stands as a short note (the filesystem server's `read_media_file`
 * repeats its image there): the model reads the media once. So does a text block that repeats it
 * (a server that sends its structured JSON as text too).
 */
export const mapResult = (result: CallResult): Mapped => {
  const blocks = result.content ?? []
  const content: Array<ToolResult.ContentBlock> = []
  const links: Array<ResourceLink> = []
  for (const block of blocks) {
    switch (block.type) {
      case "text":
        content.push(ToolResult.text(str(block.text) ?? ""))
        break
      case "image":
      case "audio": {
        const data = str(block.data)
        const mimeType = str(block.mimeType)
        content.push(
          data === undefined || mimeType === undefined
            ? ToolResult.text(`[${block.type} block without data or MIME type]`)
            : block.type === "image"
            ? ToolResult.image(data, mimeType)
            : ToolResult.audio(data, mimeType)
        )
        break
      }
      case "resource_link": {
        const uri = str(block.uri)
        if (uri === undefined) break
        const name = str(block.name) ?? uri
        const mimeType = str(block.mimeType)
        const size = typeof block.size === "number" ? block.size : undefined
        links.push({ uri, name, ...(mimeType === undefined ? {} : { mimeType }), ...(size === undefined ? {} : { size }) })
        content.push(ToolResult.text(`[resource link: ${name} <${uri}>${mimeType === undefined ? "" : ` (${mimeType})`}]`))
        break
      }
      case "resource": {
        const resource = resourceOf(block.resource)
        content.push(resource === undefined ? ToolResult.text("[resource block without a URI and a text or blob]") : ToolResult.resource(resource))
        break
      }
      default:
        content.push(ToolResult.json(block))
    }
  }
  const structured = result.structuredContent
  const mapped = textsWithoutMedia(content)
  // With structured content and no text block from the server (a link's note or an unknown block's
  // JSON is not one), the model reads the structured value as JSON (media data as notes).
  if (structured !== undefined && !blocks.some((b) => b.type === "text")) {
    mapped.unshift(ToolResult.text(ResultContent.jsonWithoutMedia(structured, content) ?? "null"))
  }
  return {
    content: mapped,
    value: structured ?? [...blocks],
    links,
    isError: result.isError === true
  }
}

/** An artifact reference for a resource link: the server is the store, the URI the key. */
export const artifactOf = (server: string, link: ResourceLink): ToolResult.ArtifactRef => ({
  store: `mcp:${server}`,
  key: link.uri,
  bytes: link.size ?? 0,
  mimeType: link.mimeType ?? "application/octet-stream"
})

/** The model-facing text of an error result. */
export const errorText = (mapped: Mapped): string => {
  const text = ToolResult.textOf({ content: mapped.content }).trim()
  return text.length > 0 ? text : "the tool reported an error"
}

/** A result the server marked `isError`: repairable, its text for the model, its structured content as detail. */
export const resultError = (
  toolName: string,
  text: string,
  structured: { readonly [key: string]: unknown } | undefined
): ToolError.ToolFailure => ToolError.repairable(`${toolName}: ${text}`, structured)

/** JSON-RPC / SDK error codes the mapping distinguishes. */
const ConnectionClosed = -32000
const RequestTimeout = -32001

/**
 * The `McpAuth.McpAuthError` a failed request carries (itself, or as its cause), read structurally:
 * the call dies with it, a fatal `ToolDefect` (neither the model nor a retry, which could start
 * another interactive sign-in, can fix an authorization).
 */
export const authErrorOf = (error: unknown): unknown => {
  for (let at = error, depth = 0; typeof at === "object" && at !== null && depth < 4; depth++) {
    if ((at as { readonly _tag?: unknown })._tag === "McpAuthError") return at
    at = (at as { readonly cause?: unknown }).cause
  }
  return undefined
}

/**
 * A failed `tools/call` as a tool error: a closed connection, a request timeout
 * or a transport failure is transient; a protocol error the server answered
 * (invalid params, unknown tool, an output that breaks its schema) is repairable.
 * (A failed authorization is no tool error: see {@link authErrorOf}.)
 */
export const callError = (toolName: string, server: string, error: unknown): ToolError.ToolFailure | ToolError.ToolTransient => {
  const code = typeof error === "object" && error !== null && typeof (error as { code?: unknown }).code === "number"
    ? (error as { code: number }).code
    : undefined
  const message = error instanceof Error ? error.message : String(error)
  if (code === ConnectionClosed) {
    return ToolError.retryable(`${toolName}: the MCP server "${server}" closed the connection`, error)
  }
  if (code === RequestTimeout) {
    return ToolError.retryable(`${toolName}: the MCP server "${server}" did not answer in time`, error)
  }
  if (code === undefined) {
    return ToolError.retryable(`${toolName}: the MCP server "${server}" could not be reached: ${message}`, error)
  }
  return ToolError.repairable(`${toolName}: the MCP server "${server}" refused the call: ${message}`, { code })
}
