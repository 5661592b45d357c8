/**
 * The inspector's answer form for a durable question: the fields of a flat answer schema (an object
 * of string, number, integer, boolean and enum fields; `Schema.optional`'s `anyOf` with `null`
 * unwrapped) as the page renders them, and the posted form read back into a JSON value. The value
 * is then checked by `DurableAgent.answer` against the question's stored JSON Schema (the authority:
 * the page's own reading of the schema only shapes the form). A schema that is not flat gets a JSON
 * textarea instead (`fieldsOf` answers `undefined`).
 */
import { isObject, isRecursive, type Json, optionalMember } from "../../governance/AnswerFields.ts"

/** One field of the form: a text or number input, or a select of JSON values (an enum, a boolean). */
export type Field =
  | { readonly name: string; readonly kind: "string"; readonly required: boolean }
  | { readonly name: string; readonly kind: "number"; readonly integer: boolean; readonly required: boolean }
  | { readonly name: string; readonly kind: "json"; readonly options: ReadonlyArray<unknown>; readonly required: boolean }

const fieldOf = (name: string, property: Json, required: boolean): Field | undefined => {
  const anyOf = property["anyOf"]
  if (Array.isArray(anyOf)) {
    const member = optionalMember(anyOf)
    return isObject(member) ? fieldOf(name, member, required) : undefined
  }
  const values = property["enum"]
  if (Array.isArray(values)) {
    return values.every((v) => v === null || ["string", "number", "boolean"].includes(typeof v))
      ? { name, kind: "json", options: values, required }
      : undefined
  }
  const type = property["type"]
  if (type === "string") return { name, kind: "string", required }
  if (type === "number" || type === "integer") return { name, kind: "number", integer: type === "integer", required }
  if (type === "boolean") return { name, kind: "json", options: [true, false], required }
  return undefined
}

/** The form's fields for answer schema `schema`, or `undefined` when it is not a flat object of primitive fields. */
export const fieldsOf = (schema: unknown): ReadonlyArray<Field> | undefined => {
  if (!isObject(schema) || schema["type"] !== "object" || isRecursive(schema)) return undefined
  const properties = schema["properties"] ?? {}
  if (!isObject(properties)) return undefined
  const required = new Set(Array.isArray(schema["required"]) ? schema["required"] : [])
  const fields: Array<Field> = []
  for (const [name, property] of Object.entries(properties)) {
    const field = isObject(property) ? fieldOf(name, property, required.has(name)) : undefined
    if (field === undefined) return undefined
    fields.push(field)
  }
  return fields
}

/** The posted form's spec of its fields (a hidden input): name → kind and whether it is required. */
export const specOf = (fields: ReadonlyArray<Field>): string =>
  JSON.stringify(Object.fromEntries(fields.map((f) => [f.name, { kind: f.kind, required: f.required }])))

/** The input of field `name` in the posted form. */
export const inputName = (name: string): string => `field.${name}`

/**
 * The JSON value of a posted fields form: each field's text read by its kind (a number that does not
 * parse is kept as text, for the schema check to refuse with where); an empty field left out, unless
 * it is a required text field (then `""`).
 */
export const valueOf = (form: URLSearchParams): Record<string, unknown> | string => {
  let spec: unknown
  try {
    spec = JSON.parse(form.get("fields") ?? "")
  } catch {
    return "the form has no field list"
  }
  if (!isObject(spec)) return "the form has no field list"
  const value: Record<string, unknown> = {}
  for (const [name, about] of Object.entries(spec)) {
    const kind = isObject(about) ? about["kind"] : undefined
    const required = isObject(about) && about["required"] === true
    const text = form.get(inputName(name)) ?? ""
    if (text === "") {
      if (kind === "string" && required) value[name] = ""
      continue
    }
    if (kind === "number") {
      const n = Number(text)
      value[name] = text.trim() !== "" && Number.isFinite(n) ? n : text
    } else if (kind === "json") {
      try {
        value[name] = JSON.parse(text)
      } catch {
        value[name] = text
      }
    } else {
      value[name] = text
    }
  }
  return value
}
