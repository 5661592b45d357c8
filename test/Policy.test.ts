/**
 * Policy: shell and spend disabled unless allowed; filesystem tools confined to
 * allowed roots; a side-effect ceiling per run and per stage; confirmation
 * through Approval for requiresConfirmation, mutate and spend tools; repairable
 * or fatal violations.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Result, Schema } from "effect"
import { Approval } from "../src/governance/Approval.ts"
import * as ApprovalModule from "../src/governance/Approval.ts"
import { Executor, Tool, ToolRegistry, ToolResult, ToolServices } from "../src/index.ts"
import type { Safety } from "../src/index.ts"
import { stage } from "../src/governance/middleware/index.ts"
import * as Policy from "../src/governance/middleware/Policy.ts"

const toolWith = (name: string, safety: Safety.Safety) =>
  Tool.make(name, { description: name, input: Schema.Struct({}), safety, handler: () => Effect.succeed("ran") })

const tools = [
  toolWith("reader", { access: "read" }),
  toolWith("writer", { access: "write" }),
  toolWith("fetcher", { access: "network" }),
  toolWith("mutator", { access: "mutate" }),
  toolWith("undeclared", {}),
  toolWith("shell", { access: "read", shell: true }),
  toolWith("buyer", { access: "network", spend: true }),
  toolWith("careful", { access: "read", requiresConfirmation: true }),
  toolWith("fs_inside", { access: "write", filesystem: { workspaceRoot: "/srv/work/project" } }),
  toolWith("fs_outside", { access: "write", filesystem: { workspaceRoot: "/etc" } }),
  toolWith("fs_sneaky", { access: "write", filesystem: { workspaceRoot: "/srv/work/../../etc" } }),
  toolWith("fs_runtime", { access: "read", filesystem: true })
]

const specOf = (name: string) => Result.getOrThrow(Tool.spec(tools.find((t) => t.name === name)!))
const verdict = (options: Policy.Options, name: string, stages: ReadonlyArray<string> = []) =>
  Policy.check(options, specOf(name), stages)._tag

const asked: Array<string> = []
const approver = Approval.layer((request) =>
  Effect.sync(() => {
    asked.push(`${request.toolName}: ${request.why}`)
    return request.toolName === "mutator" ? ApprovalModule.deny("not now", "tester") : ApprovalModule.approve("tester")
  })
)
const services = ToolServices.layerTest({ runId: "run-1" })

const run = (options: Policy.Options, name: string, stageName?: string) =>
  Effect.gen(function*() {
    const registry = yield* ToolRegistry.make(tools)
    const executor = yield* Executor.make(registry, {
      middleware: [...(stageName === undefined ? [] : [stage({ name: stageName })]), Policy.middleware(options)]
    })
    return yield* executor.run({ id: "c1", name, arguments: {} })
  })

describe("Policy.check", () => {
  it("shell and spend tools are blocked unless allowed", () => {
    assert.strictEqual(verdict({}, "shell"), "Block")
    assert.strictEqual(verdict({ allowShell: true }, "shell"), "Allow")
    assert.strictEqual(verdict({}, "buyer"), "Block")
    assert.strictEqual(verdict({ allowSpend: true }, "buyer"), "Confirm")
    assert.strictEqual(verdict({ allowSpend: true, confirm: false }, "buyer"), "Allow")
  })

  it("filesystem tools must lie within the allowed roots", () => {
    const options: Policy.Options = { filesystem: { allowedRoots: ["/srv/work"] } }
    assert.strictEqual(verdict(options, "fs_inside"), "Allow")
    assert.strictEqual(verdict(options, "fs_outside"), "Block")
    assert.strictEqual(verdict(options, "fs_sneaky"), "Block")
    assert.strictEqual(verdict(options, "fs_runtime"), "Block")
    assert.strictEqual(verdict({ filesystem: { allowedRoots: ["/srv/work"], undeclared: "allow" } }, "fs_runtime"), "Allow")
    assert.strictEqual(verdict({}, "fs_outside"), "Allow")
  })

  it("side-effect ceiling per run: read < write < network < mutate", () => {
    const options: Policy.Options = { maxAccess: "write", confirm: false }
    assert.deepStrictEqual(
      ["reader", "writer", "fetcher", "mutator", "undeclared"].map((n) => verdict(options, n)),
      ["Allow", "Allow", "Block", "Block", "Block"]
    )
  })

  it("per stage: the tightest of the run's and every enclosing stage's ceiling applies", () => {
    const options: Policy.Options = { maxAccess: "network", stages: { plan: "write", review: "read" }, confirm: false }
    assert.strictEqual(verdict(options, "fetcher"), "Allow")
    assert.strictEqual(verdict(options, "fetcher", ["plan"]), "Block")
    assert.strictEqual(verdict(options, "writer", ["plan"]), "Allow")
    assert.strictEqual(verdict(options, "writer", ["plan", "review"]), "Block")
    assert.strictEqual(verdict(options, "writer", ["other"]), "Allow")
  })

  it("confirmation for requiresConfirmation, mutate (also the default effect) and spend tools", () => {
    assert.strictEqual(verdict({}, "careful"), "Confirm")
    assert.strictEqual(verdict({}, "mutator"), "Confirm")
    assert.strictEqual(verdict({}, "undeclared"), "Confirm")
    assert.strictEqual(verdict({}, "reader"), "Allow")
    assert.strictEqual(verdict({}, "writer"), "Allow")
  })
})

describe("Policy.middleware", () => {
  it.effect("a violation short-circuits with policy_blocked and the reason; the tool does not run", () =>
    Effect.gen(function*() {
      const result = yield* run({}, "shell")
      assert.strictEqual(result.error?._tag, "PolicyBlocked")
      assert.strictEqual(result.error?.disposition, "repair")
      assert.strictEqual(ToolResult.textOf(result), "shell: refused: shell tools are disabled by policy")
      assert.deepStrictEqual(result.audit?.layers.map((l) => `${l.name}:${l.status}`), ["policy:policy_blocked"])
    }).pipe(Effect.provide([services, approver])))

  it.effect("repair: false makes violations fatal", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(run({ repair: false }, "shell"))
      assert.strictEqual(error._tag, "PolicyBlocked")
      assert.strictEqual(error._tag === "PolicyBlocked" && error.disposition, "fatal")
    }).pipe(Effect.provide([services, approver])))

  it.effect("confirmation goes through Approval: approved runs, denied is consent_denied", () =>
    Effect.gen(function*() {
      asked.length = 0
      const careful = yield* run({}, "careful")
      const mutator = yield* run({}, "mutator")
      const reader = yield* run({}, "reader")
      assert.strictEqual(careful.value, "ran")
      assert.strictEqual(careful.audit?.consent?.decidedBy, "tester")
      assert.strictEqual(mutator.error?._tag, "ApprovalDenied")
      assert.deepStrictEqual(mutator.audit?.layers.map((l) => l.status), ["consent_denied"])
      assert.strictEqual(reader.value, "ran")
      assert.deepStrictEqual(asked, ["careful: the tool requires confirmation", "mutator: the tool mutates state"])
    }).pipe(Effect.provide([services, approver])))

  it.effect("the stage comes from the surrounding stage layer", () =>
    Effect.gen(function*() {
      const options: Policy.Options = { stages: { review: "read" } }
      const inReview = yield* run(options, "writer", "review")
      const elsewhere = yield* run(options, "writer", "build")
      assert.include(ToolResult.textOf(inReview), "stage \"review\" allows side effects up to read; this tool is write")
      assert.strictEqual(elsewhere.value, "ran")
    }).pipe(Effect.provide([services, approver])))

  it.effect("filesystem confinement blocks at run time too", () =>
    Effect.gen(function*() {
      const options: Policy.Options = { filesystem: { allowedRoots: ["/srv/work"] } }
      const outside = yield* run(options, "fs_outside")
      const inside = yield* run(options, "fs_inside")
      assert.include(ToolResult.textOf(outside), "workspace root \"/etc\" is outside the allowed roots")
      assert.strictEqual(inside.value, "ran")
    }).pipe(Effect.provide([services, approver])))
})
