/**
 * The durable agent's own SQL tables, beside the engine's (`cluster_messages`, `cluster_replies`):
 * `tinyagents_durable_events` (each run's events by sequence number, written with
 * `ON CONFLICT DO NOTHING` so that a workflow body replaying writes nothing twice) and
 * `tinyagents_durable_markers` (one row per tool-call activity that started a non-idempotent or
 * keyed call: a re-run that finds it knows a first run began). SQLite and Postgres alike.
 */
import { Effect, Schedule, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { withSchemaLock } from "../../stores/internal/schemaLock.ts"
import * as ToolEvent from "../../contract/ToolEvent.ts"

const created = new WeakSet<SqlClient.SqlClient>()

/**
 * Creates the tables once per client (idempotent: `IF NOT EXISTS`, under the schema lock on
 * Postgres so that runners starting together do not collide). Only a success is remembered; a
 * failure is retried a few times (the database may be starting) and then ends the run as a defect.
 */
export const ensure: Effect.Effect<void, never, SqlClient.SqlClient> = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) =>
    created.has(sql) ? Effect.void : withSchemaLock(
      sql,
      Effect.andThen(
        sql`CREATE TABLE IF NOT EXISTS tinyagents_durable_events (run_id TEXT NOT NULL, seq INTEGER NOT NULL, event TEXT NOT NULL, PRIMARY KEY (run_id, seq))`,
        sql`CREATE TABLE IF NOT EXISTS tinyagents_durable_markers (activity_key TEXT PRIMARY KEY)`
      )
    ).pipe(
      Effect.tap(() => Effect.sync(() => created.add(sql))),
      Effect.retry({ times: 5, schedule: Schedule.exponential("50 millis") }),
      Effect.orDie
    )
)

const encode = Schema.encodeSync(ToolEvent.EventJson)
const decode = Schema.decodeUnknownSync(ToolEvent.EventJson)

/** Appends event `seq` of run `runId` unless it is already there (a replay). */
export const append = (runId: string, seq: number, event: ToolEvent.Event): Effect.Effect<void, never, SqlClient.SqlClient> =>
  Effect.andThen(
    ensure,
    SqlClient.SqlClient.use((sql) =>
      sql`INSERT INTO tinyagents_durable_events (run_id, seq, event) VALUES (${runId}, ${seq}, ${
        JSON.stringify(encode(event))
      }) ON CONFLICT (run_id, seq) DO NOTHING`
    ).pipe(Effect.orDie, Effect.asVoid)
  )

/** The run's events with a sequence number above `since`, in order (at most `limit`). */
export const read = (
  runId: string,
  since: number,
  limit = 500
): Effect.Effect<ReadonlyArray<ToolEvent.Event>, never, SqlClient.SqlClient> =>
  Effect.andThen(
    ensure,
    SqlClient.SqlClient.use((sql) =>
      sql<{ readonly event: string }>`SELECT event FROM tinyagents_durable_events WHERE run_id = ${runId} AND seq > ${since} ORDER BY seq LIMIT ${limit}`
    ).pipe(Effect.orDie, Effect.map((rows) => rows.map((row) => decode(JSON.parse(row.event)) as ToolEvent.Event)))
  )

/** Writes the "started" marker of activity `key`: `true` when it is new, `false` when a run before this one wrote it. */
export const mark = (key: string): Effect.Effect<boolean, never, SqlClient.SqlClient> =>
  Effect.andThen(
    ensure,
    SqlClient.SqlClient.use((sql) =>
      sql<{ readonly activity_key: string }>`INSERT INTO tinyagents_durable_markers (activity_key) VALUES (${key}) ON CONFLICT (activity_key) DO NOTHING RETURNING activity_key`
    ).pipe(Effect.orDie, Effect.map((rows) => rows.length > 0))
  )
