/**
 * `npm run quickstart` (scratchpad/quickstart.ts, the README's quick start) run
 * as a child process of the project's Node: a missing key is one line naming
 * the variable; against a loopback OpenAI-compatible server (the real HTTP
 * adapter, no network) it runs the `add` tool and prints the answer.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { serve } from "./models/support/loopback.ts"
import { completion, runNode } from "./models/support/node.ts"

const quickstart = ["scratchpad/quickstart.ts"]
const key = "sk-test-quickstart-0a1b2c3d4e5f"

describe("npm run quickstart", () => {
  it("without OPENAI_API_KEY: one line on stderr naming the variable, exit code 1", async () => {
    const run = await runNode(quickstart)
    assert.strictEqual(run.status, 1)
    assert.strictEqual(run.stdout, "")
    assert.strictEqual(
      run.stderr,
      `tinyagents quickstart: missing environment variable OPENAI_API_KEY (set it to your OpenAI API key; see README "Environment variables")\n`
    )
  })

  it("an invalid OPENAI_BASE_URL: one line naming it, exit code 1", async () => {
    const run = await runNode(quickstart, { OPENAI_API_KEY: key, OPENAI_BASE_URL: "localhost:8080/v1" })
    assert.strictEqual(run.status, 1)
    assert.match(run.stderr, /^tinyagents quickstart: invalid environment variable OPENAI_BASE_URL: expected an http\(s\) URL[^\n]*\n$/)
  })

  it.live("against a loopback server: calls add, prints the answer, exit code 0", () =>
    Effect.gen(function*() {
      const server = yield* serve([
        { json: completion(null, [["call_add", "add", "{\"a\":1234,\"b\":4321}"]]) },
        { json: completion("1234 + 4321 = 5555.") }
      ])
      const run = yield* Effect.promise(() =>
        runNode(quickstart, { OPENAI_API_KEY: key, OPENAI_BASE_URL: `${server.origin}/v1`, OPENAI_MODEL: "loopback-model" })
      )
      assert.strictEqual(run.stderr, "")
      assert.strictEqual(run.status, 0)
      assert.strictEqual(run.stdout, "1234 + 4321 = 5555.\n")
      assert.deepStrictEqual(server.requests.map((r) => `${r.method} ${r.path}`), [
        "POST /v1/chat/completions",
        "POST /v1/chat/completions"
      ])
      const first = server.requests[0]!
      assert.strictEqual(first.headers["authorization"], `Bearer ${key}`)
      assert.strictEqual((first.json as { model: string }).model, "loopback-model")
      // The second request carries the real tool result back to the model.
      const messages = (server.requests[1]!.json as { messages: ReadonlyArray<Record<string, unknown>> }).messages
      const tool = messages.find((m) => m["role"] === "tool")
      assert.strictEqual(tool?.["tool_call_id"], "call_add")
      assert.include(String(tool?.["content"]), "5555")
    }).pipe(Effect.scoped))

  it.live("a rejected key (HTTP 401): one line with the provider's message, exit code 1", () =>
    Effect.gen(function*() {
      const server = yield* serve([{
        status: 401,
        json: { error: { message: "Incorrect API key provided.", type: "invalid_request_error", code: "invalid_api_key" } }
      }])
      const run = yield* Effect.promise(() => runNode(quickstart, { OPENAI_API_KEY: key, OPENAI_BASE_URL: `${server.origin}/v1` }))
      assert.strictEqual(run.status, 1)
      assert.strictEqual(run.stdout, "")
      assert.strictEqual(
        run.stderr,
        "tinyagents quickstart: agent run failed (model) in turn 0: openai-chat: HTTP 401 invalid_api_key: Incorrect API key provided.\n"
      )
      assert.strictEqual(server.requests.length, 1)
      assert.strictEqual((server.requests[0]!.json as { model: string }).model, "gpt-4o-mini")
    }).pipe(Effect.scoped))
})
