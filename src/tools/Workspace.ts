/**
 * The workspace: the one directory file and shell tools may touch. It owns the
 * root (absolute, symlinks resolved) and the rule that turns a model-given
 * relative path into an absolute path inside it. It does not read or write files.
 */
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
 * returned path, not the given one. A symlink swapped in after the check is
 * not caught (no `openat2` in Node).
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
