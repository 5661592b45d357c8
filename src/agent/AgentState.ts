/**
 * Agent state: a typed value an agent run carries from turn to turn, which its tools read and change
 * only through updates its reducer applies (LangGraph's `InjectedState` + `Command(update=...)`).
 *
 * A definition ({@link make}) gives the state's Schema, the update's Schema, the initial value and a
 * pure reducer; `Agent.run({ ..., state: definition })` declares it. A tool lists the
 * {@link AgentState} service in its `services` (never in its input schema) and calls
 * `definition.get` (the state as it was when the turn's calls started) and `definition.update(value)`
 * (records an update for this call; nothing changes yet). After the turn's batch, the loop applies
 * the updates of the calls that succeeded, in call order (not in the order they finished), each one
 * reported as an `agent.state` event; a failed call's updates are dropped. An update whose encoding or
 * decoding fails, or whose new state does not match the state's Schema, is refused: the call's result
 * becomes a repairable error for the model and none of that call's updates apply. The next turn's
 * `selectTools`, system prompt (`system` as a function of the state), middleware and tools see the
 * new state; `AgentResult.state` is the last one.
 */
import { Context, Effect, Option, Result, Schema } from "effect"
import { ToolCallContext } from "../runtime/ToolCallContext.ts"

/** A schema that encodes to JSON and decodes without services. */
export type StateSchema<A> = Schema.Codec<A, any, never, never>

/** What an update recorded for a call holds: the update as JSON, or why it could not be encoded. */
export interface Recorded {
  readonly json?: Schema.Json
  readonly refused?: string
}

/** A state declaration: `S` the state, `U` an update. Made by {@link make}. */
export interface Definition<S, U> {
  readonly schema: StateSchema<S>
  readonly updateSchema: StateSchema<U>
  readonly initial: S
  /** A pure function: the state after `update`. */
  readonly reduce: (state: S, update: U) => S
  /** The current state (as when this turn's calls started). A tool using it lists `AgentState` in `services`. */
  readonly get: Effect.Effect<S, never, AgentState>
  /** Records `update` for the current call: applied after the turn's batch, in call order, if the call succeeds. */
  readonly update: (update: U) => Effect.Effect<void, never, AgentState>
}

/** Options of {@link make}. */
export interface MakeOptions<S, U> {
  /** The state's Schema: the new state is checked against it after each update. */
  readonly schema: StateSchema<S>
  /** An update's Schema: each update is encoded (journaled, reported) and decoded with it. */
  readonly update: StateSchema<U>
  readonly initial: S
  readonly reduce: (state: S, update: U) => S
}

/** A run's state as tools see it: read the current value, record an update. */
export interface Service {
  readonly definition: Definition<any, any> | undefined
  readonly current: Effect.Effect<unknown>
  readonly record: (definition: Definition<any, any>, update: unknown) => Effect.Effect<void>
  /** The updates recorded for a call (encoded): a durable run journals them with the call. */
  readonly recorded: (toolCallId: string) => ReadonlyArray<Recorded> | undefined
  /** Puts back the updates journaled with a call (a durable run's replayed call). */
  readonly restore: (toolCallId: string, updates: ReadonlyArray<Recorded>) => void
}

/** The run's state (provided by the agent loop to its tools and middleware). */
export class AgentState extends Context.Service<AgentState, Service>()("tinyagents/AgentState") {}

const use = (definition: Definition<any, any>) =>
  Effect.flatMap(AgentState, (service: Service) =>
    service.definition === definition
      ? Effect.succeed(service)
      : Effect.die(
        new Error(
          service.definition === undefined
            ? "this agent run declares no state: pass it as Agent.run's state option"
            : "this tool reads a state that is not the one its agent run declares"
        )
      ))

/** Declares a state: its Schema, its updates' Schema, its initial value and its reducer. */
export const make = <S, U>(options: MakeOptions<S, U>): Definition<S, U> => {
  const definition: Definition<S, U> = {
    schema: options.schema,
    updateSchema: options.update,
    initial: options.initial,
    reduce: options.reduce,
    get: Effect.suspend(() => Effect.flatMap(use(definition), (service) => service.current as Effect.Effect<S>)),
    update: (update) => Effect.suspend(() => Effect.flatMap(use(definition), (service) => service.record(definition, update)))
  }
  return definition
}

// ---------------------------------------------------------------------------
// the loop's side (internal to the package)
// ---------------------------------------------------------------------------

/** An update refused by the reducer: why (the model reads it). */
export interface Refused {
  readonly _tag: "Refused"
  readonly message: string
}

/** One applied update: its JSON, the new state and its JSON. */
export interface Applied {
  readonly update: Schema.Json
  readonly state: unknown
  readonly stateJson: Schema.Json
}

/**
 * The run's state cell: the service given to tools, the updates recorded per call (a retry's
 * attempt replaces the earlier attempt's), and {@link Cell.apply} for the loop.
 * @internal
 */
export interface Cell {
  readonly service: Service
  readonly get: () => unknown
  /** Drops the recorded updates of a call. */
  readonly forget: (toolCallId: string) => void
  /**
   * Applies a call's recorded updates, all or none: the applied ones, or why one was refused.
   * The call's record is forgotten either way.
   */
  readonly apply: (toolCallId: string) => Result.Result<ReadonlyArray<Applied>, Refused>
}

const message = (error: unknown): string => error instanceof Error ? error.message : String(error)

/** A cell for `definition`, or one that refuses every use (a run without state). @internal */
export const cell = (definition: Definition<any, any> | undefined): Cell => {
  let state: unknown = definition?.initial
  // `call` is the call's live context: its `attempt` is the attempt running now, so at `apply` (after
  // the call ended) a record whose `attempt` differs belongs to a failed attempt and is dropped.
  const pending = new Map<string, { attempt: number; call?: { readonly attempt: number }; updates: Array<Recorded> }>()
  const updateCodec = definition === undefined ? undefined : Schema.toCodecJson(definition.updateSchema)
  const stateCodec = definition === undefined ? undefined : Schema.toCodecJson(definition.schema)
  const service: Service = {
    definition,
    current: Effect.sync(() => state),
    record: (_, update) =>
      Effect.map(Effect.serviceOption(ToolCallContext), (call) => {
        if (Option.isNone(call)) throw new Error("AgentState.update is for tool handlers (no current call)")
        const { toolCallId, attempt } = call.value
        let entry = pending.get(toolCallId)
        if (entry === undefined || entry.attempt !== attempt) {
          entry = { attempt, call: call.value, updates: [] }
          pending.set(toolCallId, entry)
        }
        const encoded = Schema.encodeUnknownResult(updateCodec!)(update)
        entry.updates.push(
          Result.isSuccess(encoded)
            ? { json: encoded.success as Schema.Json }
            : { refused: `the update does not match its schema: ${encoded.failure.message}` }
        )
      }),
    recorded: (id) => pending.get(id)?.updates,
    restore: (id, updates) => void pending.set(id, { attempt: 0, updates: [...updates] })
  }
  return {
    service,
    get: () => state,
    forget: (id) => void pending.delete(id),
    apply: (id) => {
      const entry = pending.get(id)
      pending.delete(id)
      if (entry === undefined || definition === undefined) return Result.succeed([])
      // Recorded by an attempt that failed and was retried, the attempt that ended the call recording nothing.
      if (entry.call !== undefined && entry.call.attempt !== entry.attempt) return Result.succeed([])
      let next = state
      const applied: Array<Applied> = []
      for (const recorded of entry.updates) {
        if (recorded.refused !== undefined) return Result.fail({ _tag: "Refused", message: recorded.refused })
        const update = Schema.decodeUnknownResult(updateCodec!)(recorded.json)
        if (Result.isFailure(update)) {
          return Result.fail({ _tag: "Refused", message: `the update does not match its schema: ${update.failure.message}` })
        }
        let reduced: unknown
        try {
          reduced = definition.reduce(next, update.success)
        } catch (error) {
          return Result.fail({ _tag: "Refused", message: `the reducer refused the update: ${message(error)}` })
        }
        const stateJson = Schema.encodeUnknownResult(stateCodec!)(reduced)
        const checked = Result.isSuccess(stateJson) ? Schema.decodeUnknownResult(stateCodec!)(stateJson.success) : stateJson
        if (Result.isFailure(stateJson) || Result.isFailure(checked)) {
          const failure = Result.isFailure(checked) ? checked.failure : undefined
          return Result.fail({
            _tag: "Refused",
            message: `the new state does not match the state's schema: ${failure?.message ?? "invalid"}`
          })
        }
        next = checked.success
        applied.push({ update: recorded.json as Schema.Json, state: next, stateJson: stateJson.success as Schema.Json })
      }
      state = next
      return Result.succeed(applied)
    }
  }
}
