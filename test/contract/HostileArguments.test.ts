/**
 * Hostile arguments (issue "Safety under hostile input", findings 8 to 12): they
 * are refused, never thrown. Arguments nested past the depth limit or larger
 * than the size limit are refused before decoding, with a message naming the
 * limit; decoding and redaction cannot overflow the stack; prototype keys are
 * refused however they are spelled and wherever they sit, while
 * `{"constructor": null}` stays valid; rejection text is bounded; imported
 * object schemas are closed as their exports show them; Anthropic strict
 * accepts enum-only and const-only properties.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Formatter, Result, Schema, Stream } from "effect"
import {
  Agent,
  ChatModel,
  EventSink,
  Executor,
  Tool,
  ToolError,
  ToolEvent,
  ToolInput,
  ToolRegistry,
  ToolResult,
  ToolServices
} from "../../src/index.ts"
import { middleware } from "../../src/index.ts"
import type { ToolCall } from "../../src/index.ts"
import type { Receipt as AuditLogReceipt } from "../../src/governance/middleware/AuditLog.ts"
import { canonicalJson, hash, withoutKeys } from "../../src/internal/canonical.ts"
import { stringify } from "../../src/internal/json.ts"
import { redactValue } from "../../src/internal/redact/policy.ts"
import { Anthropic, Gemini, Mcp, OpenAiChat } from "../../src/providers/index.ts"

// ---------------------------------------------------------------------------
// helpers
// ---------------------------------------------------------------------------

interface Tree {
  readonly label?: string
  readonly children?: ReadonlyArray<Tree>
  readonly child?: Tree
}
const Tree: Schema.Codec<Tree> = Schema.Struct({
  label: Schema.optionalKey(Schema.String),
  children: Schema.optionalKey(Schema.Array(Schema.suspend(() => Tree))),
  child: Schema.optionalKey(Schema.suspend(() => Tree))
})

const received: Array<unknown> = []
const tree = Tool.make("tree", {
  description: "Takes a tree.",
  input: Tree,
  safety: { access: "read", idempotent: true },
  handler: (input) => Effect.sync(() => received.push(input)).pipe(Effect.as("ok"))
})
const meta = Tool.make("meta", {
  description: "Takes free-form metadata.",
  input: Schema.Struct({ meta: Schema.optionalKey(Schema.Unknown), items: Schema.optionalKey(Schema.Array(Schema.Unknown)) }),
  safety: { access: "read", idempotent: true, redact: { keys: ["secret"] } },
  handler: (input) => Effect.sync(() => received.push(input)).pipe(Effect.as("ok"))
})
const record = Tool.make("record", {
  description: "Takes any object.",
  input: Schema.Record(Schema.String, Schema.Unknown),
  safety: { access: "read", idempotent: true },
  handler: (input) => Effect.sync(() => received.push(input)).pipe(Effect.as("ok"))
})

const registry = Result.getOrThrow(ToolRegistry.makeResult([tree, meta, record]))
const resolve = (name: string, args: unknown, reg: ToolRegistry.ToolRegistry = registry) =>
  ToolRegistry.resolve(ToolRegistry.all(reg), { id: "c1", name, arguments: args })

/** `{"child":{"child":...{}}}`, `depth` objects deep (the arguments object is level 1). */
const nested = (depth: number, leaf = "{}"): string => {
  let text = leaf
  for (let i = 1; i < depth; i++) text = `{"child":${text}}`
  return text
}

const failureOf = (result: Result.Result<unknown, ToolError.ToolError>): ToolError.ToolError => {
  if (Result.isSuccess(result)) throw new Error(`expected a failure, got ${JSON.stringify(result.success)}`)
  return result.failure
}

const test = ToolServices.layerTest({ runId: "hostile" })

// ---------------------------------------------------------------------------
// 8. depth: refused before decoding, never thrown
// ---------------------------------------------------------------------------

describe("finding 8: deep arguments are refused, never thrown", () => {
  it("a recursive schema nested 600 and 10,000 deep: MalformedArguments naming the limit (text and object)", () => {
    for (const depth of [65, 600, 10_000]) {
      for (const raw of [nested(depth), JSON.parse(nested(depth))]) {
        const error = failureOf(resolve("tree", raw))
        assert.strictEqual(error._tag, "MalformedArguments")
        assert.strictEqual(error.disposition, "repair")
        assert.include(error.message, "more than 64 levels deep (the limit); send flatter arguments")
      }
    }
    // deep through arrays too
    let text = "{}"
    for (let i = 1; i < 10_000; i++) text = i % 2 === 0 ? `{"children":[${text}]}` : `{"child":${text}}`
    assert.strictEqual(failureOf(resolve("tree", text))._tag, "MalformedArguments")
  })

  it("64 levels are accepted; the limit is configurable per registry", () => {
    assert.isTrue(Result.isSuccess(resolve("tree", nested(64))))
    const shallow = Result.getOrThrow(ToolRegistry.makeResult([tree], { limits: { maxDepth: 3 } }))
    assert.deepStrictEqual(shallow.limits, { maxDepth: 3, maxBytes: 1_000_000 })
    assert.isTrue(Result.isSuccess(resolve("tree", nested(3), shallow)))
    const error = failureOf(resolve("tree", nested(4), shallow))
    assert.strictEqual(
      error.message,
      "tree: malformed arguments: the arguments nest objects and arrays more than 3 levels deep (the limit); send flatter arguments"
    )
  })

  it("a raised limit cannot make decoding throw: a stack overflow in the decoder is a refusal", () => {
    const deep = Result.getOrThrow(ToolRegistry.makeResult([tree], { limits: { maxDepth: 1_000_000 } }))
    for (const raw of [nested(10_000), JSON.parse(nested(10_000)), nested(10_000, "{\"label\":1}")]) {
      const error = failureOf(resolve("tree", raw, deep))
      assert.strictEqual(error._tag, "MalformedArguments")
      assert.include(error.message, "the arguments are nested too deeply to check; send flatter arguments")
    }
  })

  it("a cyclic object-form value is refused by the depth limit", () => {
    const cyclic: Record<string, unknown> = { label: "a" }
    cyclic["child"] = cyclic
    assert.strictEqual(failureOf(resolve("tree", cyclic))._tag, "MalformedArguments")
  })

  it.effect("runBatch: the deep call is an error result, its siblings run", () =>
    Effect.gen(function*() {
      const executor = yield* Executor.make(registry)
      const results = yield* executor.runBatch([
        { id: "a", name: "tree", arguments: nested(10_000) },
        { id: "b", name: "tree", arguments: "{\"label\":\"fine\"}" },
        { id: "c", name: "meta", arguments: { meta: JSON.parse(nested(10_000)) } }
      ])
      assert.deepStrictEqual(results.map((r) => r.isError), [true, false, true])
      assert.deepStrictEqual(results.map((r) => r.error?._tag), ["MalformedArguments", undefined, "MalformedArguments"])
      assert.strictEqual(ToolResult.textOf(results[1]!), "ok")
    }).pipe(Effect.provide(test)))

  it.effect("Agent.run returns AgentFailed (repair off), never dies", () =>
    Effect.gen(function*() {
      const failed = yield* Effect.flip(Agent.run({ messages: [{ role: "user", content: "go" }], tools: registry, repair: false }))
      assert.strictEqual(failed._tag, "AgentFailed")
      assert.strictEqual(failed.reason, "tool")
      assert.strictEqual(failed.error._tag, "MalformedArguments")
    }).pipe(
      Effect.provide([ChatModel.scripted([ChatModel.callTools([["c1", "tree", nested(10_000)]])]), test])
    ))

  it("size: JSON text over maxBytes (UTF-8) is refused before it is parsed; object-form too", () => {
    const small = Result.getOrThrow(ToolRegistry.makeResult([meta], { limits: { maxBytes: 100 } }))
    const fits = `{"meta":"${"x".repeat(89)}"}`
    assert.strictEqual(fits.length, 100)
    assert.isTrue(Result.isSuccess(resolve("meta", fits, small)))
    const over = failureOf(resolve("meta", `{"meta":"${"x".repeat(90)}"}`, small))
    assert.strictEqual(
      over.message,
      "meta: malformed arguments: the arguments are 101 bytes of JSON, over the limit of 100 bytes; send smaller arguments"
    )
    // bytes, not characters: 45 characters, 34 of them of three bytes, are 113 bytes
    assert.include(failureOf(resolve("meta", `{"meta":"${"€".repeat(34)}"}`, small)).message, "are 113 bytes of JSON")
    assert.include(failureOf(resolve("meta", { meta: "x".repeat(200) }, small)).message, "larger than the limit of 100 bytes")
    // the default: 1,000,000 bytes
    const big = `{"meta":"${"x".repeat(1_000_000)}"}`
    assert.include(failureOf(resolve("meta", big)).message, "over the limit of 1,000,000 bytes")
    assert.include(failureOf(resolve("meta", JSON.parse(big))).message, "larger than the limit of 1,000,000 bytes")
  })

  it("object-form values whose reading throws are refused", () => {
    const trap = new Proxy({}, {
      ownKeys: () => {
        throw new Error("trap")
      }
    })
    assert.strictEqual(failureOf(resolve("meta", { meta: trap }))._tag, "MalformedArguments")
  })

  it("redactValue is iterative: a deep Schema.Unknown value and a cyclic value", () => {
    let deep: unknown = { secret: "s3cr3t", keep: "x" }
    for (let i = 0; i < 100_000; i++) deep = { a: deep }
    const out = redactValue(deep, { keys: ["secret"] })
    assert.strictEqual(out.fields.length, 1)
    assert.isTrue(out.fields[0]!.endsWith(".a.secret"))
    let node = out.value as Record<string, unknown>
    for (let i = 0; i < 100_000; i++) node = node["a"] as Record<string, unknown>
    assert.deepStrictEqual(node, { secret: "[redacted]", keep: "x" })
    const cyclic: Record<string, unknown> = { secret: 1, list: [] }
    ;(cyclic["list"] as Array<unknown>).push(cyclic, "y")
    assert.deepStrictEqual(redactValue(cyclic, { keys: ["secret"] }).value, { secret: "[redacted]", list: ["[circular]", "y"] })
  })

  it("redactValue agrees with the recursive definition on trees (fields in order, own __proto__ kept as a key)", () => {
    const recursive = (value: unknown, keys: ReadonlySet<string>) => {
      const fields: Array<string> = []
      const walk = (node: unknown, path: string): unknown => {
        if (Array.isArray(node)) return node.map((item, i) => walk(item, `${path}[${i}]`))
        if (node !== null && typeof node === "object") {
          const out: Record<string, unknown> = {}
          for (const [key, child] of Object.entries(node)) {
            const at = path === "" ? key : `${path}.${key}`
            if (keys.has(key)) fields.push(at)
            Object.defineProperty(out, key, {
              value: keys.has(key) ? "[redacted]" : walk(child, at),
              enumerable: true,
              writable: true,
              configurable: true
            })
          }
          return out
        }
        return node
      }
      return { value: walk(value, ""), fields }
    }
    const samples = [
      { a: 1, token: "t", b: [{ token: 2, c: { token: [1] } }, "x", null], d: { e: { token: { f: 1 } } } },
      [{ token: 1 }, [{ token: 2 }]],
      JSON.parse("{\"__proto__\":{\"token\":1},\"x\":{\"token\":2}}"),
      "plain",
      null
    ]
    for (const sample of samples) {
      const ours = redactValue(sample, { keys: ["token"] })
      const theirs = recursive(sample, new Set(["token"]))
      assert.deepStrictEqual(ours.fields, theirs.fields)
      assert.strictEqual(JSON.stringify(ours.value), JSON.stringify(theirs.value))
    }
    assert.strictEqual(Object.getPrototypeOf(redactValue(samples[2], { keys: ["token"] }).value), Object.prototype)
  })
})

// ---------------------------------------------------------------------------
// 8, on the agent path: deep values never overflow the stack
// ---------------------------------------------------------------------------

describe("finding 8, agent path: deep arguments and outputs of a redacted tool never overflow the stack", () => {
  const secret = "s3cr3t-value"
  /** `{"a":[[...[{"secret":...}]...]]}`, `depth` arrays deep. */
  const deepArrays = (depth: number, leaf = `{"secret":"${secret}"}`) => `{"a":${"[".repeat(depth)}${leaf}${"]".repeat(depth)}}`
  /** `{"a":{"a":...{"secret":...}}}`, `depth` objects deep. */
  const deepObjects = (depth: number) => `${"{\"a\":".repeat(depth)}{"secret":"${secret}"}${"}".repeat(depth)}`
  const deepValue = (depth: number): unknown => {
    let value: unknown = { secret, keep: "x" }
    for (let i = 0; i < depth; i++) value = { a: value }
    return value
  }
  const vault = Tool.make("vault", {
    description: "Takes free-form data holding secrets.",
    input: Schema.Struct({ a: Schema.optionalKey(Schema.Unknown) }),
    safety: { access: "read", idempotent: true, redact: { keys: ["secret"] } },
    handler: () => Effect.succeed("ok")
  })
  const dump = Tool.make("dump", {
    description: "Returns deep data holding a secret.",
    input: Schema.Struct({ depth: Schema.Number }),
    output: Schema.Struct({ a: Schema.Unknown }),
    safety: { access: "read", idempotent: true, redact: { keys: ["secret"] } },
    handler: ({ depth }) => Effect.sync(() => ({ a: deepValue(depth) }))
  })
  const tools = Result.getOrThrow(ToolRegistry.makeResult([vault, dump]))
  const options = { messages: [{ role: "user" as const, content: "go" }], tools }
  /** The model's two turns: `args` for `name`, then an answer; the second request is kept. */
  const script = (name: string, args: unknown, requests: Array<ChatModel.Request>) =>
    ChatModel.scripted([
      ChatModel.callTools([["c1", name, args]]),
      (request) => {
        requests.push(request)
        return ChatModel.answer("done")
      }
    ])
  /** Every event encoded as the JSON-lines sink writes it. */
  const jsonLines = (lines: Array<string>) =>
    EventSink.layerCallback((event) => lines.push(Effect.runSync(ToolEvent.encodeJson(event))))

  const payloads: ReadonlyArray<readonly [string, unknown]> = [
    ["arrays 10,000 deep", deepArrays(10_000)],
    ["arrays 100,000 deep", deepArrays(100_000)],
    ["objects 100,000 deep", deepObjects(100_000)],
    ["an object-form value 10,000 deep", JSON.parse(deepArrays(10_000))],
    ["a string of 100,000 brackets", `{"a":"${"[".repeat(100_000)}","secret":"${secret}"}`]
  ]

  for (const [name, args] of payloads) {
    it.effect(`Agent.run, ${name}: the call is refused for repair, the run answers, the transcript is redacted`, () => {
      const requests: Array<ChatModel.Request> = []
      return Effect.gen(function*() {
        const result = yield* Agent.run(options)
        assert.strictEqual(result.reason, "final_answer")
        assert.strictEqual(result.text, "done")
        const [refused] = result.results
        assert.strictEqual(refused!.isError, true)
        assert.strictEqual(refused!.error?.disposition, "repair")
        assert.strictEqual(refused!.error?._tag, name.startsWith("a string") ? "InvalidArguments" : "MalformedArguments")
        // the history sent back holds the redacted call, not the secret
        const history = stringify(requests[0]!.messages)!
        assert.include(history, "[redacted]")
        assert.notInclude(history, secret)
        assert.notInclude(stringify(result.transcript)!, secret)
      }).pipe(Effect.provide([script("vault", args, requests), test]))
    })
  }

  for (const [name, args] of payloads.filter(([name]) => name.endsWith("100,000 deep") || name.startsWith("an object-form"))) {
    it.effect(`Agent.stream, ${name}: every event is delivered and encodes as a JSON line`, () => {
      const lines: Array<string> = []
      return Effect.gen(function*() {
        const events = yield* Stream.runCollect(Agent.stream(options))
        const tags = events.map((event) => event._tag)
        assert.includeMembers(tags, ["agent.tool_call", "tool.rejected", "agent.finished"])
        const finished = events.at(-1)!
        assert.isTrue(finished._tag === "agent.finished" && finished.reason === "final_answer")
        assert.deepStrictEqual(lines.map((line) => (JSON.parse(line) as { _tag: string })._tag), tags)
        for (const line of lines) assert.notInclude(line, secret)
        // the decided call's arguments, redacted (a value deeper than the event codec walks: as its JSON text)
        const call = lines.find((line) => line.includes("\"agent.tool_call\""))!
        assert.include(call, "[redacted]")
        const decoded = yield* ToolEvent.decodeJsonl(lines.join("\n"))
        assert.strictEqual(decoded.length, events.length)
      }).pipe(Effect.provide([script("vault", args, []), test, jsonLines(lines)]))
    })
  }

  for (const depth of [10_000, 100_000]) {
    it.effect(`a redacted tool's output ${depth.toLocaleString("en")} deep: a result, redacted, in Agent.run and Agent.stream`, () =>
      Effect.gen(function*() {
        const result = yield* Agent.run(options)
        assert.strictEqual(result.reason, "final_answer")
        const [output] = result.results
        assert.strictEqual(output!.isError, false)
        const text = ToolResult.textOf(output!)
        assert.isTrue(text.startsWith("{\"a\":{\"a\":{\"a\":"))
        assert.notInclude(text, secret)
        // the value is redacted at the bottom
        let node = (output!.value as { readonly a: unknown }).a
        for (let i = 0; i < depth; i++) node = (node as { readonly a: unknown }).a
        assert.deepStrictEqual(node, { secret: "[redacted]", keep: "x" })
        const events = yield* Stream.runCollect(Agent.stream(options))
        assert.strictEqual(events.at(-1)!._tag, "agent.finished")
      }).pipe(Effect.provide([
        ChatModel.scripted([
          ChatModel.callTools([["c1", "dump", `{"depth":${depth}}`]]),
          ChatModel.answer("done"),
          ChatModel.callTools([["c1", "dump", `{"depth":${depth}}`]]),
          ChatModel.answer("done")
        ]),
        test
      ])))
  }

  it.effect("an audit log hashes deep refused arguments", () =>
    Effect.gen(function*() {
      const receipts: Array<AuditLogReceipt> = []
      const result = yield* Agent.run({ ...options, middleware: middleware.auditLog((receipt) => receipts.push(receipt)) })
      assert.strictEqual(result.reason, "final_answer")
      assert.deepStrictEqual(receipts.map((receipt) => [receipt.status, receipt.refused]), [["schema_violation", true]])
      assert.match(receipts[0]!.argumentsSha256, /^[0-9a-f]{64}$/)
    }).pipe(Effect.provide([script("vault", deepArrays(100_000), []), test])))

  it("stringify writes what JSON.stringify writes, at any depth; canonical JSON too", () => {
    const samples: ReadonlyArray<unknown> = [
      null,
      undefined,
      1.5,
      Number.NaN,
      "quote\"\ud800",
      [undefined, () => 1, Symbol("s"), new Date(0), Object(2), Object("s")],
      { a: undefined, b: [1, { c: "d" }], toJSON: undefined, e: { toJSON: (key: string) => `k:${key}` } },
      JSON.parse("{\"__proto__\":{\"x\":1},\"y\":[]}")
    ]
    for (const sample of samples) assert.strictEqual(stringify(sample), JSON.stringify(sample))
    for (const text of [deepArrays(100_000), deepObjects(100_000)]) assert.strictEqual(stringify(JSON.parse(text)), text)
    const cyclic: Record<string, unknown> = {}
    cyclic["self"] = [cyclic]
    assert.throws(() => stringify(cyclic), TypeError)
    assert.throws(() => stringify({ deep: JSON.parse(deepArrays(100_000)), cyclic }), TypeError)
    assert.strictEqual(canonicalJson(JSON.parse(deepArrays(100_000, "{\"z\":1,\"a\":2}"))), deepArrays(100_000, "{\"a\":2,\"z\":1}"))
    assert.strictEqual(canonicalJson({ b: 1, a: [cyclic] }), "{\"a\":[{\"self\":[\"[circular]\"]}],\"b\":1}")
    assert.match(hash(withoutKeys(JSON.parse(deepObjects(100_000)), new Set(["secret"]))), /^[0-9a-f]{64}$/)
  })
})

// ---------------------------------------------------------------------------
// 9. prototype keys
// ---------------------------------------------------------------------------

/** Every spelling of `word` with one character, or all of them, escaped as \uXXXX (lower and upper hex). */
const spellings = (word: string): ReadonlyArray<string> => {
  const escape = (c: string, upper: boolean) => {
    const hex = c.charCodeAt(0).toString(16).padStart(4, "0")
    return `\\u${upper ? hex.toUpperCase() : hex}`
  }
  const out = new Set<string>([word])
  for (const upper of [false, true]) {
    for (let i = 0; i < word.length; i++) out.add(word.slice(0, i) + escape(word[i]!, upper) + word.slice(i + 1))
    out.add([...word].map((c) => escape(c, upper)).join(""))
  }
  return [...out]
}

describe("finding 9: prototype keys are refused however spelled and wherever they sit", () => {
  const protoKeys = spellings("__proto__")
  const ctorKeys = spellings("constructor")
  const prototypeKeys = spellings("prototype")
  /** Where a payload sits: the root, nested, in an array element, deep in both. */
  const places: ReadonlyArray<(payload: string) => string> = [
    (p) => `{${p}}`,
    (p) => `{"meta":{${p}}}`,
    (p) => `{"items":[1,{${p}}]}`,
    (p) => `{"meta":{"a":[{"b":{${p}}}]}}`
  ]
  const payloads = [
    ...protoKeys.map((k) => `"${k}":{"polluted":true}`),
    ...ctorKeys.flatMap((c) => prototypeKeys.slice(0, 3).map((p) => `"${c}":{"${p}":{"polluted":true}}`))
  ]

  it("every escaped spelling, in every place, as JSON text and as a parsed object: MalformedArguments", () => {
    received.length = 0
    let refused = 0
    for (const payload of payloads) {
      for (const place of places) {
        const text = place(payload)
        for (const [tool, raw] of [["meta", text], ["meta", JSON.parse(text)], ["record", text]] as const) {
          const error = failureOf(resolve(tool, raw))
          assert.strictEqual(error._tag, "MalformedArguments", `${tool} ${text}: ${error.message}`)
          assert.match(error.message, /forbidden "(__proto__|constructor\.prototype)" key at /)
          refused++
        }
      }
    }
    assert.strictEqual(payloads.length, 69)
    assert.strictEqual(refused, 69 * 4 * 3)
    assert.isUndefined(({} as Record<string, unknown>)["polluted"])
    assert.deepStrictEqual(received, [])
  })

  it("the message names where the key is", () => {
    assert.strictEqual(
      failureOf(resolve("meta", "{\"meta\":{\"a\":[{\"\\u005f_proto__\":{}}]}}")).message,
      "meta: malformed arguments: the arguments contain a forbidden \"__proto__\" key at \"meta\".\"a\"[0].\"__proto__\"; remove it"
    )
    assert.strictEqual(
      failureOf(resolve("record", "{\"\\u0063onstructor\":{\"prototype\":{}}}")).message,
      "record: malformed arguments: the arguments contain a forbidden \"constructor.prototype\" key at \"constructor\".\"prototype\"; remove it"
    )
  })

  it("a __proto__ inside an array element of object-form arguments (Anthropic, Gemini, MCP) never reaches a handler", () => {
    const args = JSON.parse("{\"items\":[{\"__proto__\":{\"polluted\":true}}]}") as Record<string, unknown>
    const calls: ReadonlyArray<ToolCall.ToolCall> = [
      ...Anthropic.toolCalls([{ type: "tool_use", id: "a", name: "meta", input: args }]).calls,
      ...Gemini.toolCalls([{ functionCall: { name: "meta", args } }]).calls,
      ...Mcp.toolCalls({ jsonrpc: "2.0", id: "m", method: "tools/call", params: { name: "meta", arguments: args } }).calls
    ]
    assert.strictEqual(calls.length, 3)
    for (const call of calls) {
      const error = failureOf(ToolRegistry.resolve(ToolRegistry.all(registry), call))
      assert.strictEqual(error.message, "meta: malformed arguments: the arguments contain a forbidden \"__proto__\" key at \"items\"[0].\"__proto__\"; remove it")
    }
  })

  it("{\"constructor\": null} and other harmless constructor values are valid", () => {
    for (const text of [
      "{\"constructor\": null}",
      "{\"constructor\": \"x\"}",
      "{\"constructor\": 1}",
      "{\"constructor\": {\"name\": \"x\"}}",
      "{\"constructor\": [\"prototype\"]}",
      "{\"meta\": {\"constructor\": null, \"prototype\": {}}}"
    ]) {
      for (const raw of [text, JSON.parse(text)]) {
        const resolved = resolve("record", raw)
        assert.isTrue(Result.isSuccess(resolved), `${text}: ${Result.isFailure(resolved) ? resolved.failure.message : ""}`)
      }
    }
    // ... but a constructor holding a prototype key, whatever its value, is not
    assert.strictEqual(failureOf(resolve("record", "{\"constructor\": {\"prototype\": null}}"))._tag, "MalformedArguments")
  })
})

// ---------------------------------------------------------------------------
// 10. bounded rejection text
// ---------------------------------------------------------------------------

describe("finding 10: rejection text is bounded", () => {
  const numbers = Tool.make("numbers", {
    description: "Takes numbers.",
    input: Schema.Struct({ n: Schema.optionalKey(Schema.Number), list: Schema.optionalKey(Schema.Array(Schema.String)) }),
    handler: () => Effect.succeed("ok")
  })
  const reg = Result.getOrThrow(ToolRegistry.makeResult([numbers]))

  it("a 1 MB wrong-typed value is quoted as its first 60 characters and \"…\"", () => {
    for (const raw of [JSON.stringify({ n: "x".repeat(999_000) }), { n: "x".repeat(999_000) }]) {
      const error = failureOf(resolve("numbers", raw, reg))
      assert.strictEqual(error.message, `numbers: invalid arguments: at "n": Expected number, got "${"x".repeat(59)}…`)
    }
    const object = failureOf(resolve("numbers", { n: { deep: Array.from({ length: 50_000 }, (_, i) => ({ i })) } }, reg))
    assert.strictEqual(
      object.message,
      "numbers: invalid arguments: at \"n\": Expected number, got {\"deep\":[{\"i\":0},{\"i\":1},{\"i\":2},{\"i\":3},{\"i\":4},{\"i\":5},{\"i…"
    )
  })

  it("an unknown key with a huge name and value is cut too", () => {
    const key = "k".repeat(100_000)
    const error = failureOf(resolve("numbers", { [key]: "v".repeat(100_000) }, reg))
    assert.isBelow(error.message.length, 250)
    assert.strictEqual(error.message, `numbers: invalid arguments: at "${"k".repeat(60)}…": Unexpected key with value "${"v".repeat(59)}…`)
  })

  it("many issues: the message stops near 2,000 characters and counts the rest", () => {
    const error = failureOf(resolve("numbers", JSON.stringify({ list: Array.from({ length: 100_000 }, (_, i) => i) }), reg))
    assert.strictEqual(error._tag, "InvalidArguments")
    assert.isBelow(error.message.length, 2_200)
    assert.match(error.message, /at "list"\[\d+\]: Expected string, got \d+ \(\d{2},\d{3} more issues\)$/)
    const issues = (error as ToolError.InvalidArguments).issues
    const more = Number(/\(([\d,]+) more issues\)$/.exec(error.message)![1]!.replaceAll(",", ""))
    assert.strictEqual(issues.length + more, 100_000)
  })

  it("short values are quoted exactly as Effect's Formatter writes them", () => {
    const values: ReadonlyArray<unknown> = [
      "a",
      "quote\"and\\slash\nnl",
      1.5,
      -0,
      null,
      true,
      [],
      {},
      [1, "a", [null], { b: [true] }],
      { kind: "triangle", n: 1, nested: { x: [1, 2] } },
      JSON.parse("{\"__proto__\":1,\"a\":2}"),
      Object.create(null),
      "x".repeat(60),
      "x".repeat(61)
    ]
    for (const value of values) {
      const formatted = Formatter.format(value)
      assert.strictEqual(
        ToolInput.preview(value),
        formatted.length > 60 ? `${formatted.slice(0, 60)}…` : formatted,
        formatted
      )
    }
  })
})

// ---------------------------------------------------------------------------
// 11. imported tools: closed as shown
// ---------------------------------------------------------------------------

describe("finding 11: imported object schemas are closed, as the model is shown them", () => {
  const handler = (input: unknown) => Effect.sync(() => received.push(input)).pipe(Effect.as("ok"))
  const imported = (inputSchema: Record<string, unknown>, options: { readonly allowUnknownKeys?: boolean } = {}) =>
    Result.getOrThrow(Tool.fromJsonSchema("math.factorial", { description: "n!", inputSchema, handler, ...options }))
  const factorial = {
    type: "object",
    properties: {
      number: { type: "integer" },
      options: { type: "object", properties: { exact: { type: "boolean" } } },
      steps: { type: "array", items: { type: "object", properties: { n: { type: "integer" } }, required: ["n"] } },
      extra: { type: "object", description: "free-form" },
      dict: { type: "object", properties: {} }
    },
    required: ["number"]
  }
  const reg = Result.getOrThrow(ToolRegistry.makeResult([imported(factorial)]))

  it("{\"number\": 5, \"zz\": 1} is refused: unknown keys are an error, at any depth", () => {
    for (
      const [args, path] of [
        [{ number: 5, zz: 1 }, "\"zz\""],
        [{ number: 5, options: { exact: true, zz: 1 } }, "\"options\".\"zz\""],
        [{ number: 5, steps: [{ n: 1 }, { n: 2, zz: 1 }] }, "\"steps\"[1].\"zz\""]
      ] as const
    ) {
      for (const raw of [args, JSON.stringify(args)]) {
        const error = failureOf(resolve("math.factorial", raw, reg))
        assert.strictEqual(error.message, `math_factorial: invalid arguments: at ${path}: Unexpected key with value 1`)
      }
    }
    // free-form objects (no properties listed) hold any key
    assert.isTrue(Result.isSuccess(resolve("math.factorial", { number: 5, extra: { a: 1 }, dict: { b: 2 } }, reg)))
  })

  it("the model is shown the closed schema, in the plain and the strict exports alike", () => {
    const [spec] = reg.specs
    const shown = spec!.inputSchema as any
    assert.strictEqual(shown.additionalProperties, false)
    assert.strictEqual(shown.properties.options.additionalProperties, false)
    assert.strictEqual(shown.properties.steps.items.additionalProperties, false)
    assert.isUndefined(shown.properties.extra.additionalProperties)
    assert.isUndefined(shown.properties.dict.additionalProperties)
    const [plain] = Result.getOrThrow(OpenAiChat.toolDefinitionsResult(reg.specs, { strict: false }))
    const [anthropic] = Result.getOrThrow(Anthropic.toolDefinitionsResult(reg.specs))
    const [mcp] = Result.getOrThrow(Mcp.toolDefinitionsResult(reg.specs))
    for (const schema of [plain!.function.parameters, anthropic!.input_schema, mcp!.inputSchema] as ReadonlyArray<any>) {
      assert.strictEqual(schema.additionalProperties, false)
      assert.strictEqual(schema.properties.options.additionalProperties, false)
    }
  })

  it("allowUnknownKeys: true keeps the schema as given and accepts unknown keys", () => {
    const open = Result.getOrThrow(ToolRegistry.makeResult([imported(factorial, { allowUnknownKeys: true })]))
    assert.isUndefined((open.specs[0]!.inputSchema as any).additionalProperties)
    assert.isTrue(Result.isSuccess(resolve("math.factorial", { number: 5, zz: 1 }, open)))
  })

  it("objects whose keys other subschemas add (allOf, anyOf beside properties) stay as given", () => {
    const combined = imported({
      type: "object",
      properties: {
        both: { allOf: [{ type: "object", properties: { a: { type: "integer" } } }, { type: "object", properties: { b: { type: "string" } } }] },
        either: {
          type: "object",
          properties: { kind: { type: "string" } },
          anyOf: [{ properties: { x: { type: "integer" } } }, { properties: { y: { type: "integer" } } }]
        },
        shape: { anyOf: [{ type: "object", properties: { r: { type: "number" } }, required: ["r"] }, { type: "object", properties: { s: { type: "number" } }, required: ["s"] }] }
      }
    })
    const shown = combined.jsonSchema!.input as any
    assert.strictEqual(shown.additionalProperties, false)
    assert.isUndefined(shown.properties.both.allOf[0].additionalProperties)
    assert.isUndefined(shown.properties.either.additionalProperties)
    // members of a plain anyOf are objects of their own: closed
    assert.strictEqual(shown.properties.shape.anyOf[0].additionalProperties, false)
    const reg2 = Result.getOrThrow(ToolRegistry.makeResult([combined]))
    assert.isTrue(Result.isSuccess(resolve("math.factorial", { both: { a: 1, b: "x" } }, reg2)))
    assert.isTrue(Result.isSuccess(resolve("math.factorial", { shape: { r: 1 } }, reg2)))
    assert.strictEqual(failureOf(resolve("math.factorial", { shape: { r: 1, zz: 1 } }, reg2))._tag, "InvalidArguments")
  })

  it("a tool without parameters takes no keys", () => {
    const none = Result.getOrThrow(ToolRegistry.makeResult([imported({ type: "object", properties: {} })]))
    assert.strictEqual(
      failureOf(resolve("math.factorial", { zz: 1 }, none)).message,
      "math_factorial: invalid arguments: at \"zz\": Unexpected key with value 1"
    )
  })
})

// ---------------------------------------------------------------------------
// 12. Anthropic strict: enum-only and const-only properties
// ---------------------------------------------------------------------------

describe("finding 12: Anthropic strict accepts enum-only and const-only properties", () => {
  it("strict: \"require\" exports {enum: [1, 2, 3]} and {const: \"x\"} as the SDK's transform does", () => {
    const tool = Result.getOrThrow(Tool.fromJsonSchema("pick", {
      description: "Picks.",
      inputSchema: {
        type: "object",
        properties: { level: { enum: [1, 2, 3] }, mode: { const: "fast" }, typed: { type: "string", enum: ["a"] } },
        required: ["level", "mode"]
      },
      handler: () => Effect.succeed("ok")
    }))
    const reg = Result.getOrThrow(ToolRegistry.makeResult([tool]))
    const [exported] = Result.getOrThrow(Anthropic.toolDefinitionsResult(reg.specs, { strict: "require" }))
    assert.strictEqual(exported!.strict, true)
    assert.deepStrictEqual(exported!.input_schema, {
      type: "object",
      properties: { level: { enum: [1, 2, 3] }, mode: { const: "fast" }, typed: { type: "string", enum: ["a"] } },
      additionalProperties: false,
      required: ["level", "mode"]
    })
    // and what is shown is what is enforced
    assert.isTrue(Result.isSuccess(resolve("pick", { level: 2, mode: "fast" }, reg)))
    assert.strictEqual(failureOf(resolve("pick", { level: 4, mode: "fast" }, reg))._tag, "InvalidArguments")
  })
})

describe("limits count what the README says", () => {
  const one = Tool.make("one", {
    description: "Takes a string.",
    input: Schema.Struct({ s: Schema.String }),
    handler: () => Effect.succeed(1)
  })
  const turn = ToolRegistry.all(Result.getOrThrow(ToolRegistry.makeResult([one])))

  it("maxBytes is UTF-8 bytes for object-form arguments too: 1.2 MB of 'é' is refused as an object and as text", () => {
    const s = "é".repeat(600_000) // 600,000 characters, 1,200,000 UTF-8 bytes
    for (const args of [{ s }, JSON.stringify({ s })]) {
      const refused = ToolRegistry.resolve(turn, { id: "c1", name: "one", arguments: args })
      assert.isTrue(Result.isFailure(refused))
      if (Result.isFailure(refused)) assert.include(refused.failure.message, "1,000,000 bytes")
    }
  })

  it("keys that differ only past the quoting cut are separate issues, and the rest are counted", () => {
    const args: Record<string, unknown> = { s: "x" }
    for (let i = 0; i < 50; i++) args[`${"k".repeat(70)}${i}`] = 1
    const refused = ToolRegistry.resolve(turn, { id: "c1", name: "one", arguments: args })
    assert.isTrue(Result.isFailure(refused))
    if (Result.isFailure(refused) && refused.failure._tag === "InvalidArguments") {
      const listed = refused.failure.issues.length
      assert.isAbove(listed, 1)
      assert.match(refused.failure.message, new RegExp(`\\(${50 - listed} more issues\\)$`))
    }
  })
})
