/**
 * Typed failures at the type level (this file is compiled by `tsc`): a
 * handler may fail with the tool's declared `failure` and with `ToolError`s;
 * any other error is a compile error (each `@ts-expect-error` below is one).
 * The runtime rule for undeclared failures from untyped code is in
 * `test/Executor.test.ts`.
 */
import { assert, describe, it } from "@effect/vitest"
import { Data, Effect, Result, Schema } from "effect"
import { Tool, ToolError, ToolResult } from "../src/index.ts"

class NotFound extends Schema.TaggedError<NotFound>()("NotFound", { key: Schema.String }) {}
class Conflict extends Schema.TaggedError<Conflict>()("Conflict", { key: Schema.String }) {}
class Undeclared extends Data.TaggedError("Undeclared")<{ readonly secret: string }> {}

const Input = Schema.Struct({ key: Schema.String })

describe("Tool.make failure types", () => {
  it("a declared failure, a union of them, and ToolErrors compile", () => {
    const declared = Tool.make("lookup", {
      description: "Declares NotFound.",
      input: Input,
      failure: NotFound,
      handler: ({ key }) => Effect.fail(new NotFound({ key }))
    })
    const union = Tool.make("upsert", {
      description: "Declares NotFound or Conflict.",
      input: Input,
      failure: Schema.Union([NotFound, Conflict]),
      // two different errors from one expression need the return type written out (as for any inferred union)
      handler: ({ key }): Effect.Effect<never, NotFound | Conflict> =>
        key === "x" ? Effect.fail(new Conflict({ key })) : Effect.fail(new NotFound({ key }))
    })
    const toolErrors = Tool.make("plain", {
      description: "Declares nothing; fails with tool errors only.",
      input: Input,
      handler: ({ key }): Effect.Effect<never, ToolError.ToolError> =>
        key === "retry" ? Effect.fail(ToolError.retryable("busy")) : Effect.fail(ToolError.repairable(`no ${key}`))
    })
    const mixed = Tool.make("mixed", {
      description: "A declared failure and a tool error.",
      input: Input,
      failure: NotFound,
      handler: ({ key }): Effect.Effect<string, NotFound | ToolError.ToolTransient> =>
        key === "retry" ? Effect.fail(ToolError.retryable("busy")) : Effect.fail(new NotFound({ key }))
    })
    assert.deepStrictEqual([declared, union, toolErrors, mixed].map((t) => t.name), ["lookup", "upsert", "plain", "mixed"])
  })

  it("an undeclared error is a compile error", () => {
    Tool.make("no_failure", {
      description: "Declares nothing.",
      input: Input,
      // @ts-expect-error: Undeclared is neither declared nor a ToolError
      handler: () => Effect.fail(new Undeclared({ secret: "s" }))
    })
    Tool.make("other_failure", {
      description: "Declares NotFound only.",
      input: Input,
      failure: NotFound,
      // @ts-expect-error: Conflict is not declared
      handler: ({ key }) => Effect.fail(new Conflict({ key }))
    })
    Tool.make("plain_error", {
      description: "Fails with a plain Error.",
      input: Input,
      // @ts-expect-error: an Error is not a ToolError
      handler: () => Effect.fail(new Error("nope"))
    })
    Tool.make("no_such_element", {
      description: "Leaks an Effect error.",
      input: Input,
      // @ts-expect-error: NoSuchElementError must be mapped to a declared failure or a ToolError
      handler: () => Effect.fromNullishOr(undefined as string | undefined)
    })
    Result.getOrThrow(Tool.fromJsonSchema("imported", {
      description: "Imported tools declare nothing.",
      inputSchema: { type: "object", properties: {} },
      // @ts-expect-error: imported tools may fail with ToolErrors only
      handler: () => Effect.fail(new Undeclared({ secret: "s" }))
    }))
    assert.ok(true)
  })

  it("toModelOutput receives the typed output and returns text or content blocks", () => {
    const chart = Tool.make("chart", {
      description: "Renders a chart.",
      input: Input,
      output: Schema.Struct({ png: Schema.String, points: Schema.Number }),
      toModelOutput: ({ png, points }) => [ToolResult.text(`${points} points`), ToolResult.image(png, "image/png")],
      handler: () => Effect.succeed({ png: "iVBORw0KGgo=", points: 3 })
    })
    Tool.make("bad_render", {
      description: "Renders a field it does not have.",
      input: Input,
      output: Schema.Struct({ n: Schema.Number }),
      // @ts-expect-error: `missing` is not part of the output
      toModelOutput: ({ missing }) => String(missing),
      handler: () => Effect.succeed({ n: 1 })
    })
    assert.isFunction(chart.toModelOutput)
  })
})
