/**
 * A structured final answer as the providers' exporters read it: a name, a description and the
 * canonical JSON Schema (draft 2020-12, object root, closed), the shape of `ChatModel.OutputFormat`.
 * Each provider module writes it in its own dialect (`responseFormat`, `textFormat`, ...).
 */
import { Result } from "effect"
import type { JsonSchemaObject } from "../../contract/ToolSchema.ts"
import type { Provider, ProviderExportError } from "../ProviderExportError.ts"
import * as Names from "./names.ts"
import { type Node, toDraft2020 } from "./schema.ts"

/** The answer asked for. */
export interface OutputSchema {
  readonly name: string
  readonly description: string
  readonly schema: JsonSchemaObject
}

/** The answer's name checked against `rule`, and its schema as draft 2020-12. */
export const checked = (
  provider: Provider,
  rule: Names.NameRule,
  output: OutputSchema
): Result.Result<{ readonly name: string; readonly schema: Node }, ProviderExportError> =>
  Result.map(Names.check(provider, rule, output.name), (name) => ({ name, schema: toDraft2020(output.schema) }))
