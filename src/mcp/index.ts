/**
 * `tinyagents/mcp`: the Model Context Protocol both ways. Each module is a
 * namespace: `import { McpServe } from "tinyagents/mcp"`.
 */
export * as McpServe from "./McpServe.ts"
export * as McpConnect from "./McpConnect.ts"
export * as McpAuth from "./McpAuth.ts"
export * as McpPrompt from "./McpPrompt.ts"
export * as McpResource from "./McpResource.ts"
