/**
 * A real `node:http` server on 127.0.0.1 (port 0) that answers each request
 * with a scripted server-sent event stream: events written as the providers
 * write them (`event:` / `data:` lines, a blank line after each), the whole
 * text cut into small writes (so events and JSON strings arrive split), and
 * then the end of the body, a destroyed socket (`"cut"`), or no end at all
 * (`"hang"`, after which the test interrupts). It records every request and
 * whether its response was closed before it finished.
 */
import { Effect } from "effect"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import type { Recorded } from "./loopback.ts"

/** One SSE event: `event:` name (omitted when absent) and a JSON `data` value, or raw `data` text. */
export type SseEvent =
  | { readonly event?: string; readonly json: unknown }
  | { readonly event?: string; readonly text: string }

/** One scripted answer. */
export type StreamReply =
  | {
    readonly events: ReadonlyArray<SseEvent>
    /** After the events: end the body (default), destroy the socket, or never end. */
    readonly then?: "end" | "cut" | "hang"
    /** Bytes per write. Default 7, so events and strings arrive split. */
    readonly chunk?: number
    readonly headers?: Readonly<Record<string, string>>
  }
  | { readonly status: number; readonly json: unknown; readonly headers?: Readonly<Record<string, string>> }

/** A running server. */
export interface SseServer {
  readonly origin: string
  readonly requests: Array<Recorded>
  /** Responses not yet finished or closed. */
  readonly open: () => number
  /** Resolves when the n-th response (0-based) closes; `true` when it closed before the server finished writing it. */
  readonly closed: (n: number) => Promise<boolean>
}

/** The wire text of events. */
export const sseText = (events: ReadonlyArray<SseEvent>): string =>
  events.map((e) => {
    const data = "json" in e ? JSON.stringify(e.json) : e.text
    return `${e.event === undefined ? "" : `event: ${e.event}\n`}${data.split("\n").map((line) => `data: ${line}`).join("\n")}\n\n`
  }).join("")

const parse = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/** Starts the server for the current scope; replies are used in order, then every request gets a 599. */
export const serveSse = (replies: ReadonlyArray<StreamReply>) =>
  Effect.acquireRelease(
    Effect.callback<{ readonly server: Http.Server; readonly api: SseServer }>((resume) => {
      const requests: Array<Recorded> = []
      const closings: Array<{ promise: Promise<boolean>; resolve: (early: boolean) => void }> = []
      const closing = (n: number) => {
        while (closings.length <= n) {
          let resolve!: (early: boolean) => void
          const promise = new Promise<boolean>((r) => (resolve = r))
          closings.push({ promise, resolve })
        }
        return closings[n]!
      }
      let open = 0
      let next = 0
      const server = Http.createServer((req, res) => {
        const n = next++
        const chunks: Array<Buffer> = []
        req.on("data", (chunk: Buffer) => chunks.push(chunk))
        req.on("end", () => {
          const body = Buffer.concat(chunks).toString("utf8")
          requests.push({ method: req.method ?? "", path: req.url ?? "", headers: req.headers, body, json: parse(body) })
          const reply = replies[n]
          open++
          let finished = false
          res.on("close", () => {
            open--
            closing(n).resolve(!finished)
          })
          if (reply === undefined || !("events" in reply)) {
            const status = reply?.status ?? 599
            res.writeHead(status, { "content-type": "application/json", ...reply?.headers })
            finished = true
            res.end(JSON.stringify(reply?.json ?? { error: { message: "the test script has no more replies" } }))
            return
          }
          res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", ...reply.headers })
          res.flushHeaders()
          const bytes = Buffer.from(sseText(reply.events), "utf8")
          const size = reply.chunk ?? 7
          let at = 0
          const write = () => {
            if (res.destroyed) return
            if (at < bytes.length) {
              res.write(bytes.subarray(at, at + size))
              at += size
              setImmediate(write)
              return
            }
            switch (reply.then ?? "end") {
              case "end":
                finished = true
                res.end()
                return
              case "cut":
                res.socket?.destroy()
                return
              case "hang":
                return
            }
          }
          write()
        })
      })
      server.listen(0, "127.0.0.1", () => {
        const { port } = server.address() as AddressInfo
        resume(Effect.succeed({
          server,
          api: {
            origin: `http://127.0.0.1:${port}`,
            requests,
            open: () => open,
            closed: (n) => closing(n).promise
          }
        }))
      })
    }),
    ({ server }) =>
      Effect.callback<void>((resume) => {
        server.closeAllConnections()
        server.close(() => resume(Effect.void))
      })
  ).pipe(Effect.map(({ api }) => api))
