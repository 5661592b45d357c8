/**
 * `tinyagents schema <module>`: the tool definitions a provider receives for the tools of a tools
 * module, as JSON ({@link definitions}: each provider's `toolDefinitionsResult` with its defaults).
 */
import { Console, Effect, Result } from "effect"
import { Command, Flag } from "effect/cli"
import type * as Tool from "../../contract/Tool.ts"
import * as Anthropic from "../../providers/Anthropic.ts"
import * as Gemini from "../../providers/Gemini.ts"
import * as Mcp from "../../providers/Mcp.ts"
import * as OpenAiChat from "../../providers/OpenAiChat.ts"
import * as OpenAiResponses from "../../providers/OpenAiResponses.ts"
import type { ProviderExportError } from "../../providers/ProviderExportError.ts"
import { CommandFailed, UsageError } from "../internal/errors.ts"
import { load, moduleArgument } from "../internal/toolsModule.ts"

/** The wire formats `schema --dialect` exports to. */
export const dialects = ["openai-chat", "openai-responses", "anthropic", "gemini", "mcp"] as const
export type Dialect = typeof dialects[number]

const strictDialects: ReadonlyArray<Dialect> = ["openai-chat", "openai-responses", "anthropic"]

/**
 * The tool definitions `dialect` receives for `specs` (each provider's `toolDefinitions` with its
 * defaults). `strict` requires strict mode (`strict: "require"`): a tool it cannot express fails
 * the export. OpenAI's default is already strict where the schema allows it (`"auto"`).
 */
export const definitions = (
  specs: ReadonlyArray<Tool.ToolSpec>,
  dialect: Dialect,
  strict: boolean
): Result.Result<ReadonlyArray<unknown>, ProviderExportError> => {
  switch (dialect) {
    case "openai-chat":
      return OpenAiChat.toolDefinitionsResult(specs, strict ? { strict: "require" } : {})
    case "openai-responses":
      return OpenAiResponses.toolDefinitionsResult(specs, strict ? { strict: "require" } : {})
    case "anthropic":
      return Anthropic.toolDefinitionsResult(specs, strict ? { strict: "require" } : {})
    case "gemini":
      return Gemini.toolDefinitionsResult(specs)
    case "mcp":
      return Mcp.toolDefinitionsResult(specs)
  }
}

/** `tinyagents schema <module> [--dialect <dialect>] [--strict]`. */
export const schemaCommand = Command.make("schema", {
  module: moduleArgument,
  dialect: Flag.Literals("dialect", dialects).pipe(
    Flag.withAlias("d"),
    Flag.withDescription("The provider wire format (default: openai-chat)"),
    Flag.withDefault("openai-chat")
  ),
  strict: Flag.Boolean("strict").pipe(
    Flag.withDescription(
      "Require strict mode (openai-chat, openai-responses, anthropic): every tool strict, or fail naming the tool that cannot be"
    ),
    Flag.withDefault(false)
  )
}, ({ dialect, module, strict }) =>
  Effect.gen(function*() {
    if (strict && !strictDialects.includes(dialect)) {
      return yield* new UsageError({
        detail: `--strict applies to ${strictDialects.join(", ")}; ${dialect} has no strict mode`
      })
    }
    const loaded = yield* load(module)
    const exported = definitions(loaded.registry.specs, dialect, strict)
    if (Result.isFailure(exported)) return yield* new CommandFailed({ detail: exported.failure.message })
    yield* Console.log(JSON.stringify(exported.success, null, 2))
  })).pipe(
    Command.withDescription(
      "Print, as JSON, the tool definitions a provider receives for the tools of a tools module (what the provider's toolDefinitions returns)."
    ),
    Command.withExamples([
      { command: "tinyagents schema ./tools.ts", description: "OpenAI Chat Completions `tools` (strict where possible)" },
      { command: "tinyagents schema ./tools.ts --dialect anthropic --strict", description: "Anthropic tools, all strict" },
      { command: "tinyagents schema ./tools.ts --dialect mcp", description: "MCP tools/list entries" }
    ])
  )
