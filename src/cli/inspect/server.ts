/**
 * The inspector's HTTP server (Effect's `HttpRouter` on `@effect/platform-node`'s Node server,
 * loopback only): `GET /` the runs, `GET /run?id=&page=` a run, `POST /decide` a durable run's
 * approval, denial, answer to a question (a choice, the answer form's fields or JSON), declined
 * question or cancel (only when the source allows decisions, and only from the page's own
 * origin), `GET /events` the source's changes as Server-Sent Events, which the page reloads on.
 */
import { ByteSize, Cause, Context, Effect, Layer, type Scope, Stream } from "effect"
import { HttpIncomingMessage, HttpRouter, HttpServer, HttpServerRequest, HttpServerResponse } from "effect/http"
import { createServer } from "node:http"
import { headers as sseHeaders } from "../../agent/EventSse.ts"
import * as AnswerForm from "./answerForm.ts"
import * as Html from "./html.ts"
import { type Decision, type Source, SourceError } from "./sources.ts"

/** Options of {@link serve}. */
export interface ServeOptions {
  /** Default 0: a free port. */
  readonly port?: number | undefined
  /** Default `127.0.0.1`. */
  readonly host?: string | undefined
}

/** Where the inspector is served. */
export interface Served {
  readonly url: string
  readonly port: number
}

const html = (body: string, status = 200) =>
  HttpServerResponse.text(body, {
    status,
    contentType: "text/html; charset=utf-8",
    headers: {
      "cache-control": "no-store",
      "content-security-policy": Html.contentSecurityPolicy,
      "x-frame-options": "DENY",
      "x-content-type-options": "nosniff",
      "referrer-policy": "same-origin"
    }
  })

const query = (request: HttpServerRequest.HttpServerRequest): URLSearchParams =>
  new URL(request.url, "http://inspector").searchParams

/** The most bytes a decision's form may have (an answer's JSON included). */
const maxBody = 1_000_000

/**
 * Whether a `POST` comes from the inspector's own page: its `Origin` is one of `origins`, or (a
 * browser that sends none) its `Sec-Fetch-Site` is `same-origin`; a `Referer` it has is of one of
 * `origins` too. A request with none of them (an old browser posting a form cross-site with
 * `no-referrer`, or a script without a browser) is refused: a client other than the page names the
 * origin (`Origin: http://127.0.0.1:PORT`).
 */
const sameOrigin = (headers: Readonly<Record<string, string | undefined>>, origins: ReadonlySet<string>): boolean => {
  const origin = headers["origin"]
  const site = headers["sec-fetch-site"]
  const referer = headers["referer"]
  if (origin !== undefined && !origins.has(origin)) return false
  if (site !== undefined && site !== "same-origin") return false
  if (referer !== undefined && !(URL.canParse(referer) && origins.has(new URL(referer).origin))) return false
  return origin !== undefined || site === "same-origin"
}

/** The inspector's routes over `source`; decisions are taken from `origins()` only. */
export const routes = (source: Source, origins: () => ReadonlySet<string>) => {
  const failed = (error: SourceError) => html(Html.errorPage(source, "Cannot read the source", error.detail), 500)
  const index = HttpRouter.route("GET", "/", () =>
    source.read.pipe(
      Effect.map((snapshot) => html(Html.runsPage(snapshot, source))),
      Effect.catchTag("SourceError", (error) => Effect.succeed(failed(error)))
    ))
  const run = HttpRouter.route("GET", "/run", (request) =>
    Effect.gen(function*() {
      const params = query(request)
      const id = params.get("id") ?? ""
      const page = Number.parseInt(params.get("page") ?? "1", 10)
      // the outcome of a decision, shown after its redirect; not from a link of another site (a
      // "approved" that was never decided)
      const site = request.headers["sec-fetch-site"]
      const flash = site === undefined || site === "same-origin" ? params.get("flash") : null
      const snapshot = yield* source.read
      const body = Html.runPage(snapshot, source, id, {
        page: Number.isFinite(page) ? page : 1,
        allowDecisions: source.decide !== undefined,
        flash: flash === null ? undefined : { ok: params.get("ok") === "1", text: flash }
      })
      return body === undefined ? html(Html.errorPage(source, "No such run", `no run ${JSON.stringify(id)} in ${source.label}`), 404) : html(body)
    }).pipe(Effect.catchTag("SourceError", (error) => Effect.succeed(failed(error)))))
  const decide = HttpRouter.route("POST", "/decide", (request) =>
    Effect.gen(function*() {
      if (!sameOrigin(request.headers, origins())) {
        return html(Html.errorPage(source, "Refused", "decisions are taken from the inspector's own page only"), 403)
      }
      if (source.decide === undefined) {
        return html(Html.errorPage(source, "Refused", "decisions are off: start the inspector with --allow-decisions"), 403)
      }
      const body = yield* Effect.result(request.text.pipe(Effect.provideService(HttpIncomingMessage.MaxBodySize, ByteSize.bytes(maxBody))))
      if (body._tag === "Failure") return html(Html.errorPage(source, "Refused", `a decision's form is at most ${maxBody} bytes`), 413)
      const form = new URLSearchParams(body.success)
      const workflow = form.get("workflow") ?? ""
      const runId = form.get("run") ?? ""
      const callId = form.get("call") ?? ""
      const reason = (form.get("reason") ?? "").trim()
      const kind = form.get("decision")
      const question = Number.parseInt(form.get("question") ?? "", 10)
      const back = (ok: boolean, text: string) =>
        HttpServerResponse.redirect(`/run?id=${encodeURIComponent(runId)}&ok=${ok ? "1" : "0"}&flash=${encodeURIComponent(text)}`, { status: 303 })
      // an answer: a choice's or a textarea's JSON, or the fields of the answer form
      let value: unknown
      if (kind === "answer") {
        try {
          value = JSON.parse(form.get("answer") ?? "")
        } catch (error) {
          return back(false, `answer refused (the question stays open): not JSON: ${error instanceof Error ? error.message : String(error)}`)
        }
      } else if (kind === "fields") {
        value = AnswerForm.valueOf(form)
        if (typeof value === "string") return html(Html.errorPage(source, "Bad request", value), 400)
      }
      const asks = callId !== "" && Number.isInteger(question) && question > 0
      const decision: Decision | undefined = kind === "approve"
        ? { _tag: "Approve", workflow, runId, callId }
        : kind === "deny"
        ? { _tag: "Deny", workflow, runId, callId, reason: reason === "" ? "denied from the inspector" : reason }
        : (kind === "answer" || kind === "fields") && asks
        ? { _tag: "Answer", workflow, runId, callId, question, value }
        : kind === "decline" && asks
        ? { _tag: "Decline", workflow, runId, callId, question, reason: reason === "" ? "declined from the inspector" : reason }
        : kind === "cancel"
        ? { _tag: "Cancel", workflow, runId, reason: reason === "" ? "cancelled from the inspector" : reason }
        : undefined
      if (decision === undefined || runId === "" || workflow === "") {
        return html(Html.errorPage(source, "Bad request", "a decision names a workflow, a run and approve, deny, answer, decline or cancel (an answer: a call and its question)"), 400)
      }
      const outcome = yield* Effect.result(source.decide(decision))
      return back(outcome._tag === "Success", outcome._tag === "Success" ? outcome.success : outcome.failure.detail)
    }))
  const events = HttpRouter.route("GET", "/events", () =>
    Effect.succeed(HttpServerResponse.stream(
      Stream.encodeText(Stream.concat(Stream.make(": connected\n\n"), Stream.merge(source.changes, Stream.tick("15 seconds").pipe(Stream.map(() => ": ping\n\n"))))),
      { headers: sseHeaders, contentType: "text/event-stream" }
    )))
  return HttpRouter.addAll([index, run, decide, events])
}

/**
 * Answers 403 to a request whose `Host` is not the inspector's own address: a page of another
 * site whose name was made to resolve to 127.0.0.1 (DNS rebinding) cannot read the runs.
 */
const hostGuard = (allowed: () => ReadonlySet<string>) =>
  HttpRouter.middleware((handler) =>
    Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const host = request.headers["host"]
      if (host === undefined || !allowed().has(host.toLowerCase())) {
        return HttpServerResponse.text("tinyagents inspect: unknown host", { status: 403 })
      }
      return yield* handler
    }), { global: true })

/**
 * Serves the inspector for `source` on `host:port` until the scope closes; returns its URL (a
 * `port` of 0 picks a free one).
 */
export const serve = (source: Source, options: ServeOptions = {}): Effect.Effect<Served, SourceError, Scope.Scope> =>
  Effect.gen(function*() {
    const NodeHttpServer = yield* Effect.tryPromise({
      try: () => import("@effect/platform-node/NodeHttpServer"),
      catch: () => new SourceError({ detail: "tinyagents inspect needs @effect/platform-node (^4.1): npm install @effect/platform-node" })
    })
    const host = options.host ?? "127.0.0.1"
    let url = ""
    let hosts: ReadonlySet<string> = new Set()
    const node = createServer()
    const app = Layer.merge(routes(source, () => new Set([...hosts].map((h) => `http://${h}`))), hostGuard(() => hosts))
    const server = HttpRouter.serve(app, { disableLogger: true, disableListenLog: true }).pipe(
      Layer.provideMerge(NodeHttpServer.layer(() => node, { port: options.port ?? 0, host }))
    )
    const context = yield* Layer.build(server).pipe(
      Effect.catchCause((cause) =>
        Cause.hasInterruptsOnly(cause)
          ? Effect.failCause(cause as Cause.Cause<never>)
          : Effect.fail(new SourceError({ detail: `cannot serve on ${host}:${options.port ?? 0}: ${String(Cause.squash(cause) instanceof Error ? (Cause.squash(cause) as Error).message : Cause.squash(cause))}` })))
    )
    // SSE connections stay open: close them so the server stops at once.
    yield* Effect.addFinalizer(() => Effect.sync(() => node.closeAllConnections()))
    const address = Context.get(context, HttpServer.HttpServer).address
    const port = "port" in address ? address.port : options.port ?? 0
    const authority = `${host.includes(":") ? `[${host}]` : host}:${port}`
    url = `http://${authority}`
    hosts = new Set([authority, `localhost:${port}`, ...(host === "127.0.0.1" ? [] : [`127.0.0.1:${port}`])])
    return { url, port }
  })
