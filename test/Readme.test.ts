/**
 * The documentation (README.md and every .md file under docs/) cannot drift from the code:
 * - every TypeScript block is preceded by `<!-- file: path -->` and is that
 *   file, whole (the file is type-checked with the project and run here once,
 *   however many pages show it, or by the test named in `runElsewhere`); a
 *   `text` block preceded by `<!-- output: path -->` is what running that file
 *   prints, and one preceded by `<!-- output of: npm run tinyagents -- args -->`
 *   is what that command prints (the command is shown on the same page);
 * - every dotted name of ours in inline code (`ToolRegistry.resolve`,
 *   `RunContext.layer`, `Models.OpenAiChatModel.layerConfig`) exists: as a value
 *   at run time, or as an exported type of the module's source;
 * - every `npm run X` is a script, every environment variable the library,
 *   the examples or the demo read is documented (on some page), and every
 *   relative link points to a file of the repository (and its `#anchor` to a
 *   heading of that page).
 */
import { execFile } from "node:child_process"
import { existsSync, readdirSync, readFileSync } from "node:fs"
import { dirname, join, relative, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"
import { compileCache } from "./support/compileCache.ts"

const repo = fileURLToPath(new URL("..", import.meta.url))

/** Markdown files under `dir` (relative to the repository), sorted. */
const markdownIn = (dir: string): Array<string> =>
  existsSync(join(repo, dir))
    ? readdirSync(join(repo, dir), { withFileTypes: true }).flatMap((entry) =>
      entry.isDirectory() ? markdownIn(join(dir, entry.name)) : entry.name.endsWith(".md") ? [join(dir, entry.name)] : []
    ).sort()
    : []

/** Every page of the documentation, by path relative to the repository. */
const pages: ReadonlyArray<{ readonly path: string; readonly text: string }> = ["README.md", ...markdownIn("docs")].map((path) => ({
  path,
  text: readFileSync(join(repo, path), "utf8")
}))

/** Files the documentation shows that need something only another test provides (a loopback model server, a database). */
const runElsewhere: Record<string, string> = {
  "scratchpad/quickstart.ts": "test/Quickstart.test.ts",
  "scratchpad/production.ts": "test/Production.test.ts",
  "scratchpad/stores-redis.ts": "test/stores/Redis.test.ts",
  "scratchpad/stores-postgres.ts": "test/stores/Postgres.test.ts"
}

type Marker =
  | { readonly kind: "file" | "output"; readonly path: string }
  | { readonly kind: "command"; readonly command: string }

interface Block {
  readonly page: string
  readonly lang: string
  readonly body: string
  readonly marker: Marker | undefined
  readonly line: number
}

const blocksOf = (page: string, text: string): Array<Block> => {
  const out: Array<Block> = []
  const lines = text.split("\n")
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\w*)\s*$/.exec(lines[i]!)
    if (open === null) continue
    const start = i
    const body: Array<string> = []
    for (i++; i < lines.length && lines[i] !== "```"; i++) body.push(lines[i]!)
    let previous = start - 1
    while (previous >= 0 && lines[previous]!.trim() === "") previous--
    const comment = previous >= 0 ? lines[previous]!.trim() : ""
    const file = /^<!-- (file|output): (\S+) -->$/.exec(comment)
    const command = /^<!-- output of: (npm run tinyagents -- .+) -->$/.exec(comment)
    out.push({
      page,
      lang: open[1]!,
      body: body.join("\n"),
      marker: file !== null
        ? { kind: file[1] as "file" | "output", path: file[2]! }
        : command !== null
        ? { kind: "command", command: command[1]! }
        : undefined,
      line: start + 1
    })
  }
  return out
}

const blocks: ReadonlyArray<Block> = pages.flatMap((page) => blocksOf(page.path, page.text))

/** Splits a shell command line into words (single quotes only, as the pages write them). */
const words = (line: string): Array<string> =>
  [...line.matchAll(/'([^']*)'|(\S+)/g)].map((m) => m[1] ?? m[2]!)

/**
 * Runs `node --conditions=tinyagents-source ...args` in the repository, with a minimal environment.
 * Asynchronous, so that the runs below (`it.concurrent`) overlap: each is mostly a Node process
 * starting, and one at a time they left a core idle at the end of `npm test`.
 */
const run = (args: ReadonlyArray<string>) =>
  new Promise<{ readonly status: number | null; readonly stdout: string; readonly stderr: string }>((done) => {
    execFile(process.execPath, ["--conditions=tinyagents-source", ...args], {
      cwd: repo,
      encoding: "utf8",
      timeout: 60_000,
      maxBuffer: 16 * 1024 * 1024,
      env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", ...compileCache }
    }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === "number" ? error.code : null
      done({ status: code, stdout, stderr })
    })
  })

/** The prose of every page: code blocks left out. */
const prose = pages.map((page) => page.text.replace(/^```[\s\S]*?^```/gm, "")).join("\n")

describe("documentation code blocks", () => {
  const code = blocks.filter((b) => b.lang === "ts" || b.lang === "typescript")

  it("has TypeScript examples", () => {
    expect(code.length).toBeGreaterThan(0)
  })

  for (const block of code) {
    it(`${block.page} line ${block.line}: is a file of the repository, whole`, () => {
      expect(block.marker?.kind, `the block at ${block.page} line ${block.line} needs <!-- file: path --> before it`).toBe("file")
      const path = (block.marker as { readonly path: string }).path
      expect(existsSync(join(repo, path)), path).toBe(true)
      expect(block.body.trimEnd()).toBe(readFileSync(join(repo, path), "utf8").trimEnd())
    })
  }

  const shown = [...new Set(code.flatMap((b) => (b.marker?.kind === "file" ? [b.marker.path] : [])))]
  for (const path of shown) {
    const elsewhere = runElsewhere[path]
    if (elsewhere !== undefined) {
      it(`${path} is run by ${elsewhere}`, () => {
        expect(readFileSync(join(repo, elsewhere), "utf8")).toContain(path)
      })
      continue
    }
    it.concurrent(`${path} runs, and prints what the pages say it prints`, { timeout: 90_000 }, async () => {
      const result = await run([path])
      expect(result.status, result.stderr).toBe(0)
      for (const output of blocks.filter((b) => b.marker?.kind === "output" && b.marker.path === path)) {
        expect(result.stdout.trimEnd(), `${output.page} line ${output.line}`).toBe(output.body.trimEnd())
      }
    })
  }

  it("every output block belongs to a shown file", () => {
    for (const output of blocks.filter((b) => b.marker?.kind === "output")) {
      expect(shown).toContain((output.marker as { readonly path: string }).path)
    }
  })

  const script = (JSON.parse(readFileSync(join(repo, "package.json"), "utf8")) as { scripts: Record<string, string> }).scripts["tinyagents"]!
  for (const block of blocks.filter((b) => b.marker?.kind === "command")) {
    const command = (block.marker as { readonly command: string }).command
    it.concurrent(`${block.page} line ${block.line}: \`${command}\` prints what the page shows`, { timeout: 90_000 }, async () => {
      const page = pages.find((p) => p.path === block.page)!
      expect(page.text.split("\n"), "the command is shown on the page").toContain(command)
      // `npm run tinyagents -- args` runs the script's node command with the args
      const [node, ...scriptArgs] = words(script)
      expect(node).toBe("node")
      const result = await run([...scriptArgs.filter((a) => a !== "--conditions=tinyagents-source"), ...words(command.slice("npm run tinyagents -- ".length))])
      expect(result.stdout.trimEnd(), result.stderr).toBe(block.body.trimEnd())
    })
  }
})

// ---------------------------------------------------------------------------
// names
// ---------------------------------------------------------------------------

interface Node {
  readonly value: unknown
  /** The module source the value came from, while we are still walking modules. */
  readonly source: string | undefined
}

const namespacesOf = (indexFile: string): Map<string, string> => {
  const text = readFileSync(indexFile, "utf8")
  const out = new Map<string, string>()
  for (const match of text.matchAll(/export \* as (\w+) from "(\.[^"]+)"/g)) {
    out.set(match[1]!, resolve(dirname(indexFile), match[2]!))
  }
  return out
}

const declaresExport = (source: string, name: string): boolean => {
  const text = readFileSync(source, "utf8")
  const declared = new RegExp(`export\\s+(declare\\s+)?(type|interface|class|const|function|namespace|enum)\\s+${name}\\b`)
  const listed = new RegExp(`export\\s+(type\\s+)?\\{[^}]*\\b${name}\\b[^}]*\\}`)
  return declared.test(text) || listed.test(text)
}

const step = (node: Node, segment: string): Node | "type" | undefined => {
  if (node.source !== undefined) {
    const nested = node.source.endsWith("index.ts") ? namespacesOf(node.source).get(segment) : undefined
    const value = (node.value as Record<string, unknown>)[segment]
    if (nested !== undefined) return { value, source: nested }
    if (value !== undefined) return { value, source: undefined }
    return declaresExport(node.source, segment) ? "type" : undefined
  }
  if (node.value === null || node.value === undefined) return undefined
  const value = (node.value as Record<string, unknown>)[segment]
  return value === undefined && !(segment in Object(node.value)) ? undefined : { value, source: undefined }
}

describe("documentation names and links", () => {
  it("every name of ours in inline code exists", async () => {
    const roots = new Map<string, Node>()
    const entries: ReadonlyArray<readonly [string, string]> = [
      ["tinyagents", "src/index.ts"],
      ["tinyagents/tools", "src/tools/index.ts"],
      ["tinyagents/providers", "src/providers/index.ts"],
      ["tinyagents/models", "src/agent/models/index.ts"],
      ["tinyagents/middleware", "src/governance/middleware/index.ts"],
      ["tinyagents/mcp", "src/mcp/index.ts"]
    ]
    for (const [specifier, file] of entries) {
      const module = (await import(specifier)) as Record<string, unknown>
      for (const [name, source] of namespacesOf(join(repo, file))) {
        roots.set(name, { value: module[name], source })
      }
    }
    // A name used without a namespace in prose (`summary(...)`, `stack(...)`) is not checked here.
    const checked: Array<string> = []
    const missing: Array<string> = []
    for (const span of prose.matchAll(/`([^`\n]+)`/g)) {
      for (const match of span[1]!.matchAll(/(?<![\w$./-])[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+/g)) {
        const [first, ...rest] = match[0].split(".")
        let node: Node | "type" | undefined = roots.get(first!)
        if (node === undefined) continue
        checked.push(match[0])
        for (const segment of rest) {
          if (node === "type" || node === undefined) break
          node = step(node, segment)
        }
        if (node === undefined) missing.push(match[0])
      }
    }
    expect(checked.length).toBeGreaterThan(30)
    expect([...new Set(missing)]).toEqual([])
  })

  it("every `npm run` script exists", () => {
    const scripts = (JSON.parse(readFileSync(join(repo, "package.json"), "utf8")) as { scripts: Record<string, string> }).scripts
    const named = pages.flatMap((page) => [...page.text.matchAll(/npm run ([\w:-]+)/g)].map((m) => m[1]!))
    expect(named.length).toBeGreaterThan(0)
    expect(named.filter((name) => scripts[name] === undefined)).toEqual([])
  })

  it("every environment variable read by the library, the examples and the demo is documented", () => {
    const files = (dir: string): Array<string> =>
      readdirSync(join(repo, dir), { withFileTypes: true }).flatMap((entry) =>
        entry.isDirectory() ? files(join(dir, entry.name)) : entry.name.endsWith(".ts") ? [join(dir, entry.name)] : []
      )
    // Upper-snake string literals are environment variables, except these wire-format constants.
    const notVariables = new Set([
      "TYPE_UNSPECIFIED",
      // Gemini finish reasons and Google API statuses
      "PROHIBITED_CONTENT",
      "IMAGE_SAFETY",
      "FINISH_REASON_UNSPECIFIED",
      "MAX_TOKENS",
      "RESOURCE_EXHAUSTED",
      "DEADLINE_EXCEEDED",
      // error codes: DNS, Node, SQLite
      "EAI_AGAIN",
      "ERR_INVALID_URL",
      "ERR_UNKNOWN_FILE_EXTENSION",
      "SQLITE_BUSY",
      "SQLITE_LOCKED",
      "SQLITE_AUTH",
      "SQLITE_PERM"
    ])
    const variables = new Set<string>()
    for (const file of [...files("src"), ...files("scratchpad")]) {
      const text = readFileSync(join(repo, file), "utf8")
      for (const m of text.matchAll(/process\.env\.([A-Z][A-Z0-9_]+)|["']([A-Z][A-Z0-9]*_[A-Z0-9_]+)["']/g)) {
        const name = m[1] ?? m[2]!
        if (!notVariables.has(name)) variables.add(name)
      }
    }
    expect(variables.size).toBeGreaterThan(0)
    expect([...variables].filter((name) => !pages.some((page) => page.text.includes(`\`${name}\``)))).toEqual([])
  })

  it("every relative link points to a file of the repository, and every #anchor to a heading of its page", () => {
    const anchorsOf = new Map<string, Set<string>>()
    for (const page of pages) anchorsOf.set(page.path, anchors(page.text))
    const broken: Array<string> = []
    let links = 0
    for (const page of pages) {
      const text = page.text.replace(/^```[\s\S]*?^```/gm, "").replace(/`[^`\n]*`/g, "")
      for (const match of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = match[1]!
        if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue // https:, mailto:
        links++
        const [file, anchor] = target.split("#") as [string, string | undefined]
        const path = file === "" ? page.path : relative(repo, resolve(repo, dirname(page.path), file))
        if (path.startsWith("..") || !existsSync(join(repo, path))) {
          broken.push(`${page.path}: ${target} (no file ${path})`)
          continue
        }
        if (anchor === undefined) continue
        const targetAnchors = anchorsOf.get(path)
        if (targetAnchors === undefined) broken.push(`${page.path}: ${target} (an anchor into a file that is not a page)`)
        else if (!targetAnchors.has(anchor)) broken.push(`${page.path}: ${target} (no heading #${anchor} in ${path})`)
      }
    }
    expect(links).toBeGreaterThan(10)
    expect(broken).toEqual([])
  })
})

/** The anchors GitHub gives a page's headings: lower case, punctuation dropped, spaces as `-`, repeats numbered. */
const anchors = (text: string): Set<string> => {
  const out = new Set<string>()
  const seen = new Map<string, number>()
  for (const match of text.replace(/^```[\s\S]*?^```/gm, "").matchAll(/^#{1,6} (.+)$/gm)) {
    const slug = match[1]!.trim().toLowerCase().replace(/[^\p{L}\p{N} _-]/gu, "").replace(/ /g, "-")
    const n = seen.get(slug) ?? 0
    seen.set(slug, n + 1)
    out.add(n === 0 ? slug : `${slug}-${n}`)
  }
  return out
}
