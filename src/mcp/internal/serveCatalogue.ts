/**
 * A deferred catalogue served over MCP (`McpServe`'s `toolSearch`): the registry's tools are
 * `ToolSearch.plan`'s, and what a client may see and call is kept per session. A session's
 * `tools/list` holds the loaded tools, the search tool and the tools its own searches found; a
 * call to a deferred tool it has not found is refused by the executor with `ToolNotAllowed`
 * (`searchWith`: "call search_tools first"), as the agent loop refuses it. A search that finds a
 * tool the session had not seen sends it `notifications/tools/list_changed`. Sessions are
 * independent: one's searches never show another anything. Transport-free: `registrations.ts`
 * asks it per call, and its visibility middleware hides the deferred tools from `tools/list`.
 *
 * A session is the HTTP session (`Mcp-Session-Id`), else the MCP client (stdio has one). At most
 * {@link maxSessions} sessions are remembered: past that, the least recently active one forgets
 * what it found (its deferred tools are hidden and refused again: fail closed).
 */
import { type Context, Duration, Effect, type Layer } from "effect"
import { McpSchema, McpServer } from "effect/ai"
import { HttpServerRequest } from "effect/http"
import * as ToolRegistry from "../../contract/ToolRegistry.ts"
import type * as ToolResult from "../../contract/ToolResult.ts"
import * as ToolSearch from "../../agent/ToolSearch.ts"
import { deliveryMillis } from "./callNotifications.ts"

/** Sessions whose finds are remembered at once: the least recently active is forgotten first. */
export const maxSessions = 10_000

/** What the registrations ask of the catalogue. */
export interface Catalogue {
  /** Whether `tool` is deferred (hidden until a session's search finds it). */
  readonly isDeferred: (tool: string) => boolean
  /** The calling session's key (read from the request). */
  readonly session: Effect.Effect<string>
  /** What `session` may call: the loaded tools, the search tool and what its searches found. */
  readonly advertised: (session: string) => ToolRegistry.Advertised<unknown>
  /**
   * Records what a result of `session`'s call revealed (a search's finds): whether the session's
   * list changed (a tool it had not found before).
   */
  readonly record: (session: string, result: ToolResult.ToolResult) => boolean
  /** The middleware that leaves a deferred tool out of a session's `tools/list` until it is found. */
  readonly visibility: Layer.Layer<never>
}

const sessionKey = (sessionId: string | undefined, clientId: number): string =>
  sessionId !== undefined ? `session ${sessionId}` : `client ${clientId}`

/** The calling session: its `Mcp-Session-Id` over HTTP, else its client id. */
const currentSession = Effect.gen(function*() {
  const request = yield* Effect.serviceOption(HttpServerRequest.HttpServerRequest)
  const sessionId = request._tag === "Some" ? request.value.headers["mcp-session-id"] : undefined
  const context = yield* Effect.serviceOption(McpSchema.McpRequestContext)
  return sessionKey(sessionId, context._tag === "Some" ? context.value.clientId : -1)
})

/** The catalogue of `plan` (a registry whose tools are `plan.tools`). */
export const make = (plan: ToolSearch.Plan<unknown>): Catalogue => {
  const found = new Map<string, Set<string>>()
  const touch = (session: string): Set<string> | undefined => {
    const names = found.get(session)
    if (names !== undefined) {
      found.delete(session)
      found.set(session, names)
    }
    return names
  }
  const isRevealed = (session: string, tool: string): boolean => found.get(session)?.has(tool) === true
  const search = { tool: plan.tool as string, deferred: plan.isDeferred }
  const loaded = new Set<string>(plan.tools.names.filter((name) => !plan.isDeferred(name)))

  const visibility = McpServer.visibility((options) =>
    Effect.succeed(
      options.method !== "tools/list" || !plan.isDeferred(options.target) ||
        isRevealed(sessionKey(options.sessionId, options.requestContext.clientId), options.target)
    )
  ).layer as Layer.Layer<never>

  return {
    isDeferred: plan.isDeferred,
    session: currentSession,
    advertised: (session) => {
      const names = touch(session)
      const has = (canonical: string) => loaded.has(canonical) || names?.has(canonical) === true
      // a call is checked with `has` alone; the lists (a refusal names them) are made when read
      let view: ToolRegistry.Advertised<unknown> | undefined
      const listed = () => (view ??= ToolRegistry.filter(plan.tools, (spec) => has(spec.name)))
      return {
        registry: plan.tools,
        get names() {
          return listed().names
        },
        get specs() {
          return listed().specs
        },
        has,
        search
      }
    },
    record: (session, result) => {
      const revealed = ToolSearch.revealedBy(result, plan.tool)
      if (revealed.length === 0) return false
      let names = touch(session)
      if (names === undefined) {
        names = new Set()
        found.set(session, names)
        if (found.size > maxSessions) found.delete(found.keys().next().value!)
      }
      const before = names.size
      for (const name of revealed) names.add(name)
      return names.size > before
    },
    visibility
  }
}

/**
 * Sends `notifications/tools/list_changed` from the request in `request` (its context), before the
 * call's result; given up on after `deliveryMillis`, as the call's other notifications.
 */
export const notifyToolsChanged = (
  server: McpServer.McpServer["Service"],
  request: Context.Context<never>
): Effect.Effect<void> =>
  server.notifications["notifications/tools/list_changed"]({}).pipe(
    Effect.provideContext(request),
    Effect.interruptible,
    Effect.timeoutOption(Duration.millis(deliveryMillis)),
    Effect.ignore
  )
