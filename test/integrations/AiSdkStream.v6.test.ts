// Agent streams for chat front-ends against `ai` 6: the module `ai` is `ai-v6` (`npm:ai@^6`) for the
// suite (its reader and chat transport) and the adapter alike.
import { vi } from "vitest"
import { suite } from "./AiSdkStream.suite.ts"

vi.mock("ai", () => import("ai-v6"))

suite(6)
