#!/usr/bin/env node
/**
 * The `tinyagents` binary: runs the command line (`Cli.ts`) on the process arguments and exits with
 * its code (0 success, 1 a failed call, 2 a usage error, 130 interrupted). Needs Node 24 or later,
 * which loads `.ts` tools modules by stripping their types. SIGINT and SIGTERM interrupt the run.
 */
import { Effect, Runtime } from "effect"
import { readFileSync } from "node:fs"
import * as Cli from "./Cli.ts"

// package.json sits two levels up both here (src/cli/bin.ts) and when built (dist/cli/bin.js).
const { version } = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string }

const runMain = Runtime.makeRunMain(({ fiber, teardown }) => {
  let signalled = false
  const onSignal = () => {
    signalled = true
    fiber.interruptUnsafe(fiber.id)
  }
  process.on("SIGINT", onSignal)
  process.on("SIGTERM", onSignal)
  fiber.addObserver((exit) => {
    process.removeListener("SIGINT", onSignal)
    process.removeListener("SIGTERM", onSignal)
    teardown(exit, (code) => {
      process.exitCode = code
      if (signalled || code !== 0) process.exit(code)
    })
  })
})

runMain(Cli.run(process.argv.slice(2), { version }).pipe(Effect.provide(Cli.layer)), {
  disableErrorReporting: true, // Cli.run prints every failure once
  teardown: (exit, onExit) => onExit(Cli.exitCode(exit))
})
