/**
 * Agent streams for chat front-ends (`tinyagents/ai-sdk`): a run's events as the AI SDK's UI
 * message stream, read by the real `ai` package's own reader (`readUIMessageStream`, what `useChat`
 * runs on each chunk) and over a loopback HTTP endpoint with its `DefaultChatTransport`, and the same
 * events as plain SSE, decoded back with the event Schemas. One suite, run against `ai` 7
 * (AiSdkStream.test.ts) and 6 (AiSdkStream.v6.test.ts, where the module `ai` is `ai-v6`).
 */
import "../support/otelResolve.ts"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { Readable } from "node:stream"
import { assert, describe, it } from "@effect/vitest"
import { DefaultChatTransport, readUIMessageStream, type UIMessageChunk } from "ai"
import { Cause, Effect, Layer, ManagedRuntime, Schema, Stream } from "effect"
import { Agent, Ask, ChatModel, Tool, ToolError, ToolEvent, ToolProgress, ToolRegistry, ToolServices } from "../../src/index.ts"
import * as AiSdk from "../../src/integrations/AiSdk.ts"

const index = Tool.make("index_documents", {
  description: "Indexes `n` documents, reporting progress.",
  input: Schema.Struct({ n: Schema.Int }),
  services: [ToolProgress.ToolProgress],
  handler: ({ n }) =>
    Effect.as(
      Effect.forEach([...Array(n).keys()], (i) =>
        ToolProgress.report({ message: `doc ${i + 1}`, count: i + 1, total: n, chunk: `[${i}]` })),
      `indexed ${n}`
    )
})
const lookup = Tool.make("lookup", {
  description: "Looks a record up.",
  input: Schema.Struct({ q: Schema.String }),
  handler: ({ q }) => Effect.fail(new ToolError.ToolFailure({ message: `no record for ${q}` }))
})
const token = Tool.make("token", {
  description: "Returns an access token.",
  input: Schema.Struct({}),
  safety: { access: "read", idempotent: true, redact: { patterns: [/sk-live-[A-Za-z0-9]+/] } },
  handler: () => Effect.succeed("your token is sk-live-abc123")
})
const boom = Tool.make("boom", {
  description: "Dies.",
  input: Schema.Struct({}),
  handler: () => Effect.die(new Error("secret-defect-detail"))
})

const usage = (inputTokens: number, outputTokens: number) => ({ inputTokens, outputTokens })
const turns = {
  ok: [
    {
      ...ChatModel.callTools([
        ["c1", "index_documents", { n: 3 }],
        ["c2", "index_documents", { n: "three" }],
        ["c3", "no_such_tool", {}],
        ["c4", "lookup", { q: "x" }],
        ["c5", "token", {}]
      ], "Indexing."),
      usage: usage(10, 4)
    },
    { ...ChatModel.answer("Done: 3 documents."), usage: usage(20, 5) }
  ],
  failing: [ChatModel.callTools([["c1", "boom", {}]], "Trying.")]
} satisfies Record<string, ReadonlyArray<ChatModel.ScriptedTurn>>

const events = (prompt = "Index my documents") =>
  Effect.map(
    ToolRegistry.make([index, lookup, token, boom]),
    (tools) => Agent.stream({ messages: [{ role: "user", content: prompt }], tools })
  )

const runtimeOf = (script: ReadonlyArray<ChatModel.ScriptedTurn>) =>
  ManagedRuntime.make(Layer.merge(ChatModel.scripted(script), ToolServices.layerTest()))

/** The message `readUIMessageStream` assembles (its last snapshot), and the errors it reported. */
const assemble = async (stream: ReadableStream<UIMessageChunk>) => {
  const errors: Array<string> = []
  let message: AiSdk.Message | undefined
  for await (
    const snapshot of readUIMessageStream<AiSdk.Message>({
      stream,
      onError: (error) => errors.push(error instanceof Error ? error.message : String(error))
    })
  ) message = snapshot
  return { message: message!, errors }
}

const toolParts = (message: AiSdk.Message) =>
  message.parts.flatMap((part) =>
    part.type.startsWith("tool-") && "toolCallId" in part
      ? [part as {
          type: string
          toolCallId: string
          state: string
          input?: unknown
          rawInput?: unknown
          output?: unknown
          errorText?: string
        }]
      : []
  )

/** Checks the message of the `ok` script, as any reader of the stream assembles it. */
const checkOkMessage = (message: AiSdk.Message) => {
  assert.deepStrictEqual(
    message.parts.map((part) => part.type),
    [
      "step-start",
      "text",
      "tool-index_documents",
      "tool-index_documents",
      "tool-no_such_tool",
      "tool-lookup",
      "tool-token",
      "data-tool-progress",
      "step-start",
      "text"
    ]
  )
  const texts = message.parts.flatMap((part) => part.type === "text" ? [part.text] : [])
  assert.deepStrictEqual(texts, ["Indexing.", "Done: 3 documents."])
  const tools = toolParts(message)
  const byId = Object.fromEntries(tools.map((part) => [part.toolCallId, part]))
  assert.deepStrictEqual(
    tools.map((part) => [part.toolCallId, part.state]),
    [["c1", "output-available"], ["c2", "output-error"], ["c3", "output-error"], ["c4", "output-error"], [
      "c5",
      "output-available"
    ]]
  )
  assert.deepStrictEqual(byId["c1"]!.input, { n: 3 })
  assert.strictEqual(byId["c1"]!.output, "indexed 3")
  // Refused for its input (tool-input-error): the input as the model sent it, and the message it reads.
  // (ai 6's reader keeps an input refused with tool-input-error as `rawInput`, 7's as `input`.)
  assert.deepStrictEqual(byId["c2"]!.input ?? byId["c2"]!.rawInput, { n: "three" })
  assert.strictEqual(byId["c2"]!.errorText, `index_documents: invalid arguments: at "n": Expected an integer, got "three"`)
  assert.include(byId["c3"]!.errorText, "no_such_tool")
  assert.include(byId["c3"]!.errorText, "index_documents")
  assert.strictEqual(byId["c4"]!.errorText, "no record for x")
  // The model-visible output, redacted as the event carries it.
  assert.notInclude(JSON.stringify(message), "sk-live-abc123")
  assert.include(String(byId["c5"]!.output), "[redacted]")
  const progress = message.parts.find((part) => part.type === "data-tool-progress")
  assert.deepStrictEqual(progress && "data" in progress ? progress.data : undefined, {
    toolCallId: "c1",
    toolName: "index_documents",
    message: "doc 3",
    count: 3,
    total: 3,
    output: "[0][1][2]"
  })
  assert.deepStrictEqual(message.metadata, {
    runId: "test-run",
    threadId: "test-thread",
    turns: 2,
    reason: "final_answer",
    usage: { inputTokens: 30, outputTokens: 9 }
  })
}

const collect = async <A>(stream: ReadableStream<A>): Promise<Array<A>> => {
  const out: Array<A> = []
  for await (const item of stream) out.push(item)
  return out
}

/** The suite, under the `ai` the test file provides (its major names the tests). */
export const suite = (major: 6 | 7) => {
  describe(`(ai ${major}) AiSdk.toUIMessageStream: read by the ai package's readUIMessageStream`, () => {
    it.effect("text, tool parts with their states, refusals' messages, progress data, usage metadata", () =>
      Effect.gen(function*() {
        const runtime = runtimeOf(turns.ok)
        const stream = yield* Effect.promise(() =>
          runtime.runPromise(Effect.flatMap(events(), (run) => AiSdk.toUIMessageStream(run, { messageId: "m1" })))
        )
        const { message, errors } = yield* Effect.promise(() => assemble(stream))
        assert.deepStrictEqual(errors, [])
        assert.strictEqual(message.id, "m1")
        checkOkMessage(message)
        yield* Effect.promise(() => runtime.dispose())
      }))

    it.effect("the chunks: one step per turn, input before output, finish last with the finish reason", () =>
      Effect.gen(function*() {
        const chunks = yield* Effect.flatMap(events(), (run) => Stream.runCollect(AiSdk.uiMessageChunks(run))).pipe(
          Effect.provide(Layer.merge(ChatModel.scripted(turns.ok), ToolServices.layerTest()))
        )
        const types = chunks.map((chunk) => chunk.type)
        assert.strictEqual(types[0], "start")
        assert.deepStrictEqual(types.slice(-2), ["finish-step", "finish"])
        assert.strictEqual(types.filter((type) => type === "start-step").length, 2)
        assert.strictEqual(types.filter((type) => type === "finish-step").length, 2)
        const finish = chunks.at(-1)!
        assert.strictEqual(finish.type === "finish" ? finish.finishReason : undefined, "stop")
        const of = (id: string) =>
          chunks.flatMap((chunk) => "toolCallId" in chunk && chunk.toolCallId === id ? [chunk.type] : [])
        assert.deepStrictEqual(of("c1"), ["tool-input-available", "tool-output-available"])
        assert.deepStrictEqual(of("c2"), ["tool-input-available", "tool-input-error"])
        assert.deepStrictEqual(of("c3"), ["tool-input-available", "tool-input-error"])
        assert.deepStrictEqual(of("c4"), ["tool-input-available", "tool-output-error"])
        // Every text part opened is closed.
        assert.strictEqual(types.filter((t) => t === "text-start").length, types.filter((t) => t === "text-end").length)
      }))

    it.effect("a failed run: an error chunk with AgentFailed's message (no defect detail), then finish", () =>
      Effect.gen(function*() {
        const runtime = runtimeOf(turns.failing)
        const stream = yield* Effect.promise(() =>
          runtime.runPromise(Effect.flatMap(events(), (run) => AiSdk.toUIMessageStream(run)))
        )
        const [forReader, forChunks] = stream.tee()
        const [{ message, errors }, chunks] = yield* Effect.promise(() =>
          Promise.all([assemble(forReader), collect(forChunks)])
        )
        assert.deepStrictEqual(errors, ["agent run failed (tool) in turn 0: internal error in tool boom"])
        assert.notInclude(JSON.stringify(chunks), "secret-defect-detail")
        assert.deepStrictEqual(chunks.slice(-3).map((chunk) => chunk.type), ["finish-step", "error", "finish"])
        const part = toolParts(message)[0]!
        assert.deepStrictEqual([part.type, part.state, part.errorText], [
          "tool-boom",
          "output-error",
          "internal error in tool boom"
        ])
        assert.strictEqual(message.metadata?.reason, "failed")
        yield* Effect.promise(() => runtime.dispose())
      }))
  })

  describe(`(ai ${major}) AiSdk.uiMessageChunks: nested runs and cancellation`, () => {
    it.effect("a nested run (an agent as a tool) adds no parts: its call shows the nested answer", () =>
      Effect.gen(function*() {
        const researcher = Agent.asTool({
          tools: yield* ToolRegistry.make([lookup]),
          model: ChatModel.scripted([ChatModel.callTools([["n1", "lookup", { q: "inner" }]], "Inner text."), ChatModel.answer("inner answer")])
        }, { name: "researcher", description: "Researches.", input: Schema.Struct({ task: Schema.String }) })
        const tools = yield* ToolRegistry.make([researcher])
        const all: Array<ToolEvent.Event> = []
        const chunks = yield* Stream.runCollect(
          AiSdk.uiMessageChunks(
            Agent.stream({ messages: [{ role: "user", content: "go" }], tools }).pipe(
              Stream.tap((event) => Effect.sync(() => all.push(event)))
            )
          )
        )
        assert.isTrue(all.some((event) => event.parentRunId !== undefined), "the stream carries the nested run's events")
        const { message } = yield* Effect.promise(() =>
          assemble(new ReadableStream({ start: (c) => (chunks.forEach((chunk) => c.enqueue(chunk)), c.close()) }))
        )
        assert.deepStrictEqual(message.parts.map((part) => part.type), ["step-start", "tool-researcher", "step-start", "text"])
        assert.strictEqual(toolParts(message)[0]!.output, "inner answer")
        assert.notInclude(JSON.stringify(message), "Inner text.")
      }).pipe(
        Effect.provide(Layer.merge(
          ChatModel.scripted([ChatModel.callTools([["c1", "researcher", { task: "t" }]]), ChatModel.answer("Top.")]),
          ToolServices.layerTest()
        ))
      ))

    it.effect("a tool's question: a data-tool-question part, open with the schema and choices, then updated in place with the answer", () =>
      Effect.gen(function*() {
        const deploy = Tool.make("deploy", {
          description: "Deploys; asks which branch.",
          input: Schema.Struct({ service: Schema.String }),
          failure: Ask.NotAnswered,
          services: [Ask.Ask],
          handler: ({ service }) =>
            Effect.map(
              Ask.question({
                message: `Which branch of ${service}?`,
                answer: Schema.Struct({ branch: Schema.Literals(["main", "staging"]) }),
                choices: [{ branch: "main" }, { branch: "staging" }]
              }),
              ({ branch }) => `deployed ${service}@${branch}`
            )
        })
        const tools = yield* ToolRegistry.make([deploy])
        const chunks = yield* Stream.runCollect(
          AiSdk.uiMessageChunks(Agent.stream({ messages: [{ role: "user", content: "deploy" }], tools }))
        ).pipe(Effect.provide(Ask.layerRules([{ name: "ops", match: () => true, reply: { answer: { branch: "staging" } } }])))
        const questions = chunks.filter((chunk) => chunk.type === "data-tool-question")
        assert.deepStrictEqual(questions.map((chunk) => chunk.type === "data-tool-question" ? [chunk.id, chunk.data.status] : []), [
          ["question-c1-1", "open"],
          ["question-c1-1", "answered"]
        ])
        const { message } = yield* Effect.promise(() =>
          assemble(new ReadableStream({ start: (c) => (chunks.forEach((chunk) => c.enqueue(chunk)), c.close()) }))
        )
        const part = message.parts.filter((p) => p.type === "data-tool-question")
        assert.strictEqual(part.length, 1, "updated in place: one part")
        assert.deepStrictEqual(part[0] && "data" in part[0] ? part[0].data : undefined, {
          toolCallId: "c1",
          toolName: "deploy",
          question: 1,
          message: "Which branch of api?",
          schema: {
            type: "object",
            properties: { branch: { type: "string", enum: ["main", "staging"] } },
            required: ["branch"],
            additionalProperties: false
          },
          choices: [{ branch: "main" }, { branch: "staging" }],
          status: "answered",
          answer: { branch: "staging" },
          answeredBy: "rule:ops"
        })
        assert.strictEqual(toolParts(message).find((p) => p.type === "tool-deploy")?.output, "deployed api@staging")
      }).pipe(
        Effect.provide(Layer.merge(
          ChatModel.scripted([ChatModel.callTools([["c1", "deploy", { service: "api" }]]), ChatModel.answer("Done.")]),
          ToolServices.layerTest()
        ))
      ))

    it.effect("the client going away (the ReadableStream cancelled) interrupts the run and its running tool", () =>
      Effect.gen(function*() {
        let interrupted = false
        let started!: () => void
        const running = new Promise<void>((resolve) => (started = resolve))
        const slow = Tool.make("slow", {
          description: "Waits.",
          input: Schema.Struct({}),
          handler: () =>
            Effect.andThen(Effect.sync(() => started()), Effect.never).pipe(
              Effect.onInterrupt(() => Effect.sync(() => (interrupted = true)))
            )
        })
        const runtime = ManagedRuntime.make(
          Layer.merge(ChatModel.scripted([ChatModel.callTools([["c1", "slow", {}]])]), ToolServices.layerTest())
        )
        const stream = yield* Effect.promise(() =>
          runtime.runPromise(Effect.flatMap(ToolRegistry.make([slow]), (tools) =>
            AiSdk.toUIMessageStream(Agent.stream({ messages: [{ role: "user", content: "go" }], tools }))))
        )
        const reader = stream.getReader()
        const read = reader.read()
        yield* Effect.promise(() => Promise.all([read, running]))
        yield* Effect.promise(() => reader.cancel())
        assert.isTrue(interrupted)
        yield* Effect.promise(() => runtime.dispose())
      }))
  })

  /** A loopback HTTP server whose POST handler answers with `respond(body)`. */
  const serve = (respond: (body: unknown) => Promise<Response>) =>
    Effect.acquireRelease(
      Effect.promise(() =>
        new Promise<{ server: Server; url: string; bodies: Array<unknown> }>((resolve) => {
          const bodies: Array<unknown> = []
          const server = createServer((req, res) => {
            let text = ""
            req.on("data", (data: Buffer) => (text += data.toString("utf8")))
            req.on("end", () => {
              const body: unknown = JSON.parse(text)
              bodies.push(body)
              void respond(body).then((response) => {
                res.writeHead(response.status, Object.fromEntries(response.headers))
                Readable.fromWeb(response.body! as never).pipe(res)
              })
            })
          })
          server.listen(0, "127.0.0.1", () =>
            resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/chat`, bodies }))
        })
      ),
      ({ server }) => Effect.promise(() => new Promise<void>((resolve) => server.close(() => resolve())))
    )

  /** The last user message's text, as `useChat` sends it. */
  const promptOf = (body: unknown): string => {
    const messages = (body as { messages: Array<{ role: string; parts: Array<{ type: string; text?: string }> }> }).messages
    const last = messages.filter((m) => m.role === "user").at(-1)
    return last?.parts.flatMap((part) => part.type === "text" ? [part.text ?? ""] : []).join("") ?? ""
  }

  describe(`(ai ${major}) AiSdk.toUIMessageStreamResponse over loopback HTTP`, () => {
    it.live("the ai package's DefaultChatTransport (useChat's) sends the chat and reads the run", () =>
      Effect.gen(function*() {
        const runtime = runtimeOf(turns.ok)
        const prompts: Array<string> = []
        const { url, bodies } = yield* serve((body) => {
          prompts.push(promptOf(body))
          return runtime.runPromise(Effect.flatMap(events(promptOf(body)), (run) => AiSdk.toUIMessageStreamResponse(run)))
        })
        const transport = new DefaultChatTransport<AiSdk.Message>({ api: url })
        const stream = yield* Effect.promise(() =>
          transport.sendMessages({
            trigger: "submit-message",
            chatId: "chat-1",
            messageId: undefined,
            abortSignal: undefined,
            messages: [{ id: "u1", role: "user", parts: [{ type: "text", text: "Index my documents" }] }]
          })
        )
        const { message, errors } = yield* Effect.promise(() => assemble(stream))
        assert.deepStrictEqual(errors, [])
        assert.deepStrictEqual(prompts, ["Index my documents"])
        assert.strictEqual((bodies[0] as { id: string }).id, "chat-1")
        checkOkMessage(message)
        yield* Effect.promise(() => runtime.dispose())
      }).pipe(Effect.scoped))
  })

  describe(`(ai ${major}) AiSdk.fromUIMessages: the chat useChat posts back, as the agent's messages`, () => {
    it.effect("each assistant step: its text and calls, then the tool message with their outputs or error texts", () =>
      Effect.gen(function*() {
        const runtime = runtimeOf(turns.ok)
        const stream = yield* Effect.promise(() =>
          runtime.runPromise(Effect.flatMap(events(), (run) => AiSdk.toUIMessageStream(run)))
        )
        const { message } = yield* Effect.promise(() => assemble(stream))
        yield* Effect.promise(() => runtime.dispose())
        const transcript = AiSdk.fromUIMessages([
          { id: "s", role: "system", parts: [{ type: "text", text: "Be brief." }] },
          { id: "u1", role: "user", parts: [{ type: "text", text: "Index my documents" }] },
          message,
          { id: "u2", role: "user", parts: [{ type: "text", text: "Thanks" }] }
        ])
        assert.deepStrictEqual(transcript.map((m) => m.role), ["system", "user", "assistant", "tool", "assistant", "user"])
        const assistant = transcript[2]!
        assert.deepStrictEqual(
          assistant.role === "assistant" ? [assistant.content, assistant.toolCalls.map((c) => [c.id, c.name, c.arguments])] : [],
          ["Indexing.", [
            ["c1", "index_documents", { n: 3 }],
            ["c2", "index_documents", { n: "three" }],
            ["c3", "no_such_tool", {}],
            ["c4", "lookup", { q: "x" }],
            ["c5", "token", {}]
          ]]
        )
        const tool = transcript[3]!
        assert.deepStrictEqual(
          tool.role === "tool" ? tool.results.map((r) => [r.toolCallId, r.isError, r.content]) : [],
          [
            ["c1", false, [{ type: "text", text: "indexed 3" }]],
            ["c2", true, [{ type: "text", text: `index_documents: invalid arguments: at "n": Expected an integer, got "three"` }]],
            ["c3", true, [{ type: "text", text: (toolParts(message)[2]!.errorText)! }]],
            ["c4", true, [{ type: "text", text: "no record for x" }]],
            ["c5", false, [{ type: "text", text: String(toolParts(message)[4]!.output) }]]
          ]
        )
        assert.deepStrictEqual(transcript[4], { role: "assistant", content: "Done: 3 documents.", toolCalls: [] })
        // The agent takes it as it is: a second run over the whole chat.
        const seen: Array<ReadonlyArray<string>> = []
        const next = runtimeOf([(request: ChatModel.Request) => {
          seen.push(request.messages.map((m) => m.role))
          return ChatModel.answer("You're welcome.")
        }])
        const result = yield* Effect.promise(() =>
          next.runPromise(Effect.flatMap(
            ToolRegistry.make([index, lookup, token, boom]),
            (tools) => Agent.run({ messages: transcript, tools })
          ))
        )
        assert.strictEqual(result.text, "You're welcome.")
        assert.deepStrictEqual(seen, [["system", "user", "assistant", "tool", "assistant", "user"]])
        yield* Effect.promise(() => next.dispose())
      }))
  })

  describe(`(ai ${major}) AiSdk.toEventStreamResponse: plain SSE, decoded with the event Schemas`, () => {
    const decodeBody = (text: string) =>
      Effect.forEach(
        text.split("\n\n").filter((frame) => frame !== ""),
        (frame) => {
          assert.isTrue(frame.startsWith("data: "), frame)
          return Schema.decodeUnknownEffect(Schema.fromJsonString(AiSdk.SseMessageJson))(frame.slice("data: ".length))
        }
      )

    it.effect("every event of the run, in order, as its encoded form", () =>
      Effect.gen(function*() {
        const runtime = runtimeOf(turns.ok)
        const response = yield* Effect.promise(() =>
          runtime.runPromise(Effect.flatMap(events(), (run) => AiSdk.toEventStreamResponse(run)))
        )
        assert.strictEqual(response.headers.get("content-type"), "text/event-stream")
        const messages = yield* decodeBody(yield* Effect.promise(() => response.text()))
        yield* Effect.promise(() => runtime.dispose())
        // The same run, read directly.
        const direct = yield* Effect.flatMap(events(), Stream.runCollect).pipe(
          Effect.provide(Layer.merge(ChatModel.scripted(turns.ok), ToolServices.layerTest()))
        )
        assert.deepStrictEqual(messages.map((m) => m._tag), direct.map((e) => e._tag))
        const completed = messages.find((m): m is ToolEvent.ToolCompleted => m._tag === "tool.completed" && m.toolCallId === "c5")
        assert.include(completed?.output, "[redacted]")
        const rejected = messages.find((m) => m._tag === "tool.rejected" && m.toolCallId === "c2")
        assert.strictEqual(rejected?._tag === "tool.rejected" ? rejected.error._tag : undefined, "InvalidArguments")
        assert.strictEqual(messages.at(-1)?._tag, "agent.finished")
      }))

    it.effect("a failed run ends with run.failed", () =>
      Effect.gen(function*() {
        const runtime = runtimeOf(turns.failing)
        const response = yield* Effect.promise(() =>
          runtime.runPromise(Effect.flatMap(events(), (run) => AiSdk.toEventStreamResponse(run)))
        )
        const text = yield* Effect.promise(() => response.text())
        const messages = yield* decodeBody(text)
        assert.deepStrictEqual(messages.slice(-3).map((m) => m._tag), ["tool.failed", "agent.finished", "run.failed"])
        const last = messages.at(-1)!
        assert.strictEqual(
          last._tag === "run.failed" ? last.message : undefined,
          "agent run failed (tool) in turn 0: internal error in tool boom"
        )
        // A defect's message and stack are for the application, not the browser: left out, still decodable.
        assert.notInclude(text, "secret-defect-detail")
        const failed = messages.find((m): m is ToolEvent.ToolFailed => m._tag === "tool.failed")!
        assert.strictEqual(failed.cause, undefined)
        assert.strictEqual(failed.error.message, "internal error in tool boom")
        assert.strictEqual(failed.error._tag === "ToolDefect" ? Cause.squash(failed.error.cause) : undefined, "(cause omitted)")
        // Asked for, the causes are sent.
        yield* Effect.promise(() => runtime.dispose())
        const again = runtimeOf(turns.failing)
        const withCauses = yield* Effect.promise(() =>
          again.runPromise(Effect.flatMap(events(), (run) => AiSdk.toEventStreamResponse(run, { causes: true })))
        )
        assert.include(yield* Effect.promise(() => withCauses.text()), "secret-defect-detail")
        yield* Effect.promise(() => again.dispose())
      }))
  })
}
