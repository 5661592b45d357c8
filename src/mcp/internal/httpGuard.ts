/**
 * What `McpServe.serveHttp` checks before a request reaches Effect's `McpServer` (an
 * `HttpRouter.serve` middleware):
 *
 * - DNS-rebinding protection. On a loopback interface, the `Host` header must name a loopback
 *   address (`localhost`, `127.0.0.1`, `[::1]`); a request with an `Origin` header is accepted
 *   when that origin is the server's own (`http://`, a loopback name and the port of the request's
 *   `Host`) or one of `allowedOrigins`, and refused with 403 otherwise. On other interfaces only `allowedOrigins`
 *   (and requests without `Origin`) are accepted. Effect's own check (exact `allowedOrigins`) sees
 *   no `Origin` once this one has passed it.
 * - `MCP-Protocol-Version` on a session's request. The spec refuses (400) only an invalid or
 *   unsupported version; Effect also refuses a supported version that differs from the one the
 *   session negotiated. A supported version is dropped from such a request, so the session's own
 *   version governs it; an unsupported one still gets Effect's 400.
 */
import { Effect } from "effect"
import { Headers, HttpServerRequest, HttpServerResponse } from "effect/http"

export interface GuardOptions {
  /** The interface the server listens on. */
  readonly host: string
  readonly allowedOrigins: ReadonlyArray<string>
  /** The protocol versions the server offers. */
  readonly versions: ReadonlyArray<string>
}

const loopbackHosts = new Set(["localhost", "127.0.0.1", "[::1]", "::1"])

/** True for an interface only this machine reaches. */
export const isLoopback = (host: string): boolean =>
  loopbackHosts.has(host.toLowerCase()) || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host)

/** The host name of a `Host` header (`[::1]:8080` is `[::1]`, `localhost:8080` is `localhost`). */
const hostName = (header: string): string => {
  const bracket = /^(\[[^\]]*\])(?::\d+)?$/.exec(header)
  if (bracket !== null) return bracket[1]!
  const colon = header.lastIndexOf(":")
  return colon === -1 ? header : header.slice(0, colon)
}

/** An origin on this machine and the server's port (`http://localhost:<port>`, `http://127.0.0.1:<port>`, ...). */
const isOwnOrigin = (origin: string, host: string): boolean => {
  if (!URL.canParse(origin) || !URL.canParse(`http://${host}`)) return false
  const url = new URL(origin)
  return url.protocol === "http:" && isLoopback(url.hostname) && url.port === new URL(`http://${host}`).port
}

const forbidden = (reason: string) =>
  HttpServerResponse.jsonUnsafe(
    { jsonrpc: "2.0", id: null, error: { code: -32000, message: `Forbidden: ${reason}` } },
    { status: 403 }
  )

/** The middleware: see the module comment. */
export const guard = (options: GuardOptions) =>
<E, R>(
  app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R | HttpServerRequest.HttpServerRequest> =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    const loopback = isLoopback(options.host)
    const host = request.headers["host"]
    if (loopback && (host === undefined || !isLoopback(hostName(host)))) {
      return Effect.succeed(forbidden(`Host ${JSON.stringify(host ?? "")} is not this server`))
    }
    let headers = request.headers
    const origin = headers["origin"]
    if (origin !== undefined) {
      const own = loopback && host !== undefined && isOwnOrigin(origin, host)
      if (!own && !options.allowedOrigins.includes(origin)) {
        return Effect.succeed(
          forbidden(`Origin ${JSON.stringify(origin)} is not allowed (allow it with allowedOrigins / --allow-origin)`)
        )
      }
      headers = Headers.remove(headers, "origin")
    }
    const version = headers["mcp-protocol-version"]
    if (headers["mcp-session-id"] !== undefined && version !== undefined && options.versions.includes(version)) {
      headers = Headers.remove(headers, "mcp-protocol-version")
    }
    return headers === request.headers
      ? app
      : Effect.provideService(app, HttpServerRequest.HttpServerRequest, request.modify({ headers }))
  })
