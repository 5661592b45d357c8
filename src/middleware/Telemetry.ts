/**
 * `telemetry`: one span per call through Effect's tracer (so any tracer layer,
 * OpenTelemetry included, receives it), named `execute_tool <tool>`, with the
 * OpenTelemetry GenAI attributes `gen_ai.operation.name`, `gen_ai.tool.name`,
 * `gen_ai.tool.call.id`, the call's status and timing, and `error.type` for
 * failed calls. Arguments and results are never attached: only their SHA-256
 * hashes (canonical JSON), and not even those with `hashes: false`.
 */
import { Effect, Exit } from "effect"
import { hash } from "../internal/canonical.ts"
import type { Middleware } from "../Middleware.ts"
import * as AuditTrail from "./AuditTrail.ts"

export interface Options {
  /** Attach SHA-256 hashes of the arguments and the result. Default `true`. */
  readonly hashes?: boolean
}

/** Wraps each call in a span carrying `gen_ai.tool.*` attributes. */
export const telemetry = (options: Options = {}): Middleware => ({
  name: "telemetry",
  around: (invocation, next) =>
    Effect.useSpan(
      `execute_tool ${invocation.spec.name}`,
      {
        kind: "internal",
        attributes: {
          "gen_ai.operation.name": "execute_tool",
          "gen_ai.tool.name": invocation.spec.name,
          "gen_ai.tool.call.id": invocation.call.id,
          "gen_ai.tool.type": "function"
        }
      },
      (span) =>
        Effect.withParentSpan(
          AuditTrail.record("telemetry", invocation, () => next(invocation), ({ exit, layer }) =>
            Effect.sync(() => {
              span.attribute("tinyagents.tool.status", layer.status)
              span.attribute("tinyagents.tool.started_at", layer.startedAt)
              span.attribute("tinyagents.tool.ended_at", layer.endedAt)
              span.attribute("tinyagents.tool.duration_ms", layer.endedAt - layer.startedAt)
              if (options.hashes !== false) span.attribute("tinyagents.tool.arguments_sha256", hash(invocation.input))
              if (Exit.isSuccess(exit)) {
                const result = exit.value
                if (options.hashes !== false) {
                  span.attribute("tinyagents.tool.result_sha256", hash({ content: result.content, value: result.value }))
                }
                if (result.isError) span.attribute("error.type", result.error?._tag ?? "ToolError")
              } else {
                span.attribute("error.type", layer.status)
              }
            })),
          span
        )
    )
})
