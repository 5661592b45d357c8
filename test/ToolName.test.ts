import { assert, describe, it } from "@effect/vitest"
import { Effect, Result, Schema } from "effect"
import { Tool, ToolName, ToolRegistry } from "../src/index.ts"

const rules: ReadonlyArray<readonly [name: string, rule: ToolName.Rule | "ok", messagePart: string]> = [
  ["read_file", "ok", ""],
  ["a", "ok", ""],
  ["calc2", "ok", ""],
  ["x".repeat(64), "ok", ""],
  ["", "empty", "is empty"],
  ["x".repeat(65), "too_long", "65 characters long: the limit is 64"],
  ["read file", "whitespace", "contains whitespace"],
  ["read\tfile", "whitespace", "contains whitespace"],
  ["readFile", "uppercase", "upper-case"],
  ["Read_file", "uppercase", "upper-case"],
  ["1tool", "leading_character", "must start with a lower-case letter"],
  ["_private", "leading_character", "must start with a lower-case letter"],
  ["math.factorial", "character", "contains \".\""],
  ["read-file", "character", "contains \"-\""],
  ["ns:tool", "character", "contains \":\""],
  ["a/b", "character", "contains \"/\""],
  ["café", "character", "contains \"é\""]
]

describe("ToolName", () => {
  it("accepts canonical names and rejects each rule with a message naming the tool and the rule", () => {
    for (const [name, rule, part] of rules) {
      const result = ToolName.validate(name)
      if (rule === "ok") {
        assert.isTrue(Result.isSuccess(result), name)
      } else {
        assert.isTrue(Result.isFailure(result), name)
        if (Result.isFailure(result)) {
          assert.strictEqual(result.failure.rule, rule, name)
          assert.include(result.failure.message, part, name)
          if (name.length > 0 && name.length <= 64) assert.include(result.failure.message, JSON.stringify(name))
        }
      }
    }
  })

  it("sanitises foreign names deterministically", () => {
    const cases: ReadonlyArray<readonly [string, string]> = [
      ["math.factorial", "math_factorial"],
      ["getWeather", "get_weather"],
      ["ProxyConnection.prepareCall", "proxy_connection_prepare_call"],
      ["admin.tools.list", "admin_tools_list"],
      ["1tool", "t_1tool"],
      ["ns:tool-name", "ns_tool_name"],
      ["HTTPServer.get", "http_server_get"]
    ]
    for (const [original, expected] of cases) {
      assert.strictEqual(Result.getOrThrow(ToolName.sanitize(original)), expected)
    }
    const long = "a.".repeat(50)
    const cut = Result.getOrThrow(ToolName.sanitize(long))
    assert.isAtMost(cut.length, 64)
    assert.strictEqual(cut, Result.getOrThrow(ToolName.sanitize(long)))
    assert.notStrictEqual(cut, Result.getOrThrow(ToolName.sanitize("b." + long.slice(2))))
    assert.isTrue(Result.isFailure(ToolName.sanitize("...")))
  })

  it("aliases round-trip and collisions fail", () => {
    const aliases = Result.getOrThrow(ToolName.makeAliases([
      ["math.factorial", "math_factorial" as ToolName.ToolName],
      ["calc", "calc" as ToolName.ToolName]
    ]))
    assert.strictEqual(aliases.toCanonical("math.factorial"), "math_factorial")
    assert.strictEqual(aliases.toCanonical("math_factorial"), "math_factorial")
    assert.strictEqual(aliases.toOriginal("math_factorial" as ToolName.ToolName), "math.factorial")
    assert.strictEqual(aliases.toOriginal("calc" as ToolName.ToolName), "calc")
    assert.isUndefined(aliases.toCanonical("nope"))

    const collision = ToolName.makeAliases([
      ["a.b", "a_b" as ToolName.ToolName],
      ["a-b", "a_b" as ToolName.ToolName]
    ])
    assert.isTrue(Result.isFailure(collision))
    if (Result.isFailure(collision)) {
      assert.strictEqual(collision.failure._tag, "ToolNameCollision")
      assert.include(collision.failure.message, "\"a.b\" and \"a-b\" both map to \"a_b\"")
    }
  })
})

const noop = (name: string) =>
  Tool.make(name, { description: "does nothing", input: Schema.Struct({}), handler: () => Effect.void })

describe("ToolRegistry names", () => {
  it.effect("rejects bad names, duplicates and alias collisions, reporting all of them", () =>
    Effect.gen(function*() {
      const imported = (name: string) =>
        Result.getOrThrow(Tool.fromJsonSchema(name, {
          description: "imported",
          inputSchema: { type: "object", properties: {} },
          handler: () => Effect.void
        }))
      const error = yield* Effect.flip(ToolRegistry.make([
        noop("ok_tool"),
        noop(""),
        noop("has space"),
        noop("x".repeat(65)),
        noop("ok_tool"),
        imported("math.factorial"),
        imported("math-factorial"),
        noop("dotted.name")
      ]))
      assert.strictEqual(error._tag, "InvalidRegistry")
      assert.deepStrictEqual(error.violations.map((v) => v._tag), [
        "InvalidToolName",
        "InvalidToolName",
        "InvalidToolName",
        "DuplicateToolName",
        "ToolNameCollision",
        "InvalidToolName"
      ])
      assert.include(error.message, "tool name \"has space\" contains whitespace")
      assert.include(error.message, "tool name \"ok_tool\" is registered twice")
      assert.include(error.message, "\"math.factorial\" and \"math-factorial\" both map to \"math_factorial\"")
      assert.include(error.message, "tool name \"dotted.name\" contains \".\"")
    }))

  it.effect("imported tools keep their original name through an alias; lookups work both ways", () =>
    Effect.gen(function*() {
      const tool = Result.getOrThrow(Tool.fromJsonSchema("math.factorial", {
        description: "factorial",
        inputSchema: { type: "object", properties: { n: { type: "integer" } }, required: ["n"] },
        handler: ({ n }) => Effect.succeed(n)
      }))
      const registry = yield* ToolRegistry.make([tool, noop("calc")])
      assert.deepStrictEqual<ReadonlyArray<string>>(registry.names, ["math_factorial", "calc"])
      assert.strictEqual(registry.specs[0]!.originalName, "math.factorial")
      assert.strictEqual(registry.get("math.factorial")?.spec.name, "math_factorial")
      assert.strictEqual(registry.get("math_factorial")?.spec.name, "math_factorial")
      assert.strictEqual(registry.aliases.toOriginal(registry.names[0]!), "math.factorial")
      assert.isUndefined(registry.get("math:factorial"))
    }))

  it.effect("per-turn views by name list (unknown names fail, listed with the registered ones) and by predicate", () =>
    Effect.gen(function*() {
      const registry = yield* ToolRegistry.make([
        Tool.make("reader", {
          description: "r",
          input: Schema.Struct({}),
          safety: { access: "read" },
          handler: () => Effect.void
        }),
        Tool.make("writer", {
          description: "w",
          input: Schema.Struct({}),
          safety: { access: "write" },
          handler: () => Effect.void
        })
      ])
      const byName = yield* ToolRegistry.advertise(registry, ["writer"])
      assert.deepStrictEqual<ReadonlyArray<string>>(byName.names, ["writer"])
      const typo = yield* Effect.flip(ToolRegistry.advertise(registry, ["writer", "wrtier", "unknown"]))
      assert.strictEqual(typo._tag, "UnknownToolNames")
      assert.deepStrictEqual(typo.names, ["wrtier", "unknown"])
      assert.strictEqual(typo.message, "unknown tool names \"wrtier\", \"unknown\"; registered tools: reader, writer")
      const sync = ToolRegistry.advertiseResult(registry, ["nope"])
      assert.isTrue(Result.isFailure(sync) && sync.failure.message === "unknown tool name \"nope\"; registered tools: reader, writer")
      const byPredicate = ToolRegistry.filter(registry, (spec) => spec.safety.access === "read")
      assert.deepStrictEqual<ReadonlyArray<string>>(byPredicate.names, ["reader"])
      assert.isTrue(byPredicate.has("reader"))
      assert.isFalse(byPredicate.has("writer"))
      const refused = ToolRegistry.resolve(byPredicate, { id: "c1", name: "writer", arguments: "{}" })
      assert.isTrue(Result.isFailure(refused))
      if (Result.isFailure(refused)) {
        assert.strictEqual(refused.failure._tag, "ToolNotAllowed")
        assert.strictEqual(refused.failure.message, "tool \"writer\" is not available this turn; available tools: reader")
      }
      const unknown = ToolRegistry.resolve(byPredicate, { id: "c2", name: "rm_rf", arguments: "{}" })
      assert.isTrue(Result.isFailure(unknown) && unknown.failure._tag === "ToolNotFound")
      if (Result.isFailure(unknown)) assert.include(unknown.failure.message, "available tools: reader")
    }))
})

describe("ToolRegistry.get", () => {
  it("finds a tool by canonical or original name, and nothing else", () => {
    const imported = Result.getOrThrow(Tool.fromJsonSchema("math.factorial", {
      description: "Factorial.",
      inputSchema: { type: "object", properties: { n: { type: "integer" } }, required: ["n"] },
      handler: () => Effect.succeed(1)
    }))
    const registry = Result.getOrThrow(ToolRegistry.makeResult([imported]))
    assert.strictEqual(ToolRegistry.get(registry, "math_factorial")?.spec.name, "math_factorial")
    assert.strictEqual(ToolRegistry.get(registry, "math.factorial")?.spec.name, "math_factorial")
    assert.isUndefined(ToolRegistry.get(registry, "math_factorial_2"))
  })
})

describe("ToolRegistry.resolve redaction", () => {
  it("a rejection never quotes a value under one of the tool's redacted keys", () => {
    const login = Tool.make("login", {
      description: "Logs in.",
      input: Schema.Struct({ user: Schema.String, token: Schema.String }),
      safety: { access: "read", redact: { keys: ["token"] } },
      handler: () => Effect.succeed("ok")
    })
    const registry = Result.getOrThrow(ToolRegistry.makeResult([login]))
    const turn = ToolRegistry.all(registry)
    for (const token of [12345678, ["sk-SECRET-abc"], { nested: "sk-SECRET-abc" }]) {
      const refused = ToolRegistry.resolve(turn, { id: "c1", name: "login", arguments: { user: "ann", token } })
      assert.isTrue(Result.isFailure(refused))
      const message = Result.isFailure(refused) ? refused.failure.message : ""
      assert.include(message, "at \"token\"")
      assert.notInclude(message, "12345678")
      assert.notInclude(message, "sk-SECRET")
    }
  })
})
