/**
 * Durable questions: the `Ask.Answerer` a durable run's call asks through. A question of the call
 * itself (not one of an agent it runs inline, nor an imported MCP tool's elicitation, whose ids are
 * not stable) is named by its position, `question/<turn>/<index>/<n>` (under the handoff prefix),
 * recorded in `tinyagents_durable_questions` with its answer's JSON Schema, and awaited as the
 * `DurableDeferred` of that name: with no reply yet the run suspends (the call's activity journals
 * nothing); `DurableAgent.answer` (any process) claims the row and completes the deferred, which
 * wakes the run; the call runs again from its start and the same question, asked again, gets the
 * journaled reply at once. Other questions go to the application's `Answerer`, if any.
 */
import { Context, Effect, Option } from "effect"
import type { SqlClient } from "effect/sql"
import { DurableDeferred, type WorkflowEngine } from "effect/workflow"
import type * as ToolSchema from "../../contract/ToolSchema.ts"
import * as Ask from "../../governance/Ask.ts"
import * as AnswerCheck from "../../governance/AnswerCheck.ts"
import * as Journal from "../Journal.ts"
import * as Tables from "./tables.ts"

/** The deferred question `name` waits on. */
export const questionDeferred = (name: string) => DurableDeferred.make(name, { success: Journal.QuestionReply })

/** The prefix of call `index` of turn `turn`'s question names. */
export const callQuestions = (prefix: string, turn: number, index: number): string => `${prefix}question/${turn}/${index}/`

/** The name of question `n` (from 1) of call `index` of turn `turn`. */
export const questionName = (prefix: string, turn: number, index: number, n: number): string =>
  `${callQuestions(prefix, turn, index)}${n}`

/** Where a durable call is, for its questions. */
export interface CallPosition {
  readonly run: Tables.RunKey
  readonly prefix: string
  readonly turn: number
  readonly index: number
  readonly callId: string
}

/**
 * The answerer of one durable call (see the module comment). `journal`: the activity's engine,
 * instance and SQL client; `outer`: the application's answerer, for the questions that do not
 * suspend the run; `asked` is told when a question waits (the call then runs again).
 */
export const answerer = (
  position: CallPosition,
  journal: Context.Context<WorkflowEngine.WorkflowEngine | WorkflowEngine.WorkflowInstance | SqlClient.SqlClient>,
  outer: Option.Option<Ask.Answerer["Service"]>,
  asked: () => void
): Ask.Answerer["Service"] => ({
  answer: (request) => {
    if (request.toolCallId !== position.callId) {
      return Option.isSome(outer)
        ? outer.value.answer(request)
        : Effect.succeed(Ask.unanswerable(
          "unsupported",
          "in a durable run, only a tool call's own questions wait for an answer (this one comes from inside the call)"
        ))
    }
    const name = questionName(position.prefix, position.turn, position.index, request.question)
    return Effect.gen(function*() {
      yield* Tables.ask(position.run, {
        deferred: name,
        turn: position.turn,
        callIndex: position.index,
        callId: position.callId,
        tool: request.toolName,
        question: request.question,
        message: request.message,
        schema: JSON.stringify(request.schema),
        choices: request.choices === undefined ? null : JSON.stringify(request.choices)
      })
      asked()
      const reply = yield* DurableDeferred.await(questionDeferred(name))
      return reply._tag === "Answer" ? Ask.answer(reply.value, reply.answeredBy) : Ask.decline(reply.reason, reply.answeredBy)
    }).pipe(Effect.updateContext((context: Context.Context<never>) => Context.merge(context, journal)))
  }
})

/**
 * Checks answer `value` against a stored question's JSON Schema (the answering process has no
 * Schema of its own): the reason it does not fit, or `undefined` when it does. The runner decodes
 * it again with the question's own Schema (which may check more than JSON Schema can say).
 */
export const refusal = (row: Tables.QuestionRow, value: unknown): string | undefined => {
  let schema: ToolSchema.JsonSchemaObject
  try {
    schema = JSON.parse(row.schema) as ToolSchema.JsonSchemaObject
  } catch {
    return "the question's schema cannot be read"
  }
  const reason = AnswerCheck.refusal(row.tool, schema, value)
  return reason === undefined ? undefined : `the answer does not match the question's schema: ${reason}`
}
