/**
 * The workspace: the one directory file and shell tools may touch. It owns the
 * root (absolute, symlinks resolved) and the rule that turns a model-given
 * relative path into an absolute path inside it. It does not read or write files.
 */
import { constants, existsSync } from "node:fs"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { Context, Data, Effect, Layer } from "effect"
import * as ToolError from "../contract/ToolError.ts"

/** The workspace root: an absolute real path (no symlinks in it). */
export interface WorkspaceShape {
  readonly root: string
}

/** The root given to `Workspace.layer` does not exist or is not a directory. */
export class InvalidWorkspaceRoot extends Data.TaggedError("InvalidWorkspaceRoot")<{
  readonly root: string
  readonly reason: string
}> {
  override get message(): string {
    return `invalid workspace root ${JSON.stringify(this.root)}: ${this.reason}`
  }
}

export class Workspace extends Context.Service<Workspace, WorkspaceShape>()("tinyagents/Workspace") {
  /** A workspace at `root` (resolved against the current directory, then to its real path). */
  static readonly layer = (root: string): Layer.Layer<Workspace, InvalidWorkspaceRoot> =>
    Layer.effect(
      Workspace,
      Effect.tryPromise({
        try: async () => {
          const real = await fs.realpath(path.resolve(root))
          if (!(await fs.stat(real)).isDirectory()) throw new Error("not a directory")
          return Workspace.of({ root: real })
        },
        catch: (error) =>
          new InvalidWorkspaceRoot({ root, reason: error instanceof Error ? error.message : String(error) })
      })
    )
}

/** A workspace at `root` (the same as `Workspace.layer`). */
export const layer: (root: string) => Layer.Layer<Workspace, InvalidWorkspaceRoot> = Workspace.layer

/** Which rule refused a path. */
export type PathRule = "empty" | "nul_byte" | "absolute" | "escapes_root" | "symlink_outside" | "unresolvable"

const refuse = (given: string, rule: PathRule, reason: string): ToolError.ToolFailure =>
  ToolError.repairable(`path ${JSON.stringify(given)} refused (${rule}): ${reason}`, { path: given, rule })

const isInside = (root: string, candidate: string): boolean => {
  const relative = path.relative(root, candidate)
  return relative === "" || (relative !== ".." && !relative.startsWith(`..${path.sep}`) && !path.isAbsolute(relative))
}

const errorCode = (error: unknown): string | undefined =>
  typeof error === "object" && error !== null && "code" in error && typeof error.code === "string"
    ? error.code
    : undefined

/**
 * Resolves a workspace-relative path to an absolute path inside the root.
 * Refuses empty paths, NUL bytes, absolute paths, `..` escapes and symlinks
 * leading outside: the deepest existing ancestor is resolved with `realpath`
 * and must stay under the root; missing parts are appended to it. Use the
 * returned path, not the given one. This is a check of the path string only:
 * a symlink swapped in after it is not caught here, so file tools open what it
 * returns with {@link openDirectoryInside} / {@link openFileInside}, which check
 * the opened file.
 */
export const resolveInside = Effect.fn("Workspace.resolveInside")(
  function*(relative: string): Effect.fn.Return<string, ToolError.ToolFailure, Workspace> {
    const { root } = yield* Workspace
    if (relative.length === 0) return yield* refuse(relative, "empty", "give a path relative to the workspace root")
    if (relative.includes("\0")) return yield* refuse(relative, "nul_byte", "paths may not contain NUL bytes")
    if (path.isAbsolute(relative)) {
      return yield* refuse(relative, "absolute", "absolute paths are not allowed; give a path relative to the workspace root")
    }
    const lexical = path.resolve(root, relative)
    if (!isInside(root, lexical)) {
      return yield* refuse(relative, "escapes_root", "\"..\" may not lead outside the workspace root")
    }
    const resolved = yield* Effect.tryPromise({
      try: () => realpathOfDeepestExisting(lexical),
      catch: (error) => refuse(relative, "unresolvable", `cannot resolve it (${errorCode(error) ?? String(error)})`)
    })
    if (resolved === undefined) {
      return yield* refuse(relative, "symlink_outside", "it goes through a symbolic link whose target does not exist")
    }
    if (!isInside(root, resolved)) {
      return yield* refuse(relative, "symlink_outside", "it goes through a symbolic link that leads outside the workspace")
    }
    return resolved
  }
)

/**
 * The real path of `absolute`: `realpath` of its deepest existing ancestor
 * joined with the missing rest, or `undefined` when a symlink on the way has
 * no target (its target could be created later, anywhere).
 */
const realpathOfDeepestExisting = async (absolute: string): Promise<string | undefined> => {
  const missing: Array<string> = []
  let current = absolute
  for (;;) {
    try {
      return path.join(await fs.realpath(current), ...missing.reverse())
    } catch (error) {
      const code = errorCode(error)
      if (code !== "ENOENT" && code !== "ENOTDIR") throw error
      const exists = await fs.lstat(current).then(() => true, () => false)
      if (exists && code === "ENOENT") return undefined
      const parent = path.dirname(current)
      if (parent === current) throw error
      missing.push(path.basename(current))
      current = parent
    }
  }
}

// ---------------------------------------------------------------------------
// opening files and directories inside the workspace, race-free on Linux
// ---------------------------------------------------------------------------

/**
 * True where the kernel names an open descriptor's file (`/proc/self/fd/<fd>`) and a
 * path can name an entry of an open directory through its descriptor
 * (`/proc/self/fd/<fd>/<name>`, like `openat`): Linux. There, a directory is checked
 * after it is opened, and files are opened and renamed through its descriptor, so a
 * symlink swapped in at any moment cannot lead a read or write outside. Elsewhere the
 * checks are by path string, repeated after opening: best effort under a concurrent swap.
 */
export const descriptorPaths: boolean = process.platform === "linux" && existsSync("/proc/self/fd")

const O_DIRECTORY = constants.O_DIRECTORY ?? 0
const O_NOFOLLOW = constants.O_NOFOLLOW ?? 0
const O_NONBLOCK = constants.O_NONBLOCK ?? 0

/** A symbolic link (or a non-directory) appeared where the checked path had a directory. */
const changed = (shown: string, reason: string): ToolError.ToolFailure =>
  ToolError.repairable(`path ${JSON.stringify(shown)} refused (symlink_outside): ${reason}`, {
    path: shown,
    rule: "symlink_outside"
  })

/** The real path of an open descriptor, from the kernel (`/proc/self/fd/<fd>`), or the checked path elsewhere. */
const pathOfDescriptor = async (handle: fs.FileHandle, fallback: string): Promise<string> => {
  if (!descriptorPaths) return fallback
  return fs.readlink(`/proc/self/fd/${handle.fd}`)
}

/** An open directory inside the workspace, checked after opening. */
export interface OpenDirectory {
  readonly handle: fs.FileHandle
  /** A path naming the entry `name` of this very directory (through its descriptor on Linux). */
  readonly entry: (name: string) => string
  readonly close: () => Promise<void>
}

/** Refuses an opened file or directory whose real location is not inside the root. */
const verifyInside = async (root: string, handle: fs.FileHandle, expected: string, shown: string): Promise<void> => {
  const actual = await pathOfDescriptor(handle, expected)
  if (!descriptorPaths) {
    // Best effort: the path must still resolve inside and to the very file that was opened.
    const [real, opened] = [await fs.realpath(expected), await handle.stat()]
    const now = await fs.stat(real)
    if (!isInside(root, real) || now.ino !== opened.ino || now.dev !== opened.dev) {
      throw changed(shown, "it changed while it was being opened")
    }
    return
  }
  if (!isInside(root, actual)) throw changed(shown, "the opened file is outside the workspace")
}

/**
 * Opens the directory `absolute` (inside `root`, as {@link resolveInside} returned it) and checks
 * that the directory opened is inside the root: on Linux the kernel's own path of the descriptor
 * (`/proc/self/fd/<fd>`) must be under the root, whatever symlink was swapped in on the way.
 * With `create`, missing components are created one at a time, each through the descriptor of
 * its checked parent, without following symlinks (`O_NOFOLLOW`): a component that is a symlink
 * fails (ELOOP), as `resolveInside` has already resolved every symlink and one found here was
 * swapped in. Elsewhere than Linux the walk is by path string and checked after opening.
 * Rejects with errno errors or a `ToolFailure`.
 */
export const openDirectoryInside = async (
  root: string,
  absolute: string,
  create: boolean,
  shown: string
): Promise<OpenDirectory> => {
  if (!isInside(root, absolute)) throw changed(shown, "it leads outside the workspace")
  const entryOf = (handle: fs.FileHandle, dir: string) => (name: string): string =>
    descriptorPaths ? `/proc/self/fd/${handle.fd}/${name}` : path.join(dir, name)
  let current: fs.FileHandle
  if (!create) {
    current = await fs.open(absolute, constants.O_RDONLY | O_DIRECTORY)
  } else {
    current = await fs.open(root, constants.O_RDONLY | O_DIRECTORY)
    let currentPath = root
    try {
      for (const component of path.relative(root, absolute).split(path.sep).filter((c) => c.length > 0)) {
        const next = entryOf(current, currentPath)(component)
        const openNext = () => fs.open(next, constants.O_RDONLY | O_DIRECTORY | O_NOFOLLOW)
        let opened: fs.FileHandle
        try {
          opened = await openNext()
        } catch (error) {
          if (errorCode(error) !== "ENOENT") throw error
          await fs.mkdir(next).catch((e: unknown) => {
            if (errorCode(e) !== "EEXIST") throw e
          })
          opened = await openNext()
        }
        await current.close()
        current = opened
        currentPath = path.join(currentPath, component)
      }
    } catch (error) {
      await current.close().catch(() => undefined)
      throw error
    }
  }
  try {
    await verifyInside(root, current, absolute, shown)
  } catch (error) {
    await current.close().catch(() => undefined)
    throw error
  }
  const handle = current
  return { handle, entry: entryOf(handle, absolute), close: () => handle.close() }
}

/**
 * Opens the file `absolute` (inside `root`, as {@link resolveInside} returned it) for reading:
 * its directory through {@link openDirectoryInside} (checked), the file itself through that
 * directory's descriptor with `O_NOFOLLOW` (and `O_NONBLOCK`, so a FIFO cannot block), so no file
 * outside is ever opened; then checks once more that the opened file is inside the root. Read
 * from the returned handle, never from the path.
 */
export const openFileInside = async (root: string, absolute: string, shown: string): Promise<fs.FileHandle> => {
  const flags = constants.O_RDONLY | O_NOFOLLOW | O_NONBLOCK
  if (absolute === root) return fs.open(root, flags)
  const directory = await openDirectoryInside(root, path.dirname(absolute), false, shown)
  let handle: fs.FileHandle
  try {
    handle = await fs.open(directory.entry(path.basename(absolute)), flags)
  } finally {
    await directory.close()
  }
  try {
    await verifyInside(root, handle, absolute, shown)
  } catch (error) {
    await handle.close().catch(() => undefined)
    throw error
  }
  return handle
}
