/**
 * Provider adapters: each module turns specs into that provider's tool
 * definitions, its responses into `ToolCall`s, and `ToolResult`s into its
 * result messages, with the same three functions (`toolDefinitions`,
 * `toolCalls`, `toolMessages`). Import them as namespaces from here:
 * `import { OpenAiChat, Anthropic } from "./providers/index.ts"`.
 */
export * as Anthropic from "./Anthropic.ts"
export * as Gemini from "./Gemini.ts"
export * as Mcp from "./Mcp.ts"
export * as OpenAiChat from "./OpenAiChat.ts"
export * as OpenAiResponses from "./OpenAiResponses.ts"
export * as ProviderCalls from "./ProviderCalls.ts"
export * as ProviderExportError from "./ProviderExportError.ts"
export * as ResultContent from "./ResultContent.ts"
export * as ToolAnswers from "./ToolAnswers.ts"
