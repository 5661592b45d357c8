/**
 * Use an MCP server's tools: connect to a server (spawn a stdio command, or a
 * Streamable HTTP URL) and import its tools into a `ToolRegistry` as
 * first-class tools.
 *
 * - Foreign names go through the registry's reversible aliases (`get-sum` is
 *   called `get_sum`; `prefix: "fs"` names the tools `fs.read_file`, canonical
 *   `fs_read_file`). The server always gets its own name.
 * - Safety comes from the server's annotations, conservative when absent: a tool
 *   with no hints is `mutate`, destructive and networked (see `safetyOf`), so
 *   local policy (`consent`, `stage`, `dryRun`, `Policy`) treats it as such.
 *   Every imported tool is tagged `mcp` and `mcp:<server>`.
 * - Arguments are validated locally against the server's input schema (closed
 *   as shown) before anything is sent.
 * - Results: text and images are the model's content; audio, embedded
 *   resources and resource links are described in text; `value` is the
 *   `structuredContent` when the server sends it, else the content blocks as
 *   sent. An `isError` result is a repairable `ToolFailure` with the server's
 *   text; a refused request (invalid params, unknown tool) is repairable; a
 *   closed connection or a transport failure is a `ToolTransient`.
 * - Timeouts and interruption abort the request, and the client sends
 *   `notifications/cancelled`.
 * - Progress: a call run by an executor asks for the server's progress
 *   (`_meta.progressToken`), and each `notifications/progress` becomes a
 *   `ToolProgress` report of the call (`progress` its count, with `total` and
 *   `message`), so a `tool.progress` event, rate-bounded like any tool's
 *   (imported tools have no redaction policy: messages are as the server sent
 *   them). A call made without a `ToolProgress` does not ask.
 * - `notifications/tools/list_changed` re-lists the tools and replaces the
 *   registry (`connection.registry`, `connection.changes`).
 * - The connection is a scoped resource: it closes (and a spawned server is
 *   stopped) when its `Scope` closes, or earlier with `connection.close`.
 * - Server requests, answered by local policy and advertised only when
 *   configured: `elicitation: "approval"` answers form elicitation through the
 *   `Ask.Answerer` in context (asked as the calling tool's `Ask` question), else
 *   the `Approval` service (declined when neither is), `sampling` answers
 *   `sampling/createMessage` with the `ChatModel` within limits (refused
 *   otherwise). A request that arrives while exactly one call of the
 *   connection is in flight is about that call and uses the services of its
 *   fiber; otherwise the services the connection was made with. The server's
 *   log messages go to Effect's logger (annotated `mcpServer`); `logLevel`
 *   asks a server that offers logging for that level and above.
 * - Audit: a call that reaches the server adds `mcpServer` and `mcpTool` to the
 *   audit metadata (so `auditLog` receipts name the server); `McpConnect.middleware`
 *   also does it for calls refused before they reach the server (place it inside
 *   `auditLog`), and records resource links as the result's `artifacts`
 *   (`{ store: "mcp:<server>", key: uri }`).
 * - OAuth: `http({ url, auth })` authorizes with an OAuth-protected server
 *   (discovery, registration, sign-in, refresh, step-up; see `McpAuth`).
 *
 * The transport is the official `@modelcontextprotocol/sdk` client: an optional
 * peer dependency of `tinyagents/mcp`, loaded only when a connection is made.
 */
import type { Client } from "@modelcontextprotocol/sdk/client/index.js"
import type { Transport as SdkTransport } from "@modelcontextprotocol/sdk/shared/transport.js"
import { Data, Duration, Effect, Queue, Result, Scope, Semaphore, Stream, SubscriptionRef } from "effect"
import type * as Tool from "../contract/Tool.ts"
import type * as ToolInput from "../contract/ToolInput.ts"
import type * as ToolRegistry from "../contract/ToolRegistry.ts"
import * as AuditTrail from "../governance/middleware/AuditTrail.ts"
import type { Middleware } from "../runtime/Middleware.ts"
import type * as Mcp from "../providers/Mcp.ts"
import type * as McpAuth from "./McpAuth.ts"
import { authorizedFetch } from "./internal/authFetch.ts"
import { type Caller, importTools, pendingLinks, type Skipped, type Source, sources } from "./internal/connectImport.ts"
import { artifactOf, type CallResult, safetyOf as safetyOfAnnotations } from "./internal/connectMapping.ts"
import { extrasOf } from "./internal/connectPrompts.ts"
import type { Extras, Failure as ExtrasFailure } from "./internal/connectPromptTypes.ts"
import * as Requests from "./internal/connectRequests.ts"

export type { Skipped, Source } from "./internal/connectImport.ts"
export type { PromptInfo, PromptResult, ResourceInfo, ResourceTemplateInfo } from "./internal/connectPromptTypes.ts"

/** What a failed prompt or resource request was doing (the start of its message). */
const extrasFailureText: Record<ExtrasFailure["operation"], string> = {
  prompts: "cannot list the prompts of",
  resources: "cannot list the resources of",
  get: "cannot get a prompt from",
  read: "cannot read a resource of",
  subscribe: "cannot subscribe to a resource of"
}
export type { LogLevel, SamplingOptions, SamplingRequest } from "./internal/connectRequests.ts"

/** Connecting, listing or loading the MCP client failed. */
export class McpConnectError extends Data.TaggedError("McpConnectError")<{
  readonly server: string
  readonly operation: "load" | "connect" | "list" | ExtrasFailure["operation"]
  readonly reason: string
  /** The last lines the server wrote to stderr (stdio servers). */
  readonly stderr?: string
}> {
  override get message(): string {
    const what = this.operation === "load"
      ? "cannot load the MCP client (install @modelcontextprotocol/sdk)"
      : this.operation === "connect"
      ? `cannot connect to the MCP server "${this.server}"`
      : this.operation !== "list"
      ? `${extrasFailureText[this.operation]} the MCP server "${this.server}"`
      : `cannot list the tools of the MCP server "${this.server}"`
    return `${what}: ${this.reason}${this.stderr === undefined || this.stderr === "" ? "" : `\nserver stderr:\n${this.stderr}`}`
  }
}

/** Options of every connection. */
export interface Options {
  /** The server's label in tags, audit metadata and messages. Default: the server's `serverInfo.name`. */
  readonly name?: string
  /** Names the server's tools `<prefix>.<name>` (canonical `<prefix>_<name>`). */
  readonly prefix?: string
  /** Every imported tool's timeout (default: the executor's `defaultTimeout`). */
  readonly timeout?: Duration.Input
  /** Which of the server's tools to import (default: all). */
  readonly include?: (tool: Mcp.Tool) => boolean
  /** `pattern` keywords in the server's schemas: applied (default) or ignored (untrusted servers). */
  readonly patterns?: "apply" | "ignore"
  /** Argument limits of the registry (see `ToolRegistry.make`). */
  readonly limits?: ToolInput.Limits
  /** How the client introduces itself. Default `{ name: "tinyagents", version: "0.1.0" }`. */
  readonly clientInfo?: { readonly name: string; readonly version: string }
  /** Deadline of `initialize` and of each `tools/list` page. Default 60 seconds. */
  readonly requestTimeout?: Duration.Input
  /**
   * `"approval"`: advertise form elicitation and answer it through the `Ask.Answerer` in context,
   * asked as a question of the imported tool's call (`tool.question` / `tool.answered` events; the
   * schema's defaults fill keys the answer leaves out; `Declined` / `Unanswerable` decline); with no
   * answerer, through the `Approval` service (the schema's defaults proposed as the arguments;
   * Approve accepts them, Edit accepts valid edited content, Deny declines); declined when neither
   * is in context. Default: not advertised.
   */
  readonly elicitation?: "approval"
  /** Advertise sampling and answer it with the `ChatModel` in context, within these limits. Default: not advertised. */
  readonly sampling?: Requests.SamplingOptions
  /** Sent as `logging/setLevel` when the server offers logging. Default: the server's own level. */
  readonly logLevel?: Requests.LogLevel
}

/** A command to spawn, speaking MCP on its stdin and stdout. */
export interface StdioOptions extends Options {
  readonly command: string
  readonly args?: ReadonlyArray<string>
  /** Added to a minimal default environment (`PATH`, `HOME`, ...); nothing else is inherited. */
  readonly env?: Readonly<Record<string, string>>
  readonly cwd?: string
  /** The server's stderr: kept (default; its tail is quoted in connection errors), inherited or ignored. */
  readonly stderr?: "keep" | "inherit" | "ignore"
}

/** A Streamable HTTP endpoint. `R`: what its `auth` needs (a `StoreRegistry`, and the `authorize` callback's services). */
export interface HttpOptions<R = never> extends Options {
  readonly url: string | URL
  /** Extra request headers (e.g. `authorization`). */
  readonly headers?: Readonly<Record<string, string>>
  /**
   * OAuth for a protected server (`McpAuth.authorizationCode`, `McpAuth.clientCredentials`): on a 401
   * the connection discovers, registers, obtains a token and retries, before `http` returns.
   */
  readonly auth?: McpAuth.Auth<R>
}

/**
 * A live connection to one MCP server: its tools as a registry, and its prompts and resources
 * (`prompts`, `getPrompt`, `resources`, `readResource`, `subscribe`; a server without the
 * capability lists none).
 */
export interface Connection extends Extras<McpConnectError> {
  /** The server's label (`options.name`, else its `serverInfo.name`). */
  readonly name: string
  /** What the server said about itself. */
  readonly serverInfo: { readonly name: string; readonly version: string; readonly title?: string | undefined } | undefined
  readonly instructions: string | undefined
  /** The current registry of the server's tools (replaced on `tools/list_changed`). */
  readonly registry: Effect.Effect<ToolRegistry.ToolRegistry<never>>
  /** The current registry, synchronously. */
  readonly current: () => ToolRegistry.ToolRegistry<never>
  /** The current registry, then each new one (a `SubscriptionRef`'s changes). */
  readonly changes: Stream.Stream<ToolRegistry.ToolRegistry<never>>
  /** Lists the tools again and replaces the registry. */
  readonly refresh: Effect.Effect<ToolRegistry.ToolRegistry<never>, McpConnectError>
  /** The server's tools left out of the current registry, and why. */
  readonly skipped: () => ReadonlyArray<Skipped>
  /** How many `tools/list_changed` notifications the server has sent. */
  readonly listChanged: Effect.Effect<number>
  /** Closes the connection now (the scope closes it otherwise). Idempotent. */
  readonly close: Effect.Effect<void>
}

/**
 * An MCP SDK client transport (`StdioClientTransport`, `StreamableHTTPClientTransport`,
 * `InMemoryTransport`, ...), described structurally so that the declarations of
 * `tinyagents/mcp` do not need the SDK installed.
 */
export interface Transport {
  start(): Promise<void>
  send(message: unknown, options?: unknown): Promise<void>
  close(): Promise<void>
  onclose?: (() => void) | undefined
  onerror?: ((error: Error) => void) | undefined
  /** Set by the client; a method, so a transport typed with the SDK's own message type fits. */
  onmessage?(message: unknown, extra?: unknown): void
}

/** Safety from MCP annotations, as imported tools get it (conservative defaults). */
export const safetyOf = safetyOfAnnotations

/** Where an imported tool came from (`undefined` for other tools). */
export const sourceOf = (tool: Tool.Any): Source | undefined => sources.get(tool)

/** The most a request waits when no deadline is asked for: the executor's timeout governs calls. */
const noDeadline = 2_147_483_647

const reasonOf = (error: unknown): string => error instanceof Error ? error.message : String(error)

const loadSdk = (server: string) =>
  Effect.tryPromise({
    try: async () => {
      const [client, types] = await Promise.all([
        import("@modelcontextprotocol/sdk/client/index.js"),
        import("@modelcontextprotocol/sdk/types.js")
      ])
      return {
        Client: client.Client,
        ToolListChanged: types.ToolListChangedNotificationSchema,
        Elicit: types.ElicitRequestSchema,
        CreateMessage: types.CreateMessageRequestSchema,
        LogMessage: types.LoggingMessageNotificationSchema,
        McpError: types.McpError
      }
    },
    catch: (error) => new McpConnectError({ server, operation: "load", reason: reasonOf(error) })
  })

/**
 * Connects over any MCP SDK client `Transport` (the stdio and HTTP constructors
 * use this; tests pass an in-memory one). `label` names the server in errors
 * until it has introduced itself.
 */
export const transport = (
  make: Transport | (() => Promise<Transport> | Transport),
  options: Options & { readonly label?: string; readonly stderrTail?: () => string } = {}
): Effect.Effect<Connection, McpConnectError, Scope.Scope> =>
  Effect.gen(function*() {
    const label = options.name ?? options.label ?? "mcp"
    const sdk = yield* loadSdk(label)
    const stderrOf = () => {
      const tail = options.stderrTail?.()
      return tail === undefined || tail === "" ? {} : { stderr: tail }
    }
    const requestTimeout = options.requestTimeout === undefined
      ? 60_000
      : Duration.toMillis(Duration.fromInputUnsafe(options.requestTimeout))
    const client: Client = new sdk.Client(options.clientInfo ?? { name: "tinyagents", version: "0.1.0" }, {
      capabilities: {
        ...(options.elicitation === undefined ? {} : { elicitation: { form: {} } }),
        ...(options.sampling === undefined ? {} : { sampling: {} })
      }
    })
    // the server's label in what it asks or logs: `label` until it has introduced itself
    let named = label
    const answering = yield* answerRequests(client, sdk, options, () => named)
    const signals = yield* Queue.unbounded<void>()
    let notifications = 0
    client.setNotificationHandler(sdk.ToolListChanged, () => {
      notifications++
      Queue.offerUnsafe(signals, undefined)
    })
    let closed = false
    const closeNow = Effect.promise(async () => {
      if (closed) return
      closed = true
      await client.close().catch(() => undefined)
    })
    // Progress is delivered here, as each message arrives, not through the SDK's `onprogress`: the
    // SDK runs notification handlers a microtask late but a response at once, so a report that
    // arrives just before the result (in one stdio chunk) found its handler already removed and was
    // lost. A transport's own `onmessage` is called first, synchronously, by the SDK's client.
    const progressHandlers = new Map<string, (report: { readonly progress: number; readonly total?: number; readonly message?: string }) => void>()
    const deliverProgress = (message: unknown) => {
      const m = message as { readonly method?: unknown; readonly params?: { readonly [key: string]: unknown } }
      if (m?.method !== "notifications/progress" || typeof m.params?.progressToken !== "string") return
      const { message: text, progress, total } = m.params
      if (typeof progress !== "number") return
      progressHandlers.get(m.params.progressToken)?.({
        progress,
        ...(typeof total === "number" ? { total } : {}),
        ...(typeof text === "string" ? { message: text } : {})
      })
    }
    yield* Effect.acquireRelease(
      Effect.tryPromise({
        try: async () => {
          const connected = (typeof make === "function" ? await make() : make) as SdkTransport
          const own = connected.onmessage
          connected.onmessage = (message, extra) => {
            deliverProgress(message)
            own?.call(connected, message, extra)
          }
          return client.connect(connected, { timeout: requestTimeout })
        },
        catch: (error) => new McpConnectError({ server: label, operation: "connect", reason: reasonOf(error), ...stderrOf() })
      }),
      () => closeNow
    )
    const info = client.getServerVersion()
    const server = options.name ?? info?.name ?? label
    named = server
    if (options.logLevel !== undefined && client.getServerCapabilities()?.logging !== undefined) {
      yield* Effect.tryPromise({
        try: () => client.setLoggingLevel(options.logLevel!, { timeout: requestTimeout }),
        catch: (error) => new McpConnectError({ server, operation: "connect", reason: `logging/setLevel: ${reasonOf(error)}` })
      })
    }
    let progressTokens = 0
    const caller: Caller = {
      server,
      call: (name, args, signal, onProgress, origin) =>
        answering.during(origin, () => {
          if (onProgress === undefined) {
            return client.callTool({ name, arguments: { ...args } }, undefined, { signal, timeout: noDeadline }) as Promise<CallResult>
          }
          const token = `tinyagents-${++progressTokens}`
          progressHandlers.set(token, ({ message, progress, total }) =>
            onProgress({
              count: progress,
              ...(total === undefined ? {} : { total }),
              ...(message === undefined ? {} : { message })
            }))
          return (client.callTool({ name, arguments: { ...args }, _meta: { progressToken: token } }, undefined, {
            signal,
            timeout: noDeadline
          }) as Promise<CallResult>).finally(() => progressHandlers.delete(token))
        })
    }
    const listAll = Effect.tryPromise({
      try: async () => {
        const tools: Array<Mcp.Tool> = []
        let cursor: string | undefined
        for (let page = 0; page < 100; page++) {
          const result = await client.listTools(cursor === undefined ? undefined : { cursor }, { timeout: requestTimeout })
          tools.push(...(result.tools as unknown as ReadonlyArray<Mcp.Tool>))
          cursor = result.nextCursor
          if (cursor === undefined) break
        }
        return tools
      },
      catch: (error) => new McpConnectError({ server, operation: "list", reason: reasonOf(error), ...stderrOf() })
    })
    const importOptions = {
      prefix: options.prefix,
      timeout: options.timeout,
      patterns: options.patterns,
      include: options.include,
      limits: options.limits
    }
    const first = importTools(caller, yield* listAll, importOptions)
    let skipped = first.skipped
    const ref = yield* SubscriptionRef.make(first.registry)
    const oneAtATime = yield* Semaphore.make(1)
    const refresh = oneAtATime.withPermits(1)(
      Effect.gen(function*() {
        const next = importTools(caller, yield* listAll, importOptions)
        skipped = next.skipped
        yield* SubscriptionRef.set(ref, next.registry)
        return next.registry
      })
    )
    // list_changed: drain what arrived together, then list once; a failed refresh keeps the registry.
    yield* Queue.take(signals).pipe(
      Effect.andThen(Queue.clear(signals)),
      Effect.andThen(refresh),
      // A refresh cut short by closing the connection is not worth a warning.
      Effect.catch((error) => closed ? Effect.void : Effect.logWarning(`tinyagents mcp: ${error.message}`)),
      Effect.forever,
      Effect.forkScoped
    )
    return {
      name: server,
      serverInfo: info === undefined ? undefined : { name: info.name, version: info.version, title: info.title },
      instructions: client.getInstructions(),
      registry: SubscriptionRef.get(ref),
      current: () => ref.value,
      changes: SubscriptionRef.changes(ref),
      refresh,
      skipped: () => skipped,
      listChanged: Effect.sync(() => notifications),
      close: closeNow,
      ...(yield* extrasOf(client, requestTimeout, ({ operation, reason }) =>
        new McpConnectError({ server, operation, reason, ...stderrOf() })))
    } satisfies Connection
  })

/**
 * Installs the handlers of what the server may ask or tell (elicitation and sampling when
 * configured, log messages always) and keeps the calls in flight: a request arriving while exactly
 * one is in flight runs with that call's services, else with those the connection was made with.
 */
const answerRequests = (
  client: Client,
  sdk: Effect.Success<ReturnType<typeof loadSdk>>,
  options: Options,
  server: () => string
) =>
  Effect.gen(function*() {
    const own = yield* Effect.context<never>()
    const inFlight = new Set<Requests.Origin>()
    const only = () => inFlight.size === 1 ? inFlight.values().next().value : undefined
    const run = <A>(effect: (origin: Requests.Origin | undefined) => Effect.Effect<A>, signal?: AbortSignal) => {
      const origin = only()
      return Effect.runPromiseWith(origin?.context ?? own)(effect(origin), signal === undefined ? undefined : { signal })
    }
    if (options.elicitation !== undefined) {
      client.setRequestHandler(sdk.Elicit, (request, extra) => {
        // URL mode is not advertised: the SDK refuses it before this handler
        const params = request.params as Requests.ElicitParams
        return run((origin) => Requests.elicit(server(), params, String(extra.requestId), origin), extra.signal)
      })
    }
    const sampling = options.sampling
    if (sampling !== undefined) {
      const budget = { used: 0 }
      client.setRequestHandler(sdk.CreateMessage, async (request, extra) => {
        const params = request.params as Requests.SampleParams
        const answer = await run((origin) => Requests.sample(server(), params, sampling, budget, origin), extra.signal)
        if (Result.isFailure(answer)) throw new sdk.McpError(answer.failure.code, answer.failure.message)
        return answer.success
      })
    }
    client.setNotificationHandler(sdk.LogMessage, (notification) => {
      void run(() => Requests.logMessage(server(), notification.params))
    })
    return {
      /** Runs a call, known as in flight until it settles. */
      during: <A>(origin: Requests.Origin, send: () => Promise<A>): Promise<A> => {
        inFlight.add(origin)
        return send().finally(() => inFlight.delete(origin))
      }
    }
  })

/** Keeps the last `max` characters written to a stream. */
const tailOf = (max: number) => {
  let text = ""
  return {
    push: (chunk: unknown) => {
      text = (text + String(chunk)).slice(-max)
    },
    read: () => text.trim()
  }
}

/**
 * Spawns `command` (stdio transport) and imports its tools. The process is
 * stopped when the scope closes. Its stderr is kept (the last 4 KB are quoted
 * when connecting fails) unless `stderr: "inherit" | "ignore"`.
 */
export const stdio = (options: StdioOptions): Effect.Effect<Connection, McpConnectError, Scope.Scope> => {
  const label = options.name ?? options.command.split(/[\\/]/).pop() ?? options.command
  const tail = tailOf(4096)
  const mode = options.stderr ?? "keep"
  return Effect.flatMap(
    Effect.tryPromise({
      try: () => import("@modelcontextprotocol/sdk/client/stdio.js"),
      catch: (error) => new McpConnectError({ server: label, operation: "load", reason: reasonOf(error) })
    }),
    ({ StdioClientTransport }) =>
      transport(() => {
        const made = new StdioClientTransport({
          command: options.command,
          args: [...(options.args ?? [])],
          ...(options.env === undefined ? {} : { env: { ...options.env } }),
          ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
          stderr: mode === "keep" ? "pipe" : mode
        })
        made.stderr?.on("data", tail.push)
        return made
      }, { ...options, label, stderrTail: tail.read })
  )
}

/**
 * Connects to a Streamable HTTP endpoint and imports its tools. With `auth`, a server that answers
 * 401 is authorized first (an `McpAuth.McpAuthError` when that fails), and later 401s and 403
 * `insufficient_scope` answers refresh or step up the token.
 */
export const http = <R = never>(
  options: HttpOptions<R>
): Effect.Effect<Connection, McpConnectError | McpAuth.McpAuthError, Scope.Scope | R> => {
  const url = new URL(options.url)
  const label = options.name ?? url.host
  return Effect.gen(function*() {
    const { StreamableHTTPClientTransport } = yield* Effect.tryPromise({
      try: () => import("@modelcontextprotocol/sdk/client/streamableHttp.js"),
      catch: (error) => new McpConnectError({ server: label, operation: "load", reason: reasonOf(error) })
    })
    const authorized = options.auth === undefined ? undefined : yield* authorizedFetch(options.auth, url)
    return yield* transport(
      () =>
        new StreamableHTTPClientTransport(url, {
          ...(options.headers === undefined ? {} : { requestInit: { headers: { ...options.headers } } }),
          ...(authorized === undefined ? {} : { fetch: authorized.fetch })
        }),
      { ...options, label }
    ).pipe(
      // A connection refused for want of authorization fails with the authorization's error.
      Effect.catchTag("McpConnectError", (error) => Effect.fail(authorized?.failure() ?? error))
    )
  })
}

/**
 * Middleware for imported tools (others pass through untouched): adds
 * `mcpServer` / `mcpTool` to the audit metadata before anything else runs, so
 * receipts name the server even for calls refused before they reach it (place
 * it inside `auditLog`), and records the resource links a result carries as its
 * `artifacts` (`{ store: "mcp:<server>", key: uri, bytes: size or 0, mimeType }`).
 */
export const middleware: Middleware = {
  name: "mcp_source",
  around: (invocation, next) => {
    const source = sources.get(invocation.tool)
    if (source === undefined) return next(invocation)
    return AuditTrail.annotate({ metadata: { mcpServer: source.server, mcpTool: source.tool } }).pipe(
      Effect.andThen(next(invocation)),
      Effect.map((result) => {
        const pending = pendingLinks.get(invocation.call.id)
        if (pending === undefined || pending.server !== source.server) return result
        pendingLinks.delete(invocation.call.id)
        if (result.isError) return result
        return { ...result, artifacts: [...result.artifacts, ...pending.links.map((link) => artifactOf(source.server, link))] }
      })
    )
  }
}
