/**
 * Chat-model adapters: each module provides the `ChatModel` service over a
 * real model, with `generate` and `stream`. Import as namespaces:
 * `import { OpenAiChatModel, OpenAiResponsesModel, AnthropicModel, GeminiModel, LanguageModelBridge } from "tinyagents/models"`.
 * `layerConfig` failures are a `ModelConfigError` naming the variable.
 */
export * as AnthropicModel from "./AnthropicModel.ts"
export * as GeminiModel from "./GeminiModel.ts"
export { ModelConfigError } from "./ModelConfigError.ts"
export * as LanguageModelBridge from "./LanguageModelBridge.ts"
export * as OpenAiChatModel from "./OpenAiChatModel.ts"
export * as OpenAiResponsesModel from "./OpenAiResponsesModel.ts"
