/**
 * Reading a question's answer schema (JSON Schema) as a flat form of fields, for those who render
 * one: the inspector's answer form and MCP elicitation. Only the walk they share lives here (is it
 * an object, is it recursive, `Schema.optional`'s `anyOf` with `null`); which fields each accepts
 * (their enums, formats, labels) is theirs. `AnswerCheck` checks the answer itself.
 */

/** A JSON object: a schema or one of its properties. */
export type Json = Readonly<Record<string, unknown>>

/** True for a JSON object (not an array, not `null`). */
export const isObject = (value: unknown): value is Json => typeof value === "object" && value !== null && !Array.isArray(value)

/** True when `schema` has `$defs`: a recursive schema, which no flat form can show. */
export const isRecursive = (schema: Json): boolean => schema["$defs"] !== undefined

/**
 * `X` of `Schema.optional(X)`'s `anyOf: [X, { type: "null" }]` (the field is then just not required):
 * the one member that is not `{ type: "null" }`, or `undefined` when `anyOf` is some other union.
 */
export const optionalMember = (anyOf: ReadonlyArray<unknown>): unknown => {
  const members = anyOf.filter((member) => !(isObject(member) && member["type"] === "null"))
  return members.length === 1 ? members[0] : undefined
}
