/**
 * What a tool result says to a model, before a provider wraps it: its text (the value as JSON when
 * the result carries no content at all), its images, and a note in place of each image for formats
 * that only carry text. Every adapter that writes tool results for a model reads them this way:
 * the provider modules here and the `effect/ai` bridge (`LanguageModelBridge`).
 */
export { type Image, imagesOf, textOf, textWithImageNotes } from "./internal/content.ts"
