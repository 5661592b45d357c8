/**
 * Authorization for MCP servers over Streamable HTTP: the client side of the MCP authorization
 * specification, given to `McpConnect.http({ url, auth })`.
 *
 * - When the server answers 401, the client discovers the protected-resource metadata (RFC 9728,
 *   from the `WWW-Authenticate` challenge or the well-known paths) and the authorization server's
 *   metadata (RFC 8414 / OpenID), registers itself (dynamic client registration, RFC 7591, unless a
 *   client id is given or the server takes a client metadata document URL), obtains a token, and
 *   sends the request again with it; all inside `McpConnect.http`, so the connection it returns is
 *   authorized.
 * - {@link authorizationCode}: the authorization code grant with PKCE (S256) and `state`; the one
 *   interactive step, sending the user to the authorization URL and reading the redirect, is the
 *   application's `authorize` callback ({@link loopback} is one for a local browser).
 *   {@link clientCredentials}: the client credentials grant (`client_secret_basic`,
 *   `client_secret_post` or `private_key_jwt`), no user involved. {@link jwtBearer}: the JWT bearer
 *   grant (RFC 7523) with an assertion the application obtains for the authorization server, such
 *   as an identity provider's ID-JAG (enterprise-managed authorization, SEP-990).
 * - Scopes: the challenge's `scope`, else the resource's `scopes_supported`, else the `scope`
 *   option. A 403 `insufficient_scope` authorizes again with the scopes asked for (step-up), at
 *   most `maxStepUps` times for one request and never twice for the same challenge.
 * - Tokens are refreshed with their refresh token when they expire or the server refuses them.
 * - Tokens, client registrations, PKCE verifiers and discovered metadata are kept in a
 *   `StoreRegistry` store (`"mcp-auth"` unless `store` says otherwise) under the keys
 *   `tokens <server>`, `client <server>`, `verifier <server>` and `discovery <server>` (`<server>`:
 *   the URL's origin and path), so a file-system or database registry keeps a user signed in across
 *   processes. They never appear in events, logs or errors: an {@link McpAuthError} names the step
 *   and the server, and any secret its detail would quote is replaced by `<redacted>`.
 *
 * The protocol work (discovery, registration, PKCE, token requests) is the official
 * `@modelcontextprotocol/sdk`'s `client/auth.js`, loaded with the connection. This module does not
 * protect servers (see the SDK's server auth for that).
 */
import type { Redacted, Scope } from "effect"
import { Data, Effect } from "effect"
import type { StoreRegistry } from "../runtime/StoreRegistry.ts"

/** Which step of authorization failed. */
export type McpAuthFailure =
  /** Neither protected-resource nor authorization-server metadata could be found or read. */
  | "NoMetadata"
  /** The protected resource's metadata names another resource than the server connected to. */
  | "ResourceMismatch"
  /** Dynamic client registration was refused, or the server offers none and no client id was given. */
  | "RegistrationRefused"
  /** The `authorize` callback failed, or the authorization server answered with an error. */
  | "AuthorizationFailed"
  /** The redirect's `state` is not the one sent: the response is not for this request. */
  | "StateMismatch"
  /** The token endpoint refused the grant (code, refresh token or client credentials), or the server refused the new token. */
  | "TokenRefused"
  /** The server still answered 403 `insufficient_scope` after the step-ups allowed. */
  | "StepUpLimit"
  /** The store holding tokens and registrations failed. */
  | "StoreFailed"

/** Authorizing with an MCP server failed. The detail never quotes a token, secret, code or verifier. */
export class McpAuthError extends Data.TaggedError("McpAuthError")<{
  /** The MCP server's URL (its origin and path). */
  readonly server: string
  readonly failure: McpAuthFailure
  readonly detail: string
}> {
  override get message(): string {
    return `cannot authorize with the MCP server ${this.server} (${this.failure}): ${this.detail}`
  }
}

/** What the authorization server's redirect carried: the code, and the `state` it echoed. */
export interface Authorization {
  readonly code: string
  /**
   * The redirect's `state`, as it came: it must equal the one sent with the authorization request,
   * else the flow fails with `StateMismatch` (a redirect without one included).
   */
  readonly state: string
}

/** Where tokens and registrations are kept, and how step-up is bounded. Every grant takes these. */
export interface CommonOptions {
  /** The `StoreRegistry` store name. Default `"mcp-auth"`. */
  readonly store?: string
  /** Scopes to ask for when neither the challenge nor the resource's metadata name any (space-separated). */
  readonly scope?: string
  /** Step-ups (re-authorizations on 403 `insufficient_scope`) allowed for one request. Default 2. */
  readonly maxStepUps?: number
}

/** Options of {@link authorizationCode}. */
export interface AuthorizationCodeOptions<R> extends CommonOptions {
  /** Where the authorization server sends the user back (registered with the client). */
  readonly redirectUrl: string | URL
  /**
   * The interactive step: send the user to `url` (open a browser, print it) and return what the
   * redirect to `redirectUrl` carried. Its failure is an `AuthorizationFailed`.
   */
  readonly authorize: (url: URL) => Effect.Effect<Authorization, unknown, R>
  /** The client's name in dynamic registration. Default `"tinyagents"`. */
  readonly clientName?: string
  /** More client metadata for dynamic registration (RFC 7591 fields such as `client_uri`, `logo_uri`). */
  readonly clientMetadata?: Readonly<Record<string, unknown>>
  /** An HTTPS URL of a client metadata document, used as the client id where the server accepts one (SEP-991). */
  readonly clientMetadataUrl?: string
  /** A pre-registered client id: no dynamic registration. */
  readonly clientId?: string
  /** The pre-registered client's secret (confidential clients). */
  readonly clientSecret?: Redacted.Redacted<string>
}

/** How a confidential client proves itself at the token endpoint. */
export type ClientCredentialsMethod = "client_secret_basic" | "client_secret_post" | "private_key_jwt"

/** Options of {@link clientCredentials}. */
export interface ClientCredentialsOptions extends CommonOptions {
  readonly clientId: string
  /** The client secret (`client_secret_basic`, the default, or `client_secret_post`). */
  readonly clientSecret?: Redacted.Redacted<string>
  /** A private key (PKCS#8 PEM) signing a JWT assertion (`private_key_jwt`, RFC 7523), and its algorithm (default `RS256`). */
  readonly privateKey?: { readonly pem: Redacted.Redacted<string>; readonly algorithm?: string }
  /** Default: `private_key_jwt` with a `privateKey`, else `client_secret_basic`. */
  readonly method?: ClientCredentialsMethod
}

/** Options of {@link jwtBearer}. */
export interface JwtBearerOptions<R> extends CommonOptions {
  readonly clientId: string
  /** The client's secret at the authorization server (`client_secret_basic`); none for a public client. */
  readonly clientSecret?: Redacted.Redacted<string>
  /**
   * The assertion for the authorization server `issuer`, about the protected `resource` (from its
   * metadata): e.g. an ID-JAG from your identity provider's token exchange. Its failure is an
   * `AuthorizationFailed`.
   */
  readonly assertion: (target: {
    readonly issuer: string
    readonly resource: string | undefined
  }) => Effect.Effect<Redacted.Redacted<string>, unknown, R>
}

/**
 * How `McpConnect.http` authorizes (from {@link authorizationCode}, {@link clientCredentials} or
 * {@link jwtBearer}). `R` is what it needs: a `StoreRegistry`, and what its callback needs.
 */
export type Auth<R = never> = AuthorizationCode<R> | ClientCredentials | JwtBearer<R>

/** The authorization code grant, as {@link authorizationCode} describes it. */
export interface AuthorizationCode<R> {
  readonly _tag: "AuthorizationCode"
  readonly options: AuthorizationCodeOptions<R>
  /** Phantom: the grant's requirements. */
  readonly requirements?: (_: StoreRegistry | R) => void
}

/** The client credentials grant, as {@link clientCredentials} describes it. */
export interface ClientCredentials {
  readonly _tag: "ClientCredentials"
  readonly options: ClientCredentialsOptions
  /** Phantom: the grant's requirements. */
  readonly requirements?: (_: StoreRegistry) => void
}

/** The JWT bearer grant, as {@link jwtBearer} describes it. */
export interface JwtBearer<R> {
  readonly _tag: "JwtBearer"
  readonly options: JwtBearerOptions<R>
  /** Phantom: the grant's requirements. */
  readonly requirements?: (_: StoreRegistry | R) => void
}

/**
 * The authorization code grant with PKCE, for a user: when the server needs a token, the client
 * registers (or uses `clientId`), calls `authorize` with the authorization URL, and exchanges the
 * code it returns.
 */
export const authorizationCode = <R = never>(options: AuthorizationCodeOptions<R>): Auth<StoreRegistry | R> => ({
  _tag: "AuthorizationCode",
  options
})

/** The client credentials grant, for a service acting as itself (`clientId` with a secret or a private key). */
export const clientCredentials = (options: ClientCredentialsOptions): Auth<StoreRegistry> => ({
  _tag: "ClientCredentials",
  options
})

/**
 * The JWT bearer grant (RFC 7523): no user and no redirect; the token request carries the assertion
 * `assertion` returns for the discovered authorization server and resource.
 */
export const jwtBearer = <R = never>(options: JwtBearerOptions<R>): Auth<StoreRegistry | R> => ({
  _tag: "JwtBearer",
  options
})

/** A loopback redirect listener, as {@link loopback} makes it. */
export interface Loopback {
  /** `http://127.0.0.1:<port>/callback`. */
  readonly redirectUrl: string
  /** Calls `show` with the authorization URL, then waits for the browser's redirect (one at a time). */
  readonly authorize: (url: URL) => Effect.Effect<Authorization, McpAuthError>
}

/**
 * A redirect listener on `127.0.0.1` (`port`, default a free one) for {@link authorizationCode}'s
 * `authorize`: `show` presents the authorization URL (print it, open a browser), and the code and
 * state come from the request to `/callback`. The listener closes with the scope.
 */
export const loopback = (options: {
  readonly port?: number
  readonly show: (url: URL) => Effect.Effect<void>
}): Effect.Effect<Loopback, McpAuthError, Scope.Scope> =>
  Effect.gen(function*() {
    const { listen } = yield* Effect.promise(() => import("./internal/authLoopback.ts"))
    return yield* listen(options)
  })
