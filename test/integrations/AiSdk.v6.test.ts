// The AI SDK adapter's suite against `ai` 6: the module `ai` (and `ai/test`) is `ai-v6`
// (`npm:ai@^6`) for the suite and the adapter alike.
import { vi } from "vitest"
import { majors, suite } from "./AiSdk.suite.ts"

vi.mock("ai", () => import("ai-v6"))
vi.mock("ai/test", () => import("ai-v6/test"))

suite(majors[6])
