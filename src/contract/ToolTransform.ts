/**
 * Schema-time transforms: rewrite the tools of a registry before the model
 * sees them, then rebuild the registry so the model-visible schema and the
 * argument decoder stay one thing. Three transforms: add a parameter (additive
 * and idempotent: a tool that already declares it is left alone), drop tools,
 * rewrite descriptions. It does not touch handlers: an added parameter reaches
 * the decoded input, and execution middleware decide what to do with it.
 */
import { Data, Effect, Result, Schema, SchemaAST } from "effect"
import * as Tool from "./Tool.ts"
import * as ToolRegistry from "./ToolRegistry.ts"
import * as ToolSchema from "./ToolSchema.ts"

/** A tool's input cannot take the parameter (its root is not a plain object schema). */
export class TransformError extends Data.TaggedError("TransformError")<{
  readonly toolName: string
  readonly transform: string
  readonly reason: string
}> {
  override get message(): string {
    return `transform ${JSON.stringify(this.transform)} cannot rewrite tool ${JSON.stringify(this.toolName)}: ${this.reason}`
  }
}

/** Rewrites one tool: a new tool, the same tool, or `undefined` to drop it. */
export interface Transform {
  readonly name: string
  readonly apply: (tool: Tool.Any, spec: Tool.ToolSpec) => Result.Result<Tool.Any | undefined, TransformError>
}

export interface ParameterOptions {
  /** The parameter's schema (a plain JSON value schema, e.g. `Schema.String`). */
  readonly schema: Schema.Top
  /** Required in the schema (the decoder rejects calls without it). Default `true`. */
  readonly required?: boolean
  /** Only these tools get the parameter. Default: every tool. */
  readonly only?: ToolRegistry.Selection
}

/** Parameters added by `addParameter`, per rewritten tool (carried through later transforms). */
const added = new WeakMap<Tool.Any, ReadonlySet<string>>()

/** The parameters transforms added to `tool` (not declared by the tool itself). */
export const addedParameters = (tool: Tool.Any): ReadonlySet<string> => added.get(tool) ?? new Set()

const carry = (from: Tool.Any, to: Tool.Any, extra?: string): void => {
  const names = new Set(added.get(from))
  if (extra !== undefined) names.add(extra)
  if (names.size > 0) added.set(to, names)
}

const selects = (selection: ToolRegistry.Selection | undefined, tool: Tool.Any, spec: Tool.ToolSpec): boolean =>
  selection === undefined
    ? true
    : typeof selection === "function"
    ? selection(spec)
    : selection.includes(spec.name) || selection.includes(tool.name)

/**
 * Adds the parameter `name` to every selected tool's input schema (and to the
 * model-visible JSON Schema of imported tools). Tools that already declare
 * `name` are left unchanged, so applying it twice changes nothing.
 */
export const addParameter = (name: string, options: ParameterOptions): Transform => {
  const required = options.required ?? true
  const field = required ? options.schema : Schema.optionalKey(options.schema)
  const property = Result.map(
    ToolSchema.toJsonSchema(name, Schema.Struct({ [name]: options.schema })),
    (object) => (object.properties as Record<string, unknown> | undefined)?.[name]
  )
  return {
    name: `addParameter(${name})`,
    apply: (tool, spec) => {
      if (!selects(options.only, tool, spec)) return Result.succeed(tool)
      const fail = (reason: string) =>
        Result.fail(new TransformError({ toolName: tool.name, transform: `addParameter(${name})`, reason }))
      const ast = tool.input.ast
      if (!SchemaAST.isObjects(ast) || ast.encoding !== undefined) {
        return fail("its input schema is not a plain object schema")
      }
      if (ast.propertySignatures.some((p) => p.name === name)) return Result.succeed(tool)
      if (Result.isFailure(property)) return fail(property.failure.message)
      const input = Schema.make<Schema.Top>(
        new SchemaAST.Objects(
          [...ast.propertySignatures, new SchemaAST.PropertySignature(name, field.ast)],
          ast.indexSignatures,
          ast.annotations,
          ast.checks,
          ast.encoding,
          ast.context,
          ast.encodingChecks
        )
      )
      const visible = tool.jsonSchema?.input
      const jsonSchema = tool.jsonSchema === undefined || visible === undefined ? undefined : {
        ...tool.jsonSchema,
        input: {
          ...visible,
          properties: { ...(visible.properties as Record<string, unknown> | undefined), [name]: property.success },
          ...(required ? { required: [...((visible.required as ReadonlyArray<string> | undefined) ?? []), name] } : {})
        }
      }
      const out: Tool.Any = { ...tool, input, jsonSchema }
      carry(tool, out, name)
      return Result.succeed(out)
    }
  }
}

/** Drops the selected tools (by canonical or original name, or a predicate over the spec). */
export const drop = (selection: ToolRegistry.Selection): Transform => ({
  name: "drop",
  apply: (tool, spec) => Result.succeed(selects(selection, tool, spec) ? undefined : tool)
})

/** Rewrites descriptions; return the description unchanged to leave a tool alone. */
export const describe = (rewrite: (spec: Tool.ToolSpec) => string): Transform => ({
  name: "describe",
  apply: (tool, spec) => {
    const description = rewrite(spec)
    if (description === tool.description) return Result.succeed(tool)
    const out: Tool.Any = { ...tool, description }
    carry(tool, out)
    return Result.succeed(out)
  }
})

/** Applies `transforms` in order to a list of tools. */
export const applyTools = (
  tools: ReadonlyArray<Tool.Any>,
  transforms: ReadonlyArray<Transform>
): Result.Result<ReadonlyArray<Tool.Any>, TransformError | ToolRegistry.InvalidRegistry> => {
  const out: Array<Tool.Any> = []
  for (const original of tools) {
    let tool: Tool.Any | undefined = original
    for (const transform of transforms) {
      if (tool === undefined) break
      const spec = Tool.spec(tool)
      if (Result.isFailure(spec)) return Result.fail(new ToolRegistry.InvalidRegistry({ violations: [spec.failure] }))
      const next = transform.apply(tool, spec.success)
      if (Result.isFailure(next)) return Result.fail(next.failure)
      tool = next.success
    }
    if (tool !== undefined) out.push(tool)
  }
  return Result.succeed(out)
}

/**
 * A new registry with `transforms` applied to every tool, rebuilt (and
 * rechecked) so decoders follow the rewritten schemas.
 */
export const apply = <R>(
  registry: ToolRegistry.ToolRegistry<R>,
  transforms: ReadonlyArray<Transform>
): Effect.Effect<ToolRegistry.ToolRegistry<R>, TransformError | ToolRegistry.InvalidRegistry> =>
  Effect.suspend(() => {
    const tools = applyTools(registry.entries.map((entry) => entry.tool), transforms)
    if (Result.isFailure(tools)) return Effect.fail(tools.failure)
    const rebuilt = ToolRegistry.makeResult(tools.success, { limits: registry.limits })
    return Result.isSuccess(rebuilt)
      ? Effect.succeed(rebuilt.success as ToolRegistry.ToolRegistry<R>)
      : Effect.fail(rebuilt.failure)
  })
