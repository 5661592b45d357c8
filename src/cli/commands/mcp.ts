/**
 * `tinyagents mcp`: the Model Context Protocol both ways. `mcp serve <module> [--http <port>]`
 * serves a tools module (`McpServe`, on stdio or Streamable HTTP; `--defer` as a deferred catalogue
 * behind `search_tools`, `McpServe`'s `toolSearch`); `mcp tools -- <command>` or
 * `--url <url>` lists a server's tools as they are imported (`McpConnect`).
 */
import { Console, Effect, Option, Redacted, Result } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import * as ToolSearch from "../../agent/ToolSearch.ts"
import * as McpAuth from "../../mcp/McpAuth.ts"
import * as McpConnect from "../../mcp/McpConnect.ts"
import * as McpServe from "../../mcp/McpServe.ts"
import * as StoreRegistry from "../../runtime/StoreRegistry.ts"
import { failedAs, UsageError } from "../internal/errors.ts"
import { eventsFlag } from "../internal/events.ts"
import { hideCliServices, load, moduleArgument, withModuleServices } from "../internal/toolsModule.ts"
import { formatExtras, printTools } from "./tools.ts"

/** What a module serves: "2 tool(s)", and its prompts and resources when it has some. */
const served = (loaded: { readonly registry: { readonly names: ReadonlyArray<string> }; readonly prompts: ReadonlyArray<unknown>; readonly resources: ReadonlyArray<unknown> }) =>
  [
    `${loaded.registry.names.length} tool(s)`,
    ...(loaded.prompts.length === 0 ? [] : [`${loaded.prompts.length} prompt(s)`]),
    ...(loaded.resources.length === 0 ? [] : [`${loaded.resources.length} resource(s)`])
  ].join(", ")

const mcpServeCommand = Command.make("serve", {
  module: moduleArgument,
  http: Flag.Int("http").pipe(
    Flag.withDescription("Serve Streamable HTTP on this port (0 picks a free one) instead of stdio"),
    Flag.optional
  ),
  host: Flag.String("host").pipe(
    Flag.withDescription("The interface --http listens on (default: 127.0.0.1)"),
    Flag.withDefault("127.0.0.1")
  ),
  allowOrigin: Flag.String("allow-origin").pipe(
    Flag.withDescription(
      "With --http: a browser Origin to accept besides the server's own (repeatable, e.g. --allow-origin http://localhost:3000); any other Origin is refused with 403"
    ),
    Flag.atLeast(0)
  ),
  defer: Flag.Boolean("defer").pipe(
    Flag.withDescription(
      "Serve a deferred catalogue: tools/list shows the --loaded tools and search_tools; a client's search reveals the tools it finds to that client"
    ),
    Flag.withDefault(false)
  ),
  loaded: Flag.String("loaded").pipe(
    Flag.withDescription("With --defer: a tool that stays listed (repeatable)"),
    Flag.atLeast(0)
  ),
  deferOver: Flag.Int("defer-over").pipe(
    Flag.withDescription("With --defer: defer only when the module has more than this many tools (default 0)"),
    Flag.optional
  ),
  searchResults: Flag.Int("search-results").pipe(
    Flag.withDescription(`With --defer: at most this many tools per search (default ${ToolSearch.defaultMaxResults})`),
    Flag.optional
  ),
  events: eventsFlag
}, ({ allowOrigin, deferOver, defer, events, host, http, loaded: loadedTools, module, searchResults }) =>
  Effect.gen(function*() {
    if (Option.isSome(http) && !(Number.isInteger(http.value) && http.value >= 0 && http.value <= 65535)) {
      return yield* new UsageError({ detail: `--http takes a port from 0 to 65535, not ${http.value}` })
    }
    const badOrigin = allowOrigin.find((origin) => !URL.canParse(origin) || new URL(origin).origin !== origin)
    if (badOrigin !== undefined) {
      return yield* new UsageError({
        detail: `--allow-origin takes an origin (scheme://host[:port], e.g. http://localhost:3000), not ${badOrigin}`
      })
    }
    if (Option.isNone(http) && allowOrigin.length > 0) {
      return yield* new UsageError({ detail: "--allow-origin applies to --http only" })
    }
    if (!defer && (loadedTools.length > 0 || Option.isSome(deferOver) || Option.isSome(searchResults))) {
      return yield* new UsageError({ detail: "--loaded, --defer-over and --search-results go with --defer" })
    }
    for (const [flag, value] of [["--defer-over", deferOver], ["--search-results", searchResults]] as const) {
      if (Option.isSome(value) && value.value < (flag === "--defer-over" ? 0 : 1)) {
        return yield* new UsageError({ detail: `${flag} takes a number of at least ${flag === "--defer-over" ? 0 : 1}, not ${value.value}` })
      }
    }
    if (Option.isNone(http)) {
      // stdio: the protocol owns stdout from the start, also while the tools module is imported.
      yield* Effect.sync(() => {
        console.log = console.error
        console.info = console.error
        console.debug = console.error
      })
    }
    const loaded = yield* load(module)
    const toolSearch: McpServe.ToolSearchOptions | undefined = defer
      ? {
        loaded: loadedTools,
        ...(Option.isSome(deferOver) ? { minTools: deferOver.value } : {}),
        ...(Option.isSome(searchResults) ? { maxResults: searchResults.value } : {})
      }
      : undefined
    // Names the module lacks are a usage error, before anything is served.
    const plan = toolSearch === undefined ? undefined : ToolSearch.plan(loaded.registry, toolSearch)
    if (plan !== undefined && Result.isFailure(plan)) return yield* new UsageError({ detail: plan.failure.message })
    const deferred = plan?.success?.deferred.length ?? 0
    const extras = { prompts: loaded.prompts, resources: loaded.resources, ...(toolSearch === undefined ? {} : { toolSearch }) }
    const serve = Option.isNone(http)
      ? McpServe.runStdio(loaded.registry, extras)
      : Effect.scoped(Effect.gen(function*() {
        const server = yield* McpServe.serveHttp(loaded.registry, {
          ...extras,
          port: http.value,
          host,
          allowedOrigins: allowOrigin
        })
        const behind = deferred === 0 ? "" : ` (${deferred} deferred behind ${ToolSearch.defaultName})`
        yield* Console.error(`tinyagents: serving ${served(loaded)}${behind} over MCP at ${server.url}`)
        return yield* Effect.never
      }))
    yield* withModuleServices(serve, loaded, events).pipe(failedAs("mcp serve"), hideCliServices)
  })).pipe(
    Command.withDescription(
      "Serve the tools of a tools module (and the prompts and resources it exports) over the Model Context Protocol: on stdin/stdout until the client closes stdin (events and logs on stderr), or over Streamable HTTP with --http until interrupted. Every call runs through the executor."
    ),
    Command.withExamples([
      { command: "tinyagents mcp serve ./tools.ts", description: "A stdio server (for an MCP client's server command)" },
      { command: "tinyagents mcp serve ./tools.ts --http 8080", description: "Streamable HTTP at http://127.0.0.1:8080/mcp" },
      {
        command: "tinyagents mcp serve ./tools.ts --http 8080 --allow-origin http://localhost:3000",
        description: "Also accept requests from a page served at http://localhost:3000"
      },
      {
        command: "tinyagents mcp serve ./tools.ts --defer --loaded read_file",
        description: "List read_file and search_tools; the other tools are found by searching"
      }
    ])
  )

const mcpToolsCommand = Command.make("tools", {
  url: Flag.String("url").pipe(Flag.withDescription("The server's Streamable HTTP endpoint"), Flag.optional),
  json: Flag.Boolean("json").pipe(Flag.withDescription("Print the list as JSON"), Flag.withDefault(false)),
  oauthPort: Flag.Int("oauth-port").pipe(
    Flag.withDescription(
      "With --url, for a server that wants OAuth: the loopback port the browser is sent back to (http://127.0.0.1:<port>/callback; default a free one)"
    ),
    Flag.optional
  ),
  clientId: Flag.String("client-id").pipe(
    Flag.withDescription(
      "With --url: a pre-registered OAuth client id (no dynamic registration); its secret, if any, from TINYAGENTS_MCP_CLIENT_SECRET"
    ),
    Flag.optional
  ),
  clientCredentials: Flag.Boolean("client-credentials").pipe(
    Flag.withDescription("With --client-id: the client credentials grant (a service, no browser) instead of a user's sign-in"),
    Flag.withDefault(false)
  ),
  command: Argument.String("command").pipe(
    Argument.withDescription("After --: the command that starts a stdio server, and its arguments"),
    Argument.variadic()
  )
}, ({ clientCredentials, clientId, command, json, oauthPort, url }) =>
  Effect.scoped(Effect.gen(function*() {
    const [program, ...args] = command
    if (Option.isSome(url) === (program !== undefined)) {
      return yield* new UsageError({ detail: "name one server: --url <url>, or -- <command> [args...]" })
    }
    if (Option.isSome(url) && !URL.canParse(url.value)) {
      return yield* new UsageError({ detail: `--url: not a URL: ${url.value}` })
    }
    if (Option.isNone(url) && (Option.isSome(oauthPort) || Option.isSome(clientId) || clientCredentials)) {
      return yield* new UsageError({ detail: "--oauth-port, --client-id and --client-credentials go with --url" })
    }
    const connection = yield* (Option.isSome(url)
      ? Effect.flatMap(
        oauthFor({ port: oauthPort, clientId, clientCredentials }),
        (auth) =>
          McpConnect.http({ url: url.value, auth }).pipe(Effect.provide(StoreRegistry.layerMemory), failedAs("mcp tools"))
      )
      : McpConnect.stdio({ command: program!, args }).pipe(failedAs("mcp tools")))
    const registry = yield* connection.registry
    for (const skipped of connection.skipped()) {
      yield* Console.error(`skipped ${JSON.stringify(skipped.name)}: ${skipped.reason}`)
    }
    yield* printTools(registry.specs, json)
    if (!json) {
      const prompts = yield* connection.prompts.pipe(failedAs("mcp tools"))
      const { resources, templates } = yield* connection.resources.pipe(failedAs("mcp tools"))
      const extras = formatExtras(prompts, [
        ...resources,
        ...templates.map((template) => ({ ...template, uri: template.uriTemplate }))
      ])
      if (extras !== "") yield* Console.log(extras)
    }
    yield* connection.close
  }))).pipe(
    Command.withDescription(
      "Connect to an MCP server (a command to spawn, after --, or --url) and list its tools as tinyagents imports them: canonical names, and safety from the server's annotations (a tool without hints counts as mutate, destructive, networked); then its prompts, resources and resource templates (not with --json, which lists the tools). An OAuth-protected --url server: the sign-in URL is printed on stderr and the browser comes back to a loopback port (--oauth-port); or --client-id with --client-credentials and the secret in TINYAGENTS_MCP_CLIENT_SECRET. Tokens stay in memory."
    ),
    Command.withExamples([
      {
        command: "tinyagents mcp tools -- npx -y @modelcontextprotocol/server-everything",
        description: "A stdio server"
      },
      { command: "tinyagents mcp tools --url http://127.0.0.1:8080/mcp --json", description: "A Streamable HTTP server, as JSON" },
      {
        command: "tinyagents mcp tools --url https://mcp.example.com/mcp --oauth-port 8976",
        description: "An OAuth-protected server: open the printed URL to sign in; the browser comes back to 127.0.0.1:8976"
      }
    ])
  )

/** The environment variable `--client-id`'s secret is read from (never a flag: command lines are visible to other users). */
const clientSecretVariable = "TINYAGENTS_MCP_CLIENT_SECRET"

/**
 * `mcp tools --url`'s OAuth: the client credentials grant with `--client-credentials`, else a user's
 * sign-in (the authorization code grant): the authorization URL is printed to stderr and the browser's
 * redirect comes back to a loopback listener. Tokens stay in memory for the command's run.
 */
const oauthFor = (options: {
  readonly port: Option.Option<number>
  readonly clientId: Option.Option<string>
  readonly clientCredentials: boolean
}) =>
  Effect.gen(function*() {
    const secretText = process.env[clientSecretVariable]
    const clientSecret = secretText === undefined || secretText === "" ? undefined : Redacted.make(secretText)
    if (options.clientCredentials) {
      if (Option.isNone(options.clientId) || clientSecret === undefined) {
        return yield* new UsageError({ detail: `--client-credentials needs --client-id and ${clientSecretVariable}` })
      }
      if (Option.isSome(options.port)) {
        return yield* new UsageError({ detail: "--oauth-port does not go with --client-credentials: that grant has no browser redirect" })
      }
      return McpAuth.clientCredentials({ clientId: options.clientId.value, clientSecret })
    }
    if (clientSecret !== undefined && Option.isNone(options.clientId)) {
      return yield* new UsageError({
        detail: `${clientSecretVariable} is the secret of a pre-registered client: name it with --client-id (or unset ${clientSecretVariable})`
      })
    }
    if (Option.isSome(options.port) && !(options.port.value >= 0 && options.port.value <= 65535)) {
      return yield* new UsageError({ detail: `--oauth-port takes a port from 0 to 65535, not ${options.port.value}` })
    }
    const local = yield* McpAuth.loopback({
      ...(Option.isSome(options.port) ? { port: options.port.value } : {}),
      show: (url) => Console.error(`tinyagents: the server wants you to sign in; open this URL in a browser:\n${url.href}`)
    }).pipe(failedAs("mcp tools"))
    return McpAuth.authorizationCode({
      ...local,
      clientName: "tinyagents CLI",
      ...(Option.isSome(options.clientId) ? { clientId: options.clientId.value } : {}),
      ...(clientSecret === undefined ? {} : { clientSecret })
    })
  })

/** `tinyagents mcp serve` and `tinyagents mcp tools`. */
export const mcpCommand = Command.make("mcp").pipe(
  Command.withDescription("The Model Context Protocol both ways: serve a tools module, or list a server's tools"),
  Command.withSubcommands([mcpServeCommand, mcpToolsCommand])
)
