/**
 * `auditLog`: one typed receipt per call, written after the call completes:
 * tool, call id, status, timing, its position among the run's receipts
 * (`emitOrder`), the audit, and SHA-256 hashes of the canonical (sorted-key)
 * arguments and result instead of the payloads. Failed calls (handler errors,
 * crashes, fatal refusals) get a receipt too: the layer records, writes, and
 * raises the failure again. A keyed tool's receipt records its idempotency
 * key, redacted like the arguments it comes from. Calls the executor refuses
 * before any middleware runs (unknown tool, not advertised, malformed or
 * invalid arguments, over a call limit) get a receipt too, from the `rejected` hook (`refused: true`, status
 * `tool_not_found`, `scope_violation`, `schema_violation` or `rate_limited`):
 * their raw arguments appear only as a hash and their error text names paths,
 * never values. A receipt of a call that ran records the tool's access level
 * and whether it is destructive (so a store can answer "every destructive call").
 * Sinks: a callback, an append-only JSONL file per run whose `file://` URI is
 * put in `audit.metadata.receiptUri`, and SQL (`tinyagents/stores` `SqlAudit`).
 */
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import { Clock, Effect, Exit, FileSystem, Option, Semaphore } from "effect"
import { hash, withoutKeys } from "../../internal/canonical.ts"
import { redactAudit, scrubberOf } from "../../internal/redact/policy.ts"
import type { Middleware, Refusal } from "../../runtime/Middleware.ts"
import { RunContext, type RunInfo } from "../../runtime/RunContext.ts"
import { ToolCallContext } from "../../runtime/ToolCallContext.ts"
import { formatPath } from "../../contract/ToolError.ts"
import type { Audit } from "../../contract/ToolResult.ts"
import * as Safety from "../../contract/Safety.ts"
import * as AuditTrail from "./AuditTrail.ts"

/** What one call left behind. Payloads appear only as hashes. */
export interface Receipt {
  readonly tool: string
  readonly callId: string
  /** The call's idempotency key, for tools that declare one (redacted per the tool's `safety.redact`). */
  readonly idempotencyKey?: string
  readonly runId: string
  readonly threadId: string
  readonly turn: number
  /** The call's status: `ok`, or a reserved status (`consent_denied`, `exception`, ...). */
  readonly status: string
  readonly isError: boolean
  /** The error's message, for error results and failures. */
  readonly error?: string
  readonly startedAt: number
  readonly endedAt: number
  readonly durationMillis: number
  /** 0, 1, 2, ... in the order receipts of the run were emitted (completion order). */
  readonly emitOrder: number
  /** SHA-256 of the canonical arguments, without the `redact` keys. */
  readonly argumentsSha256: string
  /** SHA-256 of the canonical `{ content, value }` of the result; absent when the call failed. */
  readonly resultSha256?: string
  /** True for a call the executor refused before any middleware ran (its audit has no layers). */
  readonly refused?: true
  /** The tool's access level (`safety.access`, default `"mutate"`); absent on refused calls. */
  readonly access?: string
  /** The tool destroys or overwrites data (`safety.destructive`, default: access `"mutate"`); absent on refused calls. */
  readonly destructive?: boolean
  readonly audit: Audit
}

/** Where receipts go. */
export interface Sink<R = never> {
  /** The URI receipts of a run are stored at, when there is one. */
  readonly uriOf?: (run: RunInfo) => string | undefined
  readonly write: (receipt: Receipt) => Effect.Effect<void, never, R>
}

/** A sink that calls `f` with each receipt. */
export const callback = (f: (receipt: Receipt) => void): Sink => ({ write: (receipt) => Effect.sync(() => f(receipt)) })

/** The JSONL file of a run's receipts: `<directory>/<runId>.jsonl`. */
export const receiptPath = (directory: string, runId: string): string =>
  path.join(directory, `${runId.replace(/[^A-Za-z0-9_.-]/g, "_")}.jsonl`)

/**
 * An append-only JSONL sink, one file per run, one line per receipt (writes
 * are serialised). A receipt that cannot be written is a defect: the run stops.
 */
export const jsonl = (directory: string): Sink<FileSystem.FileSystem> => {
  const oneAtATime = Semaphore.makeUnsafe(1)
  return {
    uriOf: (run) => pathToFileURL(path.resolve(receiptPath(directory, run.runId))).href,
    write: (receipt) =>
      oneAtATime.withPermits(1)(
        Effect.gen(function*() {
          const fs = yield* FileSystem.FileSystem
          yield* fs.makeDirectory(directory, { recursive: true })
          yield* fs.writeFileString(receiptPath(directory, receipt.runId), `${JSON.stringify(receipt)}\n`, { flag: "a" })
        }).pipe(Effect.orDie)
      )
  }
}

/** Writes to every sink, in order. */
export const all = <R>(sinks: ReadonlyArray<Sink<R>>): Sink<R> => ({
  uriOf: (run) => sinks.map((sink) => sink.uriOf?.(run)).find((uri) => uri !== undefined),
  write: (receipt) => Effect.forEach(sinks, (sink) => sink.write(receipt), { discard: true })
})

export interface Options {
  /** Argument keys (at any depth) removed before the arguments are hashed. */
  readonly redact?: ReadonlyArray<string>
}

/** What is wrong with a malformed call, in words that never come from the arguments. */
const malformedKinds: ReadonlyArray<readonly [string, string]> = [
  ["the arguments are empty", "the arguments are empty"],
  ["the arguments are not valid JSON", "the arguments are not valid JSON"],
  ["the arguments contain a forbidden", "the arguments contain a forbidden prototype key"],
  ["expected a JSON object", "the arguments are not a JSON object"]
]

/**
 * The error text of a refused call's receipt. Rejection messages quote what the
 * model sent (`got "..."`, a JSON parser's excerpt); this names the problem and
 * the paths only.
 */
export const refusalText = (error: Refusal["error"]): string => {
  switch (error._tag) {
    case "MalformedArguments": {
      const kind = malformedKinds.find(([prefix]) => error.reason.startsWith(prefix))?.[1]
      return `${error.toolName}: malformed arguments${kind === undefined ? "" : `: ${kind}`}`
    }
    case "InvalidArguments": {
      const paths = [...new Set(error.issues.map((issue) => formatPath(issue.path)))]
      const shown = paths.slice(0, 10).join(", ")
      return `${error.toolName}: invalid arguments at ${shown}${paths.length > 10 ? `, and ${paths.length - 10} more` : ""}`
    }
    case "ToolNotFound":
    case "ToolNotAllowed":
    case "ToolCallLimitExceeded":
      return error.message
  }
}

/** Raw arguments as hashed in a refused call's receipt: JSON text parsed when it can be (so redact keys apply). */
const rawArguments = (raw: unknown): unknown => {
  if (typeof raw !== "string") return raw
  try {
    return JSON.parse(raw) as unknown
  } catch {
    return raw
  }
}

/** Writes one receipt per call to `sink` (a `Sink` or a callback). */
export const auditLog = <R = never>(
  sink: Sink<R> | ((receipt: Receipt) => void),
  options: Options = {}
): Middleware<R | RunContext> => {
  const target: Sink<R> = typeof sink === "function" ? callback(sink) : sink
  const redact = new Set(options.redact ?? [])
  const emitted = new Map<string, number>()
  const nextOrder = (runId: string): number => {
    const emitOrder = emitted.get(runId) ?? 0
    emitted.set(runId, emitOrder + 1)
    return emitOrder
  }
  return {
    name: "audit_log",
    rejected: ({ call, error, toolName, turn }) =>
      Effect.flatMap(Effect.all([RunContext, Clock.currentTimeMillis]), ([run, now]) =>
        Effect.suspend(() => {
          const uri = target.uriOf?.(run)
          const status = AuditTrail.statusOf(error)
          return target.write({
            tool: toolName,
            callId: call.id,
            runId: run.runId,
            threadId: run.threadId,
            turn,
            status,
            isError: true,
            error: refusalText(error),
            startedAt: now,
            endedAt: now,
            durationMillis: 0,
            emitOrder: nextOrder(run.runId),
            argumentsSha256: hash(withoutKeys(rawArguments(call.arguments), redact)),
            refused: true,
            audit: { layers: [], ...(uri === undefined ? {} : { metadata: { receiptUri: uri } }) }
          })
        })),
    around: (invocation, next) =>
      Effect.flatMap(Effect.all([RunContext, Effect.serviceOption(ToolCallContext)]), ([run, current]) => {
        const uri = target.uriOf?.(run)
        const key = Option.isSome(current) ? current.value.idempotencyKey : undefined
        return AuditTrail.record(
          "audit_log",
          invocation,
          (recorder) =>
            Effect.andThen(
              uri === undefined ? Effect.void : recorder.annotate({ metadata: { receiptUri: uri } }),
              next(invocation)
            ),
          ({ exit, layer, audit }) =>
            Effect.suspend(() => {
              const emitOrder = nextOrder(run.runId)
              const result = Exit.isSuccess(exit) ? exit.value : undefined
              // the call's scrubber: the tool's patterns, and the values its arguments hold under redacted keys
              const scrubber = scrubberOf(invocation.spec.safety.redact, invocation.input)
              const scrub = (text: string) => scrubber === undefined ? text : scrubber.text(text)
              return target.write({
                tool: invocation.spec.name,
                callId: invocation.call.id,
                ...(key === undefined ? {} : { idempotencyKey: scrub(key) }),
                runId: run.runId,
                threadId: run.threadId,
                turn: invocation.turn,
                access: Safety.accessOf(invocation.spec.safety),
                destructive: Safety.toMcpAnnotations(invocation.spec.safety).destructiveHint,
                status: layer.status,
                isError: result === undefined || result.isError,
                ...(layer.error === undefined ? {} : { error: scrub(layer.error) }),
                startedAt: layer.startedAt,
                endedAt: layer.endedAt,
                durationMillis: layer.endedAt - layer.startedAt,
                emitOrder,
                argumentsSha256: hash(withoutKeys(invocation.input, redact)),
                ...(result === undefined ? {} : { resultSha256: hash({ content: result.content, value: result.value }) }),
                // The same redaction step as everything else that leaves a call (summaries quoting arguments).
                audit: redactAudit(audit, invocation.spec.safety.redact, invocation.input)
              })
            })
        )
      })
  }
}
