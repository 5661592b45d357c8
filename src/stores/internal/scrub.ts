/**
 * Database errors without what was stored. A store's failure keeps the database's `SqlError` (its
 * reason, so whether a retry can help, and the SQLSTATE or SQLite code) but not its text as is: the
 * messages are cut to 200 characters with the key, its stored id and the value taken out, and the
 * driver's other fields (detail, hint, where: a unique violation's detail repeats the key) are
 * dropped. So a `StoreFailed`, its message and its JSON never carry a key or a value.
 */
import { SqlError } from "effect/sql"
import { searchable, withoutSecrets } from "../../internal/redact/text.ts"

/** The longest database text a store error keeps. */
const maxText = 200

/**
 * `text` without any of `secrets` (those long enough to search for), each replaced by the marker
 * (overlapping ones whole: a key that starts a stored value takes all of it), cut to {@link maxText}.
 */
const scrubText = (text: string, secrets: ReadonlyArray<string>): string => {
  const out = withoutSecrets(text, searchable(secrets))
  return out.length > maxText ? `${out.slice(0, maxText)}…` : out
}

/** The driver's error (the reason's cause) as a plain `Error`: name, scrubbed message and codes only. */
const scrubDriverError = (cause: unknown, secrets: ReadonlyArray<string>): Error => {
  const record = typeof cause === "object" && cause !== null ? cause as Record<string, unknown> : {}
  const message = typeof record["message"] === "string" ? record["message"] : String(cause)
  const error = new Error(scrubText(message, secrets))
  if (typeof record["name"] === "string") error.name = record["name"]
  for (const field of ["code", "errcode", "errno"]) {
    const value = record[field]
    if (typeof value === "string" || typeof value === "number") Object.assign(error, { [field]: value })
  }
  return error
}

/**
 * `cause` with its database text scrubbed of `secrets` (the key, its id, a string value) and cut (see
 * the module comment): a `SqlError` is rebuilt with the same reason class; anything else is kept.
 */
export const scrubSqlError = (cause: unknown, secrets: ReadonlyArray<string>): unknown => {
  if (!SqlError.isSqlError(cause)) return cause
  const reason = cause.reason
  const Reason = reason.constructor as new(props: object) => SqlError.SqlErrorReason
  return new SqlError.SqlError({
    reason: new Reason({
      cause: scrubDriverError(reason.cause, secrets),
      ...(reason.message === undefined ? {} : { message: scrubText(reason.message, secrets) }),
      ...(reason.operation === undefined ? {} : { operation: reason.operation }),
      ...(reason._tag === "UniqueViolation" ? { constraint: reason.constraint } : {})
    })
  })
}
