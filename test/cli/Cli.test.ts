/**
 * The command line through `Command.runWith` (`Cli.run`), in process: stdout and stderr captured
 * with `TestConsole`, exit codes through `Cli.exitCode`, on the tools modules in `fixtures/`.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit, Fiber, Layer, Result, Schedule } from "effect"
import { Command } from "effect/cli"
import { TestConsole } from "effect/testing"
import { existsSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { Executor, ToolEvent, ToolRegistry, ToolResult, ToolServices } from "tinyagents"
import * as McpConnect from "../../src/mcp/McpConnect.ts"
import { Anthropic, Gemini, Mcp, OpenAiChat, OpenAiResponses } from "tinyagents/providers"
import * as Cli from "../../src/cli/Cli.ts"
import registry from "./fixtures/registry.ts"
import tools from "./fixtures/tools.ts"

const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url))
const ansi = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, "g")
const lines = (entries: ReadonlyArray<unknown>) => entries.map((line) => String(line).replace(ansi, "")).join("\n")

/** Runs the command line on `args`: the exit code, stdout and stderr. */
/** Runs `effect` with TINYAGENTS_MCP_CLIENT_SECRET set. */
const withSecret = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.acquireUseRelease(
    Effect.sync(() => (process.env["TINYAGENTS_MCP_CLIENT_SECRET"] = "cli-secret-value")),
    () => effect,
    () => Effect.sync(() => delete process.env["TINYAGENTS_MCP_CLIENT_SECRET"])
  )

const cli = (...args: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const exit = yield* Effect.exit(Cli.run(args, { version: "1.2.3" }))
    return {
      exit,
      code: Cli.exitCode(exit),
      stdout: lines(yield* TestConsole.logLines),
      stderr: lines(yield* TestConsole.errorLines)
    }
  }).pipe(Effect.provide([Cli.layer, Layer.fresh(TestConsole.layer)])) // a console of its own per run

const toolsRegistry = Result.getOrThrow(ToolRegistry.makeResult(tools))

describe("tinyagents (the command line)", () => {
  describe("help and usage", () => {
    it.effect("--help prints the commands on stdout and exits 0", () =>
      Effect.gen(function*() {
        const { code, stderr, stdout } = yield* cli("--help")
        assert.strictEqual(code, 0)
        assert.strictEqual(stderr, "")
        for (const text of ["USAGE", "tinyagents <subcommand>", "tools ", "schema ", "call ", "Exit codes"]) {
          assert.include(stdout, text)
        }
      }))

    it.effect("each command has its own help", () =>
      Effect.gen(function*() {
        const { code, stdout } = yield* cli("call", "--help")
        assert.strictEqual(code, 0)
        for (const text of ["tinyagents call [flags] <module> <tool>", "--input, -i", "--events", "EXAMPLES"]) {
          assert.include(stdout, text)
        }
      }))

    it.effect("--version prints the version", () =>
      Effect.gen(function*() {
        const { code, stdout } = yield* cli("--version")
        assert.strictEqual(code, 0)
        assert.strictEqual(stdout, "tinyagents v1.2.3")
      }))

    it.effect("no subcommand: help on stderr, exit 2", () =>
      Effect.gen(function*() {
        const { code, stderr, stdout } = yield* cli()
        assert.strictEqual(code, 2)
        assert.strictEqual(stdout, "")
        assert.include(stderr, "USAGE")
      }))

    it.effect("an unknown subcommand, an unknown flag, a bad choice, a missing argument: exit 2 with the error on stderr", () =>
      Effect.gen(function*() {
        const cases = [
          [["bogus"], "Unknown subcommand \"bogus\""],
          [["tools", "--bogus", fixture("tools.ts")], "--bogus"],
          [["schema", fixture("tools.ts"), "--dialect", "cohere"], "Invalid value for flag --dialect"],
          [["call", fixture("tools.ts")], "Missing required argument: tool"]
        ] as const
        for (const [args, message] of cases) {
          const { code, stderr, stdout } = yield* cli(...args)
          assert.strictEqual(code, 2, args.join(" "))
          assert.strictEqual(stdout, "", args.join(" "))
          assert.include(stderr, message)
        }
      }))

    it.effect("Command.runWith runs the command itself", () =>
      Effect.gen(function*() {
        yield* Command.runWith(Cli.command, { version: "1.2.3" })(["call", fixture("tools.ts"), "add", "-i", "{\"a\":2,\"b\":2}"])
        assert.include(lines(yield* TestConsole.logLines), "4")
      }).pipe(Effect.provide([Cli.layer, TestConsole.layer])))

    it("exit codes: 0 success, 130 interrupted, 2 usage, 1 a failed call or any other failure", () => {
      assert.strictEqual(Cli.exitCode(Exit.void), 0)
      assert.strictEqual(Cli.exitCode(Exit.interrupt(1)), 130)
      assert.strictEqual(Cli.exitCode(Exit.fail(new Cli.UsageError({ detail: "x" }))), 2)
      assert.strictEqual(Cli.exitCode(Exit.fail(new Cli.CommandFailed({ detail: "x" }))), 1)
      assert.strictEqual(Cli.exitCode(Exit.die(new Error("boom"))), 1)
    })
  })

  describe("tools modules", () => {
    it.effect("a module that cannot be used is a usage error (exit 2) that says why", () =>
      Effect.gen(function*() {
        const cases = [
          ["missing.ts", "tools module not found"],
          ["no-default.ts", "has no default export (export default a ToolRegistry or an array of tools)"],
          ["not-tools.ts", "item 1 is not a tool"],
          ["throws.ts", "cannot load tools module"],
          ["bad-layer.ts", "the export \"layer\" is an object, not a Layer"],
          ["effect.ts", "the default export is an Effect (export default a ToolRegistry or an array of tools; export the registry itself"],
          ["bad-names.ts", "invalid tool registry"],
          ["bad-prompts.ts", "in the export \"prompts\", item 1 is not made with McpPrompt.make"],
          ["bad-resources.ts", "the export \"resources\" is an object, not an array (make them with McpResource.make or McpResource.template)"]
        ] as const
        for (const [name, message] of cases) {
          const { code, stderr, stdout } = yield* cli("tools", fixture(name))
          assert.strictEqual(code, 2, name)
          assert.strictEqual(stdout, "", name)
          assert.include(stderr, message, name)
        }
      }))

    it("a .ts module refused by a Node that cannot strip types: the message names the Node needed", () => {
      const refusal = Object.assign(new TypeError('Unknown file extension ".ts" for /app/tools.ts'), { code: "ERR_UNKNOWN_FILE_EXTENSION" })
      const text = Cli.loadErrorText("tools.ts", refusal)
      assert.include(text, 'Unknown file extension ".ts"')
      assert.include(text, `this Node, ${process.version}, cannot load TypeScript: run the tools module with Node 24 or later`)
      // any other failure, or a .js module, keeps its own message
      assert.strictEqual(Cli.loadErrorText("tools.js", refusal), refusal.message)
      assert.strictEqual(Cli.loadErrorText("tools.ts", new Error("boom")), "boom")
    })

    it.effect("a .js module works too", () =>
      Effect.gen(function*() {
        const { code, stdout } = yield* cli("tools", fixture("plain.js"))
        assert.strictEqual(code, 0)
        assert.include(stdout, "echo  read    idempotent  Returns its text.")
      }))

    it.effect("a module path is resolved against the working directory", () =>
      Effect.gen(function*() {
        const loaded = yield* Cli.load("test/cli/fixtures/tools.ts")
        assert.deepStrictEqual<ReadonlyArray<string>>(loaded.registry.names, ["add", "greet", "fail", "crash"])
        assert.isDefined(loaded.layer)
      }))
  })

  describe("tools", () => {
    it.effect("lists each tool with its access level and safety flags", () =>
      Effect.gen(function*() {
        const { code, stderr, stdout } = yield* cli("tools", fixture("tools.ts"))
        assert.strictEqual(code, 0)
        assert.strictEqual(stderr, "")
        assert.strictEqual(
          stdout,
          [
            "TOOL   ACCESS   SAFETY                         DESCRIPTION",
            "add    read     idempotent                     Adds two integers.",
            "greet  write    #social                        Greets someone with the configured word.",
            "fail   network  networked,shell,spend,confirm  Always fails with a message the model can read.",
            "crash  read     -                              Throws: a defect."
          ].join("\n")
        )
      }))

    it.effect("then the prompts and resources the module exports (the tools only with --json)", () =>
      Effect.gen(function*() {
        const { code, stderr, stdout } = yield* cli("tools", fixture("prompts.ts"))
        assert.strictEqual(code, 0)
        assert.strictEqual(stderr, "")
        const [tools, ...extras] = stdout.split("\n\n")
        assert.strictEqual(tools!.split("\n").length, 5)
        assert.deepStrictEqual(extras, [
          [
            "PROMPT  ARGUMENTS     DESCRIPTION",
            "review  path, focus?  Asks for a review of one file.",
            "hello   -"
          ].join("\n"),
          [
            "RESOURCE            MIME           DESCRIPTION",
            "notes://readme      text/markdown  About the notes.",
            "notes://note/{key}  -              One note by key."
          ].join("\n")
        ])
        const json = yield* cli("tools", fixture("prompts.ts"), "--json")
        assert.deepStrictEqual((JSON.parse(json.stdout) as ReadonlyArray<Cli.ToolSummary>).map((t) => t.name), ["add", "greet", "fail", "crash"])
      }))

    it.effect("a registry default export, original names, keyed tools and workspace roots", () =>
      Effect.gen(function*() {
        const { code, stdout } = yield* cli("tools", fixture("registry.ts"))
        assert.strictEqual(code, 0)
        assert.include(stdout, "math_factorial (math.factorial)  read")
        assert.include(stdout, "keyed,filesystem(/ws)")
      }))

    it.effect("--json gives the safety metadata with defaults applied", () =>
      Effect.gen(function*() {
        const { code, stdout } = yield* cli("tools", fixture("registry.ts"), "--json")
        assert.strictEqual(code, 0)
        const parsed = JSON.parse(stdout) as ReadonlyArray<Cli.ToolSummary>
        assert.deepStrictEqual(parsed, registry.specs.map(Cli.summarize))
        assert.deepStrictEqual(parsed[0], {
          name: "math_factorial",
          originalName: "math.factorial",
          description: "Factorial of n.",
          safety: {
            access: "read",
            idempotent: true,
            networked: false,
            filesystem: false,
            shell: false,
            spend: false,
            requiresConfirmation: false,
            destructive: false,
            tags: []
          },
          idempotency: "idempotent",
          injected: []
        })
        assert.deepStrictEqual(parsed[1]!.safety.redact, { keys: ["secret"], patterns: ["/sk-[a-z]+/"] })
        assert.strictEqual(parsed[1]!.idempotency, "keyed")
      }))

    it("a tool that declares no access is listed as mutate and destructive", () => {
      const summary = Cli.summarize({ ...toolsRegistry.specs[0]!, safety: {} })
      assert.strictEqual(summary.safety.access, "mutate")
      assert.strictEqual(summary.safety.destructive, true)
      assert.strictEqual(Cli.formatTools([summary]).split("\n")[1], "add   mutate  destructive  Adds two integers.")
    })
  })

  describe("schema", () => {
    it.effect("prints exactly what each provider's toolDefinitions returns (default openai-chat)", () =>
      Effect.gen(function*() {
        const specs = toolsRegistry.specs
        const expected: Record<Cli.Dialect, Result.Result<ReadonlyArray<unknown>, unknown>> = {
          "openai-chat": OpenAiChat.toolDefinitionsResult(specs),
          "openai-responses": OpenAiResponses.toolDefinitionsResult(specs),
          "anthropic": Anthropic.toolDefinitionsResult(specs),
          "gemini": Gemini.toolDefinitionsResult(specs),
          "mcp": Mcp.toolDefinitionsResult(specs)
        }
        for (const dialect of Cli.dialects) {
          const { code, stderr, stdout } = yield* cli("schema", fixture("tools.ts"), "--dialect", dialect)
          assert.strictEqual(code, 0, dialect)
          assert.strictEqual(stderr, "", dialect)
          assert.deepStrictEqual(JSON.parse(stdout), JSON.parse(JSON.stringify(Result.getOrThrow(expected[dialect]))), dialect)
        }
        const byDefault = yield* cli("schema", fixture("tools.ts"))
        assert.deepStrictEqual(JSON.parse(byDefault.stdout), JSON.parse(JSON.stringify(Result.getOrThrow(expected["openai-chat"]))))
      }))

    it.effect("--strict requires strict mode", () =>
      Effect.gen(function*() {
        const { code, stdout } = yield* cli("schema", fixture("tools.ts"), "-d", "anthropic", "--strict")
        assert.strictEqual(code, 0)
        const definitions = JSON.parse(stdout) as ReadonlyArray<{ readonly strict?: boolean }>
        assert.deepStrictEqual(definitions.map((d) => d.strict), [true, true, true, true])
        assert.deepStrictEqual(
          definitions,
          JSON.parse(JSON.stringify(Result.getOrThrow(Anthropic.toolDefinitionsResult(toolsRegistry.specs, { strict: "require" }))))
        )
      }))

    it.effect("a tool strict mode cannot express fails the export: exit 1 naming the tool", () =>
      Effect.gen(function*() {
        const { code, stderr, stdout } = yield* cli("schema", fixture("registry.ts"), "--strict")
        assert.strictEqual(code, 1)
        assert.strictEqual(stdout, "")
        assert.include(stderr, "openai-chat: tool \"tag_record\" cannot be exported (unsupported_schema)")
        // without --strict, OpenAI's "auto" sends it non-strict
        const auto = yield* cli("schema", fixture("registry.ts"))
        assert.strictEqual(auto.code, 0)
        assert.deepStrictEqual(
          (JSON.parse(auto.stdout) as ReadonlyArray<{ readonly function: { readonly strict: boolean } }>).map((d) => d.function.strict),
          [true, false]
        )
      }))

    it.effect("--strict with a dialect that has no strict mode is a usage error", () =>
      Effect.gen(function*() {
        const { code, stderr } = yield* cli("schema", fixture("tools.ts"), "--dialect", "gemini", "--strict")
        assert.strictEqual(code, 2)
        assert.include(stderr, "--strict applies to openai-chat, openai-responses, anthropic; gemini has no strict mode")
      }))
  })

  describe("call", () => {
    it.effect("runs the call: the result on stdout, the events on stderr", () =>
      Effect.gen(function*() {
        const { code, stderr, stdout } = yield* cli("call", fixture("tools.ts"), "add", "--input", "{\"a\":1,\"b\":2}")
        assert.strictEqual(code, 0)
        assert.strictEqual(stdout, "3")
        assert.strictEqual(stderr, ["started   add call_1 {\"a\":1,\"b\":2}", "completed add call_1 in 0 ms"].join("\n"))
      }))

    it.effect("the module's layer provides the services its tools need", () =>
      Effect.gen(function*() {
        const { code, stdout } = yield* cli("call", fixture("tools.ts"), "greet", "-i", "{\"name\":\"Ada\"}")
        assert.strictEqual(code, 0)
        assert.strictEqual(stdout, "{\"text\":\"Hello, Ada!\"}")
      }))

    it.effect("an imported tool answers to its original name", () =>
      Effect.gen(function*() {
        const { code, stderr, stdout } = yield* cli("call", fixture("registry.ts"), "math.factorial", "-i", "{\"n\":5}")
        assert.strictEqual(code, 0)
        assert.strictEqual(stdout, "120")
        assert.include(stderr, "started   math_factorial call_1 {\"n\":5}")
      }))

    it.effect("--input defaults to {}", () =>
      Effect.gen(function*() {
        const { code, stderr } = yield* cli("call", fixture("tools.ts"), "fail")
        assert.strictEqual(code, 1)
        assert.include(stderr, "started   fail call_1 {}")
      }))

    it.effect("a handler failure: the error result on stdout, the failure on stderr, exit 1", () =>
      Effect.gen(function*() {
        const { code, stderr, stdout } = yield* cli("call", fixture("tools.ts"), "fail")
        assert.strictEqual(code, 1)
        assert.strictEqual(stdout, "the service said no")
        assert.include(stderr, "failed    fail call_1 after 0 ms [repair, error] the service said no")
        assert.notInclude(stderr, "ERROR")
      }))

    it.effect("refused arguments: what the model would read, exit 1", () =>
      Effect.gen(function*() {
        const invalid = yield* cli("call", fixture("tools.ts"), "add", "--input", "{\"a\":\"x\"}")
        assert.strictEqual(invalid.code, 1)
        assert.strictEqual(invalid.stdout, "add: invalid arguments: at \"a\": Expected an integer, got \"x\"; at \"b\": Missing key")
        assert.include(invalid.stderr, "rejected  add call_1 [repair] add: invalid arguments")
        const malformed = yield* cli("call", fixture("tools.ts"), "add", "--input", "nope")
        assert.strictEqual(malformed.code, 1)
        assert.include(malformed.stdout, "add: malformed arguments: the arguments are not valid JSON")
      }))

    it.effect("a defect: what the model reads on stdout, the cause only in the failed event, exit 1", () =>
      Effect.gen(function*() {
        const { code, exit, stderr, stdout } = yield* cli("call", fixture("tools.ts"), "crash")
        assert.strictEqual(code, 1)
        assert.strictEqual(stdout, "internal error in tool crash")
        const [events, error] = stderr.split("\nERROR\n")
        assert.include(events, "failed    crash call_1 after 0 ms [fatal, error] internal error in tool crash")
        assert.include(events, "Error: kaboom")
        // the final ERROR line does not repeat the defect's own message
        assert.strictEqual(error, "  crash: internal error in tool crash")
        assert.isTrue(Exit.isFailure(exit))
        if (Exit.isFailure(exit)) {
          const failed = Cause.squash(exit.cause)
          assert.instanceOf(failed, Cli.CommandFailed)
          const result = (failed as Cli.CommandFailed).result!
          assert.strictEqual(result.isError, true)
          assert.strictEqual(result.error?._tag, "ToolDefect")
          assert.strictEqual(ToolResult.textOf(result), "internal error in tool crash")
        }
      }))

    it.effect("a defect with --events none and jsonl: the defect's message is only in the events", () =>
      Effect.gen(function*() {
        const none = yield* cli("call", fixture("tools.ts"), "crash", "--events", "none")
        assert.strictEqual(none.code, 1)
        assert.strictEqual(none.stdout, "internal error in tool crash")
        assert.strictEqual(none.stderr.trim(), "ERROR\n  crash: internal error in tool crash")
        const jsonl = yield* cli("call", fixture("tools.ts"), "crash", "--events", "jsonl")
        assert.strictEqual(jsonl.code, 1)
        assert.strictEqual(jsonl.stdout, "internal error in tool crash")
        const [events, error] = jsonl.stderr.split("\nERROR\n")
        assert.include(events, "kaboom")
        assert.strictEqual(error, "  crash: internal error in tool crash")
      }))

    it.effect("a service the module does not provide is named (in the failed event), never faked by the command line's own services", () =>
      Effect.gen(function*() {
        const { code, stderr, stdout } = yield* cli("call", fixture("no-layer.ts"), "greet", "-i", "{\"name\":\"Ada\"}")
        assert.strictEqual(code, 1)
        assert.strictEqual(stdout, "internal error in tool greet")
        const [events, error] = stderr.split("\nERROR\n")
        assert.include(events, "failed    greet call_1 after 0 ms [fatal, error] internal error in tool greet")
        assert.include(events, "Service not found: fixture/Greeting")
        assert.strictEqual(error, "  greet: internal error in tool greet")
      }))

    it.effect("a module layer that fails to build: exit 1 with its error", () =>
      Effect.gen(function*() {
        const { code, stderr, stdout } = yield* cli("call", fixture("failing-layer.ts"), "add", "-i", "{\"a\":1,\"b\":1}")
        assert.strictEqual(code, 1)
        assert.strictEqual(stdout, "")
        assert.include(stderr, "ERROR\n  add: the greeting is not configured")
      }))

    it.effect("an unknown tool is a usage error listing the module's tools; nothing runs", () =>
      Effect.gen(function*() {
        const { code, stderr, stdout } = yield* cli("call", fixture("tools.ts"), "sub", "-i", "{}")
        assert.strictEqual(code, 2)
        assert.strictEqual(stdout, "")
        assert.strictEqual(stderr.trim(), "ERROR\n  unknown tool \"sub\"; the module has: add, greet, fail, crash")
      }))

    it.live("retries are shown as they happen", () =>
      Effect.gen(function*() {
        const { code, stderr, stdout } = yield* cli("call", fixture("flaky.ts"), "flaky")
        assert.strictEqual(code, 0)
        assert.strictEqual(stdout, "ok on attempt 2")
        const rows = stderr.split("\n")
        assert.deepStrictEqual(rows.map((row) => row.split(" ")[0]), ["started", "retrying", "completed"])
        assert.strictEqual(rows[1], "retrying  flaky call_1 attempt 2 in 5 ms (busy, try again)")
      }))

    it.effect("--events jsonl: one encoded ToolEvent per line", () =>
      Effect.gen(function*() {
        const { code, stderr, stdout } = yield* cli("call", fixture("tools.ts"), "add", "-i", "{\"a\":1,\"b\":2}", "--events", "jsonl")
        assert.strictEqual(code, 0)
        assert.strictEqual(stdout, "3")
        const events = yield* ToolEvent.decodeJsonl(`${stderr}\n`)
        assert.deepStrictEqual(events.map((e) => e._tag), ["tool.started", "tool.completed"])
        assert.deepStrictEqual(events.map((e) => e.sequence), [0, 1])
      }))

    it.effect("--events none: nothing on stderr", () =>
      Effect.gen(function*() {
        const { code, stderr, stdout } = yield* cli("call", fixture("tools.ts"), "add", "-i", "{\"a\":1,\"b\":2}", "--events", "none")
        assert.strictEqual(code, 0)
        assert.strictEqual(stdout, "3")
        assert.strictEqual(stderr, "")
      }))

    it.effect("a failing exit carries the error result", () =>
      Effect.gen(function*() {
        const { exit } = yield* cli("call", fixture("tools.ts"), "fail")
        assert.isTrue(Exit.isFailure(exit))
        if (Exit.isFailure(exit)) {
          const error = Cause.squash(exit.cause)
          assert.instanceOf(error, Cli.CallFailed)
          assert.strictEqual((error as Cli.CallFailed).result.isError, true)
        }
      }))
  })

  describe("mcp", () => {
    const repo = fileURLToPath(new URL("../..", import.meta.url))
    const local = join(repo, "node_modules", ".bin", "node")
    const node = existsSync(local) ? local : process.execPath
    const server = [node, "--conditions=tinyagents-source", join(repo, "src", "cli", "bin.ts"), "mcp", "serve", fixture("tools.ts")]

    it.live("mcp tools lists a stdio server's tools (here the real binary's `mcp serve`) as they are imported", () =>
      Effect.gen(function*() {
        const { code, stderr, stdout } = yield* cli("mcp", "tools", "--", ...server)
        assert.strictEqual(code, 0, stderr)
        const [tools, resources, ...rest] = stdout.split("\n\n")
        const rows = tools!.split("\n")
        assert.deepStrictEqual(rows.map((row) => row.split(/\s+/)[0]), ["TOOL", "add", "greet", "fail", "crash"])
        assert.match(rows[1]!, /^add +read +idempotent,#mcp,#mcp:tinyagents +Adds two integers\.$/)
        // no prompts; the one resource template is the artifacts'
        assert.match(resources!, /^RESOURCE +MIME +DESCRIPTION\ntinyagents:\/\/artifacts\/\{store\}\/\{key\} +- +The whole output/)
        assert.deepStrictEqual(rest, [])
        const json = yield* cli("mcp", "tools", "--json", "--", ...server)
        const summaries = JSON.parse(json.stdout) as ReadonlyArray<Cli.ToolSummary>
        assert.deepStrictEqual(summaries.map((t) => [t.name, t.safety.access]), [["add", "read"], ["greet", "write"], ["fail", "network"], ["crash", "read"]])
      }), 60_000)

    it.live("mcp serve serves the prompts and resources a module exports; mcp tools lists them", () =>
      Effect.gen(function*() {
        const { code, stderr, stdout } = yield* cli("mcp", "tools", "--", ...server.slice(0, -1), fixture("prompts.ts"))
        assert.strictEqual(code, 0, stderr)
        const [, prompts, resources] = stdout.split("\n\n")
        assert.strictEqual(prompts, [
          "PROMPT  ARGUMENTS     DESCRIPTION",
          "review  path, focus?  Asks for a review of one file.",
          "hello   -"
        ].join("\n"))
        const uris = resources!.split("\n").slice(1).map((row) => row.split(/\s+/)[0])
        assert.deepStrictEqual(uris, ["notes://readme", "tinyagents://artifacts/{store}/{key}", "notes://note/{key}"])
      }), 60_000)

    it.live("mcp serve --http serves the module (with its layer) until interrupted; calls print events on stderr", () =>
      Effect.gen(function*() {
        const serving = yield* Cli.run(["mcp", "serve", fixture("tools.ts"), "--http", "0"], { version: "1.2.3" }).pipe(Effect.forkChild)
        const url = yield* TestConsole.errorLines.pipe(
          Effect.map((lines) => lines.map(String).join("\n").match(/http:\/\/127\.0\.0\.1:\d+\/mcp/)?.[0]),
          Effect.flatMap((url) => url === undefined ? Effect.fail("not yet") : Effect.succeed(url)),
          Effect.retry(Schedule.spaced("50 millis").pipe(Schedule.upTo({ times: 200 })))
        )
        const listed = yield* Effect.exit(Cli.run(["mcp", "tools", "--url", url], { version: "1.2.3" }))
        assert.strictEqual(Cli.exitCode(listed), 0)
        assert.include(lines(yield* TestConsole.logLines), "greet  write")
        const result = yield* Effect.scoped(Effect.gen(function*() {
          const connection = yield* McpConnect.http({ url })
          const executor = yield* Executor.make(yield* connection.registry)
          return yield* executor.run({ id: "c1", name: "greet", arguments: "{\"name\":\"Ada\"}" })
        })).pipe(Effect.provide(ToolServices.layerTest()))
        assert.include(ToolResult.textOf(result), "Hello, Ada!")
        const stderr = lines(yield* TestConsole.errorLines)
        assert.match(stderr, /started {3}greet \S+ \{"name":"Ada"\}/)
        assert.match(stderr, /completed greet \S+ in \d+ ms/)
        yield* Fiber.interrupt(serving)
        assert.strictEqual(Cli.exitCode(yield* Fiber.await(serving)), 130)
      }).pipe(Effect.provide([Cli.layer, Layer.fresh(TestConsole.layer)])), 60_000)

    it.live("mcp tools needs exactly one server; a bad URL is a usage error; an unreachable server exits 1", () =>
      Effect.gen(function*() {
        const neither = yield* cli("mcp", "tools")
        assert.strictEqual(neither.code, 2)
        assert.include(neither.stderr, "name one server: --url <url>, or -- <command> [args...]")
        const both = yield* cli("mcp", "tools", "--url", "http://127.0.0.1:1/mcp", "--", "server")
        assert.strictEqual(both.code, 2)
        const bad = yield* cli("mcp", "tools", "--url", "nope")
        assert.strictEqual(bad.code, 2)
        assert.include(bad.stderr, "--url: not a URL: nope")
        const portWithCredentials = yield* cli(
          "mcp",
          "tools",
          "--url",
          "http://127.0.0.1:1/mcp",
          "--client-id",
          "service",
          "--client-credentials",
          "--oauth-port",
          "8976"
        ).pipe(withSecret)
        assert.strictEqual(portWithCredentials.code, 2)
        assert.include(portWithCredentials.stderr, "--oauth-port does not go with --client-credentials")
        const secretWithoutId = yield* cli("mcp", "tools", "--url", "http://127.0.0.1:1/mcp").pipe(withSecret)
        assert.strictEqual(secretWithoutId.code, 2)
        assert.include(secretWithoutId.stderr, "TINYAGENTS_MCP_CLIENT_SECRET is the secret of a pre-registered client")
        const unreachable = yield* cli("mcp", "tools", "--", join(repo, "no-such-server"))
        assert.strictEqual(unreachable.code, 1)
        assert.include(unreachable.stderr, "mcp tools: cannot connect to the MCP server \"no-such-server\"")
      }), 60_000)

    it.effect("mcp serve --allow-origin takes origins, and only with --http", () =>
      Effect.gen(function*() {
        const bad = yield* cli("mcp", "serve", fixture("tools.ts"), "--http", "0", "--allow-origin", "localhost:3000")
        assert.strictEqual(bad.code, 2)
        assert.include(bad.stderr, "--allow-origin takes an origin (scheme://host[:port], e.g. http://localhost:3000), not localhost:3000")
        const stdio = yield* cli("mcp", "serve", fixture("tools.ts"), "--allow-origin", "http://localhost:3000")
        assert.strictEqual(stdio.code, 2)
        assert.include(stdio.stderr, "--allow-origin applies to --http only")
      }))

    it.live("mcp serve --http --allow-origin accepts requests from those origins; any other gets 403", () =>
      Effect.gen(function*() {
        const serving = yield* Cli.run(
          ["mcp", "serve", fixture("tools.ts"), "--http", "0", "--allow-origin", "http://localhost:3000", "--allow-origin", "https://app.test"],
          { version: "1.2.3" }
        ).pipe(Effect.forkChild)
        const url = yield* TestConsole.errorLines.pipe(
          Effect.map((lines) => lines.map(String).join("\n").match(/http:\/\/127\.0\.0\.1:\d+\/mcp/)?.[0]),
          Effect.flatMap((url) => url === undefined ? Effect.fail("not yet") : Effect.succeed(url)),
          Effect.retry(Schedule.spaced("50 millis").pipe(Schedule.upTo({ times: 200 })))
        )
        const initialize = (origin: string) =>
          Effect.promise(() =>
            fetch(url, {
              method: "POST",
              headers: { "content-type": "application/json", accept: "application/json, text/event-stream", origin },
              body: JSON.stringify({
                jsonrpc: "2.0",
                id: 1,
                method: "initialize",
                params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "browser", version: "1" } }
              })
            }).then((response) => response.status)
          )
        assert.strictEqual(yield* initialize("http://localhost:3000"), 200)
        assert.strictEqual(yield* initialize("https://app.test"), 200)
        assert.strictEqual(yield* initialize(new URL(url).origin), 200)
        assert.strictEqual(yield* initialize("http://evil.example.com"), 403)
        yield* Fiber.interrupt(serving)
      }).pipe(Effect.provide([Cli.layer, Layer.fresh(TestConsole.layer)])), 60_000)

    it.effect("mcp serve with a module that cannot be loaded is a usage error", () =>
      Effect.gen(function*() {
        const { code, stderr } = yield* cli("mcp", "serve", fixture("no-default.ts"))
        assert.strictEqual(code, 2)
        assert.include(stderr, "has no default export")
      }))
  })
})
