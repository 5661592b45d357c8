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

export const listen = (options: {
  readonly port?: number
  readonly show: (url: URL) => Effect.Effect<void>
}): Effect.Effect<Loopback, McpAuthError, Scope.Scope> =>
  Effect.gen(function*() {
    let waiting: Deferred.Deferred<Authorization, McpAuthError> | undefined
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
      if (code === null) {
        const description = url.searchParams.get("error_description")
        Deferred.doneUnsafe(
          target,
          Effect.fail(
            new McpAuthError({
              server: "loopback",
              failure: "AuthorizationFailed",
              detail: `the authorization server answered ${error ?? "without a code"}${description === null ? "" : `: ${description}`}`
            })
          )
        )
        response.writeHead(400, { "content-type": "text/html" }).end(page("Authorization failed. You can close this tab."))
        return
      }
      const state = url.searchParams.get("state")
      Deferred.doneUnsafe(target, Effect.succeed({ code, ...(state === null ? {} : { state }) }))
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
          waiting = deferred
          yield* options.show(url)
          return yield* Deferred.await(deferred)
        }).pipe(Effect.ensuring(Effect.sync(() => {
          waiting = undefined
        }))))
    } satisfies Loopback
  })
