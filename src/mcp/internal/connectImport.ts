/**
 * Turns one MCP server's `tools/list` entries into tinyagents tools: foreign
 * names kept (the registry derives the canonical alias), input validated
 * locally against the server's schema (closed as shown), safety from the
 * annotations, a handler that sends `tools/call` with an `AbortSignal` that
 * aborts on interruption (so the SDK sends `notifications/cancelled`) and, when
 * the executor gives the call a `ToolProgress`, forwards the server's progress
 * to it (in order, all before the handler returns), and results mapped into
 * content and a value. Tools whose schemas cannot be imported, or whose
 * canonical names collide, are skipped with a reason.
 */
import { type Cause, Duration, Effect, Fiber, Option, Queue, Result, Stream } from "effect"
import * as Tool from "../../contract/Tool.ts"
import type * as ToolError from "../../contract/ToolError.ts"
import type * as ToolInput from "../../contract/ToolInput.ts"
import * as ToolName from "../../contract/ToolName.ts"
import * as ToolRegistry from "../../contract/ToolRegistry.ts"
import type * as ToolResult from "../../contract/ToolResult.ts"
import * as AuditTrail from "../../governance/middleware/AuditTrail.ts"
import { Ask } from "../../governance/Ask.ts"
import { ToolCallContext } from "../../runtime/ToolCallContext.ts"
import { ToolProgress, type ToolProgressShape, type Update } from "../../runtime/ToolProgress.ts"
import type * as Mcp from "../../providers/Mcp.ts"
import type { Origin } from "./connectRequests.ts"
import { authErrorOf, type CallResult, callError, errorText, mapResult, type ResourceLink, resultError, safetyOf } from "./connectMapping.ts"

/** What an imported tool needs from its connection. */
export interface Caller {
  /** The server's label (`options.name`, else its `serverInfo.name`). */
  readonly server: string
  /** Sends `tools/call`; the signal aborts on interruption. With `onProgress`, asks for the server's progress. */
  readonly call: (
    name: string,
    args: { readonly [key: string]: unknown },
    signal: AbortSignal,
    onProgress: ((update: Update) => void) | undefined,
    origin: Origin
  ) => Promise<CallResult>
}

/** A tool left out of the registry, and why. */
export interface Skipped {
  readonly name: string
  readonly reason: string
}

/** Where an imported tool came from. */
export interface Source {
  readonly server: string
  /** The tool's name on the server. */
  readonly tool: string
}

export interface ImportOptions {
  /** Names the server's tools `<prefix>.<name>` (canonical `<prefix>_<name>`). */
  readonly prefix?: string | undefined
  readonly timeout?: Duration.Input | undefined
  readonly patterns?: "apply" | "ignore" | undefined
  readonly include?: ((tool: Mcp.Tool) => boolean) | undefined
  readonly limits?: ToolInput.Limits | undefined
}

/** Imported tools, by identity: their source (for middleware and audit). */
export const sources = new WeakMap<Tool.Any, Source>()

/** Model content of an output object (the value a handler returned), read by `toModelOutput`. */
const contents = new WeakMap<object, ReadonlyArray<ToolResult.ContentBlock>>()

/** Resource links of calls in flight or just finished, by call id, until a middleware takes them. */
export const pendingLinks = new Map<string, { readonly server: string; readonly links: ReadonlyArray<ResourceLink> }>()
const maxPending = 256

const remember = (callId: string, server: string, links: ReadonlyArray<ResourceLink>): void => {
  pendingLinks.delete(callId)
  pendingLinks.set(callId, { server, links })
  while (pendingLinks.size > maxPending) pendingLinks.delete(pendingLinks.keys().next().value!)
}

const toModelOutput = (output: unknown): ToolResult.ModelOutput =>
  (typeof output === "object" && output !== null ? contents.get(output) : undefined) ?? JSON.stringify(output) ?? ""

/** An imported tool: fails only with tool errors, needs no service. */
export type Imported = Tool.Dynamic<ToolError.ToolFailure | ToolError.ToolTransient, never>

/**
 * Runs `send` with a callback that reports each update to `progress`, in order (the callback is the
 * SDK's, outside any fiber: updates wait in a queue). Updates that came before the response are all
 * reported before this returns, whether the call succeeded or failed.
 */
const forwarding = <A, E>(
  progress: ToolProgressShape,
  send: (onProgress: (update: Update) => void) => Effect.Effect<A, E>
): Effect.Effect<A, E> =>
  Effect.gen(function*() {
    const updates = yield* Queue.unbounded<Update, Cause.Done>()
    const forwarder = yield* Stream.fromQueue(updates).pipe(Stream.runForEach(progress.report), Effect.forkChild)
    const exit = yield* Effect.exit(send((update) => Queue.offerUnsafe(updates, update)))
    yield* Queue.end(updates)
    yield* Fiber.join(forwarder)
    return yield* exit
  })

const importOne = (
  caller: Caller,
  remote: Mcp.Tool,
  options: ImportOptions
): Result.Result<Imported, string> => {
  const name = options.prefix === undefined ? remote.name : `${options.prefix}.${remote.name}`
  const canonical = ToolName.isToolName(name) ? ToolName.validate(name) : ToolName.sanitize(name)
  if (Result.isFailure(canonical)) return Result.fail(canonical.failure.message)
  const toolName = canonical.success
  const server = caller.server
  const safety = safetyOf(remote.annotations, server)
  const handler = (input: { readonly [key: string]: unknown }) =>
    Effect.gen(function*() {
      const context = yield* Effect.serviceOption(ToolCallContext)
      const progress = yield* Effect.serviceOption(ToolProgress)
      yield* AuditTrail.annotate({ metadata: { mcpServer: server, mcpTool: remote.name } })
      const ambient = Option.isSome(context) ? context.value.abortSignal : undefined
      // what the server's requests during this call are answered with (elicitation, sampling, logs)
      const origin: Origin = {
        toolName,
        callId: Option.isSome(context) ? context.value.toolCallId : "call",
        safety,
        context: yield* Effect.context<never>()
      }
      const send = (onProgress?: (update: Update) => void) =>
        Effect.tryPromise({
          try: (signal) =>
            caller.call(
              remote.name,
              input,
              ambient === undefined ? signal : AbortSignal.any([signal, ambient]),
              onProgress,
              origin
            ),
          catch: (error) => error
        }).pipe(Effect.catch((error) => {
          const auth = authErrorOf(error)
          return auth === undefined ? Effect.fail(callError(toolName, server, error)) : Effect.die(auth)
        }))
      const result = yield* (Option.isSome(progress) ? forwarding(progress.value, send) : send())
      const mapped = mapResult(result)
      if (mapped.isError) return yield* Effect.fail(resultError(toolName, errorText(mapped), result.structuredContent))
      if (Option.isSome(context)) {
        // a stale entry of an earlier call with this id must never reach this call's result
        if (mapped.links.length > 0) remember(context.value.toolCallId, server, mapped.links)
        else pendingLinks.delete(context.value.toolCallId)
      }
      contents.set(mapped.value, mapped.content)
      return mapped.value
    })
  // `title` wins over `annotations.title` (the protocol's display-name precedence).
  const title = remote.title ?? remote.annotations?.title
  const base = {
    ...(title === undefined ? {} : { title }),
    description: remote.description ?? title ?? `${remote.name} (MCP server "${server}")`,
    inputSchema: remote.inputSchema,
    safety,
    toModelOutput,
    handler,
    ...(options.timeout === undefined ? {} : { timeout: options.timeout }),
    ...(options.patterns === undefined ? {} : { patterns: options.patterns })
  }
  // An output schema Effect cannot import is dropped (the SDK still checks structured content against it).
  let tool = Tool.fromJsonSchema(name, remote.outputSchema === undefined ? base : { ...base, outputSchema: remote.outputSchema })
  if (Result.isFailure(tool) && remote.outputSchema !== undefined) tool = Tool.fromJsonSchema(name, base)
  if (Result.isFailure(tool)) return Result.fail(tool.failure.message)
  // Lists `ToolProgress` and `Ask` so that the executor gives each call one: the handler takes progress
  // when it is there, and the server's elicitations during the call are asked through the call's `Ask`.
  const imported: Imported = { ...tool.success, services: [ToolProgress, Ask] }
  sources.set(imported, { server, tool: remote.name })
  return Result.succeed(imported)
}

/**
 * A registry of the server's tools. Tools that cannot be imported, or that
 * would break the registry (a canonical name taken by an earlier tool), are
 * skipped and listed.
 */
export const importTools = (
  caller: Caller,
  remotes: ReadonlyArray<Mcp.Tool>,
  options: ImportOptions
): { readonly registry: ToolRegistry.ToolRegistry<never>; readonly skipped: ReadonlyArray<Skipped> } => {
  const skipped: Array<Skipped> = []
  const tools: Array<Imported> = []
  const taken = new Map<string, string>()
  for (const remote of remotes) {
    if (options.include !== undefined && !options.include(remote)) continue
    const imported = importOne(caller, remote, options)
    if (Result.isFailure(imported)) {
      skipped.push({ name: remote.name, reason: imported.failure })
      continue
    }
    const single = ToolRegistry.makeResult([imported.success])
    if (Result.isFailure(single)) {
      skipped.push({ name: remote.name, reason: single.failure.violations.map((v) => v.message).join("; ") })
      continue
    }
    const canonical = single.success.names[0]!
    const previous = taken.get(canonical)
    if (previous !== undefined) {
      skipped.push({ name: remote.name, reason: `its canonical name ${canonical} is taken by ${JSON.stringify(previous)}` })
      continue
    }
    taken.set(canonical, remote.name)
    tools.push(imported.success)
  }
  const registry = ToolRegistry.makeResult(tools, options.limits === undefined ? {} : { limits: options.limits })
  // Every tool passed alone and no two share a canonical name: the whole cannot fail.
  if (Result.isFailure(registry)) throw new Error(`unreachable: ${registry.failure.message}`)
  return { registry: registry.success, skipped }
}
