/**
 * effect/cluster's SQL message storage (`SqlMessageStorage`) with one change on Postgres: a final
 * reply (`WithExit`) is saved in ONE statement instead of a transaction of four. Upstream saves it
 * as `BEGIN`, `UPDATE <messages> SET processed, last_reply_id`, `INSERT INTO <replies>`, `COMMIT`,
 * each a round trip to the server; between two activities of a durable run there are one or two of
 * these on the path (the reply of the activity that ended, before the workflow reads it), so on a
 * loaded machine they were 4–8 of the ~15 sequential statements of the gap (issue #25, measured with
 * `TINYAGENTS_BENCH_TRACE` in bench/durable.ts). Here both writes go in one statement, the update as
 * a data-modifying CTE: a single statement is atomic on its own, so nothing of upstream's guarantee
 * changes (the message is marked processed exactly when its reply row exists), and inside a caller's
 * transaction (an activity `withTransaction`) it runs on that transaction's connection like before.
 * The rows are upstream's (`replyToRow`: kind 0 for an exit, its JSON payload, no sequence); chunk
 * replies, other dialects and every other operation are upstream's own, unchanged.
 */
import { Effect, Layer } from "effect"
import { ClusterError, MessageStorage, type Reply, ShardingConfig, Snowflake, SqlMessageStorage } from "effect/cluster"
import type * as Digest from "effect/crypto/Digest"
import { SqlClient } from "effect/sql"

/** `SqlMessageStorage.layer` (migrations included), its final replies saved in one statement on Postgres. */
export const layer: Layer.Layer<
  MessageStorage.MessageStorage,
  never,
  SqlClient.SqlClient | ShardingConfig.ShardingConfig | Digest.Digest
> = Layer.effect(
  MessageStorage.MessageStorage,
  Effect.gen(function*() {
    const encoded = yield* SqlMessageStorage.makeEncoded()
    const sql = (yield* SqlClient.SqlClient).withoutTransforms()
    const saveReply = sql.onDialectOrElse({
      pg: () => (reply: Reply.Encoded): Effect.Effect<void, ClusterError.PersistenceError> =>
        reply._tag !== "WithExit"
          ? encoded.saveReply(reply)
          : sql`WITH processed AS (UPDATE cluster_messages SET processed = TRUE, last_reply_id = ${reply.id} WHERE request_id = ${reply.requestId}) INSERT INTO cluster_replies ${
            sql.insert({ id: reply.id, kind: 0, request_id: reply.requestId, payload: JSON.stringify(reply.exit), sequence: null })
          }`.pipe(
            Effect.asVoid,
            ClusterError.PersistenceError.refail,
            Effect.withTracerEnabled(false)
          ),
      orElse: () => encoded.saveReply
    })
    return yield* MessageStorage.makeEncoded({ ...encoded, saveReply })
  })
).pipe(Layer.provide(Snowflake.layerGenerator))
