/**
 * What a served `tools/call` tells its client while it runs: `notifications/progress` for the
 * call's `tool.progress` events (when the request asked for progress) and `notifications/message`
 * for the handler's logs. Both go through `McpServer.notifications` in the request's own context,
 * which routes them to that request (its response stream over HTTP) and applies the client's
 * `logging/setLevel`, and both are delivered before the call's result.
 */
import type { Cause, Context } from "effect"
import { Duration, Effect, Fiber, Logger, LogLevel, Queue, References, Stream } from "effect"
import type { McpSchema, McpServer } from "effect/ai"
import type * as ToolEvent from "../../contract/ToolEvent.ts"
import type { Scrubber } from "../../internal/redact/policy.ts"
import { EventSink } from "../../runtime/EventSink.ts"

/** How long one notification may take to reach its client before it is given up on. */
export const deliveryMillis = 2_000

type Server = McpServer.McpServer["Service"]
type LogParams = Parameters<Server["notifications"]["notifications/message"]>[0]

const deliver = (effect: Effect.Effect<void>, request: Context.Context<never>): Effect.Effect<void> =>
  effect.pipe(
    Effect.provideContext(request),
    Effect.interruptible,
    Effect.timeoutOption(Duration.millis(deliveryMillis)),
    Effect.ignore
  )

/**
 * `sink`, also sending each `tool.progress` of call `callId` as a `notifications/progress` for
 * `token`. The MCP spec requires `progress` to increase with each notification, so the values sent
 * are the tool's own: a report whose value (its count, with its total; else its fraction, of 1) is
 * above the last one sent, or any value for the first notification (a count of 0 included), is sent
 * as reported; a report with a message and no such value is sent as a progress notification only
 * when none has been sent yet (`progress: 0`, nothing claimed), otherwise its message goes out as a
 * `notifications/message` (level `info`, logger: the tool), which the spec provides for text; a
 * report with neither is not sent (it is still a `tool.progress` event of the server).
 */
export const withProgress = (
  sink: EventSink["Service"],
  callId: string,
  token: string | number,
  request: Context.Context<never>,
  server: Server
): EventSink["Service"] => {
  let last: number | undefined
  let total: number | undefined
  const notify = (event: ToolEvent.ToolProgress): Effect.Effect<void> => {
    const own = event.count ?? event.fraction
    if (own !== undefined && (last === undefined || own > last)) {
      last = own
      total = event.count !== undefined ? event.total : 1
    } else if (event.message === undefined) {
      return Effect.void
    } else if (last !== undefined) {
      return deliver(
        server.notifications["notifications/message"]({ level: "info", logger: event.toolName, data: event.message }),
        request
      )
    } else {
      last = 0
      if (event.count !== undefined) total = event.total
    }
    return deliver(
      server.notifications["notifications/progress"]({
        progressToken: token,
        progress: last,
        ...(total === undefined ? {} : { total }),
        ...(event.message === undefined ? {} : { message: event.message })
      }),
      request
    )
  }
  return EventSink.of({
    emit: (event) => {
      if (event._tag !== "tool.progress" || event.toolCallId !== callId) return sink.emit(event)
      // The server's sink first (its failure is passed on, for the executor to log), then the client.
      return Effect.flatMap(Effect.exit(Effect.suspend(() => sink.emit(event))), (exit) => Effect.andThen(notify(event), exit))
    }
  })
}

const mcpLevel = (level: LogLevel.LogLevel): McpSchema.LoggingLevel => {
  switch (level) {
    case "Fatal":
      return "critical"
    case "Error":
      return "error"
    case "Warn":
      return "warning"
    case "Info":
      return "info"
    default:
      return "debug"
  }
}

const partText = (part: unknown): string => {
  if (typeof part === "string") return part
  if (part instanceof Error) return `${part.name}: ${part.message}`
  try {
    return JSON.stringify(part) ?? String(part)
  } catch {
    return String(part)
  }
}

/**
 * A log entry's text: its message parts, then the messages of its cause's errors (never stack
 * traces). A part that is not a string is redacted by value first (`scrubber.value`: the values
 * under redacted keys, then the patterns), before it becomes JSON.
 */
const logText = (message: unknown, cause: Cause.Cause<unknown>, scrubber: Scrubber | undefined): string => {
  const parts = (Array.isArray(message) ? message : [message]).map((part) =>
    partText(scrubber === undefined || typeof part === "string" || part instanceof Error ? part : scrubber.value(part))
  )
  for (const reason of cause.reasons) {
    if (reason._tag === "Fail" || reason._tag === "Die") {
      const error = reason._tag === "Fail" ? reason.error : reason.defect
      parts.push(partText(error))
    }
  }
  return parts.join(" ")
}

/**
 * The library's own warnings (the executor's: a failed event sink or artifact store, `tinyagents:`;
 * an imported tool's connection, `tinyagents mcp:`) are the server's business: they stay in the
 * server's log.
 */
const internal = /^tinyagents( mcp)?:/

/**
 * Runs `effect` (a call) with its logs also sent to the calling client as `notifications/message`
 * (logger: `toolName`; text redacted by `scrubber`), in order, all delivered before it returns. The
 * client's `logging/setLevel` decides which levels reach it; the loggers already installed keep
 * their own minimum level.
 */
export const withLogs = <A, E, R>(
  effect: Effect.Effect<A, E, R>,
  toolName: string,
  scrubber: Scrubber | undefined,
  request: Context.Context<never>,
  server: Server
): Effect.Effect<A, E, R> =>
  Effect.gen(function*() {
    const queue = yield* Queue.unbounded<LogParams, Cause.Done>()
    const drain = yield* Stream.fromQueue(queue).pipe(
      Stream.runForEach((params) => deliver(server.notifications["notifications/message"](params), request)),
      Effect.forkChild
    )
    const minimum = yield* References.MinimumLogLevel
    const loggers = yield* Logger.CurrentLoggers
    const kept = [...loggers].map((logger) =>
      Logger.make<unknown, void>((options) => {
        if (LogLevel.isGreaterThanOrEqualTo(options.logLevel, minimum)) logger.log(options)
      })
    )
    const toClient = Logger.make<unknown, void>(({ cause, logLevel, message }) => {
      const text = logText(message, cause, scrubber)
      if (internal.test(text)) return
      Queue.offerUnsafe(queue, {
        level: mcpLevel(logLevel),
        logger: toolName,
        data: scrubber === undefined ? text : scrubber.text(text)
      })
    })
    return yield* effect.pipe(
      Effect.provideService(Logger.CurrentLoggers, new Set([...kept, toClient])),
      Effect.provideService(References.MinimumLogLevel, "All"),
      Effect.ensuring(
        Queue.end(queue).pipe(
          Effect.andThen(Effect.timeoutOption(Effect.exit(Fiber.join(drain)), Duration.millis(deliveryMillis))),
          Effect.ignore
        )
      )
    )
  })
