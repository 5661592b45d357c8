/**
 * `McpAuth.loopback`: an HTTP listener on 127.0.0.1 that receives the authorization server's
 * redirect at `/callback` and hands its code and state to the waiting `authorize`.
 */
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { Deferred, Effect, Scope, Semaphore } from "effect"
import { type Authorization, type Loopback, McpAuthError } from "../McpAuth.ts"

const page = (text: string) =>
  `<!doctype html><meta charset="utf-8"><title>tinyagents</title><p>${text}</p>`

/** The authorization server's `error_description`, as an error detail quotes it: short, printable, no code. */
const described = (text: string): string =>
  text.slice(0, 200).replace(/[^\x20-\x7e]/g, "?").replace(/\bcode=[^&\s]*/g, "code=<redacted>")

export const listen = (options: {
  readonly port?: number
  readonly show: (url: URL) => Effect.Effect<void>
}): Effect.Effect<Loopback, McpAuthError, Scope.Scope> =>
  Effect.gen(function*() {
    // The sign-in waiting for its redirect, and the `state` its authorization request carried.
    let waiting: { readonly deferred: Deferred.Deferred<Authorization, McpAuthError>; readonly state: string | null } | undefined
    const server = createServer((request, response) => {
      const url = new URL(request.url ?? "/", "http://127.0.0.1")
      if (url.pathname !== "/callback") {
        response.writeHead(404).end()
        return
      }
      const code = url.searchParams.get("code")
      const error = url.searchParams.get("error")
      const target = waiting
      if (target === undefined) {
        response.writeHead(409, { "content-type": "text/html" }).end(page("No authorization is waiting."))
        return
      }
      const state = url.searchParams.get("state")
      if (state !== target.state) { // not the redirect of this sign-in: it goes on waiting
        response.writeHead(400, { "content-type": "text/html" }).end(page("This is not the authorization being waited for."))
        return
      }
      if (code === null) {
        const description = url.searchParams.get("error_description")
        Deferred.doneUnsafe(
          target.deferred,
          Effect.fail(
            new McpAuthError({
              server: "loopback",
              failure: "AuthorizationFailed",
              detail: `the authorization server answered ${error === null ? "without a code" : described(error)}${
                description === null ? "" : `: ${described(description)}`
              }`
            })
          )
        )
        response.writeHead(400, { "content-type": "text/html" }).end(page("Authorization failed. You can close this tab."))
        return
      }
      Deferred.doneUnsafe(target.deferred, Effect.succeed({ code, state: state ?? "" }))
      response.writeHead(200, { "content-type": "text/html" }).end(page("Authorized. You can close this tab."))
    })
    const port = yield* Effect.acquireRelease(
      Effect.callback<number, McpAuthError>((resume) => {
        server.once("error", (error) =>
          resume(Effect.fail(
            new McpAuthError({ server: "loopback", failure: "AuthorizationFailed", detail: `cannot listen: ${error.message}` })
          )))
        server.listen(options.port ?? 0, "127.0.0.1", () => resume(Effect.succeed((server.address() as AddressInfo).port)))
      }),
      () =>
        Effect.callback<void>((resume) => {
          server.closeAllConnections()
          server.close(() => resume(Effect.void))
        })
    )
    const oneAtATime = yield* Semaphore.make(1)
    return {
      redirectUrl: `http://127.0.0.1:${port}/callback`,
      authorize: (url: URL) =>
        oneAtATime.withPermits(1)(Effect.gen(function*() {
          const deferred = yield* Deferred.make<Authorization, McpAuthError>()
          waiting = { deferred, state: url.searchParams.get("state") }
          yield* options.show(url)
          return yield* Deferred.await(deferred)
        }).pipe(Effect.ensuring(Effect.sync(() => {
          waiting = undefined
        }))))
    } satisfies Loopback
  })
