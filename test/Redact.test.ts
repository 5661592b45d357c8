/**
 * Every place that takes secrets out of a text does it one way (`src/internal/redact/text.ts`): a
 * tool's redaction policy, a store's database error, a model adapter's HTTP error and the durable
 * journal's Postgres URL all show `[redacted]`, and secrets that overlap (one a prefix of another, or
 * two sharing characters) are redacted whole. Before, the store copy replaced secrets in the order
 * given (a key that starts the stored value left the rest of the value), the model adapters longest
 * first (two secrets sharing characters left the tail of the shorter), and both wrote `<redacted>`;
 * the journal wrote `***` and threw on a password with a stray `%`.
 */
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Layer, Redacted, Schema } from "effect"
import { SqlError } from "effect/sql"
import { ChatModel, ToolError } from "../src/index.ts"
import { OpenAiChatModel } from "../src/agent/models/index.ts"
import * as HttpChat from "../src/agent/models/internal/httpChat.ts"
import { failureLine, redactUrl } from "../src/cli/internal/durableJournal.ts"
import { scrubberOf } from "../src/internal/redact/policy.ts"
import { scrubSqlError } from "../src/stores/internal/scrub.ts"
import { captureLogs, serve } from "./models/support/loopback.ts"

/** Two secrets that share characters: the end of the first starts the second. */
const first = "sk-live-AAAAAAAA-BBBBBBBB"
const second = "BBBBBBBB-CCCCCCCC"
const both = "sk-live-AAAAAAAA-BBBBBBBB-CCCCCCCC"

/** A key that is a prefix of the value stored under it. */
const key = "token"
const value = "token-9f8e7d6c5b4a-PLANTED"

/** Neither secret, nor its first or last eight characters, is in `text`. */
const assertNoPart = (text: string, secrets: ReadonlyArray<string>) => {
  for (const secret of secrets) {
    for (const part of [secret, secret.slice(-8), secret.slice(0, 8)]) assert.notInclude(text, part, text)
  }
}

/** The text each place makes of `text` without `secrets`. */
const places = (text: string, secrets: ReadonlyArray<string>) => {
  const sql = scrubSqlError(
    new SqlError.SqlError({ reason: new SqlError.UnknownError({ cause: new Error(text), message: text }) }),
    secrets
  ) as SqlError.SqlError
  return {
    policy: scrubberOf({ keys: ["secret"] }, { secret: secrets })!.text(text),
    store: sql.reason.message!,
    storeCause: (sql.reason.cause as Error).message,
    model: HttpChat.scrub(text, secrets.map((secret) => Redacted.make(secret)))
  }
}

describe("one redaction: one marker, overlapping secrets redacted whole", () => {
  it("a policy, a store error and a model error make the same text of the same secrets", () => {
    const cases: ReadonlyArray<readonly [string, ReadonlyArray<string>, string]> = [
      // overlapping: the longest first would leave "-CCCCCCCC"
      [`invalid key ${both} sent`, [first, second], "invalid key [redacted] sent"],
      // a prefix of another, the shorter first: in that order the rest of the longer one would stay
      [`duplicate (${value}) under ${key}`, [key, value], "duplicate ([redacted]) under [redacted]"],
      // touching: two regions
      [`${key}${second}`, [key, second], "[redacted][redacted]"],
      // the JSON-escaped form of a secret is a form of it too
      [`{"q":"say \\"hi\\" there"}`, [`say "hi" there`], `{"q":"[redacted]"}`]
    ]
    for (const [text, secrets, expected] of cases) {
      const made = places(text, secrets)
      assert.deepStrictEqual(made, { policy: expected, store: expected, storeCause: expected, model: expected }, text)
    }
  })

  it("a store error whose database text quotes a key and the value it starts holds no part of either", () => {
    const cause = scrubSqlError(
      new SqlError.SqlError({
        reason: new SqlError.UniqueViolation({
          cause: new Error(`duplicate key value violates unique constraint: Key (id)=(${key}) value ${value}`),
          message: `insert ${key} = ${value} failed`,
          constraint: "tinyagents_store_pkey"
        })
      }),
      [key, value]
    )
    const error = new ToolError.StoreFailed({ store: "notes", operation: "write", cause })
    const encoded = JSON.stringify(Schema.encodeUnknownSync(ToolError.ToolError)(error))
    for (const text of [encoded, error.message]) {
      assert.notInclude(text, "PLANTED")
      assert.notInclude(text, "9f8e7d6c5b4a")
    }
    assert.include(encoded, "[redacted]")
  })

  it.live("a model's HTTP error quoting the API key run into a credential header's value leaks neither, nor does its log line", () =>
    Effect.gen(function*() {
      const logs = captureLogs()
      const server = yield* serve([{
        status: 401,
        json: { error: { message: `Incorrect API key provided: ${both}.`, type: "invalid_request_error", code: "invalid_api_key" } }
      }])
      const layer = OpenAiChatModel.layer({
        apiKey: Redacted.make(first),
        model: "gpt-4o-mini",
        baseUrl: `${server.origin}/v1`,
        headers: { "api-key": second },
        retry: false
      }).pipe(Layer.provide(NodeHttpClient.layerUndici))
      const failure = yield* Effect.flip(
        ChatModel.ChatModel.use((model) => model.generate({ messages: [{ role: "user", content: "hi" }], tools: [] })).pipe(
          Effect.provide(layer),
          Effect.provide(logs.layer)
        )
      )
      assert.strictEqual(failure.message, "openai-chat: HTTP 401 invalid_api_key: Incorrect API key provided: [redacted].")
      assert.isNotEmpty(logs.lines)
      assertNoPart([failure.message, ...logs.lines].join("\n"), [first, second])
    }).pipe(Effect.scoped))

  it("the journal's Postgres URL shows the marker for its password, in its name and in a driver's message", () => {
    const url = "postgres://u:s3cret%25pw@127.0.0.1:1/db"
    const location = { _tag: "Postgres", url } as const
    assert.strictEqual(redactUrl(url), "postgres://u:[redacted]@127.0.0.1:1/db")
    const line = failureLine(location, Cause.fail(new Error(`connect to ${url} failed: password s3cret%pw refused`)))
    assert.strictEqual(line, "connect to postgres://u:[redacted]@127.0.0.1:1/db failed: password [redacted] refused")
  })

  it("a journal password with a stray % (not an escape) is still taken out, not a thrown URIError", () => {
    const url = "postgres://u:100%@127.0.0.1:1/db"
    const line = failureLine({ _tag: "Postgres", url }, Cause.fail(new Error(`auth failed for 100% at ${url}`)))
    assert.strictEqual(line, "auth failed for [redacted] at postgres://u:[redacted]@127.0.0.1:1/db")
  })
})
