/**
 * Module boundaries: a folder's `internal/` is that folder's business. No module
 * in `src/` imports another folder's `internal/` (statically, `from "..."` or
 * `import "..."`, or dynamically, `import("...")`); what another folder needs
 * becomes a public module of the owner, or moves to where it belongs.
 * `src/internal/` belongs to `src/` itself, so every folder may use it.
 */
import { readdirSync, readFileSync } from "node:fs"
import { dirname, join, normalize } from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"

const repo = fileURLToPath(new URL("..", import.meta.url))

/** Relative specifiers of a module: `from "..."`, `import "..."` and `import("...")`. */
const specifiers = (text: string): Array<string> =>
  [...text.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)(["'`])(\.{1,2}\/[^"'`]*)\1/g)].map((m) => m[2]!)

/** The folder owning the `internal/` that `target` (a repository path) lies in, or `undefined`. */
const internalOwner = (target: string): string | undefined => {
  const segments = target.split("/")
  const at = segments.lastIndexOf("internal")
  return at <= 0 ? undefined : segments.slice(0, at).join("/")
}

/** `importer -> target` for every import (of the given modules' texts) into another folder's `internal/`. */
const crossings = (modules: ReadonlyMap<string, string>): Array<string> => {
  const out: Array<string> = []
  for (const [file, text] of modules) {
    for (const specifier of specifiers(text)) {
      const target = normalize(join(dirname(file), specifier)).replaceAll("\\", "/")
      const owner = internalOwner(target)
      if (owner !== undefined && !`${dirname(file)}/`.startsWith(`${owner}/`)) out.push(`${file} -> ${target}`)
    }
  }
  return out
}

const sources = (folder: string): Map<string, string> => {
  const out = new Map<string, string>()
  const walk = (dir: string): void => {
    for (const entry of readdirSync(join(repo, dir), { withFileTypes: true })) {
      const path = `${dir}/${entry.name}`
      if (entry.isDirectory()) walk(path)
      else if (path.endsWith(".ts")) out.set(path, readFileSync(join(repo, path), "utf8"))
    }
  }
  walk(folder)
  return out
}

describe("module boundaries", () => {
  it("finds a crossing, static or dynamic, and allows a folder's own internal/ and src/internal/", () => {
    const modules = new Map([
      ["src/agent/Agent.ts", `import * as T from "../runtime/internal/executor/Tracing.ts"\nimport { a } from "./internal/tracing.ts"`],
      ["src/cli/Cli.ts", `const m = () => import("../durable/internal/tables.ts")\nconst n = () => import("./internal/journal.ts")`],
      ["src/stores/Redis.ts", `import { lazily } from "../internal/lazily.ts"\nexport { x } from "../providers/internal/content.ts"`],
      ["src/runtime/internal/executor/Call.ts", `import "../../../mcp/internal/side.ts"\nimport { S } from "../../StoreRegistry.ts"`],
      ["src/agent/models/internal/x.ts", `import { y } from "./y.ts"\nimport { z } from "../../internal/bm25.ts"`],
      ["src/agent/Selection.ts", `import { m } from "./models/internal/x.ts"`]
    ])
    expect(crossings(modules)).toEqual([
      "src/agent/Agent.ts -> src/runtime/internal/executor/Tracing.ts",
      "src/cli/Cli.ts -> src/durable/internal/tables.ts",
      "src/stores/Redis.ts -> src/providers/internal/content.ts",
      "src/runtime/internal/executor/Call.ts -> src/mcp/internal/side.ts",
      "src/agent/Selection.ts -> src/agent/models/internal/x.ts"
    ])
  })

  it("no module in src/ imports another folder's internal/", () => {
    const src = sources("src")
    expect(src.size).toBeGreaterThan(50)
    expect(crossings(src)).toEqual([])
  })
})
