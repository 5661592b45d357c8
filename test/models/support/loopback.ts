/**
 * A real `node:http` server on 127.0.0.1 (port 0) for the model adapter
 * tests: it answers each request with the next scripted reply (a recorded
 * body, a status with headers, or no answer at all) and records every request
 * it receives. Also: a logger that captures every log line, and the secret
 * checks every adapter test runs.
 */
import { assert } from "@effect/vitest"
import { Effect, Layer, Logger, References } from "effect"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"

/** One request as the server saw it. */
export interface Recorded {
  readonly method: string
  readonly path: string
  readonly headers: Http.IncomingHttpHeaders
  readonly body: string
  /** The body parsed as JSON (undefined when it is not JSON). */
  readonly json: unknown
}

/** What the server answers: a JSON body (or raw text) with a status, or nothing ever (`"hang"`). */
export type Reply =
  | { readonly status?: number; readonly headers?: Readonly<Record<string, string>>; readonly json: unknown }
  | { readonly status?: number; readonly headers?: Readonly<Record<string, string>>; readonly text: string }
  | "hang"

/** A running server: where it listens and what it received so far. */
export interface Server {
  /** `http://127.0.0.1:PORT` */
  readonly origin: string
  readonly requests: Array<Recorded>
}

const parse = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/** Starts the server for the current scope; replies are used in order, then every request gets a 599. */
export const serve = (replies: ReadonlyArray<Reply>) =>
  Effect.acquireRelease(
    Effect.callback<{ readonly server: Http.Server; readonly api: Server }>((resume) => {
      const requests: Array<Recorded> = []
      let next = 0
      const server = Http.createServer((req, res) => {
        const chunks: Array<Buffer> = []
        req.on("data", (chunk: Buffer) => chunks.push(chunk))
        req.on("end", () => {
          const body = Buffer.concat(chunks).toString("utf8")
          requests.push({ method: req.method ?? "", path: req.url ?? "", headers: req.headers, body, json: parse(body) })
          const reply = replies[next++]
          if (reply === "hang") return
          if (reply === undefined) {
            res.writeHead(599, { "content-type": "application/json" })
            res.end(JSON.stringify({ error: { message: "the test script has no more replies" } }))
            return
          }
          res.writeHead(reply.status ?? 200, { "content-type": "application/json", ...reply.headers })
          res.end("json" in reply ? JSON.stringify(reply.json) : reply.text)
        })
      })
      server.listen(0, "127.0.0.1", () => {
        const { port } = server.address() as AddressInfo
        resume(Effect.succeed({ server, api: { origin: `http://127.0.0.1:${port}`, requests } }))
      })
    }),
    ({ server }) =>
      Effect.callback<void>((resume) => {
        server.closeAllConnections()
        server.close(() => resume(Effect.void))
      })
  ).pipe(Effect.map(({ api }) => api))

/** A loopback port nothing listens on (bound, then released). */
export const closedPort = Effect.callback<number>((resume) => {
  const server = Http.createServer()
  server.listen(0, "127.0.0.1", () => {
    const { port } = server.address() as AddressInfo
    server.close(() => resume(Effect.succeed(port)))
  })
})

/** A logger layer that keeps every log line (JSON, with annotations) at every level. */
export const captureLogs = () => {
  const lines: Array<string> = []
  const logger = Logger.make((options) => {
    lines.push(Logger.formatJson.log(options))
  })
  const layer = Layer.mergeAll(
    Logger.layer([logger]),
    Layer.succeed(References.MinimumLogLevel, "All")
  )
  return { lines, layer }
}

/** Asserts `secret` appears in none of the values, as text, `String(...)` or JSON. */
export const assertNoSecret = (secret: string, values: ReadonlyArray<unknown>) => {
  for (const value of values) {
    const renderings = [
      typeof value === "string" ? value : "",
      String(value),
      (() => {
        try {
          return JSON.stringify(value) ?? ""
        } catch {
          return ""
        }
      })(),
      value instanceof Error ? `${value.message}\n${value.stack ?? ""}` : ""
    ]
    for (const text of renderings) assert.notInclude(text, secret)
  }
}

/**
 * Error answers whose text puts `key` across each cut the adapters make (1,000 characters of a
 * JSON error message, 300 of a bare error string or a non-JSON error body, 200 of a non-JSON
 * 2xx body): `keep` characters of the key fall before the cut.
 */
export const straddling = (key: string, keep = 10): ReadonlyArray<{ readonly label: string; readonly reply: Reply }> => {
  const across = (cut: number, fill: string) => `${fill.repeat(cut - keep)}${key} and more text after it`
  return [
    { label: "JSON error message (1,000)", reply: { status: 401, json: { error: { message: across(1000, "x"), type: "invalid_request_error" } } } },
    { label: "bare error string (300)", reply: { status: 400, json: { error: across(300, "w") } } },
    { label: "non-JSON error body (300)", reply: { status: 502, text: across(300, "y") } },
    { label: "non-JSON 2xx body (200)", reply: { status: 200, text: across(200, "z") } }
  ]
}
