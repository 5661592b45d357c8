// The AI SDK adapter against the installed `ai` (7); AiSdk.v6.test.ts runs the same suite against 6.
import { majors, suite } from "./AiSdk.suite.ts"

suite(majors[7])
