/**
 * Node's module compile cache (V8 code cache on disk, `NODE_COMPILE_CACHE`) for the Node processes
 * the tests start. vitest.config.ts points it at `node_modules/.cache/node-compile-cache` for the
 * runner, its workers and every child that inherits their environment; a test that starts a child
 * with an environment of its own (only `PATH`, say, so that no key leaks in) adds `compileCache` to
 * it. The cache only saves compiling effect and src/ again in each process (about half of a short
 * script's CPU time): Node checks each entry against the module's source, so a changed file is
 * compiled afresh, and what the child does and prints is the same with or without it.
 */

/** `{ NODE_COMPILE_CACHE }` when the runner set it (or it was set by hand), else nothing. */
export const compileCache: Readonly<Record<string, string>> = process.env["NODE_COMPILE_CACHE"] === undefined
  ? {}
  : { NODE_COMPILE_CACHE: process.env["NODE_COMPILE_CACHE"] }
