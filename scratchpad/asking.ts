// Tools that ask: a handler asks a typed question; a front-end renders it from the stream and answers.
import { Deferred, Effect, Layer, Schema, Stream } from "effect"
import { Agent, Ask, ChatModel, Tool, ToolRegistry, ToolServices } from "tinyagents"

const deploy = Tool.make("deploy", {
  description: "Deploys a service; asks the user which branch.",
  input: Schema.Struct({ service: Schema.String }),
  failure: Ask.NotAnswered, // the model reads a refusal; without this line (or a catch) the handler does not compile
  services: [Ask.Ask],
  handler: ({ service }) =>
    Effect.map(
      Ask.question({
        message: `Which branch of ${service}?`,
        answer: Schema.Struct({ branch: Schema.Literals(["main", "staging"]) }),
        choices: [{ branch: "main" }, { branch: "staging" }],
        timeout: "10 minutes"
      }),
      ({ branch }) => `deployed ${service}@${branch}`
    )
})

const model = ChatModel.scripted([ChatModel.callTools([["c1", "deploy", { service: "api" }]]), ChatModel.answer("Done.")])

const program = Effect.gen(function*() {
  const tools = yield* ToolRegistry.make([deploy])
  // The front-end: it sees `tool.question` in the stream, shows a form, and its answer resumes the tool.
  const clicked = yield* Deferred.make<Ask.Reply>()
  yield* Agent.stream({ messages: [{ role: "user", content: "Deploy the api" }], tools }).pipe(
    Stream.runForEach((e) =>
      Effect.sync(() => {
        if (e._tag === "tool.question") {
          console.log(`asks: ${e.message} ${JSON.stringify(e.schema)}`)
          Deferred.doneUnsafe(clicked, Effect.succeed(Ask.answer(e.choices?.[1], "front-end")))
        }
        if (e._tag === "tool.answered") console.log(`answered: ${e.outcome} ${JSON.stringify(e.answer)} by ${e.answeredBy}`)
        if (e._tag === "tool.completed") console.log(`tool: ${e.output}`)
        if (e._tag === "agent.finished") console.log(`agent: ${e.text}`)
      })
    ),
    // the application's answerer: here, whatever the front-end clicks
    Effect.provide(Ask.layerFunction(() => Deferred.await(clicked)))
  )
})

Effect.runPromise(program.pipe(Effect.provide(Layer.merge(model, ToolServices.layerTest()))))
