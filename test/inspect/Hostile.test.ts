/**
 * `tinyagents inspect` against hostile input (fast tier). Every string an event carries came from a
 * model's tool call (arguments, results, error messages, the model's text, ids, questions), so a run
 * recorded with markup in all of them must serve pages where none of it is markup: no element, no
 * attribute, no `javascript:` link, nothing in the inline script. Then the HTTP guards (Host, the
 * origin of a decision, its size, malformed forms, unknown ids) and damaged sources (a garbled, a
 * 10 MB or a non-JSON line, an empty file, a foreign table in a SQLite file): a clear page, never a
 * crash.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import { SqlClient } from "effect/sql"
import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { request as httpRequest } from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll } from "vitest"
import { Html, Model, Server, Sources } from "../../src/cli/inspect/index.ts"
import { SqliteClient } from "../../src/stores/index.ts"
import { hostile, hostileRunId as runId, payloads, recordHostile } from "./hostileRun.ts"

const dir = mkdtempSync(join(tmpdir(), "tinyagents-inspect-hostile-"))
const events = join(dir, "events.jsonl")

const tags = new Set([
  "html", "head", "meta", "title", "style", "body", "header", "a", "span", "main", "script", "h1", "h2", "p", "table", "thead", "tbody", "tr", "th",
  "td", "code", "pre", "div", "details", "summary", "b", "small", "br", "section", "nav", "form", "input", "button", "select", "option", "textarea",
  "label"
])

/**
 * Asserts `page` is inert markup: its one script is the inspector's own (`script`, taken from a
 * page with no event in it), one style, every tag a known element with known attributes, no event
 * handler, every link and form on the inspector itself, every `style` attribute the inspector's own
 * numbers, and no payload unescaped.
 */
const assertInert = (page: string, script: string) => {
  const scripts = page.split("<script>")
  assert.strictEqual(scripts.length, 2, "one inline script")
  assert.strictEqual(scripts[1]!.slice(0, scripts[1]!.indexOf("</script>")), script, "the inline script is the inspector's own")
  assert.strictEqual(page.split("<style>").length, 2, "one style element")
  const body = page.replace(/^<!doctype html>/, "").replace(/<style>[^<]*<\/style>/, "").replace(`<script>${script}</script>`, "")
  // escaped text has no `<`: every one left opens a tag (or `<!--`)
  const tag = /<(\/?)([a-zA-Z][a-zA-Z0-9]*)((?:\s+[a-zA-Z-]+(?:="[^"]*")?)*)\s*>/y
  for (let i = body.indexOf("<"); i !== -1; i = body.indexOf("<", i + 1)) {
    tag.lastIndex = i
    const match = tag.exec(body)
    assert.ok(match !== null, `markup that is no tag at ${JSON.stringify(body.slice(i, i + 80))}`)
    const [, , name, attributes] = match
    assert.ok(tags.has(name!.toLowerCase()), `an unexpected element <${name}>`)
    for (const [, key, value = ""] of attributes!.matchAll(/\s+([a-zA-Z-]+)(?:="([^"]*)")?/g)) {
      assert.notMatch(key!, /^on/i, `an event handler attribute ${key}`)
      assert.notInclude(["src", "srcdoc", "formaction", "xlink:href"], key!.toLowerCase())
      if (key === "href" || key === "action") assert.match(value, /^\/(?!\/)/, `${key}="${value}" leaves the inspector`)
      if (key === "style") assert.match(value, /^[a-z0-9:;.%\- ,()#]*$/, `style="${value}"`)
    }
  }
  // as text, `javascript:alert(1)` is words (links are checked above)
  for (const payload of payloads) if (/[<>"']/.test(payload)) assert.notInclude(body, payload)
}

/** The inline script, as a page with no event in it has it. */
const ownScript = () => {
  const empty = Html.runsPage({ inspection: Model.build([]) }, { kind: "jsonl", label: "x" })
  const start = empty.indexOf("<script>") + "<script>".length
  return empty.slice(start, empty.indexOf("</script>", start))
}

beforeAll(async () => {
  await Effect.runPromise(recordHostile(events))
  // and unreadable lines quoting the payloads
  appendFileSync(events, `${hostile}\n{"_tag":"tool.started","toolCallId":${JSON.stringify(hostile)}}\n`)
}, 30_000)
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const get = (url: string, init?: RequestInit) => Effect.promise(() => fetch(url, { redirect: "manual", ...init }))
const text = (response: Response) => Effect.promise(() => response.text())

describe("hostile strings in the events", () => {
  it.effect("a run whose ids, arguments, results, errors, tool names, progress and model text are markup: every page served is inert", () =>
    Effect.gen(function*() {
      const script = ownScript()
      const source = Sources.jsonl(events, `events ${hostile}.jsonl`)
      const { inspection } = yield* source.read
      const run = inspection.byId.get(runId)!
      assert.ok(run !== undefined, "the run, under its hostile id")
      assert.strictEqual(run.calls.length, 4)
      assert.strictEqual(inspection.unreadable.length, 2)
      const { url } = yield* Server.serve(source)
      const pages = [
        `${url}/`,
        `${url}/run?id=${encodeURIComponent(runId)}`,
        `${url}/run?id=${encodeURIComponent(runId)}&ok=0&flash=${encodeURIComponent(hostile)}`,
        `${url}/run?id=${encodeURIComponent(hostile)}` // no such run: the id is quoted
      ]
      for (const address of pages) {
        const response = yield* get(address)
        assert.include([200, 404], response.status)
        // and were markup to get through: only the page's own script runs; no site frames the page
        assert.strictEqual(response.headers.get("content-security-policy"), Html.contentSecurityPolicy)
        assert.match(Html.contentSecurityPolicy, /script-src 'sha256-[A-Za-z0-9+/]+=*';.*frame-ancestors 'none'/)
        assert.strictEqual(response.headers.get("x-frame-options"), "DENY")
        assert.strictEqual(response.headers.get("x-content-type-options"), "nosniff")
        const page = yield* text(response)
        assertInert(page, script)
        // shown, escaped
        assert.include(page, Html.escape(payloads[0]))
      }
      // a decision's outcome is shown after its redirect, not from another site's link
      const spoofed = `${url}/run?id=${encodeURIComponent(runId)}&ok=1&flash=approved+everything`
      assert.include(yield* text(yield* get(spoofed, { headers: { "sec-fetch-site": "same-origin" } })), "approved everything")
      for (const site of ["cross-site", "same-site", "none"]) {
        assert.notInclude(yield* text(yield* get(spoofed, { headers: { "sec-fetch-site": site } })), "approved everything")
      }
      const page = yield* text(yield* get(pages[1]!))
      assert.include(page, `<b>${Html.escape(hostile)}</b>`) // the unknown tool's name
      assert.include(page, `<code>${Html.escape(`c1 ${hostile}`)}</code>`)
      assert.strictEqual(page.split(`<details class="call`).length - 1, 4)
    }).pipe(Effect.scoped))

  it.effect("a durable run whose workflow, ids, pending arguments, question, schema, choices and journal rows are markup: its panel is inert", () =>
    Effect.gen(function*() {
      const durable: Sources.DurableRun = {
        workflow: hostile,
        runId: hostile,
        status: hostile,
        open: true,
        pending: [{ callId: hostile, toolName: hostile, arguments: { [hostile]: hostile } }],
        questions: [{
          callId: hostile,
          toolName: hostile,
          turn: 0,
          question: 1,
          message: hostile,
          schema: { type: "object", properties: { [hostile]: { type: "string" }, pick: { enum: [hostile, "b"] } }, required: [hostile] },
          choices: [{ pick: hostile }, { [hostile]: [hostile] }]
        }, {
          callId: hostile,
          toolName: hostile,
          turn: 0,
          question: 2,
          message: hostile,
          schema: { type: "object", properties: { deep: { type: "object", properties: { [hostile]: { type: "string" } } } } },
          choices: hostile
        }],
        rows: [{ seq: 1, text: hostile }]
      }
      const snapshot = { inspection: Model.build([]), durable: new Map([[hostile, durable]]) }
      const label = { kind: "journal", label: hostile }
      for (const allowDecisions of [true, false]) {
        const page = Html.runPage(snapshot, label, hostile, { page: 1, allowDecisions, flash: { ok: false, text: hostile } })!
        assertInert(page, ownScript())
        assert.include(page, `name="field.${Html.escape(hostile)}"`)
      }
      assertInert(Html.runsPage(snapshot, label), ownScript())
    }))
})

/** A journal-like source that records the decisions it is sent. */
const deciding = () => {
  const decided: Array<Sources.Decision> = []
  const source: Sources.Source = {
    kind: "journal",
    label: "decisions",
    read: Effect.succeed({ inspection: Model.build([]) }),
    changes: Stream.empty,
    decide: (decision) => Effect.sync(() => (decided.push(decision), `decided ${decision._tag}`))
  }
  return { source, decided }
}

/** A raw request (any Host, any body, chunked or not): its status. */
const raw = (url: string, options: { readonly method?: string; readonly path?: string; readonly headers?: Record<string, string>; readonly body?: string | Buffer }) =>
  Effect.callback<number>((resume) => {
    const req = httpRequest(`${url}${options.path ?? "/"}`, { method: options.method ?? "GET", headers: options.headers ?? {} }, (res) => {
      res.resume()
      resume(Effect.succeed(res.statusCode ?? 0))
    })
    req.on("error", (error) => resume(Effect.die(error)))
    req.end(options.body)
  })

describe("the HTTP guards", () => {
  it.effect("a decision: only with a same-origin signal (no Origin, Origin null, a foreign Referer or Sec-Fetch-Site refused), bounded, its form checked", () =>
    Effect.gen(function*() {
      const { source, decided } = deciding()
      const { url, port } = yield* Server.serve(source)
      const form = "workflow=w&run=r&decision=cancel"
      const urlencoded = { "content-type": "application/x-www-form-urlencoded" }
      const post = (headers: Record<string, string>, body: string | Buffer = form) => raw(url, { method: "POST", path: "/decide", headers: { ...urlencoded, ...headers }, body })
      // refused: no signal at all (an old browser's cross-site form with no-referrer), a sandboxed or
      // no-referrer page (Origin: null), a cross-site fetch metadata, a foreign Referer
      assert.strictEqual(yield* post({}), 403)
      assert.strictEqual(yield* post({ origin: "null" }), 403)
      assert.strictEqual(yield* post({ "sec-fetch-site": "cross-site" }), 403)
      assert.strictEqual(yield* post({ "sec-fetch-site": "same-site" }), 403)
      assert.strictEqual(yield* post({ "sec-fetch-site": "none" }), 403)
      assert.strictEqual(yield* post({ referer: "http://evil.example/page" }), 403)
      assert.strictEqual(yield* post({ origin: url, referer: "http://evil.example/page" }), 403)
      assert.strictEqual(yield* post({ origin: `http://127.0.0.1:${port + 1}` }), 403)
      assert.strictEqual(yield* post({ origin: url, "sec-fetch-site": "cross-site" }), 403)
      // another Host (DNS rebinding): refused before anything else
      assert.strictEqual(yield* post({ host: `evil.example:${port}`, origin: `http://evil.example:${port}` }), 403)
      assert.strictEqual(yield* raw(url, { headers: { host: `127.0.0.1.:${port}` } }), 403)
      assert.deepStrictEqual(decided, [])
      // the page's own origin, or a browser that says same-origin only
      assert.strictEqual(yield* post({ origin: url }), 303)
      assert.strictEqual(yield* post({ origin: `http://localhost:${port}`, host: `localhost:${port}` }), 303)
      assert.strictEqual(yield* post({ "sec-fetch-site": "same-origin", referer: `${url}/run?id=r` }), 303)
      assert.strictEqual(decided.length, 3)
      // a body over the bound: 413, nothing decided (with a length, and chunked)
      const big = Buffer.alloc(2_000_000, "a")
      assert.strictEqual(yield* post({ origin: url }, Buffer.concat([Buffer.from(`${form}&reason=`), big])), 413)
      assert.strictEqual(yield* raw(url, { method: "POST", path: "/decide", headers: { ...urlencoded, origin: url, "transfer-encoding": "chunked" }, body: big }), 413)
      // malformed forms: 400, never a 500
      for (const body of ["", "%", "%zz=%%&&==", "workflow=w&run=r&decision=launch", "workflow=w&run=r&decision=decline&call=c&question=x", "run=r&decision=cancel", Buffer.from([0xff, 0xfe, 0x00])]) {
        assert.strictEqual(yield* post({ origin: url }, body), 400, JSON.stringify(String(body)))
      }
      assert.strictEqual(yield* post({ origin: url }, "workflow=w&run=r&call=c&question=1&decision=fields&fields=not-json"), 400)
      assert.strictEqual(decided.length, 3)
      // unknown routes and paths: 404, and nothing reads a path
      for (const path of ["/../../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd", "/run/../../etc/passwd", "/static/..%2f..%2fpackage.json"]) {
        assert.strictEqual(yield* raw(url, { path }), 404, path)
      }
      assert.strictEqual(yield* raw(url, { path: "/run?id=..%2F..%2Fetc%2Fpasswd" }), 404)
      assert.strictEqual(yield* raw(url, { path: "/run?id=%ff%fe&page=-9e999" }), 404)
    }).pipe(Effect.scoped))

  it.effect("decisions off: refused with the reason, even from the page's origin", () =>
    Effect.gen(function*() {
      const { url } = yield* Server.serve(Sources.jsonl(events))
      assert.strictEqual(yield* raw(url, { method: "POST", path: "/decide", headers: { origin: url }, body: "workflow=w&run=r&decision=cancel" }), 403)
    }).pipe(Effect.scoped))
})

describe("damaged sources", () => {
  it.effect("JSONL: a 10 MB line, a garbled one, a file that is not JSON at all (no newline), an empty file: unreadable lines or no runs, quoted briefly, never a failure", () =>
    Effect.gen(function*() {
      const script = ownScript()
      const huge = join(dir, "huge.jsonl")
      writeFileSync(huge, `${"x".repeat(10_000_000)}\n{"_tag":"agent.turn_started","runId":${JSON.stringify("y".repeat(10_000_000))}}\n{\u0000\u00ff garbled\n`)
      const notJson = join(dir, "image.png")
      writeFileSync(notJson, Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x3c, 0x73, 0x63, 0x72, 0x69, 0x70, 0x74, 0x3e, 0xff, 0x00]))
      const oneLine = join(dir, "notes.txt")
      writeFileSync(oneLine, `these are not events ${hostile}`)
      const empty = join(dir, "empty.jsonl")
      writeFileSync(empty, "")
      for (const [file, unreadable] of [[huge, 3], [notJson, 3], [oneLine, 1], [empty, 0]] as const) {
        const source = yield* Sources.open(file, { allowDecisions: false })
        assert.strictEqual(source.kind, "jsonl")
        assert.strictEqual((yield* source.read).inspection.unreadable.length, unreadable, file)
        const { url } = yield* Server.serve(source)
        const response = yield* get(`${url}/`)
        assert.strictEqual(response.status, 200)
        const page = yield* text(response)
        assertInert(page, script)
        assert.isBelow(page.length, 50_000, "a huge line is quoted, not copied")
        if (unreadable > 0) assert.include(page, "line 1: unreadable")
        else assert.include(page, "No runs in this source")
      }
    }).pipe(Effect.scoped), 60_000)

  it.effect("arguments nested 20,000 arrays deep (a 40 KB line): the run's page says so, not a 500", () =>
    Effect.gen(function*() {
      const file = join(dir, "deep.jsonl")
      const stamp = `"runId":"deep","threadId":"t"`
      const deep = `${"[".repeat(20_000)}${"]".repeat(20_000)}`
      writeFileSync(file, `{"_tag":"agent.turn_started",${stamp},"sequence":0,"timestamp":0,"turn":0,"advertised":[]}\n{"_tag":"tool.started",${stamp},"sequence":1,"timestamp":1,"toolCallId":"k","toolName":"t","attempt":1,"arguments":${deep}}\n`)
      const { url } = yield* Server.serve(Sources.jsonl(file))
      const response = yield* get(`${url}/run?id=deep`)
      assert.strictEqual(response.status, 200)
      const page = yield* text(response)
      assert.include(page, "(nested too deeply to show)")
      assertInert(page, ownScript())
    }).pipe(Effect.scoped))

  it.effect("a SQLite file whose tinyagents_receipts is foreign (NULL, a number, a BLOB, not JSON): those rows unreadable; a corrupt SQLite file: a clear error", () =>
    Effect.gen(function*() {
      const db = join(dir, "foreign.db")
      yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* sql`CREATE TABLE tinyagents_receipts (receipt, started_at, emit_order)`
        yield* sql`INSERT INTO tinyagents_receipts VALUES (NULL, 1, 1), (42, 2, 2), (X'3c696d67', 3, 3), (${hostile}, 4, 4)`
      }).pipe(Effect.provide(SqliteClient.layer({ filename: db })))
      const source = yield* Sources.open(db, { allowDecisions: false })
      assert.strictEqual(source.kind, "audit")
      const { inspection } = yield* source.read
      assert.deepStrictEqual(inspection.unreadable.map((u) => u.line), [1, 2, 3, 4])
      assert.match(inspection.unreadable[0]!.reason, /NULL/)
      const { url } = yield* Server.serve(source)
      const response = yield* get(`${url}/`)
      assert.strictEqual(response.status, 200)
      assertInert(yield* text(response), ownScript())
      // no receipt column at all: the page says it cannot read the source (500, one line)
      const bare = join(dir, "bare.db")
      yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* sql`CREATE TABLE tinyagents_receipts (x)`
      }).pipe(Effect.provide(SqliteClient.layer({ filename: bare })))
      const served = yield* Server.serve(yield* Sources.open(bare, { allowDecisions: false }))
      const failed = yield* get(`${served.url}/`)
      assert.strictEqual(failed.status, 500)
      assert.include(yield* text(failed), "cannot read the audit database")
      // the SQLite header, then garbage
      const corrupt = join(dir, "corrupt.db")
      writeFileSync(corrupt, Buffer.concat([Buffer.from("SQLite format 3\u0000"), Buffer.alloc(4096, 0xab)]))
      assert.match((yield* Effect.flip(Sources.open(corrupt, { allowDecisions: false }))).detail, /^cannot open .*corrupt\.db: /)
    }).pipe(Effect.scoped))
})

describe("decisions on a real journal", () => {
  it.effect("an unknown workflow, run or call, and a workflow name that is markup: a refusal on the page (303, ok=0), never a 500", () =>
    Effect.gen(function*() {
      const filename = join(dir, "decide.db")
      const source = Sources.journal({ _tag: "Sqlite", filename, given: "decide.db" }, { allowDecisions: true })
      const { url } = yield* Server.serve(source)
      const post = (fields: Record<string, string>) =>
        get(`${url}/decide`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded", origin: url }, body: new URLSearchParams(fields).toString() })
      for (
        const fields of [
          { workflow: "mailer", run: "nope", call: "c1", decision: "approve" },
          { workflow: hostile, run: hostile, call: hostile, decision: "deny", reason: hostile },
          { workflow: hostile, run: hostile, call: hostile, question: "1", decision: "answer", answer: "{}" },
          { workflow: hostile, run: hostile, call: hostile, question: "1", decision: "decline" },
          { workflow: hostile, run: hostile, decision: "cancel" }
        ]
      ) {
        const response = yield* post(fields)
        assert.strictEqual(response.status, 303, JSON.stringify(fields))
        const location = new URL(response.headers.get("location")!, url)
        assert.strictEqual(location.searchParams.get("ok"), "0", location.searchParams.get("flash") ?? "")
        // the refusal, shown on the page it leads to, is text
        const page = yield* text(yield* get(location.toString()))
        assertInert(page, ownScript())
      }
    }).pipe(Effect.scoped), 60_000)
})
