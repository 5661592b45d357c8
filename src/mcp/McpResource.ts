/**
 * Resources an application offers over MCP beside its tools (`resources/list`,
 * `resources/templates/list`, `resources/read`, `resources/subscribe`): a
 * static resource at one URI ({@link make}), or a family of them under an
 * RFC 6570 URI template with `{param}`s ({@link template}). A resource with a
 * `changes` stream is subscribable: the server advertises
 * `resources.subscribe` and sends `notifications/resources/updated` to the
 * clients that subscribed to the URI that changed. `McpServe` serves them
 * (`options.resources`); `McpConnect`'s `readResource` and `subscribe` use them
 * on any server.
 *
 * The artifacts of served tool calls stay a resource template of their own
 * (`tinyagents://artifacts/...`), served by `McpServe` whatever this lists.
 * What a read returns is sent as it is (no tool redaction policy applies); a
 * read that fails is an MCP error with its message ({@link ResourceNotFound}
 * says "Resource not found"), and a defect one that says only which resource
 * failed.
 */
import type { Effect, Stream } from "effect"
import { Data } from "effect"

/** One item of a read: text, or bytes (sent base64-encoded), under its URI. */
export type Item =
  | { readonly uri: string; readonly mimeType?: string; readonly text: string }
  | { readonly uri: string; readonly mimeType?: string; readonly blob: Uint8Array }

/**
 * What a read returns: text or bytes (one item under the URI read, with the resource's
 * `mimeType`), or the items themselves.
 */
export type Contents = string | Uint8Array | ReadonlyArray<Item>

/** A read of a URI that has nothing there (a template's parameters that name nothing). */
export class ResourceNotFound extends Data.TaggedError("ResourceNotFound")<{ readonly uri: string }> {
  override get message(): string {
    return `Resource not found: ${this.uri}`
  }
}

/** What every resource shows in its listing. */
export interface Listing {
  /** A short name (`name` of the listing). */
  readonly name: string
  /** A human-readable title. */
  readonly title?: string
  readonly description?: string
  readonly mimeType?: string
}

/** A resource at one URI. */
export interface Static<R = never> extends Listing {
  readonly _tag: "Static"
  readonly uri: string
  readonly read: Effect.Effect<Contents, unknown, R>
  /** Emits each time the resource changed: subscribed clients get `notifications/resources/updated`. */
  readonly changes: Stream.Stream<void, never, R> | undefined
}

/** The `{param}` names of a URI template, as a union of string literals. */
export type Params<T extends string> = T extends `${string}{${infer P}}${infer Rest}` ? P | Params<Rest> : never

/** Resources under a URI template. */
export interface Template<R = never> extends Listing {
  readonly _tag: "Template"
  readonly uriTemplate: string
  /** The template's parameter names, in order. */
  readonly params: ReadonlyArray<string>
  /** Reads the resource at `uri`, whose parameters are `params`. */
  readonly read: (params: { readonly [name: string]: string }, uri: string) => Effect.Effect<Contents, unknown, R>
  /** Completion handlers, by parameter name. */
  readonly completions: { readonly [name: string]: (input: string) => Effect.Effect<ReadonlyArray<string>, unknown, R> }
  /** Emits the URI of each resource that changed: its subscribers get `notifications/resources/updated`. */
  readonly changes: Stream.Stream<string, never, R> | undefined
}

/** A static resource or a template. */
export type McpResource<R = never> = Static<R> | Template<R>

/** Any resource, whatever its services. */
export type Any = McpResource<unknown>

/** Whether `u` is a resource made with {@link make} or {@link template}. */
export const isResource = (u: unknown): u is Any =>
  typeof u === "object" && u !== null && "_tag" in u && (
    (u._tag === "Static" && "uri" in u && typeof u.uri === "string") ||
    (u._tag === "Template" && "uriTemplate" in u && typeof u.uriTemplate === "string")
  )

/** A static resource at `uri`. `changes` makes it subscribable. */
export const make = <E = never, R = never>(uri: string, options: Listing & {
  readonly read: Effect.Effect<Contents, E, R>
  readonly changes?: Stream.Stream<void, never, R>
}): Static<R> => ({ _tag: "Static", ...listingOf(options), uri, read: options.read, changes: options.changes })

/**
 * Resources under an RFC 6570 URI template whose expressions are simple `{param}`s
 * (`"notes://{folder}/{key}"`): `read` gets the parameters of the URI asked for. `completions`
 * suggest values for a parameter; `changes` (the URIs that changed) makes them subscribable.
 */
export const template = <const T extends string, E = never, R = never>(uriTemplate: T, options: Listing & {
  readonly read: (params: { readonly [K in Params<T>]: string }, uri: string) => Effect.Effect<Contents, E, R>
  readonly completions?: {
    readonly [K in Params<T>]?: (input: string) => Effect.Effect<ReadonlyArray<string>, unknown, R>
  }
  readonly changes?: Stream.Stream<string, never, R>
}): Template<R> => {
  const completions: Record<string, (input: string) => Effect.Effect<ReadonlyArray<string>, unknown, R>> = {}
  for (const [key, complete] of Object.entries(options.completions ?? {})) {
    if (complete !== undefined) {
      completions[key] = complete as (input: string) => Effect.Effect<ReadonlyArray<string>, unknown, R>
    }
  }
  return {
    _tag: "Template",
    ...listingOf(options),
    uriTemplate,
    params: [...uriTemplate.matchAll(/\{([^}]*)\}/g)].map((match) => match[1]!),
    read: options.read as Template<R>["read"],
    completions,
    changes: options.changes
  }
}

const listingOf = (options: Listing): Listing => ({
  name: options.name,
  ...(options.title === undefined ? {} : { title: options.title }),
  ...(options.description === undefined ? {} : { description: options.description }),
  ...(options.mimeType === undefined ? {} : { mimeType: options.mimeType })
})
