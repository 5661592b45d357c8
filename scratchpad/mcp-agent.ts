// An agent on an MCP server's tools under tinyagents' consent and audit middleware (scripted model, offline): the
// filesystem reference server confined to a temporary directory. The model lists the directory, reads a file, is
// refused an overwrite by an approval rule, reads the refusal, and writes a new file instead, which a rule approves.
import { Effect } from "effect"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { Agent, Approval, ChatModel, middleware, ToolResult, ToolServices } from "tinyagents"
import { McpConnect } from "tinyagents/mcp"
const root = mkdtempSync(join(tmpdir(), "mcp-agent-"))
writeFileSync(join(root, "notes.txt"), "buy milk\n")
writeFileSync(join(root, "todo.md"), "call the plumber\n")
const server = fileURLToPath(import.meta.resolve("@modelcontextprotocol/server-filesystem/dist/index.js"))
const results = (request: ChatModel.Request) => request.messages.flatMap((m) => m.role === "tool" ? m.results : [])
const read = (request: ChatModel.Request, id: string) => ToolResult.textOf(results(request).find((r) => r.toolCallId === id)!)
const model = ChatModel.scripted([
  ChatModel.callTools([["c1", "list_directory", { path: root }], ["c2", "read_text_file", { path: join(root, "notes.txt") }]]),
  (request) => ChatModel.callTools([["c3", "write_file", { path: join(root, "notes.txt"), content: `${read(request, "c2").trim()}, eggs\n` }]]),
  (request) => read(request, "c3").includes("not approved") // the model reads the refusal and writes a new file instead
    ? ChatModel.callTools([["c4", "write_file", { path: join(root, "shopping.txt"), content: "buy milk, eggs\n" }]])
    : ChatModel.answer("Added eggs to notes.txt."),
  (request) => ChatModel.answer(`Of ${read(request, "c1").split("\n").map((l) => l.replace("[FILE] ", "")).sort().join(" and ")}, ` +
    `notes.txt is kept as it was (${read(request, "c3").split(": ").at(-1)}); the list with eggs is in shopping.txt.`)
])
const approval = Approval.layerRules([ // the first matching rule decides; no match denies
  { name: "keep-notes", match: (r) => (r.arguments as { path: string }).path.endsWith("/notes.txt"), decide: "deny", reason: "notes.txt is the user's" },
  { name: "new-files", match: (r) => r.toolName === "write_file", decide: "approve" }
])
const receipts: Array<middleware.AuditLog.Receipt> = []
const program = Effect.gen(function*() {
  const files = yield* McpConnect.stdio({ command: process.execPath, args: [server, root], name: "files" }) // closed with the scope
  const tools = yield* files.registry
  console.log("titles:", ["list_directory", "read_text_file", "write_file"].map((name) => tools.get(name)!.spec.title).join(", "))
  const run = yield* Agent.run({
    messages: [{ role: "user", content: "Add eggs to my shopping notes." }],
    tools,
    middleware: middleware.stack(
      middleware.auditLog((receipt) => receipts.push(receipt)), // outermost: a receipt for every call and decision
      McpConnect.middleware, // names the server also on receipts of calls refused before they reach it
      middleware.consent({ when: (inv) => inv.spec.safety.access !== "read" }) // reads run; writes ask Approval
    )
  })
  console.log(`answer (${run.reason}, ${run.turns} turns): ${run.text}`)
  for (const r of receipts.toSorted((a, b) => a.callId.localeCompare(b.callId))) { // parallel calls finish in any order
    const consent = r.audit.consent === undefined ? "" : ` ${r.audit.consent.decision} by ${r.audit.consent.decidedBy}`
    console.log(`${r.callId} ${r.tool} ${r.status} mcpServer=${r.audit.metadata?.["mcpServer"]}${consent}${r.error === undefined ? "" : `: ${r.error}`}`)
  }
  for (const file of ["notes.txt", "shopping.txt"]) console.log(`${file}: ${JSON.stringify(readFileSync(join(root, file), "utf8"))}`)
})
await Effect.runPromise(program.pipe(Effect.scoped, Effect.provide([model, approval, ToolServices.layerTest({ runId: "mcp-agent" })]),
  Effect.ensuring(Effect.sync(() => rmSync(root, { recursive: true, force: true })))))
