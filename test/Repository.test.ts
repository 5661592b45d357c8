/**
 * A clone is self-contained: no test, example, benchmark or script reads a path
 * outside the repository (a user's clone has nothing beside it).
 */
import { execFileSync } from "node:child_process"
import { readFileSync } from "node:fs"
import { dirname, join, relative, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"

const repo = fileURLToPath(new URL("..", import.meta.url))
const tracked = execFileSync("git", ["ls-files", "-co", "--exclude-standard"], { cwd: repo, encoding: "utf8" })
  .split("\n")
  .filter((file) => /\.(ts|js|mjs|json|sh)$/.test(file) || file.startsWith(".ci/"))
  .filter((file) => !file.startsWith("test/fixtures/") && file !== "package-lock.json")

describe("the repository", () => {
  it("has files to check", () => {
    expect(tracked.length).toBeGreaterThan(50)
  })

  it("reads nothing outside itself", () => {
    const outside: Array<string> = []
    for (const file of tracked) {
      let text: string
      try {
        text = readFileSync(join(repo, file), "utf8")
      } catch {
        continue // listed but deleted in the working tree
      }
      // Relative URLs and paths resolved against the file must stay inside the clone.
      for (const match of text.matchAll(/new URL\(\s*["'`](\.\.?\/[^"'`]*)["'`]\s*,\s*import\.meta\.url/g)) {
        const target = resolve(dirname(join(repo, file)), match[1]!)
        if (relative(repo, target).startsWith("..")) outside.push(`${file}: ${match[1]}`)
      }
      // The team's shared folder sits beside the clone on developer machines only.
      for (const match of text.matchAll(/["'`][^"'`\n]*\.\.\/shared\/[^"'`\n]*["'`]/g)) outside.push(`${file}: ${match[0]}`)
    }
    expect(outside).toEqual([])
  })
})
