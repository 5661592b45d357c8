// A tools module with prompts and resources: `tinyagents mcp serve scratchpad/mcp-notes.ts` serves all three.
import { Effect, PubSub, Schema, Stream } from "effect"
import { Tool } from "tinyagents"
import { McpPrompt, McpResource } from "tinyagents/mcp"

const notes = new Map([["groceries", "eggs, milk, bread"], ["todo", "write the docs"]])
const changed = Effect.runSync(PubSub.unbounded<string>()) // the store says which note changed

const writeNote = Tool.make("write_note", {
  description: "Writes a note.",
  input: Schema.Struct({ key: Schema.String, text: Schema.String }),
  safety: { access: "write", idempotent: true },
  handler: ({ key, text }) =>
    Effect.sync(() => notes.set(key, text)).pipe(Effect.andThen(PubSub.publish(changed, `notes://note/${key}`)), Effect.as("saved"))
})
export default [writeNote]

export const prompts = [
  McpPrompt.make("summarize", {
    description: "Summarize one note.",
    arguments: Schema.Struct({
      key: Schema.String.annotate({ description: "the note's key" }),
      words: Schema.optionalKey(Schema.FiniteFromString).annotate({ description: "at most this many words" })
    }),
    handler: ({ key, words = 20 }) =>
      Effect.succeed([
        { role: "user", content: { type: "text", text: `Summarize this note in at most ${words} words.` } },
        { role: "user", content: { type: "resource", resource: { uri: `notes://note/${key}`, text: notes.get(key) ?? "" } } }
      ] as const)
  })
]

export const resources = [
  McpResource.make("notes://index", {
    name: "index",
    description: "The keys of every note.",
    mimeType: "text/plain",
    read: Effect.sync(() => [...notes.keys()].join("\n"))
  }),
  McpResource.template("notes://note/{key}", {
    name: "note",
    description: "One note by key.",
    mimeType: "text/plain",
    read: ({ key }, uri) =>
      Effect.suspend(() => {
        const text = notes.get(key)
        return text === undefined ? Effect.fail(new McpResource.ResourceNotFound({ uri })) : Effect.succeed(text)
      }),
    completions: { key: (prefix) => Effect.sync(() => [...notes.keys()].filter((key) => key.startsWith(prefix))) },
    changes: Stream.fromPubSub(changed) // subscribable: clients that subscribed to a note hear of its changes
  })
]
