/**
 * The types of a connection's prompts and resources (see `connectPrompts.ts`), in a file of their
 * own so that the package's declarations of `McpConnect` never load the MCP SDK's types (an
 * optional peer dependency), which `connectPrompts.ts`'s own declarations name.
 */
import type { Effect, Scope, Stream } from "effect"
import type * as ToolResult from "../../contract/ToolResult.ts"
import type * as McpPrompt from "../McpPrompt.ts"

/** A prompt as the server lists it. */
export interface PromptInfo {
  readonly name: string
  readonly title?: string | undefined
  readonly description?: string | undefined
  readonly arguments: ReadonlyArray<McpPrompt.Argument>
}

/** What `prompts/get` returned. */
export interface PromptResult {
  readonly description?: string | undefined
  readonly messages: ReadonlyArray<McpPrompt.Message>
}

/** A resource as the server lists it. */
export interface ResourceInfo {
  readonly uri: string
  readonly name: string
  readonly title?: string | undefined
  readonly description?: string | undefined
  readonly mimeType?: string | undefined
  readonly size?: number | undefined
}

/** A resource template as the server lists it. */
export interface ResourceTemplateInfo {
  readonly uriTemplate: string
  readonly name: string
  readonly title?: string | undefined
  readonly description?: string | undefined
  readonly mimeType?: string | undefined
}

/** What a request failed with: which operation, and the server's (or the transport's) reason. */
export interface Failure {
  readonly operation: "prompts" | "resources" | "get" | "read" | "subscribe"
  readonly reason: string
}

/** The fields a connection gets. */
export interface Extras<E> {
  /** The server's prompts (`prompts/list`, every page); none when it has no `prompts` capability. */
  readonly prompts: Effect.Effect<ReadonlyArray<PromptInfo>, E>
  /** `prompts/get`: the prompt's messages for `args` (every argument a string, as MCP sends them). */
  readonly getPrompt: (name: string, args?: { readonly [name: string]: string }) => Effect.Effect<PromptResult, E>
  /** The server's resources and resource templates (every page); none without a `resources` capability. */
  readonly resources: Effect.Effect<
    { readonly resources: ReadonlyArray<ResourceInfo>; readonly templates: ReadonlyArray<ResourceTemplateInfo> },
    E
  >
  /** `resources/read`: the contents at `uri` (text, or base64 `blob`). */
  readonly readResource: (uri: string) => Effect.Effect<ReadonlyArray<ToolResult.ResourceContents>, E>
  /**
   * Subscribes to `uri` (`resources/subscribe`, done when this succeeds) until the scope closes
   * (`resources/unsubscribe`); the stream emits the URI of each `notifications/resources/updated`
   * for it (or a resource under it), from the moment of subscribing.
   */
  readonly subscribe: (uri: string) => Effect.Effect<Stream.Stream<string>, E, Scope.Scope>
}
