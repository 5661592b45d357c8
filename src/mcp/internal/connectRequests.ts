/**
 * What a connected server asks of the client, answered by local policy:
 * form elicitation (`elicitation/create`) through the `Approval` service,
 * sampling (`sampling/createMessage`) by the `ChatModel` within the
 * connection's limits, and the server's log messages (`notifications/message`)
 * to Effect's logger. Each answer is an Effect that reads its services from
 * the context it runs in (the connection chooses: the call in flight, else
 * the connection's own); requests and results are read structurally, no SDK
 * import here.
 */
import { Cause, type Context, Effect, Option, Result } from "effect"
import type { Severity } from "effect/LogLevel"
import * as ChatModel from "../../agent/ChatModel.ts"
import type { Safety } from "../../contract/Safety.ts"
import * as Tool from "../../contract/Tool.ts"
import { formatPath } from "../../contract/ToolError.ts"
import * as ToolInput from "../../contract/ToolInput.ts"
import type * as ToolSchema from "../../contract/ToolSchema.ts"
import { Approval, type Request as ApprovalRequest } from "../../governance/Approval.ts"
import { Answerer } from "../../governance/Ask.ts"
import { askForm } from "./connectAsk.ts"
import { base64Bytes } from "../../providers/ResultContent.ts"

/** The call a server's request arrived during: whose services answer it, and what it is about. */
export interface Origin {
  /** The imported tool's canonical name. */
  readonly toolName: string
  readonly callId: string
  readonly safety: Safety
  /** Everything the call's fiber had in context (its `Approval`, `ChatModel`, logger, ...). */
  readonly context: Context.Context<never>
}

// ---------------------------------------------------------------------------
// elicitation
// ---------------------------------------------------------------------------

/** The params of a form-mode `elicitation/create`. */
export interface ElicitParams {
  readonly message: string
  readonly requestedSchema: { readonly type?: unknown; readonly properties?: { readonly [key: string]: unknown } }
}

/** An `ElicitResult`. */
export type ElicitAnswer =
  | { readonly action: "accept"; readonly content: { readonly [key: string]: unknown } }
  | { readonly action: "decline" }

/** The defaults the requested schema declares for its properties (SEP-1034: all of them). */
export const defaultsOf = (schema: ElicitParams["requestedSchema"]): { readonly [key: string]: unknown } => {
  const defaults: Record<string, unknown> = {}
  for (const [key, property] of Object.entries(schema.properties ?? {})) {
    if (typeof property === "object" && property !== null && "default" in property) {
      defaults[key] = (property as { readonly default: unknown }).default
    }
  }
  return defaults
}

const decline: ElicitAnswer = { action: "decline" }

/** A warning in the log, naming the server; the server only sees `decline`. */
const declined = (server: string, why: string) =>
  Effect.as(Effect.annotateLogs(Effect.logWarning(`tinyagents mcp: declined an elicitation: ${why}`), { mcpServer: server }), decline)

/**
 * `effect`, where a defect (a throwing `allow`, a `ChatModel` or `Approval` that dies) is logged here,
 * with its cause, and answered with `fallback`: the server never sees the defect's message.
 * Interruption stays interruption.
 */
const contained = <A>(server: string, what: string, fallback: A) => (effect: Effect.Effect<A>): Effect.Effect<A> =>
  Effect.catchCause(effect, (cause) =>
    Cause.hasInterruptsOnly(cause)
      ? Effect.failCause(cause)
      : Effect.as(
        Effect.annotateLogs(Effect.logError(`tinyagents mcp: answering ${what} failed`, cause), { mcpServer: server }),
        fallback
      ))

/**
 * Answers a form elicitation through the `Ask.Answerer` in context when there is one: the
 * question is asked through the calling tool's `Ask` (its events are the call's), the schema's
 * defaults filled in for the keys the answer leaves out; `Declined` / `Unanswerable` decline.
 * Otherwise through the `Approval` service in context: the
 * question is an approval `Request` whose `arguments` are the schema's
 * defaults, `why` the server's message, and `spec` a tool with the requested
 * schema as input (safety of the call in flight, tagged `mcp:elicitation`).
 * Approve accepts the defaults; Edit accepts the edited content with the
 * defaults filled in for the keys it leaves out, when it is valid against the
 * requested schema (else declines); Deny declines. Neither in context:
 * declined. A defect answering it is logged and declined.
 */
export const elicit = (
  server: string,
  params: ElicitParams,
  requestId: string,
  origin: Origin | undefined
): Effect.Effect<ElicitAnswer> =>
  Effect.gen(function*() {
    const answerer = yield* Effect.serviceOption(Answerer)
    const approval = yield* Effect.serviceOption(Approval)
    if (Option.isNone(answerer) && Option.isNone(approval)) {
      return yield* declined(server, "no Ask.Answerer or Approval service can answer it")
    }
    const toolName = origin?.toolName ?? `mcp:${server}`
    const defaults = defaultsOf(params.requestedSchema)
    const safety = origin?.safety ?? { tags: ["mcp", `mcp:${server}`] }
    const form = Tool.fromJsonSchema(toolName, {
      description: params.message,
      inputSchema: params.requestedSchema as ToolSchema.JsonSchemaObject,
      safety: { ...safety, tags: [...(safety.tags ?? []), "mcp:elicitation"] },
      handler: () => Effect.void
    })
    if (Result.isFailure(form)) return yield* declined(server, `its schema cannot be read: ${form.failure.reason}`)
    const spec = Tool.spec(form.success)
    if (Result.isFailure(spec)) return yield* declined(server, `its schema cannot be read: ${spec.failure.message}`)
    const tool: Tool.Any = form.success
    const callId = `${origin?.callId ?? server}:elicitation:${requestId}`
    if (Option.isSome(answerer) || Option.isNone(approval)) {
      const asked = yield* askForm(server, params.message, tool.input, defaults, toolName, callId)
      return Result.isSuccess(asked)
        ? { action: "accept", content: asked.success } as const
        : yield* declined(server, asked.failure)
    }
    const decode = ToolInput.decoder(toolName, tool.input)
    const request: ApprovalRequest = {
      toolName,
      callId,
      arguments: defaults,
      spec: spec.success,
      why: `MCP server "${server}" asks: ${params.message}`
    }
    const decision = yield* approval.value.decide(request)
    if (decision._tag === "Deny") return decline
    const content = decision._tag === "Edit"
      ? typeof decision.arguments === "object" && decision.arguments !== null && !Array.isArray(decision.arguments)
        ? { ...defaults, ...decision.arguments }
        : undefined
      : defaults
    if (content === undefined) return yield* declined(server, "the edited answer is not an object")
    const valid = decode(content)
    if (Result.isFailure(valid)) {
      // where, never the values: an answer is the user's own input
      const where = valid.failure._tag === "InvalidArguments"
        ? ` (at ${valid.failure.issues.map((issue) => formatPath(issue.path)).join(", ")})`
        : ""
      return yield* declined(server, `the answer does not fit the requested schema${where}`)
    }
    return { action: "accept", content } as const
  }).pipe(contained<ElicitAnswer>(server, "an elicitation", decline))

// ---------------------------------------------------------------------------
// sampling
// ---------------------------------------------------------------------------

/** Limits of the sampling a connection allows. */
export interface SamplingOptions {
  /** The most output tokens one request may ask for; a request asking more is refused. */
  readonly maxTokens: number
  /** How many sampling requests the connection answers in all. Default 10. */
  readonly maxRequests?: number
  /** Whether to answer this request (after the limits). Default: every request within them. */
  readonly allow?: (request: SamplingRequest) => boolean
  /** The `model` named in results. Default `"tinyagents"`. */
  readonly model?: string
}

/** A sampling request as local policy sees it. */
export interface SamplingRequest {
  readonly server: string
  /** The imported tool whose call the request arrived during, if known. */
  readonly toolName: string | undefined
  /** The server's messages as the `ChatModel` gets them (the system prompt first, when given). */
  readonly messages: ReadonlyArray<ChatModel.Message>
  readonly maxTokens: number
}

/** The params of `sampling/createMessage`, read structurally. */
export interface SampleParams {
  readonly messages: ReadonlyArray<{ readonly role: string; readonly content: unknown }>
  readonly systemPrompt?: string
  readonly maxTokens: number
  readonly tools?: unknown
}

/** A `CreateMessageResult`. */
export type SampleAnswer = {
  readonly role: "assistant"
  readonly content: { readonly type: "text"; readonly text: string }
  readonly model: string
  readonly stopReason: string
}

/** A refused request: the server gets a JSON-RPC error with this code and message. */
export interface Refusal {
  readonly code: number
  readonly message: string
}

/** The code MCP uses for a request the user (here: local policy) rejected. */
const rejected = -1
const internalError = -32603

/** One content block as text: text as is, images and audio described (the `ChatModel` takes text messages). */
const textOf = (block: unknown): Result.Result<string, string> => {
  const b = (typeof block === "object" && block !== null ? block : {}) as { readonly [key: string]: unknown }
  switch (b.type) {
    case "text":
      return Result.succeed(typeof b.text === "string" ? b.text : "")
    case "image":
    case "audio":
      return Result.succeed(
        `[${b.type} ${typeof b.mimeType === "string" ? b.mimeType : "?"}, ${
          typeof b.data === "string" ? base64Bytes(b.data) : 0
        } bytes, not shown]`
      )
    default:
      return Result.fail(`content of type ${JSON.stringify(b.type)} is not supported`)
  }
}

/** The request's messages as `ChatModel` messages (the system prompt first), or why they cannot be. */
export const messagesOf = (params: SampleParams): Result.Result<ReadonlyArray<ChatModel.Message>, string> => {
  const messages: Array<ChatModel.Message> = []
  if (params.systemPrompt !== undefined && params.systemPrompt !== "") {
    messages.push({ role: "system", content: params.systemPrompt })
  }
  for (const message of params.messages) {
    const parts: Array<string> = []
    for (const block of Array.isArray(message.content) ? message.content : [message.content]) {
      const text = textOf(block)
      if (Result.isFailure(text)) return Result.fail(text.failure)
      parts.push(text.success)
    }
    const content = parts.join("\n")
    if (message.role === "user") messages.push({ role: "user", content })
    else if (message.role === "assistant") messages.push({ role: "assistant", content, toolCalls: [] })
    else return Result.fail(`the role ${JSON.stringify(message.role)} is not supported`)
  }
  return Result.succeed(messages)
}

const stopReasonOf = (reason: ChatModel.FinishReason | undefined): string =>
  reason === "length" ? "maxTokens" : reason === undefined || reason === "stop" ? "endTurn" : reason

/**
 * Answers `sampling/createMessage` with the `ChatModel` in context, or
 * refuses it: tools asked for, content that is not text, image or audio,
 * more than `maxTokens`, the connection's budget spent, `allow` saying no,
 * no model in context. `budget.used` counts the requests that reached the
 * model. The `ChatModel` contract has no per-request output limit: the
 * model's own applies, and an answer that used more output tokens than the
 * request asked for is reported with `stopReason: "maxTokens"`. A defect
 * (a throwing `allow`, a model that dies) is logged here and answered
 * -32603 "the model could not answer", never with its message.
 */
export const sample = (
  server: string,
  params: SampleParams,
  options: SamplingOptions,
  budget: { used: number },
  origin: Origin | undefined
): Effect.Effect<Result.Result<SampleAnswer, Refusal>> =>
  Effect.gen(function*() {
    const refuse = (why: string) => Result.fail({ code: rejected, message: `sampling refused: ${why}` })
    if (params.tools !== undefined) return refuse("this client does not offer tools to sampling")
    if (params.maxTokens > options.maxTokens) {
      return refuse(`maxTokens ${params.maxTokens} is over this client's limit of ${options.maxTokens}`)
    }
    const messages = messagesOf(params)
    if (Result.isFailure(messages)) return refuse(messages.failure)
    const maxRequests = options.maxRequests ?? 10
    if (budget.used >= maxRequests) return refuse(`this connection's budget of ${maxRequests} requests is spent`)
    const request: SamplingRequest = { server, toolName: origin?.toolName, messages: messages.success, maxTokens: params.maxTokens }
    if (options.allow !== undefined && !options.allow(request)) return refuse("not allowed by this client's policy")
    const model = yield* Effect.serviceOption(ChatModel.ChatModel)
    if (Option.isNone(model)) return refuse("no model is available to this client")
    budget.used++
    const answer = yield* Effect.result(model.value.generate({ messages: messages.success, tools: [] }))
    if (Result.isFailure(answer)) {
      return Result.fail({ code: internalError, message: `the model could not answer (${answer.failure.reason})` })
    }
    const response = answer.success
    return Result.succeed({
      role: "assistant",
      content: { type: "text", text: response.text },
      model: options.model ?? "tinyagents",
      stopReason: response.usage.outputTokens > params.maxTokens ? "maxTokens" : stopReasonOf(response.finishReason)
    } as const)
  }).pipe(
    contained<Result.Result<SampleAnswer, Refusal>>(
      server,
      "a sampling request",
      Result.fail({ code: internalError, message: "the model could not answer" })
    )
  )

// ---------------------------------------------------------------------------
// log messages
// ---------------------------------------------------------------------------

/** MCP log levels (RFC 5424), least severe first. */
export type LogLevel = "debug" | "info" | "notice" | "warning" | "error" | "critical" | "alert" | "emergency"

const severities: Record<LogLevel, Severity> = {
  debug: "Debug",
  info: "Info",
  notice: "Info",
  warning: "Warn",
  error: "Error",
  critical: "Fatal",
  alert: "Fatal",
  emergency: "Fatal"
}

/** The params of `notifications/message`. */
export interface LogParams {
  readonly level: string
  readonly logger?: string | undefined
  readonly data?: unknown
}

/**
 * Logs a server's message with Effect's logger at the mapped level (notice
 * is Info; critical, alert and emergency are Fatal; an unknown level is Info),
 * annotated `mcpServer` (and `mcpLogger` when the server names one). A string
 * is logged as is, other data as JSON.
 */
export const logMessage = (server: string, params: LogParams): Effect.Effect<void> => {
  const severity = severities[params.level as LogLevel] ?? "Info"
  const text = typeof params.data === "string" ? params.data : JSON.stringify(params.data) ?? ""
  return Effect.logWithLevel(severity)(text).pipe(
    Effect.annotateLogs(params.logger === undefined ? { mcpServer: server } : { mcpServer: server, mcpLogger: params.logger })
  )
}
