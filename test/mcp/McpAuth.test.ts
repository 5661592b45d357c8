/**
 * `McpAuth` with `McpConnect.http` against the demo OAuth-protected server
 * (scratchpad/mcp-oauth-server.ts, in process on loopback): the authorization code grant with
 * PKCE through the `authorize` callback, tokens in the `StoreRegistry` store and nowhere in events,
 * logs or errors, reuse across connections, refresh, step-up, `McpAuth.loopback`, client
 * credentials, the JWT bearer grant, the CLI, and each failure as an `McpAuthError`.
 */
import { assert, describe, it } from "@effect/vitest"
import { type Cause, Effect, Exit, Fiber, Layer, Logger, Redacted, Schedule, Scope } from "effect"
import { TestConsole } from "effect/testing"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { type DemoServer, serveDemo } from "../../scratchpad/mcp-oauth-server.ts"
import * as Cli from "../../src/cli/Cli.ts"
import { McpAuth, McpConnect } from "../../src/mcp/index.ts"
import { EventLog } from "../../src/runtime/EventSink.ts"
import * as Executor from "../../src/runtime/Executor.ts"
import * as StoreRegistry from "../../src/runtime/StoreRegistry.ts"
import * as ToolServices from "../../src/runtime/ToolServices.ts"

const run = <A, E>(effect: Effect.Effect<A, E, Scope.Scope | ToolServices.Hidden | EventLog>) =>
  Effect.runPromise(effect.pipe(Effect.scoped, Effect.provide(ToolServices.layerTest())))

const withDemo = async <A>(f: (demo: DemoServer) => Promise<A>, options?: Parameters<typeof serveDemo>[0]) => {
  const demo = await serveDemo(options)
  try {
    return await f(demo)
  } finally {
    await demo.close()
  }
}

/** The user's part, as a browser would do it: follow the authorization server's redirect and read the code. */
const followRedirect = (url: URL) =>
  Effect.promise(async () => {
    const back = new URL((await fetch(url, { redirect: "manual" })).headers.get("location")!)
    return { code: back.searchParams.get("code")!, state: back.searchParams.get("state")! }
  })

const signIn = McpAuth.authorizationCode({ redirectUrl: "http://127.0.0.1:1/callback", authorize: followRedirect })

const callTool = (connection: McpConnect.Connection, name: string, args: object) =>
  Effect.gen(function*() {
    const executor = yield* Executor.make(yield* connection.registry)
    return yield* executor.run({ id: `c-${name}`, name, arguments: args })
  })

/** The `McpAuthError` a fatal `ToolDefect` died with. */
const authFailureOf = (error: unknown) => {
  const reason = (error as { cause?: Cause.Cause<unknown> }).cause?.reasons[0]
  return reason?._tag === "Die" ? (reason.defect as McpAuth.McpAuthError).failure : undefined
}

/** Every value the store holds for the server, as one text. */
const storedText = (url: string) =>
  Effect.gen(function*() {
    const store = yield* StoreRegistry.store("mcp-auth")
    const values = yield* Effect.forEach(["tokens", "client", "verifier", "discovery"], (kind) => store.get(`${kind} ${url}`))
    return values.join("\n")
  })

describe("McpAuth", () => {
  it("authorization code with PKCE: tokens land in the store, never in events or logs", () =>
    withDemo(async (demo) => {
      const logs: Array<string> = []
      const logger = Logger.make<unknown, void>(({ message }) => void logs.push(JSON.stringify(message)))
      const { events, stored, text } = await run(Effect.gen(function*() {
        const notes = yield* McpConnect.http({ url: demo.url, name: "notes", auth: signIn })
        const result = yield* callTool(notes, "list_notes", {})
        return { events: yield* (yield* EventLog).all, stored: yield* storedText(demo.url), text: JSON.stringify(result.content) }
      }).pipe(Effect.provide(Logger.layer([logger]))))
      assert.strictEqual(text, JSON.stringify([{ type: "text", text: "buy milk" }]))
      assert.deepStrictEqual(demo.seen.authorizations, ["notes:read"]) // the resource's scopes_supported
      assert.deepStrictEqual(demo.seen.grants, ["authorization_code"])
      assert.strictEqual(demo.seen.registrations, 1)
      const [access, refresh] = demo.issued()
      assert.include(stored, access!)
      assert.include(stored, refresh!)
      assert.isAbove(events.length, 0)
      for (const token of demo.issued()) {
        assert.notInclude(JSON.stringify(events), token)
        assert.notInclude(logs.join("\n"), token)
      }
    }))

  it("a second connection with the same store uses the stored token: no new authorization", () =>
    withDemo(async (demo) => {
      await run(Effect.gen(function*() {
        yield* Effect.scoped(McpConnect.http({ url: demo.url, auth: signIn }))
        yield* Effect.scoped(McpConnect.http({ url: demo.url, auth: signIn }))
      }))
      assert.deepStrictEqual(demo.seen.authorizations, ["notes:read"])
      assert.deepStrictEqual(demo.seen.grants, ["authorization_code"])
    }))

  it("a token the server refuses is refreshed with the refresh token, and the call goes through", () =>
    withDemo(async (demo) => {
      const text = await run(Effect.gen(function*() {
        const notes = yield* McpConnect.http({ url: demo.url, auth: signIn })
        demo.expireTokens()
        return JSON.stringify((yield* callTool(notes, "list_notes", {})).content)
      }))
      assert.include(text, "buy milk")
      assert.deepStrictEqual(demo.seen.grants, ["authorization_code", "refresh_token"])
      assert.deepStrictEqual(demo.seen.authorizations, ["notes:read"])
    }))

  it("an expired token is refreshed before it is sent", () =>
    withDemo(async (demo) => {
      await run(Effect.gen(function*() {
        const notes = yield* McpConnect.http({ url: demo.url, auth: signIn })
        yield* callTool(notes, "list_notes", {})
      }))
      // expires_in 0: every stored token is already expired when the next request goes out.
      assert.deepStrictEqual(demo.seen.grants.slice(0, 2), ["authorization_code", "refresh_token"])
      assert.deepStrictEqual(demo.seen.authorizations, ["notes:read"])
    }, { expiresIn: 0 }))

  it("403 insufficient_scope: authorizes again with the scopes held and those asked for (step-up), then the call succeeds", () =>
    withDemo(async (demo) => {
      const result = await run(Effect.gen(function*() {
        const notes = yield* McpConnect.http({ url: demo.url, auth: signIn })
        return yield* callTool(notes, "save_note", { text: "eggs" })
      }))
      assert.isFalse(result.isError)
      assert.deepStrictEqual(demo.seen.authorizations, ["notes:read", "notes:read notes:write"])
    }))

  it("past maxStepUps the call fails with StepUpLimit: a fatal ToolDefect (never retried) carrying it", () =>
    withDemo(async (demo) => {
      const error = await run(Effect.gen(function*() {
        const notes = yield* McpConnect.http({
          url: demo.url,
          auth: McpAuth.authorizationCode({ redirectUrl: "http://127.0.0.1:1/callback", authorize: followRedirect, maxStepUps: 0 })
        })
        return yield* Effect.flip(callTool(notes, "save_note", { text: "eggs" }))
      }))
      assert.strictEqual(error._tag, "ToolDefect")
      assert.strictEqual(error.disposition, "fatal")
      assert.strictEqual(authFailureOf(error), "StepUpLimit")
      assert.deepStrictEqual(demo.seen.authorizations, ["notes:read"])
    }))

  it("McpAuth.loopback: the browser's redirect to 127.0.0.1 completes the flow", () =>
    withDemo(async (demo) => {
      const shown: Array<string> = []
      await run(Effect.gen(function*() {
        const local = yield* McpAuth.loopback({
          show: (url) =>
            Effect.sync(() => {
              shown.push(url.origin)
              void fetch(url) // the "browser": follows the redirect to the loopback listener
            })
        })
        assert.match(local.redirectUrl, /^http:\/\/127\.0\.0\.1:\d+\/callback$/)
        yield* McpConnect.http({ url: demo.url, auth: McpAuth.authorizationCode(local) })
      }))
      assert.deepStrictEqual(shown, [new URL(demo.url).origin])
      assert.deepStrictEqual(demo.seen.grants, ["authorization_code"])
    }))

  it("client credentials: a service authorizes with its secret, which no error quotes", () =>
    withDemo(async (demo) => {
      const secret = "s3cret-of-the-service"
      const ok = await run(Effect.gen(function*() {
        const notes = yield* McpConnect.http({
          url: demo.url,
          auth: McpAuth.clientCredentials({ clientId: "service", clientSecret: Redacted.make(secret), scope: "notes:read" })
        })
        return JSON.stringify((yield* callTool(notes, "list_notes", {})).content)
      }))
      assert.include(ok, "buy milk")
      assert.deepStrictEqual(demo.seen.grants, ["client_credentials"])
      const refused = await run(Effect.exit(McpConnect.http({
        url: demo.url,
        auth: McpAuth.clientCredentials({ clientId: "service", clientSecret: Redacted.make("wrong-secret-value") })
      })))
      assert.isTrue(Exit.isFailure(refused))
      const error = Exit.isFailure(refused) ? refused.cause.reasons[0] : undefined
      const failure = error?._tag === "Fail" ? error.error : undefined
      assert.instanceOf(failure, McpAuth.McpAuthError)
      assert.strictEqual((failure as McpAuth.McpAuthError).failure, "TokenRefused")
      assert.notInclude((failure as McpAuth.McpAuthError).message, "wrong-secret-value")
    }, { clientSecret: "s3cret-of-the-service" }))

  it("JWT bearer: the assertion callback gets the discovered issuer and resource; its assertion buys the token", () =>
    withDemo(async (demo) => {
      const targets: Array<unknown> = []
      const text = await run(Effect.gen(function*() {
        const notes = yield* McpConnect.http({
          url: demo.url,
          auth: McpAuth.jwtBearer({
            clientId: "service",
            assertion: (target) =>
              Effect.sync(() => {
                targets.push(target)
                return Redacted.make(`assertion for ${target.resource}`)
              })
          })
        })
        return JSON.stringify((yield* callTool(notes, "list_notes", {})).content)
      }))
      assert.include(text, "buy milk")
      const origin = new URL(demo.url).origin
      assert.deepStrictEqual(targets, [{ issuer: origin, resource: demo.url }])
      assert.deepStrictEqual(demo.seen.grants, ["urn:ietf:params:oauth:grant-type:jwt-bearer"])
    }))

  it("a redirect whose state is not the one sent is a StateMismatch, and nothing is exchanged", () =>
    withDemo(async (demo) => {
      const forged = McpAuth.authorizationCode({
        redirectUrl: "http://127.0.0.1:1/callback",
        authorize: (url) => Effect.map(followRedirect(url), ({ code }) => ({ code, state: "forged" }))
      })
      const error = await run(Effect.flip(McpConnect.http({ url: demo.url, auth: forged })))
      assert.strictEqual(error._tag, "McpAuthError")
      assert.strictEqual((error as McpAuth.McpAuthError).failure, "StateMismatch")
      assert.deepStrictEqual(demo.seen.grants, [])
    }))

  it("a failing authorize callback is an AuthorizationFailed naming the server", () =>
    withDemo(async (demo) => {
      const cancelled = McpAuth.authorizationCode({
        redirectUrl: "http://127.0.0.1:1/callback",
        authorize: () => Effect.fail(new Error("the user closed the browser"))
      })
      const error = await run(Effect.flip(McpConnect.http({ url: demo.url, auth: cancelled })))
      assert.strictEqual((error as McpAuth.McpAuthError).failure, "AuthorizationFailed")
      assert.include(error.message, demo.url)
      assert.include(error.message, "the user closed the browser")
    }))

  it("a server without metadata whose default endpoints fail: NoMetadata", async () => {
    const server = createServer((_req, res) => res.writeHead(401, { "www-authenticate": "Bearer" }).end())
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`
    try {
      const error = await run(Effect.flip(McpConnect.http({ url, auth: signIn })))
      assert.strictEqual(error._tag, "McpAuthError")
      assert.strictEqual((error as McpAuth.McpAuthError).failure, "NoMetadata")
      assert.include(error.message, "publishes no protected-resource or authorization-server metadata")
    } finally {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  })

  it("a redirect without state is a StateMismatch too: the state is always checked", () =>
    withDemo(async (demo) => {
      const stateless = McpAuth.authorizationCode({
        redirectUrl: "http://127.0.0.1:1/callback",
        // A JavaScript caller can leave the state out: it is checked all the same.
        authorize: (url) => Effect.map(followRedirect(url), ({ code }) => ({ code }) as unknown as McpAuth.Authorization)
      })
      const error = await run(Effect.flip(McpConnect.http({ url: demo.url, auth: stateless })))
      assert.strictEqual((error as McpAuth.McpAuthError).failure, "StateMismatch")
      assert.deepStrictEqual(demo.seen.grants, [])
    }))

  it("the PKCE verifier is never written to the store", () =>
    withDemo(async (demo) => {
      const verifier = await run(Effect.gen(function*() {
        yield* McpConnect.http({ url: demo.url, auth: signIn })
        return yield* (yield* StoreRegistry.store("mcp-auth")).get(`verifier ${demo.url}`)
      }))
      assert.deepStrictEqual(demo.seen.grants, ["authorization_code"])
      assert.isUndefined(verifier)
    }))

  it("an authorization server whose metadata offers no S256 PKCE is refused before the user is sent to it", () =>
    withDemo(async (demo) => {
      const error = await run(Effect.flip(McpConnect.http({ url: demo.url, auth: signIn })))
      assert.strictEqual((error as McpAuth.McpAuthError).failure, "AuthorizationFailed")
      assert.include(error.message, "does not support PKCE with S256")
      assert.deepStrictEqual(demo.seen.authorizations, [])
    }, { pkce: false }))

  it("an authorize callback's error quoting the redirect has its code redacted", () =>
    withDemo(async (demo) => {
      const codes: Array<string> = []
      const quoting = McpAuth.authorizationCode({
        redirectUrl: "http://127.0.0.1:1/callback",
        authorize: (url) =>
          Effect.flatMap(followRedirect(url), ({ code, state }) => {
            codes.push(code)
            return Effect.fail(new Error(`cannot read http://127.0.0.1:1/callback?code=${code}&state=${state}`))
          })
      })
      const error = await run(Effect.flip(McpConnect.http({ url: demo.url, auth: quoting })))
      assert.strictEqual((error as McpAuth.McpAuthError).failure, "AuthorizationFailed")
      assert.strictEqual(codes.length, 1)
      assert.notInclude(error.message, codes[0]!)
      assert.include(error.message, "code=<redacted>")
    }))

  it("a stored registration for another redirect URL (an old loopback port) is not used: the client registers again", () =>
    withDemo(async (demo) => {
      const redirects: Array<string | null> = []
      const at = (port: number) =>
        McpAuth.authorizationCode({
          redirectUrl: `http://127.0.0.1:${port}/callback`,
          authorize: (url) => {
            redirects.push(url.searchParams.get("redirect_uri"))
            return followRedirect(url)
          }
        })
      await run(Effect.gen(function*() {
        yield* Effect.scoped(McpConnect.http({ url: demo.url, auth: at(1) }))
        yield* (yield* StoreRegistry.store("mcp-auth")).remove(`tokens ${demo.url}`)
        yield* Effect.scoped(McpConnect.http({ url: demo.url, auth: at(2) }))
      }))
      assert.strictEqual(demo.seen.registrations, 2)
      assert.deepStrictEqual(redirects, ["http://127.0.0.1:1/callback", "http://127.0.0.1:2/callback"])
    }))

  it("never twice for the same challenge, whatever maxStepUps: challenges that alternate stop at the first repeat", () =>
    withDemo(async (demo) => {
      const error = await run(Effect.gen(function*() {
        const notes = yield* McpConnect.http({
          url: demo.url,
          auth: McpAuth.authorizationCode({ redirectUrl: "http://127.0.0.1:1/callback", authorize: followRedirect, maxStepUps: 5 })
        })
        return yield* Effect.flip(callTool(notes, "save_note", { text: "eggs" }))
      }))
      assert.strictEqual(authFailureOf(error), "StepUpLimit")
      // The first sign-in, then one step-up for "a" and one for "b"; "a" again is not retried.
      assert.deepStrictEqual(demo.seen.authorizations, ["notes:read", "notes:read a", "notes:read a b"])
    }, { stepUpScopes: ["a", "b"] }))

  it("two connections sharing a store refresh one at a time: a rotated refresh token is not spent twice", () =>
    withDemo(async (demo) => {
      await run(Effect.gen(function*() {
        const first = yield* McpConnect.http({ url: demo.url, auth: signIn })
        const second = yield* McpConnect.http({ url: demo.url, auth: signIn })
        yield* Effect.all([callTool(first, "list_notes", {}), callTool(second, "list_notes", {})], { concurrency: 2 })
      }))
      // expires_in 0: every request refreshes first; a refresh that spent an already-rotated token would sign in again.
      assert.deepStrictEqual(demo.seen.authorizations, ["notes:read"])
      assert.deepStrictEqual(demo.seen.grants.filter((grant) => grant !== "refresh_token"), ["authorization_code"])
    }, { expiresIn: 0, rotateRefreshTokens: true }))

  it("client credentials: the configured client's secret is never stored, and a changed client id takes effect", () =>
    withDemo(async (demo) => {
      const secret = "s3cret-of-the-service"
      const { stored, other } = await run(Effect.gen(function*() {
        yield* Effect.scoped(McpConnect.http({
          url: demo.url,
          auth: McpAuth.clientCredentials({ clientId: "service", clientSecret: Redacted.make(secret) })
        }))
        const stored = yield* storedText(demo.url)
        yield* (yield* StoreRegistry.store("mcp-auth")).remove(`tokens ${demo.url}`)
        const other = yield* Effect.flip(McpConnect.http({
          url: demo.url,
          auth: McpAuth.clientCredentials({ clientId: "another", clientSecret: Redacted.make(secret) })
        }))
        return { stored, other }
      }))
      assert.notInclude(stored, secret)
      assert.strictEqual((other as McpAuth.McpAuthError).failure, "TokenRefused") // "another" is not a client of the demo
    }, { clientSecret: "s3cret-of-the-service" }))

  it("client credentials step up too: the token request asks for the challenge's scope", () =>
    withDemo(async (demo) => {
      const result = await run(Effect.gen(function*() {
        const notes = yield* McpConnect.http({
          url: demo.url,
          auth: McpAuth.clientCredentials({ clientId: "service", clientSecret: Redacted.make("s3cret-of-the-service") })
        })
        return yield* callTool(notes, "save_note", { text: "eggs" })
      }))
      assert.isFalse(result.isError)
      assert.deepStrictEqual(demo.seen.grants, ["client_credentials", "client_credentials"])
    }, { clientSecret: "s3cret-of-the-service" }))

  it("McpAuth.loopback: a callback with another state is refused and the sign-in goes on waiting", () =>
    withDemo(async (demo) => {
      const strays: Array<number> = []
      await run(Effect.gen(function*() {
        const local = yield* McpAuth.loopback({
          show: (url) =>
            Effect.promise(async () => {
              const callback = new URL(url.searchParams.get("redirect_uri")!)
              for (const query of ["?code=stray&state=other", "?error=access_denied&state=other", "?code=stray"]) {
                strays.push((await fetch(`${callback.href}${query}`)).status)
              }
              void fetch(url) // the "browser", with the right state
            })
        })
        yield* McpConnect.http({ url: demo.url, auth: McpAuth.authorizationCode(local) })
      }))
      assert.deepStrictEqual(strays, [400, 400, 400])
      assert.deepStrictEqual(demo.seen.grants, ["authorization_code"])
    }))

  describe("tinyagents mcp tools --url (the CLI)", () => {
    const lines = (entries: ReadonlyArray<unknown>) => entries.map(String).join("\n")

    it("prints the authorization URL on stderr and takes the browser's redirect on a loopback port", () =>
      withDemo((demo) =>
        Effect.runPromise(Effect.gen(function*() {
          const listing = yield* Cli.run(["mcp", "tools", "--url", demo.url], { version: "1.2.3" }).pipe(Effect.forkChild)
          const authorizationUrl = yield* TestConsole.errorLines.pipe(
            Effect.map((entries) => /^http:\/\/127\.0\.0\.1:\d+\/authorize\S*$/m.exec(lines(entries))?.[0]),
            Effect.flatMap((url) => url === undefined ? Effect.fail("not yet") : Effect.succeed(url)),
            Effect.retry(Schedule.spaced("20 millis").pipe(Schedule.upTo({ times: 500 })))
          )
          assert.match(new URL(authorizationUrl).searchParams.get("redirect_uri")!, /^http:\/\/127\.0\.0\.1:\d+\/callback$/)
          yield* Effect.promise(() => fetch(authorizationUrl)) // the browser: the server redirects it to the loopback listener
          assert.strictEqual(Cli.exitCode(yield* Fiber.await(listing)), 0)
          assert.include(lines(yield* TestConsole.logLines), "list_notes")
          assert.include(lines(yield* TestConsole.errorLines), "open this URL in a browser")
          for (const token of demo.issued()) assert.notInclude(lines(yield* TestConsole.errorLines), token)
        }).pipe(Effect.provide([Cli.layer, Layer.fresh(TestConsole.layer)])))
      ))

    it("--client-credentials reads the secret from TINYAGENTS_MCP_CLIENT_SECRET; without it, a usage error", () =>
      withDemo((demo) =>
        Effect.runPromise(Effect.gen(function*() {
          const args = ["mcp", "tools", "--url", demo.url, "--client-id", "service", "--client-credentials"]
          const missing = yield* Effect.exit(Cli.run(args, { version: "1.2.3" }))
          assert.strictEqual(Cli.exitCode(missing), 2)
          process.env["TINYAGENTS_MCP_CLIENT_SECRET"] = "cli-secret-value"
          const listed = yield* Effect.exit(Cli.run(args, { version: "1.2.3" })).pipe(
            Effect.ensuring(Effect.sync(() => delete process.env["TINYAGENTS_MCP_CLIENT_SECRET"]))
          )
          assert.strictEqual(Cli.exitCode(listed), 0)
          assert.include(lines(yield* TestConsole.logLines), "save_note")
          assert.deepStrictEqual(demo.seen.grants, ["client_credentials"])
        }).pipe(Effect.provide([Cli.layer, Layer.fresh(TestConsole.layer)]))), { clientSecret: "cli-secret-value" }))
  })
})
