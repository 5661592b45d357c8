/**
 * The BFCL corpus (Berkeley Function Calling Leaderboard v4, see
 * `test/fixtures/bfcl/SOURCE.md`): every function of `simple_python`, `multiple`
 * and `live_simple` becomes a dynamic tool; every canonical call without
 * `schema_errors` validates by its original name, as JSON text and as an
 * object; each call mutated (a required key removed, a value of the wrong type)
 * is rejected with an issue at that key; foreign names go through aliases.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Result, Schema } from "effect"
import { readFileSync } from "node:fs"
import * as Tool from "../src/contract/Tool.ts"
import type { InvalidArguments, MalformedArguments, ToolNotAllowed, ToolNotFound } from "../src/contract/ToolError.ts"
import * as ToolName from "../src/contract/ToolName.ts"
import * as ToolRegistry from "../src/contract/ToolRegistry.ts"

// ---------------------------------------------------------------------------
// corpus
// ---------------------------------------------------------------------------

const corpusDir = new URL("./fixtures/bfcl/", import.meta.url)

const JsonObject = Schema.Record(Schema.String, Schema.Unknown)

const CorpusTool = Schema.Struct({
  name: Schema.String,
  name_sanitized: Schema.String,
  description: Schema.String,
  input_schema: JsonObject
})

const CanonicalCall = Schema.Struct({
  name: Schema.String,
  arguments: JsonObject,
  schema_errors: Schema.Array(Schema.String)
})

const CorpusEntry = Schema.Struct({
  id: Schema.String,
  category: Schema.String,
  tools: Schema.Array(CorpusTool),
  canonical_calls: Schema.Array(CanonicalCall)
})
type CorpusEntry = typeof CorpusEntry.Type
type CorpusTool = typeof CorpusTool.Type
type CanonicalCall = typeof CanonicalCall.Type
type JsonObject = typeof JsonObject.Type

const decodeEntry = Schema.decodeUnknownSync(CorpusEntry)

const categories = ["simple_python", "multiple", "live_simple"] as const
type Category = typeof categories[number]

/**
 * What the corpus holds (README and `normalization_summary.json`), and how many
 * mutations the tests below derive from it. A guard against a truncated corpus
 * or a silently widened skip; the tests also recount from the files.
 * - `requiredRemoved`: valid calls whose tool has a non-empty `required`.
 * - `wrongTypeCalls` / `wrongTypeArguments`: valid calls (and arguments) given a
 *   value of the wrong type; the only arguments skipped are the three whose
 *   schema is `{}` (BFCL `any`).
 * - `extraKeyMutants`: valid calls given an unknown key in one of their objects
 *   (the arguments object, and every object nested in them), each refused.
 * - `foreignNames`: functions whose name is not canonical (counted per entry).
 */
const expected: Record<Category, {
  readonly entries: number
  readonly tools: number
  readonly validCalls: number
  readonly requiredRemoved: number
  readonly wrongTypeCalls: number
  readonly wrongTypeArguments: number
  readonly extraKeyMutants: number
  readonly foreignNames: number
}> = {
  simple_python: {
    entries: 400,
    tools: 400,
    validCalls: 400,
    requiredRemoved: 400,
    wrongTypeCalls: 400,
    wrongTypeArguments: 1141,
    extraKeyMutants: 406,
    foreignNames: 173
  },
  multiple: {
    entries: 200,
    tools: 557,
    validCalls: 200,
    requiredRemoved: 200,
    wrongTypeCalls: 200,
    wrongTypeArguments: 557,
    extraKeyMutants: 203,
    foreignNames: 320
  },
  live_simple: {
    entries: 258,
    tools: 258,
    validCalls: 256,
    requiredRemoved: 233,
    wrongTypeCalls: 254,
    wrongTypeArguments: 671,
    extraKeyMutants: 274,
    foreignNames: 134
  }
}

const readCategory = (category: Category): ReadonlyArray<CorpusEntry> =>
  readFileSync(new URL(`${category}.normalized.jsonl`, corpusDir), "utf8")
    .split("\n")
    .filter((line) => line.trim().length > 0)
    .map((line) => decodeEntry(JSON.parse(line)))

// ---------------------------------------------------------------------------
// fixtures: tools and registries, built once per category
// ---------------------------------------------------------------------------

interface Built {
  readonly entry: CorpusEntry
  /** `undefined` when a tool failed to import or the registry failed to build. */
  readonly registry: ToolRegistry.ToolRegistry | undefined
}

interface Fixture {
  readonly entries: ReadonlyArray<CorpusEntry>
  readonly built: ReadonlyArray<Built>
  readonly imported: number
  readonly importFailures: ReadonlyArray<string>
  readonly registryFailures: ReadonlyArray<string>
}

const handler = () => Effect.succeed(null)

const importTool = (tool: CorpusTool): Result.Result<Tool.Dynamic, Tool.SchemaImportError> =>
  Tool.fromJsonSchema(tool.name, { description: tool.description, inputSchema: tool.input_schema, handler })

const fixtures = new Map<Category, Fixture>()

const fixture = (category: Category): Fixture => {
  const cached = fixtures.get(category)
  if (cached !== undefined) return cached
  const entries = readCategory(category)
  const importFailures: Array<string> = []
  const registryFailures: Array<string> = []
  let imported = 0
  const built = entries.map((entry): Built => {
    const tools: Array<Tool.Dynamic> = []
    for (const tool of entry.tools) {
      const result = importTool(tool)
      if (Result.isSuccess(result)) {
        imported++
        tools.push(result.success)
      } else {
        importFailures.push(`${entry.id}: ${result.failure.message}`)
      }
    }
    if (tools.length !== entry.tools.length) return { entry, registry: undefined }
    const registry = ToolRegistry.makeResult(tools)
    if (Result.isFailure(registry)) {
      registryFailures.push(`${entry.id}: ${registry.failure.message}`)
      return { entry, registry: undefined }
    }
    return { entry, registry: registry.success }
  })
  const result: Fixture = { entries, built, imported, importFailures, registryFailures }
  fixtures.set(category, result)
  return result
}

/** Every canonical call without schema errors, with its registry and its tool's schema. */
interface ValidCall {
  readonly id: string
  readonly call: CanonicalCall
  readonly registry: ToolRegistry.ToolRegistry
  readonly schema: JsonObject
}

const validCalls = (category: Category): ReadonlyArray<ValidCall> =>
  fixture(category).built.flatMap(({ entry, registry }) =>
    registry === undefined ? [] : entry.canonical_calls.flatMap((call, i) => {
      if (call.schema_errors.length > 0) return []
      const tool = entry.tools.find((t) => t.name === call.name)
      if (tool === undefined) throw new Error(`${entry.id}: call ${i} names ${call.name}, which the entry does not define`)
      return [{ id: `${entry.id}#${i}`, call, registry, schema: tool.input_schema }]
    })
  )

type Rejection = ToolNotFound | ToolNotAllowed | MalformedArguments | InvalidArguments

const resolve = (
  registry: ToolRegistry.ToolRegistry,
  name: string,
  args: unknown
): Result.Result<ToolRegistry.Resolved, Rejection> =>
  ToolRegistry.resolve(ToolRegistry.all(registry), { id: "call_1", name, arguments: args })

// ---------------------------------------------------------------------------
// JSON helpers (unknown + narrowing)
// ---------------------------------------------------------------------------

const isJsonObject = (u: unknown): u is JsonObject => typeof u === "object" && u !== null && !Array.isArray(u)

const propertiesOf = (schema: JsonObject): JsonObject => isJsonObject(schema.properties) ? schema.properties : {}

const requiredOf = (schema: JsonObject): ReadonlyArray<string> =>
  Array.isArray(schema.required) ? schema.required.filter((k): k is string => typeof k === "string") : []

const without = (args: JsonObject, key: string): JsonObject =>
  Object.fromEntries(Object.entries(args).filter(([k]) => k !== key))

type JsonType = "string" | "integer" | "number" | "boolean" | "array" | "object" | "null"
const jsonTypes: ReadonlySet<string> = new Set<JsonType>(["string", "integer", "number", "boolean", "array", "object", "null"])

/** The JSON Schema types a value satisfies. */
const typesOfValue = (value: unknown): ReadonlyArray<JsonType> =>
  value === null
    ? ["null"]
    : Array.isArray(value)
    ? ["array"]
    : typeof value === "number"
    ? Number.isInteger(value) ? ["integer", "number"] : ["number"]
    : typeof value === "string"
    ? ["string"]
    : typeof value === "boolean"
    ? ["boolean"]
    : ["object"]

/** Keywords that make a schema accept more than its `type` says (or that we do not model here). */
const compositeKeywords = ["anyOf", "oneOf", "allOf", "not", "if", "$ref", "const"] as const

/**
 * A value of a clearly wrong type for `schema`, or `undefined` when the schema
 * has no plain `type` (`{}`, unions, references), where any value may be legal.
 * A nullable `type: ["string", "null"]` still gets a value outside every type.
 */
const wrongValueFor = (schema: unknown): { readonly value: unknown } | undefined => {
  if (!isJsonObject(schema)) return undefined
  if (compositeKeywords.some((k) => k in schema)) return undefined
  const declared = typeof schema.type === "string"
    ? [schema.type]
    : Array.isArray(schema.type) && schema.type.every((t): t is string => typeof t === "string")
    ? schema.type
    : []
  if (declared.length === 0 || !declared.every((t) => jsonTypes.has(t))) return undefined
  const primary = declared.find((t) => t !== "null")
  const preferred: ReadonlyArray<unknown> = primary === "string"
    ? [12345]
    : primary === "integer" || primary === "number"
    ? ["not a number"]
    : primary === "boolean"
    ? ["yes"]
    : [7]
  const candidates = [...preferred, 12345, "not a number", true, [1, 2], { wrong: true }]
  const value = candidates.find((v) => typesOfValue(v).every((t) => !declared.includes(t)))
  return value === undefined ? undefined : { value }
}

const hasIssueAt = (error: InvalidArguments, key: string): boolean =>
  error.issues.some((issue) => issue.path.length === 1 && issue.path[0] === key)

/**
 * The corpus schema with every object that lists properties closed (`additionalProperties:
 * false`), at any depth, and the root: what `Tool.fromJsonSchema` shows and enforces. The corpus has no
 * `allOf`/`anyOf`/`oneOf`/`$ref`/`additionalProperties`/`patternProperties` (checked below),
 * so this plain walk is the whole rule here.
 */
const closedObjects = (schema: unknown, root = true): unknown => {
  if (Array.isArray(schema)) return schema.map((item) => closedObjects(item, false))
  if (!isJsonObject(schema)) return schema
  const out: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(schema)) {
    out[key] = key === "properties" && isJsonObject(value)
      ? Object.fromEntries(Object.entries(value).map(([name, child]) => [name, closedObjects(child, false)]))
      : key === "enum" || key === "default" || key === "required" || key === "const"
      ? value
      : closedObjects(value, false)
  }
  // An empty `properties` below the root is a free-form object (Python's `dict`), left open.
  if (isJsonObject(schema.properties) && (root || Object.keys(schema.properties).length > 0)) {
    out.additionalProperties = false
  }
  return out
}

/** Every object value nested in `value` (itself included), with its path. */
const objectsIn = (value: unknown, path: ReadonlyArray<PropertyKey> = []): ReadonlyArray<{
  readonly path: ReadonlyArray<PropertyKey>
  readonly object: JsonObject
}> => {
  if (Array.isArray(value)) return value.flatMap((item, i) => objectsIn(item, [...path, i]))
  if (!isJsonObject(value)) return []
  return [{ path, object: value }, ...Object.entries(value).flatMap(([key, child]) => objectsIn(child, [...path, key]))]
}

/** `args` with `key: value` added to the object at `path`. */
const withKeyAt = (args: unknown, path: ReadonlyArray<PropertyKey>, key: string, value: unknown): unknown => {
  if (path.length === 0) return { ...(args as JsonObject), [key]: value }
  const [head, ...rest] = path
  if (Array.isArray(args)) return args.map((item, i) => i === head ? withKeyAt(item, rest, key, value) : item)
  return { ...(args as JsonObject), [head as string]: withKeyAt((args as JsonObject)[head as string], rest, key, value) }
}

const sample = (lines: ReadonlyArray<string>, n = 5): string =>
  lines.length === 0 ? "" : `\n${lines.slice(0, n).join("\n")}${lines.length > n ? `\n... and ${lines.length - n} more` : ""}`

// ---------------------------------------------------------------------------
// tests
// ---------------------------------------------------------------------------

describe("BFCL corpus", () => {
  for (const category of categories) {
    describe(category, () => {
      it("every function imports as a dynamic tool, and every entry's tools build a registry", () => {
        const { built, entries, importFailures, imported, registryFailures } = fixture(category)
        const corpusTools = entries.reduce((n, e) => n + e.tools.length, 0)
        assert.strictEqual(entries.length, expected[category].entries)
        assert.strictEqual(corpusTools, expected[category].tools)
        assert.deepStrictEqual(importFailures, [], `tools the importer rejects:${sample(importFailures)}`)
        assert.strictEqual(imported, corpusTools)
        assert.deepStrictEqual(registryFailures, [], `registries that fail:${sample(registryFailures)}`)
        for (const { entry, registry } of built) {
          assert.isDefined(registry)
          assert.strictEqual(registry?.entries.length, entry.tools.length)
          // the model sees the schema as given, less `$schema`, with every object closed: what is enforced
          for (const tool of entry.tools) {
            const { $schema: _, ...visible } = tool.input_schema
            assert.deepStrictEqual(registry?.get(tool.name)?.spec.inputSchema, closedObjects(visible))
          }
        }
      })

      it("every canonical call without schema errors resolves by its original name, as JSON text and as an object", () => {
        const { entries } = fixture(category)
        const calls = validCalls(category)
        const fromFile = entries.reduce((n, e) => n + e.canonical_calls.filter((c) => c.schema_errors.length === 0).length, 0)
        assert.strictEqual(calls.length, fromFile)
        assert.strictEqual(calls.length, expected[category].validCalls)
        assert.isAtLeast(calls.length, 200)
        const failures: Array<string> = []
        for (const { call, id, registry } of calls) {
          for (const [style, args] of [["json", JSON.stringify(call.arguments)], ["object", call.arguments]] as const) {
            const resolved = resolve(registry, call.name, args)
            if (Result.isFailure(resolved)) {
              failures.push(`${id} (${style}): ${resolved.failure.message}`)
              continue
            }
            assert.strictEqual(resolved.success.entry.tool.name, call.name)
            assert.deepStrictEqual(resolved.success.input, call.arguments, id)
          }
        }
        assert.deepStrictEqual(failures, [], `canonical calls rejected:${sample(failures)}`)
      })

      it("a canonical call without its first required key is rejected at that key", () => {
        const calls = validCalls(category)
        let tested = 0
        for (const { call, id, registry, schema } of calls) {
          const key = requiredOf(schema)[0]
          if (key === undefined) continue
          assert.isTrue(Object.hasOwn(call.arguments, key), `${id}: the canonical call has its required key ${key}`)
          for (const args of [without(call.arguments, key), JSON.stringify(without(call.arguments, key))]) {
            const resolved = resolve(registry, call.name, args)
            assert.isTrue(Result.isFailure(resolved), `${id}: accepted without required key ${key}`)
            if (Result.isSuccess(resolved)) continue
            const error = resolved.failure
            assert.strictEqual(error._tag, "InvalidArguments", `${id}: ${error.message}`)
            if (error._tag !== "InvalidArguments") continue
            assert.isTrue(hasIssueAt(error, key), `${id}: no issue at ${JSON.stringify([key])}: ${error.message}`)
            assert.include(error.message, JSON.stringify(key))
          }
          tested++
        }
        const withRequired = calls.filter((c) => requiredOf(c.schema).length > 0).length
        assert.strictEqual(tested, withRequired)
        assert.strictEqual(tested, expected[category].requiredRemoved)
        assert.isAbove(tested, calls.length * 0.9)
      })

      it("a canonical call with a value of the wrong type is rejected at that key", () => {
        const calls = validCalls(category)
        let testedCalls = 0
        let testedArguments = 0
        const skipped: Array<{ readonly id: string; readonly key: string; readonly schema: unknown }> = []
        for (const { call, id, registry, schema } of calls) {
          const properties = propertiesOf(schema)
          let any = false
          for (const key of Object.keys(call.arguments)) {
            const wrong = wrongValueFor(properties[key])
            if (wrong === undefined) {
              skipped.push({ id, key, schema: properties[key] })
              continue
            }
            const args = { ...call.arguments, [key]: wrong.value }
            const resolved = resolve(registry, call.name, args)
            assert.isTrue(
              Result.isFailure(resolved),
              `${id}: ${key} = ${JSON.stringify(wrong.value)} accepted for ${JSON.stringify(properties[key])}`
            )
            if (Result.isSuccess(resolved)) continue
            const error = resolved.failure
            assert.strictEqual(error._tag, "InvalidArguments", `${id}: ${error.message}`)
            if (error._tag !== "InvalidArguments") continue
            assert.isTrue(hasIssueAt(error, key), `${id}: no issue at ${JSON.stringify([key])}: ${error.message}`)
            assert.include(error.message, JSON.stringify(key))
            testedArguments++
            any = true
          }
          if (any) testedCalls++
        }
        // Skipping is narrow: only properties whose schema has no `type` at all (BFCL `any` -> `{}`).
        for (const s of skipped) {
          assert.isTrue(
            isJsonObject(s.schema) && s.schema.type === undefined,
            `${s.id}: ${s.key} skipped although its schema is ${JSON.stringify(s.schema)}`
          )
        }
        const withArguments = calls.filter((c) => Object.keys(c.call.arguments).length > 0).length
        assert.strictEqual(testedCalls, expected[category].wrongTypeCalls)
        assert.strictEqual(testedArguments, expected[category].wrongTypeArguments)
        assert.isAbove(testedCalls, withArguments * 0.95)
        assert.isAtMost(skipped.length, 3)
      })

      it("a canonical call with a key its tool does not declare is rejected at that key, in every object", () => {
        // Imported objects are closed, as the exports show them: an extra key anywhere (the
        // arguments object, a nested object, an object in an array) is an error, never passed on.
        const calls = validCalls(category)
        let mutants = 0
        const freeForm: Array<string> = []
        for (const { call, id, registry, schema } of calls) {
          assert.notInclude(JSON.stringify(schema), "additionalProperties", id)
          assert.notMatch(JSON.stringify(schema), /"(allOf|anyOf|oneOf|\$ref|patternProperties)"/, id)
          for (const { object, path } of objectsIn(call.arguments)) {
            const key = "zz_extra"
            assert.isFalse(Object.hasOwn(object, key))
            const args = withKeyAt(call.arguments, path, key, 1)
            for (const raw of [args, JSON.stringify(args)]) {
              const resolved = resolve(registry, call.name, raw)
              // An object inside an untyped (BFCL `any`) or free-form value may hold any key.
              if (Result.isSuccess(resolved)) {
                assert.isTrue(path.length > 0, `${id}: ${key} accepted at the root`)
                freeForm.push(`${id} ${JSON.stringify(path)}`)
                continue
              }
              const error = resolved.failure
              assert.strictEqual(error._tag, "InvalidArguments", `${id}: ${error.message}`)
              if (error._tag !== "InvalidArguments") continue
              assert.isTrue(
                error.issues.some((issue) =>
                  JSON.stringify(issue.path) === JSON.stringify([...path, key]) && issue.message.startsWith("Unexpected key")
                ),
                `${id}: no unexpected-key issue at ${JSON.stringify([...path, key])}: ${error.message}`
              )
              mutants++
            }
          }
        }
        assert.strictEqual(mutants, 2 * expected[category].extraKeyMutants)
        // Accepted only inside values whose schema is free-form (`{}` or an object without properties).
        for (const line of freeForm) {
          const [id, path] = [line.slice(0, line.indexOf(" ")), JSON.parse(line.slice(line.indexOf(" ") + 1)) as Array<string>]
          const entry = calls.find((c) => c.id === id)!
          let node: unknown = entry.schema
          for (const key of path) {
            if (typeof key !== "string" || !isJsonObject(node)) break
            node = propertiesOf(node)[key]
          }
          assert.isTrue(
            isJsonObject(node) && (node.properties === undefined || Object.keys(propertiesOf(node)).length === 0),
            `${line}: accepted inside ${JSON.stringify(node)}`
          )
        }
      })

      it("names that are not canonical go through reversible aliases", () => {
        const { built } = fixture(category)
        let foreign = 0
        let differsFromCorpus = 0
        for (const { entry, registry } of built) {
          if (registry === undefined) continue
          for (const tool of entry.tools) {
            if (ToolName.isToolName(tool.name)) {
              assert.strictEqual(registry.aliases.toCanonical(tool.name), tool.name)
              continue
            }
            foreign++
            const canonical = registry.aliases.toCanonical(tool.name)
            assert.isDefined(canonical, `${entry.id}: no alias for ${tool.name}`)
            if (canonical === undefined) continue
            assert.isTrue(ToolName.isToolName(canonical), `${entry.id}: alias ${canonical} is not canonical`)
            assert.notStrictEqual<string>(canonical, tool.name)
            assert.strictEqual(registry.aliases.toOriginal(canonical), tool.name)
            assert.strictEqual(registry.get(canonical), registry.get(tool.name))
            assert.strictEqual(registry.get(canonical)?.spec.originalName, tool.name)
            // informational only: ours is lower snake_case, the corpus keeps case
            if (canonical !== tool.name_sanitized) differsFromCorpus++
          }
          for (const call of entry.canonical_calls) {
            if (call.schema_errors.length > 0 || ToolName.isToolName(call.name)) continue
            const canonical = registry.aliases.toCanonical(call.name)
            assert.isDefined(canonical)
            if (canonical === undefined) continue
            const resolved = resolve(registry, canonical, JSON.stringify(call.arguments))
            assert.isTrue(Result.isSuccess(resolved), `${entry.id}: call by alias ${canonical} rejected`)
            if (Result.isSuccess(resolved)) {
              assert.strictEqual(resolved.success.entry.tool.name, call.name)
              assert.strictEqual(resolved.success.entry.spec.name, canonical)
            }
          }
        }
        assert.strictEqual(foreign, expected[category].foreignNames)
        // informational: ours is lower snake_case (`calculate_BMI` -> `calculate_bmi`), so it may
        // differ from the corpus's `name_sanitized`; equality is not required
        assert.isAtMost(differsFromCorpus, foreign)
      })
    })
  }

  it("two imported tools whose names sanitise alike (a.b and a_b) collide", () => {
    const inputSchema = { type: "object", properties: { x: { type: "integer" } }, required: ["x"] }
    const dotted = Tool.fromJsonSchema("a.b", { description: "dotted", inputSchema, handler })
    const snake = Tool.fromJsonSchema("a_b", { description: "snake", inputSchema, handler })
    assert.isTrue(Result.isSuccess(dotted) && Result.isSuccess(snake))
    if (Result.isFailure(dotted) || Result.isFailure(snake)) return
    for (const tools of [[dotted.success, snake.success], [snake.success, dotted.success]]) {
      const registry = ToolRegistry.makeResult(tools)
      assert.isTrue(Result.isFailure(registry))
      if (Result.isSuccess(registry)) continue
      assert.strictEqual(registry.failure._tag, "InvalidRegistry")
      const collision = registry.failure.violations.find((v) => v._tag === "ToolNameCollision")
      assert.isDefined(collision)
      if (collision?._tag !== "ToolNameCollision") continue
      assert.strictEqual(collision.name, "a_b")
      assert.sameMembers([...collision.originals], ["a.b", "a_b"])
    }
  })
})
