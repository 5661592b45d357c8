/**
 * The registrations an MCP server gets from an application's prompts and
 * resources (`McpServe`'s `prompts` and `resources` options), beside its
 * tools: one `McpServer` prompt, resource or resource template each, whose
 * handlers run with the services the server captured when it started (the
 * executor's), and, for resources with a `changes` stream, a fiber that sends
 * `notifications/resources/updated` for each change (Effect's server delivers
 * it to the sessions that subscribed to the URI). Transport-free.
 *
 * Errors: invalid prompt arguments are `-32602` with the schema's message; a
 * handler's failure is `-32603` with its message; a defect is `-32603` saying
 * only which prompt or resource failed (the defect is logged on the server).
 */
import { Cause, Context, Effect, Layer, References, Stream } from "effect"
import { McpSchema, McpServer } from "effect/ai"
import type * as McpPrompt from "../McpPrompt.ts"
import type * as McpResource from "../McpResource.ts"

/**
 * `effect` with `services` (captured when the server started), at their log level: a request
 * carries the client's `logging/setLevel` as `CurrentLogLevel` (Effect's server sets it), which a
 * plain `Effect.log` of the handler would otherwise take as its own.
 */
const providing = <R>(services: Context.Context<R>) => {
  const logLevel = Context.get(services, References.CurrentLogLevel)
  return <A, E>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E> =>
    effect.pipe(Effect.provideContext(services), Effect.provideService(References.CurrentLogLevel, logLevel))
}

/** The message of a handler's failure: its `message` when it has one, else its tag, else its text. */
const messageOf = (error: unknown): string => {
  if (typeof error === "object" && error !== null) {
    const message = (error as { readonly message?: unknown }).message
    if (typeof message === "string" && message !== "") return message
    const tag = (error as { readonly _tag?: unknown })._tag
    if (typeof tag === "string") return tag
  }
  return String(error)
}

/**
 * Runs `effect`, turning what it did not handle into MCP errors: interruption passes; a failure
 * becomes `InternalError` with `failed(message)`; a defect is logged and becomes `InternalError` with
 * `internal` (its text never reaches the client).
 */
const guarded = <A, E extends McpSchema.InternalError | McpSchema.InvalidParams>(
  effect: Effect.Effect<A, E>,
  internal: string
): Effect.Effect<A, E | McpSchema.InternalError> =>
  Effect.catchCause(effect, (cause): Effect.Effect<A, E | McpSchema.InternalError> => {
    if (Cause.hasInterruptsOnly(cause)) return Effect.failCause(cause)
    const failure = cause.reasons.find((reason) => reason._tag === "Fail")
    if (failure !== undefined && failure._tag === "Fail") return Effect.fail(failure.error)
    return Effect.logError(internal, cause).pipe(
      Effect.andThen(Effect.fail(new McpSchema.InternalError({ message: internal })))
    )
  })

/** A prompt message's content as Effect's schema holds it: image and audio data and blobs as bytes. */
const toMcpContent = (content: McpPrompt.Content): McpSchema.ContentBlock => {
  switch (content.type) {
    case "image":
    case "audio":
      return { ...content, data: Uint8Array.from(Buffer.from(content.data, "base64")) } as McpSchema.ContentBlock
    case "resource":
      return "blob" in content.resource
        ? {
          type: "resource",
          resource: { ...content.resource, blob: Uint8Array.from(Buffer.from(content.resource.blob, "base64")) }
        } as McpSchema.ContentBlock
        : content as McpSchema.ContentBlock
    default:
      return content as McpSchema.ContentBlock
  }
}

const toGetPromptResult = (result: McpPrompt.Result): McpSchema.GetPromptResult => {
  const { description, messages } = typeof result === "string"
    ? { description: undefined, messages: [{ role: "user", content: { type: "text", text: result } }] as const }
    : Array.isArray(result)
    ? { description: undefined, messages: result as ReadonlyArray<McpPrompt.Message> }
    : result as { readonly description?: string; readonly messages: ReadonlyArray<McpPrompt.Message> }
  return new McpSchema.GetPromptResult({
    messages: messages.map((message) => ({ role: message.role, content: toMcpContent(message.content) })),
    ...(description === undefined ? {} : { description })
  })
}

/** Effect's completion result: at most 100 values (the protocol's limit), with the total. */
const completion = <R>(
  complete: (input: string) => Effect.Effect<ReadonlyArray<string>, unknown, R>,
  services: Context.Context<R>,
  what: string
) =>
(input: string) =>
  complete(input).pipe(
    Effect.map((values) => ({
      completion: { values: values.slice(0, 100), total: values.length, hasMore: values.length > 100 }
    })),
    Effect.mapError((error) => new McpSchema.InternalError({ message: `completion of ${what} failed: ${messageOf(error)}` })),
    providing(services),
    (effect) => guarded(effect, `internal error completing ${what}`)
  )

/** What a read returned, as `contents`: text or bytes go under the URI read, with the resource's MIME type. */
const toReadResult = (uri: string, mimeType: string | undefined, contents: McpResource.Contents): McpSchema.ReadResourceResult => {
  const withMime = mimeType === undefined ? {} : { mimeType }
  if (typeof contents === "string") return { contents: [{ uri, ...withMime, text: contents }] }
  if (contents instanceof Uint8Array) return { contents: [{ uri, ...withMime, blob: contents }] }
  return { contents: contents as McpSchema.ReadResourceResult["contents"] }
}

/**
 * The router path of a URI template whose expressions are simple `{param}`s (Effect's server
 * matches URIs with find-my-way: `:` doubled, parameters named by position), or why it is not one.
 */
export const routerPathOf = (template: string): { readonly path: string } | { readonly error: string } => {
  let path = ""
  let index = 0
  let last = 0
  for (const match of template.matchAll(/\{([^}]*)\}/g)) {
    if (!/^[A-Za-z0-9_]+$/.test(match[1]!)) {
      return { error: `URI template ${template}: "{${match[1]}}" is not a simple {param} expression` }
    }
    path += template.slice(last, match.index).replaceAll(":", "::") + `:${index++}`
    last = match.index + match[0].length
  }
  if (/[{}]/.test(template.slice(last))) return { error: `URI template ${template}: unbalanced braces` }
  return { path: path + template.slice(last).replaceAll(":", "::") }
}

const readError = (uri: string) => (error: unknown) =>
  typeof error === "object" && error !== null && (error as { readonly _tag?: unknown })._tag === "ResourceNotFound"
    ? new McpSchema.InvalidParams({ message: `Resource not found: ${uri}` })
    : new McpSchema.InternalError({ message: `resource ${uri} could not be read: ${messageOf(error)}` })

/**
 * Sends `notifications/resources/updated` for each URI `changes` emits, for as long as the server
 * runs: through Effect's server (stdio sessions that subscribed), and to `publish` (HTTP ones).
 */
const forwardChanges = <R>(
  server: McpServer.McpServer["Service"],
  changes: Stream.Stream<string, never, R>,
  services: Context.Context<R>,
  publish: (uri: string) => Effect.Effect<void>
) =>
  changes.pipe(
    Stream.runForEach((uri) =>
      Effect.andThen(server.notifications["notifications/resources/updated"]({ uri }), publish(uri))
    ),
    providing(services),
    Effect.catchCause((cause) =>
      Cause.hasInterruptsOnly(cause) ? Effect.void : Effect.logError("tinyagents mcp: a resource's changes stream failed", cause)
    ),
    Effect.forkScoped
  )

/**
 * Registers `prompts` and `resources` on the `McpServer` in context, their handlers run with
 * `services`; each change of a resource also goes to `publish` (the HTTP subscriptions). Fails with `IllegalArgumentError` for a URI template that is not made of simple
 * `{param}`s, or two prompts (or resources) of one name (or URI).
 */
export const extras = <R>(
  prompts: ReadonlyArray<McpPrompt.McpPrompt<R>>,
  resources: ReadonlyArray<McpResource.McpResource<R>>,
  services: Context.Context<R>,
  publish: (uri: string) => Effect.Effect<void> = () => Effect.void
): Layer.Layer<never, Cause.IllegalArgumentError, McpServer.McpServer> =>
  Layer.effectDiscard(Effect.gen(function*() {
    const server = yield* McpServer.McpServer
    const duplicate = (kind: string, keys: ReadonlyArray<string>) => {
      const seen = new Set<string>()
      for (const key of keys) {
        if (seen.has(key)) return new Cause.IllegalArgumentError(`two ${kind} ${key}`)
        seen.add(key)
      }
      return undefined
    }
    const twice = duplicate("prompts named", prompts.map((prompt) => prompt.name)) ??
      duplicate("resources at", resources.map((resource) => resource._tag === "Static" ? resource.uri : resource.uriTemplate))
    if (twice !== undefined) return yield* twice

    for (const prompt of prompts) {
      const completions: Record<string, ReturnType<typeof completion>> = {}
      for (const [name, complete] of Object.entries(prompt.completions)) {
        completions[name] = completion(complete, services, `argument ${name} of prompt ${prompt.name}`)
      }
      yield* server.addPrompt({
        prompt: new McpSchema.Prompt({
          name: prompt.name,
          ...(prompt.title === undefined ? {} : { title: prompt.title }),
          ...(prompt.description === undefined ? {} : { description: prompt.description }),
          arguments: prompt.arguments.map((argument) => ({ ...argument }))
        }),
        annotations: Context.empty(),
        completions,
        handle: (params) =>
          guarded(
            prompt.get(params).pipe(
              Effect.map(toGetPromptResult),
              Effect.mapError((failure) =>
                failure._tag === "InvalidArguments"
                  ? new McpSchema.InvalidParams({ message: `Invalid arguments for prompt ${prompt.name}: ${failure.message}` })
                  : new McpSchema.InternalError({ message: `prompt ${prompt.name} failed: ${messageOf(failure.error)}` })
              ),
              providing(services)
            ),
            `internal error in prompt ${prompt.name}`
          )
      })
    }

    for (const resource of resources) {
      const listing = {
        name: resource.name,
        ...(resource.title === undefined ? {} : { title: resource.title }),
        ...(resource.description === undefined ? {} : { description: resource.description }),
        ...(resource.mimeType === undefined ? {} : { mimeType: resource.mimeType })
      }
      if (resource._tag === "Static") {
        const uri = resource.uri
        yield* server.addResource({
          resource: new McpSchema.Resource({ uri, ...listing }),
          annotations: Context.empty(),
          handle: guarded(
            resource.read.pipe(
              Effect.map((contents) => toReadResult(uri, resource.mimeType, contents)),
              // a static resource's "not found" is still an error of the read (its code is -32603)
              Effect.mapError((error) => {
                const mapped = readError(uri)(error)
                return mapped._tag === "InternalError" ? mapped : new McpSchema.InternalError({ message: mapped.message })
              }),
              providing(services)
            ),
            `internal error reading resource ${uri}`
          )
        })
        if (resource.changes !== undefined) {
          yield* forwardChanges(server, Stream.map(resource.changes, () => uri), services, publish)
        }
        continue
      }
      const compiled = routerPathOf(resource.uriTemplate)
      if ("error" in compiled) return yield* new Cause.IllegalArgumentError(compiled.error)
      const completions: Record<string, ReturnType<typeof completion>> = {}
      for (const [name, complete] of Object.entries(resource.completions)) {
        completions[name] = completion(complete, services, `parameter ${name} of ${resource.uriTemplate}`)
      }
      yield* server.addResourceTemplate({
        template: new McpSchema.ResourceTemplate({ uriTemplate: resource.uriTemplate, ...listing }),
        annotations: Context.empty(),
        routerPath: compiled.path,
        completions,
        handle: (uri, values) => {
          const params: Record<string, string> = {}
          resource.params.forEach((name, index) => {
            params[name] = values[index] ?? ""
          })
          return guarded(
            resource.read(params, uri).pipe(
              Effect.map((contents) => toReadResult(uri, resource.mimeType, contents)),
              Effect.mapError(readError(uri)),
              providing(services)
            ),
            `internal error reading resource ${uri}`
          )
        }
      })
      if (resource.changes !== undefined) yield* forwardChanges(server, resource.changes, services, publish)
    }
  }))
