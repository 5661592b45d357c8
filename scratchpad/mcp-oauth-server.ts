// A demo OAuth-protected MCP server on loopback, for the examples and tests of McpAuth (never for production): one
// node:http server is both the authorization server (metadata, dynamic registration, an /authorize that approves at
// once, a token endpoint with PKCE, refresh, client credentials and a JWT bearer grant) and the protected MCP resource (its metadata,
// and an MCP endpoint, the official SDK's server, that wants a bearer token; `save_note` also wants scope notes:write).
import { Server } from "@modelcontextprotocol/sdk/server/index.js"
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js"
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js"
import { createHash, randomUUID } from "node:crypto"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"

export interface DemoServer {
  /** The MCP endpoint, `http://127.0.0.1:<port>/mcp`. */
  readonly url: string
  /** What the server saw: authorization requests (with their scope), token grants, registrations. */
  readonly seen: { authorizations: Array<string>; grants: Array<string>; registrations: number }
  /** Makes every access token issued so far invalid (refresh tokens stay valid). */
  readonly expireTokens: () => void
  /** Every access token issued, for tests that look for them where they must not be. */
  readonly issued: () => ReadonlyArray<string>
  readonly close: () => Promise<void>
}

/**
 * Serves the demo. `expiresIn`: the lifetime of access tokens in seconds (default 3600); `clientSecret`: the secret of
 * the pre-registered client "service"; `rotateRefreshTokens`: a refresh token works once; `pkce: false`: the metadata
 * offers no PKCE method; `stepUpScopes`: the scopes the 403s of save_note name in turn (default notes:write).
 */
export const serveDemo = async (options: {
  readonly expiresIn?: number
  readonly clientSecret?: string
  readonly rotateRefreshTokens?: boolean
  readonly pkce?: boolean
  readonly stepUpScopes?: ReadonlyArray<string>
} = {}) => {
  const seen: DemoServer["seen"] = { authorizations: [], grants: [], registrations: 0 }
  const clients = new Map<string, string | undefined>() // client id -> secret
  const codes = new Map<string, { challenge: string; scope: string }>()
  const tokens = new Map<string, string>() // access token -> scope
  const refreshTokens = new Map<string, string>()
  const issued: Array<string> = []
  let base = ""
  let stepUps = 0
  const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) =>
    res.writeHead(status, { "content-type": "application/json", ...headers }).end(JSON.stringify(body))
  const body = async (req: IncomingMessage) => {
    let text = ""
    for await (const chunk of req) text += String(chunk)
    return text
  }
  const issue = (scope: string) => {
    const access = randomUUID()
    const refresh = randomUUID()
    tokens.set(access, scope)
    refreshTokens.set(refresh, scope)
    issued.push(access, refresh)
    return { access_token: access, token_type: "Bearer", expires_in: options.expiresIn ?? 3600, refresh_token: refresh, scope }
  }
  const mcp = () => {
    const server = new Server({ name: "notes", version: "1.0.0" }, { capabilities: { tools: {} } })
    server.setRequestHandler(ListToolsRequestSchema, () => ({
      tools: [
        { name: "list_notes", inputSchema: { type: "object" }, annotations: { readOnlyHint: true } },
        { name: "save_note", inputSchema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] } }
      ]
    }))
    server.setRequestHandler(CallToolRequestSchema, (request) => ({
      content: [{ type: "text", text: request.params.name === "save_note" ? "saved" : "buy milk" }]
    }))
    return server
  }
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? "/", base)
    const resourceMetadata = `${base}/.well-known/oauth-protected-resource/mcp`
    if (url.pathname === "/.well-known/oauth-protected-resource/mcp") {
      return json(res, 200, { resource: `${base}/mcp`, authorization_servers: [base], scopes_supported: ["notes:read"] })
    }
    if (url.pathname === "/.well-known/oauth-authorization-server") {
      return json(res, 200, {
        issuer: base,
        authorization_endpoint: `${base}/authorize`,
        token_endpoint: `${base}/token`,
        registration_endpoint: `${base}/register`,
        response_types_supported: ["code"],
        grant_types_supported: ["authorization_code", "refresh_token", "client_credentials", "urn:ietf:params:oauth:grant-type:jwt-bearer"],
        ...(options.pkce === false ? {} : { code_challenge_methods_supported: ["S256"] }),
        token_endpoint_auth_methods_supported: ["none", "client_secret_basic"],
        scopes_supported: ["notes:read", "notes:write"]
      })
    }
    if (url.pathname === "/register" && req.method === "POST") {
      seen.registrations++
      const metadata = JSON.parse(await body(req)) as Record<string, unknown>
      const clientId = randomUUID()
      clients.set(clientId, undefined)
      return json(res, 201, { ...metadata, client_id: clientId, token_endpoint_auth_method: "none" })
    }
    if (url.pathname === "/authorize") { // approves at once: a real server shows the user a page first
      const scope = url.searchParams.get("scope") ?? ""
      seen.authorizations.push(scope)
      const code = randomUUID()
      codes.set(code, { challenge: url.searchParams.get("code_challenge") ?? "", scope })
      const back = new URL(url.searchParams.get("redirect_uri")!)
      back.searchParams.set("code", code)
      back.searchParams.set("state", url.searchParams.get("state") ?? "")
      return res.writeHead(302, { location: back.href }).end()
    }
    if (url.pathname === "/token" && req.method === "POST") {
      const form = new URLSearchParams(await body(req))
      const grant = form.get("grant_type") ?? ""
      seen.grants.push(grant)
      if (grant === "authorization_code") {
        const code = codes.get(form.get("code") ?? "")
        const verifier = form.get("code_verifier") ?? ""
        if (code === undefined || createHash("sha256").update(verifier).digest("base64url") !== code.challenge) {
          return json(res, 400, { error: "invalid_grant" })
        }
        codes.delete(form.get("code")!)
        return json(res, 200, issue(code.scope))
      }
      if (grant === "refresh_token") {
        const scope = refreshTokens.get(form.get("refresh_token") ?? "")
        if (options.rotateRefreshTokens === true) refreshTokens.delete(form.get("refresh_token") ?? "")
        return scope === undefined ? json(res, 400, { error: "invalid_grant" }) : json(res, 200, issue(scope))
      }
      if (grant === "client_credentials") {
        const [id, secret] = Buffer.from((req.headers.authorization ?? "").replace(/^Basic /, ""), "base64").toString().split(":")
        if (options.clientSecret === undefined || id !== "service" || decodeURIComponent(secret ?? "") !== options.clientSecret) {
          return json(res, 401, { error: "invalid_client" })
        }
        return json(res, 200, issue(form.get("scope") ?? "notes:read"))
      }
      if (grant === "urn:ietf:params:oauth:grant-type:jwt-bearer") { // a real server verifies a signed assertion
        return form.get("assertion") === `assertion for ${base}/mcp` ? json(res, 200, issue("notes:read")) : json(res, 400, { error: "invalid_grant" })
      }
      return json(res, 400, { error: "unsupported_grant_type" })
    }
    if (url.pathname === "/mcp") {
      if (req.method !== "POST") return res.writeHead(405).end()
      const message = JSON.parse(await body(req)) as { method?: string; params?: { name?: string } }
      const scope = tokens.get((req.headers.authorization ?? "").replace(/^Bearer /, ""))
      if (scope === undefined) {
        return json(res, 401, { error: "invalid_token" }, { "www-authenticate": `Bearer resource_metadata="${resourceMetadata}"` })
      }
      if (message.method === "tools/call" && message.params?.name === "save_note" && !scope.split(" ").includes("notes:write")) {
        const scopes = options.stepUpScopes ?? ["notes:write"]
        const asked = scopes[stepUps++ % scopes.length]
        return json(res, 403, { error: "insufficient_scope" }, {
          "www-authenticate": `Bearer error="insufficient_scope", scope="${asked}", resource_metadata="${resourceMetadata}"`
        })
      }
      const transport = new StreamableHTTPServerTransport({ enableJsonResponse: true }) // stateless: no session ids
      const server = mcp()
      await server.connect(transport)
      res.on("close", () => void server.close())
      return transport.handleRequest(req, res, message)
    }
    res.writeHead(404).end()
  }
  const http = createServer((req, res) => {
    handle(req, res).catch(() => res.headersSent || res.writeHead(500).end())
  })
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve))
  base = `http://127.0.0.1:${(http.address() as AddressInfo).port}`
  return {
    url: `${base}/mcp`,
    seen,
    expireTokens: () => tokens.clear(),
    issued: () => issued,
    close: () =>
      new Promise<void>((resolve) => {
        http.closeAllConnections()
        http.close(() => resolve())
      })
  } satisfies DemoServer
}
