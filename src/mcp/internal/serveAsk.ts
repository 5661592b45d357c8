/**
 * `Ask` over MCP, server side: while a tool runs as a served `tools/call`, its
 * questions go to the calling client as `elicitation/create` (form mode). The
 * answer's JSON Schema becomes the restricted form schema MCP allows (a flat
 * object of string, number, integer, boolean and string-enum fields); a schema
 * that does not fit is refused (`invalid-question`), never sent half-mapped.
 * `accept` is the answer (decoded by `Ask`), `decline` and `cancel` are
 * `Declined`. A client without the elicitation capability leaves the question to
 * the application's own `Ask.Answerer`, if any, else it is `unsupported`.
 */
import { Effect, Option } from "effect"
import { isRecursive, type Json, optionalMember } from "../../governance/AnswerFields.ts"
import { Answerer, answer, decline, type Reply, type Request, unanswerable } from "../../governance/Ask.ts"
import type { Client, ElicitSchema } from "./serverClient.ts"

type Field = ElicitSchema["properties"][string]

const formats = new Set(["email", "uri", "date", "date-time"])

const copy = (from: Json, keys: ReadonlyArray<string>): Record<string, unknown> => {
  const out: Record<string, unknown> = {}
  for (const key of keys) if (from[key] !== undefined) out[key] = from[key]
  return out
}

/** One property as an MCP form field, or why it cannot be one. */
const fieldOf = (name: string, property: Json): Field | string => {
  // `Schema.optional(X)`: `anyOf: [X, { type: "null" }]`; the field is then simply not required.
  const anyOf = property["anyOf"]
  if (Array.isArray(anyOf)) {
    const member = optionalMember(anyOf)
    if (member !== undefined) return fieldOf(name, { ...(member as Json), ...copy(property, ["title", "description"]) })
    return `field "${name}" is a union; MCP elicitation takes one type per field`
  }
  const labels = copy(property, ["title", "description"])
  const type = property["type"]
  const values = property["enum"]
  if (Array.isArray(values)) {
    return values.every((value) => typeof value === "string")
      ? { type: "string", ...labels, enum: values as Array<string>, ...copy(property, ["default"]) } as Field
      : `field "${name}" is an enum of non-strings; MCP elicitation enums are strings`
  }
  if (type === "string") {
    const format = property["format"]
    if (format !== undefined && !formats.has(format as string)) {
      return `field "${name}" has format "${String(format)}"; MCP elicitation takes email, uri, date or date-time`
    }
    return { type, ...labels, ...copy(property, ["minLength", "maxLength", "format", "default"]) } as Field
  }
  if (type === "number" || type === "integer") {
    return { type, ...labels, ...copy(property, ["minimum", "maximum", "default"]) } as Field
  }
  if (type === "boolean") return { type, ...labels, ...copy(property, ["default"]) } as Field
  return `field "${name}" is ${
    type === undefined ? "not a primitive" : `of type ${JSON.stringify(type)}`
  }; MCP elicitation takes only string, number, integer, boolean and string-enum fields`
}

/**
 * The MCP form for an answer's JSON Schema (an object), or why there is none. Constraints a form
 * cannot state (a `pattern`, say) are left out: `Ask` still decodes the answer with the full schema.
 */
export const elicitSchemaOf = (schema: Json): { readonly _tag: "form"; readonly form: ElicitSchema } | {
  readonly _tag: "refused"
  readonly reason: string
} => {
  if (isRecursive(schema)) return { _tag: "refused", reason: "the answer schema is recursive" }
  const properties = (schema["properties"] ?? {}) as Readonly<Record<string, Json>>
  const fields: Record<string, Field> = {}
  for (const [name, property] of Object.entries(properties)) {
    const field = fieldOf(name, property)
    if (typeof field === "string") return { _tag: "refused", reason: field }
    fields[name] = field
  }
  const required = schema["required"]
  return {
    _tag: "form",
    form: {
      type: "object",
      properties: fields,
      ...(Array.isArray(required) && required.length > 0 ? { required: required as Array<string> } : {})
    }
  }
}

/** The `Ask.Answerer` of a served call: its client's elicitation, else `fallback`. */
export const answererOf = (client: Client["Service"], fallback: Option.Option<Answerer["Service"]>): Answerer["Service"] =>
  Answerer.of({
    answer: (request: Request): Effect.Effect<Reply> => {
      if (!client.capabilities.elicitation) {
        return Option.isSome(fallback)
          ? fallback.value.answer(request)
          : Effect.succeed(unanswerable("unsupported", "the MCP client did not declare the elicitation capability"))
      }
      const mapped = elicitSchemaOf(request.schema as Json)
      if (mapped._tag === "refused") {
        return Effect.succeed(unanswerable("invalid-question", `cannot ask over MCP elicitation: ${mapped.reason}`))
      }
      return client.elicit(request.message, mapped.form).pipe(
        Effect.map((result): Reply =>
          result.action === "accept"
            ? answer(result.content ?? {}, "mcp-client")
            : decline(result.action === "decline" ? "the user declined" : "the user cancelled", "mcp-client")
        ),
        Effect.catch((error) =>
          Effect.succeed(unanswerable(error.reason === "failed" ? "failed" : error.reason === "invalid" ? "invalid-question" : "unsupported", error.message))
        )
      )
    }
  })
