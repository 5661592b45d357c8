/**
 * At most one successful application per idempotency key. A keyed call first
 * looks in the `StoreRegistry` store for the key (canonical tool name + key):
 * a stored result is answered again (with this call's id) and the handler does
 * not run. Otherwise the call runs, and a successful result (its content blocks
 * and encoded value) is stored before it is returned; failures are not stored,
 * so a failed attempt can run again.
 *
 * What the store keeps: the result as the handler's output encoded it, before
 * redaction: its content blocks (text and images) and its encoded value, with
 * the time it was stored; never the arguments, the error of a failed call, or
 * audit data, except one thing for a tool whose `safety.redact` has keys: the
 * strings the storing call's arguments held under those keys (`scrub`; the
 * result beside them may echo them anyway). Values under the tool's
 * `safety.redact` keys and pattern matches are therefore in the store as
 * they were produced (protect the store as you would the tool's own
 * data). A stored result is redacted each time it
 * answers a call, exactly like a fresh one: it goes back through the
 * middleware and the executor's `Render.finalize`, so the model, events and
 * receipts never see what the store keeps.
 *
 * `Render.finalize` scrubs an output of the values the *current* call's
 * arguments hold under redacted keys, but a replay answers a later call whose
 * arguments may differ: it is first scrubbed here of the storing call's values
 * (`scrub`), so the answer is scrubbed of the union of both. The result is
 * stored unredacted, not as the storing call's redacted result, so that a
 * replay's `value` (what middleware see) is the tool's value with only those
 * echoed strings replaced by the marker, not with every redacted key turned
 * into the marker string (which would no longer match the output's schema).
 *
 * Within one process, calls with the same key never overlap: a per-key lock
 * (per store, so it holds across executors sharing a `StoreRegistry`) makes the
 * second wait for the first and then read its stored result. Across processes
 * the store is the only coordination, and `KeyValueStore` has no
 * compare-and-set: two simultaneous *first* calls in two processes may both run.
 */
import { Cause, Deferred, Effect, Exit, Option, Schema } from "effect"
import { KeyValueStore } from "effect/persistence"
import { StoreRegistry } from "../../StoreRegistry.ts"
import type * as Tool from "../../../contract/Tool.ts"
import type { ToolCall } from "../../../contract/ToolCall.ts"
import * as ToolError from "../../../contract/ToolError.ts"
import type * as ToolResult from "../../../contract/ToolResult.ts"
import type { Redact } from "../../../contract/Safety.ts"
import { secretsOf, withoutSecretsText, withoutSecretsValue } from "../../../internal/redact.ts"
import { textOfValue } from "./Render.ts"

export interface Config {
  /** The `StoreRegistry` store. */
  readonly store: string
  /** How long a stored result answers repeats, in milliseconds; `undefined`: for ever. */
  readonly ttl: number | undefined
}

const Block = Schema.Union([
  Schema.Struct({ type: Schema.Literal("text"), text: Schema.String }),
  Schema.Struct({ type: Schema.Literal("image"), data: Schema.String, mimeType: Schema.String })
])

/** What is stored per key: enough to answer the call again. */
const Stored = Schema.Struct({
  storedAt: Schema.Number,
  content: Schema.Array(Block),
  value: Schema.optionalKey(Schema.Unknown),
  /** The values the storing call's arguments held under the tool's redacted keys: a replay is scrubbed of them. */
  scrub: Schema.optionalKey(Schema.Array(Schema.String))
})

type Typed = KeyValueStore.SchemaStore<typeof Stored>

/** Per store: its typed view and the keys being applied in this process right now. */
interface Slot {
  readonly typed: Typed
  readonly running: Map<string, Deferred.Deferred<void>>
}

const slots = new WeakMap<KeyValueStore.KeyValueStore, Slot>()
const slotOf = (store: KeyValueStore.KeyValueStore): Slot => {
  let slot = slots.get(store)
  if (slot === undefined) {
    slot = { typed: KeyValueStore.toSchemaStore(store, Stored), running: new Map() }
    slots.set(store, slot)
  }
  return slot
}

/** What a keyed call's result is redacted with: the tool's policy and the call's (decoded) arguments. */
export interface Redaction {
  readonly policy: Redact | undefined
  readonly input: unknown
}

/**
 * A stored result's blocks and value without `secrets`: a text block that is the value's JSON
 * stays the JSON of the scrubbed value (so `Render.finalize` still redacts it as a value).
 */
const withoutStoredSecrets = (
  stored: typeof Stored.Type,
  secrets: ReadonlyArray<string>
): Pick<typeof Stored.Type, "content" | "value"> => {
  if (secrets.length === 0) return stored
  const value = stored.value === undefined ? undefined : withoutSecretsValue(stored.value, secrets)
  const valueText = stored.value === undefined ? undefined : textOfValue(stored.value)
  const content = stored.content.map((block) => {
    if (block.type !== "text") return block
    const text = valueText !== undefined && block.text === valueText
      ? textOfValue(value)
      : withoutSecretsText(block.text, secrets)
    return text === block.text ? block : { type: "text" as const, text }
  })
  return { content, ...(value === undefined ? {} : { value }) }
}

/** The storage key of `key` for the tool `toolName`. */
/**
 * A call's idempotency key, computed once from its decoded input: the key, or (for a key
 * function that throws or returns no string) the defect that fails the call.
 */
export const keyOf = (
  tool: Tool.Any,
  toolName: string,
  input: unknown
): { readonly key?: string; readonly defect?: ToolError.ToolDefect } => {
  if (tool.idempotency === undefined) return {}
  try {
    const computed: unknown = tool.idempotency(input)
    if (typeof computed === "string") return { key: computed }
    throw new TypeError(`the idempotency key must be a string, got ${typeof computed}`)
  } catch (defect) {
    return { defect: new ToolError.ToolDefect({ toolName, cause: Cause.die(defect) }) }
  }
}

export const storageKey = (toolName: string, key: string): string => `${toolName}/${key}`

export const make = (config: Config) => {
  const failed = (operation: string) => (cause: unknown) =>
    new ToolError.StoreFailed({ store: config.store, operation, cause })

  /**
   * `run` at most once per key: a stored result is answered again (`replayed`);
   * otherwise `run`'s successful result is stored, then returned.
   */
  return <R>(
    toolName: string,
    key: string,
    call: ToolCall,
    now: () => number,
    run: Effect.Effect<ToolResult.ToolResult, ToolError.ToolError, R>,
    redaction?: Redaction
  ): Effect.Effect<ToolResult.ToolResult, ToolError.ToolError, R | StoreRegistry> =>
    Effect.flatMap(StoreRegistry.use((stores) => stores.store(config.store)), (store) => {
      const { running, typed } = slotOf(store)
      const id = storageKey(toolName, key)
      const replay = (found: typeof Stored.Type): ToolResult.ToolResult => {
        // the storing call's values under redacted keys go; this call's go in `Render.finalize`
        const stored = withoutStoredSecrets(found, found.scrub ?? [])
        return {
          toolCallId: call.id,
          name: toolName,
          content: stored.content,
          ...(stored.value === undefined ? {} : { value: stored.value }),
          artifacts: [],
          isError: false,
          elapsed: 0,
          ...(call.provider === undefined ? {} : { provider: call.provider }),
          idempotency: { key, replayed: true }
        }
      }
      const scrub = redaction === undefined ? [] : secretsOf(redaction.policy, redaction.input)
      const save = (result: ToolResult.ToolResult): Effect.Effect<ToolResult.ToolResult, ToolError.StoreFailed> =>
        result.isError ? Effect.succeed(result) : typed.set(id, {
          storedAt: now(),
          content: result.content,
          ...(result.value === undefined ? {} : { value: result.value }),
          ...(scrub.length === 0 ? {} : { scrub })
        }).pipe(
          Effect.mapError(failed("write")),
          Effect.as<ToolResult.ToolResult>({ ...result, idempotency: { key, replayed: false } })
        )
      // Looking up and running can be interrupted; once the call succeeded, its result is stored uninterruptibly.
      const apply = (restore: <A, E, R2>(effect: Effect.Effect<A, E, R2>) => Effect.Effect<A, E, R2>) =>
        Effect.flatMap(
          restore(typed.get(id)).pipe(
            Effect.mapError((error) => failed(Schema.isSchemaError(error) ? "decode" : "read")(error))
          ),
          (found): Effect.Effect<ToolResult.ToolResult, ToolError.ToolError, R> =>
            Option.isSome(found) && (config.ttl === undefined || now() - found.value.storedAt < config.ttl)
              ? Effect.succeed(replay(found.value))
              : Effect.flatMap(restore(run), save)
        )
      // Claim the key (or wait for its holder, then look again); a claim is always released.
      const claim: Effect.Effect<ToolResult.ToolResult, ToolError.ToolError, R> = Effect.uninterruptibleMask((restore) =>
        Effect.suspend(() => {
          const holder = running.get(id)
          if (holder !== undefined) return Effect.andThen(restore(Deferred.await(holder)), claim)
          const mine = Deferred.makeUnsafe<void>()
          running.set(id, mine)
          return apply(restore).pipe(
            Effect.ensuring(Effect.sync(() => {
              running.delete(id)
              Deferred.doneUnsafe(mine, Exit.void)
            }))
          )
        })
      )
      return claim
    })
}
