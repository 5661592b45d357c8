/**
 * The two test tiers. `npm test` runs the fast tier: unit, property and loopback
 * tests at modest counts. `npm run test:full` (`TINYAGENTS_TEST_TIER=full`) runs
 * every file, the ones that need real servers or kill processes included, and
 * the fuzz and property runs at their larger counts.
 */

/** True under `npm run test:full`. */
export const full = process.env["TINYAGENTS_TEST_TIER"] === "full"

/**
 * A run count: the environment variable when it is set (to replay or push a
 * run by hand), else `fast` in the fast tier and `fullCount` in the full tier.
 */
export const count = (variable: string, fast: number, fullCount: number): number => {
  const set = process.env[variable]
  if (set !== undefined && set !== "") {
    const n = Number(set)
    if (!Number.isInteger(n) || n < 1) throw new Error(`${variable} must be a positive integer, got ${JSON.stringify(set)}`)
    return n
  }
  return full ? fullCount : fast
}
