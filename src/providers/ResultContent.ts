/**
 * What a tool result says to a model, before a provider wraps it: its text (the value as JSON when
 * the result carries no content at all), its images, audio and embedded resources, and a short text
 * in place of each block a format cannot carry (`contentFor`, `textOnly`): a text resource's text
 * under its URI, a note with the MIME type and size of media (never their base64 data). Every
 * adapter that writes tool results for a model reads them this way: the provider modules here, the
 * integrations and the `effect/ai` bridge (`LanguageModelBridge`).
 */
export {
  type Audio,
  base64Bytes,
  type Carries,
  carriesMedia,
  type Content,
  contentFor,
  describe,
  fileNameOf,
  type Image,
  imagesOf,
  jsonWithoutMedia,
  type Media,
  type Resource,
  resourceText,
  textOf,
  textOnly,
  valueWithoutMedia
} from "./internal/content.ts"
