/**
 * tinyagents: an Effect-native tool runtime for LLM agents. Each module is a
 * namespace; import what you need: `import { Tool, ToolRegistry } from "tinyagents"`.
 */
export * as Cancellation from "./Cancellation.ts"
export * as EventSink from "./EventSink.ts"
export * as RunContext from "./RunContext.ts"
export * as Safety from "./Safety.ts"
export * as StoreRegistry from "./StoreRegistry.ts"
export * as Tool from "./Tool.ts"
export * as ToolCall from "./ToolCall.ts"
export * as ToolError from "./ToolError.ts"
export * as ToolEvent from "./ToolEvent.ts"
export * as ToolInput from "./ToolInput.ts"
export * as ToolName from "./ToolName.ts"
export * as ToolRegistry from "./ToolRegistry.ts"
export * as ToolResult from "./ToolResult.ts"
export * as ToolSchema from "./ToolSchema.ts"
export * as ToolServices from "./ToolServices.ts"
export * as Executor from "./Executor.ts"
export * as Middleware from "./Middleware.ts"
export * as Agent from "./Agent.ts"
export * as ChatModel from "./ChatModel.ts"
export * as Providers from "./providers/index.ts"
