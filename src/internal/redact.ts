/**
 * Applies a tool's `redact` policy: values under listed keys (at any depth)
 * become "[redacted]", and pattern matches in strings are replaced. Returns new
 * values; never mutates its input.
 */
import type { Redact } from "../contract/Safety.ts"

export const marker = "[redacted]"

const isEmpty = (policy: Redact | undefined): policy is undefined =>
  policy === undefined || ((policy.keys?.length ?? 0) === 0 && (policy.patterns?.length ?? 0) === 0)

/** A copy of `value` with the policy applied; `fields` lists the redacted key paths. */
export const redactValue = (
  value: unknown,
  policy: Redact | undefined
): { readonly value: unknown; readonly fields: ReadonlyArray<string> } => {
  if (isEmpty(policy)) return { value, fields: [] }
  const keys = new Set(policy.keys ?? [])
  const fields: Array<string> = []
  const walk = (node: unknown, path: string): unknown => {
    if (typeof node === "string") return redactText(node, policy)
    if (Array.isArray(node)) return node.map((item, i) => walk(item, `${path}[${i}]`))
    if (node !== null && typeof node === "object") {
      const out: Record<string, unknown> = {}
      for (const [key, child] of Object.entries(node)) {
        const at = path === "" ? key : `${path}.${key}`
        if (keys.has(key)) {
          fields.push(at)
          out[key] = marker
        } else {
          out[key] = walk(child, at)
        }
      }
      return out
    }
    return node
  }
  return { value: walk(value, ""), fields }
}

/** `text` with every pattern match replaced. */
export const redactText = (text: string, policy: Redact | undefined): string => {
  if (isEmpty(policy) || policy.patterns === undefined) return text
  let out = text
  for (const pattern of policy.patterns) {
    out = out.replace(pattern.global ? pattern : new RegExp(pattern.source, `${pattern.flags}g`), marker)
  }
  return out
}
