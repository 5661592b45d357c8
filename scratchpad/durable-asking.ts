// Durable questions: a tool asks which branch to deploy; the durable run suspends (journaled) until
// someone answers through the agent's API (or `tinyagents durable answer`), from any process on the
// journal. A wrong answer is refused with the reason; the right one resumes the run, and the call runs
// again from its start: the same question gets the journaled answer at once.
import { Effect, Layer, Result, Schedule, Schema } from "effect"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Ask, ChatModel, Tool, ToolRegistry } from "tinyagents"
import { DurableAgent, Runner } from "tinyagents/durable"
import { Stores } from "tinyagents/stores"

let starts = 0
const deploy = Tool.make("deploy", {
  description: "Deploys a service; asks which branch.",
  input: Schema.Struct({ service: Schema.String }),
  failure: Ask.NotAnswered,
  services: [Ask.Ask],
  handler: ({ service }) =>
    Effect.gen(function*() {
      // runs again when the run resumes: what a handler does before it asks must be idempotent
      starts++
      const { branch } = yield* Ask.question({
        message: `Which branch of ${service}?`,
        answer: Schema.Struct({ branch: Schema.Literals(["main", "staging"]) })
      })
      return `deployed ${service}@${branch}`
    })
})

const model = ChatModel.fromFunction(({ messages }) =>
  Effect.succeed(
    messages.some((m) => m.role === "tool") ? ChatModel.answer("Deployed.") : ChatModel.callTools([["c1", "deploy", { service: "api" }]])
  )
)

const deployer = DurableAgent.make({
  name: "deployer",
  tools: Result.getOrThrow(ToolRegistry.makeResult([deploy])),
  pollInterval: "50 millis"
})

const db = join(mkdtempSync(join(tmpdir(), "tinyagents-asking-")), "journal.db")
const runner = deployer.layer.pipe(
  Layer.provide(Layer.mergeAll(model, Stores.layerMemory)),
  Layer.provideMerge(Runner.layerSqlite({ filename: db, pollInterval: "50 millis" }))
)

const program = Effect.gen(function*() {
  yield* deployer.start("release-7", [{ role: "user", content: "Deploy the api" }])
  // the run suspends on the question: it is listed, with the answer's JSON Schema
  const [open] = yield* deployer.questions("release-7").pipe(
    Effect.repeat({ until: (open) => open.length > 0, schedule: Schedule.spaced("50 millis") })
  )
  console.log(`asks: ${open!.callId} #${open!.question} ${open!.message} ${JSON.stringify(open!.schema)}`)
  const run = (yield* deployer.list()).runs[0]!
  console.log(`${run.runId}: ${run.status}, ${run.pendingQuestions} question`)
  // a wrong answer is refused (nothing is sent; the question stays open)
  const refused = yield* Effect.flip(deployer.answer("release-7", "c1", Ask.answer({ branch: "prod" }, "alice")))
  console.log(`refused: ${refused._tag}`)
  yield* deployer.answer("release-7", "c1", Ask.answer({ branch: "staging" }, "alice"))
  const result = yield* deployer.result("release-7")
  console.log(`${result.text} ${result.results.map((r) => r.content.map((b) => b.type === "text" ? b.text : "").join("")).join("")}`)
  console.log(`the handler started ${starts} times (asked, then again once answered)`)
})

Effect.runPromise(program.pipe(Effect.provide(runner))).then(() => process.exit(0))
