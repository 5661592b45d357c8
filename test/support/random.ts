/** mulberry32: a small deterministic generator for property and fuzz tests, so a seed replays a run. */
export const random = (seed: number) => {
  let a = seed >>> 0
  const next = () => {
    a = (a + 0x6D2B79F5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  const int = (min: number, max: number) => min + Math.floor(next() * (max - min + 1))
  const pick = <A>(items: ReadonlyArray<A>): A => items[int(0, items.length - 1)]!
  const chance = (p: number) => next() < p
  return { next, int, pick, chance }
}

export type Random = ReturnType<typeof random>
