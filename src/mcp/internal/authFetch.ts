/**
 * The machinery of `McpAuth`: an `OAuthClientProvider` of the official SDK over a `StoreRegistry`
 * store, and a `fetch` for the SDK's Streamable HTTP transport that adds the bearer token and, on a
 * 401 or a 403 `insufficient_scope`, runs the SDK's `auth()` (discovery, registration, PKCE, token
 * requests, refresh) with the application's `authorize` callback in the middle, then sends the
 * request again. What is secret stays in the store and this closure: errors are redacted.
 */
import type { OAuthClientProvider, OAuthDiscoveryState } from "@modelcontextprotocol/sdk/client/auth.js"
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens
} from "@modelcontextprotocol/sdk/shared/auth.js"
import { Effect, Redacted } from "effect"
import type { KeyValueStore } from "effect/persistence"
import * as StoreRegistry from "../../runtime/StoreRegistry.ts"
import { type Auth, type Authorization, McpAuthError, type McpAuthFailure } from "../McpAuth.ts"

type Fetch = (input: string | URL, init?: RequestInit) => Promise<Response>

/** Tokens as stored: the SDK's, and when they expire (epoch milliseconds). */
interface StoredTokens {
  readonly tokens: OAuthTokens
  readonly expiresAt?: number | undefined
}

/** A fetch that authorizes, and the first authorization failure it met (for `McpConnect.http`'s error). */
export interface AuthorizedFetch {
  readonly fetch: Fetch
  readonly failure: () => McpAuthError | undefined
}

const loadAuth = (server: string) =>
  Effect.tryPromise({
    try: () =>
      Promise.all([
        import("@modelcontextprotocol/sdk/client/auth.js"),
        import("@modelcontextprotocol/sdk/client/auth-extensions.js"),
        import("@modelcontextprotocol/sdk/server/auth/errors.js")
      ]),
    catch: (error) =>
      new McpAuthError({
        server,
        failure: "AuthorizationFailed",
        detail: `cannot load the MCP SDK's client auth (install @modelcontextprotocol/sdk): ${String(error)}`
      })
  })

const jwtBearerGrant = "urn:ietf:params:oauth:grant-type:jwt-bearer"

const randomState = (): string => {
  const bytes = new Uint8Array(16)
  crypto.getRandomValues(bytes)
  return Buffer.from(bytes).toString("base64url")
}

/**
 * One authorization at a time per store and server, across every connection of this process: two
 * connections sharing a store would otherwise race to refresh (a rotated refresh token works once).
 */
const queues = new Map<string, Promise<unknown>>()
const exclusivelyFor = <A>(key: string, task: () => Promise<A>): Promise<A> => {
  const next = (queues.get(key) ?? Promise.resolve()).then(task, task)
  const settled = next.catch(() => undefined)
  queues.set(key, settled)
  void settled.then(() => {
    if (queues.get(key) === settled) queues.delete(key)
  })
  return next
}

/** Replaces the value of every `code=` parameter (an authorization code in a quoted redirect URL). */
const redactCodes = (text: string): string => text.replace(/\bcode=[^&\s"'<>]*/g, "code=<redacted>")

/** The server URL as errors name it: origin and path, never a query (it could carry a key). */
const serverName = (url: URL): string => `${url.origin}${url.pathname}`

/**
 * A fetch that authorizes requests to `serverUrl` with `auth`, keeping its state in `auth`'s store.
 * `base` is the fetch it sends with (the global one by default).
 */
export const authorizedFetch = <R>(
  auth: Auth<R>,
  serverUrl: URL,
  base: Fetch = (input, init) => fetch(input, init)
): Effect.Effect<AuthorizedFetch, McpAuthError, R> =>
  Effect.gen(function*() {
    const server = serverName(serverUrl)
    const [sdk, extensions, errors] = yield* loadAuth(server)
    const options = auth.options
    const storeName = options.store ?? "mcp-auth"
    const context = yield* Effect.context<R>()
    // Secret values seen in this closure, replaced in every error detail.
    const secrets = new Set<string>()
    const remember = (...values: ReadonlyArray<string | undefined>) => {
      for (const value of values) if (value !== undefined && value.length >= 4) secrets.add(value)
    }
    const redact = (text: string): string => {
      let out = text
      for (const secret of secrets) out = out.split(secret).join("<redacted>")
      return redactCodes(out)
    }
    const storeFailed = (error: unknown) =>
      new McpAuthError({ server, failure: "StoreFailed", detail: redact(`store "${storeName}": ${String(error)}`) })

    const kv: KeyValueStore.KeyValueStore = yield* (StoreRegistry.store(storeName) as Effect.Effect<
      KeyValueStore.KeyValueStore,
      unknown,
      R
    >).pipe(Effect.mapError(storeFailed))
    const run = <A>(effect: Effect.Effect<A, unknown, R>, signal?: AbortSignal | null): Promise<A> =>
      Effect.runPromiseWith(context)(effect, signal === null || signal === undefined ? undefined : { signal })

    // The store: one key per kind of value, under the server's URL.
    const keyOf = (kind: "tokens" | "client" | "discovery") => `${kind} ${server}`
    const read = <A>(kind: "tokens" | "client" | "discovery"): Promise<A | undefined> =>
      run(kv.get(keyOf(kind)).pipe(
        Effect.mapError(storeFailed),
        Effect.map((text) => (text === undefined ? undefined : JSON.parse(text) as A))
      ))
    const write = (kind: "tokens" | "client" | "discovery", value: unknown): Promise<void> =>
      run((value === undefined ? kv.remove(keyOf(kind)) : kv.set(keyOf(kind), JSON.stringify(value))).pipe(
        Effect.mapError(storeFailed)
      ))

    const clientSecret = options.clientSecret === undefined ? undefined : Redacted.value(options.clientSecret)
    remember(clientSecret)
    const configuredClient: OAuthClientInformationMixed | undefined = auth._tag === "ClientCredentials"
      ? {
        client_id: options.clientId!,
        ...(clientSecret === undefined ? {} : { client_secret: clientSecret }),
        token_endpoint_auth_method: (options as typeof auth.options).method ??
          ((options as typeof auth.options).privateKey === undefined ? "client_secret_basic" : "private_key_jwt")
      }
      : options.clientId === undefined
      ? undefined
      : {
        client_id: options.clientId,
        ...(clientSecret === undefined
          ? auth._tag === "JwtBearer" ? { token_endpoint_auth_method: "none" } : {}
          : { client_secret: clientSecret })
      }

    const redirectUrl = auth._tag === "AuthorizationCode" ? String(auth.options.redirectUrl) : undefined
    const clientMetadata: OAuthClientMetadata = auth._tag === "AuthorizationCode"
      ? {
        ...(auth.options.clientMetadata as Partial<OAuthClientMetadata> | undefined),
        client_name: auth.options.clientName ?? "tinyagents",
        redirect_uris: [redirectUrl!],
        grant_types: ["authorization_code", "refresh_token"],
        response_types: ["code"],
        token_endpoint_auth_method: clientSecret === undefined ? "none" : "client_secret_basic",
        ...(options.scope === undefined ? {} : { scope: options.scope })
      }
      : {
        client_name: options.clientId!,
        redirect_uris: [],
        grant_types: [auth._tag === "JwtBearer" ? jwtBearerGrant : "client_credentials"],
        ...(options.scope === undefined ? {} : { scope: options.scope })
      }

    // What the current authorization-code flow is waiting for.
    let pending: { state: string; code?: string | undefined } | undefined
    // While stepping up, refreshing would bring back the old scopes: the provider shows no tokens.
    let steppingUp = false
    // The step `auth()` is at, to name a failure.
    let step: "discovery" | "registration" | "authorization" | "token" = "discovery"
    let signal: AbortSignal | undefined
    // What discovery found (neither metadata document: the 2025-03-26 fallback endpoints were used).
    let discovered: OAuthDiscoveryState | undefined
    // The PKCE verifier of the flow under way: never stored, never shared with another sign-in.
    let verifier: string | undefined
    // The scope the current `authorize` asks for (the challenge's), for the token requests of the
    // grants without a redirect: the SDK would send only the static `scope` option.
    let askedScope: string | undefined
    const tokenScope = (fallback: string | undefined): string | undefined =>
      askedScope ?? discovered?.resourceMetadata?.scopes_supported?.join(" ") ?? fallback

    const provider: OAuthClientProvider = {
      get redirectUrl() {
        return redirectUrl
      },
      get clientMetadata() {
        return clientMetadata
      },
      ...(auth._tag === "AuthorizationCode" && auth.options.clientMetadataUrl !== undefined
        ? { clientMetadataUrl: auth.options.clientMetadataUrl }
        : {}),
      state: () => {
        const state = randomState()
        pending = { state }
        return state
      },
      clientInformation: async () => {
        const stored = await read<OAuthClientInformationMixed & { readonly issuer?: string }>("client")
        remember(stored?.client_secret)
        // The configured client wins; of a stored one only the authorization server it is bound to is kept.
        if (configuredClient !== undefined) {
          return stored?.client_id === configuredClient.client_id && stored.issuer !== undefined
            ? { ...configuredClient, issuer: stored.issuer }
            : configuredClient
        }
        // A registration for another redirect URL (a loopback listener on another port) is stale.
        if (
          redirectUrl !== undefined && stored !== undefined && "redirect_uris" in stored &&
          Array.isArray(stored.redirect_uris) && !stored.redirect_uris.map(String).includes(redirectUrl)
        ) return undefined
        return stored
      },
      saveClientInformation: async (client) => {
        remember(client.client_secret)
        // A configured client is in the options already: its secret is never written to the store.
        const { client_secret: _secret, ...withoutSecret } = client
        await write("client", client.client_id === configuredClient?.client_id ? withoutSecret : client)
      },
      tokens: async () => {
        if (steppingUp) return undefined
        const stored = await read<StoredTokens>("tokens")
        remember(stored?.tokens.access_token, stored?.tokens.refresh_token)
        return stored?.tokens
      },
      saveTokens: async (tokens) => {
        remember(tokens.access_token, tokens.refresh_token)
        const expiresAt = tokens.expires_in === undefined ? undefined : Date.now() + tokens.expires_in * 1000
        await write("tokens", { tokens, expiresAt } satisfies StoredTokens)
      },
      saveCodeVerifier: (saved) => {
        remember(saved)
        verifier = saved
      },
      codeVerifier: () => {
        if (verifier === undefined) throw new Error("no PKCE code verifier was saved for this authorization")
        return verifier
      },
      saveDiscoveryState: (state) => {
        discovered = state
        return write("discovery", state)
      },
      discoveryState: async () => {
        const state = await read<OAuthDiscoveryState>("discovery")
        discovered = state ?? discovered
        return state
      },
      invalidateCredentials: async (scope) => {
        if (scope === "all" || scope === "tokens") await write("tokens", undefined)
        if (scope === "all" || scope === "client") await write("client", undefined)
        if (scope === "all" || scope === "verifier") verifier = undefined
        if (scope === "all" || scope === "discovery") await write("discovery", undefined)
      },
      redirectToAuthorization: async (url) => {
        if (auth._tag !== "AuthorizationCode") throw new Error("the client credentials grant has no redirect")
        step = "authorization"
        // PKCE with S256 or nothing: an authorization server whose metadata does not offer it is refused.
        const methods = discovered?.authorizationServerMetadata?.code_challenge_methods_supported
        if (discovered?.authorizationServerMetadata !== undefined && !(methods ?? []).includes("S256")) {
          throw new McpAuthError({
            server,
            failure: "AuthorizationFailed",
            detail: `the authorization server does not support PKCE with S256 (code_challenge_methods_supported: ${
              JSON.stringify(methods ?? null)
            })`
          })
        }
        const expected = pending?.state
        const authorization = await run(
          auth.options.authorize(url).pipe(
            Effect.mapError((error) =>
              error instanceof McpAuthError // e.g. from McpAuth.loopback: named for this server
                ? new McpAuthError({ server, failure: error.failure, detail: error.detail })
                : new McpAuthError({
                  server,
                  failure: "AuthorizationFailed",
                  detail: redact(
                    `the authorize callback failed: ${error instanceof Error ? error.message : String(error)}`
                  )
                })
            )
          ) as Effect.Effect<Authorization, McpAuthError, R>,
          signal
        )
        remember(authorization.code)
        if (expected === undefined || authorization.state !== expected) {
          throw new McpAuthError({
            server,
            failure: "StateMismatch",
            detail: "the redirect's state is not the one sent with the authorization request"
          })
        }
        pending = { state: expected, code: authorization.code }
      },
      ...(auth._tag === "ClientCredentials"
        ? {
          prepareTokenRequest: (fallback?: string) => {
            const params = new URLSearchParams({ grant_type: "client_credentials" })
            const scope = tokenScope(fallback)
            if (scope !== undefined) params.set("scope", scope)
            return params
          },
          ...(auth.options.privateKey === undefined ? {} : {
            addClientAuthentication: extensions.createPrivateKeyJwtAuth({
              issuer: auth.options.clientId,
              subject: auth.options.clientId,
              privateKey: Redacted.value(auth.options.privateKey.pem),
              alg: auth.options.privateKey.algorithm ?? "RS256"
            })
          })
        }
        : auth._tag === "JwtBearer"
        ? {
          prepareTokenRequest: async (fallback?: string) => {
            const discovered = await read<OAuthDiscoveryState>("discovery")
            const issuer = discovered?.authorizationServerMetadata?.issuer ?? discovered?.authorizationServerUrl
            if (issuer === undefined) throw new Error("no authorization server was discovered")
            step = "authorization"
            const assertion = await run(
              auth.options.assertion({ issuer, resource: discovered?.resourceMetadata?.resource }).pipe(
                Effect.mapError((error) =>
                  new McpAuthError({
                    server,
                    failure: "AuthorizationFailed",
                    detail: redact(
                      `the assertion callback failed: ${error instanceof Error ? error.message : String(error)}`
                    )
                  })
                )
              ) as Effect.Effect<Redacted.Redacted<string>, McpAuthError, R>,
              signal
            )
            remember(Redacted.value(assertion))
            const params = new URLSearchParams({ grant_type: jwtBearerGrant, assertion: Redacted.value(assertion) })
            const scope = tokenScope(fallback)
            if (scope !== undefined) params.set("scope", scope)
            return params
          }
        }
        : {})
    }

    // The fetch `auth()` uses: it says which step a failure belongs to.
    const stepFetch: Fetch = (input, init) => {
      const method = (init?.method ?? "GET").toUpperCase()
      if (method === "GET") step = "discovery"
      else if (init?.body instanceof URLSearchParams) step = "token"
      else step = "registration"
      return base(input, init)
    }

    const failureOf = (error: unknown): McpAuthError => {
      if (error instanceof McpAuthError) return error
      const text = error instanceof Error ? error.message : String(error)
      if (
        discovered !== undefined && discovered.resourceMetadata === undefined &&
        discovered.authorizationServerMetadata === undefined
      ) {
        return new McpAuthError({
          server,
          failure: "NoMetadata",
          detail: redact(
            `the server publishes no protected-resource or authorization-server metadata, and the default endpoints (${discovered.authorizationServerUrl}register, authorize, token) failed: ${text}`
          )
        })
      }
      const failure: McpAuthFailure = /does not match expected/.test(text)
        ? "ResourceMismatch"
        : /dynamic client registration/i.test(text) || step === "registration"
        ? "RegistrationRefused"
        : step === "token"
        ? "TokenRefused"
        : step === "authorization"
        ? "AuthorizationFailed"
        : error instanceof errors.OAuthError
        ? "AuthorizationFailed"
        : "NoMetadata"
      return new McpAuthError({ server, failure, detail: redact(text) })
    }

    let firstFailure: McpAuthError | undefined
    const fail = (error: unknown): never => {
      const failure = failureOf(error)
      firstFailure ??= failure
      throw failure
    }

    /** Runs `auth()` to an access token: refresh, or discovery, registration, `authorize` and the code exchange. */
    const authorize = async (challenge: { resourceMetadataUrl?: URL | undefined; scope?: string | undefined }) => {
      const params = {
        serverUrl,
        ...(challenge.resourceMetadataUrl === undefined ? {} : { resourceMetadataUrl: challenge.resourceMetadataUrl }),
        ...(challenge.scope === undefined ? {} : { scope: challenge.scope }),
        fetchFn: stepFetch
      }
      try {
        step = "discovery"
        pending = undefined
        askedScope = challenge.scope
        const result = await sdk.auth(provider, params)
        if (result === "AUTHORIZED") return
        // Set by `redirectToAuthorization` during `auth()` (a call TypeScript cannot see into).
        const code = (pending as { readonly code?: string | undefined } | undefined)?.code
        if (code === undefined) {
          throw new McpAuthError({ server, failure: "AuthorizationFailed", detail: "the authorization returned no code" })
        }
        steppingUp = false
        const exchanged = await sdk.auth(provider, { ...params, authorizationCode: code })
        if (exchanged !== "AUTHORIZED") {
          throw new McpAuthError({ server, failure: "TokenRefused", detail: "the code exchange did not give a token" })
        }
      } catch (error) {
        fail(error)
      } finally {
        steppingUp = false
        pending = undefined
        verifier = undefined
        askedScope = undefined
      }
    }

    // One authorization at a time for this store and server; a request that waited uses the token the other one obtained.
    const exclusively = <A>(task: () => Promise<A>): Promise<A> => exclusivelyFor(`${storeName} ${server}`, task)

    const currentToken = async (): Promise<StoredTokens | undefined> => {
      const stored = await read<StoredTokens>("tokens")
      remember(stored?.tokens.access_token, stored?.tokens.refresh_token)
      return stored
    }

    const maxStepUps = options.maxStepUps ?? 2
    let grantedScope: string | undefined = options.scope

    const authorizedFetch: Fetch = async (input, init) => {
      signal = init?.signal ?? undefined
      const send = async (): Promise<{ response: Response; token: string | undefined }> => {
        const stored = await currentToken().catch(fail)
        const headers = new Headers(init?.headers)
        if (stored !== undefined) headers.set("authorization", `Bearer ${stored.tokens.access_token}`)
        return { response: await base(input, { ...init, headers }), token: stored?.tokens.access_token }
      }
      // An expired token with a refresh token is refreshed before it is sent.
      const before = await currentToken().catch(fail)
      if (before?.expiresAt !== undefined && before.expiresAt <= Date.now() && before.tokens.refresh_token !== undefined) {
        await exclusively(async () => {
          const now = await currentToken().catch(fail)
          if (now?.tokens.access_token === before.tokens.access_token) await authorize({ scope: grantedScope })
        })
      }
      let { response, token } = await send()
      if (response.status === 401) {
        const challenge = sdk.extractWWWAuthenticateParams(response)
        await response.body?.cancel()
        await exclusively(async () => {
          const now = await currentToken().catch(fail)
          if (now !== undefined && now.tokens.access_token !== token) return // another request authorized meanwhile
          await authorize(challenge)
          grantedScope = challenge.scope ?? grantedScope
        })
        ;({ response, token } = await send())
        if (response.status === 401) {
          await response.body?.cancel()
          fail(new McpAuthError({ server, failure: "TokenRefused", detail: "the server refused the new access token" }))
        }
      }
      let stepUps = 0
      const challengesSeen = new Set<string | null>()
      while (response.status === 403) {
        const header = response.headers.get("www-authenticate")
        const challenge = sdk.extractWWWAuthenticateParams(response)
        if (challenge.error !== "insufficient_scope") break
        await response.body?.cancel()
        if (stepUps >= maxStepUps || challengesSeen.has(header)) {
          fail(
            new McpAuthError({
              server,
              failure: "StepUpLimit",
              detail: `the server still asks for scope "${challenge.scope ?? ""}" after ${stepUps} step-up(s)`
            })
          )
        }
        stepUps++
        challengesSeen.add(header)
        // The scopes held (as the token response gave them, else as asked for) and those the challenge asks for.
        const held = (await currentToken().catch(fail))?.tokens.scope ?? grantedScope
        const scope = [...new Set([...(held ?? "").split(" "), ...(challenge.scope ?? "").split(" ")])]
          .filter((s) => s !== "")
          .join(" ")
        await exclusively(async () => {
          const now = await currentToken().catch(fail)
          if (now !== undefined && now.tokens.access_token !== token) return
          steppingUp = true
          await authorize({ resourceMetadataUrl: challenge.resourceMetadataUrl, scope: scope === "" ? undefined : scope })
          grantedScope = scope === "" ? grantedScope : scope
        })
        ;({ response, token } = await send())
      }
      return response
    }

    return { fetch: authorizedFetch, failure: () => firstFailure } satisfies AuthorizedFetch
  })
