/**
 * The `read_file` and `write_file` tools: UTF-8 text files inside the
 * workspace, read by line ranges and written atomically. Path confinement
 * belongs to `Workspace`; this module owns reading, writing and their limits.
 * Both tools check the file they opened, not the path string: they read from
 * and write through descriptors opened by `openFileInside` /
 * `openDirectoryInside`, so a symlink swapped in during a call cannot make
 * them read or write outside the workspace (race-free on Linux).
 */
import { randomUUID } from "node:crypto"
import { constants } from "node:fs"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { Effect, Schema } from "effect"
import * as Tool from "../contract/Tool.ts"
import * as ToolError from "../contract/ToolError.ts"
import { type OpenDirectory, openDirectoryInside, openFileInside, resolveInside, Workspace } from "./Workspace.ts"

/** Lines `read_file` returns when no `limit` is given. */
export const defaultReadLimit = 2_000

/** Most lines one `read_file` call may ask for. */
export const maxReadLimit = 10_000

/** Most characters of text one `read_file` call returns; longer ranges are cut at a line boundary. */
export const maxReadChars = 100_000

/** Largest file either tool handles, in bytes. */
export const maxFileBytes = 10 * 1024 * 1024

// ---------------------------------------------------------------------------
// file system errors
// ---------------------------------------------------------------------------

const errorCode = (error: unknown): string | undefined =>
  typeof error === "object" && error !== null && "code" in error && typeof error.code === "string"
    ? error.code
    : undefined

const repairableCodes: Readonly<Record<string, string>> = {
  ENOENT: "no such file or directory",
  ENOTDIR: "a part of the path is not a directory",
  EISDIR: "it is a directory",
  EACCES: "permission denied",
  EPERM: "operation not permitted",
  EEXIST: "it already exists",
  ELOOP: "too many levels of symbolic links",
  ENAMETOOLONG: "the name is too long",
  ENOSPC: "no space left on the device",
  EROFS: "the file system is read-only"
}

const transientCodes: ReadonlySet<string> = new Set(["EMFILE", "ENFILE", "EAGAIN", "EBUSY", "EINTR"])

/** Runs a file system call: user-fixable errno codes are repairable, resource exhaustion retryable, the rest defects. */
const attempt = <A>(
  operation: string,
  shown: string,
  run: (signal: AbortSignal) => Promise<A>
): Effect.Effect<A, ToolError.ToolFailure | ToolError.ToolTransient> =>
  Effect.tryPromise({ try: run, catch: (error) => error }).pipe(
    Effect.catch((error): Effect.Effect<never, ToolError.ToolFailure | ToolError.ToolTransient> => {
      if (error instanceof ToolError.ToolFailure) return Effect.fail(error)
      const code = errorCode(error)
      const known = code === undefined ? undefined : repairableCodes[code]
      if (known !== undefined) {
        return Effect.fail(ToolError.repairable(`cannot ${operation} ${JSON.stringify(shown)}: ${known}`, { code }))
      }
      if (code !== undefined && transientCodes.has(code)) {
        return Effect.fail(ToolError.retryable(`cannot ${operation} ${JSON.stringify(shown)}: ${code}`, error))
      }
      return Effect.die(error)
    })
  )

const statOrUndefined = (absolute: string) => fs.stat(absolute).catch((error: unknown) => {
  if (errorCode(error) === "ENOENT") return undefined
  throw error
})

// ---------------------------------------------------------------------------
// read_file
// ---------------------------------------------------------------------------

/** Offsets where each line starts; a final newline does not start a new line. */
const lineStarts = (text: string): Array<number> => {
  if (text.length === 0) return []
  const starts = [0]
  for (let i = text.indexOf("\n"); i !== -1 && i + 1 < text.length; i = text.indexOf("\n", i + 1)) starts.push(i + 1)
  return starts
}

const decoder = new TextDecoder("utf-8", { fatal: true })

/** Reads a range of lines of a UTF-8 text file in the workspace. */
export const readFile = Tool.make("read_file", {
  description: "Read a UTF-8 text file inside the workspace, by lines. `offset` is the first line to return (1-based, " +
    `default 1); \`limit\` the number of lines (default ${defaultReadLimit}, at most ${maxReadLimit}). ` +
    `Returns the text exactly as stored, the line range, the file's total line count, and \`truncated\` with ` +
    `\`nextOffset\` when more lines follow; at most ${maxReadChars} characters per call. ` +
    "Refuses paths outside the workspace (absolute, \"..\", symlinks out), directories, non-regular files, " +
    `binary files (NUL bytes or invalid UTF-8) and files over ${maxFileBytes} bytes. No side effects.`,
  input: Schema.Struct({
    path: Schema.String.annotate({ description: "File path relative to the workspace root" }),
    offset: Schema.optionalKey(
      Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)).annotate({ description: "First line to return, 1-based" })
    ),
    limit: Schema.optionalKey(
      Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: maxReadLimit })).annotate({
        description: "Number of lines to return"
      })
    )
  }),
  output: Schema.Struct({
    path: Schema.String,
    content: Schema.String,
    startLine: Schema.Number,
    endLine: Schema.Number,
    totalLines: Schema.Number,
    truncated: Schema.Boolean,
    nextOffset: Schema.optionalKey(Schema.Number)
  }),
  services: [Workspace],
  safety: { access: "read", idempotent: true, filesystem: true },
  handler: Effect.fn("read_file")(function*({ path: given, offset = 1, limit = defaultReadLimit }) {
    const absolute = yield* resolveInside(given)
    const { root } = yield* Workspace
    // The checks and the read are on the opened file, never on the path again (a symlink
    // swapped in after `resolveInside` is not followed; see `openFileInside`).
    const bytes = yield* Effect.acquireUseRelease(
      attempt("read", given, () => openFileInside(root, absolute, given)),
      (handle) =>
        Effect.gen(function*() {
          const stat = yield* attempt("read", given, () => handle.stat())
          if (stat.isDirectory()) {
            return yield* ToolError.repairable(`cannot read ${JSON.stringify(given)}: it is a directory, not a file`)
          }
          if (!stat.isFile()) {
            return yield* ToolError.repairable(`cannot read ${JSON.stringify(given)}: it is not a regular file`)
          }
          if (stat.size > maxFileBytes) {
            return yield* ToolError.repairable(
              `cannot read ${JSON.stringify(given)}: it is ${stat.size} bytes; the limit is ${maxFileBytes}`
            )
          }
          return yield* attempt("read", given, (signal) => handle.readFile({ signal }))
        }),
      (handle) => Effect.promise(() => handle.close().catch(() => undefined))
    )
    if (bytes.byteLength > maxFileBytes) {
      return yield* ToolError.repairable(`cannot read ${JSON.stringify(given)}: it grew over ${maxFileBytes} bytes`)
    }
    if (bytes.includes(0)) {
      return yield* ToolError.repairable(`cannot read ${JSON.stringify(given)}: it is a binary file (contains NUL bytes)`)
    }
    let text: string
    try {
      text = decoder.decode(bytes)
    } catch {
      return yield* ToolError.repairable(`cannot read ${JSON.stringify(given)}: it is not valid UTF-8 text`)
    }
    const starts = lineStarts(text)
    const totalLines = starts.length
    if (offset > Math.max(totalLines, 1)) {
      return yield* ToolError.repairable(
        `cannot read ${JSON.stringify(given)} from line ${offset}: the file has ${totalLines} lines`
      )
    }
    const lineEnd = (line: number): number => line < totalLines ? starts[line]! : text.length
    const begin = totalLines === 0 ? 0 : starts[offset - 1]!
    let endLine = Math.min(totalLines, offset - 1 + limit)
    while (endLine >= offset && lineEnd(endLine) - begin > maxReadChars) endLine -= 1
    // A single line longer than the cap: return its first `maxReadChars` characters.
    const cutLine = endLine < offset && totalLines > 0
    const content = cutLine ? text.slice(begin, begin + maxReadChars) : text.slice(begin, lineEnd(endLine))
    if (cutLine) endLine = offset
    const truncated = cutLine || endLine < totalLines
    return {
      path: given,
      content,
      startLine: offset,
      endLine,
      totalLines,
      truncated,
      ...(endLine < totalLines ? { nextOffset: endLine + 1 } : {})
    }
  })
})

// ---------------------------------------------------------------------------
// write_file
// ---------------------------------------------------------------------------

/**
 * Writes `content` to a temporary file in `directory` (an open, checked directory), flushes it
 * and renames it over `name` in that same directory: readers see the old file or the new one,
 * never a mix. Both the temporary file and the rename go through the directory's descriptor,
 * so a symlink swapped in meanwhile cannot redirect them. The temporary file is removed on any
 * failure or abort before the rename.
 */
const writeAtomically = async (
  directory: OpenDirectory,
  name: string,
  content: Uint8Array,
  mode: number | undefined,
  signal: AbortSignal
): Promise<void> => {
  const temporary = directory.entry(`.${name}.${randomUUID()}.tmp`)
  let renamed = false
  try {
    const flags = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | (constants.O_NOFOLLOW ?? 0)
    const handle = await fs.open(temporary, flags, mode ?? 0o666)
    try {
      if (mode !== undefined) await handle.chmod(mode) // the umask may have narrowed it
      await handle.writeFile(content, { signal })
      await handle.sync()
    } finally {
      await handle.close()
    }
    signal.throwIfAborted()
    await fs.rename(temporary, directory.entry(name))
    renamed = true
  } finally {
    if (!renamed) await fs.rm(temporary, { force: true }).catch(() => undefined)
  }
}

/** `lstat` of an entry, or `undefined` when it does not exist. */
const lstatOrUndefined = (entry: string) => fs.lstat(entry).catch((error: unknown) => {
  if (errorCode(error) === "ENOENT") return undefined
  throw error
})

/**
 * Opens `directory` (checked, created when `create`; see `openDirectoryInside`) and writes `name`
 * in it atomically, refusing a directory or non-regular file there. Resolves to whether the file
 * is new. One promise from open to close: the directory's descriptor, which the paths of the
 * temporary file and the rename go through, stays open until every operation on it has settled
 * (also when the call is interrupted: the abort only stops the write early).
 */
const writeInside = async (
  root: string,
  directory: string,
  create: boolean,
  name: string,
  content: Uint8Array,
  shown: string,
  signal: AbortSignal
): Promise<boolean> => {
  const opened = await openDirectoryInside(root, directory, create, shown)
  try {
    const existing = await lstatOrUndefined(opened.entry(name))
    if (existing !== undefined && existing.isDirectory()) {
      throw ToolError.repairable(`cannot write ${JSON.stringify(shown)}: it is a directory`)
    }
    if (existing !== undefined && !existing.isFile()) {
      throw ToolError.repairable(`cannot write ${JSON.stringify(shown)}: it is not a regular file`)
    }
    await writeAtomically(opened, name, content, existing === undefined ? undefined : existing.mode & 0o7777, signal)
    return existing === undefined
  } finally {
    await opened.close().catch(() => undefined)
  }
}

/** Creates or replaces a UTF-8 text file in the workspace, atomically. */
export const writeFile = Tool.make("write_file", {
  description: "Create or replace a UTF-8 text file inside the workspace with `content`, atomically (a temporary " +
    "file in the same directory is renamed over the target, so the file is never half-written). Overwrites an " +
    "existing file entirely (keeping its permissions). Creates missing parent directories only when " +
    "`createDirectories` is true. Returns the bytes written and whether the file is new. Refuses paths outside " +
    "the workspace (absolute, \"..\", symlinks out), directories and other non-regular files as targets, and " +
    `content over ${maxFileBytes} bytes.`,
  input: Schema.Struct({
    path: Schema.String.annotate({ description: "File path relative to the workspace root" }),
    content: Schema.String.annotate({ description: "The complete new content of the file" }),
    createDirectories: Schema.optionalKey(
      Schema.Boolean.annotate({ description: "Create missing parent directories (default false)" })
    )
  }),
  output: Schema.Struct({ path: Schema.String, bytesWritten: Schema.Number, created: Schema.Boolean }),
  services: [Workspace],
  safety: { access: "write", idempotent: true, filesystem: true, destructive: true },
  handler: Effect.fn("write_file")(function*({ path: given, content, createDirectories = false }) {
    const bytes = new TextEncoder().encode(content)
    if (bytes.byteLength > maxFileBytes) {
      return yield* ToolError.repairable(
        `cannot write ${JSON.stringify(given)}: the content is ${bytes.byteLength} bytes; the limit is ${maxFileBytes}`
      )
    }
    const target = yield* resolveInside(given)
    const { root } = yield* Workspace
    if (target === root) return yield* ToolError.repairable(`cannot write ${JSON.stringify(given)}: it is a directory`)
    const directory = path.dirname(target)
    // Path checks first, for clear messages; the write itself goes through the opened directory.
    const parent = yield* attempt("write", given, () => statOrUndefined(directory))
    if (parent === undefined) {
      if (!createDirectories) {
        return yield* ToolError.repairable(
          `cannot write ${JSON.stringify(given)}: its directory does not exist; pass createDirectories: true to create it`
        )
      }
    } else if (!parent.isDirectory()) {
      return yield* ToolError.repairable(`cannot write ${JSON.stringify(given)}: its parent is not a directory`)
    }
    const created = yield* attempt(
      parent === undefined ? "create the directories of" : "write",
      given,
      (signal) => writeInside(root, directory, parent === undefined, path.basename(target), bytes, given, signal)
    )
    return { path: given, bytesWritten: bytes.byteLength, created }
  })
})
