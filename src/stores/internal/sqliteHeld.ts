/**
 * Held statements: the SQL stores' own statements on a `SqliteClient`, prepared once and kept, run
 * outside any transaction without going through `effect/sql` (no statement compiled per call). A
 * read runs at once, under the connection's semaphore (so never inside another fiber's open
 * transaction). Writes are group-committed: the writes issued while one group gathers (the fibers
 * that run before the group's own fiber does) run in one `BEGIN IMMEDIATE` ... `COMMIT`, and each
 * caller resumes only once that `COMMIT` succeeded, so a write a caller was told of is committed,
 * as with one statement per transaction; other processes see the group's writes together, at its
 * commit.
 *
 * Each write is one statement, atomic in itself; a group only adds unrelated statements to the same
 * transaction, so a statement that fails alone (SQLite rolls that statement back and keeps the
 * transaction) fails its own caller only. An error that ends the whole transaction (disk full, I/O),
 * or a `COMMIT` that fails, fails every write of the group (none of them was committed). A caller
 * interrupted before its group's transaction began never runs; one interrupted after may still be
 * committed (as a statement sent to a server can be). Locked by another process (`SQLITE_BUSY`),
 * `BEGIN IMMEDIATE` and `COMMIT` are tried again as the client's own statements are (`busy`).
 *
 * Plain calls, for the executor's keyed calls (`storeNow`): a read (`now`) outside any transaction is
 * one synchronous step, as the effect's is. The plain reads of the fibers that run before a task of
 * the scheduler does share one read transaction (`BEGIN` by the first, with the connection's
 * semaphore permit taken; `COMMIT` by that task, which gives the permit back), so that a batch of
 * replays takes the database's read lock once, not once per read; each read sees the database as of
 * the first (a moment earlier than its own: a result stored meanwhile by another process is found by
 * the look that the write lock covers). A step can also run now (`joined`), inside the group's
 * transaction opened by the first such step (`BEGIN IMMEDIATE` by a plain call, with the
 * connection's semaphore permit taken, so no other fiber's statement or transaction interleaves);
 * the steps of every call that runs before the group's own fiber does join it, and that fiber
 * commits them with the writes gathered meanwhile, then gives the permit back. A caller of a step is
 * told its outcome only after that commit (`committed`), as a write's is. Where a plain call cannot
 * run now (another fiber's transaction, the permit taken or waited for, the database locked by
 * another process, a failed read) it answers {@link later}, and the caller takes the effect.
 *
 * Only the stores use these, never inside a transaction of theirs (`modify` goes through
 * `effect/sql`): a held statement on a fiber that holds the connection would wait for itself.
 */
import { Deferred, Effect, type Fiber, Semaphore } from "effect"
import type { SqlError } from "effect/sql"
import type { DatabaseSync, SQLInputValue, StatementSync } from "node:sqlite"
import { later } from "../../internal/storeNow.ts"

/** A row as `node:sqlite` reads it. */
export type HeldRow = Record<string, unknown>

/** Statements prepared once per SQL text (see the module comment). */
export interface Held {
  /** A read of one row at most: that row, or none. */
  readonly first: (sql: string) => (params: ReadonlyArray<SQLInputValue>) => Effect.Effect<ReadonlyArray<HeldRow>, SqlError.SqlError>
  /**
   * A read of one row at most by a plain call: that row, none, or {@link later} (inside another
   * fiber's transaction, or failed). With `fiber` (the one making it), in the read transaction that
   * such reads share until the end of the scheduler's turn (see the module comment).
   */
  readonly now: (
    sql: string
  ) => (params: ReadonlyArray<SQLInputValue>, fiber?: Fiber.Fiber<unknown, unknown>) => HeldRow | undefined | typeof later
  /** {@link now}, with the row as an array of its columns' values, in order (cheaper to make than an object). */
  readonly nowValues: (
    sql: string
  ) => (params: ReadonlyArray<SQLInputValue>, fiber?: Fiber.Fiber<unknown, unknown>) => ReadonlyArray<unknown> | undefined | typeof later
  /** A write, group-committed: its rows (`RETURNING`), once committed. */
  readonly write: (sql: string) => (params: ReadonlyArray<SQLInputValue>) => Effect.Effect<ReadonlyArray<HeldRow>, SqlError.SqlError>
  /**
   * `step` run now in the group's transaction of plain calls (opened when none is; see the module
   * comment), with the wait for that transaction's commit; {@link later} when it cannot run now.
   * Throws the `SqlError` of a `step` that throws (which must leave nothing written).
   */
  readonly joined: <A>(
    fiber: Fiber.Fiber<unknown, unknown>,
    step: (statement: (sql: string) => StatementSync) => A
  ) => Joined<A> | typeof later
}

/** A step run in the group's transaction of plain calls: its answer, and the wait for its commit. */
export interface Joined<A> {
  readonly value: A
  /** Succeeds once the transaction is committed; fails when it was not (nothing of it was). */
  readonly committed: Effect.Effect<void, SqlError.SqlError>
}

/** What the client gives the held statements: its connection and how it runs and retries. */
export interface HeldConnection {
  readonly db: DatabaseSync
  /** Held by whoever uses the connection (`effect/sql`'s acquirers take it too). */
  readonly semaphore: Semaphore.Semaphore
  /** Runs `f`, failing with a `SqlError` (its reason from SQLite's code). */
  readonly attempt: <A>(f: () => A, operation: string) => Effect.Effect<A, SqlError.SqlError>
  /** `effect` tried again while the database is locked by another process, safe to run again or not. */
  readonly busy: <A>(effect: Effect.Effect<A, SqlError.SqlError>) => Effect.Effect<A, SqlError.SqlError>
  /** A thrown error as a `SqlError`. */
  readonly error: (cause: unknown, operation: string) => SqlError.SqlError
}

/** A write (or step) waiting for its group. */
interface Pending {
  readonly step: (statement: (sql: string) => StatementSync) => unknown
  /** Interrupted before its group began: not run. */
  cancelled: boolean
  outcome: Effect.Effect<unknown, SqlError.SqlError> | undefined
  resume: ((effect: Effect.Effect<unknown, SqlError.SqlError>) => void) | undefined
}

/** The held statements of one connection. */
export const make = (connection: HeldConnection): Held => {
  const { attempt, busy, db, error, semaphore } = connection
  const statements = new Map<string, StatementSync>()
  const prepared = (sql: string): StatementSync => {
    let statement = statements.get(sql)
    if (statement === undefined) {
      statement = db.prepare(sql)
      statement.setReturnArrays(false)
      statements.set(sql, statement)
    }
    return statement
  }

  /** Ends a transaction left open by a failed cleanup (only called holding the semaphore: no one else's). */
  const rollback = () => {
    try {
      if (db.isTransaction) db.exec("ROLLBACK")
    } catch {
      // the next group's `BEGIN` fails and says why
    }
  }

  /**
   * The read transaction plain reads share (`now` with a fiber): opened by the first, with the
   * connection's semaphore permit taken (no other fiber's statement or transaction interleaves), and
   * ended (`COMMIT`, the permit given back) by a task of the scheduler that runs after the fibers
   * already scheduled, or made the write transaction of plain calls by `joined` (`open`). Its reads
   * see the database as of its first: as one read each would have, a moment earlier (a result another
   * process stores meanwhile is read by the next look, which the write lock covers).
   */
  let reading = 0
  /** Which read transaction is open (0: none): its end task ends only its own. */
  let readings = 0
  const endRead = (which: number) => {
    if (reading !== which) return
    reading = 0
    try {
      db.exec("COMMIT")
    } catch {
      rollback()
    }
    Effect.runSync(semaphore.release(1))
  }
  /** Opens the shared read transaction: false when it cannot now, or when another fiber waits for the connection. */
  const openRead = (fiber: Fiber.Fiber<unknown, unknown>): boolean => {
    if (db.isTransaction || waiting(semaphore) || !Effect.runSync(semaphore.takeIfAvailable(1))) return false
    try {
      db.exec("BEGIN")
    } catch {
      Effect.runSync(semaphore.release(1))
      return false
    }
    const which = reading = ++readings
    fiber.currentDispatcher.scheduleTask(() => endRead(which), 0)
    return true
  }

  /**
   * One synchronous read, or `later` (inside another fiber's transaction, or when it throws): with
   * `fiber`, in the shared read transaction (opened when none is and it can be, else outside any).
   */
  const now = (sql: string, values = false) => {
    // prepared on first use, inside the call (preparing fails while the table is missing)
    let statement: StatementSync | undefined
    const prepare = () => {
      if (!values) return prepared(sql)
      const made = db.prepare(sql)
      made.setReturnArrays(true)
      return made
    }
    return (params: ReadonlyArray<SQLInputValue>, fiber?: Fiber.Fiber<unknown, unknown>): HeldRow | undefined | typeof later => {
      if (reading === 0) {
        // inside another fiber's transaction, the read would see its writes before they commit
        if (db.isTransaction) return later
        // (when the shared one cannot open, one read outside any transaction)
        if (fiber !== undefined) openRead(fiber)
      }
      try {
        return (statement ??= prepare()).get(...params) as HeldRow | undefined
      } catch {
        return later
      }
    }
  }
  const nowValues = (sql: string) =>
    now(sql, true) as unknown as (
      params: ReadonlyArray<SQLInputValue>,
      fiber?: Fiber.Fiber<unknown, unknown>
    ) => ReadonlyArray<unknown> | undefined | typeof later

  const first = (sql: string) => {
    const read = now(sql)
    let statement: StatementSync | undefined
    const get = (params: ReadonlyArray<SQLInputValue>): ReadonlyArray<HeldRow> => {
      const row = (statement ??= prepared(sql)).get(...params) as HeldRow | undefined
      return row === undefined ? [] : [row]
    }
    /** The read under the semaphore: after another fiber's transaction, tried again while another process locks the file. */
    const locked = (params: ReadonlyArray<SQLInputValue>) =>
      semaphore.withPermit(Effect.suspend(() => (rollback(), busy(attempt(() => get(params), "execute")))))
    // one synchronous step when it can (nothing else runs on the connection meanwhile), else under the semaphore
    return (params: ReadonlyArray<SQLInputValue>) =>
      Effect.suspend(() => {
        const row = read(params)
        return row === later ? locked(params) : Effect.succeed(row === undefined ? [] : [row])
      })
  }

  let group: Array<Pending> = []
  let gathering = false
  /**
   * The group's transaction opened by a plain call (`joined`): `open` while steps may join it (the
   * semaphore permit is the group's), `committing` from the moment its fiber takes the group.
   */
  let opened: "no" | "open" | "committing" = "no"
  /** The open group's commit: done when its fiber committed it, or failed. */
  let openCommit = Deferred.makeUnsafe<void, SqlError.SqlError>()
  /** The wait for `openCommit` (one effect per group, not per step). */
  let openCommitted: Effect.Effect<void, SqlError.SqlError> = Deferred.await(openCommit)
  /** Why the open group's transaction ended before its commit (an error that ended it). */
  let broken: SqlError.SqlError | undefined
  const begin = busy(attempt(() => db.exec("BEGIN IMMEDIATE"), "beginTransaction"))
  const commit = busy(attempt(() => db.exec("COMMIT"), "commit"))
  const settle = (pending: ReadonlyArray<Pending>, failure?: SqlError.SqlError) => {
    for (const write of pending) {
      const outcome = failure === undefined ? write.outcome! : Effect.fail(failure)
      write.outcome = outcome
      const resume = write.resume
      write.resume = undefined
      resume?.(outcome)
    }
  }
  /** Runs the taken writes in the open transaction, then commits it; `done` with the outcome, then `settle`. */
  const runAndCommit = (pending: ReadonlyArray<Pending>, done: (failure?: SqlError.SqlError) => void) => {
    for (const write of pending) {
      try {
        write.outcome = Effect.succeed(write.step(prepared))
      } catch (cause) {
        const failure = error(cause, "execute")
        // the statement alone was undone; an error that ended the transaction undid the group
        if (!db.isTransaction) return Effect.sync(() => (done(failure), settle(pending, failure)))
        write.outcome = Effect.fail(failure)
      }
    }
    return Effect.matchEffect(commit, {
      onFailure: (failure) => Effect.sync(() => (rollback(), done(failure), settle(pending, failure))),
      onSuccess: () => Effect.sync(() => (done(), settle(pending)))
    })
  }
  const noop = () => {}
  /** Runs the gathered writes in one transaction (module comment), under the connection's semaphore. */
  const flushGathered = semaphore.withPermit(Effect.suspend(() => {
    // taken meanwhile by a group opened by a plain call
    if (group.length === 0) return Effect.void
    // a transaction left open by a failed cleanup would swallow this group
    rollback()
    return Effect.matchEffect(begin, {
      onFailure: (failure) => Effect.sync(() => settle(take(), failure)),
      onSuccess: () => runAndCommit(take(), noop)
    })
  }))
  /** Commits the group's transaction opened by a plain call, with the writes gathered meanwhile; gives its permit back. */
  const flushOpened = Effect.suspend(() => {
    opened = "committing"
    const pending = take()
    const commitOf = openCommit
    // the permit goes back before anyone is resumed (a caller resumed at once may open the next group)
    const done = (failure?: SqlError.SqlError) => {
      opened = "no"
      broken = undefined
      Effect.runSync(semaphore.release(1))
      Deferred.doneUnsafe(commitOf, failure === undefined ? Effect.void : Effect.fail(failure))
    }
    const ended = broken ?? (db.isTransaction ? undefined : error(new Error("the transaction ended"), "commit"))
    if (ended !== undefined) return Effect.sync(() => (rollback(), done(ended), settle(pending, ended)))
    return Effect.onInterrupt(
      runAndCommit(pending, done),
      () => Effect.sync(() => opened !== "no" && done(error(new Error("interrupted"), "commit")))
    )
  })
  /** The writes gathered so far, not interrupted; a new group gathers from now. */
  const take = (): ReadonlyArray<Pending> => {
    const taken = group.filter((write) => !write.cancelled)
    group = []
    gathering = false
    return taken
  }

  /** `step` (its statements prepared once per text) in the gathering group; what it returned, once committed. */
  const transact = <A>(step: (statement: (sql: string) => StatementSync) => A): Effect.Effect<A, SqlError.SqlError> =>
    Effect.suspend(() => {
      const pending: Pending = { step, cancelled: false, outcome: undefined, resume: undefined }
      group.push(pending)
      const wait = Effect.callback<A, SqlError.SqlError>((resume) => {
        if (pending.outcome !== undefined) return resume(pending.outcome as Effect.Effect<A, SqlError.SqlError>)
        pending.resume = resume as (effect: Effect.Effect<unknown, SqlError.SqlError>) => void
        return Effect.sync(() => {
          pending.resume = undefined
          pending.cancelled = true
        })
      })
      if (gathering) return wait
      gathering = true
      // the group's own fiber runs after the fibers already scheduled: their writes join the group
      return Effect.andThen(Effect.forkDetach(flushGathered), wait)
    })

  const write = (sql: string) => (params: ReadonlyArray<SQLInputValue>) =>
    transact((statement) => statement(sql).all(...params) as ReadonlyArray<HeldRow>)

  /**
   * Opens the group's transaction by a plain call (module comment): false when it cannot now, or
   * when another fiber waits for the connection (it goes first: plain calls never starve it).
   */
  const open = (fiber: Fiber.Fiber<unknown, unknown>): boolean => {
    if (reading !== 0) {
      // the shared read transaction ends here; its permit becomes this one's (unless another fiber waits)
      const which = reading
      if (waiting(semaphore)) {
        endRead(which)
        return false
      }
      reading = 0
      try {
        db.exec("COMMIT")
      } catch {
        rollback()
      }
    } else if (db.isTransaction || waiting(semaphore) || !Effect.runSync(semaphore.takeIfAvailable(1))) return false
    try {
      db.exec("BEGIN IMMEDIATE")
    } catch {
      Effect.runSync(semaphore.release(1)) // locked by another process: the effect waits for it
      return false
    }
    opened = "open"
    openCommit = Deferred.makeUnsafe()
    openCommitted = Deferred.await(openCommit)
    // (writes gathered for a fiber on its way join this group; that fiber then finds none)
    gathering = true
    // the group's own fiber, after the fibers already scheduled: their steps join the group
    fiber.currentDispatcher.scheduleTask(() => void Effect.runFork(flushOpened), 0)
    return true
  }
  const joined = <A>(
    fiber: Fiber.Fiber<unknown, unknown>,
    step: (statement: (sql: string) => StatementSync) => A
  ): Joined<A> | typeof later => {
    if (opened === "open" ? broken !== undefined : opened === "committing" || !open(fiber)) return later
    let value: A
    try {
      value = step(prepared)
    } catch (cause) {
      const failure = error(cause, "execute")
      if (!db.isTransaction) broken = failure
      throw failure
    }
    return { value, committed: openCommitted }
  }

  return { first, now: (sql) => now(sql), nowValues, write, joined }
}

/**
 * True when a fiber waits for `semaphore`'s permit. Read from Effect's semaphore (its queue of
 * waiters is not part of its interface); a semaphore without one reads as having none, so
 * test/stores/SqliteKeyed.test.ts checks that Effect's still has it.
 */
export const waiting = (semaphore: Semaphore.Semaphore): boolean =>
  ((semaphore as { readonly waiters?: { readonly size?: unknown } }).waiters?.size ?? 0) !== 0

/** Where a `SqliteClient` keeps its held statements. */
export const heldKey: unique symbol = Symbol.for("tinyagents/stores/sqliteHeld")

/** The held statements of `client`, when it is a `SqliteClient` (`undefined` for any other client). */
export const heldOf = (client: object): Held | undefined => (client as { readonly [heldKey]?: Held })[heldKey]
