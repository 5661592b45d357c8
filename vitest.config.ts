import { defineConfig } from "vitest/config"

// "tinyagents-source" resolves the package's own name ("tinyagents", "tinyagents/tools", ...)
// to src/, so examples and tests import it exactly as a user does (package.json "exports").
// The rest are Vite's default server conditions.
const conditions = ["tinyagents-source", "module", "node", "development|production"]

export default defineConfig({
  resolve: { conditions },
  ssr: { resolve: { conditions } },
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000
  }
})
