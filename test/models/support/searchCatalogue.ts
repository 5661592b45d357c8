/**
 * What the native tool search tests of the adapters share: a small catalogue
 * (one tool loaded, three deferred behind `search_tools`), the run options
 * that defer them, and the check that a conversation's earlier turns go out
 * byte for byte the same on every later request.
 */
import { assert } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { Tool, ToolRegistry } from "../../../src/index.ts"
import type { Recorded } from "./loopback.ts"

const tool = (name: string, description: string) =>
  Tool.make(name, {
    description,
    input: Schema.Struct({ city: Schema.String.annotate({ description: "the city" }) }),
    safety: { access: "read", idempotent: true },
    handler: ({ city }) => Effect.succeed(`${name}(${city})`)
  })

export const catalogue = ToolRegistry.makeResult([
  tool("get_weather", "Current weather for a city: temperature and sky."),
  tool("book_hotel", "Book a hotel room in a city."),
  tool("find_restaurant", "Find restaurants in a city by cuisine."),
  tool("convert_currency", "Convert an amount between currencies.")
]).pipe((r) => {
  if (r._tag === "Failure") throw r.failure
  return r.success
})

/** `Agent.run`'s `toolSearch`: everything deferred but `convert_currency`, one tool per search. */
export const toolSearch = { loaded: ["convert_currency"], maxResults: 1 }

/** The deferred tools, in registry order. */
export const deferredNames = ["get_weather", "book_hotel", "find_restaurant"]

/**
 * Each request's `field` (the transcript: `messages` or `input`) starts with the previous request's,
 * byte for byte as sent, and each request's `tools` is the first's, byte for byte.
 */
export const assertStablePrefix = (requests: ReadonlyArray<Recorded>, field: string) => {
  const json = (request: Recorded) => request.json as Record<string, unknown>
  const tools = JSON.stringify(json(requests[0]!).tools)
  for (const [n, request] of requests.entries()) {
    assert.strictEqual(JSON.stringify(json(request).tools), tools, `request ${n}: the tools differ from the first request's`)
    assert.include(request.body, tools, `request ${n}: the tools as sent`)
    if (n === 0) continue
    const before = JSON.stringify(json(requests[n - 1]!)[field])
    const now = JSON.stringify(json(request)[field])
    assert.isTrue(now.startsWith(before.slice(0, -1)), `request ${n}: the ${field} of request ${n - 1} is not its prefix`)
    assert.include(request.body, before.slice(0, -1), `request ${n}: the earlier ${field} as sent`)
  }
}
