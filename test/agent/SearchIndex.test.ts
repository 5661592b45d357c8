/**
 * The tool-search index (src/agent/internal/searchIndex.ts): what it reads of a tool (names,
 * original names, description, parameters at any nesting it walks), its order (best first, ties in
 * catalogue order), what it never returns (a tool sharing no term with the query), its limit, and
 * its recall on the catalogue of test/fixtures/catalogue against today's selector.
 */
import { assert, describe, it } from "@effect/vitest"
import { Result } from "effect"
import * as SearchIndex from "../../src/agent/internal/searchIndex.ts"
import * as Selection from "../../src/agent/Selection.ts"
import * as ToolName from "../../src/contract/ToolName.ts"
import * as Catalogue from "../fixtures/catalogue/catalogue.ts"

const spec = (
  name: string,
  description: string,
  properties: { readonly [key: string]: unknown } = {},
  originalName?: string
): SearchIndex.Indexed => ({
  name: Result.getOrThrow(ToolName.validate(name)),
  ...(originalName === undefined ? {} : { originalName }),
  description,
  inputSchema: { type: "object", properties }
})

const specs = [
  spec("read_file", "Read a text file from the workspace.", { path: { type: "string", description: "file path" } }),
  spec("send_email", "Send a message to a recipient.", {
    recipient: { type: "string", description: "address of the person" },
    attachments: {
      type: "array",
      items: { type: "object", properties: { mimeType: { type: "string", description: "media kind, e.g. pdf" } } }
    }
  }),
  spec("get_weather", "Current conditions for a city.", {}, "getWeather"),
  spec("math_factorial", "n! of an integer.", { n: { type: "integer" } }, "math.factorial"),
  spec("delete_repository", "Delete a git repository. Destructive."),
  spec("remove_repository", "Delete a git repository. Destructive.")
]
const index = SearchIndex.make(specs)
const names = (query: string, limit = 5) => index.search(query, limit).map((hit) => hit.name as string)

describe("SearchIndex", () => {
  it("finds a tool by its name, its original name, its description and its parameters", () => {
    assert.strictEqual(names("weather")[0], "get_weather")
    assert.strictEqual(names("getWeather in Oslo")[0], "get_weather")
    assert.strictEqual(names("factorial of 7")[0], "math_factorial")
    assert.strictEqual(names("workspace")[0], "read_file")
    // only in a parameter description, and in a nested one (array items' properties)
    assert.deepStrictEqual(names("the person"), ["send_email"])
    assert.deepStrictEqual(names("a pdf media kind"), ["send_email"])
    assert.deepStrictEqual(names("mime type"), ["send_email"])
  })

  it("ranks best first; equal scores keep catalogue order; scores are positive", () => {
    const hits = index.search("delete the repository", 5)
    assert.deepStrictEqual(hits.map((h) => h.name as string), ["delete_repository", "remove_repository"])
    const ties = index.search("git repository", 5)
    assert.deepStrictEqual(ties.map((h) => h.name as string), ["delete_repository", "remove_repository"])
    assert.strictEqual(ties[0]!.score, ties[1]!.score)
    const reversed = SearchIndex.make([...specs].reverse()).search("git repository", 5)
    assert.deepStrictEqual(reversed.map((h) => h.name as string), ["remove_repository", "delete_repository"])
    for (const hit of [...hits, ...ties]) assert.isAbove(hit.score, 0)
    const ranked = index.search("read the file and send it to a recipient", 5)
    for (let i = 1; i < ranked.length; i++) assert.isAtLeast(ranked[i - 1]!.score, ranked[i]!.score)
  })

  it("never returns a tool sharing no term with the query; honours the limit", () => {
    assert.deepStrictEqual(names("zebra quantum"), [])
    assert.deepStrictEqual(names(""), [])
    assert.deepStrictEqual(names("the of and"), [])
    assert.deepStrictEqual(names("repository", 1), ["delete_repository"])
    assert.deepStrictEqual(names("repository", 0), [])
    assert.strictEqual(index.size, specs.length)
    assert.deepStrictEqual(SearchIndex.make([]).search("anything", 5), [])
  })

  it("a search leaves nothing behind for the next one", () => {
    const first = index.search("send the file by email", 5)
    index.search("weather", 5)
    assert.deepStrictEqual(index.search("send the file by email", 5), first)
    assert.deepStrictEqual(names("weather"), ["get_weather"])
  })

  it("walks a deeply nested schema without recursion, reading parameters to a bounded depth", () => {
    let schema: { [key: string]: unknown } = { type: "string", description: "innermost treasure" }
    for (let depth = 0; depth < 100_000; depth++) schema = { type: "object", properties: { level: schema } }
    const deep = spec("deep_tool", "A tool with a deep schema.")
    const shallow = spec("shallow_tool", "Another tool.", {
      outer: { type: "object", properties: { inner: { type: "string", description: "hidden treasure" } } }
    })
    const built = SearchIndex.make([{ ...deep, inputSchema: schema as never }, shallow])
    assert.deepStrictEqual(built.search("treasure", 5).map((h) => h.name as string), ["shallow_tool"])
    assert.deepStrictEqual(built.search("level", 5).map((h) => h.name as string), ["deep_tool"])
  })

  it("reads any script, accents folded on both sides; scripts without spaces by character pairs", () => {
    const world = SearchIndex.make([
      spec("pogoda", "Текущая погода в городе."),
      spec("tenki", "都市の天気予報"),
      spec("vuelo", "Busca vuelos a París."),
      spec("cafe_menu", "The menu of a café, with prices.")
    ])
    const found = (query: string) => world.search(query, 5).map((hit) => hit.name as string)
    assert.deepStrictEqual(found("Погода"), ["pogoda"])
    assert.deepStrictEqual(found("天気"), ["tenki"])
    assert.deepStrictEqual(found("paris"), ["vuelo"])
    assert.deepStrictEqual(found("París"), ["vuelo"])
    assert.deepStrictEqual(found("cafe"), ["cafe_menu"])
    assert.deepStrictEqual(found("CAFÉ"), ["cafe_menu"])
    assert.deepStrictEqual(found("予約"), [])
  })

  it("accept: only the tools it admits, the limit filled from them", () => {
    assert.deepStrictEqual(names("repository"), ["delete_repository", "remove_repository"])
    const admitted = index.search("git repository", 1, (name) => name !== "delete_repository")
    assert.deepStrictEqual(admitted.map((hit) => hit.name as string), ["remove_repository"])
    assert.deepStrictEqual(index.search("git repository", 5, () => false), [])
  })

  it("parameter weight 0 leaves parameters out", () => {
    const withoutParameters = SearchIndex.make(specs, { parameterWeight: 0 })
    assert.deepStrictEqual(withoutParameters.search("the person", 5), [])
  })
})

describe("SearchIndex on the catalogue (1,295 tools, 400 BFCL questions)", () => {
  it("finds more expected tools in its first 5 than Selection.rank", () => {
    const registry = Catalogue.registry(Catalogue.tools())
    const questions = Catalogue.questions()
    const built = SearchIndex.make(registry.specs)
    let expected = 0
    let found = 0
    let foundBySelection = 0
    for (const q of questions) {
      const top = built.search(q.question, 5).map((h) => h.name as string)
      const selected = Selection.rank(registry, q.question).slice(0, 5).map((r) => r.name as string)
      for (const name of q.expected) {
        const canonical = registry.aliases.toCanonical(name)!
        expected++
        if (top.includes(canonical)) found++
        if (selected.includes(canonical)) foundBySelection++
      }
    }
    assert.strictEqual(registry.names.length, 1295)
    assert.strictEqual(expected, 696)
    // Measured (bench/toolsearch.ts): 568/696 (81.6%) against 520/696 (74.7%) for Selection.rank.
    assert.isAtLeast(found / expected, 0.8)
    assert.isAtLeast(found - foundBySelection, 35)
  })
})
