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
 *
 * The state tools, middleware and reducers read is a copy made by the state's Schema (encoded and
 * decoded), deeply frozen (its plain objects and arrays), as is the update a reducer gets: a tool
 * cannot change the state in place, nor a reducer the state it was given (it returns a new one).
 * A refusal's text, which the model reads, names paths and what was expected there, never a value
 * of the state or the update (the events carry those), except what a reducer says by throwing
 * {@link UpdateRefused}.
 */
import { Context, Data, Effect, Option, Result, Schema } from "effect"
import { formatPath } from "../contract/ToolError.ts"
import * as ToolInput from "../contract/ToolInput.ts"
import { ToolCallContext } from "../runtime/ToolCallContext.ts"

/** A schema that encodes to JSON and decodes without services. */
export type StateSchema<A> = Schema.Codec<A, unknown, never, never>

/**
 * Thrown by a reducer to refuse an update: the model reads `message` (word it as a repair, without
 * hidden values). Any other exception thrown by a reducer refuses the update too, but the model reads
 * only its name (`TypeError`), never its message.
 */
export class UpdateRefused extends Data.TaggedError("UpdateRefused")<{ readonly message: string }> {}

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

/**
 * An update refused: why, in words the model may read (paths and expectations, no values), the
 * refused update's JSON when it encoded, and what a reducer's exception said (for the application).
 */
export interface Refused {
  readonly _tag: "Refused"
  readonly message: string
  readonly update?: Schema.Json
  readonly thrown?: string
}

/** One applied update: its JSON, the new state and its JSON. */
export interface Applied {
  readonly update: Schema.Json
  readonly state: unknown
  readonly stateJson: Schema.Json
}

/**
 * The run's state cell: the service given to tools, the updates recorded per call (a retry's
 * attempt replaces the earlier attempt's), and {@link Cell.settle} for the loop.
 * @internal
 */
export interface Cell {
  readonly service: Service
  /** The current state (frozen). */
  readonly get: () => unknown
  /** The current state as JSON (`undefined` without a state). */
  readonly json: () => Schema.Json | undefined
  /**
   * Settles a batch, in call order: a call that failed updates nothing, one that succeeded applies its
   * recorded updates, all or none (the applied ones, or why one was refused). Updates are recorded by call id, so calls of one batch that share an
   * id (a provider's mistake) cannot be told apart: their updates are refused, all of them. Every
   * record of the batch is forgotten.
   */
  readonly settle: (
    calls: ReadonlyArray<{ readonly toolCallId: string; readonly isError: boolean }>
  ) => ReadonlyArray<Result.Result<ReadonlyArray<Applied>, Refused>>
}

/** A schema error as the model may read it: each issue's path and what was expected there, never the value. */
const issuesText = (error: Schema.SchemaError): string =>
  ToolInput.issuesOf(error).map((issue) => `at ${formatPath(issue.path)}: ${issue.message}`).join("; ")

/** What the model reads of a reducer's exception: an `UpdateRefused`'s message, else the exception's name. */
const reducerText = (error: unknown): string =>
  error instanceof UpdateRefused
    ? error.message
    : `it threw ${error instanceof Error ? error.name : typeof error} (the reducer's own words stay with the application)`

/**
 * Freezes `value`'s plain objects and arrays, all the way down (iteratively: any depth), and says
 * whether that is all it holds. Values of other classes (a `Date`, a `Map`, a `Set`) are frozen as
 * objects, not walked: freezing does not stop `Set.add`, so such a value is `false`.
 */
const freeze = (value: unknown): boolean => {
  let plain = true
  const pending: Array<unknown> = [value]
  while (pending.length > 0) {
    const next = pending.pop()
    if (typeof next !== "object" || next === null) continue
    const proto = Object.getPrototypeOf(next)
    const walked = Array.isArray(next) || proto === Object.prototype || proto === null
    plain &&= walked
    if (Object.isFrozen(next)) continue
    Object.freeze(next)
    if (walked) for (const key of Object.keys(next)) pending.push((next as Record<string, unknown>)[key])
  }
  return plain
}

const deepFreeze = <A>(value: A): A => (freeze(value), value)

const decodeOptions = { errors: "all" } as const

/** A cell for `definition`, or one that refuses every use (a run without state). @internal */
export const cell = (definition: Definition<any, any> | undefined): Cell => {
  const updateCodec = definition === undefined ? undefined : Schema.toCodecJson(definition.updateSchema)
  const stateCodec = definition === undefined ? undefined : Schema.toCodecJson(definition.schema)
  /**
   * `value` through the state's Schema: its JSON and a fresh, frozen copy, and whether that copy holds
   * plain objects and arrays only; or why it does not match.
   */
  const check = (
    value: unknown
  ): Result.Result<{ readonly json: Schema.Json; readonly state: unknown; readonly plain: boolean }, string> => {
    const json = Schema.encodeUnknownResult(stateCodec!, decodeOptions)(value)
    const copy = Result.isSuccess(json) ? Schema.decodeUnknownResult(stateCodec!, decodeOptions)(json.success) : json
    if (Result.isFailure(copy)) return Result.fail(issuesText(copy.failure))
    const plain = freeze(copy.success)
    return Result.succeed({ json: (json as Result.Success<unknown, never>).success as Schema.Json, state: copy.success, plain })
  }
  /**
   * The state as handed to a tool or a reducer: the cell's own (frozen) value when it is plain data;
   * else (a `Set`, a `Map`, a `Date`, which freezing does not protect) a fresh decode of its JSON, so
   * changing it in place changes nothing but that copy.
   */
  const handed = (value: unknown, json: Schema.Json | undefined, plain: boolean): unknown =>
    plain ? value : deepFreeze(Schema.decodeUnknownSync(stateCodec!)(json))
  let state: unknown = undefined
  let stateJson: Schema.Json | undefined = undefined
  let statePlain = true
  if (definition !== undefined) {
    const initial = check(definition.initial)
    if (Result.isFailure(initial)) throw new Error(`the initial state does not match the state's schema: ${initial.failure}`)
    state = initial.success.state
    stateJson = initial.success.json
    statePlain = initial.success.plain
  }
  // `call` is the call's live context: its `attempt` is the attempt running now, so at `apply` (after
  // the call ended) a record whose `attempt` differs belongs to a failed attempt and is dropped.
  const pending = new Map<string, { attempt: number; call?: { readonly attempt: number }; updates: Array<Recorded> }>()
  const service: Service = {
    definition,
    current: Effect.sync(() => handed(state, stateJson, statePlain)),
    record: (_, update) =>
      Effect.map(Effect.serviceOption(ToolCallContext), (call) => {
        if (Option.isNone(call)) throw new Error("AgentState.update is for tool handlers (no current call)")
        const { toolCallId, attempt } = call.value
        let entry = pending.get(toolCallId)
        if (entry === undefined || entry.attempt !== attempt) {
          entry = { attempt, call: call.value, updates: [] }
          pending.set(toolCallId, entry)
        }
        const encoded = Schema.encodeUnknownResult(updateCodec!, decodeOptions)(update)
        entry.updates.push(
          Result.isSuccess(encoded)
            ? { json: encoded.success as Schema.Json }
            : { refused: `the update does not match its schema: ${issuesText(encoded.failure)}` }
        )
      }),
    recorded: (id) => pending.get(id)?.updates,
    restore: (id, updates) => void pending.set(id, { attempt: 0, updates: [...updates] })
  }
  /** Applies a call's recorded updates, all or none, and forgets its record. */
  const apply = (id: string): Result.Result<ReadonlyArray<Applied>, Refused> => {
    const entry = pending.get(id)
    pending.delete(id)
    if (entry === undefined || definition === undefined) return Result.succeed([])
    // Recorded by an attempt that failed and was retried, the attempt that ended the call recording nothing.
    if (entry.call !== undefined && entry.call.attempt !== entry.attempt) return Result.succeed([])
    let next = state
    let nextJson = stateJson
    let nextPlain = statePlain
    const applied: Array<Applied> = []
    for (const recorded of entry.updates) {
      const refuse = (message: string, thrown?: string): Result.Result<never, Refused> =>
        Result.fail({
          _tag: "Refused",
          message,
          ...(recorded.json === undefined ? {} : { update: recorded.json }),
          ...(thrown === undefined ? {} : { thrown })
        })
      if (recorded.refused !== undefined) return refuse(recorded.refused)
      const update = Schema.decodeUnknownResult(updateCodec!, decodeOptions)(recorded.json)
      if (Result.isFailure(update)) return refuse(`the update does not match its schema: ${issuesText(update.failure)}`)
      let reduced: unknown
      try {
        reduced = definition.reduce(handed(next, nextJson, nextPlain), deepFreeze(update.success))
      } catch (error) {
        return refuse(
          `the reducer refused the update: ${reducerText(error)}`,
          error instanceof UpdateRefused ? undefined : error instanceof Error ? `${error.name}: ${error.message}` : String(error)
        )
      }
      const checked = check(reduced)
      if (Result.isFailure(checked)) return refuse(`the new state does not match the state's schema: ${checked.failure}`)
      next = checked.success.state
      nextJson = checked.success.json
      nextPlain = checked.success.plain
      applied.push({ update: recorded.json as Schema.Json, state: next, stateJson: nextJson })
    }
    state = next
    stateJson = nextJson
    statePlain = nextPlain
    return Result.succeed(applied)
  }
  const settle: Cell["settle"] = (calls) => {
    const seen = new Set<string>()
    const shared = new Set<string>()
    for (const { toolCallId } of calls) (seen.has(toolCallId) ? shared : seen).add(toolCallId)
    // the shared ids' records: refused when there are any (whose they are is not known)
    const sharedRecorded = new Set<string>()
    for (const id of shared) {
      if ((pending.get(id)?.updates.length ?? 0) > 0) sharedRecorded.add(id)
      pending.delete(id)
    }
    return calls.map(({ isError, toolCallId }): Result.Result<ReadonlyArray<Applied>, Refused> => {
      if (isError) return (pending.delete(toolCallId), Result.succeed([]))
      if (!shared.has(toolCallId)) return apply(toolCallId)
      return sharedRecorded.has(toolCallId)
        ? Result.fail({
          _tag: "Refused",
          message: `the call id ${
            JSON.stringify(toolCallId)
          } is used by several calls of this turn, so their updates cannot be told apart; none applied`
        })
        : Result.succeed([])
    })
  }
  return {
    service,
    get: () => state,
    json: () => stateJson,
    settle
  }
}
