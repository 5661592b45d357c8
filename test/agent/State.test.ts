/**
 * Agent state (`Agent.run`'s `state`, `AgentState`): tools read the state as the turn's batch started
 * and record updates; after the batch the updates of the calls that succeeded apply in call order
 * (whatever order the calls finished in), each an `agent.state` event; a failed call's updates are
 * dropped; a refused update is a repairable error for the model; the next turn's `selectTools` and
 * system prompt see the new state.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit, Result, Schema, Stream } from "effect"
import { Agent, AgentState, ChatModel, EventSink, Executor, Middleware, Tool, ToolError, ToolRegistry, ToolResult, ToolServices } from "../../src/index.ts"
import type { ToolEvent } from "../../src/index.ts"

const Notes = AgentState.make({
  schema: Schema.Struct({ items: Schema.Array(Schema.String).check(Schema.isMaxLength(6)) }),
  update: Schema.Struct({ add: Schema.String.check(Schema.isMinLength(1)) }),
  initial: { items: [] as ReadonlyArray<string> },
  reduce: (state, update) => ({ items: [...state.items, update.add] })
})

/** Adds `text` to the notes after a random delay (0 to 3 ms); answers with how many notes it saw. */
const note = Tool.make("note", {
  description: "Adds a note.",
  input: Schema.Struct({ text: Schema.String }),
  services: [AgentState.AgentState],
  handler: ({ text }) =>
    Effect.gen(function*() {
      const seen = yield* Notes.get
      yield* Effect.sleep(`${Math.floor(Math.random() * 4)} millis`)
      yield* Notes.update({ add: text })
      return `saw ${seen.items.length}`
    })
})

/** Records two updates: `first`, then `second`. */
const twice = Tool.make("twice", {
  description: "Adds two notes.",
  input: Schema.Struct({ first: Schema.String, second: Schema.String }),
  services: [AgentState.AgentState],
  handler: ({ first, second }) => Effect.andThen(Notes.update({ add: first }), Notes.update({ add: second }))
})

/** Records an update, then fails. */
const broken = Tool.make("broken", {
  description: "Adds a note, then fails.",
  input: Schema.Struct({ text: Schema.String }),
  services: [AgentState.AgentState],
  handler: ({ text }) => Effect.andThen(Notes.update({ add: text }), Effect.fail(ToolError.repairable("disk full")))
})

const tools = ToolRegistry.makeResult([note, twice, broken])
const registry = tools._tag === "Success" ? tools.success : (() => {
  throw tools.failure
})()

const user = (content: string): ChatModel.Message => ({ role: "user", content })
const events = EventSink.EventLog.use((log) => log.all)
const stateEvents = (log: ReadonlyArray<ToolEvent.Event>) =>
  log.flatMap((e) => e._tag === "agent.state" ? [e] : [])

describe("Agent state", () => {
  it.live("a batch of concurrent calls applies its updates in call order, whatever order they finish in", () =>
    Effect.gen(function*() {
      const texts = ["a", "b", "c", "d", "e", "f"]
      for (let round = 0; round < 25; round++) {
        const result = yield* Agent.run({
          messages: [user("take notes")],
          tools: registry,
          state: Notes,
          concurrency: 6
        }).pipe(
          Effect.provide(ChatModel.scripted([
            ChatModel.callTools(texts.map((text, i) => [`n${i}`, "note", { text }] as const)),
            ChatModel.answer("done")
          ])),
          Effect.provide(ToolServices.layerTest())
        )
        const state: { readonly items: ReadonlyArray<string> } | undefined = result.state
        assert.deepStrictEqual(state, { items: texts })
        // every call read the state as the batch started
        assert.deepStrictEqual(result.results.map(ToolResult.textOf), texts.map(() => "saw 0"))
      }
    }))

  it.live("each applied update is an agent.state event, in call order, with the update and the new state", () =>
    Effect.gen(function*() {
      yield* Agent.run({ messages: [user("notes")], tools: registry, state: Notes }).pipe(
        Effect.provide(ChatModel.scripted([
          ChatModel.callTools([["n1", "note", { text: "x" }], ["t1", "twice", { first: "y", second: "z" }]]),
          ChatModel.answer("done")
        ]))
      )
      const applied = stateEvents(yield* events)
      assert.deepStrictEqual(
        applied.map((e) => [e.turn, e.toolCallId, e.toolName, e.update, e.state]),
        [
          [0, "n1", "note", { add: "x" }, { items: ["x"] }],
          [0, "t1", "twice", { add: "y" }, { items: ["x", "y"] }],
          [0, "t1", "twice", { add: "z" }, { items: ["x", "y", "z"] }]
        ]
      )
    }).pipe(Effect.provide(ToolServices.layerTest())))

  it.live("a call that fails does not update; the others in its batch do", () =>
    Effect.gen(function*() {
      const result = yield* Agent.run({ messages: [user("notes")], tools: registry, state: Notes }).pipe(
        Effect.provide(ChatModel.scripted([
          ChatModel.callTools([["b1", "broken", { text: "lost" }], ["n1", "note", { text: "kept" }]]),
          ChatModel.answer("done")
        ]))
      )
      assert.deepStrictEqual(result.state, { items: ["kept"] })
      assert.isTrue(result.results[0]!.isError)
      assert.deepStrictEqual(stateEvents(yield* events).map((e) => e.toolCallId), ["n1"])
    }).pipe(Effect.provide(ToolServices.layerTest())))

  it.live("a refused update is a repairable error for the model, and none of its call's updates apply", () =>
    Effect.gen(function*() {
      const seen: Array<string> = []
      const result = yield* Agent.run({ messages: [user("notes")], tools: registry, state: Notes }).pipe(
        Effect.provide(ChatModel.scripted([
          // the second update does not decode (an empty note): neither of the call's two applies
          ChatModel.callTools([["t1", "twice", { first: "ok", second: "" }], ["n1", "note", { text: "n" }]]),
          (request: ChatModel.Request) => {
            const last = request.messages.at(-1)
            if (last?.role === "tool") seen.push(...last.results.map((r) => `${r.isError}:${ToolResult.textOf(r)}`))
            // the second call's new state does not match the state's schema (at most 6 notes)
            return ChatModel.callTools([
              ["t2", "twice", { first: "1", second: "2" }],
              ["t3", "twice", { first: "3", second: "4" }],
              ["t4", "twice", { first: "5", second: "6" }]
            ])
          },
          (request: ChatModel.Request) => {
            const last = request.messages.at(-1)
            if (last?.role === "tool") seen.push(...last.results.map((r) => `${r.isError}:${ToolResult.textOf(r)}`))
            return ChatModel.answer("done")
          }
        ]))
      )
      assert.strictEqual(result.reason, "final_answer")
      assert.deepStrictEqual(result.state, { items: ["n", "1", "2", "3", "4"] })
      assert.strictEqual(
        seen[0],
        "true:the state update was refused: the update does not match its schema: at \"add\": Expected a value with a length of at least 1"
      )
      assert.strictEqual(seen[1], "false:saw 0")
      assert.strictEqual(seen[2], "false:")
      assert.strictEqual(seen[3], "false:")
      assert.strictEqual(
        seen[4],
        "true:the state update was refused: the new state does not match the state's schema: at \"items\": Expected a value with a length of at most 6"
      )
      const refused = result.results.find((r) => r.toolCallId === "t1")!
      assert.strictEqual(refused.error?._tag, "ToolFailure")
      assert.strictEqual(refused.error?.disposition, "repair")
    }).pipe(Effect.provide(ToolServices.layerTest())))

  it.live("a refusal is reported: tool.completed once, then agent.state with refused and the state unchanged", () =>
    Effect.gen(function*() {
      const result = yield* Agent.run({ messages: [user("notes")], tools: registry, state: Notes }).pipe(
        Effect.provide(ChatModel.scripted([
          ChatModel.callTools([["n1", "note", { text: "kept" }], ["t1", "twice", { first: "ok", second: "" }]]),
          ChatModel.answer("done")
        ]))
      )
      assert.deepStrictEqual(result.state, { items: ["kept"] })
      const log = (yield* events).filter((e) => "toolCallId" in e && e.toolCallId === "t1")
      assert.deepStrictEqual(log.map((e) => e._tag), ["tool.started", "tool.completed", "agent.state"])
      const refused = log[2] as ToolEvent.AgentState
      assert.strictEqual(refused.refused, ToolResult.textOf(result.results[1]!))
      assert.deepStrictEqual([refused.update, refused.state, refused.thrown], [undefined, { items: ["kept"] }, undefined])
      // the model read the refusal: the result it got is the error, not the call's own answer
      assert.isTrue(result.results[1]!.isError)
    }).pipe(Effect.provide(ToolServices.layerTest())))

  it.live("a refusal names paths and expectations, never values of the state; a reducer speaks to the model only through UpdateRefused", () =>
    Effect.gen(function*() {
      const Vault = AgentState.make({
        schema: Schema.Struct({ owner: Schema.String, notes: Schema.Array(Schema.String) }),
        update: Schema.Struct({ add: Schema.String, token: Schema.optionalKey(Schema.String) }),
        initial: { owner: "owner-s3cret", notes: [] as ReadonlyArray<string> },
        reduce: (state, update) => {
          if (update.add === "throw") throw new Error(`cannot add to ${state.owner}'s notes`)
          if (update.add === "refuse") throw new AgentState.UpdateRefused({ message: `one note at a time (token ${update.token})` })
          return { ...state, notes: [...state.notes, update.add] }
        }
      })
      const store = Tool.make("store", {
        description: "Stores a note.",
        input: Schema.Struct({ add: Schema.String, token: Schema.String }),
        safety: { redact: { keys: ["token"] } },
        services: [AgentState.AgentState],
        handler: ({ add, token }) => Vault.update({ add, token })
      })
      const result = yield* Agent.run({
        messages: [user("notes")],
        tools: Result.getOrThrow(ToolRegistry.makeResult([store])),
        state: Vault
      }).pipe(
        Effect.provide(ChatModel.scripted([
          ChatModel.callTools([
            ["s1", "store", { add: "throw", token: "tok-123456" }],
            ["s2", "store", { add: "refuse", token: "tok-123456" }]
          ]),
          ChatModel.answer("done")
        ]))
      )
      const [thrown, refused] = result.results.map(ToolResult.textOf)
      assert.strictEqual(
        thrown,
        "the state update was refused: the reducer refused the update: it threw Error (the reducer's own words stay with the application)"
      )
      assert.notInclude(thrown!, "s3cret")
      // the reducer's own message reaches the model, redacted as the tool's errors are
      assert.strictEqual(refused, "the state update was refused: the reducer refused the update: one note at a time (token [redacted])")
      const reported = stateEvents(yield* events)
      assert.deepStrictEqual(reported.map((e) => [e.toolCallId, e.thrown]), [
        ["s1", "Error: cannot add to owner-s3cret's notes"],
        ["s2", undefined]
      ])
      assert.deepStrictEqual(result.state, Vault.initial)
    }).pipe(Effect.provide(ToolServices.layerTest())))

  it.live("tools and reducers get a frozen copy of the state: changing it in place throws, the state stays", () =>
    Effect.gen(function*() {
      const initial = { items: ["a"] as Array<string> }
      const Mutable = AgentState.make({
        schema: Schema.Struct({ items: Schema.Array(Schema.String) }),
        update: Schema.Struct({ add: Schema.String }),
        initial,
        reduce: (state, update) => {
          if (update.add === "in place") {
            ;(state.items as Array<string>).push(update.add)
            return state
          }
          return { items: [...state.items, update.add] }
        }
      })
      const tried: Array<string> = []
      const poke = Tool.make("poke", {
        description: "Tries to change the state in place, then records an update.",
        input: Schema.Struct({ add: Schema.String }),
        services: [AgentState.AgentState],
        handler: ({ add }) =>
          Effect.gen(function*() {
            const state = yield* Mutable.get
            try {
              ;(state.items as Array<string>).push("sneaked")
              tried.push("changed")
            } catch (error) {
              tried.push((error as Error).name)
            }
            yield* Mutable.update({ add })
          })
      })
      const result = yield* Agent.run({
        messages: [user("poke")],
        tools: Result.getOrThrow(ToolRegistry.makeResult([poke])),
        state: Mutable
      }).pipe(
        Effect.provide(ChatModel.scripted([
          ChatModel.callTools([["p1", "poke", { add: "b" }]]),
          ChatModel.callTools([["p2", "poke", { add: "in place" }]]),
          ChatModel.answer("done")
        ]))
      )
      assert.deepStrictEqual(tried, ["TypeError", "TypeError"])
      assert.deepStrictEqual(result.state, { items: ["a", "b"] })
      assert.match(ToolResult.textOf(result.results[1]!), /the reducer refused the update: it threw TypeError/)
      // the definition's own initial value is copied, not frozen
      assert.isFalse(Object.isFrozen(initial.items))
      assert.deepStrictEqual(initial, { items: ["a"] })
    }).pipe(Effect.provide(ToolServices.layerTest())))

  it.live("a state holding a Set (which freezing does not protect): tools and reducers get a fresh copy, changing it changes nothing", () =>
    Effect.gen(function*() {
      const Tags = AgentState.make({
        schema: Schema.Struct({ tags: Schema.ReadonlySet(Schema.String) }),
        update: Schema.String,
        initial: { tags: new Set<string>() },
        reduce: (state, update) => {
          // changes what it was handed, then refuses: the state must stay as it was
          if (update === "in place") {
            ;(state.tags as Set<string>).add("by the reducer")
            throw new AgentState.UpdateRefused({ message: "no" })
          }
          return { tags: new Set([...state.tags, update]) }
        }
      })
      const seen: Array<ReadonlyArray<string>> = []
      const tag = Tool.make("tag", {
        description: "Changes the state in place, then records an update.",
        input: Schema.Struct({ add: Schema.String }),
        services: [AgentState.AgentState],
        handler: ({ add }) =>
          Effect.gen(function*() {
            const state = yield* Tags.get
            seen.push([...state.tags])
            ;(state.tags as Set<string>).add("by the tool")
            yield* Tags.update(add)
          })
      })
      const result = yield* Agent.run({
        messages: [user("tag")],
        tools: Result.getOrThrow(ToolRegistry.makeResult([tag])),
        state: Tags
      }).pipe(
        Effect.provide(ChatModel.scripted([
          ChatModel.callTools([["t1", "tag", { add: "a" }], ["t2", "tag", { add: "b" }]]),
          ChatModel.callTools([["t3", "tag", { add: "in place" }]]),
          ChatModel.answer("done")
        ]))
      )
      // both calls of the first batch read the same, untouched state; the next turn only the updates
      assert.deepStrictEqual(seen, [[], [], ["a", "b"]])
      assert.deepStrictEqual([...(result.state?.tags ?? [])], ["a", "b"])
    }).pipe(Effect.provide(ToolServices.layerTest())))

  it.live("calls of one batch sharing a call id: their updates cannot be told apart, so none applies (every time)", () =>
    Effect.gen(function*() {
      for (let round = 0; round < 10; round++) {
        const result = yield* Agent.run({ messages: [user("notes")], tools: registry, state: Notes, concurrency: 3 }).pipe(
          Effect.provide(ChatModel.scripted([
            ChatModel.callTools([["d", "note", { text: "a" }], ["u", "note", { text: "b" }], ["d", "note", { text: "c" }]]),
            ChatModel.answer("done")
          ]))
        )
        assert.deepStrictEqual(result.state, { items: ["b"] })
        assert.deepStrictEqual(result.results.map((r) => [r.toolCallId, r.isError]), [["d", true], ["u", false], ["d", true]])
        assert.strictEqual(
          ToolResult.textOf(result.results[0]!),
          "the state update was refused: the call id \"d\" is used by several calls of this turn, so their updates cannot be told apart; none applied"
        )
      }
    }).pipe(Effect.provide(ToolServices.layerTest())))

  it.live("a keyed call that replays its key's stored result runs no handler, so it records no update", () =>
    Effect.gen(function*() {
      let ran = 0
      const keyed = Tool.make("keyed_note", {
        description: "Adds a note once per key.",
        input: Schema.Struct({ key: Schema.String, text: Schema.String }),
        idempotency: ({ key }) => key,
        services: [AgentState.AgentState],
        handler: ({ text }) => Effect.andThen(Notes.update({ add: text }), Effect.sync(() => `ran ${++ran}`))
      })
      const tools = Result.getOrThrow(ToolRegistry.makeResult([keyed]))
      const result = yield* Agent.run({ messages: [user("notes")], tools, state: Notes }).pipe(
        Effect.provide(ChatModel.scripted([
          ChatModel.callTools([["k1", "keyed_note", { key: "x", text: "first" }]]),
          ChatModel.callTools([["k2", "keyed_note", { key: "x", text: "again" }]]),
          ChatModel.answer("done")
        ]))
      )
      assert.strictEqual(ran, 1)
      assert.deepStrictEqual(result.results.map(ToolResult.textOf), ["ran 1", "ran 1"])
      assert.deepStrictEqual(result.state, { items: ["first"] })
      assert.deepStrictEqual(stateEvents(yield* events).map((e) => e.toolCallId), ["k1"])
    }).pipe(Effect.provide(ToolServices.layerTest())))

  it.live("the next turn's selectTools and system prompt see the new state", () =>
    Effect.gen(function*() {
      const selections: Array<ReadonlyArray<string>> = []
      const prompts: Array<string> = []
      const ask = (response: ChatModel.Response) => (request: ChatModel.Request) => {
        const first = request.messages[0]
        prompts.push(first?.role === "system" ? first.content : "?")
        return response
      }
      yield* Agent.run({
        messages: [user("notes")],
        tools: registry,
        state: Notes,
        system: (state) => `You have ${state.items.length} notes.`,
        selectTools: ({ state }) => {
          selections.push(state.items)
          return state.items.length === 0 ? ["note"] : ["note", "twice"]
        }
      }).pipe(
        Effect.provide(ChatModel.scripted([
          ask(ChatModel.callTools([["n1", "note", { text: "x" }]])),
          ask(ChatModel.callTools([["t1", "twice", { first: "y", second: "z" }]])),
          ask(ChatModel.answer("done"))
        ]))
      )
      assert.deepStrictEqual(selections, [[], ["x"], ["x", "y", "z"]])
      assert.deepStrictEqual(prompts, ["You have 0 notes.", "You have 1 notes.", "You have 3 notes."])
      const turns = (yield* events).flatMap((e) => e._tag === "agent.turn_started" ? [e.advertised] : [])
      assert.deepStrictEqual(turns, [["note"], ["note", "twice"], ["note", "twice"]])
    }).pipe(Effect.provide(ToolServices.layerTest())))

  it.live("middleware read the state as tools do: the next turn's see the new state", () =>
    Effect.gen(function*() {
      const seen: Array<ReadonlyArray<string>> = []
      const watch = Middleware.make({
        name: "watch",
        before: (invocation) => Effect.as(Effect.map(Notes.get, (state) => void seen.push(state.items)), invocation)
      })
      yield* Agent.run({ messages: [user("notes")], tools: registry, state: Notes, middleware: [watch] }).pipe(
        Effect.provide(ChatModel.scripted([
          ChatModel.callTools([["n1", "note", { text: "a" }]]),
          ChatModel.callTools([["n2", "note", { text: "b" }]]),
          ChatModel.answer("done")
        ]))
      )
      assert.deepStrictEqual(seen, [[], ["a"]])
    }).pipe(Effect.provide(ToolServices.layerTest())))

  it.live("a nested agent (Agent.asTool) has its own state: its updates never reach the parent's", () =>
    Effect.gen(function*() {
      const Count = AgentState.make({
        schema: Schema.Struct({ n: Schema.Int }),
        update: Schema.Struct({ by: Schema.Int }),
        initial: { n: 0 },
        reduce: (state, update) => ({ n: state.n + update.by })
      })
      const bump = Tool.make("bump", {
        description: "Counts.",
        input: Schema.Struct({}),
        services: [AgentState.AgentState],
        handler: () => Count.update({ by: 1 })
      })
      const counter = Agent.asTool({
        tools: Result.getOrThrow(ToolRegistry.makeResult([bump])),
        state: Count,
        model: ChatModel.scripted([ChatModel.callTools([["b1", "bump", {}], ["b2", "bump", {}]]), ChatModel.answer("counted")])
      }, { name: "counter", description: "Counts twice.", input: Schema.Struct({ task: Schema.String }) })
      const result = yield* Agent.run({
        messages: [user("notes")],
        tools: Result.getOrThrow(ToolRegistry.makeResult([note, counter])),
        state: Notes
      }).pipe(
        Effect.provide(ChatModel.scripted([
          ChatModel.callTools([["n1", "note", { text: "x" }], ["c1", "counter", { task: "count" }]]),
          ChatModel.answer("done")
        ]))
      )
      assert.deepStrictEqual(result.state, { items: ["x"] })
      const applied = stateEvents(yield* events)
      assert.deepStrictEqual(
        applied.map((e) => [e.toolCallId, e.depth ?? 0, e.state]),
        [["b1", 1, { n: 1 }], ["b2", 1, { n: 2 }], ["n1", 0, { items: ["x"] }]]
      )
    }).pipe(Effect.provide(ToolServices.layerTest())))

  it.live("a retried call counts only the updates of the attempt that ended it", () =>
    Effect.gen(function*() {
      let attempts = 0
      const flaky = Tool.make("flaky_note", {
        description: "Adds a note; its first attempt fails transiently.",
        input: Schema.Struct({ text: Schema.String }),
        services: [AgentState.AgentState],
        safety: { idempotent: true },
        retry: Executor.backoff({ base: "1 millis", maxAttempts: 2, jitter: false }),
        handler: ({ text }) =>
          Effect.andThen(
            Notes.update({ add: `${text}${++attempts}` }),
            attempts === 1 ? Effect.fail(ToolError.retryable("busy")) : Effect.succeed("ok")
          )
      })
      const result = yield* Agent.run({
        messages: [user("notes")],
        tools: Result.getOrThrow(ToolRegistry.makeResult([flaky])),
        state: Notes
      }).pipe(
        Effect.provide(ChatModel.scripted([ChatModel.callTools([["f1", "flaky_note", { text: "try" }]]), ChatModel.answer("done")]))
      )
      assert.strictEqual(attempts, 2)
      assert.deepStrictEqual(result.state, { items: ["try2"] })
    }).pipe(Effect.provide(ToolServices.layerTest())))

  it.live("a retried call whose failed attempt recorded an update, and whose last attempt recorded none, updates nothing", () =>
    Effect.gen(function*() {
      let attempts = 0
      const flaky = Tool.make("flaky_note", {
        description: "Adds a note on its first attempt, which fails transiently; the retry adds nothing.",
        input: Schema.Struct({ text: Schema.String }),
        services: [AgentState.AgentState],
        safety: { idempotent: true },
        retry: Executor.backoff({ base: "1 millis", maxAttempts: 2, jitter: false }),
        handler: ({ text }) =>
          ++attempts === 1
            ? Effect.andThen(Notes.update({ add: text }), Effect.fail(ToolError.retryable("busy")))
            : Effect.succeed("ok")
      })
      const result = yield* Agent.run({
        messages: [user("notes")],
        tools: Result.getOrThrow(ToolRegistry.makeResult([flaky])),
        state: Notes
      }).pipe(
        Effect.provide(ChatModel.scripted([ChatModel.callTools([["f1", "flaky_note", { text: "stale" }]]), ChatModel.answer("done")]))
      )
      assert.strictEqual(attempts, 2)
      assert.deepStrictEqual(result.state, Notes.initial)
    }).pipe(Effect.provide(ToolServices.layerTest())))

  it.live("Agent.stream reports the updates as agent.state events", () =>
    Effect.gen(function*() {
      const streamed = yield* Agent.stream({ messages: [user("notes")], tools: registry, state: Notes }).pipe(
        Stream.runCollect,
        Effect.provide(ChatModel.scripted([ChatModel.callTools([["n1", "note", { text: "x" }]]), ChatModel.answer("done")]))
      )
      assert.deepStrictEqual(stateEvents(Array.from(streamed)).map((e) => e.state), [{ items: ["x"] }])
    }).pipe(Effect.provide(ToolServices.layerTest())))

  it.live("an initial state its Schema rejects is a defect when the run starts, naming where", () =>
    Effect.gen(function*() {
      const Bad = AgentState.make({ ...Notes, update: Notes.updateSchema, initial: { items: ["1", "2", "3", "4", "5", "6", "7"] } })
      const exit = yield* Effect.exit(Agent.run({ messages: [user("notes")], tools: registry, state: Bad }).pipe(
        Effect.provide(ChatModel.scripted([ChatModel.answer("done")]))
      ))
      assert.isTrue(Exit.isFailure(exit) && Cause.hasDies(exit.cause))
      assert.include(
        Exit.isFailure(exit) ? Cause.pretty(exit.cause) : "",
        "the initial state does not match the state's schema: at \"items\": Expected a value with a length of at most 6"
      )
    }).pipe(Effect.provide(ToolServices.layerTest())))

  it.live("a tool reading a state its run does not declare is a defect naming the state option", () =>
    Effect.gen(function*() {
      const failed = yield* Effect.flip(Agent.run({ messages: [user("notes")], tools: registry }).pipe(
        Effect.provide(ChatModel.scripted([ChatModel.callTools([["n1", "note", { text: "x" }]]), ChatModel.answer("done")]))
      ))
      assert.strictEqual(failed.reason, "tool")
      assert.strictEqual(failed.error._tag, "ToolDefect")
      assert.include(String(failed.error._tag === "ToolDefect" ? failed.error.cause : ""), "declares no state")
    }).pipe(Effect.provide(ToolServices.layerTest())))
})
