/**
 * A workaround we carry for effect/cluster 4.1 (`ClusterWorkflowEngine`): an activity whose reply
 * was dropped after its body ended leaves its run suspended with nothing to wake it (issue #25;
 * bench/clusterStuck.ts reproduces it with effect/cluster alone). Before storing a persisted reply,
 * `Sharding` confirms the shard's lock with a refresh under a deadline of one refresh interval; a
 * check that misses it (a runner starved of CPU, a heartbeat queued on a loaded database) fences the
 * reply: it is not stored, the request is released for redelivery and the waiting client reads the
 * reply from storage. The redelivered request reaches the engine's `activity` handler after the
 * first execution removed the activity's registration, so the handler answers `Suspended`;
 * `activityExecute` re-executes a suspended activity only while it is registered, so the workflow
 * gets `Suspended`, its run suspends, and no deferred, clock or child is pending to resume it.
 *
 * `layer` wraps the engine's `activityExecute`: the activity it hands to the engine records the
 * exit of its body when the body ends with a result the engine stores (a success, or a failure that
 * is not interrupts alone and that the workflow does not turn into a suspension). When the engine
 * then answers `Suspended` to the same call, the result was dropped, and the call is made again:
 * the engine registers the activity, resets its `Suspended` reply and delivers it once more (its
 * own path for a suspended activity), and the body answers the exit it recorded instead of running
 * again, which the engine now stores behind a fresh lock check (or fences again, and the call goes
 * round again: each round needs a check that failed after one that stored the `Suspended` reply,
 * and goes on only while the body ran here). So a step whose reply was dropped is journaled with
 * the result it had: no tool call or model turn runs twice. Where the check failed because another
 * runner took the shard, the call made again goes to that runner, which does not run the body (only
 * a registration by the run does): the engine here resends it while it is answered `Suspended`, as
 * for any step of a run on a shard being released, until the release stops the run
 * (`shutdownTimeout` at most) and the new owner replays it, running the step again as after any
 * takeover (read in effect/cluster 4.1, not tested here). An activity whose body runs in the
 * reply's transaction (`ClusterSchema.WithTransaction`) had its writes rolled back with the fenced
 * reply, so it runs again instead. Every other activity and engine operation is the engine's own.
 */
import { Cause, Context, Effect, Exit, Layer, type Schema } from "effect"
import { ClusterSchema } from "effect/cluster"
import { type Activity, Workflow, WorkflowEngine } from "effect/workflow"

/** One `activityExecute` call: whether the body ended with a result the engine stores, this time round, and which. */
interface Call {
  ended: boolean
  exit: Exit.Exit<unknown, unknown> | undefined
}

/** `activity` with a body that records in `call` how it ended, and answers that exit when it has one. */
const recording = <A extends Activity.Any>(activity: A, call: Call): A => {
  // a fenced reply rolled back a transactional body's writes: run it again
  const replayable = !Context.get(activity.annotations, ClusterSchema.WithTransaction)
  const executeEncoded = Effect.suspend(() => {
    if (call.exit !== undefined) {
      call.ended = true
      return call.exit
    }
    return Effect.onExit(activity.executeEncoded, (exit) =>
      Effect.map(Effect.service(WorkflowEngine.WorkflowInstance), (instance) => {
        // as `Workflow.intoResult` reads the exit in the engine's handler: a success is `Complete`
        // (even where a durable wait inside the body suspended the instance and lost a race), a
        // failure a suspension under `SuspendOnFailure` or when only interrupts, else `Complete`
        const stored = Exit.isSuccess(exit) ||
          (!Cause.hasInterruptsOnly(exit.cause) && !Context.get(instance.workflow.annotations, Workflow.SuspendOnFailure))
        if (!stored) return
        call.ended = true
        if (replayable) call.exit = exit
      }))
  })
  // the engine reads the rest (name, annotations, schemas) through the prototype
  return Object.assign(Object.create(activity) as A, { executeEncoded })
}

/** The warning for a step whose reply was dropped (made only then, not for every step). */
const dropped = (activity: string) =>
  Effect.logWarning(
    "An activity's reply was not stored (its shard-lock check failed or missed its deadline); storing it again"
  ).pipe(Effect.annotateLogs({ activity }))

/** The `WorkflowEngine` with activities whose reply a missed lock check dropped stored again (see the module doc). */
export const layer: Layer.Layer<WorkflowEngine.WorkflowEngine, never, WorkflowEngine.WorkflowEngine> = Layer.effect(
  WorkflowEngine.WorkflowEngine,
  Effect.map(Effect.service(WorkflowEngine.WorkflowEngine), (engine) => {
    const activityExecute = <Success extends Schema.Constraint, Error extends Schema.Constraint, R>(
      activity: Activity.Activity<Success, Error, R>,
      attempt: number
    ) => {
      const call: Call = { ended: false, exit: undefined }
      const recorded = recording(activity, call)
      const once = Effect.suspend(() => {
        call.ended = false
        return engine.activityExecute(recorded, attempt)
      })
      const go: typeof once = Effect.flatMap(
        once,
        (result) => result._tag === "Suspended" && call.ended ? Effect.andThen(dropped(activity.name), go) : Effect.succeed(result)
      )
      return go
    }
    const wrapped: WorkflowEngine.WorkflowEngine["Service"] = {
      ...engine,
      // a workflow's body reads the engine it was registered with: this one
      register: (workflow, body) => Effect.provideService(engine.register(workflow, body), WorkflowEngine.WorkflowEngine, wrapped),
      activityExecute
    }
    return WorkflowEngine.WorkflowEngine.of(wrapped)
  })
)
