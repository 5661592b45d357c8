// Agent streams for chat front-ends against the installed `ai` (7); AiSdkStream.v6.test.ts runs the same suite against 6.
import { suite } from "./AiSdkStream.suite.ts"

suite(7)
