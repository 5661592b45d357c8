/**
 * The `tinyagents/stores/postgres` entry point: every store, claim and rate limit in a Postgres
 * database, shared by every process connected to it, through `@effect/sql-pg`'s `PgClient` (it
 * speaks the Postgres protocol itself; an optional peer dependency, loaded only by this module).
 * The database is opened on first use and a lost connection is reopened on the next use: while the
 * server is down, calls fail with a retryable `StoreFailed`. See `Stores` for tables and artifacts.
 */
import { PgClient } from "@effect/sql-pg"
import type { Layer } from "effect"
import * as Stores from "./Stores.ts"

/** How to connect (`PgClient`'s pool options: `url` or `host`/`port`/`database`/`username`/`password`, ...) and the artifacts policy. */
export interface Options extends PgClient.PgPoolConfig, Stores.Options {}

/** `StoreRegistry` and `RateLimiter` in the Postgres database `options` connects to. */
export const layer = (options: Options): Layer.Layer<Stores.Services> => {
  const { artifacts, ...pool } = options
  return Stores.layerSql(PgClient.layer(pool), { artifacts })
}
