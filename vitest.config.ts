import { fileURLToPath } from "node:url"
import { defineConfig } from "vitest/config"

// Node's compile cache for the workers and every Node process the tests start (the examples, the
// demo, the CLI): each of them otherwise compiles effect and src/ afresh, about half of a short
// script's CPU time. Node checks an entry against its module's source before using it; a directory
// set by hand is kept, and NODE_DISABLE_COMPILE_CACHE=1 turns it off. Children started with an
// environment of their own get it from test/support/compileCache.ts.
process.env["NODE_COMPILE_CACHE"] ??= fileURLToPath(new URL("node_modules/.cache/node-compile-cache", import.meta.url))

// "tinyagents-source" resolves the package's own name ("tinyagents", "tinyagents/tools", ...)
// to src/, so examples and tests import it exactly as a user does (package.json "exports").
// The rest are Vite's default server conditions.
const conditions = ["tinyagents-source", "module", "node", "development|production"]

// Two tiers (test/support/tier.ts). `npm test` leaves out the files below: they start real
// servers (Postgres, Redis, the official MCP reference servers), kill processes, pack and install
// the package, or spawn a process per case. `npm run test:full` (TINYAGENTS_TEST_TIER=full) runs every file, and the fuzz and
// property tests at larger counts. `.ci/run` runs both.
const fullOnly = [
  "test/Package.test.ts",
  "test/Production.test.ts",
  "test/cli/Bin.test.ts",
  "test/durable/Approve.test.ts",
  "test/durable/AskCrash.test.ts",
  "test/durable/Crash.test.ts",
  "test/durable/CrashCancel.test.ts",
  "test/durable/CrashNested.test.ts",
  "test/durable/DurablePostgres.test.ts",
  "test/durable/LockCheckPostgres.test.ts",
  "test/durable/MultiRunner.test.ts",
  "test/inspect/Browser.test.ts",
  "test/inspect/Postgres.test.ts",
  "test/mcp/ConnectEverything.test.ts",
  "test/mcp/ConnectEverythingRequests.test.ts",
  "test/mcp/ConnectFilesystem.test.ts",
  "test/mcp/Inspector.test.ts",
  "test/mcp/PromptsResourcesStdio.test.ts",
  "test/mcp/ServeToolSearchStdio.test.ts",
  "test/mcp/ConformanceAuth.test.ts",
  "test/mcp/ConformanceClient.test.ts",
  "test/mcp/ConformanceServer.test.ts",
  "test/stores/Postgres.test.ts",
  "test/stores/Redis.test.ts",
  "test/stores/TwoProcesses.test.ts"
]

// Files that replace modules (vi.mock) get a module graph of their own; every other file shares
// its worker's (isolate: false), which saves re-importing Effect and src/ for each file: about
// half of the suite's CPU time.
const isolated = ["test/integrations/AiSdk.v6.test.ts", "test/integrations/AiSdkStream.v6.test.ts"]

const full = process.env["TINYAGENTS_TEST_TIER"] === "full"
const excluded = full ? [] : fullOnly

export default defineConfig({
  resolve: { conditions },
  ssr: { resolve: { conditions } },
  test: {
    testTimeout: 30_000,
    // A hook gets as long as a test: the ones that start a server or a subprocess (ServeStdio's
    // beforeAll) ran past vitest's 10 s default on a loaded 2-core machine.
    hookTimeout: 30_000,
    // Vitest's default is one worker fewer than the cores: one worker on a 2-core machine, which
    // then sits idle while tests wait on child processes, sockets and timers. Three keep two cores
    // busy (npm test: 93 s instead of 142 s of vitest on 2 cores).
    maxWorkers: 3,
    projects: [
      {
        extends: true,
        test: { name: "shared", include: ["test/**/*.test.ts"], exclude: [...excluded, ...isolated], isolate: false }
      },
      {
        extends: true,
        test: { name: "isolated", include: isolated, exclude: excluded, isolate: true }
      }
    ]
  }
})
