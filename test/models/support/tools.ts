/**
 * What the adapter tests share besides the server: the recorded provider
 * bodies, a tiny registry (`add`), and the services an agent run needs.
 */
import { Effect, Layer, Schema } from "effect"
import { readFileSync } from "node:fs"
import { Tool, ToolRegistry, ToolServices } from "../../../src/index.ts"

/** A fixture file of `test/fixtures/models/`, parsed. */
export const fixture = (name: string): Record<string, unknown> =>
  JSON.parse(readFileSync(new URL(`../../fixtures/models/${name}`, import.meta.url), "utf8")) as Record<string, unknown>

/** A recorded body with `{KEY}` replaced by `key` (error bodies that echo the key). */
export const withKey = (body: unknown, key: string): unknown => JSON.parse(JSON.stringify(body).split("{KEY}").join(key))

export const add = Tool.make("add", {
  description: "Adds two integers.",
  input: Schema.Struct({ a: Schema.Int, b: Schema.Int }),
  safety: { access: "read", idempotent: true },
  handler: ({ a, b }) => Effect.succeed(a + b)
})

export const registry = ToolRegistry.makeResult([add]).pipe((r) => {
  if (r._tag === "Failure") throw r.failure
  return r.success
})

/** Hidden services for an agent run, with an in-memory event log. */
export const services = ToolServices.layerTest({ runId: "models-run" })

/** Merges the model layer with the agent services. */
export const withServices = <A, E, R>(model: Layer.Layer<A, E, R>) => Layer.merge(model, services)
