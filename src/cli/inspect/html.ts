/**
 * The inspector's pages as HTML text: the runs list, and a run's timeline (turns, one bar per tool
 * call, nested runs as nested rows, a call's details) with, for a durable run, its journal rows,
 * pending approvals and cancel. Server-rendered, every value escaped; a small inline script reloads
 * the page's content when the source changes (Server-Sent Events). Nothing is fetched from elsewhere.
 */
import { createHash } from "node:crypto"
import * as AnswerForm from "./answerForm.ts"
import * as Model from "./model.ts"
import type { DurableRun, Snapshot } from "./sources.ts"

/** Calls shown on one page of a run's timeline. */
export const callsPerPage = 200

const escapes: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", "\"": "&quot;", "'": "&#39;" }

/** `text` safe inside HTML text and attribute values. */
export const escape = (text: string): string => text.replace(/[&<>"']/g, (c) => escapes[c]!)

/** Escaped, with the redaction markers (`[redacted]`, `<redacted>`) shown as such, never unmasked. */
const shown = (text: string): string =>
  escape(text).replace(/\[redacted\]|&lt;redacted&gt;/g, (marker) => `<span class="redacted" title="redacted in the events">${marker}</span>`)

const stringify = Model.stringify

const json = (value: unknown): string => {
  if (typeof value === "string") {
    try {
      return stringify(JSON.parse(value), 2)
    } catch {
      return value
    }
  }
  return stringify(value, 2)
}

const ms = (n: number | undefined): string => n === undefined ? "" : n < 1000 ? `${Math.round(n)} ms` : `${(n / 1000).toFixed(2)} s`

const time = (at: number): string => new Date(at).toISOString().replace("T", " ").replace("Z", "")

const stateLabels: Record<Model.CallState, string> = {
  queued: "queued",
  awaiting_approval: "awaiting approval",
  awaiting_answer: "awaiting answer",
  running: "running",
  retrying: "retrying",
  progress: "progress",
  completed: "completed",
  error: "error (repair)",
  failed: "failed",
  rejected: "refused"
}

const style = `
:root { color-scheme: light; --fg:#1d232b; --muted:#5d6875; --line:#dde2e8; --bg:#f7f8fa; --card:#fff; --accent:#2f6fdf }
* { box-sizing: border-box }
body { margin:0; font:14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; color:var(--fg); background:var(--bg) }
header.top { background:#18202b; color:#e8edf3; padding:10px 20px; display:flex; gap:16px; align-items:baseline }
header.top a { color:#fff; text-decoration:none; font-weight:600 }
header.top .src { color:#a9b4c2; font-family:ui-monospace, "DejaVu Sans Mono", monospace; font-size:12px }
header.top .live { margin-left:auto; font-size:12px; color:#8fd19e }
main { padding:16px 20px; max-width:1400px }
h1 { font-size:20px; margin:4px 0 10px } h2 { font-size:16px; margin:18px 0 8px }
a { color:var(--accent) }
table { border-collapse:collapse; width:100%; background:var(--card); border:1px solid var(--line) }
th, td { text-align:left; padding:6px 10px; border-bottom:1px solid var(--line); vertical-align:top }
th { background:#eef1f5; font-weight:600; font-size:12px; color:var(--muted); text-transform:uppercase; letter-spacing:.03em }
code, pre, .mono { font-family:ui-monospace, "DejaVu Sans Mono", monospace; font-size:12.5px }
pre { background:#f2f4f7; border:1px solid var(--line); padding:8px; margin:4px 0; white-space:pre-wrap; word-break:break-word; max-height:320px; overflow:auto }
.meta { color:var(--muted); display:flex; flex-wrap:wrap; gap:14px; margin-bottom:10px }
.pill { display:inline-block; padding:1px 8px; border-radius:10px; font-size:12px; background:#e7ebf0; color:#334 }
.redacted { background:#2b2f36; color:#f4d35e; border-radius:3px; padding:0 3px }
.turn { background:var(--card); border:1px solid var(--line); border-radius:6px; margin:10px 0; padding:8px 12px }
.turn > .head { display:flex; gap:12px; align-items:baseline; flex-wrap:wrap }
.turn > .head b { font-size:14px }
.text { white-space:pre-wrap; margin:6px 0; padding:6px 10px; border-left:3px solid #9bb7ef; background:#f5f8ff }
details.call { border-top:1px solid var(--line) }
details.call > summary { list-style:none; cursor:pointer; display:grid; grid-template-columns: 240px 150px 80px 1fr; gap:10px; align-items:center; padding:4px 0 }
details.call > summary::-webkit-details-marker { display:none }
details.call > summary:hover { background:#f3f6fa }
details.call .name { overflow:hidden; text-overflow:ellipsis; white-space:nowrap }
details.call .name small { color:var(--muted) }
.track { position:relative; height:14px; background:#eef1f4; border-radius:3px }
.bar { position:absolute; top:0; height:14px; border-radius:3px; min-width:3px }
.s-completed .bar { background:#3aa76d } .s-error .bar { background:#e0a030 } .s-failed .bar { background:#d64545 }
.s-rejected .bar { background:#b04ad6 } .s-running .bar, .s-progress .bar { background:#2f6fdf } .s-retrying .bar { background:#e07a30 }
.s-queued .bar, .s-awaiting_approval .bar, .s-awaiting_answer .bar { background:repeating-linear-gradient(45deg,#9aa5b1,#9aa5b1 4px,#c3cad2 4px,#c3cad2 8px) }
.state { font-size:12px; font-weight:600 }
.s-completed .state { color:#23804f } .s-error .state { color:#a8700a } .s-failed .state { color:#b22d2d } .s-rejected .state { color:#8a2fb0 }
.s-running .state, .s-progress .state { color:#2f6fdf } .s-retrying .state { color:#c0601a } .s-queued .state, .s-awaiting_approval .state, .s-awaiting_answer .state { color:#5d6875 }
.detail { padding:4px 0 10px 12px; display:grid; grid-template-columns: 150px 1fr; gap:4px 12px }
.detail > .k { color:var(--muted); font-size:12px; padding-top:6px }
.repair { background:#fff5e0; border-color:#f0cf8a }
.nested { margin-left:28px; border-left:3px solid #c9d6ee; padding-left:10px }
.legend { display:flex; gap:12px; flex-wrap:wrap; font-size:12px; color:var(--muted) }
.legend span.swatch { display:inline-block; width:12px; height:12px; border-radius:2px; vertical-align:-2px; margin-right:4px }
nav.pages { margin:10px 0; display:flex; gap:10px; align-items:center }
.unreadable td { color:#8a2a2a }
.panel { background:var(--card); border:1px solid var(--line); border-radius:6px; padding:10px 14px; margin:10px 0 }
button { font:inherit; padding:3px 10px; border-radius:4px; border:1px solid #9aa5b1; background:#fff; cursor:pointer }
button.approve, button.choice, button.answer { border-color:#3aa76d; color:#23804f } button.decline { border-color:#d64545; color:#b22d2d }
form.answer-fields { display:grid; grid-template-columns: max-content 1fr; gap:4px 8px; align-items:center; margin:6px 0 }
form.answer-fields .submit { grid-column: 2 }
textarea { font-family:ui-monospace, "DejaVu Sans Mono", monospace; font-size:12.5px; width:100%; min-height:60px } button.deny, button.cancel { border-color:#d64545; color:#b22d2d }
button:disabled { opacity:.45; cursor:not-allowed }
.flash { padding:8px 12px; border-radius:4px; background:#e8f5ec; border:1px solid #a8d8b8; margin:8px 0 }
.flash.bad { background:#fdecec; border-color:#f0b4b4 }
`

/**
 * Reloads the page's `<main>` when the source changes (SSE), keeping open details open; not while a
 * person is filling one of its forms (a field focused or not empty: a reason, an answer), which
 * would lose what they typed: then it waits, and reloads once the form is left empty.
 */
const script = `
(() => {
  const main = () => document.querySelector("main");
  let pending = false;
  const filling = () => [...main().querySelectorAll("input:not([type=hidden]), textarea, select")]
    .some((field) => field === document.activeElement || field.value !== "");
  const refresh = async () => {
    if (filling()) { setTimeout(refresh, 1000); return; }
    pending = false;
    const open = [...document.querySelectorAll("details[open]")].map((d) => d.id);
    const response = await fetch(location.href, { headers: { "x-inspector-refresh": "1" } });
    if (!response.ok) return;
    const doc = new DOMParser().parseFromString(await response.text(), "text/html");
    const next = doc.querySelector("main");
    if (next === null) return;
    main().replaceWith(next);
    for (const id of open) { const d = document.getElementById(id); if (d) d.open = true; }
    document.body.dataset.refreshed = String(Number(document.body.dataset.refreshed || 0) + 1);
  };
  const source = new EventSource("/events");
  source.onmessage = () => { if (!pending) { pending = true; setTimeout(refresh, 150); } };
  source.onopen = () => { const l = document.querySelector(".live"); if (l) l.textContent = "● watching for changes"; };
})();
`

/**
 * The pages' `Content-Security-Policy`: their own inline script only (by its hash), so markup that
 * got past the escaping would run nothing; fetches, the events stream and forms to the inspector
 * only; no page of it framed by another site (a click on Approve tricked through a frame).
 */
export const contentSecurityPolicy = `default-src 'none'; script-src 'sha256-${
  createHash("sha256").update(script).digest("base64")
}'; style-src 'unsafe-inline'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'`

const page = (title: string, source: { readonly kind: string; readonly label: string }, body: string): string =>
  `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escape(title)} · tinyagents inspect</title><style>${style}</style></head>
<body><header class="top"><a href="/">tinyagents inspect</a><span class="src">${escape(source.kind)}: ${escape(source.label)}</span><span class="live"></span></header>
<main>${body}</main><script>${script}</script></body></html>`

const runLink = (run: Model.Run): string => `/run?id=${encodeURIComponent(run.id)}`

const usageText = (usage: { readonly inputTokens: number; readonly outputTokens: number }): string =>
  `${usage.inputTokens} in / ${usage.outputTokens} out tokens`

const countsText = (run: Model.Run): string =>
  Object.entries(Model.stateCounts(run)).map(([state, n]) => `${n} ${stateLabels[state as Model.CallState]}`).join(", ")

/** The runs list: every run (nested ones under their parent), their status, calls and usage; then the unreadable lines. */
export const runsPage = (snapshot: Snapshot, source: { readonly kind: string; readonly label: string }): string => {
  const { inspection } = snapshot
  const rows: Array<string> = []
  const add = (run: Model.Run, level: number) => {
    const durable = snapshot.durable?.get(run.id)
    const status = durable?.status ?? Model.statusOf(run)
    rows.push(`<tr class="run" data-run="${escape(run.id)}"><td style="padding-left:${10 + level * 22}px">${level > 0 ? "↳ " : ""}<a href="${runLink(run)}">${escape(run.id)}</a>${durable === undefined ? "" : ` <span class="pill">${escape(durable.workflow)}</span>`}</td>
<td>${escape(status)}</td><td>${run.turns.length}</td><td>${run.calls.length}${run.calls.length === 0 ? "" : ` <small>(${escape(countsText(run))})</small>`}</td>
<td>${escape(usageText(Model.usageOf(run)))}</td><td>${escape(time(run.firstAt))}</td><td>${escape(ms(run.lastAt - run.firstAt))}</td></tr>`)
    for (const id of run.children) {
      const child = inspection.byId.get(id)
      if (child !== undefined) add(child, level + 1)
    }
  }
  for (const run of Model.topLevel(inspection)) add(run, 0)
  // durable runs with no events journaled yet (queued)
  for (const durable of snapshot.durable?.values() ?? []) {
    if (inspection.byId.has(durable.runId)) continue
    rows.push(`<tr class="run" data-run="${escape(durable.runId)}"><td><a href="/run?id=${encodeURIComponent(durable.runId)}">${escape(durable.runId)}</a> <span class="pill">${escape(durable.workflow)}</span></td><td>${escape(durable.status)}</td><td>0</td><td>0</td><td></td><td></td><td></td></tr>`)
  }
  const runs = rows.length === 0
    ? `<p>No runs in this source${source.kind === "live" ? " yet: they appear as the application runs them" : ""}.</p>`
    : `<table><thead><tr><th>Run</th><th>Status</th><th>Turns</th><th>Tool calls</th><th>Usage</th><th>Started (UTC)</th><th>Duration</th></tr></thead><tbody>${rows.join("\n")}</tbody></table>`
  return page("Runs", source, `<h1>Runs</h1>${runs}${unreadableTable(inspection)}`)
}

const unreadableTable = (inspection: Model.Inspection): string =>
  inspection.unreadable.length === 0
    ? ""
    : `<h2>Unreadable lines (${inspection.unreadable.length})</h2><p class="meta">Lines that are not events this version reads (an older or foreign format, or damaged): shown, never read.</p>
<table class="unreadable"><thead><tr><th>Line</th><th>Why</th><th>Text</th></tr></thead><tbody>${
      inspection.unreadable.slice(0, 500).map((u) => `<tr><td>line ${u.line}: unreadable</td><td>${escape(u.reason)}</td><td><code>${escape(u.text)}</code></td></tr>`).join("")
    }</tbody></table>`

const field = (key: string, value: string, extra = ""): string => `<div class="k">${escape(key)}</div><div${extra}>${value}</div>`

const callDetails = (call: Model.Call): string => {
  const parts: Array<string> = []
  parts.push(field("call id", `<code>${escape(call.id)}</code> · attempt ${call.attempt}${call.startedAt === undefined ? "" : ` · started ${escape(time(call.startedAt))}`}`))
  if (call.arguments !== undefined) parts.push(field("arguments", `<pre>${shown(json(call.arguments))}</pre>`))
  if (call.modelArguments !== undefined && (call.arguments === undefined || json(call.modelArguments) !== json(call.arguments))) {
    parts.push(field("as the model sent them", `<pre>${shown(json(call.modelArguments))}</pre>`))
  }
  if (call.output !== undefined) parts.push(field(call.state === "error" ? "result (error)" : "result", `<pre${call.state === "error" ? ` class="repair"` : ""}>${shown(call.output)}</pre>`))
  if (call.errorMessage !== undefined) {
    const label = call.state === "rejected" ? "refused" : call.state === "error" ? "repair message" : "error"
    parts.push(field(label, `<pre class="repair">${call.errorTag === undefined ? "" : `<b>${escape(call.errorTag)}</b>: `}${shown(call.errorMessage)}</pre>${call.reason === undefined ? "" : `<small>${escape(call.reason)}${call.disposition === undefined ? "" : `, ${escape(call.disposition)}`}</small>`}`))
  }
  for (const retry of call.retries) parts.push(field(`retry (attempt ${retry.attempt})`, `in ${escape(ms(retry.delay))}: ${shown(retry.message)}`))
  if (call.progress !== undefined) {
    const p = call.progress
    const bits = [
      p.message === undefined ? undefined : shown(p.message),
      p.fraction === undefined ? undefined : `${Math.round(p.fraction * 100)}%`,
      p.count === undefined ? undefined : `${p.count}${p.total === undefined ? "" : ` / ${p.total}`}`,
      `${p.reports} report(s)`
    ].filter((b) => b !== undefined)
    parts.push(field("progress", `${bits.join(" · ")}${p.chunks === "" ? "" : `<pre>${shown(p.chunks)}</pre>`}`))
  }
  for (const q of call.questions) {
    const choices = q.choices === undefined ? "" : `<br><small>choices: ${q.choices.map((c) => `<code>${shown(stringify(c))}</code>`).join(" ")}</small>`
    const end = q.outcome === undefined
      ? "waiting for an answer"
      : `${escape(q.outcome)}${q.answer === undefined ? "" : ` <code>${shown(stringify(q.answer))}</code>`}${q.reason === undefined ? "" : ` (${shown(q.reason)})`}${
        q.answeredBy === undefined ? "" : ` by ${shown(q.answeredBy)}`
      }${q.elapsed === undefined ? "" : ` · ${escape(ms(q.elapsed))}`}`
    parts.push(field(`question ${q.number}`, `<div class="question" data-question="${q.number}">${shown(q.message)}${choices}<br>→ ${end}</div>`))
  }
  if (call.artifacts.length > 0) parts.push(field("artifacts", call.artifacts.map((a) => `<code>${escape(a)}</code>`).join("<br>")))
  for (const audit of call.audits) parts.push(field("audit", `<pre>${shown(json(audit))}</pre>`))
  const consent = consentOf(call.receipt?.audit) ?? call.audits.map(consentOf).find((c) => c !== undefined)
  if (consent !== undefined) parts.push(field("consent", `${shown(consent.decision)} by ${shown(consent.decidedBy)}`))
  if (call.receipt !== undefined) parts.push(field("receipt", `<pre>${shown(json(call.receipt))}</pre>`))
  return `<div class="detail">${parts.join("")}</div>`
}

/** The consent decision an audit records (`consent` middleware), when it has one. */
const consentOf = (audit: unknown): { readonly decision: string; readonly decidedBy: string } | undefined => {
  const consent = typeof audit === "object" && audit !== null ? (audit as { readonly consent?: unknown }).consent : undefined
  if (typeof consent !== "object" || consent === null) return undefined
  const { decidedBy, decision } = consent as { readonly decision?: unknown; readonly decidedBy?: unknown }
  return typeof decision === "string" ? { decision, decidedBy: typeof decidedBy === "string" ? decidedBy : "?" } : undefined
}

interface Span {
  readonly start: number
  readonly length: number
}

const callRow = (call: Model.Call, span: Span, inspection: Model.Inspection, runId: string, depth: number): string => {
  const start = call.startedAt ?? call.firstAt
  const end = call.endedAt ?? (Model.terminal.has(call.state) ? start : span.start + span.length)
  const left = span.length <= 0 ? 0 : Math.max(0, Math.min(100, ((start - span.start) / span.length) * 100))
  const width = span.length <= 0 ? 100 : Math.max(0.4, Math.min(100 - left, ((end - start) / span.length) * 100))
  const duration = call.elapsed ?? (call.endedAt !== undefined && call.startedAt !== undefined ? call.endedAt - call.startedAt : undefined)
  const progress = call.state === "progress" && call.progress?.fraction !== undefined ? ` ${Math.round(call.progress.fraction * 100)}%` : ""
  const nested = call.children.map((id) => {
    const child = inspection.byId.get(id)
    if (child === undefined || depth > 3) return ""
    const shownCalls = child.calls.slice(0, 50)
    return `<div class="nested" data-nested-run="${escape(child.id)}"><div class="meta"><span>nested run <a href="${runLink(child)}">${escape(child.id)}</a></span><span>${escape(Model.statusOf(child))}</span><span>${child.calls.length} call(s)</span><span>${escape(usageText(Model.usageOf(child)))}</span></div>${
      shownCalls.map((c) => callRow(c, span, inspection, child.id, depth + 1)).join("")
    }${child.calls.length > shownCalls.length ? `<p><a href="${runLink(child)}">${child.calls.length - shownCalls.length} more call(s)…</a></p>` : ""}</div>`
  }).join("")
  return `<details class="call s-${call.state}" id="call-${escape(runId)}-${escape(call.key)}" data-call="${escape(call.id)}" data-state="${call.state}">
<summary><span class="name"><b>${escape(call.toolName)}</b> <small>${escape(call.id)}</small></span><span class="state">${escape(stateLabels[call.state])}${progress}${call.retries.length > 0 && call.state !== "retrying" ? ` ↻${call.retries.length}` : ""}</span><span class="mono">${escape(ms(duration))}</span><span class="track"><span class="bar" style="left:${left.toFixed(2)}%;width:${width.toFixed(2)}%"></span></span></summary>
${callDetails(call)}</details>${nested}`
}

const legend = `<div class="legend">${
  (["queued", "awaiting_approval", "awaiting_answer", "running", "progress", "retrying", "completed", "error", "failed", "rejected"] as const).map((s) =>
    `<span class="s-${s}"><span class="swatch bar" style="position:static;display:inline-block"></span>${stateLabels[s]}</span>`
  ).join("")
}</div>`

/** A field of an answer schema in words: its name, type or values, and whether it is required. */
const schemaFields = (schema: unknown): string => {
  const properties = typeof schema === "object" && schema !== null ? (schema as { readonly properties?: unknown }).properties : undefined
  const required = new Set((schema as { readonly required?: ReadonlyArray<string> } | undefined)?.required ?? [])
  if (typeof properties !== "object" || properties === null) return ""
  return Object.entries(properties).map(([name, property]) => {
    const p = property as { readonly type?: unknown; readonly enum?: ReadonlyArray<unknown>; readonly anyOf?: ReadonlyArray<{ readonly type?: unknown }> }
    const type = p.enum !== undefined
      ? p.enum.map((v) => stringify(v)).join(" | ")
      : p.anyOf !== undefined
      ? p.anyOf.map((m) => String(m.type ?? "…")).join(" | ")
      : String(p.type ?? "any")
    return `<code>${escape(name)}</code>: ${escape(type)}${required.has(name) ? "" : " <small>(optional)</small>"}`
  }).join("<br>")
}

/** A choice's label: the value of a one-field answer, else the answer's JSON. */
const choiceLabel = (choice: unknown): string => {
  if (typeof choice === "object" && choice !== null && !Array.isArray(choice)) {
    const values = Object.values(choice)
    if (values.length === 1 && ["string", "number", "boolean"].includes(typeof values[0])) return String(values[0])
  }
  return stringify(choice)
}

const hidden = (durable: DurableRun, callId: string, question?: number): string =>
  `<input type="hidden" name="workflow" value="${escape(durable.workflow)}"><input type="hidden" name="run" value="${escape(durable.runId)}"><input type="hidden" name="call" value="${escape(callId)}">${
    question === undefined ? "" : `<input type="hidden" name="question" value="${question}">`
  }`

/** The answer's inputs: a form of the flat schema's fields, else a JSON textarea. */
const answerInputs = (durable: DurableRun, q: DurableRun["questions"][number], disabled: string): string => {
  const fields = AnswerForm.fieldsOf(q.schema)
  const head = `<input type="hidden" name="decision" value="${fields === undefined ? "answer" : "fields"}">${hidden(durable, q.callId, q.question)}`
  if (fields === undefined) {
    return `<form method="post" action="/decide" class="answer-json">${head}<textarea name="answer" placeholder="the answer, a JSON object"${disabled}></textarea><button class="answer"${disabled}>Answer</button></form>`
  }
  const inputs = fields.map((f) => {
    const name = escape(AnswerForm.inputName(f.name))
    const input = f.kind === "string"
      ? `<input name="${name}"${disabled}>`
      : f.kind === "number"
      ? `<input name="${name}" type="number" step="${f.integer ? "1" : "any"}"${disabled}>`
      : `<select name="${name}"${disabled}><option value="">${f.required ? "choose…" : "(none)"}</option>${
        f.options.map((o) => `<option value="${escape(stringify(o))}">${shown(String(o))}</option>`).join("")
      }</select>`
    return `<label>${escape(f.name)}${f.required ? "" : " <small>(optional)</small>"}</label>${input}`
  }).join("")
  return `<form method="post" action="/decide" class="answer-fields">${head}<input type="hidden" name="fields" value="${escape(AnswerForm.specOf(fields))}">${inputs}<span class="submit"><button class="answer"${disabled}>Answer</button></span></form>`
}

const questionsTable = (durable: DurableRun, disabled: string): string =>
  `<table><thead><tr><th>Call</th><th>Tool</th><th>Question</th><th>Answer's fields</th><th>Answer</th></tr></thead><tbody>${
      durable.questions.map((q) => {
        const choices = q.choices === undefined || !Array.isArray(q.choices)
          ? ""
          : `<form method="post" action="/decide" class="choices" style="display:flex;gap:6px;flex-wrap:wrap;margin-bottom:6px"><input type="hidden" name="decision" value="answer">${hidden(durable, q.callId, q.question)}${
            (q.choices as ReadonlyArray<unknown>).map((c) => `<button class="choice" name="answer" value="${escape(stringify(c))}"${disabled}>${shown(choiceLabel(c))}</button>`).join("")
          }</form>`
        const decline = `<form method="post" action="/decide" class="decline" style="display:flex;gap:6px;margin-top:6px"><input type="hidden" name="decision" value="decline">${hidden(durable, q.callId, q.question)}<input name="reason" placeholder="reason (decline)"${disabled}><button class="decline"${disabled}>Decline</button></form>`
        return `<tr class="question" data-call="${escape(q.callId)}" data-question="${q.question}"><td><code>${escape(q.callId)}</code> #${q.question}</td><td>${escape(q.toolName)}</td><td class="message">${shown(q.message)}</td>
<td>${schemaFields(q.schema)}<details><summary><small>JSON Schema</small></summary><pre>${shown(json(q.schema))}</pre></details></td><td>${choices}${answerInputs(durable, q, disabled)}${decline}</td></tr>`
      }).join("")
  }</tbody></table>`

const durablePanel = (durable: DurableRun, allowDecisions: boolean): string => {
  const disabled = allowDecisions ? "" : " disabled"
  const hint = allowDecisions ? "" : `<p class="meta">Read-only: start the inspector with <code>--allow-decisions</code> to approve, deny, answer or cancel from this page.</p>`
  const pending = durable.pending.length === 0
    ? "<p>No call waits for approval.</p>"
    : `<table><thead><tr><th>Call</th><th>Tool</th><th>Arguments</th><th>Decide</th></tr></thead><tbody>${
      durable.pending.map((p) => `<tr class="pending" data-call="${escape(p.callId)}"><td><code>${escape(p.callId)}</code></td><td>${escape(p.toolName)}</td><td><pre>${shown(json(p.arguments))}</pre></td>
<td><form method="post" action="/decide" style="display:flex;gap:6px;flex-wrap:wrap"><input type="hidden" name="workflow" value="${escape(durable.workflow)}"><input type="hidden" name="run" value="${escape(durable.runId)}"><input type="hidden" name="call" value="${escape(p.callId)}">
<button class="approve" name="decision" value="approve"${disabled}>Approve</button><input name="reason" placeholder="reason (deny)"${disabled}><button class="deny" name="decision" value="deny"${disabled}>Deny</button></form></td></tr>`).join("")
    }</tbody></table>`
  const cancel = durable.open
    ? `<form method="post" action="/decide" style="margin-top:8px"><input type="hidden" name="workflow" value="${escape(durable.workflow)}"><input type="hidden" name="run" value="${escape(durable.runId)}"><input name="reason" placeholder="reason (cancel)"${disabled}> <button class="cancel" name="decision" value="cancel"${disabled}>Cancel run</button></form>`
    : ""
  const rows = durable.rows.slice(-500)
  const journal = `<details class="journal"><summary>Journal: ${durable.rows.length} event row(s)${rows.length < durable.rows.length ? " (the last 500)" : ""}</summary><table><thead><tr><th>Seq</th><th>Row</th></tr></thead><tbody>${
    rows.map((r) => `<tr><td>${r.seq}</td><td><code>${shown(r.text.length > 600 ? `${r.text.slice(0, 600)}…` : r.text)}</code></td></tr>`).join("")
  }</tbody></table></details>`
  return `<div class="panel durable"><h2 style="margin-top:0">Durable run <span class="pill">${escape(durable.workflow)}</span> <span class="pill">${escape(durable.status)}</span></h2>${hint}${durable.questions.length > 0 && durable.pending.length === 0 ? "" : `<h2>Pending approvals</h2>${pending}`}${
    durable.questions.length === 0 ? "" : `<h2>Open questions</h2>${questionsTable(durable, disabled)}`
  }${cancel}${journal}</div>`
}

/** A run's page: its summary, durable panel, and one page of its timeline (turns and calls). */
export const runPage = (
  snapshot: Snapshot,
  source: { readonly kind: string; readonly label: string },
  runId: string,
  options: { readonly page: number; readonly allowDecisions: boolean; readonly flash?: { readonly ok: boolean; readonly text: string } | undefined }
): string | undefined => {
  const { inspection } = snapshot
  const run = inspection.byId.get(runId)
  const durable = snapshot.durable?.get(runId)
  if (run === undefined && durable === undefined) return undefined
  const flash = options.flash === undefined ? "" : `<div class="flash${options.flash.ok ? "" : " bad"}">${escape(options.flash.text)}</div>`
  const panel = durable === undefined ? "" : durablePanel(durable, options.allowDecisions)
  if (run === undefined) return page(runId, source, `<h1>Run ${escape(runId)}</h1>${flash}${panel}<p>No events journaled yet.</p>`)
  const total = run.calls.length
  const pages = Math.max(1, Math.ceil(total / callsPerPage))
  const current = Math.min(Math.max(1, options.page), pages)
  const from = (current - 1) * callsPerPage
  const to = Math.min(total, from + callsPerPage)
  const span: Span = { start: run.firstAt, length: Math.max(1, run.lastAt - run.firstAt) }
  const parent = run.parentRunId === undefined ? undefined : inspection.byId.get(run.parentRunId)
  const meta = [
    `status <b>${escape(durable?.status ?? Model.statusOf(run))}</b>`,
    `thread <code>${escape(run.threadId)}</code>`,
    `${run.turns.length} turn(s)`,
    `${total} tool call(s)`,
    escape(usageText(Model.usageOf(run))),
    `started ${escape(time(run.firstAt))} UTC`,
    `duration ${escape(ms(run.lastAt - run.firstAt))}`,
    ...(run.parentRunId === undefined ? [] : [`nested in ${parent === undefined ? `<code>${escape(run.parentRunId)}</code>` : `<a href="${runLink(parent)}">${escape(parent.id)}</a>`}${run.parentCallId === undefined ? "" : ` (call <code>${escape(run.parentCallId)}</code>)`}, depth ${run.depth}`])
  ].map((m) => `<span>${m}</span>`).join("")
  // The page's turns: those with a call in [from, to), and those without calls whose place falls there.
  const turns: Array<string> = []
  let before = 0
  for (const turn of run.turns) {
    const first = before
    before += turn.calls.length
    const inPage = turn.calls.length === 0 ? (first >= from && first < to) || (first === total && current === pages) : first < to && before > from
    if (!inPage) continue
    const keys = turn.calls.slice(Math.max(0, from - first), Math.max(0, to - first))
    const calls = keys.map((key) => callRow(run.callsByKey.get(key)!, span, inspection, run.id, 0)).join("")
    const notes = run.notes.filter((n) => n.turn === turn.index).map((n) => `<div class="meta">• ${shown(n.text)}</div>`).join("")
    turns.push(`<section class="turn" data-turn="${turn.index}"><div class="head"><b>Turn ${turn.index}</b>${
      turn.usage === undefined ? "" : `<span class="pill">${escape(usageText(turn.usage))}</span>`
    }<span class="meta" style="margin:0">${turn.calls.length} call(s)${turn.startedAt === undefined ? "" : ` · ${escape(time(turn.startedAt))}`}${turn.advertised.length === 0 ? "" : ` · ${turn.advertised.length} tool(s) advertised`}</span></div>${
      turn.text === "" ? "" : `<div class="text" title="${turn.streamed ? "streamed" : "the model's answer"}">${shown(turn.text)}</div>`
    }${calls}${notes}</section>`)
  }
  const nav = pages === 1
    ? ""
    : `<nav class="pages">${current > 1 ? `<a href="${runLink(run)}&page=${current - 1}">← previous</a>` : ""}<span>calls ${from + 1}–${to} of ${total} · page ${current} of ${pages}</span>${
      current < pages ? `<a href="${runLink(run)}&page=${current + 1}">next →</a>` : ""
    }<form method="get" action="/run" style="display:inline"><input type="hidden" name="id" value="${escape(run.id)}"><input name="page" size="4" placeholder="page"></form></nav>`
  const finished = run.finished === undefined
    ? ""
    : `<div class="panel"><b>Finished</b> · ${escape(run.finished.reason)} after ${run.finished.turns} turn(s) · ${escape(usageText(run.finished.usage))}${run.finished.text === "" ? "" : `<div class="text">${shown(run.finished.text)}</div>`}</div>`
  const children = run.children.length === 0
    ? ""
    : `<p class="meta">Nested runs: ${run.children.map((id) => `<a href="/run?id=${encodeURIComponent(id)}">${escape(id)}</a>`).join(", ")}</p>`
  return page(run.id, source, `<h1>Run ${escape(run.id)}</h1>${flash}<div class="meta">${meta}</div>${children}${panel}${legend}${nav}${turns.join("")}${nav}${current === pages ? finished : ""}`)
}

/** A page saying what went wrong (a source that cannot be read, an unknown run). */
export const errorPage = (source: { readonly kind: string; readonly label: string }, title: string, text: string): string =>
  page(title, source, `<h1>${escape(title)}</h1><div class="flash bad">${escape(text)}</div><p><a href="/">All runs</a></p>`)
