import { Effect, Layer, Result } from "effect"
import { spawnSync } from "node:child_process"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { ChatModel, ToolRegistry } from "../src/index.ts"
import { DurableAgent, Runner } from "../src/durable/index.ts"
import * as Stores from "../src/stores/Stores.ts"

const tools = Result.getOrThrow(ToolRegistry.makeResult([]))
const agent = DurableAgent.make({ name: "real", tools })
const db = join(mkdtempSync(join(tmpdir(), "review-spam-")), "j.db")
const model = ChatModel.fromFunction(() => Effect.succeed(ChatModel.answer("x")))
await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
  yield* agent.start("run-0", [{ role: "user", content: "hi" }])
  console.log((yield* agent.result("run-0")).text)
  const r = spawnSync(process.execPath, ["--conditions=tinyagents-source", "src/cli/bin.ts", "durable", "approve", "run-1", "c1", "--db", db, "--workflow", "typo"], { encoding: "utf8" })
  console.log("cli:", r.status, r.stdout.trim(), Date.now())
  yield* Effect.sleep("15 seconds")
  console.log("end", Date.now())
}).pipe(Effect.provide(agent.layer.pipe(Layer.provide(Layer.mergeAll(model, Stores.layerMemory)), Layer.provideMerge(Runner.layerSqlite({ filename: db })))))))
process.exit(0)
