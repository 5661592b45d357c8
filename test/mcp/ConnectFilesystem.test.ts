/**
 * McpConnect against the official `@modelcontextprotocol/server-filesystem`,
 * run as a real subprocess confined to a temporary directory: import,
 * annotations, calls, the server's errors, and local policy applied to its
 * remote tools exactly as to local ones (consent, stage, dryRun, Policy,
 * audit receipts naming the server).
 */
import { mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync, existsSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { Effect, Scope } from "effect"
import { afterAll, describe, expect, it } from "vitest"
import * as Approval from "../../src/governance/Approval.ts"
import { auditLog, consent, dryRun, policy, stack, stage } from "../../src/governance/middleware/index.ts"
import type { Receipt } from "../../src/governance/middleware/AuditLog.ts"
import * as ToolResult from "../../src/contract/ToolResult.ts"
import type { EventLog } from "../../src/runtime/EventSink.ts"
import * as Executor from "../../src/runtime/Executor.ts"
import * as ToolServices from "../../src/runtime/ToolServices.ts"
import { McpConnect } from "../../src/mcp/index.ts"

const server = fileURLToPath(new URL("../../node_modules/@modelcontextprotocol/server-filesystem/dist/index.js", import.meta.url))
const root = realpathSync(mkdtempSync(join(tmpdir(), "tinyagents-mcp-fs-")))
writeFileSync(join(root, "hello.txt"), "hello from the sandbox\n")
/** A 1x1 PNG, a short WAV header and some bytes: what `read_media_file` returns as image, audio and embedded resource. */
const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
writeFileSync(join(root, "dot.png"), Buffer.from(png, "base64"))
writeFileSync(join(root, "tone.wav"), Buffer.from("RIFF\x24\x00\x00\x00WAVEfmt ", "latin1"))
writeFileSync(join(root, "data.bin"), Buffer.from([0, 1, 2, 3, 4, 5]))
afterAll(() => rmSync(root, { recursive: true, force: true }))

const connect = McpConnect.stdio({ command: process.execPath, args: [server, root], name: "filesystem" })

const denyWrites = Approval.layerRules([{ name: "no-writes", match: () => true, decide: "deny", reason: "no writes today" }])

const run = <A, E>(effect: Effect.Effect<A, E, Scope.Scope | ToolServices.Hidden | EventLog | Approval.Approval>) =>
  Effect.runPromise(effect.pipe(Effect.scoped, Effect.provide([ToolServices.layerTest(), denyWrites])))

const call = (id: string, name: string, args: unknown) => ({ id, name, arguments: JSON.stringify(args) })

describe("McpConnect: server-filesystem over stdio (confined to a temporary directory)", () => {
  it("imports its tools with safety from the annotations", () =>
    run(Effect.gen(function*() {
      const connection = yield* connect
      const registry = yield* connection.registry
      expect(registry.names).toEqual(expect.arrayContaining(["read_text_file", "write_file", "edit_file", "list_directory"]))
      expect(registry.get("read_text_file")!.spec.safety).toMatchObject({ access: "read", destructive: false, networked: false })
      expect(registry.get("write_file")!.spec.safety).toEqual({
        access: "mutate",
        idempotent: true,
        networked: false,
        destructive: true,
        tags: ["mcp", "mcp:filesystem"]
      })
      expect(registry.get("create_directory")!.spec.safety).toMatchObject({ access: "write", destructive: false, idempotent: true })
    })))

  it("calls tools and maps the server's errors to repairable results", () =>
    run(Effect.gen(function*() {
      const connection = yield* connect
      const executor = yield* Executor.make(yield* connection.registry)
      const read = yield* executor.run(call("c1", "read_text_file", { path: join(root, "hello.txt") }))
      expect(read.isError).toBe(false)
      expect(ToolResult.textOf(read)).toBe("hello from the sandbox\n")
      const missing = yield* executor.run(call("c2", "read_text_file", { path: join(root, "missing.txt") }))
      expect(missing.isError).toBe(true)
      expect(missing.error?._tag).toBe("ToolFailure")
      expect(missing.error?.disposition).toBe("repair")
      expect(ToolResult.textOf(missing)).toMatch(/^read_text_file: .*ENOENT/)
      const outside = yield* executor.run(call("c3", "read_text_file", { path: "/etc/hostname" }))
      expect(outside.isError).toBe(true)
      expect(ToolResult.textOf(outside)).toContain("Access denied")
      const written = yield* executor.run(call("c4", "write_file", { path: join(root, "new.txt"), content: "x" }))
      expect(written.isError).toBe(false)
      expect(readFileSync(join(root, "new.txt"), "utf8")).toBe("x")
    })))

  it("read_media_file: the model gets the image, audio or resource once, and a short text, not the base64 again", () =>
    run(Effect.gen(function*() {
      const connection = yield* connect
      const executor = yield* Executor.make(yield* connection.registry)
      const image = yield* executor.run(call("m1", "read_media_file", { path: join(root, "dot.png") }))
      expect(image.isError).toBe(false)
      expect(image.content).toEqual([
        ToolResult.text(`{"content":[{"type":"image","data":"[image: image/png, 70 bytes; sent as a block]","mimeType":"image/png"}]}`),
        ToolResult.image(png, "image/png")
      ])
      const audio = yield* executor.run(call("m2", "read_media_file", { path: join(root, "tone.wav") }))
      expect(audio.content[1]).toMatchObject({ type: "audio", mimeType: "audio/wav" })
      expect(ToolResult.textOf(audio)).toContain("[audio: audio/wav, 16 bytes; sent as a block]")
      const binary = yield* executor.run(call("m3", "read_media_file", { path: join(root, "data.bin") }))
      const uri = `file://${join(root, "data.bin")}`
      expect(binary.content[1]).toEqual(ToolResult.resource({ uri, mimeType: "application/octet-stream", blob: "AAECAwQF" }))
      expect(ToolResult.textOf(binary)).toContain(`[resource: ${uri}, application/octet-stream, 6 bytes; sent as a block]`)
      for (const result of [image, audio, binary]) expect(ToolResult.textOf(result).length).toBeLessThan(300)
    })))

  it("consent on a remote destructive tool; receipts name the server", () =>
    run(Effect.gen(function*() {
      const connection = yield* connect
      const receipts: Array<Receipt> = []
      const executor = yield* Executor.make(yield* connection.registry, {
        middleware: stack(
          auditLog((r) => receipts.push(r)),
          McpConnect.middleware,
          consent({ when: (i) => i.spec.safety.destructive === true })
        )
      })
      const target = join(root, "denied.txt")
      const denied = yield* executor.run(call("c1", "write_file", { path: target, content: "no" }))
      expect(denied.error?._tag).toBe("ApprovalDenied")
      expect(existsSync(target)).toBe(false)
      const read = yield* executor.run(call("c2", "read_text_file", { path: join(root, "hello.txt") }))
      expect(read.isError).toBe(false)
      expect(receipts.map((r) => [r.tool, r.status, r.audit.metadata?.mcpServer, r.audit.metadata?.mcpTool])).toEqual([
        ["write_file", "consent_denied", "filesystem", "write_file"],
        ["read_text_file", "ok", "filesystem", "read_text_file"]
      ])
    })))

  it("receipts name the server without McpConnect.middleware for calls that reach it", () =>
    run(Effect.gen(function*() {
      const connection = yield* connect
      const receipts: Array<Receipt> = []
      const executor = yield* Executor.make(yield* connection.registry, { middleware: [auditLog((r) => receipts.push(r))] })
      yield* executor.run(call("c1", "list_directory", { path: root }))
      expect(receipts[0]!.audit.metadata).toMatchObject({ mcpServer: "filesystem", mcpTool: "list_directory" })
    })))

  it("stage, dryRun and Policy apply to remote tools", () =>
    run(Effect.gen(function*() {
      const connection = yield* connect
      const registry = yield* connection.registry
      const target = join(root, "staged.txt")
      const staged = yield* Executor.make(registry, { middleware: [stage({ name: "review", maxAccess: "read" })] })
      const blocked = yield* staged.run(call("c1", "write_file", { path: target, content: "no" }))
      expect(blocked.isError).toBe(true)
      expect(blocked.audit?.layers[0]?.status).toBe("scope_violation")
      expect(existsSync(target)).toBe(false)
      const allowed = yield* staged.run(call("c2", "read_text_file", { path: join(root, "hello.txt") }))
      expect(allowed.isError).toBe(false)

      const dry = yield* Executor.make(registry, { middleware: [dryRun({ only: ["write_file"] })] })
      const rehearsed = yield* dry.run(call("c3", "write_file", { path: target, content: "no" }))
      expect(rehearsed.audit?.layers[0]?.status).toBe("dry_run")
      expect(existsSync(target)).toBe(false)

      // Policy asks for approval on mutate tools (the approver here denies).
      const guarded = yield* Executor.make(registry, { middleware: [policy()] })
      const refused = yield* guarded.run(call("c4", "write_file", { path: target, content: "no" }))
      expect(refused.isError).toBe(true)
      expect(existsSync(target)).toBe(false)
    })))
})
