/**
 * Lifecycle step 3's core (invoke): the handler, invoked anew for every attempt, under
 * the tool's timeout, with its retry `Schedule` (for the failures `Tool.mayRetry`
 * allows: a timeout only of an idempotent tool) and, for exclusive tools,
 * holding the run's exclusive permit for the attempt only (never through a
 * backoff sleep). Handler failures become tool
 * errors here, redacted per the tool's `safety.redact` before anything else
 * (a retry event, a middleware, a receipt) sees them; encoding the output is
 * `Render`'s job.
 */
import { Cause, Duration, Effect, Exit, Fiber, Predicate, Result, Schedule, Schema, Semaphore } from "effect"
import type { Invocation } from "../../Middleware.ts"
import * as Tool from "../../../contract/Tool.ts"
import * as ToolError from "../../../contract/ToolError.ts"
import type { Redact } from "../../../contract/Safety.ts"
import { textOfValue } from "../../../internal/json.ts"
import { redactCause, redactError } from "../../../internal/redact/errors.ts"
import { redactValue } from "../../../internal/redact/policy.ts"
import * as CallState from "./CallState.ts"
import * as Deadline from "./Deadline.ts"
import * as Now from "./Now.ts"
import type { Env, Reporter } from "./Reporter.ts"

export interface Config {
  readonly defaultTimeout: Duration.Duration
  readonly reporter: Reporter
}

/** What an undeclared error is called for the model: its `_tag`, else its class name, else its type. */
const nameOf = (error: unknown): string => {
  if (Predicate.hasProperty(error, "_tag") && typeof error._tag === "string") return error._tag
  if (typeof error === "object" && error !== null) {
    const name = error.constructor?.name
    return typeof name === "string" && name !== "" && name !== "Object" ? name : "object"
  }
  return typeof error
}

/**
 * The handler's failure as a tool error. Tool errors pass through; a declared failure renders for
 * the model; an undeclared one is repairable, named only by its tag (its message may hold secrets);
 * a defect (a throw, `Effect.die`) is a `ToolDefect`. `made` says the error was made from the failure.
 */
const convert = (
  tool: Tool.Any,
  name: string,
  cause: Cause.Cause<unknown>,
  policy: Redact | undefined
): { readonly error: ToolError.ToolError; readonly made: boolean } => {
  const failure = Cause.findErrorOption(cause)
  if (Cause.hasDies(cause) || failure._tag === "None") {
    return { error: new ToolError.ToolDefect({ toolName: name, cause }), made: false }
  }
  const error = failure.value
  if (ToolError.isToolError(error)) return { error, made: false }
  if (tool.failure !== undefined && Schema.is(tool.failure)(error)) {
    const encoded = Schema.encodeUnknownResult(tool.failure as Schema.Codec<unknown, unknown>)(error)
    const detail = Result.isSuccess(encoded) ? encoded.success : undefined
    // a message made from the detail shows it redacted (the detail itself is redacted with the error)
    const message = error instanceof Error && error.message !== ""
      ? error.message
      : textOfValue(policy === undefined ? detail : redactValue(detail, policy).value)
    return { error: new ToolError.ToolFailure({ message: `${name}: ${message}`, detail }), made: true }
  }
  const tag = nameOf(error)
  return {
    error: new ToolError.ToolFailure({
      message: `${name}: failed with an error it does not declare (${tag})`,
      detail: { undeclared: tag }
    }),
    made: true
  }
}

/**
 * {@link convert}, then redacted per the tool's `safety.redact` (the one redaction step for handler
 * failures: retries, middleware, receipts, the terminal event and the model all see this error);
 * the handler's own cause is kept in the call's state for the `tool.failed` event, redacted too.
 */
const toToolError = (
  tool: Tool.Any,
  spec: Tool.ToolSpec,
  input: unknown,
  cause: Cause.Cause<unknown>,
  state: CallState.CallState
): ToolError.ToolError => {
  const policy = spec.safety.redact
  const converted = convert(tool, spec.name, cause, policy)
  // `input`: a message that echoes an argument held under a redacted key loses it too
  const error = redactError(converted.error, policy, input)
  if (converted.made) state.origin = { error, cause: redactCause(cause, policy, input) }
  return error
}

export const make = (config: Config) => {
  const exclusive = Semaphore.makeUnsafe(1)
  const timeouts = new WeakMap<Tool.Any, number>()
  const timeoutOf = (tool: Tool.Any): number => {
    let millis = timeouts.get(tool)
    if (millis === undefined) {
      millis = Duration.toMillis(tool.timeout ?? config.defaultTimeout)
      timeouts.set(tool, millis)
    }
    return millis
  }

  /**
   * The handler's output, or a tool error; interruption passes through untouched. Started now, on
   * `fiber` (the one running the call, `Now`): a completed `Exit` when the attempt completed without
   * suspending, else the rest of it. `provided`: `fiber`'s context already holds the call's state
   * (the invocation runs under `CallState.provide`).
   */
  /** A handler failure as the attempt's: interruption passes through, the rest becomes a tool error. */
  const toFailure = (
    invocation: Invocation,
    state: CallState.CallState,
    cause: Cause.Cause<unknown>
  ): Effect.Effect<never, ToolError.ToolError> =>
    Cause.hasInterruptsOnly(cause)
      ? Effect.failCause(cause as Cause.Cause<never>)
      : Effect.fail(toToolError(invocation.tool, invocation.spec, invocation.input, cause, state))

  /** One attempt, started now on `fiber` (a function of the call, not a closure made per call). */
  const attempt = (
    invocation: Invocation,
    env: Env,
    state: CallState.CallState,
    fiber: Fiber.Fiber<unknown, unknown>,
    provided: boolean
  ): Now.Answer<unknown, ToolError.ToolError> => {
    const tool = invocation.tool
    let effect: Effect.Effect<unknown, unknown>
    try {
      effect = tool.handler(invocation.input) as Effect.Effect<unknown, unknown>
    } catch (defect) {
      return toFailure(invocation, state, Cause.die(defect))
    }
    // A handler that returned an already-completed Exit (`Effect.succeed(...)`) can
    // neither hang nor be cancelled: it needs no timer and no abort signal.
    if (Now.isExit(effect)) {
      return Exit.isSuccess(effect) ? effect as Exit.Exit<unknown, never> : toFailure(invocation, state, effect.cause)
    }
    // An `Effect.sync` handler: its fiber would only call the thunk (which can read no service, so
    // neither the call's context nor a signal matters) and end before any timer is armed. Called
    // here instead, on the calling fiber: the same value, or the same defect for a throw.
    const thunk = state.ask === undefined ? Now.thunkOf(effect) : undefined
    if (thunk !== undefined) {
      try {
        // the value itself (`Now.Answer`; one that is an effect comes in its `Exit`)
        return Now.answer(thunk())
      } catch (defect) {
        return toFailure(invocation, state, Cause.die(defect))
      }
    }
    // `state` is the call's `ToolCallContext` and `Cancellation`; its signal is the attempt's.
    // The handler runs in its own fiber started at once, with the calling fiber's context: one
    // that completes synchronously (`Effect.sync`, a pure `Effect.gen`) has its Exit before any
    // timer is armed; only one that suspends races its deadline. Whoever stops it (the deadline,
    // the call's interruption) aborts its signal first, then interrupts it and waits for it.
    // (Nothing else can outlive the attempt: the call waits for this fiber's end on every path.)
    // A tool that asks: the attempt's timeout pauses while a question is open (`Deadline`).
    const timeoutMillis = timeoutOf(tool)
    const deadline = state.ask === undefined ? undefined : Deadline.start(state, env.clock, timeoutMillis)
    const handler = Effect.runForkWith(provided ? fiber.context : CallState.contextOf(fiber.context, state))(effect)
    const exit = handler.pollUnsafe()
    if (exit !== undefined) {
      return Exit.isSuccess(exit) ? exit as Exit.Exit<unknown, never> : toFailure(invocation, state, exit.cause)
    }
    const name = invocation.spec.name
    // (only while it runs: a handler that has ended keeps its signal as it was)
    const stop = Effect.suspend(() => {
      if (handler.pollUnsafe() !== undefined) return Effect.void
      state.abort()
      return Fiber.interrupt(handler)
    })
    state.stopAttempt = stop
    const orElse = () =>
      Effect.andThen(
        stop,
        Effect.fail(
          new ToolError.ToolTimeout({ toolName: name, timeoutMillis, idempotent: Tool.mayRunAgain(Tool.retrySafety(tool)) })
        )
      )
    const joined = Fiber.join(handler)
    return (deadline === undefined
      ? Effect.timeoutOrElse(joined, { duration: timeoutMillis, orElse })
      : Deadline.timeoutOrElse(joined, deadline, orElse)).pipe(
      Effect.onInterrupt(() => stop),
      Effect.catchCause((cause) => toFailure(invocation, state, cause))
    ) as Effect.Effect<unknown, ToolError.ToolError>
  }

  return (
    invocation: Invocation,
    env: Env,
    state: CallState.CallState,
    fiber: Fiber.Fiber<unknown, unknown>,
    provided: boolean
  ): Now.Answer<unknown, ToolError.ToolError> => {
    const tool = invocation.tool
    const exclusiveTool = tool.options.exclusive === true
    const safety = Tool.retrySafety(tool)
    const noRetry = tool.retry === undefined || safety === "none"
    // The plain case starts now; a permit or a schedule runs each attempt as an effect.
    if (!exclusiveTool && noRetry) return attempt(invocation, env, state, fiber, provided)
    const name = invocation.spec.name
    const each = Effect.withFiber((current) =>
      Now.effectOf<unknown, ToolError.ToolError, never>(attempt(invocation, env, state, current, provided))
    )
    const guarded = exclusiveTool ? exclusive.withPermit(each) : each
    if (noRetry) return guarded
    const policy = tool.retry.pipe(
      Schedule.setInputType<ToolError.ToolError>(),
      Schedule.while(({ input }) => Tool.mayRetry(safety, input)),
      Schedule.modifyDelay(({ duration, input }) =>
        Effect.suspend(() => {
          state.count++
          return Effect.as(
            config.reporter.emit(env, {
              _tag: "tool.retrying",
              toolCallId: invocation.call.id,
              toolName: name,
              attempt: state.count,
              ...(state.shownKey === undefined ? {} : { idempotencyKey: state.shownKey }),
              delay: Duration.toMillis(duration),
              error: input
            }),
            duration
          )
        })
      )
    )
    return Effect.retry(guarded, policy)
  }
}
