/**
 * Checks an answer against a question's JSON Schema, for those who answer without the question's own
 * Schema: a durable run's `answer` (another process) and the terminal (to ask again). The schema is
 * imported as a tool's JSON Schema is (`Tool.fromJsonSchema`, objects closed), the answer decoded as
 * a tool's arguments are. The asking handler decodes it again with its own Schema, which may check
 * more than JSON Schema says.
 */
import { Effect, Result } from "effect"
import * as Tool from "../contract/Tool.ts"
import { formatPath } from "../contract/ToolError.ts"
import * as ToolInput from "../contract/ToolInput.ts"
import type * as ToolSchema from "../contract/ToolSchema.ts"

/** Why `value` does not match the answer schema `schema` of a question of tool `toolName`, or `undefined` when it does. */
export const refusal = (toolName: string, schema: ToolSchema.JsonSchemaObject, value: unknown): string | undefined => {
  const form = Tool.fromJsonSchema(toolName, { description: "a question's answer", inputSchema: schema, handler: () => Effect.void })
  if (Result.isFailure(form)) return `the question's schema cannot be read: ${form.failure.reason}`
  if (typeof value !== "object" || value === null || Array.isArray(value)) return "the answer must be a JSON object"
  const tool: Tool.Any = form.success
  const decoded = ToolInput.decoder(toolName, tool.input)(value)
  if (Result.isSuccess(decoded)) return undefined
  const failure = decoded.failure
  return failure._tag === "InvalidArguments"
    ? failure.issues.map((issue) => `at ${formatPath(issue.path)}: ${issue.message}`).join("; ")
    : failure.message
}
