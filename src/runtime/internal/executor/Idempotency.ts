/**
 * At most one successful application per idempotency key. A keyed call first
 * looks in the `StoreRegistry` store for the key (canonical tool name + key):
 * a stored result is answered again (with this call's id) and the handler does
 * not run. Otherwise the call runs, and a successful result (its content blocks
 * and encoded value) is stored before it is returned; failures are not stored,
 * so a failed attempt can run again. The store and its claims use the key
 * itself; what leaves the call (events, the result's `idempotency.key`,
 * receipts) shows it redacted ({@link shownKey}).
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
 * second wait for the first and then read its stored result.
 *
 * Across processes the key is claimed (`StoreRegistry.claims`): a call that
 * finds no stored result takes the key's claim (an expiring lease, 30 s by default, owner
 * unique to this attempt) before it runs, looks for a stored result once more
 * (its winner may have just finished), runs, stores its result and releases
 * the claim; the lease is renewed every third of its length while the handler
 * runs. A call that finds the key claimed by another owner polls, with
 * backoff on the `Clock` (5 ms doubling to at most 200 ms, never more than
 * the lease), for the winner's stored result and replays it; when the
 * winner's claim ends without a result (it failed, or its process died and
 * the lease expired), the waiting call takes the claim and runs. A failure
 * releases the claim, so a later call can try again; a release that fails is
 * ignored (the lease expires). So with a backend whose claims are shared (SQL,
 * Redis: every process on the same database), a key is applied at most once
 * across every process, unless a holder stalls past its lease without
 * renewing (its process frozen, the backend unreachable for a whole lease),
 * in which case another process may run it too. The memory and file-system
 * registries hold claims in this process's memory: there a key is applied at
 * most once per process only, and two processes sharing a file-system
 * directory may both run a key they both see unstored.
 *
 * In a durable run (`tinyagents/durable`) the call runs inside a workflow activity, which the
 * engine re-runs after a crash. There the call comes with a `DurableClaim` (the batch option
 * `durable`): the claim's owner is the activity's stable key (the same in every re-run, so a re-run
 * never waits out its own dead lease), and a re-run (`resumed`) that finds no stored result does not
 * run the handler again: the first run may have applied the key before it died, so it fails with
 * `ToolError.OutcomeUnknown`.
 *
 * On the memory store (`StoreRegistry.layerMemory`: its stores and claims have synchronous views,
 * `src/internal/storeNow.ts`) a call takes the same steps by plain function calls while each
 * completes at once (`Now`): the lookup, the claim, the handler and the write, answering a
 * completed `Exit` when the handler did. There the claim of a call that runs synchronously is a
 * hold (`ClaimsNow.hold`): nothing but that call's own code runs between taking and releasing it,
 * so it is no entry of the claims' map, only a key that acquisitions meanwhile find taken. On SQLite (`keyedJoined`) the lookup is a plain
 * read (a replay completes at once); a fresh key's second look (result and claim), handler and write
 * run by plain calls inside the write transaction the calls of that moment share, and the call is
 * answered once it is committed (the write lock held throughout stands for the claim, which is
 * written only for a handler that suspends). A key held in this process or claimed by another
 * owner, a store that cannot answer now, or a handler that suspends, carries on as effects from
 * there (the handler suspended: the key is held in this process and its claim renewed until it
 * ends, as above). A durable claim always takes the effects. On every store the stored text is `JSON.stringify` of what is stored when the schema
 * would encode it unchanged (JSON as it is, the common case), and the schema's otherwise; it is read
 * back by `JSON.parse` when the schema would decode it unchanged, and by the schema otherwise. On
 * the memory store, a result whose one block is the JSON text of its (plain) value, the default
 * rendering, is kept as that text alone (`KeptResult`): the same stored text is made when a read
 * other than a keyed call's asks for it, and a replay parses the value's text only.
 */
import { randomUUID } from "node:crypto"
import { Cause, Context, Deferred, Effect, Exit, Fiber, Option, Schema } from "effect"
import { KeyValueStore } from "effect/persistence"
import type { DurableClaim } from "../../Executor.ts"
import { type Claims, StoreRegistry, type StoreRegistryShape } from "../../StoreRegistry.ts"
import { type ClaimsNow, claimsNow, Kept, later, type StoreClaims, type StoreNow, storeNow } from "../../../internal/storeNow.ts"
import * as Now from "./Now.ts"
import type * as Tool from "../../../contract/Tool.ts"
import type { ToolCall } from "../../../contract/ToolCall.ts"
import * as ToolError from "../../../contract/ToolError.ts"
import * as ToolResult from "../../../contract/ToolResult.ts"
import type { Redact } from "../../../contract/Safety.ts"
import { scrubberOf, secretsOf, withoutSecretsText, withoutSecretsValue } from "../../../internal/redact/policy.ts"
import { scrubResult } from "../../../internal/redact/result.ts"
import { withTtl } from "../../../internal/expiry.ts"

export interface Config {
  /** The `StoreRegistry` store. */
  readonly store: string
  /** How long a stored result answers repeats, in milliseconds; `undefined`: for ever. */
  readonly ttl: number | undefined
  /**
   * How long a key's claim holds without renewal, in milliseconds (default {@link defaultLease}): how
   * long other processes wait before taking over the key of a holder that died.
   */
  readonly lease?: number | undefined
}

/** The default lease of a key's claim: 30 seconds (renewed every 10 while the handler runs). */
export const defaultLease = 30_000

/** The first wait of a call that finds its key claimed elsewhere; it doubles up to {@link maxPoll}. */
const firstPoll = 5
/** The longest wait between two looks at a key claimed elsewhere. */
const maxPoll = 200

/**
 * A claim owner unique to one attempt, across processes: a random id per process (a UUID, made
 * once) and a counter (a UUID per call costs more than the rest of the claim on the memory store).
 */
const processOwner = randomUUID()
let owners = 0
const nextOwner = (): string => `${processOwner}/${++owners}`

/** What is stored per key: enough to answer the call again. */
const Stored = Schema.Struct({
  storedAt: Schema.Number,
  content: Schema.Array(ToolResult.ContentBlock),
  value: Schema.optionalKey(Schema.Unknown),
  /** The values the storing call's arguments held under the tool's redacted keys: a replay is scrubbed of them. */
  scrub: Schema.optionalKey(Schema.Array(Schema.String))
})

/** Per store: the keys being applied in this process right now. */
interface Slot {
  readonly running: Map<string, Deferred.Deferred<void>>
}

const slots = new WeakMap<KeyValueStore.KeyValueStore, Slot>()
const slotOf = (store: KeyValueStore.KeyValueStore): Slot => {
  let slot = slots.get(store)
  if (slot === undefined) {
    slot = { running: new Map() }
    slots.set(store, slot)
  }
  return slot
}

/** What a keyed call's result is redacted with: the tool's policy and the call's (decoded) arguments. */
export interface Redaction {
  readonly policy: Redact | undefined
  readonly input: unknown
  /** The key as the call's events show it ({@link shownKey}, computed once per call). */
  readonly shownKey: string
}

/**
 * A stored result's blocks and value without `secrets`: a text block that is the value's JSON
 * stays the JSON of the scrubbed value (so `Render.finalize` still redacts it as a value).
 */
const withoutStoredSecrets = (stored: typeof Stored.Type, secrets: ReadonlyArray<string>): typeof Stored.Type =>
  secrets.length === 0 ? stored : scrubResult(stored, {
    text: (text) => withoutSecretsText(text, secrets),
    value: (value) => withoutSecretsValue(value, secrets)
  })

/** The answer of {@link keyOf} for a tool without a key (one object for every call). */
const unkeyed: { readonly key?: string; readonly defect?: ToolError.ToolDefect } = Object.freeze({})

/**
 * A call's idempotency key, computed once from its decoded input: the key, or (for a key
 * function that throws or returns no string) the defect that fails the call.
 */
export const keyOf = (
  tool: Tool.Any,
  toolName: string,
  input: unknown
): { readonly key?: string; readonly defect?: ToolError.ToolDefect } => {
  if (tool.idempotency === undefined) return unkeyed
  try {
    const computed: unknown = tool.idempotency(input)
    if (typeof computed === "string") return { key: computed }
    throw new TypeError(`the idempotency key must be a string, got ${typeof computed}`)
  } catch (defect) {
    return { defect: new ToolError.ToolDefect({ toolName, cause: Cause.die(defect) }) }
  }
}

/**
 * `key` as it leaves the call (events, the result's `idempotency.key`, audit receipts): through the
 * call's scrubber, like its arguments (the tool's patterns, and the values the arguments hold under
 * redacted keys). The store's claim and lookup, and the handler's `ToolCallContext`, use `key` itself.
 */
export const shownKey = (key: string, policy: Redact | undefined, input: unknown): string => {
  const scrubber = scrubberOf(policy, input)
  return scrubber === undefined ? key : scrubber.text(key)
}

/** The storage key of `key` for the tool `toolName` (also its claim's key). */
export const storageKey = (toolName: string, key: string): string => `${toolName}/${key}`

export const make = (config: Config) => {
  const failed = (operation: string) => (cause: unknown) =>
    new ToolError.StoreFailed({ store: config.store, operation, cause })
  const lease = Math.max(1, Math.ceil(config.lease ?? defaultLease))
  const renewEvery = Math.max(1, Math.floor(lease / 3))
  const pollCap = Math.min(maxPoll, lease)
  // per store, the view whose writes expire after `ttl` (made once, not per call)
  const expiring = new WeakMap<KeyValueStore.KeyValueStore, KeyValueStore.KeyValueStore>()
  const writerOf = (store: KeyValueStore.KeyValueStore): KeyValueStore.KeyValueStore => {
    if (config.ttl === undefined) return store
    let view = expiring.get(store)
    if (view === undefined) {
      view = withTtl(store, config.ttl)
      expiring.set(store, view)
    }
    return view
  }

  /** A result's write failed after its handler applied it: fatal whatever the cause, never "retry later". */
  const writeFailed = (cause: unknown) =>
    new ToolError.StoreFailed({ store: config.store, operation: "write", cause, retryable: false })

  /**
   * Stores a successful `result` under `id` and answers it with its key (an error result is answered
   * as it is). The handler succeeded: its effect is applied but not recorded if this fails, so asking
   * again could apply it twice: fatal whatever the cause, never "retry later".
   */
  const save = (
    written: KeyValueStore.KeyValueStore,
    id: string,
    shown: string,
    result: ToolResult.ToolResult,
    storedAt: number,
    scrub: ReadonlyArray<string>
  ): Effect.Effect<ToolResult.ToolResult, ToolError.StoreFailed> =>
    result.isError ? Effect.succeed(result) : setStored(written, id, storedOf(result, storedAt, scrub)).pipe(
      Effect.mapError(writeFailed),
      Effect.as<ToolResult.ToolResult>({ ...result, idempotency: { key: shown, replayed: false } })
    )

  const resolvedOf = (registry: StoreRegistryShape): Resolved | undefined => resolved.get(registry)?.get(config.store)
  const resolve = (registry: StoreRegistryShape): Effect.Effect<Resolved, ToolError.StoreFailed> => {
    const known = resolvedOf(registry)
    return known !== undefined ? Effect.succeed(known) : Effect.map(
      Effect.zip(registry.store(config.store), registry.claims(config.store)),
      ([store, claims]) => {
        const made = { store, claims, slot: slotOf(store), storeNow: storeNow(store), claimsNow: claimsNow(claims) }
        let names = resolved.get(registry)
        if (names === undefined) resolved.set(registry, names = new Map())
        names.set(config.store, made)
        return made
      }
    )
  }

  /**
   * `run` at most once per key: a stored result is answered again (`replayed`);
   * otherwise `run`'s successful result is stored, then returned. `durable`: a durable run's
   * claim (owner and re-run), see the module comment.
   */
  return <R>(
    toolName: string,
    key: string,
    call: ToolCall,
    now: () => number,
    run: Effect.Effect<ToolResult.ToolResult, ToolError.ToolError, R>,
    redaction?: Redaction,
    durable?: DurableClaim,
    attempt?: { stopAttempt: Effect.Effect<void> }
  ): Effect.Effect<ToolResult.ToolResult, ToolError.ToolError, R | StoreRegistry> => {
    // A call of a store with views (`storeNow`: memory, SQLite) takes the same steps by plain calls
    // where the store can: on memory a call whose handler completes at once completes at once; on
    // SQLite a replay does, and an application looks, runs and writes in the write transaction the
    // calls of that moment share. The rest runs as effects from the first step that cannot (the key
    // held in this process or claimed, the handler suspending). A durable claim always takes the effects.
    const runStart = durable === undefined ? Now.take(run) : undefined
    if (runStart === undefined) return keyedEffects(toolName, key, call, now, run, redaction, durable)
    return Now.deferred((fiber) => {
      const found = resolvedOf(Context.getUnsafe(fiber.context as Context.Context<StoreRegistry>, StoreRegistry))
      const view = found?.storeNow
      if (found === undefined || view === undefined || (view.claims === undefined && (view.set === undefined || found.claimsNow === undefined))) {
        return keyedEffects(toolName, key, call, now, run, redaction, undefined)
      }
      return keyedNow(found, view, toolName, key, call, now, run, runStart, fiber, redaction, attempt)
    })
  }

  /** The whole keyed call as effects, from resolving its store on. */
  function keyedEffects<R>(
    toolName: string,
    key: string,
    call: ToolCall,
    now: () => number,
    run: Effect.Effect<ToolResult.ToolResult, ToolError.ToolError, R>,
    redaction: Redaction | undefined,
    durable: DurableClaim | undefined
  ): Effect.Effect<ToolResult.ToolResult, ToolError.ToolError, R | StoreRegistry> {
    return Effect.flatMap(StoreRegistry.use(resolve), (found) => keyedCall(found, toolName, key, call, now, run, redaction, durable))
  }

  function keyedNow<R>(
    found: Resolved,
    view: StoreNow,
    toolName: string,
    key: string,
    call: ToolCall,
    now: () => number,
    run: Effect.Effect<ToolResult.ToolResult, ToolError.ToolError, R>,
    runStart: Now.Start<ToolResult.ToolResult, ToolError.ToolError, R>,
    fiber: Fiber.Fiber<unknown, unknown>,
    redaction: Redaction | undefined,
    attempt: { stopAttempt: Effect.Effect<void> } | undefined
  ): Effect.Effect<ToolResult.ToolResult, ToolError.ToolError, R> {
    const { running } = found.slot
    const id = storageKey(toolName, key)
    const shown = redaction?.shownKey ?? key
    // held in this process: wait for it (the effects); so too when the store cannot answer now
    if (running.size !== 0 && running.has(id)) return keyedCall(found, toolName, key, call, now, run, redaction, undefined)
    const at = now()
    const text = view.get(id, at, fiber)
    if (text === later && view.claims === undefined) return keyedCall(found, toolName, key, call, now, run, redaction, undefined)
    if (text !== undefined && text !== later) {
      const decoded = text instanceof KeptResult ? Exit.succeed(text.stored()) : readStored(typeof text === "string" ? text : text.text())
      if (Exit.isFailure(decoded)) return Exit.fail(failed("decode")(Cause.squash(decoded.cause)))
      if (config.ttl === undefined || now() - decoded.value.storedAt < config.ttl) {
        return Exit.succeed(replayOf(decoded.value, call, toolName, shown))
      }
    }
    const joined = view.claims
    if (joined !== undefined) {
      return keyedJoined(found, joined, id, shown, toolName, key, call, now, run, runStart, fiber, redaction, attempt)
    }
    const claimsView = found.claimsNow!
    // claimed by another owner: wait for its result (the effects). Else the key is held while the
    // call runs synchronously (as a claim taken now and released at its end would hold it, with no
    // claim written), and claimed once its handler suspends.
    // (made before the hold: a hold has no lease, so nothing that can throw may come between it and its `drop`)
    const scrub = scrubOf(redaction)
    if (!claimsView.hold(id, at)) return keyedCall(found, toolName, key, call, now, run, redaction, undefined)
    // (nothing ran between the lookup and the hold: no second lookup is needed)
    let output: Effect.Effect<ToolResult.ToolResult, ToolError.ToolError, R>
    try {
      output = runStart(fiber)
      const exit = Now.exitOf(output)
      if (exit !== undefined) {
        if (Exit.isFailure(exit) || exit.value.isError) return exit
        const result = exit.value
        const storedAt = now()
        const kept = keptOf(result, storedAt, scrub)
        if (kept !== undefined) view.set!(id, kept)
        else {
          const encoded = storedText(storedOf(result, storedAt, scrub))
          // applied but not recorded: fatal, never "retry later" (as `save`)
          if (Exit.isFailure(encoded)) return Exit.fail(writeFailed(Cause.squash(encoded.cause)))
          view.set!(id, encoded.value)
        }
        return Exit.succeed(appliedOf(result, shown))
      }
    } finally {
      claimsView.drop()
    }
    // the handler suspended: the key is claimed (free: only the handler's own code ran while it was held)
    const owner = nextOwner()
    claimsView.acquire(id, owner, lease, now())
    return whileRunning(found, id, owner, shown, now, output, scrub, attempt, Effect.void, Effect.sync(() => claimsView.release(id, owner)))
  }

  /**
   * A claimed call whose handler suspended (`output`: the rest of it), once `claim` (what takes the
   * claim, when not yet taken) has run: the key is held in this process and the claim renewed until
   * it ends; then its result is stored (`save`). Its end, or an interruption that lands before the
   * rest starts (`attempt.stopAttempt`, run by the call), releases both (`release`), once.
   */
  function whileRunning<R>(
    found: Resolved,
    id: string,
    owner: string,
    shown: string,
    now: () => number,
    output: Effect.Effect<ToolResult.ToolResult, ToolError.ToolError, R>,
    scrub: ReadonlyArray<string>,
    attempt: { stopAttempt: Effect.Effect<void> } | undefined,
    claim: Effect.Effect<void>,
    release: Effect.Effect<void>
  ): Effect.Effect<ToolResult.ToolResult, ToolError.ToolError, R> {
    const { running } = found.slot
    const mine = Deferred.makeUnsafe<void>()
    running.set(id, mine)
    let ended = false
    const end = Effect.suspend(() => {
      if (ended) return Effect.void
      ended = true
      return Effect.andThen(
        release,
        Effect.sync(() => {
          if (running.get(id) === mine) running.delete(id)
          Deferred.doneUnsafe(mine, Exit.void)
        })
      )
    })
    if (attempt !== undefined) {
      const stop = attempt.stopAttempt
      attempt.stopAttempt = Effect.andThen(stop, end)
    }
    const written = writerOf(found.store)
    return Effect.uninterruptibleMask((restore) =>
      Effect.andThen(
        claim,
        Effect.flatMap(
          Effect.forkChild(Effect.interruptible(renew(found.claims, id, owner, lease, renewEvery))),
          (renewal) =>
            Effect.flatMap(restore(output), (result) => save(written, id, shown, result, now(), scrub)).pipe(
              Effect.ensuring(Effect.andThen(Fiber.interrupt(renewal), end))
            )
        )
      )
    )
  }

  /**
   * The rest of a keyed call on a store whose claims live in its own database (`StoreClaims`:
   * SQLite), after a lookup by a plain call that found nothing (or could not run), by plain calls in
   * the database's write transaction that such calls share (its write lock held from its first step
   * to its commit, so no other process claims or stores anything meanwhile): a second look, at the
   * stored result and the key's claim; with neither, the handler; a result's write. The call is
   * answered once that transaction is committed. A handler that suspends takes the claim at once (a
   * write committed with the same transaction), then runs as on any store (`whileRunning`). Claimed
   * by another owner, or where a step cannot run now, the effects take over.
   */
  function keyedJoined<R>(
    found: Resolved,
    joined: StoreClaims,
    id: string,
    shown: string,
    toolName: string,
    key: string,
    call: ToolCall,
    now: () => number,
    run: Effect.Effect<ToolResult.ToolResult, ToolError.ToolError, R>,
    runStart: Now.Start<ToolResult.ToolResult, ToolError.ToolError, R>,
    fiber: Fiber.Fiber<unknown, unknown>,
    redaction: Redaction | undefined,
    attempt: { stopAttempt: Effect.Effect<void> } | undefined
  ): Effect.Effect<ToolResult.ToolResult, ToolError.ToolError, R> {
    const looked = joined.look(id, now(), fiber)
    if (looked === later) return keyedCall(found, toolName, key, call, now, run, redaction, undefined)
    if (looked.stored !== undefined) {
      const decoded = readStored(looked.stored)
      if (Exit.isFailure(decoded)) return Exit.fail(failed("decode")(Cause.squash(decoded.cause)))
      // (what was read may be this transaction's: answered once committed)
      if (config.ttl === undefined || now() - decoded.value.storedAt < config.ttl) {
        return Effect.as(looked.committed(), replayOf(decoded.value, call, toolName, shown))
      }
      return keyedCall(found, toolName, key, call, now, run, redaction, undefined)
    }
    // claimed by another owner: wait for its result (the effects)
    if (looked.claimed) return keyedCall(found, toolName, key, call, now, run, redaction, undefined)
    const output = runStart(fiber)
    const scrub = scrubOf(redaction)
    const exit = Now.exitOf(output)
    if (exit === undefined) {
      // the claim, in the same transaction (still open: nothing else ran since the look)
      const owner = nextOwner()
      const claim = joined.claim(id, owner, lease, fiber) === true
        ? Effect.void
        : Effect.ignore(found.claims.acquire(id, owner, lease))
      return whileRunning(found, id, owner, shown, now, output, scrub, attempt, claim, Effect.ignore(found.claims.release(id, owner)))
    }
    // nothing was written for a failure
    if (Exit.isFailure(exit) || exit.value.isError) return exit
    const result = exit.value
    const encoded = storedText(storedOf(result, now(), scrub))
    // applied but not recorded: fatal, never "retry later" (as `save`)
    if (Exit.isFailure(encoded)) return Exit.fail(writeFailed(Cause.squash(encoded.cause)))
    const put = joined.put(id, encoded.value, config.ttl, now(), fiber)
    if (put === later) return Exit.fail(writeFailed("the write transaction ended before the result was stored"))
    const applied = appliedOf(result, shown)
    return Effect.mapBoth(put, { onFailure: writeFailed, onSuccess: () => applied })
  }

  function keyedCall<R>(
    found: Resolved,
    toolName: string,
    key: string,
    call: ToolCall,
    now: () => number,
    run: Effect.Effect<ToolResult.ToolResult, ToolError.ToolError, R>,
    redaction: Redaction | undefined,
    durable: DurableClaim | undefined
  ): Effect.Effect<ToolResult.ToolResult, ToolError.ToolError, R> {
        const { store, claims, slot } = found
        const { running } = slot
        // a stored result with a ttl is deleted once expired where the store can (SQL, Redis)
        const written = writerOf(store)
        const id = storageKey(toolName, key)
        // what the result says its key is: redacted like the arguments it comes from
        const shown = redaction?.shownKey ?? key
        const replay = (found: typeof Stored.Type): ToolResult.ToolResult => replayOf(found, call, toolName, shown)
        const scrub = scrubOf(redaction)
        /** The stored result that still answers repeats, if any. */
        const lookup = getStored(store, id).pipe(
          Effect.mapError((error) => failed(Schema.isSchemaError(error) ? "decode" : "read")(error)),
          Effect.map((found) =>
            Option.isSome(found) && (config.ttl === undefined || now() - found.value.storedAt < config.ttl)
              ? found.value
              : undefined
          )
        )
        // Looking up, waiting and running can be interrupted; once the call succeeded, its result is stored
        // uninterruptibly, and a claim taken is always released.
        const apply = (
          restore: <A, E, R2>(effect: Effect.Effect<A, E, R2>) => Effect.Effect<A, E, R2>,
          durable: DurableClaim | undefined
        ) => {
          const owner = durable?.owner ?? nextOwner()
          const release = Effect.ignore(claims.release(id, owner))
          /** Runs under the claim, renewing it, and stores the result before the claim goes. */
          const runClaimed = Effect.flatMap(
            Effect.forkChild(Effect.interruptible(renew(claims, id, owner, lease, renewEvery))),
            (renewal) =>
              Effect.flatMap(restore(run), (result) => save(written, id, shown, result, now(), scrub)).pipe(
                Effect.ensuring(Effect.andThen(Fiber.interrupt(renewal), release))
              )
          )
          const attempt = (wait: number): Effect.Effect<ToolResult.ToolResult, ToolError.ToolError, R> =>
            Effect.flatMap(restore(lookup), (found) =>
              found !== undefined ? Effect.succeed(replay(found)) : Effect.flatMap(
                restore(claims.acquire(id, owner, lease)),
                (mine) =>
                  mine
                    // the winner may have stored its result and released the claim since the lookup
                    ? Effect.flatMap(
                      Effect.onError(restore(lookup), () => release),
                      (stored) =>
                        stored !== undefined
                          ? Effect.as(release, replay(stored))
                          // a durable re-run: the first run may have applied the key, so it is not run again
                          : durable?.resumed === true
                          ? Effect.fail(new ToolError.OutcomeUnknown({ toolName }))
                          : runClaimed
                    )
                    : Effect.andThen(restore(Effect.sleep(wait)), attempt(Math.min(wait * 2, pollCap)))
              ))
          return attempt(Math.min(firstPoll, pollCap))
        }
        // The in-process lock: one call per key at a time (the others wait for it, then look again).
        // A waiter looks again under the same mask (a mask entered again would find the fiber
        // uninterruptible and make its `restore` a no-op: the rest of the call, handler included,
        // could no longer be cancelled). The holder's end wakes it at once, often inside the very
        // interruption that ended the holder (a batch interrupts its calls one after the other):
        // it yields first, so that an interruption on its way lands before anything starts.
        return Effect.uninterruptibleMask((restore) => {
          const claim: Effect.Effect<ToolResult.ToolResult, ToolError.ToolError, R> = Effect.suspend(() => {
            const holder = running.get(id)
            if (holder !== undefined) return Effect.andThen(restore(Effect.andThen(Deferred.await(holder), Effect.yieldNow)), claim)
            const mine = Deferred.makeUnsafe<void>()
            running.set(id, mine)
            return apply(restore, durable).pipe(
              Effect.ensuring(Effect.sync(() => {
                running.delete(id)
                Deferred.doneUnsafe(mine, Exit.void)
              }))
            )
          })
          return claim
        })
  }
}

/**
 * Per registry and store name, its store and claims (the same objects for every use of the name), so
 * that only a registry's first keyed call of a store looks them up as effects, whatever the executor.
 */
const resolved = new WeakMap<StoreRegistryShape, Map<string, Resolved>>()

/** A registry's store and claims of one name, with their slot and synchronous views (if any). */
interface Resolved {
  readonly store: KeyValueStore.KeyValueStore
  readonly claims: Claims
  readonly slot: Slot
  readonly storeNow: StoreNow | undefined
  readonly claimsNow: ClaimsNow | undefined
}

/** What is stored for `result` (see the module comment). */
const storedOf = (result: ToolResult.ToolResult, storedAt: number, scrub: ReadonlyArray<string>): typeof Stored.Type => {
  const { content, value } = result
  if (scrub.length === 0) return value === undefined ? { storedAt, content } : { storedAt, content, value }
  return value === undefined ? { storedAt, content, scrub } : { storedAt, content, value, scrub }
}

/**
 * A stored result whose one block is the JSON text of its value (the default rendering), nothing to
 * scrub, kept by the memory store as that text (`Kept`): its stored text, the same as `plainJson`'s
 * but for the order of keys, is made only when a read other than the keyed call's asks for it, and
 * a replay parses the value's text alone.
 */
class KeptResult extends Kept {
  readonly storedAt: number
  readonly valueText: string
  constructor(storedAt: number, valueText: string) {
    super()
    this.storedAt = storedAt
    this.valueText = valueText
  }
  text(): string {
    return `{"storedAt":${JSON.stringify(this.storedAt)},"content":[{"type":"text","text":${
      JSON.stringify(this.valueText)
    }}],"value":${this.valueText}}`
  }
  /** What `readStored` reads back from `text()`. */
  stored(): typeof Stored.Type {
    return { storedAt: this.storedAt, content: [{ type: "text", text: this.valueText }], value: JSON.parse(this.valueText) }
  }
}

/** `result` kept as a {@link KeptResult} when it is one (what `storedOf` stores, read back alike), else `undefined`. */
const keptOf = (result: ToolResult.ToolResult, storedAt: number, scrub: ReadonlyArray<string>): KeptResult | undefined => {
  const { content, value } = result
  if (scrub.length !== 0 || value === undefined || content.length !== 1 || !Number.isFinite(storedAt)) return undefined
  const block = content[0]!
  if (block.type !== "text" || !isPlainBlock(block) || !isPlainJson(value, plainDepth)) return undefined
  return JSON.stringify(value) === block.text ? new KeptResult(storedAt, block.text) : undefined
}

/** A fresh result as its applying call answers it: with its key, not replayed. */
const appliedOf = (result: ToolResult.ToolResult, shown: string): ToolResult.ToolResult => ({
  ...result,
  idempotency: { key: shown, replayed: false }
})

/** A stored result answering `call` again. */
const replayOf = (found: typeof Stored.Type, call: ToolCall, toolName: string, shown: string): ToolResult.ToolResult => {
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
    idempotency: { key: shown, replayed: true }
  }
}

/** The stored text's codec, as `KeyValueStore.toSchemaStore` reads and writes it. */
const storedJson = Schema.fromJsonString(Schema.toCodecJson(Stored))
const decodeStored = Schema.decodeUnknownExit(storedJson)
const encodeStored = Schema.encodeExit(storedJson)

/**
 * `text` read back as `decodeStored` would: by `JSON.parse` when what it holds is what the schema
 * would decode unchanged (a number for `storedAt`, exact blocks, strings to scrub, no other keys: the
 * common case; a parsed value is JSON as it is), else by the schema (which also says what is wrong).
 */
const readStored = (text: string): Exit.Exit<typeof Stored.Type, Schema.SchemaError> => {
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    return decodeStored(text)
  }
  return isPlainStored(parsed) ? Exit.succeed(parsed) : decodeStored(text)
}

const isPlainStored = (parsed: unknown): parsed is typeof Stored.Type => {
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return false
  const stored = parsed as Partial<Record<string, unknown>>
  if (typeof stored.storedAt !== "number" || !Array.isArray(stored.content)) return false
  for (const block of stored.content) if (!isPlainBlock(block)) return false
  const scrub = stored.scrub
  if ("scrub" in stored && !(Array.isArray(scrub) && scrub.every((s) => typeof s === "string"))) return false
  return onlyKeys(stored, 2 + ("value" in stored ? 1 : 0) + ("scrub" in stored ? 1 : 0))
}

/** The secrets a stored result is scrubbed of: the values the arguments hold under the policy's keys. */
const scrubOf = (redaction: Redaction | undefined): ReadonlyArray<string> =>
  redaction === undefined || (redaction.policy?.keys?.length ?? 0) === 0 ? noSecrets : secretsOf(redaction.policy, redaction.input)
const noSecrets: ReadonlyArray<string> = Object.freeze([])

/** `stored` as the text a store keeps: by `JSON.stringify` when the schema would change nothing, else by the schema. */
const storedText = (stored: typeof Stored.Type): Exit.Exit<string, Schema.SchemaError> => {
  const plain = plainJson(stored)
  return plain !== undefined ? Exit.succeed(plain) : encodeStored(stored)
}

const setStored = (
  kv: KeyValueStore.KeyValueStore,
  id: string,
  stored: typeof Stored.Type
): Effect.Effect<void, Schema.SchemaError | KeyValueStore.KeyValueStoreError> => {
  const text = storedText(stored)
  return Exit.isSuccess(text) ? kv.set(id, text.value) : text
}

/** The result stored under `id`, if any, read back from its text (`readStored`). */
const getStored = (
  kv: KeyValueStore.KeyValueStore,
  id: string
): Effect.Effect<Option.Option<typeof Stored.Type>, Schema.SchemaError | KeyValueStore.KeyValueStoreError> =>
  Effect.flatMap(
    kv.get(id),
    (text): Effect.Effect<Option.Option<typeof Stored.Type>, Schema.SchemaError> => {
      if (text === undefined) return Effect.succeedNone
      const read = readStored(text)
      return Exit.isSuccess(read) ? Effect.succeedSome(read.value) : Effect.failCause(read.cause)
    }
  )

/** The deepest value {@link plainJson} looks into; anything deeper takes the schema. */
const plainDepth = 32

/** True when `value` is JSON as it is (what `Schema.toCodecJson(Schema.Unknown)` encodes unchanged), at most `depth` deep. */
const isPlainJson = (value: unknown, depth: number): boolean => {
  switch (typeof value) {
    case "string":
    case "boolean":
      return true
    case "number":
      return Number.isFinite(value)
    case "object": {
      if (value === null) return true
      if (depth === 0) return false
      if (Array.isArray(value)) {
        for (let i = 0; i < value.length; i++) {
          if (!(i in value) || !isPlainJson(value[i], depth - 1)) return false
        }
        return true
      }
      const proto = Object.getPrototypeOf(value)
      if (proto !== Object.prototype && proto !== null) return false
      for (const key in value) {
        if (!isPlainJson((value as Record<string, unknown>)[key], depth - 1)) return false
      }
      return Object.getOwnPropertySymbols(value).length === 0
    }
    default:
      return false
  }
}

const onlyKeys = (value: object, count: number): boolean => Object.keys(value).length === count

/** True when `block` is exactly one of `ContentBlock`'s shapes (no other keys: the schema would drop them). */
const isPlainBlock = (block: ToolResult.ContentBlock): boolean => {
  if (typeof block !== "object" || block === null || Object.getPrototypeOf(block) !== Object.prototype) return false
  switch (block.type) {
    case "text":
      return typeof block.text === "string" && onlyKeys(block, 2)
    case "image":
    case "audio":
      return typeof block.data === "string" && typeof block.mimeType === "string" && onlyKeys(block, 3)
    case "resource": {
      const r: Partial<Record<string, unknown>> = block.resource
      if (typeof r !== "object" || r === null || Object.getPrototypeOf(r) !== Object.prototype || !onlyKeys(block, 2)) return false
      if (typeof r.uri !== "string" || ("mimeType" in r && typeof r.mimeType !== "string")) return false
      const text = "text" in r, blob = "blob" in r
      if (text === blob || (text ? typeof r.text !== "string" : typeof r.blob !== "string")) return false
      return onlyKeys(r, 1 + (text ? 1 : 0) + (blob ? 1 : 0) + ("mimeType" in r ? 1 : 0))
    }
    default:
      return false
  }
}

/**
 * The stored text of `stored` by `JSON.stringify` when the schema would encode it unchanged (every
 * part JSON as it is: the common case), else `undefined` (the schema encodes it, or says why not).
 * The same text as `encodeStored` but for the order of keys, which no reader sees.
 */
const plainJson = (stored: typeof Stored.Type): string | undefined => {
  if (!Number.isFinite(stored.storedAt)) return undefined
  for (const block of stored.content) if (!isPlainBlock(block)) return undefined
  if ("value" in stored && !isPlainJson(stored.value, plainDepth)) return undefined
  return JSON.stringify(stored)
}

/**
 * Renews `owner`'s claim on `key` every `every` milliseconds, for ever (the caller interrupts it); a renewal
 * that fails is tried again at the next tick, one that finds the claim taken by another owner stops.
 */
const renew = (claims: Claims, key: string, owner: string, lease: number, every: number): Effect.Effect<void> => {
  const tick: Effect.Effect<void> = Effect.andThen(
    Effect.sleep(every),
    Effect.flatMap(
      Effect.orElseSucceed(claims.acquire(key, owner, lease), () => true),
      (held) => held ? tick : Effect.void
    )
  )
  return tick
}
