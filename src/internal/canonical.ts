/**
 * Canonical JSON (object keys sorted at every depth) and SHA-256 hashes of it,
 * so equal values hash equally whatever their key order. Used by receipts and
 * spans, which carry hashes instead of payloads.
 */
import { createHash } from "node:crypto"

/** `value` as canonical JSON: sorted keys, `undefined` members dropped, dates as ISO text. */
export const canonicalJson = (value: unknown): string => JSON.stringify(normalize(value)) ?? "null"

const normalize = (value: unknown): unknown => {
  if (value === null || typeof value !== "object") {
    if (typeof value === "bigint") return value.toString()
    if (typeof value === "function" || typeof value === "symbol") return undefined
    return value
  }
  if (value instanceof Date) return value.toISOString()
  if (Array.isArray(value)) return value.map((item) => normalize(item) ?? null)
  const out: Record<string, unknown> = {}
  for (const key of Object.keys(value).sort()) {
    const child = normalize((value as Record<string, unknown>)[key])
    if (child !== undefined) out[key] = child
  }
  return out
}

/** A copy of `value` without the listed keys, at any depth. */
export const withoutKeys = (value: unknown, keys: ReadonlySet<string>): unknown => {
  if (keys.size === 0 || value === null || typeof value !== "object") return value
  if (Array.isArray(value)) return value.map((item) => withoutKeys(item, keys))
  const out: Record<string, unknown> = {}
  for (const [key, child] of Object.entries(value)) {
    if (!keys.has(key)) out[key] = withoutKeys(child, keys)
  }
  return out
}

/** Hex SHA-256 of the canonical JSON of `value`. */
export const hash = (value: unknown): string => createHash("sha256").update(canonicalJson(value)).digest("hex")
