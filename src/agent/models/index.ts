/**
 * Chat-model adapters: each module provides the `ChatModel` service over a
 * real model. Import as namespaces:
 * `import { OpenAiChatModel, AnthropicModel, LanguageModelBridge } from "tinyagents/models"`.
 * `layerConfig` failures are a `ModelConfigError` naming the variable.
 */
export * as AnthropicModel from "./AnthropicModel.ts"
export { ModelConfigError } from "./ModelConfigError.ts"
export * as LanguageModelBridge from "./LanguageModelBridge.ts"
export * as OpenAiChatModel from "./OpenAiChatModel.ts"
