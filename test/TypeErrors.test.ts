/**
 * The compile errors a newcomer meets name the mistake. Each snippet below is
 * type-checked by the repository's `tsc` (with its `tsconfig.json`) and the
 * error it reports is read: a handler failing with an undeclared error names
 * `HandlerFailsWithUndeclaredError<E>` (not a missing property of some
 * `ToolError`), one using an unlisted service names
 * `HandlerUsesUndeclaredService<R>`, and a run missing its layers lists every
 * missing service (not `Requirements<never>` and then the first of them).
 * `test/ToolTypes.test.ts` holds the handler rules as `@ts-expect-error` lines.
 */
import { spawnSync } from "node:child_process"
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { basename, join, relative } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, assert, beforeAll, describe, it } from "vitest"

const repo = fileURLToPath(new URL("..", import.meta.url))

const prelude = (dir: string) => `
import { Context, Data, Effect, Schema } from "effect"
import { Agent, ChatModel, Executor, Tool, ToolError, ToolRegistry } from "${relative(dir, join(repo, "src/index.ts")).replaceAll("\\", "/")}"
class Undeclared extends Data.TaggedError("Undeclared")<{ readonly secret: string }> {}
class NotFound extends Schema.TaggedError<NotFound>()("NotFound", { key: Schema.String }) {}
class Conflict extends Schema.TaggedError<Conflict>()("Conflict", { key: Schema.String }) {}
class Clock extends Context.Service<Clock, { readonly now: number }>()("Clock") {}
class Mailer extends Context.Service<Mailer, { readonly send: (to: string) => Effect.Effect<void> }>()("Mailer") {}
const Input = Schema.Struct({ key: Schema.String })
void Undeclared, void NotFound, void Conflict, void Clock, void Mailer, void Input, void ToolError
void Agent, void ChatModel, void Executor, void ToolRegistry
`

const snippets: Record<string, string> = {
  "fine.ts": `
export const fine = Tool.make("fine", {
  description: "Declares what it does.",
  input: Input,
  failure: NotFound,
  services: [Clock],
  handler: ({ key }): Effect.Effect<number, NotFound | ToolError.ToolTransient, Clock> =>
    key === "" ? Effect.fail(new NotFound({ key })) : Effect.map(Clock, (c) => c.now)
})`,
  "undeclared-error.ts": `
export const t = Tool.make("no_failure", {
  description: "Declares nothing.",
  input: Input,
  handler: () => Effect.fail(new Undeclared({ secret: "s" }))
})`,
  "other-error.ts": `
export const t = Tool.make("other_failure", {
  description: "Declares NotFound only.",
  input: Input,
  failure: NotFound,
  handler: ({ key }): Effect.Effect<string, NotFound | Conflict> =>
    key === "x" ? Effect.fail(new Conflict({ key })) : Effect.fail(new NotFound({ key }))
})`,
  "undeclared-service.ts": `
export const t = Tool.make("mail", {
  description: "Lists Clock, uses Mailer too.",
  input: Input,
  services: [Clock],
  handler: ({ key }) => Effect.gen(function*() {
    const clock = yield* Clock
    const mailer = yield* Mailer
    yield* mailer.send(key)
    return clock.now
  })
})`,
  "missing-layers.ts": `
const echo = Tool.make("echo", { description: "Echoes.", input: Input, handler: ({ key }) => Effect.succeed(key) })
const program = Effect.gen(function*() {
  const tools = yield* ToolRegistry.make([echo])
  return yield* Agent.run({ messages: [{ role: "user", content: "hi" }], tools })
})
Effect.runPromise(program.pipe(Effect.provide(ChatModel.scripted([]))))`,
  "missing-layers-executor.ts": `
const program = Effect.gen(function*() {
  const executor = yield* Executor.make(yield* ToolRegistry.make([]))
  return yield* executor.run({ id: "c1", name: "echo", arguments: {} })
})
Effect.runPromise(program)`,
  "imported-error.ts": `
export const t = Tool.fromJsonSchema("imported", {
  description: "Imported tools declare nothing.",
  inputSchema: { type: "object", properties: {} },
  handler: () => Effect.fail(new Undeclared({ secret: "s" }))
})`
}

/** The compiler's output for each snippet file: its error lines (with their continuation lines). */
let errors: Record<string, string> = {}
let dir = ""

beforeAll(() => {
  // Under node_modules: ignored by git and by the project's own `tsc`, and `effect` resolves from there.
  const cache = join(repo, "node_modules", ".cache")
  mkdirSync(cache, { recursive: true })
  dir = mkdtempSync(join(cache, "tinyagents-type-errors-"))
  writeFileSync(
    join(dir, "tsconfig.json"),
    JSON.stringify({ extends: join(repo, "tsconfig.json"), include: ["*.ts"], compilerOptions: { noEmit: true } })
  )
  for (const [file, body] of Object.entries(snippets)) writeFileSync(join(dir, file), `${prelude(dir)}${body}\n`)
  const result = spawnSync(join(repo, "node_modules/.bin/tsc"), ["-p", join(dir, "tsconfig.json"), "--pretty", "false"], {
    cwd: dir,
    encoding: "utf8",
    timeout: 120_000
  })
  const out = `${result.stdout}${result.stderr}`
  errors = Object.fromEntries(Object.keys(snippets).map((file) => [file, ""]))
  let current: string | undefined
  for (const line of out.split("\n")) {
    // tsc names a snippet relative to the real path of `dir` (through a symlinked node_modules, as in
    // a git worktree, that is `../…/tinyagents-type-errors-…/x.ts(`): match its own folder's name too.
    const file = Object.keys(snippets).find((f) => line.startsWith(`${f}(`) || line.includes(`/${basename(dir)}/${f}(`))
    if (file !== undefined) current = file
    else if (!line.startsWith(" ")) current = undefined
    if (current !== undefined) errors[current] += `${line}\n`
  }
}, 120_000)

afterAll(() => {
  if (dir !== "") rmSync(dir, { recursive: true, force: true })
})

describe("type errors name the mistake", () => {
  it("a handler that keeps to its declarations compiles", () => {
    assert.strictEqual(errors["fine.ts"], "")
  })

  it("an undeclared error: HandlerFailsWithUndeclaredError<E>, not a missing ToolError property", () => {
    assert.include(errors["undeclared-error.ts"], "HandlerFailsWithUndeclaredError<Undeclared>")
    assert.notInclude(errors["undeclared-error.ts"], "disposition")
  })

  it("an error beside the declared one: only the undeclared one is named", () => {
    assert.include(errors["other-error.ts"], "HandlerFailsWithUndeclaredError<Conflict>")
    assert.notInclude(errors["other-error.ts"], "HandlerFailsWithUndeclaredError<NotFound")
  })

  it("a service not listed in services: HandlerUsesUndeclaredService<R>", () => {
    assert.include(errors["undeclared-service.ts"], "HandlerUsesUndeclaredService<Mailer>")
  })

  it("a run missing its layers: the error lists every missing service", () => {
    for (const file of ["missing-layers.ts", "missing-layers-executor.ts"]) {
      const missing = errors[file]!.split("\n").find((line) => line.includes("is not assignable to type 'never'"))
      assert.isDefined(missing, errors[file])
      for (const service of ["RunContext", "EventSink", "StoreRegistry"]) assert.include(missing, service)
      assert.notInclude(errors[file], "Requirements<")
    }
  })

  it("an imported tool's handler may fail with ToolErrors only, and says so", () => {
    assert.include(errors["imported-error.ts"], "HandlerFailsWithUndeclaredError<Undeclared>")
    assert.notInclude(errors["imported-error.ts"], "disposition")
  })
})
