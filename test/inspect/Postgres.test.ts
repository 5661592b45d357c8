/**
 * `tinyagents inspect postgres://…` (full tier): a durable journal on a real Postgres server
 * started for this file, with a password: the inspector lists the run waiting for approval, never
 * shows the password, and an approval posted from its page reaches the run, which finishes.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Redacted, Result, Schedule, Schema } from "effect"
import { afterAll, beforeAll } from "vitest"
import * as ChatModel from "../../src/agent/ChatModel.ts"
import { Server, Sources } from "../../src/cli/inspect/index.ts"
import * as Tool from "../../src/contract/Tool.ts"
import * as ToolRegistry from "../../src/contract/ToolRegistry.ts"
import { DurableAgent, Runner } from "../../src/durable/index.ts"
import { Stores } from "../../src/stores/index.ts"
import { type PostgresServer, postgresSkipReason, startPostgres } from "../support/postgres.ts"

const password = "pg-Secret-42"
let pg: PostgresServer | undefined
beforeAll(async () => {
  if (postgresSkipReason === undefined) pg = await startPostgres({ password })
}, 60_000)
afterAll(() => pg?.destroy())
if (postgresSkipReason !== undefined && process.env["TINYAGENTS_REQUIRE_POSTGRES"] !== "1") console.log(`skipped: ${postgresSkipReason}`)

const send = Tool.make("send", {
  description: "Sends a message.",
  input: Schema.Struct({ to: Schema.String, body: Schema.String }),
  safety: { access: "write", redact: { keys: ["to"] } },
  handler: ({ body }) => Effect.succeed(`sent ${body}`)
})
const mailer = DurableAgent.make({ name: "mailer", tools: Result.getOrThrow(ToolRegistry.makeResult([send])), approval: () => true, pollInterval: "20 millis" })
const model = ChatModel.fromFunction((request) =>
  Effect.succeed(
    request.messages.some((m) => m.role === "tool")
      ? ChatModel.answer("sent")
      : ChatModel.callTools([["c1", "send", { to: "alice@example.com", body: "one" }]])
  )
)

describe.skipIf(postgresSkipReason !== undefined)("tinyagents inspect on a Postgres journal", () => {
  it.live("the run waiting for approval, no password on the page; approved from the page, it finishes", () =>
    Effect.gen(function*() {
      const url = pg!.url
      assert.include(url, password)
      yield* mailer.start("pg-1", [{ role: "user", content: "mail" }])
      yield* mailer.pending("pg-1").pipe(
        Effect.repeat({ until: (pending) => pending.length === 1, schedule: Schedule.spaced("50 millis") }),
        Effect.timeout("30 seconds")
      )
      const source = yield* Sources.open(url, { allowDecisions: true })
      assert.strictEqual(source.kind, "journal")
      const served = yield* Server.serve(source)
      const page = yield* Effect.promise(async () => (await fetch(`${served.url}/run?id=pg-1`)).text())
      assert.include(page, "awaiting approval (1)")
      assert.notInclude(page, password)
      assert.notInclude(page, "alice@example.com")
      const posted = yield* Effect.promise(() =>
        fetch(`${served.url}/decide`, {
          method: "POST",
          redirect: "manual",
          headers: { "content-type": "application/x-www-form-urlencoded", origin: served.url },
          body: "workflow=mailer&run=pg-1&call=c1&decision=approve"
        })
      )
      assert.include(decodeURIComponent(posted.headers.get("location")!), "approved c1 of run pg-1")
      const result = yield* mailer.result("pg-1").pipe(Effect.timeout("30 seconds"))
      assert.strictEqual(result.text, "sent")
    }).pipe(
      Effect.scoped,
      Effect.provide(mailer.layer.pipe(
        Layer.provide([model, Stores.layerMemory]),
        Layer.provideMerge(Runner.layerPostgres({
          url: Redacted.make(pg!.url),
          address: { host: "127.0.0.1", port: 40_000 + Math.floor(Math.random() * 10_000) },
          pollInterval: "50 millis",
          lockExpiration: "3 seconds",
          shutdownTimeout: "50 millis"
        }))
      ))
    ), 90_000)
})
