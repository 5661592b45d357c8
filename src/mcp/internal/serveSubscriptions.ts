/**
 * Resource subscriptions over Streamable HTTP, which Effect's `McpServer`
 * refuses there (`resources/subscribe` is `-32601`, `subscribe: false` is
 * advertised, and a `GET` of the endpoint is 405, so it has no stream to send
 * `notifications/resources/updated` on). Used by `McpServe.serveHttp` when a
 * served resource has `changes`, as an `HttpRouter.serve` middleware:
 *
 * - `initialize`: the response advertises `resources.subscribe: true`.
 * - `resources/subscribe` / `resources/unsubscribe` (a single request with an
 *   `Mcp-Session-Id`): sent on to Effect's server as a `ping` with the same id,
 *   so that it checks the session (an unknown one gets its refusal); when the
 *   ping succeeds, the session's set of URIs changes and the ping's answer (an
 *   empty result) is the answer.
 * - `GET` with a session Effect accepts (checked with a `ping` likewise): an
 *   SSE stream that carries `notifications/resources/updated` for the URIs the
 *   session subscribed to (merged into Effect's own stream should it answer
 *   `GET` with one). `DELETE` of a session forgets it.
 *
 * An update of `uri` reaches the sessions subscribed to exactly `uri` (as
 * Effect's server matches on stdio).
 */
import { Effect, Queue, Stream } from "effect"
import { HttpBody, HttpServerRequest, HttpServerResponse } from "effect/http"

interface Session {
  readonly uris: Set<string>
  readonly streams: Set<Queue.Queue<Uint8Array>>
}

/** The middleware and the publisher of updates. */
export interface HttpSubscriptions {
  /** Sends `notifications/resources/updated` for `uri` on the open streams of the sessions subscribed to it. */
  readonly publish: (uri: string) => Effect.Effect<void>
  readonly middleware: <E, R>(
    app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
  ) => Effect.Effect<HttpServerResponse.HttpServerResponse, E, R | HttpServerRequest.HttpServerRequest>
}

/**
 * Past this many sessions, the oldest one with no open stream is forgotten (a session whose stream
 * is open never is: its client is still there).
 */
const maxSessions = 10_000

/** Updates waiting to be written on one stream: past this many, the oldest are dropped (a client that does not read). */
const streamBacklog = 1_000

const encoder = new TextEncoder()
const decoder = new TextDecoder()

/** Every JSON-RPC message of a response body (JSON, or SSE `data:` lines). */
const patchMessages = (text: string, patch: (message: unknown) => unknown): string => {
  const trimmed = text.trimStart()
  if (trimmed.startsWith("{") || trimmed.startsWith("[")) return JSON.stringify(patch(JSON.parse(text)))
  return text.split("\n").map((line) => line.startsWith("data: ") ? `data: ${JSON.stringify(patch(JSON.parse(line.slice(6))))}` : line)
    .join("\n")
}

/** `result.capabilities.resources.subscribe = true` in an `initialize` response, when it lists resources. */
const advertise = (message: unknown): unknown => {
  const resources = (message as { readonly result?: { readonly capabilities?: { readonly resources?: unknown } } })?.result
    ?.capabilities?.resources
  if (typeof resources !== "object" || resources === null) return message
  const result = (message as { readonly result: { readonly capabilities: object } }).result
  return {
    ...(message as object),
    result: { ...result, capabilities: { ...result.capabilities, resources: { ...resources, subscribe: true } } }
  }
}

const bodyText = (response: HttpServerResponse.HttpServerResponse): string | undefined =>
  response.body._tag === "Uint8Array" ? decoder.decode(response.body.body) : undefined

/** Whether a response carries a JSON-RPC result (not an error). */
const succeeded = (response: HttpServerResponse.HttpServerResponse): boolean => {
  const text = response.status === 200 ? bodyText(response) : undefined
  return text !== undefined && text.includes("\"result\"") && !text.includes("\"error\"")
}

const frame = (uri: string) =>
  encoder.encode(`data: ${JSON.stringify({ jsonrpc: "2.0", method: "notifications/resources/updated", params: { uri } })}\n\n`)

export const make = (): HttpSubscriptions => {
  const sessions = new Map<string, Session>()
  const sessionOf = (id: string): Session => {
    let session = sessions.get(id)
    if (session === undefined) {
      session = { uris: new Set(), streams: new Set() }
      sessions.set(id, session)
      if (sessions.size > maxSessions) {
        for (const [key, idle] of sessions) {
          if (idle.streams.size === 0 && idle !== session) {
            sessions.delete(key)
            break
          }
        }
      }
    }
    return session
  }

  /** `app` on a `ping` with `id` in place of `request`'s body: Effect checks the session. */
  const ping = <E, R>(
    app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>,
    request: HttpServerRequest.HttpServerRequest,
    id: unknown
  ) => {
    const headers = new globalThis.Headers()
    for (const [key, value] of Object.entries(request.headers)) if (typeof value === "string") headers.set(key, value)
    headers.set("content-type", "application/json")
    headers.set("accept", "application/json, text/event-stream")
    const web = new Request(new URL(request.url, `http://${request.headers["host"] ?? "localhost"}`), {
      method: "POST",
      headers,
      body: JSON.stringify({ jsonrpc: "2.0", id, method: "ping" })
    })
    return Effect.provideService(app, HttpServerRequest.HttpServerRequest, HttpServerRequest.fromWeb(web))
  }

  const stream = (session: Session): Stream.Stream<Uint8Array> =>
    Stream.unwrap(Effect.gen(function*() {
      const queue = yield* Queue.sliding<Uint8Array>(streamBacklog)
      session.streams.add(queue)
      const keepAlive = Stream.tick("15 seconds").pipe(Stream.drop(1), Stream.map(() => encoder.encode(": keepalive\n\n")))
      return Stream.merge(Stream.fromQueue(queue), keepAlive).pipe(
        Stream.ensuring(Effect.sync(() => session.streams.delete(queue)))
      )
    }))

  const middleware: HttpSubscriptions["middleware"] = (app) =>
    Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
      Effect.gen(function*() {
        const id = request.headers["mcp-session-id"]
        if (request.method === "DELETE") {
          const response = yield* app
          if (id !== undefined && response.status < 300) {
            for (const queue of sessions.get(id)?.streams ?? []) yield* Queue.shutdown(queue)
            sessions.delete(id)
          }
          return response
        }
        if (request.method === "GET") {
          const response = yield* app
          if (id === undefined) return response
          const theirs = response.status === 200 && response.body._tag === "Stream" ? response.body : undefined
          if (theirs !== undefined) {
            return HttpServerResponse.setBody(
              response,
              HttpBody.stream(Stream.merge(theirs.stream as Stream.Stream<Uint8Array>, stream(sessionOf(id))), theirs.contentType)
            )
          }
          if (response.status !== 405 || !succeeded(yield* ping(app, request, "tinyagents-session-check"))) return response
          return HttpServerResponse.stream(stream(sessionOf(id)), {
            contentType: "text/event-stream",
            headers: { "cache-control": "no-cache" }
          })
        }
        if (request.method !== "POST") return yield* app
        const text = yield* Effect.orElseSucceed(request.text, () => "")
        let message: { readonly id?: unknown; readonly method?: unknown; readonly params?: { readonly uri?: unknown } }
        try {
          message = JSON.parse(text)
        } catch {
          return yield* app
        }
        const method = typeof message === "object" && message !== null && !Array.isArray(message) ? message.method : undefined
        if (method === "initialize") {
          const response = yield* app
          const body = bodyText(response)
          if (body === undefined || response.status !== 200) return response
          const patched = yield* Effect.orElseSucceed(Effect.try(() => patchMessages(body, advertise)), () => body)
          return HttpServerResponse.setBody(
            response,
            HttpBody.uint8Array(encoder.encode(patched), response.body._tag === "Uint8Array" ? response.body.contentType : undefined)
          )
        }
        const uri = message.params?.uri
        if ((method !== "resources/subscribe" && method !== "resources/unsubscribe") || id === undefined || typeof uri !== "string") {
          return yield* app
        }
        const answer = yield* ping(app, request, message.id)
        if (succeeded(answer)) {
          const session = sessionOf(id)
          if (method === "resources/subscribe") session.uris.add(uri)
          else session.uris.delete(uri)
        }
        return answer
      }))

  return {
    middleware,
    publish: (uri) =>
      Effect.forEach(sessions.values(), (session) =>
        session.uris.has(uri)
          ? Effect.forEach(session.streams, (queue) => Queue.offer(queue, frame(uri)), { discard: true })
          : Effect.void, { discard: true })
  }
}
