/**
 * The registrations an MCP server gets from a tool registry: one `tools/call`
 * handler per tool, each running through one executor, and a resource
 * template that serves the artifacts those calls stored. Transport-free: the
 * layers in `McpServe.ts` put these on stdio or Streamable HTTP.
 *
 * While a call runs, its client hears of it (`callNotifications.ts`): a call
 * whose request carries `_meta.progressToken` gets a `notifications/progress`
 * for each `tool.progress` event of that call, and the handler's logs become
 * `notifications/message`, redacted by the tool's `safety.redact`, all
 * delivered before the call's result. The handler may ask the client
 * (elicitation, sampling) through `McpServe.Client`, provided for the call.
 */
import { Cause, Context, Effect, Exit, Layer, References } from "effect"
import { McpSchema, McpServer } from "effect/ai"
import { HttpServerRequest } from "effect/http"
import type { Redact } from "../../contract/Safety.ts"
import type { ToolSpec } from "../../contract/Tool.ts"
import { EventSink } from "../../runtime/EventSink.ts"
import * as ToolRegistry from "../../contract/ToolRegistry.ts"
import type * as ToolResult from "../../contract/ToolResult.ts"
import * as Executor from "../../runtime/Executor.ts"
import * as StoreRegistry from "../../runtime/StoreRegistry.ts"
import { redactStoredText, scrubberOf, secretsOf } from "../../internal/redact/policy.ts"
import * as Mcp from "../../providers/Mcp.ts"
import { withLogs, withProgress } from "./callNotifications.ts"
import { type Catalogue, notifyToolsChanged } from "./serveCatalogue.ts"
import { Answerer } from "../../governance/Ask.ts"
import { answererOf } from "./serveAsk.ts"
import { Client, fromServerClient } from "./serverClient.ts"

/** What the registrations need from the caller. */
export interface Settings<MR> {
  readonly executor: Executor.Options<MR>
  /** A tool's `title`: what `tools/list` shows (also as `annotations.title`, for older clients). */
  readonly title: (spec: ToolSpec) => string | undefined
  /** Prefix of the call ids the executor sees (`<prefix>-<n>`). */
  readonly callIdPrefix: string
  /** A deferred catalogue (`McpServe`'s `toolSearch`): what each session may see and call. */
  readonly catalogue?: Catalogue
}

/** The URI scheme and authority of served artifacts: `tinyagents://artifacts/<store>/<key>`. */
export const artifactBase = "tinyagents://artifacts/"

export const artifactUri = (ref: ToolResult.ArtifactRef): string =>
  `${artifactBase}${encodeURIComponent(ref.store)}/${encodeURIComponent(ref.key)}`

type Content = McpSchema.CallToolResult["content"][number]

const errorResult = (text: string) =>
  new McpSchema.CallToolResult({ content: [{ type: "text", text }], isError: true })

/**
 * A served artifact: where it is, who may read it (the session whose call produced it), and how its
 * text is redacted before it leaves (the producing tool's `safety.redact`, and the values its call's
 * arguments held under a redacted key: those alone are kept, not the arguments).
 */
interface Served {
  readonly ref: ToolResult.ArtifactRef
  readonly owner: string
  readonly policy: Redact | undefined
  readonly secrets: unknown
}

/** At most this many artifacts are served at once: the least recently used is forgotten first. */
export const maxServed = 1_000

/**
 * Who is asking: the HTTP session (`Mcp-Session-Id`), else the MCP client (stdio has one). An
 * artifact is served only to the session whose call produced it: its key (`<run id>/<call id>`,
 * call ids counting up) is easy to guess, so knowing its URI is no permission.
 */
const requester = Effect.gen(function*() {
  const request = yield* Effect.serviceOption(HttpServerRequest.HttpServerRequest)
  const session = request._tag === "Some" ? request.value.headers["mcp-session-id"] : undefined
  if (session !== undefined) return `session ${session}`
  const client = yield* Effect.serviceOption(McpSchema.McpServerClient)
  return client._tag === "Some" ? `client ${client.value.clientId}` : "local"
})

/**
 * The values `args` holds under the policy's redacted keys, as a value of the same shape for
 * `redactStoredText` (which scrubs a text of the values under those keys): the rest of the
 * arguments is not kept.
 */
const secretsRoot = (policy: Redact | undefined, args: unknown): unknown => {
  const keys = policy?.keys ?? []
  const secrets = keys.length === 0 ? [] : secretsOf(policy, args)
  return secrets.length === 0 ? undefined : { [keys[0]!]: secrets }
}

/** A `ToolResult` as a `CallToolResult`: `Mcp.toolMessages` plus a `resource_link` per artifact. */
const toCallToolResult = (
  result: ToolResult.ToolResult,
  spec: ToolSpec,
  remember: (ref: ToolResult.ArtifactRef) => string
): McpSchema.CallToolResult => {
  const [message] = Mcp.toolMessages([result], { specs: [spec] })
  const links: Array<Content> = result.artifacts.map((ref) => ({
    type: "resource_link",
    uri: remember(ref),
    name: ref.key,
    description: `The output of ${result.name} call ${result.toolCallId} as stored (${ref.bytes} bytes); the text above is its head and tail.`,
    mimeType: ref.mimeType,
    size: ref.bytes
  }))
  const structured = spec.outputSchema !== undefined && message!.isError !== true
    ? message!.structuredContent
    : undefined
  // Effect's `ImageContent.data`, `AudioContent.data` and a blob resource's `blob` are the decoded
  // bytes (it encodes them to base64 on the wire).
  const bytes = (base64: string) => Uint8Array.from(Buffer.from(base64, "base64"))
  const content = message!.content.map((block): Content => {
    switch (block.type) {
      case "image":
      case "audio":
        return { ...block, data: bytes(block.data) } as Content
      case "resource":
        return {
          type: "resource",
          resource: "blob" in block.resource ? { ...block.resource, blob: bytes(block.resource.blob) } : block.resource
        } as Content
      default:
        return block as Content
    }
  })
  return new McpSchema.CallToolResult({
    content: [...content, ...links],
    ...(structured === undefined ? {} : { structuredContent: structured }),
    isError: message!.isError === true
  })
}

/**
 * `schema` (an exported spec schema, which never says its dialect) with the `$schema` the tool
 * declared (an imported tool that declared draft 2020-12 keeps saying so; MCP assumes 2020-12 when
 * `$schema` is absent).
 */
const declaringDialect = (schema: object, declared: { readonly $schema?: unknown } | undefined): object =>
  typeof declared?.$schema === "string" ? { $schema: declared.$schema, ...schema } : schema

/** The request's progress token (`_meta.progressToken` of its `tools/call`), when it asked for progress. */
const progressTokenOf = Effect.map(Effect.serviceOption(McpSchema.McpRequestContext), (context) => {
  if (context._tag === "None") return undefined
  const token = (context.value.requestMetadata as { readonly progressToken?: unknown } | undefined)?.progressToken
  return typeof token === "string" || typeof token === "number" ? token : undefined
})

/**
 * Registers every tool of `registry` on the `McpServer` in context, and the
 * artifact resource template. The handlers run with `services` (what the
 * executor needs, captured when the server starts), never the request's.
 */
export const registrations = <R, MR>(
  registry: ToolRegistry.ToolRegistry<R>,
  definitions: ReadonlyArray<Mcp.Tool>,
  settings: Settings<MR>,
  services: Context.Context<Executor.Requirements<R | MR>>
): Layer.Layer<never, never, McpServer.McpServer> =>
  Layer.effectDiscard(Effect.gen(function*() {
    const server = yield* McpServer.McpServer
    let executor = yield* Executor.make(registry, settings.executor)
    // A tool may cancel "the run" (`Cancellation.cancelRun`): the calls in flight end, and the next
    // call gets a fresh executor, so one tool cannot stop the server for good.
    const current = Effect.suspend(() =>
      executor.runCancel.reasonUnsafe() === undefined
        ? Effect.succeed(executor)
        : Effect.map(Executor.make(registry, settings.executor), (fresh) => (executor = fresh))
    )
    let counter = 0
    // Only artifacts this server's calls produced are readable, never any key of the store. The store
    // keeps the text as the tool produced it; what `resources/read` sends is redacted like the call's result.
    const served = new Map<string, Served>()
    const remember = (owner: string, policy: Redact | undefined, args: unknown) => (ref: ToolResult.ArtifactRef) => {
      const uri = artifactUri(ref)
      served.delete(uri)
      served.set(uri, { ref, owner, policy, secrets: secretsRoot(policy, args) })
      if (served.size > maxServed) served.delete(served.keys().next().value!)
      return uri
    }
    // The handlers log at Effect's levels, not at the one a request carries (Effect's server sets
    // `CurrentLogLevel` to the client's `logging/setLevel`, which a plain `Effect.log` would take).
    const logLevel = Context.get(services, References.CurrentLogLevel)
    const catalogue = settings.catalogue
    // A deferred tool is listed only to the sessions that found it.
    const hidden = catalogue === undefined ? undefined : yield* Layer.build(catalogue.visibility)

    for (let index = 0; index < registry.specs.length; index++) {
      const spec = registry.specs[index]!
      const definition = definitions[index]!
      const title = settings.title(spec)
      const declared = registry.entries[index]!.tool.jsonSchema
      yield* server.addTool({
        tool: new McpSchema.Tool({
          name: definition.name,
          ...(title === undefined ? {} : { title }),
          description: definition.description,
          inputSchema: declaringDialect(definition.inputSchema, declared?.input) as McpSchema.Tool["inputSchema"],
          ...(definition.outputSchema === undefined
            ? {}
            : { outputSchema: declaringDialect(definition.outputSchema, declared?.output) as McpSchema.Tool["inputSchema"] }),
          // Every hint explicitly, from `Safety`: never the protocol's (or Effect's) defaults.
          annotations: { ...definition.annotations, ...(title === undefined ? {} : { title }) }
        }),
        annotations: Context.empty(),
        ...(hidden !== undefined && catalogue!.isDeferred(spec.name) ? { services: hidden } : {}),
        handle: (payload: unknown) =>
          Effect.gen(function*() {
            const call = {
              id: `${settings.callIdPrefix}-${++counter}`,
              name: spec.name,
              arguments: payload === undefined || payload === null ? {} : payload
            }
            const token = yield* progressTokenOf
            const owner = yield* requester
            const request = yield* Effect.context<never>()
            const serverClient = yield* Effect.serviceOption(McpSchema.McpServerClient)
            const sink = yield* EventSink
            const session = catalogue === undefined ? undefined : yield* catalogue.session
            // Under a deferred catalogue the executor checks the call against the session's tools.
            let run = Effect.flatMap(current, (executor) =>
              executor.run(call, session === undefined ? undefined : { advertised: catalogue!.advertised(session) }))
            if (token !== undefined) {
              run = Effect.provideService(run, EventSink, withProgress(sink, call.id, token, request, server))
            }
            if (serverClient._tag === "Some") {
              const client = fromServerClient(serverClient.value)
              // A tool that asks (`Ask`) asks the client (elicitation), else the application's answerer.
              const answerer = answererOf(client, yield* Effect.serviceOption(Answerer))
              run = Effect.provideService(Effect.provideService(run, Client, client), Answerer, answerer)
            }
            run = withLogs(run, spec.name, scrubberOf(spec.safety.redact, call.arguments), request, server)
            const exit = yield* Effect.exit(Effect.provideService(run, References.CurrentLogLevel, logLevel))
            if (Exit.isSuccess(exit)) {
              if (session !== undefined && catalogue!.record(session, exit.value)) {
                yield* notifyToolsChanged(server, request)
              }
              return toCallToolResult(exit.value, spec, remember(owner, spec.safety.redact, call.arguments))
            }
            // A fatal error (or a repairable one with `repair: false`): still a tool result, never a
            // protocol error; its message is the model-safe text (a defect reads "internal error in tool X").
            const failure = exit.cause.reasons.find((reason) => reason._tag === "Fail")
            if (failure !== undefined && failure._tag === "Fail") {
              return errorResult((failure.error as { readonly message: string }).message)
            }
            // Interrupted (`notifications/cancelled`, a closed connection): pass the interruption on.
            return yield* Effect.failCause(exit.cause as Cause.Cause<never>)
          }).pipe(Effect.provideContext(services))
      })
    }

    yield* server.addResourceTemplate({
      template: new McpSchema.ResourceTemplate({
        uriTemplate: `${artifactBase}{store}/{key}`,
        name: "artifact",
        description: "The whole output of a tool call that was too large to return inline (linked from its result)."
      }),
      annotations: Context.empty(),
      routerPath: `${artifactBase.replace(":", "::")}*`,
      completions: {},
      handle: (uri) =>
        Effect.gen(function*() {
          const entry = served.get(uri)
          // Another session's artifact is "not found", as one that never existed.
          if (entry === undefined || entry.owner !== (yield* requester)) {
            return yield* new McpSchema.InvalidParams({ message: `Resource not found: ${uri}` })
          }
          served.delete(uri)
          served.set(uri, entry)
          const { ref } = entry
          // Why the store failed is the server's business (logged there); the client learns only that it did.
          const unreadable = (error: unknown) =>
            Effect.logWarning(`tinyagents: artifact ${ref.key} could not be read from store ${ref.store}`, Cause.fail(error)).pipe(
              Effect.andThen(new McpSchema.InternalError({ message: `artifact ${ref.key} could not be read` }))
            )
          const store = yield* StoreRegistry.store(ref.store).pipe(Effect.catch(unreadable))
          const text = yield* store.get(ref.key).pipe(Effect.catch(unreadable))
          if (text === undefined) {
            return yield* new McpSchema.InvalidParams({ message: `Resource not found: ${uri}` })
          }
          // Never the stored text as it is: redacted as the call's own result was.
          return { contents: [{ uri, mimeType: ref.mimeType, text: redactStoredText(text, entry.policy, entry.secrets) }] }
        }).pipe(Effect.provideContext(services), Effect.provideService(References.CurrentLogLevel, logLevel))
    })
  }))
