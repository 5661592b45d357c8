/**
 * A connection's prompts and resources: listing them (every page), getting a
 * prompt, reading a resource, and subscribing to one (`resources/subscribe`
 * now, a stream of its `notifications/resources/updated`, `resources/unsubscribe`
 * when the scope closes). Content comes back in the shapes of
 * `ToolResult` (base64 `data` and `blob`); a `resource_link` in a prompt
 * message becomes a text that names it.
 */
import type { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { Effect, PubSub, type Scope, Stream } from "effect"
import type * as ToolResult from "../../contract/ToolResult.ts"
import type * as McpPrompt from "../McpPrompt.ts"

export type { Extras, Failure, PromptInfo, PromptResult, ResourceInfo, ResourceTemplateInfo } from "./connectPromptTypes.ts"
import type { Extras, Failure, PromptInfo, PromptResult, ResourceInfo, ResourceTemplateInfo } from "./connectPromptTypes.ts"

const reasonOf = (error: unknown): string => error instanceof Error ? error.message : String(error)

/** At most this many pages of one list. */
const maxPages = 100

const defined = <A extends object>(value: A): A =>
  Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as A

type SdkContent = { readonly type: string; readonly [key: string]: unknown }

const contentOf = (content: SdkContent): ToolResult.ContentBlock => {
  switch (content.type) {
    case "text":
      return { type: "text", text: String(content["text"]) }
    case "image":
    case "audio":
      return { type: content.type, data: String(content["data"]), mimeType: String(content["mimeType"]) }
    case "resource":
      return { type: "resource", resource: content["resource"] as ToolResult.ResourceContents }
    case "resource_link":
      return { type: "text", text: `[resource ${String(content["name"])}: ${String(content["uri"])}]` }
    default:
      return { type: "text", text: `[${content.type} content]` }
  }
}

/**
 * The prompt and resource fields of a connection to `client` (connected), failing with
 * `fail(failure)`. Installs the `notifications/resources/updated` handler; subscriptions end
 * when the scope (the connection's) closes.
 */
export const extrasOf = <E>(
  client: Client,
  requestTimeout: number,
  fail: (failure: Failure) => E
) =>
  Effect.gen(function*() {
    const types = yield* Effect.promise(() => import("@modelcontextprotocol/sdk/types.js"))
    const updates = yield* PubSub.unbounded<string>()
    yield* Effect.addFinalizer(() => PubSub.shutdown(updates))
    client.setNotificationHandler(types.ResourceUpdatedNotificationSchema, (notification) => {
      PubSub.publishUnsafe(updates, notification.params.uri)
    })
    const request = <A>(operation: Failure["operation"], send: () => Promise<A>) =>
      Effect.tryPromise({ try: send, catch: (error) => fail({ operation, reason: reasonOf(error) }) })
    const options = { timeout: requestTimeout }
    const pages = <A>(
      operation: Failure["operation"],
      list: (cursor: string | undefined) => Promise<{ readonly items: ReadonlyArray<A>; readonly nextCursor?: string | undefined }>
    ) =>
      request(operation, async () => {
        const all: Array<A> = []
        let cursor: string | undefined
        for (let page = 0; page < maxPages; page++) {
          const result = await list(cursor)
          all.push(...result.items)
          cursor = result.nextCursor
          if (cursor === undefined) break
        }
        return all
      })
    const params = (cursor: string | undefined) => cursor === undefined ? undefined : { cursor }
    // Without a capability the server has none: an empty list, not an error.
    const capabilities = () => client.getServerCapabilities() ?? {}

    const extras: Extras<E> = {
      prompts: capabilities().prompts === undefined ? Effect.succeed([]) : pages("prompts", async (cursor) => {
        const result = await client.listPrompts(params(cursor), options)
        return {
          nextCursor: result.nextCursor,
          items: result.prompts.map((prompt): PromptInfo =>
            defined({
              name: prompt.name,
              title: prompt.title,
              description: prompt.description,
              arguments: (prompt.arguments ?? []).map((argument) =>
                defined({
                  name: argument.name,
                  title: (argument as { readonly title?: string }).title,
                  description: argument.description,
                  required: argument.required === true
                }) as McpPrompt.Argument
              )
            })
          )
        }
      }),
      getPrompt: (name, args) =>
        request("get", async () => {
          const result = await client.getPrompt({ name, ...(args === undefined ? {} : { arguments: { ...args } }) }, options)
          return defined({
            description: result.description,
            messages: result.messages.map((message) => ({
              role: message.role,
              content: contentOf(message.content as SdkContent)
            }))
          })
        }),
      resources: capabilities().resources === undefined
        ? Effect.succeed({ resources: [], templates: [] })
        : Effect.all({
          resources: pages("resources", async (cursor) => {
            const result = await client.listResources(params(cursor), options)
            return {
              nextCursor: result.nextCursor,
              items: result.resources.map((resource): ResourceInfo =>
                defined({
                  uri: resource.uri,
                  name: resource.name,
                  title: resource.title,
                  description: resource.description,
                  mimeType: resource.mimeType,
                  size: (resource as { readonly size?: number }).size
                })
              )
            }
          }),
          templates: pages("resources", async (cursor) => {
            const result = await client.listResourceTemplates(params(cursor), options)
            return {
              nextCursor: result.nextCursor,
              items: result.resourceTemplates.map((template): ResourceTemplateInfo =>
                defined({
                  uriTemplate: template.uriTemplate,
                  name: template.name,
                  title: template.title,
                  description: template.description,
                  mimeType: template.mimeType
                })
              )
            }
          })
        }),
      readResource: (uri) =>
        request("read", async () => {
          const result = await client.readResource({ uri }, options)
          return result.contents.map((contents) => contents as ToolResult.ResourceContents)
        }),
      subscribe: (uri) =>
        Effect.gen(function*() {
          // Listening before asking, so that no update is missed; updates wait until the stream is read.
          const subscription = yield* PubSub.subscribe(updates)
          yield* request("subscribe", () => client.subscribeResource({ uri }, options))
          yield* Effect.addFinalizer(() =>
            Effect.promise(() => client.unsubscribeResource({ uri }, options).catch(() => undefined))
          )
          // An update may name a sub-resource of the one subscribed to.
          return Stream.fromSubscription(subscription).pipe(
            Stream.filter((updated) => updated === uri || updated.startsWith(uri.endsWith("/") ? uri : `${uri}/`))
          )
        })
    }
    return extras
  })
