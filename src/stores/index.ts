/**
 * The `tinyagents/stores` entry point: real databases behind `StoreRegistry` and `RateLimiter`.
 * `Stores.layerSqlite` is the embedded default; Postgres is `tinyagents/stores/postgres`, Redis
 * `tinyagents/stores/redis` (separate entry points, so their optional peers load only when used).
 */
export * as SqlAudit from "./SqlAudit.ts"
export * as SqliteClient from "./SqliteClient.ts"
export * as SqlRateLimiter from "./SqlRateLimiter.ts"
export * as Stores from "./Stores.ts"
