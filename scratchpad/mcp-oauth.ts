// Connect to an OAuth-protected MCP server: the demo server of scratchpad/mcp-oauth-server.ts (an authorization server
// and a protected MCP endpoint on loopback) answers 401; McpConnect.http discovers, registers, signs in with PKCE
// through the authorize callback, and keeps the tokens in a StoreRegistry store. save_note needs more scope (step-up).
import { Effect } from "effect"
import { Executor, StoreRegistry, ToolResult, ToolServices } from "tinyagents"
import { McpAuth, McpConnect } from "tinyagents/mcp"
import { serveDemo } from "./mcp-oauth-server.ts"

const demo = await serveDemo()
const signIn = McpAuth.authorizationCode({
  redirectUrl: "http://127.0.0.1:8976/callback",
  // The user's step. An application opens a browser here (McpAuth.loopback listens for the redirect); the demo's
  // /authorize approves at once, so following its redirect is enough.
  authorize: (url) =>
    Effect.promise(async () => {
      const back = new URL((await fetch(url, { redirect: "manual" })).headers.get("location")!)
      return { code: back.searchParams.get("code")!, state: back.searchParams.get("state")! }
    })
})
const program = Effect.gen(function*() {
  const notes = yield* McpConnect.http({ url: demo.url, name: "notes", auth: signIn }) // authorized before it returns
  const executor = yield* Executor.make(yield* notes.registry)
  console.log("list_notes:", ToolResult.textOf(yield* executor.run({ id: "c1", name: "list_notes", arguments: {} })))
  console.log("save_note:", ToolResult.textOf(yield* executor.run({ id: "c2", name: "save_note", arguments: { text: "eggs" } })))
  console.log("scopes asked for:", JSON.stringify(demo.seen.authorizations))
  const store = yield* StoreRegistry.store("mcp-auth") // where the tokens are; never in events, logs or errors
  console.log("token stored:", (yield* store.get(`tokens ${demo.url}`)) !== undefined)
  yield* Effect.scoped(McpConnect.http({ url: demo.url, auth: signIn })) // a second connection uses the stored token
  console.log("sign-ins:", demo.seen.authorizations.length)
})
await Effect.runPromise(program.pipe(Effect.scoped, Effect.provide(ToolServices.layerTest()), Effect.ensuring(Effect.promise(demo.close))))
