/**
 * Tools that ask: a running handler puts a question to a person (or to the
 * application) and gets a typed answer back. A hidden service: a handler lists
 * `Ask` in `services` and calls {@link question}; the executor provides it per
 * call (like `ToolProgress`) and reports `tool.question` and `tool.answered`
 * events of that call, redacted like its arguments.
 *
 * Who answers is the application's choice, not the tool's: it provides an
 * {@link Answerer} ({@link layerFunction}, {@link layerRules}); with none, every
 * question fails with {@link Unanswerable}. The answer is decoded with the
 * question's schema (an object schema, like a tool's input; its JSON Schema goes
 * with the question so a front-end or an MCP client can render a form).
 *
 * Time: a question's own `timeout` bounds the wait (then `Unanswerable`). In an
 * executor, the call's timeout (`Tool.make({ timeout })`) is paused while a
 * question is open and resumes with the time it had left when the question ends:
 * a person's thinking time does not count. This module does not decide whether a
 * call runs (that is `Approval`). In a durable run
 * (`tinyagents/durable`) a call's question suspends the run until
 * `DurableAgent.answer` replies, and the call then runs again from its start.
 */
import { Clock, Context, Duration, Effect, Layer, Option, Result, Schema } from "effect"
import * as ToolSchema from "../contract/ToolSchema.ts"

/** A question a handler asks. `A` is the decoded answer. */
export interface Question<A, I = unknown> {
  /** What the person reads ("Which branch should I deploy?"). */
  readonly message: string
  /** The answer's schema: an object schema (`Schema.Struct`), its fields JSON values. */
  readonly answer: Schema.Codec<A, I>
  /** Offered answers, for a front-end to show as buttons; any answer the schema accepts is still taken. */
  readonly choices?: ReadonlyArray<A>
  /** How long to wait for an answer; then `Unanswerable` (reason `"timeout"`). Default: no bound of its own. */
  readonly timeout?: Duration.Input
}

/** What an {@link Answerer} is asked: the question as JSON, and the call that asks it. */
export interface Request {
  readonly toolName: string
  readonly toolCallId: string
  /** Numbers the call's questions: `1` for its first. */
  readonly question: number
  /** The question, redacted like the call's arguments (a secret argument never reaches the person asked). */
  readonly message: string
  /** The answer's JSON Schema (2020-12, an object). */
  readonly schema: ToolSchema.JsonSchemaObject
  /** The offered answers, encoded, redacted like the message (a secret value shows as `[redacted]`). */
  readonly choices?: ReadonlyArray<unknown>
}

/**
 * An answerer's reply: an answer (encoded: JSON, as the schema describes it), a refusal to answer, or
 * no answer to be had through this answerer (an MCP client without elicitation, a form it cannot show).
 */
export type Reply =
  | AnswerReply
  | DeclineReply
  | { readonly _tag: "Unanswerable"; readonly reason: "invalid-question" | "unsupported" | "failed"; readonly detail: string }

/** A {@link Reply} that answers (what {@link answer} makes). */
export interface AnswerReply {
  readonly _tag: "Answer"
  readonly value: unknown
  readonly answeredBy: string
}

/** A {@link Reply} that declines (what {@link decline} makes). */
export interface DeclineReply {
  readonly _tag: "Decline"
  readonly reason: string
  readonly answeredBy: string
}

/** The answer `value` (JSON, decoded with the question's schema). */
export const answer = (value: unknown, answeredBy = "app"): AnswerReply => ({ _tag: "Answer", value, answeredBy })

/** No answer: the person (or rule) declines; the handler gets `Declined` with `reason`. */
export const decline = (reason: string, answeredBy = "app"): DeclineReply => ({ _tag: "Decline", reason, answeredBy })

/** No answer through this answerer: `Unanswerable` with `reason` and `detail`. */
export const unanswerable = (
  reason: "invalid-question" | "unsupported" | "failed",
  detail: string
): Reply => ({ _tag: "Unanswerable", reason, detail })

/** The person (or the application) declined to answer. A schema, so a tool can declare it as a `failure`. */
export class Declined extends Schema.TaggedError<Declined>()("AskDeclined", {
  reason: Schema.String
}) {
  override get message(): string {
    return `the question was declined: ${this.reason}`
  }
}

/**
 * No answer could be had: no answerer (`"no-answerer"`), the question's timeout passed (`"timeout"`),
 * the answer did not match the schema (`"invalid-answer"`), the question cannot be asked
 * (`"invalid-question"`: the schema is not an object of JSON values, or not one the channel can show;
 * `"unsupported"`: the channel cannot carry it, e.g. an MCP client without elicitation), or the
 * channel failed on the way (`"failed"`).
 */
export class Unanswerable extends Schema.TaggedError<Unanswerable>()("AskUnanswerable", {
  reason: Schema.Literals(["no-answerer", "timeout", "invalid-answer", "invalid-question", "unsupported", "failed"]),
  detail: Schema.String
}) {
  override get message(): string {
    return `the question could not be answered (${this.reason}): ${this.detail}`
  }
}

/** Both ways a question ends without an answer: declare it as a tool's `failure` to let the model read it. */
export const NotAnswered = Schema.Union([Declined, Unanswerable])

/** What a handler gets for `Ask`. */
export interface AskShape {
  readonly question: <A, I>(question: Question<A, I>) => Effect.Effect<A, Declined | Unanswerable>
}

/**
 * The asking service of the current call (hidden: the executor provides it to tools that list it in
 * `services`). Its layers are for calling a handler directly, outside an executor.
 */
export class Ask extends Context.Service<Ask, AskShape>()("tinyagents/Ask") {
  /** Asks the application's `Answerer` (when provided) without events: for handlers called directly (tests). */
  static readonly layerDirect: Layer.Layer<Ask> = Layer.sync(Ask, () => make({ toolName: "test_tool", toolCallId: "test-call" }))
}

/** Who answers questions: the application's service. Absent, every question is `Unanswerable`. */
export class Answerer extends Context.Service<Answerer, {
  readonly answer: (request: Request) => Effect.Effect<Reply>
}>()("tinyagents/Ask/Answerer") {}

/** Asks a question of the current call's person or application. */
export const question = <A, I>(question: Question<A, I>): Effect.Effect<A, Declined | Unanswerable, Ask> =>
  Ask.use((ask) => ask.question(question))

/** Answers with a function. */
export const layerFunction = (f: (request: Request) => Effect.Effect<Reply>): Layer.Layer<Answerer> =>
  Layer.succeed(Answerer, { answer: f })

/** One rule of {@link layerRules}: the first rule whose `match` holds replies. */
export interface Rule {
  /** Recorded as `answeredBy: "rule:<name>"`. Default: the rule's index. */
  readonly name?: string
  readonly match: (request: Request) => boolean
  /** The answer (JSON), or a function of the request giving the reply. */
  readonly reply: { readonly answer: unknown } | { readonly decline: string } | ((request: Request) => Reply)
}

/** Answers by the first matching rule; with no match, `otherwise` (default: declined). */
export const layerRules = (
  rules: ReadonlyArray<Rule>,
  otherwise: (request: Request) => Reply = () => decline("no rule answers this question", "rules")
): Layer.Layer<Answerer> =>
  Layer.succeed(Answerer, {
    answer: (request) =>
      Effect.sync(() => {
        for (const [index, rule] of rules.entries()) {
          if (!rule.match(request)) continue
          const by = `rule:${rule.name ?? index}`
          const reply = rule.reply
          if (typeof reply === "function") return reply(request)
          return "answer" in reply ? answer(reply.answer, by) : decline(reply.decline, by)
        }
        return otherwise(request)
      })
  })

/** How a question went, for {@link MakeOptions.onAnswered}. */
export type Outcome =
  | { readonly _tag: "answered"; readonly answer: unknown; readonly answeredBy: string }
  | { readonly _tag: "declined"; readonly reason: string; readonly answeredBy: string }
  | { readonly _tag: "unanswerable"; readonly reason: string }

/** Options of {@link make}. */
export interface MakeOptions {
  readonly toolName: string
  readonly toolCallId: string
  /** Redacts the question's text before anyone reads it (the executor: the call's redaction). */
  readonly redact?: (text: string) => string
  /** Redacts each offered answer (encoded) likewise, before anyone reads it. */
  readonly redactValue?: (value: unknown) => unknown
  /** Called before the answerer is asked (the executor reports `tool.question`). */
  readonly onQuestion?: (request: Request) => Effect.Effect<void>
  /** Called once the question has ended, `elapsed` ms after it was asked (the executor reports `tool.answered`). */
  readonly onAnswered?: (request: Request, outcome: Outcome, elapsed: number) => Effect.Effect<void>
}

/**
 * An `Ask` for one call: exports the answer's schema, asks the `Answerer` found in the asking fiber's
 * context (none: `Unanswerable`), bounds the wait by the question's timeout and decodes the reply.
 * The executor makes one per call of a tool that lists `Ask`; `McpServe` makes the answerer its client.
 */
export const make = (options: MakeOptions): AskShape => {
  let asked = 0
  const onQuestion = options.onQuestion ?? (() => Effect.void)
  const onAnswered = options.onAnswered ?? (() => Effect.void)
  return {
    question: <A, I>(q: Question<A, I>) =>
      Effect.gen(function*() {
        const number = ++asked
        const codec = Schema.toCodecJson(q.answer)
        const exported = ToolSchema.toJsonSchema(options.toolName, q.answer)
        const choices = q.choices === undefined
          ? Result.succeed(undefined)
          : Schema.encodeUnknownResult(Schema.Array(codec))(q.choices)
        const base = {
          toolName: options.toolName,
          toolCallId: options.toolCallId,
          question: number,
          message: options.redact === undefined ? q.message : options.redact(q.message)
        }
        if (Result.isFailure(exported) || Result.isFailure(choices)) {
          const detail = Result.isFailure(exported)
            ? exported.failure.message
            : `a choice does not match the answer schema: ${Result.isFailure(choices) ? choices.failure.message : ""}`
          return yield* new Unanswerable({ reason: "invalid-question", detail })
        }
        const request: Request = {
          ...base,
          schema: exported.success,
          ...(choices.success === undefined
            ? {}
            : { choices: options.redactValue === undefined ? choices.success : choices.success.map(options.redactValue) })
        }
        yield* onQuestion(request)
        const startedAt = yield* Clock.currentTimeMillis
        const end = (outcome: Outcome) =>
          Effect.flatMap(Clock.currentTimeMillis, (now) => onAnswered(request, outcome, now - startedAt))
        const found = yield* Effect.serviceOption(Answerer)
        if (Option.isNone(found)) {
          const detail = "no one can answer: the application provides no Ask.Answerer"
          yield* end({ _tag: "unanswerable", reason: detail })
          return yield* new Unanswerable({ reason: "no-answerer", detail })
        }
        const waited = q.timeout === undefined
          ? Effect.map(found.value.answer(request), Option.some)
          : Effect.timeoutOption(found.value.answer(request), q.timeout)
        const reply = yield* Effect.onInterrupt(
          waited,
          () => end({ _tag: "unanswerable", reason: "the call ended while waiting for an answer" })
        )
        if (Option.isNone(reply)) {
          const detail = `no answer within ${Duration.format(Duration.fromInputUnsafe(q.timeout!))}`
          yield* end({ _tag: "unanswerable", reason: detail })
          return yield* new Unanswerable({ reason: "timeout", detail })
        }
        if (reply.value._tag === "Unanswerable") {
          yield* end({ _tag: "unanswerable", reason: reply.value.detail })
          return yield* new Unanswerable({ reason: reply.value.reason, detail: reply.value.detail })
        }
        if (reply.value._tag === "Decline") {
          yield* end({ _tag: "declined", reason: reply.value.reason, answeredBy: reply.value.answeredBy })
          return yield* new Declined({ reason: reply.value.reason })
        }
        const decoded = Schema.decodeUnknownResult(codec)(reply.value.value)
        if (Result.isFailure(decoded)) {
          const detail = `the answer does not match the schema: ${decoded.failure.message}`
          yield* end({ _tag: "unanswerable", reason: detail })
          return yield* new Unanswerable({ reason: "invalid-answer", detail })
        }
        yield* end({
          _tag: "answered",
          answer: Schema.encodeUnknownSync(codec)(decoded.success),
          answeredBy: reply.value.answeredBy
        })
        return decoded.success
      })
  }
}
