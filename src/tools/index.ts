/**
 * The standard tools: `calc`, `read_file`, `write_file` and `bash`, and the
 * `Workspace` service that confines the file and shell tools. Each module is
 * also a namespace for its limits and helpers.
 */
export * as Bash from "./Bash.ts"
export * as Calc from "./Calc.ts"
export * as Files from "./Files.ts"
export * as Workspace from "./Workspace.ts"

/** The tools themselves, for `ToolRegistry.make([...])`. */
export { bash } from "./Bash.ts"
export { calc } from "./Calc.ts"
export { readFile, writeFile } from "./Files.ts"
