// Each integration is its own entry point over an optional peer: the main entry never loads them,
// and no integration loads another's framework.
import { readFileSync } from "node:fs"
import { dirname, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..")

/** Every bare specifier imported (at run time or as types) by the module graph under `entry`, per file. */
const graph = (entry: string): Map<string, Array<string>> => {
  const seen = new Map<string, Array<string>>()
  const visit = (file: string) => {
    if (seen.has(file)) return
    const text = readFileSync(file, "utf8")
    const specifiers = [...text.matchAll(/(?:^|\n)\s*(?:import|export)\s[^"']*?from\s+["']([^"']+)["']/g)].map((m) => m[1]!)
    seen.set(file, specifiers.filter((s) => !s.startsWith(".")))
    for (const s of specifiers) if (s.startsWith(".")) visit(resolve(dirname(file), s))
  }
  visit(resolve(root, entry))
  return seen
}

const bare = (entry: string) => new Set([...graph(entry).values()].flat())
const files = (entry: string) => [...graph(entry).keys()].map((f) => f.slice(root.length + 1))
const frameworks = (specifiers: Set<string>) =>
  [...specifiers].filter((s) => s === "ai" || s.startsWith("ai/") || s.startsWith("@langchain/") || s.startsWith("@ai-sdk/"))

describe("store entry points", () => {
  const peers = (specifiers: Set<string>) =>
    [...specifiers].filter((s) => s === "redis" || s.startsWith("@effect/sql-pg") || s.startsWith("@effect/platform-node"))
  it("the main entry and tinyagents/stores load no database driver (node:sqlite is built in)", () => {
    expect(peers(bare("src/index.ts"))).toEqual([])
    expect(peers(bare("src/stores/index.ts"))).toEqual([])
    expect(bare("src/stores/index.ts").has("node:sqlite")).toBe(true)
  })
  it("Postgres and Redis load only their own drivers", () => {
    expect(peers(bare("src/stores/Postgres.ts"))).toEqual(["@effect/sql-pg"])
    expect(peers(bare("src/stores/Redis.ts")).sort()).toEqual(["@effect/platform-node/NodeRedis", "redis"])
  })
})

describe("integration entry points", () => {
  it("the main entry loads no framework and no integration", () => {
    expect(files("src/index.ts").length).toBeGreaterThan(40) // the scan follows the whole graph
    expect(frameworks(bare("src/index.ts"))).toEqual([])
    expect(files("src/index.ts").filter((f) => f.startsWith("src/integrations/"))).toEqual([])
  })

  it("each integration loads only its own framework", () => {
    expect(frameworks(bare("src/integrations/AiSdk.ts")).sort()).toEqual(["ai"])
    expect(frameworks(bare("src/integrations/LangChain.ts")).sort()).toEqual([
      "@langchain/core/messages",
      "@langchain/core/runnables",
      "@langchain/core/tools"
    ])
    expect(frameworks(bare("src/integrations/EffectAi.ts"))).toEqual([])
  })
})
