/**
 * Selection: name lists and predicates; the BM25 ranker (tokenising
 * snake_case, camelCase and dots) with maxTools and alwaysInclude; the
 * model-based selector and its fallbacks; hidden tools refused at the
 * boundary; and the lexical ranker on the BFCL `multiple` category.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit, Result, Schema } from "effect"
import { readFileSync } from "node:fs"
import { tokenize } from "../src/agent/internal/bm25.ts"
import { Executor, Tool, ToolRegistry, ToolServices } from "../src/index.ts"
import type { Safety } from "../src/index.ts"
import * as Selection from "../src/agent/Selection.ts"

const toolWith = (name: string, description: string, safety: Safety.Safety = {}) =>
  Tool.make(name, { description, input: Schema.Struct({}), safety, handler: () => Effect.succeed(name) })

const tools = [
  toolWith("read_file", "Read a text file from the workspace.", { access: "read", tags: ["files"] }),
  toolWith("write_file", "Write a text file in the workspace, replacing it.", { access: "write", tags: ["files"] }),
  toolWith("search_web", "Search the web for pages matching a query.", { access: "network", tags: ["web"] }),
  toolWith("send_email", "Send an email message to a recipient.", { access: "network" }),
  toolWith("delete_repository", "Delete a git repository. Destructive.", { access: "mutate" }),
  toolWith("get_weather", "Current weather forecast for a city.", { access: "network" })
]
const registry = Result.getOrThrow(ToolRegistry.makeResult(tools))
const namesOf = (advertised: ToolRegistry.Advertised) => [...advertised.names]

describe("Selection: lists and predicates", () => {
  it.effect("names and where", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(namesOf(yield* Selection.names(registry, ["send_email"])("anything")), ["send_email"])
      assert.deepStrictEqual(
        namesOf(yield* Selection.where(registry, Selection.accessAtMost("write"))("")),
        ["read_file", "write_file"]
      )
      assert.deepStrictEqual(namesOf(yield* Selection.where(registry, Selection.tagged("web"))("")), ["search_web"])
      assert.deepStrictEqual(
        namesOf(yield* Selection.where(registry, Selection.every(Selection.tagged("files"), Selection.accessAtMost("read")))("")),
        ["read_file"]
      )
    }))

  it.effect("a listed name the registry lacks (names, alwaysInclude) is a defect naming it", () =>
    Effect.gen(function*() {
      const selectors = [
        Selection.names(registry, ["send_email", "send_emial"]),
        Selection.lexical(registry, { maxTools: 1, alwaysInclude: ["send_emial"] }),
        Selection.model(registry, () => Effect.succeed(["send_email"]), { maxTools: 1, alwaysInclude: ["send_emial"] })
      ]
      for (const select of selectors) {
        const exit = yield* Effect.exit(select("mail the report"))
        assert.isTrue(Exit.isFailure(exit))
        if (Exit.isFailure(exit)) {
          const defect = Cause.squash(exit.cause)
          assert.instanceOf(defect, ToolRegistry.UnknownToolNames)
          assert.include(String((defect as Error).message), "unknown tool name \"send_emial\"; registered tools: read_file")
        }
      }
    }))
})

describe("Selection.lexical", () => {
  it("tokenises snake_case, camelCase, dots and punctuation; drops stop words; stems plurals", () => {
    assert.deepStrictEqual(tokenize("getUserID math.factorial read_files HTTPServer"), [
      "user",
      "id",
      "math",
      "factorial",
      "read",
      "file",
      "http",
      "server"
    ])
  })

  it.effect("ranks by name and description; maxTools bounds the list; alwaysInclude is added", () =>
    Effect.gen(function*() {
      const ranked = Selection.rank(registry, "what's the weather forecast in Paris?")
      assert.strictEqual(ranked[0]!.name, "get_weather")
      assert.isTrue(ranked[0]!.score > ranked[1]!.score)
      const two = yield* Selection.lexical(registry, { maxTools: 2 })("please read the file notes.txt and write a file")
      assert.sameMembers(namesOf(two), ["read_file", "write_file"])
      const withAlways = yield* Selection.lexical(registry, { maxTools: 1, alwaysInclude: ["send_email"] })("search the web")
      assert.deepStrictEqual(namesOf(withAlways), ["search_web", "send_email"])
      const nothing = yield* Selection.lexical(registry, { maxTools: 3 })("zebra quantum")
      assert.deepStrictEqual(namesOf(nothing), [])
    }))

  it.effect("a tool the selector hid is refused at the boundary", () =>
    Effect.gen(function*() {
      const executor = yield* Executor.make(registry)
      const advertised = yield* Selection.lexical(registry, { maxTools: 1 })("weather in Oslo")
      const hidden = yield* executor.run({ id: "c1", name: "delete_repository", arguments: {} }, { advertised })
      const shown = yield* executor.run({ id: "c2", name: "get_weather", arguments: {} }, { advertised })
      assert.strictEqual(hidden.error?._tag, "ToolNotAllowed")
      assert.strictEqual(shown.value, "get_weather")
    }).pipe(Effect.provide(ToolServices.layerTest())))
})

describe("Selection.model", () => {
  it.effect("uses the model's picks (unknown names dropped, capped at maxTools)", () =>
    Effect.gen(function*() {
      const select = Selection.model(registry, () => Effect.succeed(["send_email", "made_up", "read_file", "get_weather"]), {
        maxTools: 2
      })
      assert.deepStrictEqual(namesOf(yield* select("mail the report")), ["read_file", "send_email"])
    }))

  it.effect("falls back to the lexical ranker when the model fails or names no real tool", () =>
    Effect.gen(function*() {
      const failing = Selection.model(registry, () => Effect.fail("rate limited"), { maxTools: 1 })
      const inventing = Selection.model(registry, () => Effect.succeed(["weather_api"]), { maxTools: 1 })
      assert.deepStrictEqual(namesOf(yield* failing("weather in Rome")), ["get_weather"])
      assert.deepStrictEqual(namesOf(yield* inventing("weather in Rome")), ["get_weather"])
    }))

  it.effect("the model sees the specs and the query", () =>
    Effect.gen(function*() {
      let seen: [string, number] = ["", 0]
      const select = Selection.model(registry, (query, specs) => {
        seen = [query, specs.length]
        return Effect.succeed(["search_web"])
      }, { maxTools: 3, alwaysInclude: ["read_file"] })
      assert.deepStrictEqual(namesOf(yield* select("find pages")), ["read_file", "search_web"])
      assert.deepStrictEqual(seen, ["find pages", 6])
    }))
})

// ---------------------------------------------------------------------------
// BFCL `multiple`: each entry offers 2 to 4 functions; the lexical selector
// must keep the expected one (canonical_calls[0].name) for the user question.
// ---------------------------------------------------------------------------

interface CorpusTool {
  readonly name: string
  readonly description: string
  readonly input_schema: { readonly [key: string]: unknown }
}
interface CorpusEntry {
  readonly id: string
  readonly tools: ReadonlyArray<CorpusTool>
  readonly canonical_calls: ReadonlyArray<{ readonly name: string }>
}

const corpus = new URL("./fixtures/bfcl/", import.meta.url)
const linesOf = (file: string) => readFileSync(new URL(file, corpus), "utf8").trim().split("\n").map((l) => JSON.parse(l))
const entries: ReadonlyArray<CorpusEntry> = linesOf("multiple.normalized.jsonl")
const questions = new Map<string, string>(
  linesOf("multiple.questions.jsonl").map((e: { id: string; question: Array<Array<{ role: string; content: string }>> }) => [
    e.id,
    e.question.flat().filter((m) => m.role === "user").map((m) => m.content).join("\n")
  ])
)
const toolOf = (t: CorpusTool) =>
  Result.getOrThrow(Tool.fromJsonSchema(t.name, {
    description: t.description,
    inputSchema: t.input_schema,
    handler: () => Effect.succeed(null)
  }))

describe("Selection.lexical on BFCL multiple", () => {
  it.effect("maxTools 3 keeps the expected function for nearly every entry", () =>
    Effect.gen(function*() {
      assert.strictEqual(entries.length, 200)
      let hits = 0
      let top1 = 0
      let hard = 0
      let hardHits = 0
      for (const entry of entries) {
        const reg = Result.getOrThrow(ToolRegistry.makeResult(entry.tools.map(toolOf)))
        const expected = reg.aliases.toCanonical(entry.canonical_calls[0]!.name)!
        const question = questions.get(entry.id)!
        assert.isString(question)
        const advertised = yield* Selection.lexical(reg, { maxTools: 3 })(question)
        const best = yield* Selection.lexical(reg, { maxTools: 1 })(question)
        if (advertised.has(expected)) hits++
        if (best.has(expected)) top1++
        if (entry.tools.length > 3) {
          hard++
          if (advertised.has(expected)) hardHits++
        }
      }
      // Measured: 197/200 (98.5%) with maxTools 3, 36/36 on the entries offering 4 tools, top-1 192/200 (96%).
      // The 3 misses share no term with their question ("When was the signing of the Treaty of Lisbon?" vs
      // "Retrieve the date of a historical event."), so the default minScore of 0 leaves them out.
      assert.isAtLeast(hits / entries.length, 0.97)
      assert.isAtLeast(hardHits / hard, 0.94)
      assert.isAtLeast(top1 / entries.length, 0.94)
    }))

  it.effect("pooled: all distinct functions of the category in one registry (440 tools)", () =>
    Effect.gen(function*() {
      const pool = new Map<string, CorpusTool>()
      for (const entry of entries) {
        for (const t of entry.tools) {
          const key = t.name.toLowerCase().replace(/[^a-z0-9]+/g, "_")
          if (!pool.has(key)) pool.set(key, t)
        }
      }
      const reg = Result.getOrThrow(ToolRegistry.makeResult([...pool.values()].map(toolOf)))
      let top3 = 0
      for (const entry of entries) {
        const name = entry.canonical_calls[0]!.name
        const expected = reg.aliases.toCanonical(name) ??
          reg.aliases.toCanonical(pool.get(name.toLowerCase().replace(/[^a-z0-9]+/g, "_"))!.name)!
        const advertised = yield* Selection.lexical(reg, { maxTools: 3 })(questions.get(entry.id)!)
        if (advertised.has(expected)) top3++
      }
      // Measured: 179/200 (89.5%) in the top 3 of 440 tools.
      assert.strictEqual(reg.names.length, 440)
      assert.isAtLeast(top3 / entries.length, 0.87)
    }))
})
