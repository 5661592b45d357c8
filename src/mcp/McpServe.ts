/**
 * Serve a tool registry over the Model Context Protocol, on stdio or
 * Streamable HTTP, with Effect's `McpServer` (`effect/ai`).
 *
 * - `tools/list`: the registry's specs under their canonical names, with
 *   `title` (the tool's own, or `options.title`), `description`,
 *   `inputSchema` (draft 2020-12), `outputSchema` (object roots) and all four
 *   annotations derived from `Safety`, set explicitly
 *   (`Safety.toMcpAnnotations`), never the protocol's defaults.
 * - `tools/call`: every call goes through one `Executor` made with
 *   `options.executor` (validation, limits, middleware such as `auditLog`,
 *   policy and consent, events, timeouts, retries, idempotency, artifacts).
 *   An unknown tool is a JSON-RPC error `-32602`; invalid arguments and tool
 *   failures are `isError: true` results whose text is the repair message;
 *   `structuredContent` is sent when the tool has an output schema.
 * - Large outputs: each artifact becomes a `resource_link`
 *   (`tinyagents://artifacts/<store>/<key>`) that `resources/read` serves;
 *   only artifacts of this server's calls are readable, and only by the
 *   session whose call produced them (the HTTP session, or the stdio
 *   client; the 1,000 most recently used). The artifact store
 *   keeps the full text as the tool produced it; what `resources/read` sends
 *   is redacted by the producing tool's `safety.redact` (pattern matches, and
 *   values under redacted keys when the text is JSON, re-serialized; values
 *   the call's arguments held under a redacted key), like the call's result.
 * - Prompts and resources (`options.prompts`, `options.resources`; `McpPrompt`,
 *   `McpResource`): served beside the tools, their handlers with the same
 *   services; resources with `changes` send `notifications/resources/updated`
 *   to the sessions that subscribed (over HTTP on the session's `GET` stream,
 *   which Effect's transport lacks: see `internal/serveSubscriptions.ts`).
 * - Progress: a `tools/call` whose request carries `_meta.progressToken`
 *   gets a `notifications/progress` for each `tool.progress` of its call
 *   (`ToolProgress`: `progress` is the tool's count with its `total`, else
 *   its fraction of 1, as reported, the first one included, even at 0;
 *   `message` its redacted message), each delivered before the call's
 *   result. `progress` must increase with each notification: a later report
 *   that does not raise it sends its message as a `notifications/message`
 *   instead. Other requests get none.
 * - Logging (`logging` capability): what a handler logs (`Effect.log`,
 *   `Effect.logWarning`, ...) during a served call also goes to the calling
 *   client as `notifications/message` (logger: the tool's name; the text and
 *   the messages of a logged cause, redacted like the call's result), at or
 *   above the level the client set with `logging/setLevel` (default `info`;
 *   a plain `Effect.log` is `info` whatever the client set), each delivered
 *   before the call's result. The server's own loggers keep their minimum level.
 * - Asking the client: while a tool runs as a served `tools/call`, its
 *   handler can reach the calling client through {@link Client}
 *   (`elicit`, `createMessage`); read it with
 *   `Effect.serviceOption(McpServe.Client)` (absent outside MCP serving, so
 *   it never enters a tool's requirements).
 * - A deferred catalogue (`options.toolSearch`, `ToolSearch`'s options): `tools/list` answers the
 *   loaded tools and `search_tools`; the tools a session's search finds join that session's list
 *   (with `notifications/tools/list_changed`), and a session's call to a deferred tool it has not
 *   found is refused (`ToolNotAllowed` with `searchWith`), per session (`internal/serveCatalogue.ts`).
 * - Capabilities: `tools`, `logging`, `resources` (the artifacts;
 *   `subscribe` only when a served resource has `changes`), and
 *   `completions` only when a registered prompt or resource template has a
 *   completion.
 * - HTTP: DNS-rebinding protection (a loopback server accepts only a
 *   loopback `Host`, and a browser `Origin` only when it is the server's own
 *   or listed in `allowedOrigins`), and a session's request may name any
 *   protocol version the server supports in `MCP-Protocol-Version` (an
 *   unsupported one is refused with 400).
 * - `notifications/cancelled` interrupts the running call (the executor
 *   reports `tool.failed` with reason `cancelled`); so do a client that goes
 *   away (a dropped HTTP connection, a `DELETE` of its session, the end of
 *   stdin for {@link runStdio}) and the end of the server's scope.
 * - stdio: the protocol owns stdout. Effect logs go to stderr while the
 *   server runs, and so (by default) does `console.log`. Send events to a
 *   file or stderr (`EventSink.layerJsonl`, `EventSink.layerCallback`).
 *
 * One executor serves every client of a server: it is one "run" (the
 * `RunContext` provided), so `limits.run` counts all calls of the server's
 * lifetime, and call ids are `mcp-<server id>-<n>`.
 *
 * Why Effect's `McpServer` and not the official SDK's server: measured with
 * the SDK 1.32 `Client` (test/mcp/Serve*.test.ts), it keeps the annotations
 * and schemas we give it as they are (`McpServer.toolkit`'s defaults,
 * `destructiveHint: true` / `openWorldHint: true`, apply only to `effect/ai`
 * toolkits, which we do not use), answers an unknown tool with `-32602`,
 * interrupts a handler on `notifications/cancelled`, on a `DELETE` of the
 * session and on a dropped connection, and keeps the library free of the
 * SDK at run time. With the layer below it passes all 32 of the official
 * conformance suite's server scenarios (test/mcp/ConformanceServer.test.ts),
 * so it stays. What is handled
 * here: its stdio protocol interrupts the fiber that built it when its output
 * ends (so the server is built in a fiber of its own); Node's `server.close`
 * would wait for a client that vanished mid-response (so the sockets are
 * closed first); it advertises `completions` always (here only when served);
 * over HTTP it refuses a session's request naming a supported protocol
 * version other than the negotiated one, and any `Origin` not listed (the
 * guard in front of it accepts both, see `internal/httpGuard.ts`); and it has
 * no way for a handler's logs to reach the client (`internal/callNotifications.ts`).
 *
 * Runtime dependency: `@effect/platform-node` (Node's stdio and HTTP
 * server), imported when a server starts: an optional peer dependency.
 */
import { Cause, Context, Data, Deferred, Effect, Layer, Logger, Scope, Tracer } from "effect"
import { McpProtocol, McpSchema, McpServer } from "effect/ai"
import { HttpRouter, HttpServer as EffectHttpServer, HttpServerRequest } from "effect/http"
import type { HttpServerError } from "effect/http"
import { randomUUID } from "node:crypto"
import { createServer } from "node:http"
import * as ToolSearch from "../agent/ToolSearch.ts"
import type { ToolSpec } from "../contract/Tool.ts"
import type * as ToolRegistry from "../contract/ToolRegistry.ts"
import type * as Executor from "../runtime/Executor.ts"
import * as Mcp from "../providers/Mcp.ts"
import type { ProviderExportError } from "../providers/ProviderExportError.ts"
import { guard } from "./internal/httpGuard.ts"
import { registrations } from "./internal/registrations.ts"
import * as Catalogue from "./internal/serveCatalogue.ts"
import { extras } from "./internal/serveExtras.ts"
import * as HttpSubscriptions from "./internal/serveSubscriptions.ts"
import type * as McpPrompt from "./McpPrompt.ts"
import type * as McpResource from "./McpResource.ts"

export { artifactUri } from "./internal/registrations.ts"
export {
  Client,
  ClientRequestError,
  type CreateMessageParams,
  type CreateMessageResult,
  type ElicitResult,
  type ElicitSchema
} from "./internal/serverClient.ts"

/** Options of every server. `MR`: the services the executor's middleware, the prompts and the resources need. */
export interface Options<MR = never> {
  /** `serverInfo.name`. Default `"tinyagents"`. */
  readonly name?: string
  /** `serverInfo.version`. Default `"0.1.0"`. */
  readonly version?: string
  /** `instructions` sent on `initialize`. */
  readonly instructions?: string
  /** The executor every call runs through: middleware, limits, timeouts, artifacts, repair... */
  readonly executor?: Executor.Options<MR>
  /**
   * A tool's `title` (MCP's human-readable name). Default: the tool's own `title`
   * (`Tool.make(name, { title })`, or the one an imported tool came with), else none.
   */
  readonly title?: (spec: ToolSpec) => string | undefined
  /**
   * Prompts served beside the tools (`prompts/list`, `prompts/get`; the `prompts` capability is
   * advertised only when there are some). Their handlers get the executor's services.
   */
  readonly prompts?: ReadonlyArray<McpPrompt.McpPrompt<MR>>
  /**
   * Resources served beside the tools and the artifacts (`resources/list`,
   * `resources/templates/list`, `resources/read`; `notifications/resources/updated` to subscribers
   * of those with `changes`). Their handlers get the executor's services.
   */
  readonly resources?: ReadonlyArray<McpResource.McpResource<MR>>
  /**
   * Serve the registry as a deferred catalogue (see {@link ToolSearchOptions}): each session lists
   * the loaded tools and the search tool, and sees a deferred tool only once its own search found it.
   */
  readonly toolSearch?: ToolSearchOptions
}

/**
 * A deferred catalogue: the agent's `toolSearch` options (`ToolSearch.Options`: `defer`, `loaded`,
 * `minTools`, `name`, `description`, `maxResults`, `searcher`), per MCP session. `tools/list`
 * answers the loaded tools and the search tool (`search_tools`), whose result lists each tool found
 * with its input schema; the tools a session's search found join that session's `tools/list` for
 * the rest of the session, with a `notifications/tools/list_changed` to it. A session's call to a
 * deferred tool it has not found is refused (`ToolNotAllowed` with `searchWith`, an `isError` result
 * that says to search first). `keep` and `native` are the agent loop's, not the server's.
 */
export type ToolSearchOptions = Omit<ToolSearch.Options, "keep" | "native">

/** Options of {@link runStdio}, {@link serveStdio} and {@link layerStdio}. */
export interface StdioOptions<MR = never> extends Options<MR> {
  /**
   * Where `console.log`, `console.info` and `console.debug` write while the
   * server runs: `"stderr"` (default; stdout carries only the protocol) or
   * `"keep"`.
   */
  readonly console?: "stderr" | "keep"
}

/** Options of {@link serveHttp} and {@link layerHttp}. */
export interface HttpOptions<MR = never> extends Options<MR> {
  /** Port to listen on; `0` picks a free one (read it from {@link HttpServer.port}). */
  readonly port: number
  /** Interface. Default `"127.0.0.1"`. */
  readonly host?: string
  /** The MCP endpoint. Default `"/mcp"`. */
  readonly path?: `/${string}`
  /**
   * Browser `Origin`s accepted besides the server's own (`http://localhost:<port>`, and the other
   * loopback names, when it listens on a loopback interface); a request with any other `Origin`
   * header is refused with 403 (DNS-rebinding protection; clients that send none, such as the SDK
   * on Node, are unaffected). `tinyagents mcp serve --allow-origin <origin>`. Default: none.
   * Each is an origin as browsers send it (`https://app.example.com`, `http://localhost:3000`: lower
   * case, no path, no trailing `/`); anything else, and `"null"`, fails with `IllegalArgumentError`.
   */
  readonly allowedOrigins?: ReadonlyArray<string>
  /** Accept `DELETE` with `Mcp-Session-Id`: a client ends its session, and its running calls are cancelled. Default `true`. */
  readonly allowSessionTermination?: boolean
}

/** A running Streamable HTTP server. */
export interface HttpServer {
  /** The endpoint, e.g. `http://127.0.0.1:41234/mcp`. */
  readonly url: string
  readonly host: string
  readonly port: number
}

/**
 * What serving needs: the executor's services for the registry's tools and the middleware (in a
 * one-element tuple, as `Executor.Requirements`, so that type errors list the services).
 */
export type Requirements<R, MR> = [Executor.Requirements<R | MR>][0]

/** Protocol revisions offered (the official SDK 1.x speaks 2025-11-25 and earlier). */
const offered = [
  McpProtocol.v2025_11_25,
  McpProtocol.v2025_06_18,
  McpProtocol.v2025_03_26,
  McpProtocol.v2024_11_05
] as const

/**
 * Effect's `McpServer` advertises `completions` whatever is registered (and answers
 * `completion/complete` for an unknown reference with -32602): it is advertised here only when a
 * registered prompt or resource template has a completion, as the registrations report through
 * {@link seeingCompletions}. On stdio it also advertises `resources.subscribe` always: here only
 * when a served resource has `changes` (`subscribable`; over HTTP `internal/serveSubscriptions.ts`
 * then answers the subscriptions).
 */
const advertisingCompletions = <P extends McpProtocol.AnyProtocolAdapter>(
  protocol: P,
  served: () => boolean,
  subscribable: boolean
): P => ({
  ...protocol,
  installHandlers: (core, lifecycle, target) =>
    protocol.installHandlers(
      core,
      lifecycle === undefined ? undefined : {
        ...lifecycle,
        initialize: (...args: ReadonlyArray<unknown>) =>
          Effect.map(
            lifecycle.initialize(...args),
            (result: { readonly capabilities: { readonly resources?: object } }) => ({
              ...result,
              capabilities: {
                ...result.capabilities,
                completions: served(),
                ...(result.capabilities.resources === undefined
                  ? {}
                  : { resources: { ...result.capabilities.resources, subscribe: subscribable } })
              }
            })
          )
      },
      target
    )
})

/** `registrations`, with `seen.completions` set once one of them registers a completion. */
const seeingCompletions = <E>(
  registrations: Layer.Layer<never, E, McpServer.McpServer>,
  seen: { completions: boolean }
): Layer.Layer<never, E, McpServer.McpServer> => {
  const note = (completions: Readonly<Record<string, unknown>>) => {
    if (Object.keys(completions).length > 0) seen.completions = true
  }
  return Layer.provide(
    registrations,
    Layer.effect(
      McpServer.McpServer,
      Effect.map(McpServer.McpServer, (server) =>
        Object.assign(Object.create(server) as McpServer.McpServer["Service"], {
          addPrompt: (options: Parameters<McpServer.McpServer["Service"]["addPrompt"]>[0]) => {
            note(options.completions)
            return server.addPrompt(options)
          },
          addResourceTemplate: (options: Parameters<McpServer.McpServer["Service"]["addResourceTemplate"]>[0]) => {
            note(options.completions)
            return server.addResourceTemplate(options)
          }
        }))
    )
  )
}

/**
 * The protocols a server offers, and its registrations, advertising `completions` only when served
 * and `resources.subscribe` only when one of `options.resources` can change.
 */
const protocolsFor = <E, MR>(registrations: Layer.Layer<never, E, McpServer.McpServer>, options: Options<MR>) => {
  const seen = { completions: false }
  const subscribable = options.resources?.some((resource) => resource.changes !== undefined) === true
  return {
    protocols: offered.map((protocol) =>
      advertisingCompletions(protocol, () => seen.completions, subscribable)
    ) as unknown as typeof offered,
    registrations: seeingCompletions(registrations, seen)
  }
}

const prepare = <R, MR>(
  registry: ToolRegistry.ToolRegistry<R>,
  options: Options<MR>,
  subscriptions?: HttpSubscriptions.HttpSubscriptions
) =>
  Effect.gen(function*() {
    const plan = options.toolSearch === undefined
      ? undefined
      : yield* Effect.fromResult(ToolSearch.plan(registry as ToolRegistry.ToolRegistry<unknown>, options.toolSearch))
    const served = (plan?.tools ?? registry) as ToolRegistry.ToolRegistry<R>
    const definitions = yield* Mcp.toolDefinitions(served.specs, { names: "canonical" })
    // The caller's services, less those of a request or a scope (as Effect's `McpServer` captures
    // a handler's): each request's own are kept, so a handler's finalizers run when its request ends.
    const services = Context.omit(
      Scope.Scope,
      Tracer.ParentSpan,
      McpSchema.McpRequestContext,
      McpSchema.McpServerClient,
      HttpServerRequest.HttpServerRequest
    )(yield* Effect.context<Requirements<R, MR>>()) as Context.Context<Requirements<R, MR>>
    return Layer.merge(
      registrations(served, definitions, {
        executor: options.executor ?? {},
        title: options.title ?? ((spec) => spec.title),
        callIdPrefix: `mcp-${randomUUID().slice(0, 8)}`,
        ...(plan === undefined ? {} : { catalogue: Catalogue.make(plan) })
      }, services),
      extras(options.prompts ?? [], options.resources ?? [], services as Context.Context<MR>, subscriptions?.publish)
    )
  })

/** Serving could not start: an optional peer dependency it needs is not installed. */
export class McpServeError extends Data.TaggedError("McpServeError")<{
  readonly operation: "load"
  readonly message: string
  readonly cause?: unknown
}> {}

/**
 * Why serving fails: a tool that cannot be listed, an option `McpServer` refuses, `toolSearch`
 * options the registry does not fit (`InvalidToolSearch`), or `@effect/platform-node` missing.
 */
export type ServeFailure = ProviderExportError | Cause.IllegalArgumentError | ToolSearch.InvalidToolSearch | McpServeError

/** Why serving over HTTP fails: a {@link ServeFailure}, or the server cannot listen. */
export type HttpServeFailure = ServeFailure | HttpServerError.ServeError

/** `serverInfo` and `instructions`, as every transport sends them on `initialize`. */
const serverInfo = <MR>(options: Options<MR>) => ({
  name: options.name ?? "tinyagents",
  version: options.version ?? "0.1.0",
  ...(options.instructions === undefined ? {} : { instructions: options.instructions })
})

/** A module of `@effect/platform-node` (an optional peer dependency), or a typed error that says to install it. */
const platformNode = <A>(caller: string, load: () => Promise<A>): Effect.Effect<A, McpServeError> =>
  Effect.tryPromise({
    try: load,
    catch: (cause) =>
      new McpServeError({
        operation: "load",
        message: `McpServe.${caller} needs @effect/platform-node (^4.1): npm install @effect/platform-node`,
        cause
      })
  })

/** Sends `console.log` / `info` / `debug` to stderr until the scope closes. */
const consoleToStderr = Effect.acquireRelease(
  Effect.sync(() => {
    const saved = { log: console.log, info: console.info, debug: console.debug }
    console.log = console.info = console.debug = (...args: Array<unknown>) => console.error(...args)
    return saved
  }),
  (saved) =>
    Effect.sync(() => {
      console.log = saved.log
      console.info = saved.info
      console.debug = saved.debug
    })
)

/**
 * Serves `registry` on this process's stdin/stdout until the scope closes.
 * Fails with `ProviderExportError` when a tool cannot be listed.
 */
export const serveStdio = <R, MR = never>(
  registry: ToolRegistry.ToolRegistry<R>,
  options: StdioOptions<MR> = {}
): Effect.Effect<void, ServeFailure, Scope.Scope | Requirements<R, MR>> =>
  Effect.gen(function*() {
    if (options.console !== "keep") yield* consoleToStderr
    const NodeStdio = yield* platformNode("serveStdio", () => import("@effect/platform-node/NodeStdio"))
    const tools = yield* prepare(registry, options)
    const server = McpServer.layerStdio({
      ...serverInfo(options),
      ...protocolsFor(tools, options)
    }).pipe(Layer.provide(NodeStdio.layer))
    // Effect's stdio protocol interrupts the fiber that built it when its output ends (made for
    // `Layer.launch`): build it in a fiber of its own, so closing the scope never interrupts the caller.
    const ready = yield* Deferred.make<void, Cause.IllegalArgumentError>()
    yield* Layer.build(server).pipe(
      Effect.andThen(Deferred.succeed(ready, undefined)),
      Effect.andThen(Effect.never),
      Effect.scoped,
      Effect.onError((cause) => Deferred.failCause(ready, cause)),
      Effect.forkScoped
    )
    yield* Deferred.await(ready)
  }).pipe(Effect.provideService(Logger.LogToStderr, true))

/** Completes when this process's stdin ends. */
const stdinEnded = Effect.callback<void>((resume) => {
  const done = () => resume(Effect.void)
  if (process.stdin.readableEnded || process.stdin.destroyed) return done()
  process.stdin.once("end", done).once("close", done)
  return Effect.sync(() => {
    process.stdin.off("end", done).off("close", done)
  })
})

/**
 * Serves `registry` on stdin/stdout until the client goes away (stdin ends),
 * then stops, cancelling the calls still running: what a stdio server's
 * `main` runs (`McpServe.runStdio(registry).pipe(..., NodeRuntime.runMain)`).
 */
export const runStdio = <R, MR = never>(
  registry: ToolRegistry.ToolRegistry<R>,
  options: StdioOptions<MR> = {}
): Effect.Effect<void, ServeFailure, Requirements<R, MR>> =>
  Effect.scoped(Effect.andThen(serveStdio(registry, options), stdinEnded))

/**
 * Serves `registry` over Streamable HTTP on `host:port` until the scope
 * closes, and returns the bound address (`port: 0` picks a free port).
 */
export const serveHttp = <R, MR = never>(
  registry: ToolRegistry.ToolRegistry<R>,
  options: HttpOptions<MR>
): Effect.Effect<HttpServer, HttpServeFailure, Scope.Scope | Requirements<R, MR>> =>
  Effect.gen(function*() {
    // An origin is compared as the browser sends it: one that is not in that form would never match;
    // "null" (sandboxed frames, file: pages) would let any such page in.
    for (const origin of options.allowedOrigins ?? []) {
      if (origin === "null" || !URL.canParse(origin) || new URL(origin).origin !== origin) {
        return yield* new Cause.IllegalArgumentError(
          `allowedOrigins: ${JSON.stringify(origin)} is not an origin as browsers send it ` +
            `(scheme://host[:port], lower case, no path or trailing "/"; "null" is never allowed)`
        )
      }
    }
    const NodeHttpServer = yield* platformNode("serveHttp", () => import("@effect/platform-node/NodeHttpServer"))
    // Effect's HTTP transport has no resource subscriptions: ours, when a resource can change.
    const subscriptions = options.resources?.some((resource) => resource.changes !== undefined) === true
      ? HttpSubscriptions.make()
      : undefined
    const tools = yield* prepare(registry, options, subscriptions)
    const host = options.host ?? "127.0.0.1"
    const path = options.path ?? "/mcp"
    // Origins are checked by `guard` (which passes Effect's own check no `Origin` header).
    const mcp = McpServer.layerHttp({
      ...serverInfo(options),
      path,
      allowSessionTermination: options.allowSessionTermination ?? true,
      ...protocolsFor(tools, options)
    })
    const node = createServer()
    const middleware = guard({
      host,
      allowedOrigins: options.allowedOrigins ?? [],
      versions: offered.map((protocol) => protocol.protocolVersion)
    })
    const routes = subscriptions === undefined
      ? mcp
      : Layer.merge(mcp, HttpRouter.middleware(subscriptions.middleware, { global: true }))
    const server = HttpRouter.serve(routes, { disableLogger: true, disableListenLog: true, middleware }).pipe(
      Layer.provideMerge(NodeHttpServer.layer(() => node, { port: options.port, host }))
    )
    const context = yield* Layer.build(server)
    // Runs before the layer's own shutdown: a client that vanished mid-response would otherwise
    // hold `close` until its socket times out. Calls still running are interrupted either way.
    yield* Effect.addFinalizer(() => Effect.sync(() => node.closeAllConnections()))
    const address = Context.get(context, EffectHttpServer.HttpServer).address
    const port = "port" in address ? address.port : options.port
    return { url: `http://${host.includes(":") ? `[${host}]` : host}:${port}${path}`, host, port }
  })

/**
 * {@link serveStdio} as a layer: the server runs while the layer is in use
 * (also after the client has gone; {@link runStdio} stops then).
 */
export const layerStdio = <R, MR = never>(
  registry: ToolRegistry.ToolRegistry<R>,
  options: StdioOptions<MR> = {}
): Layer.Layer<never, ServeFailure, Requirements<R, MR>> =>
  Layer.effectDiscard(serveStdio(registry, options))

/** {@link serveHttp} as a layer (use {@link serveHttp} to learn a port picked with `port: 0`). */
export const layerHttp = <R, MR = never>(
  registry: ToolRegistry.ToolRegistry<R>,
  options: HttpOptions<MR>
): Layer.Layer<never, HttpServeFailure, Requirements<R, MR>> => Layer.effectDiscard(serveHttp(registry, options))
