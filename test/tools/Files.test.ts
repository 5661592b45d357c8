import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Result } from "effect"
import * as Tool from "../../src/contract/Tool.ts"
import { maxReadChars, readFile, writeFile } from "../../src/tools/Files.ts"
import { descriptorPaths, resolveInside, Workspace } from "../../src/tools/Workspace.ts"
import { count } from "../support/tier.ts"

/** A fresh workspace directory per test, removed afterwards. */
const withWorkspace = <A, E>(body: (root: string) => Effect.Effect<A, E, Workspace>) =>
  Effect.acquireUseRelease(
    Effect.sync(() => fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "tinyagents-files-")))),
    (root) => body(root).pipe(Effect.provide(Workspace.layer(root))),
    (root) => Effect.sync(() => fs.rmSync(root, { recursive: true, force: true }))
  )

const lines = (n: number): string => Array.from({ length: n }, (_, i) => `line ${i + 1}\n`).join("")

describe("Workspace", () => {
  it.effect("layer resolves the root to its real path", () =>
    withWorkspace((root) =>
      Effect.gen(function*() {
        fs.symlinkSync(root, `${root}-link`)
        const seen = yield* Effect.provide(Effect.map(Workspace, (w) => w), Workspace.layer(`${root}-link`))
        fs.unlinkSync(`${root}-link`)
        assert.strictEqual(seen.root, root)
      })
    ))

  it.effect("layer fails on a missing root", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(Effect.provide(Effect.map(Workspace, (w) => w), Workspace.layer("/no/such/dir/x")))
      assert.strictEqual(error._tag, "InvalidWorkspaceRoot")
    }))

  it.effect("resolveInside accepts paths inside, including ones that do not exist yet", () =>
    withWorkspace((root) =>
      Effect.gen(function*() {
        fs.mkdirSync(path.join(root, "a"))
        fs.symlinkSync(path.join(root, "a"), path.join(root, "inner-link"))
        assert.strictEqual(yield* resolveInside("x.txt"), path.join(root, "x.txt"))
        assert.strictEqual(yield* resolveInside("a/../b/c.txt"), path.join(root, "b", "c.txt"))
        assert.strictEqual(yield* resolveInside("."), root)
        assert.strictEqual(yield* resolveInside("inner-link/new.txt"), path.join(root, "a", "new.txt"))
      })
    ))

  const refusals: ReadonlyArray<readonly [string, string]> = [
    ["../x", "escapes_root"],
    ["/etc/passwd", "absolute"],
    ["a/../../x", "escapes_root"],
    ["out/secret.txt", "symlink_outside"],
    ["out", "symlink_outside"],
    ["dangling", "symlink_outside"],
    ["bad\0name", "nul_byte"],
    ["", "empty"]
  ]
  for (const [given, rule] of refusals) {
    it.effect(`resolveInside refuses ${JSON.stringify(given)} (${rule})`, () =>
      withWorkspace((root) =>
        Effect.gen(function*() {
          const outside = fs.mkdtempSync(path.join(os.tmpdir(), "tinyagents-outside-"))
          fs.writeFileSync(path.join(outside, "secret.txt"), "secret")
          fs.symlinkSync(outside, path.join(root, "out"))
          fs.symlinkSync(path.join(outside, "missing"), path.join(root, "dangling"))
          const error = yield* Effect.flip(resolveInside(given))
          fs.rmSync(outside, { recursive: true, force: true })
          assert.strictEqual(error._tag, "ToolFailure")
          assert.deepStrictEqual(error.detail, { path: given, rule })
          assert.include(error.message, JSON.stringify(given))
          assert.include(error.message, rule)
        })
      ))
  }
})

describe("read_file", () => {
  it.effect("reads a whole file with its line count", () =>
    withWorkspace((root) =>
      Effect.gen(function*() {
        fs.writeFileSync(path.join(root, "a.txt"), lines(3))
        const result = yield* readFile.handler({ path: "a.txt" })
        assert.deepStrictEqual(result, {
          path: "a.txt",
          content: lines(3),
          startLine: 1,
          endLine: 3,
          totalLines: 3,
          truncated: false
        })
      })
    ))

  it.effect("reads a range with offset and limit and points to the next line", () =>
    withWorkspace((root) =>
      Effect.gen(function*() {
        fs.writeFileSync(path.join(root, "a.txt"), lines(10))
        const result = yield* readFile.handler({ path: "a.txt", offset: 3, limit: 2 })
        assert.deepStrictEqual(result, {
          path: "a.txt",
          content: "line 3\nline 4\n",
          startLine: 3,
          endLine: 4,
          totalLines: 10,
          truncated: true,
          nextOffset: 5
        })
        const tail = yield* readFile.handler({ path: "a.txt", offset: 9 })
        assert.strictEqual(tail.content, "line 9\nline 10\n")
        assert.isFalse(tail.truncated)
      })
    ))

  it.effect("keeps a missing final newline and reads empty files", () =>
    withWorkspace((root) =>
      Effect.gen(function*() {
        fs.writeFileSync(path.join(root, "a.txt"), "one\ntwo")
        fs.writeFileSync(path.join(root, "empty.txt"), "")
        const a = yield* readFile.handler({ path: "a.txt", offset: 2 })
        assert.strictEqual(a.content, "two")
        assert.strictEqual(a.totalLines, 2)
        const empty = yield* readFile.handler({ path: "empty.txt" })
        assert.strictEqual(empty.content, "")
        assert.strictEqual(empty.totalLines, 0)
      })
    ))

  it.effect("cuts at a line boundary past the character cap", () =>
    withWorkspace((root) =>
      Effect.gen(function*() {
        const line = `${"x".repeat(999)}\n`
        fs.writeFileSync(path.join(root, "big.txt"), line.repeat(150))
        const result = yield* readFile.handler({ path: "big.txt" })
        assert.strictEqual(result.content.length, maxReadChars)
        assert.strictEqual(result.endLine, 100)
        assert.strictEqual(result.nextOffset, 101)
        assert.isTrue(result.truncated)
      })
    ))

  it.effect("refuses an offset past the end", () =>
    withWorkspace((root) =>
      Effect.gen(function*() {
        fs.writeFileSync(path.join(root, "a.txt"), lines(2))
        const error = yield* Effect.flip(readFile.handler({ path: "a.txt", offset: 5 }))
        assert.match(error.message, /from line 5: the file has 2 lines/)
      })
    ))

  it.effect("refuses directories, binary files, invalid UTF-8 and missing files", () =>
    withWorkspace((root) =>
      Effect.gen(function*() {
        fs.mkdirSync(path.join(root, "dir"))
        fs.writeFileSync(path.join(root, "bin"), Buffer.from([0x41, 0x00, 0x42]))
        fs.writeFileSync(path.join(root, "latin1"), Buffer.from([0x63, 0x61, 0x66, 0xe9]))
        const messages = yield* Effect.forEach(
          ["dir", "bin", "latin1", "nope.txt"],
          (p) => Effect.map(Effect.flip(readFile.handler({ path: p })), (e) => `${e._tag}: ${e.message}`)
        )
        assert.deepStrictEqual(messages, [
          "ToolFailure: cannot read \"dir\": it is a directory, not a file",
          "ToolFailure: cannot read \"bin\": it is a binary file (contains NUL bytes)",
          "ToolFailure: cannot read \"latin1\": it is not valid UTF-8 text",
          "ToolFailure: cannot read \"nope.txt\": no such file or directory"
        ])
      })
    ))

  it.effect("refuses paths outside the workspace", () =>
    withWorkspace(() =>
      Effect.gen(function*() {
        const error = yield* Effect.flip(readFile.handler({ path: "/etc/passwd" }))
        assert.strictEqual(error._tag, "ToolFailure")
        assert.match(error.message, /"\/etc\/passwd" refused \(absolute\)/)
      })
    ))
})

describe("write_file", () => {
  it.effect("writes, reads back and overwrites, leaving no temporary files", () =>
    withWorkspace((root) =>
      Effect.gen(function*() {
        const first = yield* writeFile.handler({ path: "notes.md", content: "héllo\nworld\n" })
        assert.deepStrictEqual(first, { path: "notes.md", bytesWritten: 13, created: true })
        const read = yield* readFile.handler({ path: "notes.md" })
        assert.strictEqual(read.content, "héllo\nworld\n")
        fs.chmodSync(path.join(root, "notes.md"), 0o600)
        const second = yield* writeFile.handler({ path: "notes.md", content: "bye" })
        assert.deepStrictEqual(second, { path: "notes.md", bytesWritten: 3, created: false })
        assert.strictEqual(fs.readFileSync(path.join(root, "notes.md"), "utf8"), "bye")
        assert.strictEqual(fs.statSync(path.join(root, "notes.md")).mode & 0o777, 0o600)
        assert.deepStrictEqual(fs.readdirSync(root), ["notes.md"])
      })
    ))

  it.effect("creates parent directories only when asked", () =>
    withWorkspace((root) =>
      Effect.gen(function*() {
        const error = yield* Effect.flip(writeFile.handler({ path: "a/b/c.txt", content: "x" }))
        assert.match(error.message, /directory does not exist; pass createDirectories: true/)
        yield* writeFile.handler({ path: "a/b/c.txt", content: "x", createDirectories: true })
        assert.strictEqual(fs.readFileSync(path.join(root, "a/b/c.txt"), "utf8"), "x")
        assert.deepStrictEqual(fs.readdirSync(path.join(root, "a/b")), ["c.txt"])
      })
    ))

  it.effect("refuses directories and escapes, writing nothing", () =>
    withWorkspace((root) =>
      Effect.gen(function*() {
        const outside = fs.mkdtempSync(path.join(os.tmpdir(), "tinyagents-outside-"))
        fs.symlinkSync(outside, path.join(root, "out"))
        fs.mkdirSync(path.join(root, "dir"))
        const messages = yield* Effect.forEach(
          ["dir", "../x", "a/../../x", "out/x.txt", "/tmp/x", "x\0y"],
          (p) => Effect.map(Effect.flip(writeFile.handler({ path: p, content: "x" })), (e) => e.message)
        )
        const written = fs.readdirSync(outside)
        fs.rmSync(outside, { recursive: true, force: true })
        assert.match(messages[0]!, /it is a directory/)
        assert.match(messages[1]!, /escapes_root/)
        assert.match(messages[2]!, /escapes_root/)
        assert.match(messages[3]!, /symlink_outside/)
        assert.match(messages[4]!, /absolute/)
        assert.match(messages[5]!, /nul_byte/)
        assert.deepStrictEqual(written, [])
        assert.deepStrictEqual(fs.readdirSync(root).sort(), ["dir", "out"])
      })
    ))

  it("declares honest safety", () => {
    assert.deepStrictEqual(readFile.safety, { access: "read", idempotent: true, filesystem: true })
    assert.deepStrictEqual(writeFile.safety, { access: "write", idempotent: true, filesystem: true, destructive: true })
    assert.deepStrictEqual(readFile.services, [Workspace])
    assert.isTrue(Result.isSuccess(Tool.spec(readFile)))
    assert.isTrue(Result.isSuccess(Tool.spec(writeFile)))
  })
})

/**
 * Calls per race test: `TINYAGENTS_RACE_ITERATIONS` (500 under `npm test`, 3,000 under `npm run test:full`, at most 100,000). Each race
 * also stops after {@link raceBudgetMillis} of real time, whatever the count.
 */
const raceIterations = Math.min(100_000, count("TINYAGENTS_RACE_ITERATIONS", 500, 3_000))
const raceBudgetMillis = 20_000

/**
 * Where the race tests put their directories: a tmpfs (`/dev/shm`) where there is one, because
 * there `fsync` costs nothing and no journal commit stalls the swapper's renames between calls.
 */
const raceTmp = (() => {
  try {
    fs.accessSync("/dev/shm", fs.constants.W_OK)
    return "/dev/shm"
  } catch {
    return os.tmpdir()
  }
})()

/** {@link withWorkspace}, under {@link raceTmp}. */
const withRaceWorkspace = <A, E>(body: (root: string) => Effect.Effect<A, E, Workspace>) =>
  Effect.acquireUseRelease(
    Effect.sync(() => fs.realpathSync(fs.mkdtempSync(path.join(raceTmp, "tinyagents-race-")))),
    (root) => body(root).pipe(Effect.provide(Workspace.layer(root))),
    (root) => Effect.sync(() => fs.rmSync(root, { recursive: true, force: true }))
  )

/**
 * A workspace with `d` (a directory holding `f.txt` = "inside") and `g.txt` (= "inside") and,
 * outside, a directory holding `f.txt` = "OUTSIDE"; a separate process swaps `d` between the real
 * directory and a symlink to the outside directory (and with `swapFile`, `g.txt` between the file
 * and a symlink to the outside `f.txt`) as fast as it can, until the body ends.
 */
const withSwapRace = <A, E>(
  swapFile: boolean,
  body: (root: string, outside: string) => Effect.Effect<A, E, Workspace>
) =>
  withRaceWorkspace((root) =>
    Effect.acquireUseRelease(
      Effect.sync(() => {
        const outside = fs.realpathSync(fs.mkdtempSync(path.join(raceTmp, "tinyagents-outside-")))
        fs.writeFileSync(path.join(outside, "f.txt"), "OUTSIDE")
        fs.mkdirSync(path.join(root, "d"))
        fs.writeFileSync(path.join(root, "d", "f.txt"), "inside")
        fs.symlinkSync(outside, path.join(root, "link"))
        fs.writeFileSync(path.join(root, "g.txt"), "inside")
        fs.symlinkSync(path.join(outside, "f.txt"), path.join(root, "g-link"))
        const script = `const fs = require("node:fs"); const [r, f] = process.argv.slice(1); const swapFile = f === "true";
          const mv = (a, b) => { try { fs.renameSync(r + "/" + a, r + "/" + b); return true } catch { return false } };
          process.stdout.write("swapping\\n");
          for (;;) {
            mv("d", "real"); mv("link", "d"); mv("d", "link")
            // While "d" was missing, a write with createDirectories may have made a new "d": drop it.
            if (!mv("real", "d")) { fs.rmSync(r + "/d", { recursive: true, force: true }); mv("real", "d") }
            if (swapFile) { mv("g.txt", "g-real"); mv("g-link", "g.txt"); mv("g.txt", "g-link"); mv("g-real", "g.txt") }
          }`
        const swapper = spawn(process.execPath, ["-e", script, root, String(swapFile)], {
          stdio: ["ignore", "pipe", "ignore"]
        })
        return { outside, swapper }
      }).pipe(
        // The race starts once the swapper runs.
        Effect.tap(({ swapper }) =>
          Effect.promise(() =>
            new Promise<void>((resolve) => {
              swapper.stdout!.once("data", () => resolve())
              swapper.once("exit", () => resolve())
              setTimeout(resolve, 5_000)
            })
          )
        )
      ),
      ({ outside }) => body(root, outside),
      ({ outside, swapper }) =>
        Effect.sync(() => {
          swapper.kill("SIGKILL")
          fs.rmSync(outside, { recursive: true, force: true })
        })
    )
  )

describe("symlink swap race", () => {
  it("the file tools open through descriptors on Linux", () => {
    if (process.platform === "linux") assert.isTrue(descriptorPaths)
  })

  it.live(`reads: zero of ${raceIterations} return content from outside the workspace`, () =>
    withSwapRace(true, () =>
      Effect.gen(function*() {
        const deadline = Date.now() + raceBudgetMillis
        const outcomes = { inside: 0, outside: 0, refused: 0, skipped: 0 }
        yield* Effect.forEach(
          Array.from({ length: raceIterations }, (_, i) => i),
          (i) =>
            Date.now() > deadline
              ? Effect.sync(() => void outcomes.skipped++)
              : readFile.handler({ path: i % 2 === 0 ? "d/f.txt" : "g.txt" }).pipe(
                Effect.match({
                  onFailure: () => void outcomes.refused++,
                  onSuccess: (r) => void (r.content === "inside" ? outcomes.inside++ : outcomes.outside++)
                })
              ),
          { concurrency: 4, discard: true }
        )
        console.log(`symlink swap race, reads: ${JSON.stringify(outcomes)}`)
        assert.strictEqual(outcomes.outside, 0, "reads that returned content from outside the workspace")
        assert.isAbove(outcomes.inside, 0, "no read succeeded: the race did not exercise the tool")
      })
    ), 60_000)

  it.live(`writes: zero of ${raceIterations} create or change files outside the workspace`, () =>
    withSwapRace(false, (_root, outside) =>
      Effect.gen(function*() {
        // Every name created outside, even a temporary file renamed away at once, is an escape.
        const created = new Set<string>()
        const watcher = fs.watch(outside, { recursive: true }, (_event, name) => {
          if (name !== null && name !== "f.txt") created.add(String(name))
        })
        const deadline = Date.now() + raceBudgetMillis
        const outcomes = { written: 0, refused: 0, skipped: 0 }
        yield* Effect.forEach(
          Array.from({ length: raceIterations }, (_, i) => i),
          (i) =>
            Date.now() > deadline
              ? Effect.sync(() => void outcomes.skipped++)
              : writeFile.handler(
                i % 4 !== 3
                  ? { path: `d/w${i % 50}.txt`, content: "x" }
                  : { path: `d/n${i % 20}/w.txt`, content: "x", createDirectories: true }
              ).pipe(
                Effect.match({ onFailure: () => void outcomes.refused++, onSuccess: () => void outcomes.written++ })
              ),
          { concurrency: 4, discard: true }
        )
        yield* Effect.sleep("50 millis") // let the last events arrive
        watcher.close()
        const landed = (fs.readdirSync(outside, { recursive: true }) as Array<string>).filter((name) => name !== "f.txt")
        console.log(
          `symlink swap race, writes: ${JSON.stringify({ ...outcomes, createdOutside: created.size, leftOutside: landed.length })}`
        )
        assert.deepStrictEqual(landed, [], "files left outside the workspace")
        assert.deepStrictEqual([...created], [], "files created outside the workspace, even for a moment")
        assert.strictEqual(fs.readFileSync(path.join(outside, "f.txt"), "utf8"), "OUTSIDE")
        assert.isAbove(outcomes.written, 0, "no write succeeded: the race did not exercise the tool")
      })
    ), 60_000)
})
